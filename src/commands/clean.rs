//! `cargo optimize clean`: remove `target/optimize` — refused while a run uses it.

use anyhow::Context as _;

use crate::cargo::Workspace;
use crate::cli::GlobalArgs;

/// `target/optimize` of the selected project (`--target-dir` first).
pub fn optimize_dir(g: &GlobalArgs) -> anyhow::Result<std::path::PathBuf> {
    let ws = Workspace::load(&g.selection.cargo())?;
    let project = ws.project(&g.selection.cargo(), None, None).ok();
    Ok(match (&g.selection.target_dir, project) {
        (Some(d), _) => d.join("optimize"),
        (None, Some(p)) => p.target_dir.join("optimize"),
        (None, None) => ws.root().join("target").join("optimize"),
    })
}

pub fn run(g: &GlobalArgs) -> anyhow::Result<i32> {
    let dir = optimize_dir(g)?;
    let _lock = crate::context::DirLock::for_clean(&dir)?;
    if dir.exists() {
        std::fs::remove_dir_all(&dir)
            .with_context(|| format!("cannot remove {}", dir.display()))?;
        eprintln!("removed {}", dir.display());
    } else {
        eprintln!("nothing to remove ({} does not exist)", dir.display());
    }
    Ok(0)
}
