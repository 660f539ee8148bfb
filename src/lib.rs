//! cargo-optimize: baseline → profile → cpu → PGO → BOLT, each candidate verified and
//! measured against the best so far; only what measurably helps is kept.
//!
//! The modules form layers (ARCHITECTURE.md, "Layers"): a module imports only from layers
//! below its own; `layers.rs` checks it.

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
pub(crate) mod store;
pub(crate) mod sys;
pub mod testing;
pub(crate) mod toolchain;
pub(crate) mod ui;
pub(crate) mod util;
pub(crate) mod verify;
pub(crate) mod workflow;

use cli::{Command, Parsed};

/// Run the command line this process was given (`cargo optimize …` or `cargo-optimize …`);
/// returns the process exit code. The one API of the library: everything else is the
/// crate's own, and integration tests reach what they exercise through [`testing`].
pub fn run_from_env() -> anyhow::Result<i32> {
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
    let json = matches!(&command, Command::Run(a) if a.message_format == cli::MessageFormat::Json);
    let done = run_command(&g, command);
    if let (Err(e), true) = (&done, json) {
        ui.error_event(&format!("{e:#}"));
    }
    // An error can return while builds started ahead still run: none outlives the command.
    sys::interrupt::kill_all();
    done
}

fn run_command(g: &cli::GlobalArgs, command: Command) -> anyhow::Result<i32> {
    match command {
        Command::Run(args) => commands::run::run(g, &args),
        Command::Init(args) => commands::init::run(g, &args),
        Command::Doctor(args) => commands::doctor::run(g, &args),
        Command::Bench(args) => commands::bench::run(g, &args),
        Command::Apply(args) => commands::apply::run(g, &args),
        Command::Report(args) => commands::report::run(g, &args),
        Command::Hotspots(args) => commands::hotspots::run(g, &args),
        Command::Check(args) => commands::check::run(g, &args),
        Command::Release(args) => commands::release::run(g, &args),
        Command::Ci(args) => commands::ci::run(g, &args),
        Command::Profile(args) => commands::profile::run(g, &args),
        Command::Clean(_) => commands::clean::run(g),
        Command::Cache(args) => commands::cache::run(g, &args),
        Command::Completions(args) => commands::completions::run(&args),
        Command::Man => commands::completions::man(),
    }
}
