//! The parse: clap's matches into [`Parsed`]. Options of a group a subcommand takes
//! (package, features, compilation, spec) may come before it (`cargo optimize -p foo
//! check`), where clap reads them as the default run's; they are handed to the subcommand,
//! or refused naming the flag when it does not take them. Deprecated spellings become
//! their replacements here, each with a warning.

use std::ffi::OsString;

use clap::parser::ValueSource;
use clap::{ArgMatches, Args, CommandFactory, FromArgMatches};

use super::*;

/// A parsed command line: the options every command reads, the command (the run when
/// none was named), and the warnings deprecated spellings earned.
#[derive(Debug)]
pub(crate) struct Parsed {
    pub global: GlobalArgs,
    pub command: Action,
    pub warnings: Vec<String>,
}

/// The clap command (help, completions, the man page).
pub(crate) fn command() -> clap::Command {
    Cli::command()
}

/// Parse the process arguments, dropping the `optimize` that cargo inserts when the
/// binary is run as `cargo optimize …`; on a bad command line, print clap's error (with
/// "did you mean" where one is close) and exit 2.
pub(crate) fn parse_from_env() -> Parsed {
    let mut args: Vec<OsString> = std::env::args_os().collect();
    if args.get(1).is_some_and(|a| a == "optimize") {
        args.remove(1);
    }
    let color = help_color(&args);
    match parse_with(command().color(color), args) {
        Ok(p) => p,
        Err(e) => e.exit(),
    }
}

/// Parse `args` (the program name first).
#[cfg(test)]
pub(crate) fn parse<I, T>(args: I) -> Result<Parsed, clap::Error>
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    parse_with(command(), args)
}

fn parse_with<I, T>(mut cmd: clap::Command, args: I) -> Result<Parsed, clap::Error>
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let args: Vec<OsString> = args.into_iter().map(Into::into).collect();
    let matches = match cmd.try_get_matches_from_mut(&args) {
        Ok(m) => m,
        Err(e) => return Err(suggest_subcommand(&mut cmd, e)),
    };
    let cli = Cli::from_arg_matches(&matches)?;
    check_hoisted(&cmd, &matches).map_err(|e| e.format(&mut cmd))?;
    Ok(resolve(cli))
}

/// clap's "unexpected argument 'bnech'" when the word is close to a subcommand's name
/// becomes "unrecognized subcommand … a similar subcommand exists: 'bench'" (clap says the
/// former because the run takes trailing arguments after `--`).
fn suggest_subcommand(cmd: &mut clap::Command, e: clap::Error) -> clap::Error {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    if e.kind() != ErrorKind::UnknownArgument {
        return e;
    }
    let Some(ContextValue::String(word)) = e.get(ContextKind::InvalidArg) else {
        return e;
    };
    if word.starts_with('-') {
        return e;
    }
    let best = cmd
        .get_subcommands()
        .filter(|s| !s.is_hide_set())
        .map(|s| (strsim::jaro(word, s.get_name()), s.get_name().to_string()))
        .filter(|(score, _)| *score > 0.7)
        .max_by(|a, b| a.0.total_cmp(&b.0));
    let Some((_, name)) = best else {
        return e;
    };
    let message =
        format!("unrecognized subcommand '{word}'\n\n  tip: a similar subcommand exists: '{name}'");
    clap::Error::raw(ErrorKind::InvalidSubcommand, message).format(cmd)
}

/// Top-level options given with a subcommand: only those of a group the subcommand
/// (or its own subcommand) takes.
fn check_hoisted(cmd: &clap::Command, matches: &ArgMatches) -> Result<(), clap::Error> {
    let Some((name, sub_matches)) = matches.subcommand() else {
        return Ok(());
    };
    let groups: Vec<String> = BuildOpts::augment_args(clap::Command::new("x"))
        .get_arguments()
        .map(|a| a.get_id().to_string())
        .collect();
    let mut path = vec![cmd.find_subcommand(name).expect("parsed")];
    let mut m = sub_matches;
    while let Some((n, sm)) = m.subcommand() {
        let last = path[path.len() - 1];
        path.push(last.find_subcommand(n).expect("parsed"));
        m = sm;
    }
    for arg in cmd.get_arguments().filter(|a| !a.is_global_set()) {
        let id = arg.get_id().as_str();
        if matches.value_source(id) != Some(ValueSource::CommandLine) {
            continue;
        }
        let taken = groups.iter().any(|g| g == id)
            && path
                .iter()
                .any(|c| c.get_arguments().any(|a| a.get_id() == id));
        if !taken {
            let flag = match (arg.get_long(), arg.get_short()) {
                (Some(l), _) => format!("--{l}"),
                (None, Some(s)) => format!("-{s}"),
                (None, None) => id.to_string(),
            };
            let names: Vec<&str> = path.iter().map(|c| c.get_name()).collect();
            let sub = names.join(" ");
            let fix = match groups.iter().any(|g| g == id) {
                true => format!("fix: leave `{flag}` out; `cargo optimize {sub} --help` lists what it takes"),
                false => format!("fix: `{flag}` is an option of the run: `cargo optimize run {flag} …`, or leave it out"),
            };
            let message = format!("`{flag}` is not an option of `cargo optimize {sub}`\n  {fix}\n");
            return Err(clap::Error::raw(
                clap::error::ErrorKind::ArgumentConflict,
                message,
            ));
        }
    }
    Ok(())
}

/// The command line as plain values: the top-level (run's) groups first, then the
/// subcommand's own, which win.
fn resolve(cli: Cli) -> Parsed {
    let mut warnings = Vec::new();
    let o = &cli.global;
    let mut g = GlobalArgs {
        selection: Selection {
            manifest_path: o.manifest_path.clone(),
            profile: "release".into(),
            locked: o.locked,
            frozen: o.frozen,
            offline: o.offline,
            config: o.config.clone(),
            ..Selection::default()
        },
        spec: None,
        verbose: o.verbose,
        quiet: o.quiet,
        color: o.color.unwrap_or_else(env_color),
    };
    build(&mut g, &cli.run.build);
    let mut command = cli.command.unwrap_or(Action::Run(cli.run));
    match &mut command {
        Action::Run(a) => build(&mut g, &a.build),
        Action::Init(a) => {
            package(&mut g, &a.package);
            spec(&mut g, &a.spec);
        }
        Action::Bench(a) => {
            package(&mut g, &a.package);
            spec(&mut g, &a.spec);
            if let Some(n) = a.runs.take() {
                a.min_runs = Some(n);
                warnings.push("`bench --runs` is deprecated (it is a minimum, unlike hyperfine's exact --runs): use --min-runs".into());
            }
        }
        Action::Apply(ApplyArgs { lookup, .. })
        | Action::Report(ReportArgs { lookup, .. })
        | Action::Hotspots(HotspotsArgs { lookup, .. }) => {
            package(&mut g, &lookup.package);
            target_dir(&mut g, &lookup.target_dir);
            spec(&mut g, &lookup.spec);
        }
        Action::Check(a) => build(&mut g, &a.build),
        Action::Ci(a) => {
            package(&mut g, &a.package);
            spec(&mut g, &a.spec);
            if a.github {
                warnings.push(
                    "`ci --github` is deprecated: use `ci --emit-ci github` (the default)".into(),
                );
            }
        }
        Action::Release(a) => {
            build(&mut g, &a.build);
            a.jobs = g.selection.jobs;
        }
        Action::Profile(ProfileArgs {
            action: ProfileAction::Collect(a),
        }) => build(&mut g, &a.build),
        Action::Clean(CleanArgs { target_dir: t }) => target_dir(&mut g, t),
        Action::Cache(CacheArgs { target_dir: t, .. }) => {
            g.selection.target_dir = t.clone().or(g.selection.target_dir.take());
        }
        Action::Doctor(a) => {
            if a.json {
                a.format = TermJson::Json;
            }
        }
        Action::Profile(_) | Action::Completions(_) | Action::Man => {}
    }
    Parsed {
        global: g,
        command,
        warnings,
    }
}

fn build(g: &mut GlobalArgs, b: &BuildOpts) {
    package(g, &b.package);
    let s = &mut g.selection;
    let f = &b.features;
    s.features.extend(f.features.iter().cloned());
    s.all_features |= f.all_features;
    s.no_default_features |= f.no_default_features;
    let c = &b.compile;
    if let Some(p) = &c.profile {
        s.profile = p.clone();
    }
    s.target = c.target.clone().or(s.target.take());
    s.jobs = c.jobs.or(s.jobs);
    target_dir(g, &b.target_dir);
    spec(g, &b.spec);
}

fn package(g: &mut GlobalArgs, p: &PackageOpts) {
    let s = &mut g.selection;
    s.package = p.package.clone().or(s.package.take());
    s.bin = p.bin.clone().or(s.bin.take());
}

fn target_dir(g: &mut GlobalArgs, t: &TargetDirOpt) {
    let s = &mut g.selection;
    s.target_dir = t.target_dir.clone().or(s.target_dir.take());
}

fn spec(g: &mut GlobalArgs, o: &SpecOpt) {
    g.spec = o.spec.clone().or(g.spec.take());
}

/// `CARGO_TERM_COLOR` when `--color` is not given (auto when unset or not understood).
fn env_color() -> Color {
    match std::env::var("CARGO_TERM_COLOR").as_deref() {
        Ok("always") => Color::Always,
        Ok("never") => Color::Never,
        _ => Color::Auto,
    }
}

/// The colour of clap's own help and errors, read before the parse: `--color WHEN`,
/// else `CARGO_TERM_COLOR`; auto (clap honours NO_COLOR and CLICOLOR_FORCE) otherwise.
fn help_color(args: &[OsString]) -> clap::ColorChoice {
    let mut given = None;
    for (i, a) in args.iter().enumerate() {
        let a = a.to_string_lossy();
        if let Some(v) = a.strip_prefix("--color=") {
            given = Some(v.to_string());
        } else if a == "--color" {
            given = args.get(i + 1).map(|v| v.to_string_lossy().into_owned());
        } else if a == "--" {
            break;
        }
    }
    let color = match given.as_deref() {
        Some("always") => Color::Always,
        Some("never") => Color::Never,
        Some(_) => Color::Auto,
        None => env_color(),
    };
    match color {
        Color::Always => clap::ColorChoice::Always,
        Color::Never => clap::ColorChoice::Never,
        Color::Auto => clap::ColorChoice::Auto,
    }
}

#[cfg(test)]
mod tests;
