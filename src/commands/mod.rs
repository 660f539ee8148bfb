//! One file per subcommand, dispatched one-to-one from `lib.rs`. A command turns its flags
//! into the lower layers' own types, calls them, and returns the exit code. Where a command
//! has a module of its own below (`check`, `release`, `apply`, …) its file is that call;
//! the others (`bench`: what to compare, the spinner, the per-workload lines, the exports;
//! `clean`, `cache`, `init`, …) are written whole in their file, since what they print is
//! theirs alone. No command file imports another (`layers.rs` checks it), and none holds
//! what a lower module needs: measuring is `bench`'s, rendering `render`'s.

pub(crate) mod apply;
pub(crate) mod bench;
pub(crate) mod cache;
pub(crate) mod check;
pub(crate) mod ci;
pub(crate) mod clean;
pub(crate) mod completions;
pub(crate) mod doctor;
pub(crate) mod hotspots;
pub(crate) mod init;
pub(crate) mod profile;
pub(crate) mod release;
pub(crate) mod report;
pub(crate) mod run;

/// A command's result, to `-o FILE` or stdout (`util::atomic::emit`).
pub(crate) fn emit(out: Option<&std::path::Path>, text: &str, quiet: bool) -> anyhow::Result<()> {
    Ok(crate::util::atomic::emit(out, text, quiet)?)
}
