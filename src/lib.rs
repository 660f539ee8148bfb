//! cargo-optimize: baseline → profile → cpu → PGO → BOLT, each candidate verified and
//! measured against the best so far; only what measurably helps is kept.
//!
//! The modules form layers (ARCHITECTURE.md, "Layers"): a module imports only from layers
//! below its own; `layers.rs` checks it.

pub mod apply;
pub mod bench;
pub mod cargo;
pub mod cli;
pub mod commands;
pub mod context;
#[cfg(test)]
mod layers;
pub mod pipeline;
pub mod process;
pub mod report;
pub mod spec;
pub mod stage;
pub mod toolchain;
pub mod ui;
pub mod util;
pub mod verify;

use cli::{Cli, Command};

/// Run a parsed command line; returns the process exit code.
pub fn run_cli(cli: Cli) -> anyhow::Result<i32> {
    match cli.command {
        None => commands::run::run(&cli.global, &cli.run),
        Some(Command::Run(args)) => commands::run::run(&cli.global, &args),
        Some(Command::Init(_)) => commands::init::run(&cli.global),
        Some(Command::Doctor(args)) => commands::doctor::run(&args),
        Some(Command::Bench(args)) => commands::bench::run(&cli.global, &args),
        Some(Command::Apply(args)) => commands::apply::run(&cli.global, &args),
        Some(Command::Clean) => commands::clean::run(&cli.global),
    }
}
