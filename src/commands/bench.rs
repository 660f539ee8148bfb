//! `cargo optimize bench`: choose what to compare (two binaries over the spec's eval
//! workloads, or two command lines), run the engine in `crate::bench` with a progress
//! spinner, print one line per workload and the geometric mean, write the exports.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{bail, Context};

use crate::bench::{
    compare_measuring, export, BenchOptions, Comparison, ExpectedStatus, Phase, Progress,
};
use crate::cli::{BenchArgs, BenchFormat, GlobalArgs};
use crate::process::Command;
use crate::spec::bounds::{self, Key};
use crate::spec::Workload;

/// One thing to compare: A and B over the same workload.
#[derive(Debug, Clone)]
pub(crate) struct Duel {
    pub name: String,
    pub a: Command,
    pub b: Command,
    /// The status a run must exit with: 0, or for an `expect = "exit-code"` workload the
    /// first run's (every run of A and B must agree with it).
    pub expected: ExpectedStatus,
    /// The workload's `metric`, read from each run's output instead of its wall time.
    pub metric: Option<crate::spec::Metric>,
}

/// `cargo optimize bench`: compare two binaries over the spec's eval workloads, or two
/// commands, and print per workload `time ratio r [lo, hi] verdict (n=…)` (B/A) and the geometric mean.
pub(crate) fn run(g: &GlobalArgs, args: &BenchArgs) -> anyhow::Result<i32> {
    // Held to the end: the private copies the jobs run in.
    let (jobs, config, _copies) = select_jobs(g, args)?;
    let mut opts = match &config {
        Some(cfg) => BenchOptions::from_config(cfg),
        None => BenchOptions::default(),
    };
    apply_overrides(&mut opts, args)?;

    let progress = !g.quiet && std::io::stderr().is_terminal();
    // The lines for a person: on stdout for `--format term`, else on stderr (stdout is
    // the rendering's).
    let to = match (args.format, args.output.is_some()) {
        (BenchFormat::Term, false) => To::Stdout,
        _ if g.quiet => To::Nowhere,
        _ => To::Stderr,
    };
    let say = Say {
        to,
        kept: Default::default(),
    };
    if !g.quiet {
        say_sides(&say, &jobs, args.commands.len() == 2);
    }
    let width = jobs
        .iter()
        .map(|j| j.name.chars().count())
        .max()
        .unwrap_or(0);
    let mut results = Vec::new();
    for (i, job) in jobs.iter().enumerate() {
        let job_opts = BenchOptions {
            seed: opts.seed.wrapping_add(i as u64),
            ..opts.clone()
        };
        let bar = spinner(progress);
        let metric = job.metric.as_ref();
        let c = compare_measuring(&job.a, &job.b, &job_opts, job.expected, metric, &mut |p| {
            bar.set_message(progress_line(&job.name, p));
        });
        bar.finish_and_clear();
        let c = c.with_context(|| format!("benchmarking workload `{}`", job.name))?;
        print_result(&say, &job.name, width, &c, g.verbose);
        if let Some(w) = c.lingering.warning() {
            eprintln!("warning: workload `{}` {w}", job.name);
        }
        if let Some(note) = &c.stop_note {
            eprintln!("warning: workload `{}`: {note}", job.name);
        }
        results.push(export::WorkloadResult {
            name: job.name.clone(),
            command_a: job.a.display(),
            command_b: job.b.display(),
            comparison: c,
        });
    }
    let report = export::BenchReport::new(opts, results);
    say_geomean(&say, &report, width);
    if let Some(line) = report_footer(&report).filter(|_| !g.quiet) {
        say.line(line);
    }
    write_exports(args, &report)?;
    emit_result(g, args, &say, &report)?;
    Ok(0)
}

/// The result when stdout is not the lines for a person: `--format`'s rendering, or (for
/// `term` with `-o FILE`) the lines themselves; to `-o FILE` or stdout.
fn emit_result(
    g: &GlobalArgs,
    args: &BenchArgs,
    say: &Say,
    report: &export::BenchReport,
) -> anyhow::Result<()> {
    if say.to == To::Stdout {
        return Ok(());
    }
    let text = match args.format.export() {
        Some(f) => f.renderer().render(report),
        None => say.kept.take(),
    };
    super::emit(args.output.as_deref(), &text, g.quiet)
}

/// Where `bench`'s lines for a person go (see `run`), kept too: `--format term -o FILE`
/// writes them to FILE.
struct Say {
    to: To,
    kept: std::cell::RefCell<String>,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum To {
    Stdout,
    Stderr,
    Nowhere,
}

impl Say {
    fn line(&self, text: String) {
        match self.to {
            To::Stdout => println!("{text}"),
            To::Stderr => eprintln!("{text}"),
            To::Nowhere => {}
        }
        let mut kept = self.kept.borrow_mut();
        kept.push_str(&text);
        kept.push('\n');
    }
}

/// `intervals are 95.0 % …; margin 1.0 %; hardware counters: …` under the results.
fn report_footer(report: &export::BenchReport) -> Option<String> {
    let w = report.workloads.first()?;
    let levels: Vec<f64> = (report.workloads.iter())
        .map(|w| w.comparison.estimate.confidence * 100.0)
        .collect();
    let lo = levels.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = levels.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let level = if hi - lo < 0.05 {
        format!("{hi:.1} %")
    } else {
        format!("{lo:.1}–{hi:.1} %")
    };
    Some(format!(
        "intervals are {level} (95 % corrected for repeated looks); margin {:.1} %; hardware counters: {}",
        report.options.margin * 100.0,
        w.comparison.counters_status
    ))
}

/// The private copies of the cwds of the workloads that declare output `files`: one per
/// side and workload, made by the ladder's rule (`sandbox::for_files`), in a temporary
/// folder of their own; removed when dropped.
#[derive(Debug, Default)]
pub(crate) struct Copies {
    sandboxes: Vec<crate::context::sandbox::Sandbox>,
    dir: Option<tempfile::TempDir>,
    /// The workloads' jail: the temporary folder (`process::Jail`).
    jail: Option<crate::process::Jail>,
}

impl Copies {
    /// The temporary folder the workloads may write beneath, made on first use.
    fn folder(&mut self) -> anyhow::Result<&Path> {
        if self.dir.is_none() {
            let dir = tempfile::Builder::new()
                .prefix("cargo-optimize-bench-")
                .tempdir()
                .context("cannot make a temporary folder for the workloads")?;
            self.dir = Some(dir);
        }
        Ok(self.dir.as_ref().map_or(Path::new("."), |d| d.path()))
    }

    /// Where the workloads run confined (`process::Jail`): the temporary folder.
    fn jail(&mut self) -> anyhow::Result<&crate::process::Jail> {
        if self.jail.is_none() {
            let jail = crate::process::Jail::new(self.folder()?);
            self.jail = Some(jail);
        }
        Ok(self.jail.as_ref().expect("made above"))
    }

    /// `w` as it runs on one side: in a fresh private copy of its cwd when it declares
    /// `files`, else as it is.
    fn of(&mut self, w: &Workload, spec: &Path, side: &str) -> anyhow::Result<Workload> {
        if w.files.is_empty() {
            return Ok(w.clone());
        }
        let n = self.sandboxes.len();
        let dest = self.folder()?.join(format!("{side}-{}-{n}", w.file_stem()));
        let (copy, sb) = crate::context::sandbox::for_files(w, spec, &dest, &[])?
            .context("a workload with `files` gets a copy")?;
        if let Some(warning) = sb.outside_warning(&w.name) {
            eprintln!("warning: {warning}");
        }
        self.sandboxes.push(sb);
        Ok(copy)
    }
}

/// The comparisons `bench` will run, the spec's `[bench]` settings when a spec was read,
/// and the private copies the jobs run in.
fn select_jobs(
    g: &GlobalArgs,
    args: &BenchArgs,
) -> anyhow::Result<(Vec<Duel>, Option<crate::spec::BenchConfig>, Copies)> {
    if !args.commands.is_empty() {
        if args.commands.len() != 2 {
            bail!(
                "give --cmd exactly twice (A, then B); got {}",
                args.commands.len()
            );
        }
        let a = command_from_line(&args.commands[0]).context("in the first --cmd (A)")?;
        let b = command_from_line(&args.commands[1]).context("in the second --cmd (B)")?;
        return Ok((
            vec![Duel {
                name: "command".into(),
                a,
                b,
                expected: ExpectedStatus::Success,
                metric: None,
            }],
            None,
            Copies::default(),
        ));
    }
    if args.binaries.len() != 2 {
        bail!("give two binaries (A, the reference, then B), or two commands with --cmd 'A …' --cmd 'B …'");
    }
    let a = absolute_binary(&args.binaries[0])?;
    let b = absolute_binary(&args.binaries[1])?;
    let spec = crate::pipeline::load_spec(g)?;
    let (jobs, copies) = spec_jobs(&spec, &a, &b, args.workloads.as_deref())?;
    Ok((jobs, Some(spec.bench.clone()), copies))
}

fn absolute_binary(p: &Path) -> anyhow::Result<PathBuf> {
    p.canonicalize()
        .with_context(|| format!("binary {} not found", p.display()))
}

/// A and B over the spec's eval workloads, or over the named ones; a workload that
/// declares output `files` runs on each side in a private copy of its cwd (as the ladder
/// runs it), never in the user's tree.
pub(crate) fn spec_jobs(
    spec: &crate::spec::Spec,
    a: &Path,
    b: &Path,
    names: Option<&[String]>,
) -> anyhow::Result<(Vec<Duel>, Copies)> {
    let chosen: Vec<&Workload> = match names {
        Some(names) => {
            let mut out = Vec::new();
            for n in names {
                match spec.workloads.iter().find(|w| &w.name == n) {
                    Some(w) => out.push(w),
                    None => bail!(
                        "no workload named `{n}` in {}; there are: {}",
                        spec.path.display(),
                        spec.workloads
                            .iter()
                            .map(|w| w.name.as_str())
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                }
            }
            out
        }
        None => spec.workloads.iter().filter(|w| w.eval).collect(),
    };
    if chosen.is_empty() {
        bail!(
            "{} has no eval workload to measure; add \"eval\" to a workload's `use`",
            spec.path.display()
        );
    }
    let mut copies = Copies::default();
    let mut jobs = Vec::new();
    for w in chosen {
        jobs.push(Duel {
            name: w.name.clone(),
            a: copies.of(w, &spec.path, "a")?.command(a, copies.jail()?),
            b: copies.of(w, &spec.path, "b")?.command(b, copies.jail()?),
            // There is no baseline here: A's status is the reference.
            expected: if w.expect == crate::spec::Expect::ExitCode {
                ExpectedStatus::SameAsFirstRun
            } else {
                ExpectedStatus::Success
            },
            metric: w.metric.clone(),
        });
    }
    Ok((jobs, copies))
}

/// A command line split like a POSIX shell splits words (quotes and backslashes), without
/// running a shell: no variables, globs, pipes or redirections.
pub(crate) fn command_from_line(line: &str) -> anyhow::Result<Command> {
    let words = shell_words::split(line).map_err(anyhow::Error::msg)?;
    let Some((program, args)) = words.split_first() else {
        bail!("the command is empty");
    };
    Ok(Command::new(program).args(args))
}

fn apply_overrides(opts: &mut BenchOptions, args: &BenchArgs) -> anyhow::Result<()> {
    if let Some(n) = args.min_runs {
        opts.min_pairs = n.max(2);
        opts.max_pairs = opts.max_pairs.max(opts.min_pairs);
    }
    if let Some(w) = args.warmup {
        opts.warmup = w;
    }
    if let Some(t) = &args.max_time {
        opts.max_time = bounds::parse_flag_duration(t, "--max-time")?;
    }
    if let Some(m) = args.margin {
        opts.margin = bounds::margin(m, Key::Flag("--margin"))?;
    }
    Ok(())
}

fn spinner(visible: bool) -> indicatif::ProgressBar {
    if !visible {
        return indicatif::ProgressBar::hidden();
    }
    let bar = indicatif::ProgressBar::new_spinner();
    if let Ok(style) = indicatif::ProgressStyle::with_template("{spinner} {msg}") {
        bar.set_style(style);
    }
    bar.enable_steady_tick(Duration::from_millis(120));
    bar
}

fn progress_line(name: &str, p: &Progress) -> String {
    match p.phase {
        Phase::Warmup { done, total } => format!("{name}: warm-up {}/{total}", done + 1),
        Phase::Measuring | Phase::Look { .. } => {
            let mut s = format!(
                "{name}: {}{} pairs · {:.1}/{:.0} s",
                p.pairs,
                p.planned_pairs.map(|c| format!("/{c}")).unwrap_or_default(),
                p.elapsed.as_secs_f64(),
                p.max_time.as_secs_f64()
            );
            // The running interval, not a verdict: verdicts are only taken at the looks.
            if let Some(e) = &p.estimate {
                s.push_str(&format!(
                    " · B/A {:.3} [{:.3}, {:.3}]",
                    e.ratio, e.ci_low, e.ci_high
                ));
            }
            s
        }
    }
}

/// `A: …` and `B: …`: the whole command lines for one job or two commands, else the
/// programs.
fn say_sides(say: &Say, jobs: &[Duel], commands: bool) {
    let Some(first) = jobs.first() else { return };
    if jobs.len() == 1 || commands {
        say.line(format!("A: {}", first.a.display()));
        say.line(format!("B: {}", first.b.display()));
    } else {
        say.line(format!("A: {}", first.a.program.display()));
        say.line(format!("B: {}", first.b.program.display()));
    }
}

/// The geometric mean over several workloads (of the metrics' ratios where the workloads
/// compared what the program printed).
fn say_geomean(say: &Say, report: &export::BenchReport, width: usize) {
    if report.workloads.len() < 2 {
        return;
    }
    let metrics = report
        .workloads
        .iter()
        .any(|w| w.comparison.metric.is_some());
    let mean = match metrics {
        true => (report.geomean.to_string()).replacen("time ratio", "ratio", 1),
        false => report.geomean.to_string(),
    };
    say.line(format!(
        "{:width$}  {mean} ({} workloads)",
        "geometric mean",
        report.workloads.len(),
        width = width.max(14)
    ));
}

fn print_result(say: &Say, name: &str, width: usize, c: &Comparison, verbose: u8) {
    say.line(format!(
        "{name:width$}  {}   A {} · B {} · CV {:.1} % / {:.1} % · {} outlier pair{}",
        c.headline(),
        c.medians().0,
        c.medians().1,
        c.cv_a * 100.0,
        c.cv_b * 100.0,
        c.outliers.pairs,
        if c.outliers.pairs == 1 { "" } else { "s" },
    ));
    if let Some(w) = &c.noise_warning {
        say.line(format!("{:width$}  warning: {w}", ""));
    }
    if verbose > 0 {
        let mib = |b: f64| b / (1024.0 * 1024.0);
        say.line(format!(
            "{:width$}  t interval [{:.3}, {:.3}]{}; median {:.3} [{:.3}, {:.3}]; stopped: {:?} after {} of {} looks, {:.1} s",
            "",
            c.t_interval[0],
            c.t_interval[1],
            c.bootstrap_interval
                .map(|b| format!(", bootstrap [{:.3}, {:.3}]", b[0], b[1]))
                .unwrap_or_default(),
            c.median_ratio,
            c.median_interval[0],
            c.median_interval[1],
            c.stop,
            c.looks,
            c.planned_looks,
            c.elapsed_secs
        ));
        say.line(format!(
            "{:width$}  user {} / {} · sys {} / {} · peak RSS {:.1} / {:.1} MiB · CPU/wall {:.2} / {:.2}",
            "",
            export::format_secs(c.user.a.median),
            export::format_secs(c.user.b.median),
            export::format_secs(c.sys.a.median),
            export::format_secs(c.sys.b.median),
            mib(c.rss.a.median),
            mib(c.rss.b.median),
            c.noise.cpu_wall.a,
            c.noise.cpu_wall.b
        ));
        if let Some(counters) = &c.counters {
            for k in &counters.counters {
                say.line(format!(
                    "{:width$}  {}: {:.0} / {:.0} (B/A {:.3})",
                    "", k.name, k.median_a, k.median_b, k.ratio
                ));
            }
        }
    }
}

fn write_exports(args: &BenchArgs, report: &export::BenchReport) -> anyhow::Result<()> {
    export::write_files(
        report,
        &[
            (export::Format::Json, args.export_json.as_deref()),
            (export::Format::Markdown, args.export_markdown.as_deref()),
            (export::Format::Csv, args.export_csv.as_deref()),
            (export::Format::Html, args.export_html.as_deref()),
        ],
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_like_a_shell() {
        let words = |l: &str| {
            let c = command_from_line(l).unwrap();
            let mut w = vec![c.program.display().to_string()];
            w.extend(c.args.iter().map(|a| a.to_string_lossy().into_owned()));
            w
        };
        assert_eq!(words("a b  c"), ["a", "b", "c"]);
        assert_eq!(
            words("  prog 'one two' three "),
            ["prog", "one two", "three"]
        );
        assert_eq!(
            words(r#"p "a \"q\" \$x \n" b"#),
            ["p", r#"a "q" $x \n"#, "b"]
        );
        assert_eq!(words(r"p a\ b \'c"), ["p", "a b", "'c"]);
        assert_eq!(words("p '' \"\""), ["p", "", ""]);
        assert_eq!(words("p x'y'\"z\""), ["p", "xyz"]);
        assert_eq!(words("p a\\\nb"), ["p", "ab"]);
        assert_eq!(words("p $HOME *.rs | x"), ["p", "$HOME", "*.rs", "|", "x"]);
        assert!(command_from_line("p 'open").is_err());
        assert!(command_from_line("p \"open").is_err());
        // As `sh -c` does: a trailing backslash is literal, `#` at a word's start comments.
        assert_eq!(words("p \\"), ["p", "\\"]);
        assert_eq!(words("p a#b #c d"), ["p", "a#b"]);
        assert!(command_from_line("   ").is_err());
        let c = command_from_line("sleep '0.1'").unwrap();
        assert_eq!(c.program, PathBuf::from("sleep"));
        assert_eq!(c.args, ["0.1"]);
    }

    fn workload(name: &str, eval: bool) -> crate::spec::Workload {
        crate::spec::Workload {
            name: name.into(),
            args: vec!["--n".into(), "3".into()],
            env: [("K".to_string(), "V".to_string())].into_iter().collect(),
            eval,
            ..crate::spec::Workload::for_tests(Path::new("/tmp"))
        }
    }

    fn spec(ws: Vec<crate::spec::Workload>) -> crate::spec::Spec {
        crate::spec::Spec {
            path: PathBuf::from("/x/optimize.toml"),
            bin: None,
            package: None,
            stages: crate::spec::Stages {
                try_: vec![],
                profile: crate::spec::ProfileChoice::Preset("max".into()),
                ..Default::default()
            },
            bench: crate::spec::BenchConfig {
                max_time: Duration::from_secs(5),
                margin: 0.01,
                warmup: 1,
                min_runs: Some(10),
                budget: None,
                runner_is_native: false,
                objective_size: false,
                max_slowdown_per_workload: None,
            },
            verify: Default::default(),
            cache_max_bytes: crate::spec::DEFAULT_CACHE_MAX_BYTES,
            check: Default::default(),
            release: Default::default(),
            harness: None,
            workloads: ws,
        }
    }

    #[test]
    fn jobs_from_the_spec() {
        let s = spec(vec![
            workload("w1", true),
            workload("train-only", false),
            workload("w2", true),
        ]);
        let (a, b) = (Path::new("/bin/a"), Path::new("/bin/b"));
        let (jobs, _) = spec_jobs(&s, a, b, None).unwrap();
        assert_eq!(
            jobs.iter().map(|j| j.name.as_str()).collect::<Vec<_>>(),
            ["w1", "w2"]
        );
        assert_eq!(jobs[0].a.program, PathBuf::from("/bin/a"));
        assert_eq!(jobs[0].b.program, PathBuf::from("/bin/b"));
        // Same argv, env, cwd, timeout on both sides.
        assert_eq!(jobs[0].a.args, jobs[0].b.args);
        assert_eq!(jobs[0].a.env, jobs[0].b.env);
        assert_eq!(jobs[0].a.cwd, jobs[0].b.cwd);
        assert_eq!(jobs[0].a.timeout, jobs[0].b.timeout);

        let (named, _) = spec_jobs(&s, a, b, Some(&["train-only".to_string()])).unwrap();
        assert_eq!(named.len(), 1);
        let err = spec_jobs(&s, a, b, Some(&["nope".to_string()]))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("nope") && err.contains("w1, train-only, w2"),
            "{err}"
        );
        assert!(spec_jobs(&spec(vec![workload("t", false)]), a, b, None).is_err());
    }

    #[test]
    fn a_workload_declaring_files_runs_on_each_side_in_a_private_copy() {
        let tmp = tempfile::tempdir().unwrap();
        let cwd = tmp.path().join("proj");
        std::fs::create_dir_all(cwd.join("out")).unwrap();
        std::fs::write(cwd.join("input.txt"), "in").unwrap();
        std::fs::write(cwd.join("out/r.txt"), "left by an earlier run").unwrap();
        let mut w = workload("w", true);
        w.cwd = cwd.clone();
        w.files = vec![PathBuf::from("out/r.txt")];
        let (a, b) = (Path::new("/bin/a"), Path::new("/bin/b"));
        let (jobs, copies) = spec_jobs(&spec(vec![w]), a, b, None).unwrap();
        let (ca, cb) = (
            jobs[0].a.cwd.clone().unwrap(),
            jobs[0].b.cwd.clone().unwrap(),
        );
        assert_ne!(ca, cwd, "A runs in the user's tree");
        assert_ne!(cb, cwd, "B runs in the user's tree");
        assert_ne!(ca, cb);
        for c in [&ca, &cb] {
            assert_eq!(std::fs::read_to_string(c.join("input.txt")).unwrap(), "in");
            assert!(
                !c.join("out/r.txt").exists(),
                "a declared output left in the copy"
            );
        }
        drop(copies);
        assert!(!ca.exists() && !cb.exists(), "the copies are removed");
        assert!(cwd.join("out/r.txt").exists());
    }
}
