//! `cargo optimize ci --github`: write the CI workflow (see `check::ci`).

use crate::cli::{CiArgs, GlobalArgs};

pub(crate) fn run(g: &GlobalArgs, args: &CiArgs) -> anyhow::Result<i32> {
    crate::check::ci::run(g, args)
}
