//! cargo-optimize: baseline → profile → cpu → PGO → BOLT, each candidate verified and
//! measured against the best so far; only what measurably helps is kept.

pub mod apply;
pub mod bench;
pub mod cargo;
pub mod cli;
pub mod commands;
pub mod pipeline;
pub mod process;
pub mod report;
pub mod spec;
pub mod stage;
pub mod toolchain;
pub mod util;
pub mod verify;

use cli::{Cli, Command};

/// Run a parsed command line; returns the process exit code.
pub fn run_cli(cli: Cli) -> anyhow::Result<i32> {
    match cli.command {
        None => pipeline::run_command(&cli.global, &cli.run),
        Some(Command::Run(args)) => pipeline::run_command(&cli.global, &args),
        Some(Command::Init(_)) => pipeline::init_command(&cli.global),
        Some(Command::Doctor(args)) => toolchain::doctor_command(&args),
        Some(Command::Bench(args)) => commands::bench::run(&cli.global, &args),
        Some(Command::Apply(args)) => apply::apply_command(&cli.global, &args),
        Some(Command::Clean) => pipeline::clean_command(&cli.global),
    }
}
