//! The platform layer on Unix (Linux and macOS): process groups, `poll`, `waitid`,
//! `wait4`, modes and owners, symlinks, named pipes.

use std::io::Read as _;
use std::os::fd::{AsRawFd as _, OwnedFd};
use std::os::unix::fs::{FileTypeExt as _, MetadataExt as _};
use std::os::unix::fs::{OpenOptionsExt as _, PermissionsExt as _};
use std::os::unix::process::{CommandExt as _, ExitStatusExt as _};
use std::path::Path;
use std::process::{Child, Command, ExitStatus};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use super::ResourceUsage;

/// A child in a process group of its own, with its stdout and stderr read without blocking.
pub(crate) struct Tree {
    child: Child,
    pid: libc::pid_t,
    pipes: [Option<std::fs::File>; 2],
    /// Readable once the child has exited (the watcher thread writes a byte).
    wake: Option<std::io::PipeReader>,
    exit: Option<mpsc::Receiver<(Instant, std::io::Result<()>)>>,
    exit_seen: bool,
}

impl Tree {
    /// Spawn `cmd` (its stdout and stderr set to piped by the caller) as the leader of a
    /// new process group.
    pub(crate) fn spawn(cmd: &mut Command) -> std::io::Result<Tree> {
        let mut child = super::interrupt::spawn_group(cmd)?;
        let pid = child.id() as libc::pid_t;
        let out = child.stdout.take().map(OwnedFd::from);
        let err = child.stderr.take().map(OwnedFd::from);
        let pipes = [out, err].map(|fd| fd.map(nonblocking));
        Ok(Tree {
            child,
            pid,
            pipes,
            wake: None,
            exit: None,
            exit_seen: false,
        })
    }

    /// Start learning of the child's exit: a thread blocks in `waitid(WNOWAIT)` on exactly
    /// this pid, so it learns of the exit without reaping — the zombie keeps the pid (and
    /// with it the process group id) reserved until every group kill is done. It wakes
    /// [`Tree::pump`] through a pipe. `child` is never waited on by std: no double reap.
    pub(crate) fn watch(&mut self) -> std::io::Result<()> {
        let (wake_r, mut wake_w) = std::io::pipe()?;
        let (tx, rx) = mpsc::channel();
        let pid = self.pid;
        std::thread::spawn(move || {
            let r = wait_exit(pid);
            let at = Instant::now();
            // The byte first: pump cannot finish before it has the message, so the read
            // end is still open when the byte is written (no EPIPE).
            let _ = std::io::Write::write_all(&mut wake_w, &[1]);
            let _ = tx.send((at, r));
        });
        self.wake = Some(wake_r);
        self.exit = Some(rx);
        Ok(())
    }

    /// The child's process id.
    pub(crate) fn id(&self) -> u32 {
        self.child.id()
    }

    /// Whether stdout or stderr is still open (not at end of file).
    pub(crate) fn pipes_open(&self) -> bool {
        self.pipes.iter().any(Option::is_some)
    }

    /// Sleep until a pipe has data, the child exits, or `until`; then read what is there
    /// into `sink(stream, bytes)`. Returns when the child exited, the first time it is seen.
    pub(crate) fn pump(
        &mut self,
        until: Option<Instant>,
        sink: &mut dyn FnMut(usize, &[u8]),
    ) -> std::io::Result<Option<Instant>> {
        let timeout_ms = match until {
            Some(t) => {
                let left = t.saturating_duration_since(Instant::now());
                // Round up so the loop does not spin just before a deadline.
                (left.as_micros().div_ceil(1000)).min(i32::MAX as u128) as i32
            }
            None => -1,
        };
        let poll = |fd: i32| libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        };
        let mut fds: Vec<libc::pollfd> = (self.pipes.iter().flatten())
            .map(|f| poll(f.as_raw_fd()))
            .collect();
        let wake = (self.wake.as_ref()).filter(|_| !self.exit_seen);
        let wake = wake.map(|w| fds.push(poll(w.as_raw_fd()))).is_some();
        // SAFETY: fds is a valid array of pollfd of the given length.
        let n = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, timeout_ms) };
        if n < 0 {
            let err = std::io::Error::last_os_error();
            if err.kind() != std::io::ErrorKind::Interrupted {
                return Err(err);
            }
        }
        self.read_available(sink);
        let woken = wake && n > 0 && fds.last().is_some_and(|f| f.revents != 0);
        if !woken {
            return Ok(None);
        }
        self.exit_seen = true;
        // The watcher sends right after the byte.
        let msg = self.exit.as_ref().and_then(|rx| rx.recv().ok());
        let (at, r) = msg.unwrap_or_else(|| {
            let died = std::io::Error::other("wait thread died");
            (Instant::now(), Err(died))
        });
        r.map(|()| Some(at))
    }

    /// Read what the pipes hold now; at end of file (or on an error) close a pipe.
    fn read_available(&mut self, sink: &mut dyn FnMut(usize, &[u8])) {
        let mut chunk = vec![0u8; 64 * 1024];
        for (stream, slot) in self.pipes.iter_mut().enumerate() {
            while let Some(file) = slot.as_mut() {
                match file.read(&mut chunk) {
                    Ok(n) if n > 0 => sink(stream, &chunk[..n]),
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                    _ => *slot = None,
                }
            }
        }
    }

    /// Kill the child's whole process group (harmless when it is already gone: the
    /// unreaped child keeps the group id reserved).
    pub(crate) fn kill(&self) {
        // SAFETY: signalling a process group we created; failure (already gone) is harmless.
        unsafe {
            libc::kill(-self.pid, libc::SIGKILL);
        }
    }

    /// After the child exited: reap it (status and rusage), read the last of what the
    /// pipes hold, and stop reading (a holder that escaped the group gets EPIPE from now on).
    pub(crate) fn finish(
        mut self,
        sink: &mut dyn FnMut(usize, &[u8]),
    ) -> std::io::Result<(ExitStatus, ResourceUsage)> {
        super::interrupt::release(self.pid as u32);
        let (raw, usage) = wait4(self.pid)?;
        self.read_available(sink);
        Ok((ExitStatus::from_raw(raw), usage))
    }

    /// After an error: kill the group and reap the child.
    pub(crate) fn abort(self) {
        self.kill();
        if !self.exit_seen {
            if let Some(rx) = &self.exit {
                let _ = rx.recv();
            }
        }
        super::interrupt::release(self.pid as u32);
        let _ = wait4(self.pid);
        drop(self.child);
    }
}

fn nonblocking(fd: OwnedFd) -> std::fs::File {
    // SAFETY: fcntl on an fd we own.
    unsafe {
        let flags = libc::fcntl(fd.as_raw_fd(), libc::F_GETFL);
        libc::fcntl(fd.as_raw_fd(), libc::F_SETFL, flags | libc::O_NONBLOCK);
    }
    std::fs::File::from(fd)
}

/// Block until `pid` (our child) has exited, leaving it unreaped.
fn wait_exit(pid: libc::pid_t) -> std::io::Result<()> {
    loop {
        // SAFETY: siginfo_t is plain old data; zeroed is a valid value for it.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        // SAFETY: pid is our own child; info is valid for writes.
        let r = unsafe {
            libc::waitid(
                libc::P_PID,
                pid as libc::id_t,
                &mut info,
                libc::WEXITED | libc::WNOWAIT,
            )
        };
        if r == 0 {
            return Ok(());
        }
        let err = std::io::Error::last_os_error();
        if err.kind() != std::io::ErrorKind::Interrupted {
            return Err(err);
        }
    }
}

/// `cmd` will lead a process group of its own.
pub(super) fn own_group(cmd: &mut Command) {
    cmd.process_group(0);
}

/// SIGKILL to the process group `pid` leads (harmless when it is gone).
pub(super) fn kill_group(pid: u32) {
    // SAFETY: signalling a process group we created and have not reaped the leader of.
    unsafe {
        libc::kill(-(pid as libc::pid_t), libc::SIGKILL);
    }
}

/// SIGSTOP (`run: false`) or SIGCONT (`run: true`) to the process group `pid` leads
/// (harmless when it is gone).
pub(super) fn pause_group(pid: u32, run: bool) {
    let signal = if run { libc::SIGCONT } else { libc::SIGSTOP };
    // SAFETY: signalling a process group we created and have not reaped the leader of.
    unsafe {
        libc::kill(-(pid as libc::pid_t), signal);
    }
}

pub(super) fn lower_priority(cmd: &mut Command, nice: i32) {
    // SAFETY: setpriority is async-signal-safe and touches nothing of the parent's; a
    // failure leaves the priority as it was, which is harmless.
    unsafe {
        cmd.pre_exec(move || {
            libc::setpriority(libc::PRIO_PROCESS, 0, nice);
            Ok(())
        });
    }
}

fn wait4(pid: libc::pid_t) -> std::io::Result<(i32, ResourceUsage)> {
    let mut status: libc::c_int = 0;
    // SAFETY: rusage is plain old data; zeroed is a valid value for it.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    loop {
        // SAFETY: pid is our own child; status and usage are valid for writes.
        let r = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
        if r == pid {
            return Ok((status, usage_of(&usage)));
        }
        let err = std::io::Error::last_os_error();
        if err.kind() != std::io::ErrorKind::Interrupted {
            return Err(err);
        }
    }
}

fn usage_of(u: &libc::rusage) -> ResourceUsage {
    // Linux reports ru_maxrss in KiB, macOS in bytes.
    let unit = if cfg!(target_os = "linux") { 1024 } else { 1 };
    ResourceUsage {
        user: timeval(u.ru_utime),
        sys: timeval(u.ru_stime),
        max_rss_bytes: (u.ru_maxrss.max(0) as u64) * unit,
    }
}

fn timeval(t: libc::timeval) -> Duration {
    Duration::from_secs(t.tv_sec.max(0) as u64) + Duration::from_micros(t.tv_usec.max(0) as u64)
}

pub(super) fn exit_signal(status: &ExitStatus) -> Option<i32> {
    status.signal()
}

pub(super) fn signal_name(signal: i32) -> Option<&'static str> {
    Some(match signal {
        libc::SIGHUP => "SIGHUP",
        libc::SIGINT => "SIGINT",
        libc::SIGQUIT => "SIGQUIT",
        libc::SIGILL => "SIGILL",
        libc::SIGTRAP => "SIGTRAP",
        libc::SIGABRT => "SIGABRT",
        libc::SIGBUS => "SIGBUS",
        libc::SIGFPE => "SIGFPE",
        libc::SIGKILL => "SIGKILL",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGPIPE => "SIGPIPE",
        libc::SIGALRM => "SIGALRM",
        libc::SIGTERM => "SIGTERM",
        _ => return None,
    })
}

pub(super) fn errno_name(code: i32) -> Option<&'static str> {
    Some(match code {
        libc::E2BIG => "E2BIG",
        libc::EACCES => "EACCES",
        libc::ENODEV => "ENODEV",
        libc::ENOENT => "ENOENT",
        libc::ENXIO => "ENXIO",
        libc::EOPNOTSUPP => "EOPNOTSUPP",
        libc::EPERM => "EPERM",
        libc::ETXTBSY => "ETXTBSY",
        _ => return None,
    })
}

pub(super) fn arg_list_too_long(error: &std::io::Error) -> bool {
    error.raw_os_error() == Some(libc::E2BIG)
}

pub(super) fn pid_alive(pid: u32) -> bool {
    let Ok(pid) = libc::pid_t::try_from(pid) else {
        return false;
    };
    // SAFETY: signal 0 only checks that the process exists.
    let r = unsafe { libc::kill(pid, 0) };
    r == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

pub(super) fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

pub(super) fn cpu_seconds() -> f64 {
    let mut total = 0.0;
    for who in [libc::RUSAGE_SELF, libc::RUSAGE_CHILDREN] {
        // SAFETY: rusage is plain old data; zeroed is a valid value for it.
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: `usage` is a valid, writable rusage.
        if unsafe { libc::getrusage(who, &mut usage) } == 0 {
            for tv in [usage.ru_utime, usage.ru_stime] {
                total += tv.tv_sec as f64 + tv.tv_usec as f64 / 1e6;
            }
        }
    }
    total
}

pub(super) fn kernel_release() -> String {
    // SAFETY: utsname is plain old data; uname fills it.
    let mut u: libc::utsname = unsafe { std::mem::zeroed() };
    // SAFETY: `u` is valid for writes.
    if unsafe { libc::uname(&mut u) } != 0 {
        return String::new();
    }
    // SAFETY: uname NUL-terminates release within the array.
    let c = unsafe { std::ffi::CStr::from_ptr(u.release.as_ptr()) };
    c.to_string_lossy().into_owned()
}

/// A `sysctl` string (`machdep.cpu.brand_string`): macOS only.
#[cfg(target_os = "macos")]
pub(super) fn sysctl_string(name: &str) -> Option<String> {
    let name = std::ffi::CString::new(name).ok()?;
    let mut len: libc::size_t = 0;
    // SAFETY: a NULL buffer asks for the length only.
    let asked = unsafe {
        libc::sysctlbyname(
            name.as_ptr(),
            std::ptr::null_mut(),
            &mut len,
            std::ptr::null_mut(),
            0,
        )
    };
    if asked != 0 || len == 0 {
        return None;
    }
    let mut buf = vec![0u8; len];
    // SAFETY: `buf` holds `len` writable bytes.
    let got = unsafe {
        libc::sysctlbyname(
            name.as_ptr(),
            buf.as_mut_ptr().cast(),
            &mut len,
            std::ptr::null_mut(),
            0,
        )
    };
    if got != 0 {
        return None;
    }
    buf.truncate(len);
    let text = String::from_utf8_lossy(&buf);
    Some(text.trim_end_matches('\0').trim().to_string()).filter(|s| !s.is_empty())
}

pub(super) fn symlink(target: &Path, link: &Path) -> std::io::Result<()> {
    std::os::unix::fs::symlink(target, link)
}

pub(super) fn mode(meta: &std::fs::Metadata) -> u32 {
    meta.permissions().mode()
}

pub(super) fn file_id(meta: &std::fs::Metadata) -> Option<(u64, u64)> {
    Some((meta.dev(), meta.ino()))
}

pub(super) fn owner(meta: &std::fs::Metadata) -> Option<u32> {
    Some(meta.uid())
}

pub(super) fn current_uid() -> Option<u32> {
    // SAFETY: geteuid has no preconditions and cannot fail.
    Some(unsafe { libc::geteuid() })
}

pub(super) fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt as _;
    std::fs::DirBuilder::new().mode(0o700).create(dir)
}

pub(super) fn set_mode(path: &Path, mode: u32) -> std::io::Result<()> {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
}

pub(super) fn is_executable(meta: &std::fs::Metadata) -> bool {
    meta.permissions().mode() & 0o111 != 0
}

pub(super) fn copy_owner(file: &std::fs::File, like: &std::fs::Metadata) {
    let _ = std::os::unix::fs::fchown(file, Some(like.uid()), Some(like.gid()));
}

pub(super) fn is_fifo(kind: &std::fs::FileType) -> bool {
    kind.is_fifo()
}

pub(super) fn is_socket(kind: &std::fs::FileType) -> bool {
    kind.is_socket()
}

pub(super) fn is_char_device(kind: &std::fs::FileType) -> bool {
    kind.is_char_device()
}

pub(super) fn is_block_device(kind: &std::fs::FileType) -> bool {
    kind.is_block_device()
}

/// Open to read without waiting (`O_NONBLOCK`: a named pipe's open does not wait for a
/// writer) and, unless `follow`, never through a symlink (`O_NOFOLLOW`: `ELOOP`).
pub(super) fn open_to_read(path: &Path, follow: bool) -> std::io::Result<std::fs::File> {
    let flags = libc::O_NONBLOCK | if follow { 0 } else { libc::O_NOFOLLOW };
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(flags)
        .open(path)
}

/// Create a file that did not exist (`O_CREAT|O_EXCL`, plus `O_NOFOLLOW`: a symlink at
/// `path`, even one leading nowhere, is `EEXIST`, never followed).
pub(super) fn create_new(path: &Path, mode: u32) -> std::io::Result<std::fs::File> {
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode & 0o7777)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)
}

pub(super) fn open_lock(path: &Path) -> std::io::Result<std::fs::File> {
    std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)
}

pub(super) fn open_stream(target: &Path) -> std::io::Result<Option<std::fs::File>> {
    let fifo = std::fs::metadata(target)?.file_type().is_fifo();
    let mut open = std::fs::OpenOptions::new();
    open.write(true);
    if fifo {
        open.custom_flags(libc::O_NONBLOCK);
    }
    let file = match open.open(target) {
        Err(e) if fifo && e.raw_os_error() == Some(libc::ENXIO) => return Ok(None),
        r => r?,
    };
    if fifo {
        set_blocking(&file)?;
    }
    Ok(Some(file))
}

/// Clear `O_NONBLOCK`: a pipe's reader may be slower than we write.
fn set_blocking(file: &std::fs::File) -> std::io::Result<()> {
    let fd = file.as_raw_fd();
    // SAFETY: fcntl on a descriptor the caller owns, with integer arguments.
    let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
    if flags < 0 || unsafe { libc::fcntl(fd, libc::F_SETFL, flags & !libc::O_NONBLOCK) } < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

pub(super) fn mkfifo(path: &Path, mode: u32) -> std::io::Result<()> {
    let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes())?;
    // SAFETY: mkfifo with a NUL-terminated path.
    if unsafe { libc::mkfifo(c.as_ptr(), (mode & 0o7777) as libc::mode_t) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}
