//! `cargo optimize init`: write a commented optimize.toml for the package's binary, never
//! over an existing file.

use std::io::Write;

use anyhow::Context as _;

use crate::cargo::Workspace;
use crate::cli::{GlobalArgs, InitArgs};
use crate::spec;

pub(crate) fn run(g: &GlobalArgs, args: &InitArgs) -> anyhow::Result<i32> {
    let ws = Workspace::load(&g.selection)?;
    let sel = g.selection.clone();
    let package = ws.package_project(&sel)?;
    let (project, text) = match (package.bins.is_empty(), package.benches.first()) {
        // A library: what can run is its bench harness.
        (true, Some(first)) => {
            let text = spec::skeleton_for_bench(first, package.benches.len() > 1);
            if package.bench_framework.as_deref() == Some("criterion") {
                eprintln!("note: the bench harness `{first}` uses criterion: each run is measured by its benchmarks' own per-iteration estimates (criterion 0.4 to 0.8), not its run time");
            }
            (package.clone(), text)
        }
        _ => {
            let project = ws.project(&sel, None, None)?;
            let mut text = match args.args.is_empty() {
                true => spec::skeleton(&project.bin),
                false => spec::skeleton_with_args(&project.bin, &args.args),
            };
            if !project.benches.is_empty() {
                text.push_str(&spec::bench_proposals(&project.benches));
            }
            (project, text)
        }
    };
    let path = match &g.spec {
        Some(p) => p.clone(),
        None => project.package_dir.join(spec::SPEC_FILE),
    };
    if let Some(to) = std::fs::read_link(&path).ok().filter(|_| !path.exists()) {
        anyhow::bail!(
            "{} is a symlink to {}, which does not exist; not writing through it\n  fix: remove the link, or create {} and run `cargo optimize init` again",
            path.display(),
            to.display(),
            to.display()
        );
    }
    if path.exists() {
        anyhow::bail!(
            "{} already exists; not overwriting it\n  fix: edit it, or remove it first to get a fresh skeleton",
            path.display()
        );
    }
    // create_new: never clobber a file that appeared in between.
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&path)
        .with_context(|| format!("cannot create {}", path.display()))?;
    f.write_all(text.as_bytes())?;
    let what = match project.bins.is_empty() {
        true => format!("the bench harness of library `{}`", project.package),
        false => format!("binary `{}`", project.bin),
    };
    eprintln!(
        "wrote {} for {what}: describe how the program is really run in its [[workload]] entries, then run `cargo optimize`",
        path.display()
    );
    Ok(0)
}
