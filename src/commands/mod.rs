//! One file per subcommand, dispatched one-to-one from `lib.rs`. A command turns its flags
//! into the lower layers' own types, calls them, and returns the exit code. Where a command
//! has a module of its own below (`check`, `release`, `apply`, …) its file is that call;
//! the others (`bench`: what to compare, the spinner, the per-workload lines, the exports;
//! `clean`, `cache`, `init`, …) are written whole in their file, since what they print is
//! theirs alone. No command file imports another (`layers.rs` checks it), and none holds
//! what a lower module needs: measuring is `bench`'s, rendering `render`'s.

pub mod apply;
pub mod bench;
pub mod cache;
pub mod check;
pub mod ci;
pub mod clean;
pub mod completions;
pub mod doctor;
pub mod hotspots;
pub mod init;
pub mod profile;
pub mod release;
pub mod report;
pub mod run;

/// A command's result, to `-o FILE` or stdout (`util::atomic::emit`).
pub(crate) fn emit(out: Option<&std::path::Path>, text: &str, quiet: bool) -> anyhow::Result<()> {
    Ok(crate::util::atomic::emit(out, text, quiet)?)
}
