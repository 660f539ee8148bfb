//! `cargo optimize hotspots [RUN]`: a past run's hottest functions from its merged PGO
//! profile (through `report::locate` + `report::load` and `hotspots::of_run`, with the
//! llvm-profdata of rustc's LLVM), as terminal tables, Markdown or JSON; with
//! `--flamegraph[=WORKLOAD]`, a perf-sampled flamegraph of its shipped binary too. The
//! ranking is printed even when the flamegraph cannot be drawn (then the exit code is 2).
//! To stdout, or atomically to `-o FILE`.

use std::path::{Path, PathBuf};

use crate::cli::{GlobalArgs, HotspotsArgs};
use crate::hotspots::{self, flamegraph};
use crate::report::{self, Report};
use crate::ui::Ui;

pub(crate) fn run(g: &GlobalArgs, args: &HotspotsArgs) -> anyhow::Result<i32> {
    let path = crate::apply::find_report(g, args.run.as_deref())?;
    let report = report::load(&path)?;
    let (row, profile) = hotspots::profile_of(&report)?;
    let (_, profdata) = crate::context::plan::llvm_profdata()?;
    let mut view = hotspots::of_run(&report, row, profile, &profdata.path, args.top)?;
    let failed = match &args.flamegraph {
        None => None,
        Some(name) => match draw(g, &report, &path, name.as_deref()) {
            Ok(svg) => {
                view.flamegraph = Some(svg);
                None
            }
            Err(e) => Some(e),
        },
    };
    let text = args.format.renderer().render(&view);
    super::emit(args.output.as_deref(), &text, g.quiet)?;
    match failed {
        Some(e) => Err(e.context("no flamegraph")),
        None => Ok(0),
    }
}

/// The flamegraph of the run's shipped binary on workload `name` of the project's spec.
fn draw(
    g: &GlobalArgs,
    report: &Report,
    report_path: &Path,
    name: Option<&str>,
) -> anyhow::Result<PathBuf> {
    let (spec, project) = crate::pipeline::locate(g)?;
    let workload = flamegraph::workload(&spec, name)?;
    let ui = Ui::new(g.quiet, g.verbose, g.color.forced());
    ui.step(&format!(
        "sampling `{}` on workload `{}` with perf (cpu-clock)",
        report.bin, workload.name
    ));
    // The run's own folder, not `latest` (which a later run repoints).
    let parent = report_path.parent().unwrap_or(Path::new("."));
    let run_dir = parent
        .canonicalize()
        .unwrap_or_else(|_| parent.to_path_buf());
    let exclude = [project.target_dir.clone()];
    let svg = flamegraph::draw(report, &run_dir, workload, &spec.path, &exclude)?;
    ui.info(&format!("flamegraph: {}", svg.display()));
    Ok(svg)
}
