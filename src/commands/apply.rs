//! `cargo optimize apply [RUN]`: write a run's winner into the project (see `apply`).

use crate::cli::{ApplyArgs, GlobalArgs};

pub(crate) fn run(g: &GlobalArgs, args: &ApplyArgs) -> anyhow::Result<i32> {
    crate::apply::run(g, args)
}
