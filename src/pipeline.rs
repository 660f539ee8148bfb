//! Orders the stages, keeps or drops candidates, writes the run folder.

use crate::cli::{GlobalArgs, RunArgs};

pub fn run_command(_g: &GlobalArgs, _a: &RunArgs) -> anyhow::Result<i32> {
    anyhow::bail!("not yet")
}
pub fn init_command(_g: &GlobalArgs) -> anyhow::Result<i32> {
    anyhow::bail!("not yet")
}
pub fn clean_command(_g: &GlobalArgs) -> anyhow::Result<i32> {
    anyhow::bail!("not yet")
}

/// The spec for the selected package: `--spec PATH`, else optimize.toml next to the
/// package's Cargo.toml.
pub fn load_spec(g: &GlobalArgs) -> anyhow::Result<crate::spec::Spec> {
    let path = match &g.spec {
        Some(p) => p.clone(),
        None => std::path::PathBuf::from(crate::spec::SPEC_FILE),
    };
    Ok(crate::spec::load(&path)?)
}
