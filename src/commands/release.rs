//! `cargo optimize release`: the release matrix (see `release`).

use crate::cli::{GlobalArgs, ReleaseArgs};

pub(crate) fn run(g: &GlobalArgs, args: &ReleaseArgs) -> anyhow::Result<i32> {
    crate::release::run(g, args)
}
