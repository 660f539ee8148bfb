//! The pipeline: locate the project and spec, build the baseline, record its outputs,
//! then for each stage build a candidate from the best so far, verify it against the
//! baseline, measure it against the best, and keep it only when it is measurably faster.
//! Writes the run folder (`target/optimize/runs/<id>/`) and points `latest` at it.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::path::Path;
use std::time::Instant;

use anyhow::Context as _;

use crate::bench;
use crate::cargo::{self, BuildSettings, Project, Workspace};
use crate::cli::{GlobalArgs, RunArgs};
use crate::process;
use crate::report::terminal::Ui;
use crate::report::{
    self, FinalChoice, Report, StageReport, Status, ToolchainInfo, WorkloadReport,
};
use crate::spec::{self, Spec, StageName, Workload};
use crate::stage::{self, Candidate, Context, RunDir};
use crate::toolchain;
use crate::verify;

/// The workspace, the spec and the project they designate.
pub struct Located {
    pub workspace: Workspace,
    pub spec: Spec,
    pub project: Project,
}

/// Find the spec (`--spec`, else optimize.toml next to the package's Cargo.toml), read it,
/// and resolve the package and binary (flags first, then the spec).
pub fn locate(g: &GlobalArgs) -> anyhow::Result<Located> {
    let workspace = Workspace::load(&g.selection)?;
    let spec_path = match &g.spec {
        Some(p) => p.clone(),
        None => workspace
            .spec_dir(g.selection.package.as_deref())?
            .join(spec::SPEC_FILE),
    };
    let spec = spec::load(&spec_path)?;
    let project = workspace.project(&g.selection, spec.package.as_deref(), spec.bin.as_deref())?;
    Ok(Located {
        workspace,
        spec,
        project,
    })
}

/// The spec for the selected package (used by `bench`).
/// With `--spec` no cargo project is needed: comparing two binaries needs only the workloads.
pub fn load_spec(g: &GlobalArgs) -> anyhow::Result<Spec> {
    match &g.spec {
        Some(path) => Ok(spec::load(path)?),
        None => Ok(locate(g)?.spec),
    }
}

/// `cargo optimize init`.
pub fn init_command(g: &GlobalArgs) -> anyhow::Result<i32> {
    let ws = Workspace::load(&g.selection)?;
    let project = ws.project(&g.selection, None, None)?;
    let path = match &g.spec {
        Some(p) => p.clone(),
        None => project.package_dir.join(spec::SPEC_FILE),
    };
    if path.exists() {
        anyhow::bail!(
            "{} already exists; not overwriting it\n  fix: edit it, or remove it first to get a fresh skeleton",
            path.display()
        );
    }
    let text = spec::skeleton(&project.bin);
    // create_new: never clobber a file that appeared in between.
    use std::io::Write;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&path)
        .with_context(|| format!("cannot create {}", path.display()))?;
    f.write_all(text.as_bytes())?;
    eprintln!(
        "wrote {} for binary `{}`: describe how the program is really run in its [[workload]] entries, then run `cargo optimize`",
        path.display(),
        project.bin
    );
    Ok(0)
}

/// `cargo optimize clean`.
pub fn clean_command(g: &GlobalArgs) -> anyhow::Result<i32> {
    let ws = Workspace::load(&g.selection)?;
    let project = ws.project(&g.selection, None, None).ok();
    let dir = match (&g.selection.target_dir, project) {
        (Some(d), _) => d.join("optimize"),
        (None, Some(p)) => p.target_dir.join("optimize"),
        (None, None) => ws.root().join("target").join("optimize"),
    };
    if dir.exists() {
        std::fs::remove_dir_all(&dir)
            .with_context(|| format!("cannot remove {}", dir.display()))?;
        eprintln!("removed {}", dir.display());
    } else {
        eprintln!("nothing to remove ({} does not exist)", dir.display());
    }
    Ok(0)
}

/// `cargo optimize` / `cargo optimize run`.
pub fn run_command(g: &GlobalArgs, args: &RunArgs) -> anyhow::Result<i32> {
    let started = Instant::now();
    let ui = Ui::new(g);
    let Located {
        mut spec, project, ..
    } = locate(g)?;
    apply_run_overrides(&mut spec, args)?;
    let rustc = toolchain::rustc()?;
    let stages = spec.stages.try_.clone();
    let llvm_profdata = if stages.contains(&StageName::Pgo) {
        Some(toolchain::llvm_profdata(&rustc)?)
    } else {
        None
    };
    let bolt_tools = stages
        .contains(&StageName::Bolt)
        .then(|| toolchain::bolt_tools(&rustc));
    let triple = g
        .selection
        .target
        .clone()
        .unwrap_or_else(|| rustc.host.clone());
    let cfg: Vec<String> = process::tool_stdout("rustc", ["--print", "cfg", "--target", &triple])
        .unwrap_or_default()
        .lines()
        .map(str::to_string)
        .collect();
    let user_rustflags = cargo::user_rustflags_here(&triple, &cfg)?;

    let optimize_dir = project.target_dir.join("optimize");
    let run = new_run_dir(&optimize_dir)?;
    ui.step(&format!(
        "optimizing `{}` (package {} {}) → {}",
        project.bin,
        project.package,
        project.version,
        run.root.display()
    ));
    if !user_rustflags.is_empty() {
        ui.info(&format!(
            "your rustflags are kept in every build: {}",
            user_rustflags.join(" ")
        ));
    }
    let ctx = Context {
        project: &project,
        spec: &spec,
        rustc: &rustc,
        run: &run,
        ui: &ui,
        optimize_dir: optimize_dir.clone(),
        host: rustc.host.clone(),
        llvm_profdata: llvm_profdata.clone(),
        bolt_tools: bolt_tools.clone(),
        steps: RefCell::new(Vec::new()),
    };

    let base_settings = BuildSettings {
        profile: g.selection.profile.clone(),
        profile_overrides: BTreeMap::new(),
        user_rustflags,
        rustflags: Vec::new(),
        target: g.selection.target.clone(),
        features: project.features.clone(),
    };
    let baseline = stage::baseline::prepare(&ctx, base_settings)?;
    let reference = record_baseline(&ctx, &baseline)?;

    let mut reports = vec![candidate_report(&baseline, Status::Kept, "the reference")];
    reports[0].verified = Some(true);
    let mut per_workload: BTreeMap<String, BTreeMap<String, serde_json::Value>> = BTreeMap::new();
    let mut best = baseline.clone();
    let mut best_vs_baseline: Option<bench::Estimate> = None;
    // The best candidate without a stage -Ctarget-cpu: always reported next to the final
    // one, so a CPU-specific binary is never the only artifact.
    let mut portable = (baseline.clone(), None::<bench::Estimate>);

    for name in stages {
        // Most stages offer one candidate; the cpu stage offers one per target-cpu.
        let offers: Vec<stage::cpu::Offer> = match name {
            StageName::Baseline => continue,
            StageName::Profile => vec![(None, stage::profile::prepare(&ctx, &best))],
            StageName::Cpu => stage::cpu::prepare_all(&ctx, &best),
            StageName::Pgo => {
                let mut offers = vec![(None, stage::pgo::prepare(&ctx, &best))];
                // The best so far picks a CPU: also profile the portable best, so the
                // binary that runs anywhere gets PGO too.
                if best.targets_cpu() && !portable.0.targets_cpu() {
                    offers.push((
                        Some(stage::pgo::PORTABLE.to_string()),
                        stage::pgo::prepare_variant(&ctx, &portable.0, Some(stage::pgo::PORTABLE)),
                    ));
                }
                offers
            }
            StageName::Bolt => vec![(None, stage::bolt::prepare(&ctx, &best))],
        };
        for (variant, prepared) in offers {
            let row = match &variant {
                Some(v) => format!("{name} ({v})"),
                None => name.to_string(),
            };
            let cand = match prepared {
                Ok(c) => c,
                Err(stage::StageError::NotAvailable(why)) => {
                    ui.info(&format!("{row}: skipped: {why}"));
                    let mut r = StageReport::without_candidate(name.as_str(), Status::Skipped, why);
                    with_variant(&mut r, variant.as_deref());
                    reports.push(r);
                    continue;
                }
                Err(e) => {
                    ui.warn(&format!("{row} stage failed: {e}"));
                    let mut r = StageReport::without_candidate(
                        name.as_str(),
                        Status::Failed,
                        e.to_string(),
                    );
                    with_variant(&mut r, variant.as_deref());
                    reports.push(r);
                    continue;
                }
            };
            // A portable variant (offered while the best so far picks a CPU) competes with
            // the portable best; every other candidate with the best so far.
            let portable_track = !cand.targets_cpu() && best.targets_cpu();
            let against = if portable_track {
                portable.0.clone()
            } else {
                best.clone()
            };
            // The same bytes as the best so far: the settings change nothing for this
            // program (e.g. the preset equals the user's profile). Nothing to verify or time.
            if same_file(&cand.binary, &against.binary) {
                let why = format!(
                    "byte-identical to the {} binary: these settings change nothing here",
                    against.label()
                );
                ui.info(&format!("{row}: dropped: {why}"));
                let mut r = candidate_report(&cand, Status::Dropped, &why);
                r.verified = Some(true);
                reports.push(r);
                continue;
            }
            if let Err(m) = verify_candidate(&ctx, &cand, &reference)? {
                ui.warn(&format!("{row} rejected: {}\n  {m}", m.headline()));
                let mut r = candidate_report(&cand, Status::Rejected, &m.to_string());
                r.verified = Some(false);
                reports.push(r);
                continue;
            }
            let measured = measure(&ctx, &against, &cand, &baseline);
            let (vs_best, vs_baseline, per) = match measured {
                Ok(m) => m,
                Err(e) => {
                    ui.warn(&format!("{row}: measuring failed: {e:#}"));
                    let mut r = candidate_report(
                        &cand,
                        Status::Failed,
                        &format!("measuring failed: {e:#}"),
                    );
                    r.verified = Some(true);
                    reports.push(r);
                    continue;
                }
            };
            for (w, c) in per {
                per_workload.entry(w).or_default().insert(cand.tag(), c);
            }
            let keep = vs_best.verdict == bench::Verdict::Faster;
            let reason = format!("{} vs {}: {}", row, against.label(), describe(&vs_best));
            let mut r = candidate_report(
                &cand,
                if keep { Status::Kept } else { Status::Dropped },
                &reason,
            );
            r.verified = Some(true);
            r.vs_best = serde_json::to_value(vs_best).ok();
            r.vs_baseline = serde_json::to_value(vs_baseline).ok();
            reports.push(r);
            if keep && portable_track {
                portable = (cand, Some(vs_baseline));
            } else if keep {
                if !cand.targets_cpu() {
                    portable = (cand.clone(), Some(vs_baseline));
                }
                best = cand;
                best_vs_baseline = Some(vs_baseline);
            }
        }
        if name == StageName::Profile && args.explain {
            explain_profile(&ctx, &baseline, &mut reports);
        }
    }

    let mut final_ = final_choice(&best, best_vs_baseline.as_ref());
    final_.portable = Some(Box::new(final_choice(&portable.0, portable.1.as_ref())));
    ctx.record("total", started.elapsed().as_secs_f64(), None);
    let report = Report {
        schema: report::SCHEMA,
        tool_version: env!("CARGO_PKG_VERSION").to_string(),
        run_id: run.id.clone(),
        crate_name: project.package.clone(),
        bin: project.bin.clone(),
        toolchain: ToolchainInfo {
            rustc: rustc.version.clone(),
            llvm: rustc.llvm_version.clone(),
            llvm_profdata: llvm_profdata.map(|t| t.path.display().to_string()),
            llvm_bolt: bolt_tools
                .as_ref()
                .and_then(|b| b.as_ref().ok())
                .map(|b| b.llvm_bolt.path.display().to_string()),
            host: rustc.host.clone(),
        },
        stages: reports,
        workloads: spec
            .workloads
            .iter()
            .map(|w| WorkloadReport {
                name: w.name.clone(),
                uses: uses(w),
                per_stage: per_workload.remove(&w.name).unwrap_or_default(),
                deterministic: reference.is_deterministic(&w.name),
                nondeterminism: reference
                    .nondeterministic
                    .get(&w.name)
                    .and_then(|n| serde_json::to_value(n).ok()),
            })
            .collect(),
        final_: Some(final_),
        pipeline: ctx.steps.borrow().clone(),
    };
    report.write_json(&run.root)?;
    point_latest(&optimize_dir, &run)?;
    report::terminal::print_ladder(&report, &ui);
    // A stage that could not run is a failure the user must see, even though the run
    // completed and the best candidate so far is reported.
    let failed = report.stages.iter().any(|s| s.status == Status::Failed);
    Ok(if failed { 1 } else { 0 })
}

fn apply_run_overrides(spec: &mut Spec, args: &RunArgs) -> anyhow::Result<()> {
    if let Some(list) = &args.stages {
        let mut stages = Vec::new();
        for s in list.iter().filter(|s| !s.trim().is_empty()) {
            stages.push(match s.trim() {
                "profile" => StageName::Profile,
                "cpu" => StageName::Cpu,
                "pgo" => StageName::Pgo,
                "bolt" => StageName::Bolt,
                other => anyhow::bail!(
                    "--stages: unknown stage `{other}`\n  fix: use a comma-separated list of profile, cpu, pgo, bolt"
                ),
            });
        }
        spec.stages.try_ = stages;
    }
    if let Some(t) = &args.max_time {
        spec.bench.max_time = humantime::parse_duration(t).map_err(|e| {
            anyhow::anyhow!("--max-time `{t}`: {e}\n  fix: a duration such as 20s, 2m or 500ms")
        })?;
    }
    Ok(())
}

fn uses(w: &Workload) -> Vec<&'static str> {
    let mut v = Vec::new();
    if w.train {
        v.push("train");
    }
    if w.eval {
        v.push("eval");
    }
    v
}

/// `<timestamp>-<pid>`: sortable and unique on this machine.
fn new_run_dir(optimize_dir: &Path) -> anyhow::Result<RunDir> {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    let ts = humantime::format_rfc3339_seconds(std::time::SystemTime::UNIX_EPOCH + now)
        .to_string()
        .replace([':', '-'], "")
        .replace('T', "-")
        .trim_end_matches('Z')
        .to_string();
    let id = format!("{ts}-{}", std::process::id());
    let root = optimize_dir.join("runs").join(&id);
    std::fs::create_dir_all(&root).with_context(|| format!("cannot create {}", root.display()))?;
    Ok(RunDir { id, root })
}

fn point_latest(optimize_dir: &Path, run: &RunDir) -> std::io::Result<()> {
    let link = optimize_dir.join("latest");
    let tmp = optimize_dir.join(format!(".latest-{}", std::process::id()));
    let _ = std::fs::remove_file(&tmp);
    std::os::unix::fs::symlink(Path::new("runs").join(&run.id), &tmp)?;
    std::fs::rename(tmp, link)
}

/// The baseline's outputs on every workload (the reference every candidate must match),
/// then the determinism check: a second run of each, so a workload whose baseline
/// disagrees with itself is named instead of rejecting every candidate. A workload that
/// fails, times out or does not write a declared file on the baseline is a spec problem,
/// reported as such.
fn record_baseline(ctx: &Context, baseline: &Candidate) -> anyhow::Result<verify::Reference> {
    let n = ctx.spec.workloads.len();
    let start = Instant::now();
    let mut peak = 0;
    let mut reference = verify::Reference::new(baseline);
    for (i, w) in ctx.spec.workloads.iter().enumerate() {
        ctx.ui
            .step(&format!("baseline: running [{}/{n}] {}", i + 1, w.name));
        let obs = verify::observe(
            ctx,
            &baseline.binary,
            w,
            &ctx.run.outputs(StageName::Baseline),
        )?;
        let out = &obs.outcome;
        if out.timed_out {
            anyhow::bail!(
                "{}:{}: workload `{}` exceeded its timeout of {} on the baseline and was killed (with its children)\n  fix: raise `timeout` for this workload, or give it a smaller input",
                ctx.spec.path.display(),
                w.line,
                w.name,
                humantime::format_duration(w.timeout)
            );
        }
        if !out.status.success() && w.expect != spec::Expect::ExitCode {
            anyhow::bail!(
                "{}:{}: workload `{}` failed on the baseline ({}); its stderr ends with:\n{}\n  fix: correct its args/stdin/cwd, or set `expect = \"exit-code\"` if a non-zero exit is what it should do",
                ctx.spec.path.display(),
                w.line,
                w.name,
                out.status,
                indent(&out.stderr_tail(15))
            );
        }
        if let Some(f) = obs.files.iter().find(|f| f.contents.is_none()) {
            if out.status.success() {
                anyhow::bail!(
                    "{}:{}: workload `{}` declares the output file {} but the baseline did not write it (it ran in a fresh copy of its cwd {})\n  fix: correct `files` (paths are relative to the workload's `cwd`)",
                    ctx.spec.path.display(),
                    w.line,
                    w.name,
                    f.declared.display(),
                    w.cwd.display()
                );
            }
        }
        peak = peak.max(out.max_rss_bytes);
        reference.observed.insert(w.name.clone(), obs);
    }
    ctx.record(
        "baseline: workloads",
        start.elapsed().as_secs_f64(),
        Some(peak),
    );
    verify::check_determinism(ctx, baseline, &mut reference)?;
    Ok(reference)
}

/// Run every workload on the candidate and compare with the baseline; then, with
/// `[verify] tests = true`, run the crate's own tests with the candidate's settings.
fn verify_candidate(
    ctx: &Context,
    cand: &Candidate,
    reference: &verify::Reference,
) -> anyhow::Result<Result<(), verify::Rejection>> {
    let start = Instant::now();
    let n = ctx.spec.workloads.len();
    let outputs = ctx.run.root.join("outputs").join(cand.tag());
    let mut result = Ok(());
    for (i, w) in ctx.spec.workloads.iter().enumerate() {
        ctx.ui.step(&format!(
            "{}: verifying [{}/{n}] {}",
            cand.label(),
            i + 1,
            w.name
        ));
        let obs = verify::observe(ctx, &cand.binary, w, &outputs)?;
        if let Err(m) = reference.check(w, &cand.label(), &obs) {
            result = Err(verify::Rejection::Outputs(m));
            break;
        }
    }
    ctx.record(
        &format!("{}: verify", cand.label()),
        start.elapsed().as_secs_f64(),
        None,
    );
    if result.is_ok() {
        if let Err(t) = verify::crate_tests::check(ctx, cand, reference)? {
            result = Err(verify::Rejection::Tests(t));
        }
    }
    Ok(result)
}

type Measured = (
    bench::Estimate,
    bench::Estimate,
    Vec<(String, serde_json::Value)>,
);

/// Compare `cand` with the best so far (and with the baseline when the best is not the
/// baseline) on every eval workload.
fn measure(
    ctx: &Context,
    best: &Candidate,
    cand: &Candidate,
    baseline: &Candidate,
) -> anyhow::Result<Measured> {
    let opts = bench::BenchOptions::from_config(&ctx.spec.bench);
    let (vs_best, per) = compare_over_workloads(ctx, best, cand, &opts)?;
    let vs_baseline = if best.stage == StageName::Baseline {
        vs_best
    } else {
        compare_over_workloads(ctx, baseline, cand, &opts)?.0
    };
    let per = per
        .into_iter()
        .map(|(w, c)| (w, serde_json::to_value(&c).unwrap_or_default()))
        .collect();
    Ok((vs_best, vs_baseline, per))
}

/// Whether two files have the same contents (a read error counts as different).
fn same_file(a: &Path, b: &Path) -> bool {
    match (std::fs::read(a), std::fs::read(b)) {
        (Ok(x), Ok(y)) => x == y,
        _ => false,
    }
}

fn compare_over_workloads(
    ctx: &Context,
    a: &Candidate,
    b: &Candidate,
    opts: &bench::BenchOptions,
) -> anyhow::Result<(bench::Estimate, Vec<(String, bench::Comparison)>)> {
    let eval: Vec<&Workload> = ctx.spec.workloads.iter().filter(|w| w.eval).collect();
    if eval.is_empty() {
        anyhow::bail!(
            "{}: no workload has `use = [\"eval\"]`, so nothing can be measured\n  fix: mark at least one workload for eval",
            ctx.spec.path.display()
        );
    }
    let start = Instant::now();
    let mut comps = Vec::new();
    for (i, w) in eval.iter().enumerate() {
        let label = format!(
            "{} vs {}: measuring [{}/{}] {}",
            b.label(),
            a.label(),
            i + 1,
            eval.len(),
            w.name
        );
        ctx.ui.step(&label);
        let spinner = ctx.ui.spinner(label.clone());
        // Each side writes its declared files into its own copy of the cwd.
        let (wa, _sa) = ctx.sandboxed(w, "bench-a")?;
        let (wb, _sb) = ctx.sandboxed(w, "bench-b")?;
        let ca = process::Command::for_workload(&a.binary, &wa);
        let cb = process::Command::for_workload(&b.binary, &wb);
        let c = bench::compare(&ca, &cb, opts, &mut |p| {
            let est = p.estimate.map(|e| format!(", {e}")).unwrap_or_default();
            spinner.set_message(format!("{label}: {} pairs{est}", p.pairs));
        });
        spinner.finish_and_clear();
        let c = c.with_context(|| format!("workload `{}`", w.name))?;
        ctx.ui.info(&format!("{}: {}", w.name, c.headline()));
        comps.push((w.name.clone(), c));
    }
    ctx.record(
        &format!("{} vs {}: measure", b.label(), a.label()),
        start.elapsed().as_secs_f64(),
        None,
    );
    let all: Vec<bench::Comparison> = comps.iter().map(|(_, c)| c.clone()).collect();
    Ok((bench::geomean(&all, opts.margin), comps))
}

fn describe(e: &bench::Estimate) -> String {
    format!(
        "time ratio {:.3} [{:.3}, {:.3}] → {}",
        e.ratio, e.ci_low, e.ci_high, e.verdict
    )
}

fn candidate_report(c: &Candidate, status: Status, reason: &str) -> StageReport {
    StageReport {
        name: c.stage.to_string(),
        status,
        reason: reason.to_string(),
        binary: Some(c.binary.display().to_string()),
        size_bytes: Some(c.size_bytes),
        build_seconds: Some(c.build_seconds),
        settings: Some(settings_json(&c.settings)),
        verified: None,
        vs_best: None,
        vs_baseline: None,
        notes: c.notes.clone(),
        facts: c.facts.clone(),
    }
}

/// A candidate's settings in report.json: `rustflags` is everything rustc sees,
/// `stage_rustflags` what the stages added (what `apply` writes), `user_rustflags` the
/// user's own.
fn settings_json(s: &BuildSettings) -> serde_json::Value {
    serde_json::json!({
        "profile": s.profile,
        "profile_overrides": s.profile_overrides,
        "rustflags": s.all_rustflags(),
        "stage_rustflags": s.rustflags,
        "user_rustflags": s.user_rustflags,
        "target": s.target,
        "features": s.features,
    })
}

/// Name the variant (e.g. the target-cpu) of a row that has no candidate.
fn with_variant(r: &mut StageReport, variant: Option<&str>) {
    if let Some(v) = variant {
        r.facts.insert("variant".into(), v.into());
    }
}

fn final_choice(c: &Candidate, vs_baseline: Option<&bench::Estimate>) -> FinalChoice {
    FinalChoice {
        stage: c.stage.to_string(),
        binary: c.binary.display().to_string(),
        speedup_vs_baseline: vs_baseline.map(|e| 1.0 / e.ratio),
        speedup_ci: vs_baseline.map(|e| (1.0 / e.ci_high, 1.0 / e.ci_low)),
        variant: c.variant().map(str::to_string),
        settings: Some(settings_json(&c.settings)),
        portable: None,
    }
}

/// `--explain`: each profile setting alone against the baseline, into the profile row's
/// facts (`explain`).
fn explain_profile(ctx: &Context, baseline: &Candidate, reports: &mut [StageReport]) {
    let opts = bench::BenchOptions::from_config(&ctx.spec.bench);
    let explained = stage::profile::explain(ctx, baseline, &mut |c| {
        Ok(compare_over_workloads(ctx, baseline, c, &opts)?.0)
    });
    if let Some(r) = reports.iter_mut().rev().find(|r| r.name == "profile") {
        r.facts.insert(
            "explain".into(),
            serde_json::to_value(explained).unwrap_or_default(),
        );
    }
}

fn indent(s: &str) -> String {
    s.lines()
        .map(|l| format!("    {l}"))
        .collect::<Vec<_>>()
        .join("\n")
}
