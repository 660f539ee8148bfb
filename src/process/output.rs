//! Where a child's output goes as it is read: each stream's bytes kept in memory, whole or
//! bounded (`Command::keep`: stdout's head, stderr's tail), and with `Command::spool`
//! written whole into files as they arrive.

use std::path::{Path, PathBuf};

/// Where a run's stdout and stderr are written whole ([`super::Command::spool`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Spool {
    pub stdout: PathBuf,
    pub stderr: PathBuf,
}

/// Bytes of each spooled stream also kept in memory (stdout's head, stderr's tail): an
/// output this short is whole in memory.
pub(crate) const SPOOL_KEPT: usize = 1 << 20;

/// What a spooled run wrote: the files, and how many bytes each stream had in all.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Spooled {
    pub to: Spool,
    /// stdout's and stderr's lengths.
    pub bytes: [u64; 2],
}

/// The files of a [`Spool`] being written; the first write error is kept (the output is
/// still drained, so the child never blocks) and reported once the run is over.
pub(super) struct SpoolFiles {
    to: Spool,
    files: [std::io::BufWriter<std::fs::File>; 2],
    bytes: [u64; 2],
    error: Option<(usize, std::io::Error)>,
}

impl SpoolFiles {
    pub(super) fn create(to: &Spool) -> Result<Self, (PathBuf, std::io::Error)> {
        let open = |p: &Path| {
            if let Some(dir) = p.parent() {
                std::fs::create_dir_all(dir).map_err(|e| (dir.to_path_buf(), e))?;
            }
            let f = std::fs::File::create(p).map_err(|e| (p.to_path_buf(), e))?;
            Ok(std::io::BufWriter::with_capacity(256 << 10, f))
        };
        Ok(SpoolFiles {
            to: to.clone(),
            files: [open(&to.stdout)?, open(&to.stderr)?],
            bytes: [0; 2],
            error: None,
        })
    }

    pub(super) fn write(&mut self, stream: usize, bytes: &[u8]) {
        use std::io::Write;
        self.bytes[stream] += bytes.len() as u64;
        if self.error.is_none() {
            if let Err(e) = self.files[stream].write_all(bytes) {
                self.error = Some((stream, e));
            }
        }
    }

    pub(super) fn finish(self) -> Result<Spooled, (PathBuf, std::io::Error)> {
        let path = |i: usize| match i {
            0 => self.to.stdout.clone(),
            _ => self.to.stderr.clone(),
        };
        if let Some((i, e)) = self.error {
            return Err((path(i), e));
        }
        let [out, err] = self.files;
        for (i, f) in [(0, out), (1, err)] {
            f.into_inner().map_err(|e| (path(i), e.into_error()))?;
        }
        Ok(Spooled {
            to: self.to,
            bytes: self.bytes,
        })
    }
}

/// One output stream's bytes, bounded or not.
pub(super) struct Buf {
    buf: Vec<u8>,
    /// At most this many bytes kept, of the head or the tail.
    keep: Option<(usize, Keep)>,
}

/// Which end of a stream a bounded [`Buf`] keeps.
#[derive(Clone, Copy)]
pub(super) enum Keep {
    Head,
    Tail,
}

impl Buf {
    pub(super) fn new(keep: Option<usize>, end: Keep) -> Self {
        Buf {
            buf: Vec::new(),
            keep: keep.map(|n| (n, end)),
        }
    }

    pub(super) fn keep(&mut self, bytes: &[u8]) {
        match self.keep {
            None => self.buf.extend_from_slice(bytes),
            Some((n, Keep::Head)) => {
                let room = n.saturating_sub(self.buf.len());
                self.buf.extend_from_slice(&bytes[..room.min(bytes.len())]);
            }
            Some((n, Keep::Tail)) => {
                self.buf.extend_from_slice(bytes);
                // Trim once it is twice the bound: amortised, not a shift per read.
                if self.buf.len() > 2 * n.max(1) {
                    self.buf.drain(..self.buf.len() - n);
                }
            }
        }
    }

    pub(super) fn into_bytes(mut self) -> Vec<u8> {
        if let Some((n, Keep::Tail)) = self.keep {
            let extra = self.buf.len().saturating_sub(n);
            self.buf.drain(..extra);
        }
        self.buf
    }
}
