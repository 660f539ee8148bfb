//! cargo-optimize: baseline → profile → cpu → PGO → BOLT, each candidate verified and
//! measured against the best so far; only what measurably helps is kept.
//!
//! The modules form layers (ARCHITECTURE.md, "Layers"): a module imports only from layers
//! below its own; `layers.rs` checks it.

pub(crate) mod apply;
pub mod bench;
pub(crate) mod cache;
pub(crate) mod cargo;
pub(crate) mod check;
pub mod cli;
pub(crate) mod commands;
pub(crate) mod context;
pub(crate) mod fleet;
pub(crate) mod hotspots;
pub(crate) mod jobs;
#[cfg(test)]
mod layers;
#[cfg(test)]
mod limits;
pub(crate) mod pipeline;
pub mod process;
pub(crate) mod release;
pub mod render;
pub mod report;
pub(crate) mod spec;
pub(crate) mod stage;
pub(crate) mod store;
pub(crate) mod sys;
pub(crate) mod toolchain;
pub(crate) mod ui;
pub(crate) mod util;
pub(crate) mod verify;

use cli::{Cli, Command};

/// Run a parsed command line; returns the process exit code.
pub fn run_cli(cli: Cli) -> anyhow::Result<i32> {
    match cli.command {
        None => commands::run::run(&cli.global, &cli.run),
        Some(Command::Run(args)) => commands::run::run(&cli.global, &args),
        Some(Command::Init(args)) => commands::init::run(&cli.global, &args),
        Some(Command::Doctor(args)) => commands::doctor::run(&args),
        Some(Command::Bench(args)) => commands::bench::run(&cli.global, &args),
        Some(Command::Apply(args)) => commands::apply::run(&cli.global, &args),
        Some(Command::Report(args)) => commands::report::run(&cli.global, &args),
        Some(Command::Hotspots(args)) => commands::hotspots::run(&cli.global, &args),
        Some(Command::Check(args)) => commands::check::run(&cli.global, &args),
        Some(Command::Release(args)) => commands::release::run(&cli.global, &args),
        Some(Command::Ci(args)) => commands::ci::run(&cli.global, &args),
        Some(Command::Profile(args)) => commands::profile::run(&cli.global, &args),
        Some(Command::Clean) => commands::clean::run(&cli.global),
        Some(Command::Cache(args)) => commands::cache::run(&cli.global, &args),
    }
}
