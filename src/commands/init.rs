//! `cargo optimize init`: write a commented optimize.toml for the package's binary, never
//! over an existing file.

use std::io::Write;

use anyhow::Context as _;

use crate::cargo::Workspace;
use crate::cli::{GlobalArgs, InitArgs};
use crate::spec;

pub fn run(g: &GlobalArgs, args: &InitArgs) -> anyhow::Result<i32> {
    let ws = Workspace::load(&g.selection.cargo())?;
    let project = ws.project(&g.selection.cargo(), None, None)?;
    let path = match &g.spec {
        Some(p) => p.clone(),
        None => project.package_dir.join(spec::SPEC_FILE),
    };
    if path.exists() {
        anyhow::bail!(
            "{} already exists; not overwriting it\n  fix: edit it, or remove it first to get a fresh skeleton",
            path.display()
        );
    }
    let text = match args.args.is_empty() {
        true => spec::skeleton(&project.bin),
        false => spec::skeleton_with_args(&project.bin, &args.args),
    };
    // create_new: never clobber a file that appeared in between.
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&path)
        .with_context(|| format!("cannot create {}", path.display()))?;
    f.write_all(text.as_bytes())?;
    eprintln!(
        "wrote {} for binary `{}`: describe how the program is really run in its [[workload]] entries, then run `cargo optimize`",
        path.display(),
        project.bin
    );
    Ok(0)
}
