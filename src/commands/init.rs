//! `cargo optimize init`: write a commented optimize.toml for the package's binary (else
//! for the `cdylib` a host program loads, else for its bench harness), never over an
//! existing file.

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
        // A library a host program loads: the workloads run that host.
        (true, _) if package.library.is_some() => (package.clone(), host_skeleton(&package)),
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
    let (what, then) = match (&project.library, project.bins.is_empty()) {
        (Some(l), true) => (
            format!("the library `{}` a host program loads", l.target),
            "write the host script bench/run.py its [[workload]] entries run (its comments show one), then run `cargo optimize`",
        ),
        (None, true) => (
            format!("the bench harness of library `{}`", project.package),
            "describe how the program is really run in its [[workload]] entries, then run `cargo optimize`",
        ),
        (_, false) => (
            format!("binary `{}`", project.bin),
            "describe how the program is really run in its [[workload]] entries, then run `cargo optimize`",
        ),
    };
    eprintln!("wrote {} for {what}: {then}", path.display());
    Ok(0)
}

/// The spec of a package whose `cdylib` a host loads: a Python script importing the
/// module, or a host loading the plain library; its benches proposed as for a binary.
fn host_skeleton(package: &crate::cargo::Project) -> String {
    let Some(library) = &package.library else {
        return String::new();
    };
    let hosted = match &library.python_module {
        Some(m) => spec::host::Hosted::Module(m),
        None => spec::host::Hosted::Plain(&library.target),
    };
    let mut text = spec::host::skeleton_for_host(hosted);
    if !package.benches.is_empty() {
        text.push_str(&spec::bench_proposals(&package.benches));
    }
    text
}
