//! cargo-optimize: baseline → profile → cpu → PGO → BOLT, each candidate verified and
//! measured against the best so far; only what measurably helps is kept.
//!
//! The modules form layers (ARCHITECTURE.md, "Layers"): a module imports only from layers
//! below its own; `layers.rs` checks it.
//!
//! Every item is `pub(crate)` unless it is the one API ([`run_from_env`]) or what the
//! integration tests reach through [`testing`]; `unreachable_pub` holds that.

#![warn(unreachable_pub)]

pub(crate) mod apply;
pub(crate) mod bench;
pub(crate) mod cache;
pub(crate) mod cargo;
pub(crate) mod check;
pub(crate) mod cli;
pub(crate) mod commands;
pub(crate) mod context;
pub(crate) mod fleet;
pub(crate) mod git;
pub(crate) mod hotspots;
pub(crate) mod jobs;
#[cfg(test)]
mod layers;
#[cfg(test)]
mod limits;
pub(crate) mod pipeline;
pub(crate) mod process;
pub(crate) mod propose;
pub(crate) mod release;
pub(crate) mod render;
pub(crate) mod report;
pub(crate) mod spec;
pub(crate) mod stage;
pub(crate) mod stages;
pub(crate) mod store;
pub(crate) mod sys;
pub mod testing;
pub(crate) mod toolchain;
pub(crate) mod ui;
pub(crate) mod util;
pub(crate) mod verify;
pub(crate) mod workflow;

use cli::{Action, Parsed};

/// Run the command line this process was given (`cargo optimize …` or `cargo-optimize …`);
/// returns the process exit code. The one API of the library: everything else is the
/// crate's own, and integration tests reach what they exercise through [`testing`]. Started
/// by rustc as the linker of one of this tool's own builds, it links (`cargo::twin`).
pub fn run_from_env() -> anyhow::Result<i32> {
    if let Some(code) = cargo::twin::as_linker() {
        return Ok(code);
    }
    run_cli(cli::parse_from_env())
}

/// Run a parsed command line; returns the process exit code.
fn run_cli(parsed: Parsed) -> anyhow::Result<i32> {
    let Parsed {
        global: g,
        command,
        warnings,
    } = parsed;
    ui::set_color_choice(g.color.forced());
    let ui = ui::Ui::new(g.quiet, g.verbose, g.color.forced());
    for w in &warnings {
        ui.warn(w);
    }
    cargo::set_flags(g.selection.flags());
    // A bad build bound is bad input, said before anything runs.
    cargo::build_timeout()?;
    sys::interrupt::install();
    let json = matches!(&command, Action::Run(a) if a.message_format == cli::MessageFormat::Json);
    let done = run_command(&g, command);
    if let (Err(e), true) = (&done, json) {
        ui.error_event(&format!("{e:#}"));
    }
    // An error can return while builds started ahead still run: none outlives the command.
    sys::interrupt::kill_all();
    done
}

fn run_command(g: &cli::GlobalArgs, command: Action) -> anyhow::Result<i32> {
    match command {
        Action::Run(args) => commands::run::run(g, &args),
        Action::Init(args) => commands::init::run(g, &args),
        Action::Doctor(args) => commands::doctor::run(g, &args),
        Action::Bench(args) => commands::bench::run(g, &args),
        Action::Apply(args) => commands::apply::run(g, &args),
        Action::Report(args) => commands::report::run(g, &args),
        Action::Hotspots(args) => commands::hotspots::run(g, &args),
        Action::Check(args) => commands::check::run(g, &args),
        Action::Release(args) => commands::release::run(g, &args),
        Action::Ci(args) => commands::ci::run(g, &args),
        Action::Profile(args) => commands::profile::run(g, &args),
        Action::Clean(_) => commands::clean::run(g),
        Action::Cache(args) => commands::cache::run(g, &args),
        Action::Completions(args) => commands::completions::run(&args),
        Action::Man => commands::completions::man(),
    }
}
