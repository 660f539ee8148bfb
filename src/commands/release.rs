//! `cargo optimize release`: the release matrix (see `release`).

use crate::cli::{GlobalArgs, ReleaseArgs};

pub fn run(g: &GlobalArgs, args: &ReleaseArgs) -> anyhow::Result<i32> {
    crate::release::run(g, args)
}
