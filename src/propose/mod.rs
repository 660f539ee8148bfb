//! A file this tool proposes to write into the user's project, and how: the unified diff
//! shown first ([`text::unified_diff`]), nothing written on a dry run, an existing file
//! that differs replaced only when asked (`--force`), and every write through
//! [`write::write_all`] (atomic, all or nothing, a backup of what it replaces). `apply`
//! writes its manifest, config and profile edits through `write` and `text`; `ci --github`
//! and `release --emit-ci` write their workflows through [`propose`].
//!
//! Must not: know what the files mean (a profile, a workflow); build, run or measure.

use std::path::{Path, PathBuf};

use anyhow::bail;

pub(crate) mod text;
pub(crate) mod write;

pub(crate) use text::unified_diff;
pub(crate) use write::{write_all, FileWrite};

/// A file the tool writes into the repository for the user (a CI workflow).
pub(crate) struct Proposal<'a> {
    pub(crate) root: &'a Path,
    /// Relative to `root`, as the diff names it.
    pub(crate) file: &'a str,
    pub(crate) text: String,
    /// Printed after the diff, when there is one.
    pub(crate) warnings: Vec<String>,
    /// Replace an existing, different file.
    pub(crate) force: bool,
    /// Show the diff, write nothing.
    pub(crate) dry_run: bool,
}

/// Show `p`'s file as a unified diff against what is there, then write it through
/// [`write_all`] (atomic, a backup of a replaced file) — unless it is already up to
/// date, it is a dry run, or a different file is there and `force` is not set (an error
/// with the fix).
pub(crate) fn propose(p: &Proposal) -> anyhow::Result<i32> {
    let path = p.root.join(p.file);
    let old = match std::fs::read(&path) {
        Ok(b) => Some(b),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => bail!("cannot read {}: {e}", path.display()),
    };
    if old.as_deref() == Some(p.text.as_bytes()) {
        println!("{}: already up to date", p.file);
        return Ok(0);
    }
    let old_text = String::from_utf8_lossy(old.as_deref().unwrap_or_default()).into_owned();
    print!("{}", unified_diff(&old_text, &p.text, p.file));
    for warning in &p.warnings {
        eprintln!("warning: {warning}");
    }
    if p.dry_run {
        println!("dry run: nothing written");
        return Ok(0);
    }
    if old.is_some() && !p.force {
        bail!(
            "{} exists and differs (the diff above)\n  fix: pass --force to replace it (the old file is kept as a .bak), or edit it by hand",
            path.display()
        );
    }
    write_file(path, old, p.text.clone())
}

fn write_file(path: PathBuf, old: Option<Vec<u8>>, text: String) -> anyhow::Result<i32> {
    let files = [FileWrite {
        path,
        old,
        new: text.into_bytes(),
    }];
    write_all(&files)?.iter().for_each(write::tell);
    Ok(0)
}
