//! `cargo optimize [run]`: resolve the plan, run the pipeline.

use crate::cli::{GlobalArgs, RunArgs};
use crate::context::Plan;
use crate::pipeline;

pub(crate) fn run(g: &GlobalArgs, args: &RunArgs) -> anyhow::Result<i32> {
    let plan = Plan::resolve(&args.asked(g), &pipeline::plan::RULES)?;
    let code = pipeline::run(&plan)?;
    if !args.args.is_empty() && !plan.spec.path.exists() {
        let quoted: Vec<String> = args
            .args
            .iter()
            .map(|a| shell_words::quote(a).into_owned())
            .collect();
        plan.ui.info(&format!(
            "this run used `{}` as its only workload; to keep it and add more: cargo optimize init -- {}",
            quoted.join(" "),
            quoted.join(" ")
        ));
    }
    Ok(code)
}
