//! `cargo optimize profile collect|merge`: profiles from production (`fleet`). `collect`
//! resolves the run plan (the project and its settings) and builds the collector; `merge`
//! needs no project, only rustc and its llvm-profdata.

use crate::cli::{CollectArgs, GlobalArgs, MergeArgs, ProfileAction, ProfileArgs, TermJson};
use crate::fleet::{collect, merge};
use crate::ui::Ui;

pub(crate) fn run(g: &GlobalArgs, args: &ProfileArgs) -> anyhow::Result<i32> {
    match &args.action {
        ProfileAction::Collect(a) => run_collect(g, a),
        ProfileAction::Merge(a) => run_merge(g, a),
    }
}

fn run_collect(g: &GlobalArgs, args: &CollectArgs) -> anyhow::Result<i32> {
    let asked = crate::cli::RunArgs::default().asked(g);
    let plan = crate::context::Plan::resolve(&asked, &crate::pipeline::plan::RULES)?;
    let collector = collect::build(&plan, args.output.as_deref(), args.dir.as_deref())?;
    print!("{}", collector.describe());
    Ok(0)
}

fn run_merge(g: &GlobalArgs, args: &MergeArgs) -> anyhow::Result<i32> {
    let ui = Ui::new(g.quiet, g.verbose, g.color.forced());
    let weights = args
        .weights
        .iter()
        .map(|w| merge::parse_weight(w))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let (inputs, duplicates) = merge::inputs(&args.inputs, &weights)?;
    for d in &duplicates {
        ui.warn(d);
    }
    let (rustc, tool) = crate::context::plan::llvm_profdata()?;
    let merged = merge::merge(&tool, &rustc, &inputs, &args.output, &ui)?;
    match args.format {
        TermJson::Term => print!("{}", merged.summary()),
        TermJson::Json => println!("{:#}", merged.json()),
    }
    Ok(0)
}
