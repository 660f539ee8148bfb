//! `cargo optimize check`: the CI performance gate (see `check`).

use crate::cli::{CheckArgs, GlobalArgs};

pub(crate) fn run(g: &GlobalArgs, args: &CheckArgs) -> anyhow::Result<i32> {
    crate::check::run(g, args)
}
