//! `cargo optimize doctor`: the toolchain, LLVM tools, CPU and perf facts, with fixes;
//! `--format term|json` (`--json` the same as `--format json`), `-o FILE`. In a package
//! whose `cdylib` a host program loads, the host's interpreter and whether it matches.

use crate::cargo::{lockfile, Workspace};
use crate::cli::{DoctorArgs, GlobalArgs, TermJson};
use crate::spec;
use crate::toolchain::python::HostQuery;

pub(crate) fn run(g: &GlobalArgs, args: &DoctorArgs) -> anyhow::Result<i32> {
    let json = args.format == TermJson::Json;
    let color = args.output.is_none() && crate::ui::stdout_color(g.color.forced());
    let host = host_query(g);
    let (text, code) = crate::toolchain::doctor_command(args.fix, json, color, host.as_ref())?;
    super::emit(args.output.as_deref(), &text, g.quiet)?;
    Ok(code)
}

/// The library of the selected package a host program loads, when it is one: its spec's
/// workloads give `command` (their first word is the host), or without a spec the package
/// has a `cdylib` and no binary (`init` would write `python3` workloads). Nothing outside a
/// package, or when its spec does not parse (a run says why): doctor works anywhere.
fn host_query(g: &GlobalArgs) -> Option<HostQuery> {
    let ws = Workspace::load(&g.selection).ok()?;
    let project = ws.package_project(&g.selection).ok()?;
    let library = project.library.clone()?;
    let path = (g.spec.clone()).unwrap_or_else(|| project.package_dir.join(spec::SPEC_FILE));
    let (host, cwd) = match path.exists() {
        true => {
            let w = spec::load(&path).ok()?.workloads.into_iter().next()?;
            (w.host?.into_iter().next()?, w.cwd)
        }
        false if project.bins.is_empty() => ("python3".to_string(), project.package_dir.clone()),
        false => return None,
    };
    let pyo3 = (lockfile::locked(&project).into_iter())
        .find(|p| p.name == "pyo3")
        .map(|p| p.version);
    Some(HostQuery {
        python_module: library.python_module,
        host,
        cwd,
        pyo3,
        abi3: library.abi3,
    })
}
