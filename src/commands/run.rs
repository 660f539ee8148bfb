//! `cargo optimize` / `cargo optimize run`: resolve the plan, run the pipeline.

use crate::cli::{GlobalArgs, RunArgs};
use crate::pipeline::{self, Plan};

pub fn run(g: &GlobalArgs, args: &RunArgs) -> anyhow::Result<i32> {
    let plan = Plan::resolve(g, args)?;
    pipeline::run(&plan)
}
