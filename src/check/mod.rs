//! `cargo optimize check`: a performance gate for CI. The working tree's build against an
//! old build — a git revision built in a temporary worktree (`--against`), or a saved
//! baseline (`--baseline`) — on the spec's eval workloads: outputs verified first (a
//! changed output is reported, not timed), then old and new run interleaved by the bench
//! engine, each workload judged on its interval against `[check] max-regression`, budgets
//! and the size limit checked; exit 0 (pass), 1 (a regression, a changed output, a budget
//! or size exceeded) or 2 (an error, from `main`). Old and new binaries with the same bytes
//! are neither verified nor compared (`identical`): every workload is judged
//! `byte-identical`. `ci` writes a workflow that runs it.
//!
//! Parts: `build` (the revision's binary, kept by commit), `baseline` (saved
//! baselines, the unpaired comparison), `gate` (the decisions), `report` (check.json),
//! `render/` (one module per output format), `ci` (the GitHub workflow).
//!
//! Must not: build other than through `crate::cargo`/`Context`, run other than through
//! `process`, or write into the user's files (everything goes under
//! `target/optimize/`; `ci` writes through `propose`). Git is `crate::git`.

mod baseline;
mod build;
pub(crate) mod ci;
mod gate;
mod render;
mod report;

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::Context as _;

use crate::bench::{BenchOptions, Comparison, Side};
use crate::cache::VerdictCache;
use crate::cli::{CheckArgs, GlobalArgs};
use crate::context::Plan;
use crate::context::{Candidate, Context, DirLock, RunDir};
use crate::pipeline::measure;
use crate::spec::Spec;
use crate::stages::StageName;
use crate::verify::{self, Reference, Verifier};
use gate::{judge, Judgement, LimitOutcome, Mean};
use render::Format;
use report::{Against, CheckReport, Ratio, SizeCheck, WorkloadCheck};

/// What the working tree is compared with, resolved before anything is built.
enum Old {
    Rev {
        repo: crate::git::Repo,
        name: String,
        commit: String,
    },
    Saved(Box<baseline::Loaded>),
    Nothing,
}

/// What was measured of one workload.
struct MeasuredWorkload {
    /// The comparison old vs new (paired), or new vs itself (to time it alone).
    comparison: Comparison,
    paired: bool,
}

/// `cargo optimize check`; the exit code.
pub(crate) fn run(g: &GlobalArgs, args: &CheckArgs) -> anyhow::Result<i32> {
    let started = Instant::now();
    let plan = plan(g, args)?;
    let spec = eval_spec(&plan.spec, args.workloads.as_deref())?;
    if let Some(name) = &args.save_baseline {
        baseline::check_name(name)?;
    }
    let old = resolve_old(&plan, args)?;
    let _lock = DirLock::for_run(&plan.optimize_dir)?;
    let _lockfile =
        crate::cargo::RunLockfile::for_run(&plan.project, &plan.optimize_dir, &plan.ui)?;
    let check_dir = plan.optimize_dir.join("check");
    let run = RunDir::create(&check_dir)?;
    let ctx = crate::context::Context::new(&plan, &spec, &run);
    let new = build_new(&ctx, &plan)?;
    let mut report = compare(&ctx, &plan, args, &old, &new)?;
    if let Some(name) = &args.save_baseline {
        save_baseline(&ctx, &plan, name, &new, &report)?;
        report.saved_baseline = Some(name.clone());
    }
    report.seconds = started.elapsed().as_secs_f64();
    write(&run, &check_dir, &report)?;
    let text = args.format.renderer().render(&report);
    crate::util::atomic::emit(args.output.as_deref(), &text, g.quiet)?;
    Ok(report.exit_code)
}

/// The plan: no stage is tried (no LLVM tool is needed).
fn plan(g: &GlobalArgs, args: &CheckArgs) -> anyhow::Result<Plan> {
    let run = crate::cli::RunArgs {
        stages: Some(vec![crate::spec::NO_STAGES.to_string()]),
        max_time: args.max_time.clone(),
        fresh: args.fresh,
        ..Default::default()
    };
    Plan::resolve(&run.asked(g), &crate::pipeline::plan::RULES)
}

/// The spec with only the eval workloads (or the ones named by `--workloads`).
fn eval_spec(spec: &Spec, names: Option<&[String]>) -> anyhow::Result<Spec> {
    let mut s = spec.clone();
    if let Some(names) = names {
        for n in names {
            if !s.workloads.iter().any(|w| &w.name == n) {
                let all: Vec<&str> = s.workloads.iter().map(|w| w.name.as_str()).collect();
                anyhow::bail!(
                    "--workloads: no workload named `{n}` in {}\n  fix: pick from: {}",
                    s.path.display(),
                    all.join(", ")
                );
            }
        }
        s.workloads.retain(|w| names.contains(&w.name));
        s.workloads.iter_mut().for_each(|w| w.eval = true);
    } else {
        s.workloads.retain(|w| w.eval);
    }
    Ok(s)
}

/// `--against` resolved to a commit, or `--baseline` read: before anything is built.
fn resolve_old(plan: &Plan, args: &CheckArgs) -> anyhow::Result<Old> {
    if let Some(rev) = &args.against {
        let repo = crate::git::Repo::of(&plan.project.package_dir)?;
        let commit = repo.resolve(rev)?;
        repo.require_manifest(rev, &commit, &plan.project.manifest_path)?;
        return Ok(Old::Rev {
            repo,
            name: rev.clone(),
            commit,
        });
    }
    if let Some(b) = &args.baseline {
        let loaded = baseline::load(&plan.optimize_dir, b)?;
        if loaded.saved.bin != plan.project.bin {
            anyhow::bail!(
                "--baseline {b}: {} was saved for the binary `{}`, not `{}`\n  fix: pass --bin {} or choose another baseline",
                loaded.path.display(),
                loaded.saved.bin,
                plan.project.bin,
                loaded.saved.bin
            );
        }
        return Ok(Old::Saved(Box::new(loaded)));
    }
    Ok(Old::Nothing)
}

/// The working tree, built as the user builds it (the pipeline's baseline settings).
fn build_new(ctx: &Context, plan: &Plan) -> anyhow::Result<Candidate> {
    let built = ctx.build("working tree", &plan.baseline)?;
    let (binary, size_bytes) = ctx.install_as("new", &built.binary)?;
    Ok(candidate(binary, size_bytes, plan, built.seconds))
}

fn candidate(binary: PathBuf, size_bytes: u64, plan: &Plan, build_seconds: f64) -> Candidate {
    Candidate {
        stage: StageName::BASELINE,
        binary,
        settings: plan.baseline.clone(),
        size_bytes,
        build_seconds,
        notes: Vec::new(),
        facts: Default::default(),
    }
}

/// The old binary (when there is one to run), its label, its size, and notes for the report.
struct OldSide {
    candidate: Option<Candidate>,
    label: String,
    size: Option<u64>,
    against: Against,
}

/// The old side, and whether its binary is the new one's bytes (`store::same_bytes`; a
/// saved baseline without its binary: its recorded SHA-256).
fn old_side(plan: &Plan, old: &Old, new: &Candidate) -> anyhow::Result<OldSide> {
    Ok(match old {
        Old::Rev { repo, name, commit } => {
            let b = build::binary_at(plan, repo, commit)?;
            let byte_identical = crate::store::same_bytes(&b.binary, &new.binary);
            let short = crate::util::clip(commit, 12);
            let mut notes = Vec::new();
            if b.reused {
                notes.push(format!(
                    "the build of {short} was kept from an earlier check (its bytes checked)"
                ));
            }
            OldSide {
                candidate: Some(candidate(b.binary, b.size, plan, 0.0)),
                label: format!("{name} ({short})"),
                size: Some(b.size),
                against: Against {
                    kind: "revision".into(),
                    name: name.clone(),
                    commit: Some(commit.clone()),
                    paired: true,
                    byte_identical,
                    notes,
                },
            }
        }
        Old::Saved(l) => saved_side(plan, l, new),
        Old::Nothing => OldSide {
            candidate: None,
            label: String::new(),
            size: None,
            against: Against {
                kind: "none".into(),
                name: String::new(),
                commit: None,
                paired: false,
                byte_identical: false,
                notes: vec![],
            },
        },
    })
}

fn saved_side(plan: &Plan, l: &baseline::Loaded, new: &Candidate) -> OldSide {
    let s = &l.saved;
    let mut notes = Vec::new();
    let byte_identical = match &l.binary {
        Ok(bin) => crate::store::same_bytes(bin, &new.binary),
        Err(_) => crate::store::file_sha256(&new.binary).is_ok_and(|h| h == s.binary_sha256),
    };
    let candidate = match &l.binary {
        Ok(bin) => Some(candidate(bin.clone(), s.binary_size, plan, 0.0)),
        // The same bytes: nothing to compare, so no note on what an unpaired one lacks.
        Err(_) if byte_identical => None,
        Err(why) => {
            notes.push(format!("only the saved statistics of `{}` can be compared: {why}. Runs made at another time (maybe on another machine) are compared unpaired, which is weaker than running old and new interleaved; outputs are not verified", s.name));
            None
        }
    };
    let here = crate::cache::machine_fingerprint(
        crate::toolchain::CpuFacts::model_and_level().0.as_deref(),
    );
    if candidate.is_none() && !byte_identical && s.machine != here {
        notes.push(format!("the baseline was measured on another machine ({}); times are not comparable across machines", s.machine));
    }
    OldSide {
        candidate,
        label: format!("baseline {}", s.name),
        size: Some(s.binary_size),
        against: Against {
            kind: "baseline".into(),
            name: s.name.clone(),
            commit: s.commit.clone(),
            paired: l.binary.is_ok(),
            byte_identical,
            notes,
        },
    }
}

/// Verify, measure and judge: the report.
fn compare(
    ctx: &Context,
    plan: &Plan,
    args: &CheckArgs,
    old: &Old,
    new: &Candidate,
) -> anyhow::Result<CheckReport> {
    let mut side = old_side(plan, old, new)?;
    if side.against.byte_identical {
        return identical(ctx, plan, args, side, new);
    }
    // Run under the program's own file name (`bin/old/<name>`), as the new build is.
    if let Some(c) = side.candidate.as_mut() {
        c.binary = ctx.install_as("old", &c.binary)?.0;
    }
    // The old build's outputs are the reference (the new build's own, with nothing to run
    // against it: its workloads are still checked and its determinism found).
    let base = side.candidate.clone().unwrap_or_else(|| new.clone());
    let verifier = Verifier::new(ctx, base)
        .with_context(|| format!("running the workloads on the old build ({})", side.label))?;
    let changed = match &side.candidate {
        Some(_) => changed_outputs(ctx, verifier.reference()?, new)?,
        None => Default::default(),
    };
    let old_bin = side
        .candidate
        .as_ref()
        .map(|o| (side.label.as_str(), o.binary.as_path()));
    let (measured, hits) = measure_all(
        ctx,
        old_bin,
        new,
        &verifier,
        &changed,
        args.allow_changed_output,
    )?;
    let saved = match old {
        Old::Saved(l) if side.candidate.is_none() => Some(&l.saved),
        _ => None,
    };
    let max_reg = ctx.spec.check.max_regression;
    if let Some(s) = saved {
        let missing: Vec<&str> = ctx
            .spec
            .workloads
            .iter()
            .map(|w| w.name.as_str())
            .filter(|n| !s.workloads.iter().any(|x| &x.name == n))
            .collect();
        if !missing.is_empty() {
            side.against.notes.push(format!(
                "not in the baseline, so not compared: {}",
                missing.join(", ")
            ));
        }
    }
    if hits > 0 {
        side.against.notes.push(format!("{hits} comparison(s) of these same two binaries were kept from an earlier check on this machine (--fresh measures again)"));
    }
    let workloads = ctx
        .spec
        .workloads
        .iter()
        .map(|w| {
            let saved_w = saved.and_then(|s| s.workloads.iter().find(|x| x.name == w.name));
            workload_check(
                ctx.spec,
                &w.name,
                measured.get(&w.name),
                saved_w,
                changed.get(&w.name),
                max_reg,
            )
        })
        .collect();
    Ok(assemble(ctx, plan, side, workloads, &measured, new))
}

/// Old and new are the same bytes: no regression is possible, so nothing is verified or
/// compared, and every workload is judged `byte-identical`. Only what needs the new
/// build's own times is timed, alone: workloads with a budget, or every workload for
/// `--save-baseline` (the baseline keeps them).
fn identical(
    ctx: &Context,
    plan: &Plan,
    args: &CheckArgs,
    mut side: OldSide,
    new: &Candidate,
) -> anyhow::Result<CheckReport> {
    ctx.ui().info(&format!(
        "the working tree's binary is byte-identical to {}: nothing to compare",
        side.label
    ));
    let mut spec = ctx.spec.clone();
    if args.save_baseline.is_none() {
        spec.workloads
            .retain(|w| ctx.spec.check.limits.contains_key(&w.name));
    }
    let mut measured = Default::default();
    if !spec.workloads.is_empty() {
        let alone = ctx.with_spec(&spec);
        let verifier = Verifier::new(&alone, new.clone())
            .context("running the workloads on the working tree's build")?;
        let none = Default::default();
        measured = measure_all(&alone, None, new, &verifier, &none, false)?.0;
        let names: Vec<&str> = spec.workloads.iter().map(|w| w.name.as_str()).collect();
        let why = match args.save_baseline {
            Some(_) => "for the baseline it saves",
            None => "on the workloads with a budget",
        };
        side.against.notes.push(format!(
            "the new build was timed alone {why}: {}",
            names.join(", ")
        ));
    }
    let max_reg = ctx.spec.check.max_regression;
    let workloads = ctx
        .spec
        .workloads
        .iter()
        .map(|w| WorkloadCheck {
            judgement: Some(Judgement::ByteIdentical),
            ..workload_check(
                ctx.spec,
                &w.name,
                measured.get(&w.name),
                None,
                None,
                max_reg,
            )
        })
        .collect();
    Ok(assemble(ctx, plan, side, workloads, &measured, new))
}

/// Record the old binary's outputs, then check the new one's on every workload (all of
/// them, not just up to the first difference): workload → what differs.
fn changed_outputs(
    ctx: &Context,
    reference: &Reference,
    new: &Candidate,
) -> anyhow::Result<std::collections::BTreeMap<String, String>> {
    let mut changed = std::collections::BTreeMap::new();
    let outputs = ctx.run.outputs("new");
    for (i, w) in ctx.spec.workloads.iter().enumerate() {
        ctx.ui().step(&format!(
            "working tree: verifying [{}/{}] {}",
            i + 1,
            ctx.spec.workloads.len(),
            w.name
        ));
        let obs = verify::observe(ctx, &new.binary, w, &outputs)?;
        if let verify::Compared::Differs(m) =
            reference.check_settled(ctx, w, "working tree", &obs)?
        {
            ctx.ui().warn(&format!("output changed: {m}"));
            changed.insert(w.name.clone(), describe_change(&m));
        }
    }
    Ok(changed)
}

/// What differs, in a line: the stream, where, and the old and new values.
fn describe_change(m: &verify::Mismatch) -> String {
    if m.stream == "status" || m.line == 0 {
        return format!("{} differs: old {}, new {}", m.stream, m.expected, m.actual);
    }
    format!(
        "{} differs at {}: old `{}`, new `{}`",
        m.stream,
        m.place(),
        m.expected,
        m.actual
    )
}

/// Time the workloads: old and new interleaved when there is an old binary, else the new
/// build alone (against itself, every run of both sides kept).
fn measure_all(
    ctx: &Context,
    old: Option<(&str, &Path)>,
    new: &Candidate,
    verifier: &Verifier,
    changed: &std::collections::BTreeMap<String, String>,
    allow_changed: bool,
) -> anyhow::Result<(std::collections::BTreeMap<String, MeasuredWorkload>, u32)> {
    let mut spec = ctx.spec.clone();
    if !allow_changed {
        spec.workloads.retain(|w| !changed.contains_key(&w.name));
    }
    if spec.workloads.is_empty() {
        return Ok(Default::default());
    }
    let timing = ctx.with_spec(&spec);
    let opts = BenchOptions {
        margin: ctx.spec.check.max_regression,
        ..BenchOptions::from_config(&ctx.spec.bench)
    };
    let machine = crate::cache::machine_fingerprint(
        crate::toolchain::CpuFacts::model_and_level().0.as_deref(),
    );
    let cache = VerdictCache::new(&ctx.plan.optimize_dir, ctx.plan.fresh, machine);
    let (a, paired) = match old {
        Some(o) => (o, true),
        None => (("working tree (A)", new.binary.as_path()), false),
    };
    let b_label = if paired {
        "working tree"
    } else {
        "working tree (B)"
    };
    let sides = measure::Versus {
        a,
        b: (b_label, &new.binary),
        b_preload: None,
    };
    let capped = measure::Capped::uncut(opts);
    let comps = measure::compare_over_workloads(&timing, sides, &capped, verifier, None, &cache)?;
    let measured = comps
        .into_iter()
        .map(|(name, comparison)| (name, MeasuredWorkload { comparison, paired }))
        .collect();
    Ok((measured, cache.counts().0))
}

/// The new build's runs of a comparison: side B, or both sides when it ran against itself.
fn new_runs(m: &MeasuredWorkload) -> impl Iterator<Item = &crate::bench::RunRecord> {
    m.comparison
        .samples
        .iter()
        .filter(move |s| !m.paired || s.side == Side::B)
}

fn workload_check(
    spec: &Spec,
    name: &str,
    m: Option<&MeasuredWorkload>,
    saved: Option<&baseline::SavedWorkload>,
    changed: Option<&String>,
    max_reg: f64,
) -> WorkloadCheck {
    let wall: Vec<f64> = m
        .map(|m| new_runs(m).map(|s| s.wall_secs).collect())
        .unwrap_or_default();
    let ratio = match (m, saved) {
        (Some(m), _) if m.paired => Some(paired_ratio(&m.comparison)),
        (Some(_), Some(s)) => Some(baseline::unpaired(&wall, &s.wall_secs, max_reg)),
        _ => None,
    };
    let old_time = match (m, saved) {
        (Some(m), _) if m.paired => Some(Mean::of(&side_walls(&m.comparison, Side::A))),
        (_, Some(s)) => Some(s.time()),
        _ => None,
    };
    WorkloadCheck {
        name: name.to_string(),
        judgement: ratio.map(|r| judge(r.ci_low, r.ci_high, max_reg)),
        ratio,
        time: m.map(|_| Mean::of(&wall)),
        runs_secs: wall.clone(),
        old_time,
        cpu_time: m.map(|m| {
            Mean::of(
                &new_runs(m)
                    .map(|s| s.user_secs + s.sys_secs)
                    .collect::<Vec<_>>(),
            )
        }),
        peak_rss: m.map(|m| {
            Mean::of(
                &new_runs(m)
                    .map(|s| s.max_rss_bytes as f64)
                    .collect::<Vec<_>>(),
            )
        }),
        limits: m.map(|m| limits(spec, name, m)).unwrap_or_default(),
        output_changed: changed.cloned(),
        timed_anyway: changed.is_some() && m.is_some(),
    }
}

fn side_walls(c: &Comparison, side: Side) -> Vec<f64> {
    c.samples
        .iter()
        .filter(|s| s.side == side)
        .map(|s| s.wall_secs)
        .collect()
}

fn paired_ratio(c: &Comparison) -> Ratio {
    Ratio {
        estimate: c.estimate,
        n: c.n,
    }
}

/// The workload's budgets against the new build's runs.
fn limits(spec: &Spec, name: &str, m: &MeasuredWorkload) -> Vec<LimitOutcome> {
    let Some(b) = spec.check.limits.get(name) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    if let Some(t) = b.time {
        let wall: Vec<f64> = new_runs(m).map(|s| s.wall_secs).collect();
        out.push(LimitOutcome::new("time", t.as_secs_f64(), &wall, b.line));
    }
    if let Some(limit) = b.max_rss {
        let rss: Vec<f64> = new_runs(m).map(|s| s.max_rss_bytes as f64).collect();
        out.push(LimitOutcome::new("max-rss", limit as f64, &rss, b.line));
    }
    let metric = spec
        .workloads
        .iter()
        .find(|w| w.name == name)
        .and_then(|w| w.metric.as_ref());
    if let (Some(limit), Some(metric)) = (b.metric, metric) {
        let values: Vec<f64> = new_runs(m).filter_map(|s| s.metric).collect();
        out.push(LimitOutcome::metric(limit, &values, b.line, metric));
    }
    out
}

fn assemble(
    ctx: &Context,
    plan: &Plan,
    side: OldSide,
    workloads: Vec<WorkloadCheck>,
    measured: &std::collections::BTreeMap<String, MeasuredWorkload>,
    new: &Candidate,
) -> CheckReport {
    let cfg = &ctx.spec.check;
    let paired: Vec<Comparison> = measured
        .values()
        .filter(|m| m.paired)
        .map(|m| m.comparison.clone())
        .collect();
    let overall = (!paired.is_empty()).then(|| Ratio {
        estimate: crate::bench::geomean(&paired, cfg.max_regression),
        n: paired.len() as u32,
    });
    let mut report = CheckReport {
        schema: report::SCHEMA,
        tool_version: env!("CARGO_PKG_VERSION").to_string(),
        crate_name: plan.project.package.clone(),
        bin: plan.project.bin.clone(),
        spec: shown_path(&ctx.spec.path),
        against: side.against,
        max_regression: cfg.max_regression,
        workloads,
        binary_size: SizeCheck {
            new_bytes: new.size_bytes,
            old_bytes: side.size,
            limit: cfg.max_binary_size,
            line: cfg.max_binary_size_line,
            over: cfg.max_binary_size.is_some_and(|l| new.size_bytes > l),
        },
        overall,
        failures: Vec::new(),
        exit_code: 0,
        saved_baseline: None,
        seconds: 0.0,
    };
    report.failures = report.list_failures();
    report.exit_code = gate::exit_code(report.failures.len());
    report
}

/// The spec's path relative to the current directory when it is below it (GitHub
/// annotations attach to a file by its path in the checkout).
fn shown_path(p: &Path) -> String {
    let cwd = std::env::current_dir()
        .ok()
        .and_then(|c| c.canonicalize().ok());
    let abs = p.canonicalize().unwrap_or_else(|_| p.to_path_buf());
    match cwd.as_deref().and_then(|c| abs.strip_prefix(c).ok()) {
        Some(rel) => rel.display().to_string(),
        None => p.display().to_string(),
    }
}

/// `--save-baseline NAME`: the new build's statistics, and its binary beside them.
fn save_baseline(
    ctx: &Context,
    plan: &Plan,
    name: &str,
    new: &Candidate,
    report: &CheckReport,
) -> anyhow::Result<()> {
    let head = crate::git::Repo::of(&plan.project.package_dir)
        .ok()
        .and_then(|r| r.head());
    let workloads = report
        .workloads
        .iter()
        .filter_map(|w| {
            w.time?;
            Some(baseline::SavedWorkload {
                name: w.name.clone(),
                wall_secs: w.runs_secs.clone(),
                cpu_time: w.cpu_time?,
                peak_rss: w.peak_rss?,
            })
        })
        .collect();
    let saved = baseline::Saved {
        schema: 1,
        kind: "cargo-optimize-baseline".into(),
        name: name.to_string(),
        tool_version: env!("CARGO_PKG_VERSION").to_string(),
        created: humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string(),
        commit: head.as_ref().map(|h| h.0.clone()),
        dirty: head.as_ref().is_some_and(|h| h.1),
        crate_name: plan.project.package.clone(),
        bin: plan.project.bin.clone(),
        machine: crate::cache::machine_fingerprint(
            crate::toolchain::CpuFacts::model_and_level().0.as_deref(),
        ),
        binary_sha256: crate::store::file_sha256(&new.binary)?,
        binary_size: new.size_bytes,
        workloads,
    };
    let path = baseline::save(&plan.optimize_dir, &saved, &new.binary)?;
    ctx.ui()
        .info(&format!("saved baseline `{name}`: {}", path.display()));
    Ok(())
}

/// check.json and check.md in the check's folder; `check/latest` points at it.
fn write(run: &RunDir, check_dir: &Path, report: &CheckReport) -> anyhow::Result<()> {
    for (file, f) in [("check.json", Format::Json), ("check.md", Format::Markdown)] {
        crate::util::atomic::write(&run.root.join(file), f.renderer().render(report).as_bytes())?;
    }
    run.point_latest(check_dir)?;
    Ok(())
}
