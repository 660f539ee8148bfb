//! The pipeline: resolve the [`Plan`], build the baseline and record its outputs, climb the
//! [`Ladder`] stage by stage (each candidate built from the best so far, verified against
//! the baseline, measured against its rival, kept only when measurably faster), then write
//! the run folder (`target/optimize/runs/<id>/`: `report.json`, `report.md`, `report.html`), point `latest` at it and
//! print the ladder.
//!
//! In order ([`run`]): the run folder (`runs/<timestamp>-<pid>[-<random>]/`, an exclusive
//! create, never a folder that exists) under `target/optimize.lock`, shared with other runs;
//! a `Cargo.lock` made for the run when the project has none (or the one another run of
//! the project made, shared), removed at its end by the last run out while it is unchanged
//! (`cargo::lockfile`; before the folder's lock is released); the builds
//! ahead (`stage::ahead`: the profile stage's preset — its search's points with `--thorough`
//! — and the cpu stage's candidates on it, of the stages the budget pays for); the budget's
//! costs from the last run's report before the first build (the projection printed then),
//! else from the baseline's build and runs once recorded; the baseline and its recorded
//! outputs; the ladder, stage by stage (after the profile stage, `--explain` measures each
//! profile setting alone); the final comparison and gate; the 15 hottest functions of a
//! pgo profile (one `llvm-profdata show`); `report.json`, `report.md`, `report.html` each
//! written atomically, `latest` pointed at the run, the ladder on stdout and where the time
//! went; then, once no other run holds the folder, what is kept trimmed to
//! `[cache] max-size`. Exit 1 when a row failed or a stage asked for by name (`--stages`,
//! `[stages] try`) produced no candidate, else 0; an error is exit 2 (`main.rs`).
//!
//! Must not: parse flags or files after the plan is made; build, run or time anything
//! except through the stages, verify and bench.

pub(crate) mod budget;
mod ladder;
pub(crate) mod measure;
pub(crate) mod plan;

use std::time::Instant;

pub(crate) use ladder::Ladder;
pub(crate) use plan::{load_spec, locate};

use crate::cache::{self, VerdictCache};
use crate::context::{Context, DirLock, Plan, RunDir};
use crate::report::{self, CacheCounts, MachineInfo, Report, ToolchainInfo, WorkloadReport};
use crate::spec::Workload;
use crate::{stage, verify};
use budget::Budget;

/// Run the whole pipeline; the exit code is 1 when a stage failed, else 0.
pub(crate) fn run(plan: &Plan) -> anyhow::Result<i32> {
    if plan.dry_run {
        return Ok(dry_run(plan));
    }
    let started = Instant::now();
    let started_at = std::time::SystemTime::now();
    let budget = run_budget(plan);
    let lock = DirLock::for_run(&plan.optimize_dir)?;
    let lockfile = crate::cargo::RunLockfile::for_run(&plan.project, &plan.optimize_dir, &plan.ui)?;
    let run = RunDir::create(&plan.optimize_dir)?;
    announce(plan, &run);
    let ctx = Context::new(plan, &plan.spec, &run);
    warn_cold_starts(plan, &ctx);
    budget.hold(cached_share(plan, &ctx));
    let early = early_projection(plan, &budget);
    let sccache = crate::cargo::wrapper::sccache();
    let sccache_before = sccache.as_deref().and_then(crate::cargo::wrapper::stats);
    build_ahead(plan, &ctx, &budget);
    plan.ui
        .event("stage-started", serde_json::json!({ "stage": "baseline" }));
    let baseline = stage::baseline::build(&ctx, plan.baseline.clone())?;
    let verifier = verify::Verifier::new(&ctx, baseline.clone())?;
    // The baseline is built and checked whatever the budget; no build after it outlasts it.
    ctx.set_deadline(budget.deadline());
    let projection = projection(plan, &baseline, &verifier, &budget, early);
    let machine = machine();
    let fingerprint = cache::machine_fingerprint(machine.cpu_model.as_deref());
    let verdicts = VerdictCache::new(&plan.optimize_dir, plan.fresh, fingerprint);
    let mut ladder = Ladder::new(&ctx, &verdicts, baseline, verifier, &budget);
    for &name in &plan.spec.stages.try_ {
        ladder.climb(name, plan.explain)?;
    }
    ladder.measure_final()?;
    if budget.spent() {
        let bound = budget.overrun_bound().map_or(String::new(), |b| {
            format!(" (at most {} by its rule: a comparison that started before it, then the final confirmation's first look)", crate::util::format_span(b))
        });
        let over = crate::util::format_span(-budget.left());
        plan.ui
            .info(&format!("the ladder ran {over} past its budget{bound}"));
    }
    let hotspots = hotspots(plan, &ctx, &ladder);
    ctx.record("total", started.elapsed().as_secs_f64(), None);
    let not_tried = ladder.not_tried.clone();
    let (hits, misses) = verdicts.counts();
    let mut report = assemble(plan, &ctx, ladder, machine, hits, misses);
    report.budget = Some(report::RunBudget {
        budget_secs: plan.budget.as_secs_f64(),
        projection,
        not_tried: not_tried.clone(),
    });
    report.hotspots = hotspots;
    report.source = Some(source(plan, started_at));
    report.compile_cache = compile_cache(sccache.as_deref(), sccache_before);
    report.write_json(&run.root)?;
    report.write_renderings(&run.root)?;
    show(plan, &run, &report, &not_tried)?;
    // Before the folder's lock: `clean` may remove the lock file's record once it is free.
    let made = lockfile.made();
    let ending = lockfile.finish();
    drop(lock);
    if made {
        plan.ui.info(&format!("the project has no Cargo.lock: this run {}; commit one (`cargo generate-lockfile`) so builds, and what they are measured with, are reproducible", lockfile_said(ending)));
    }
    trim_cache(plan);
    // A stage that could not run is a failure the user must see, even though the run
    // completed and the best candidate so far is reported; so is a stage the user asked for
    // by name (`--stages`, `[stages] try`) that could not run here at all.
    let unmet = unmet_requests(plan, &report);
    for name in &unmet {
        plan.ui.warn(&format!(
            "exit 1: stage `{name}` was asked for by name but was skipped (the reason is in its row)"
        ));
    }
    Ok(if report.any_failed() || !unmet.is_empty() {
        1
    } else {
        0
    })
}

/// What became of the `Cargo.lock` the tool made (`cargo::lockfile`), for the run's note.
fn lockfile_said(ending: Option<crate::cargo::lockfile::Ending>) -> &'static str {
    use crate::cargo::lockfile::Ending;
    match ending {
        Some(Ending::InUse) => "built every candidate with one made for the runs of this project, and left it to another run still using it, which removes it",
        Some(Ending::Kept | Ending::Undecided) => "made one to build every candidate with; it was left (see above)",
        _ => "made one to build every candidate with, and removed it",
    }
}

/// Show the finished run: the ladder (or the `ship` event), the time line and the stages
/// not tried; point `latest` at it.
fn show(plan: &Plan, run: &RunDir, report: &Report, not_tried: &[String]) -> anyhow::Result<()> {
    match plan.ui.events {
        true => plan.ui.event(
            "ship",
            serde_json::json!({ "final": report.final_, "run": run.root, "report": run.root.join(report::FILE) }),
        ),
        false => report::terminal::print_ladder(report, &plan.ui),
    }
    run.point_latest(&plan.optimize_dir)?;
    plan.ui.info(&time_line(report));
    if !not_tried.is_empty() {
        plan.ui.warn(&format!(
            "not tried for lack of time: {} (what was left of the budget of {} did not pay for them)\n  fix: give the run more time (--budget {}, or [bench] budget), or climb only those stages on top of this run's (--stages {})",
            not_tried.join(", "),
            crate::util::format_span(plan.budget.as_secs_f64()),
            crate::util::format_span(2.0 * plan.budget.as_secs_f64()),
            not_tried.join(",")
        ));
    }
    Ok(())
}

/// Start the builds the ladder will most likely ask for first (`stage::ahead`), for the
/// stages the budget pays for as far as it can tell yet: no build is wasted on a stage the
/// ladder will not try.
fn build_ahead(plan: &Plan, ctx: &Context, budget: &Budget) {
    let affordable = budget.expected(crate::stages::StageName::BASELINE, &plan.spec.stages.try_);
    ctx.build_ahead_groups(stage::ahead(ctx, &affordable, &plan.baseline));
}

/// The share of the builds the ladder will likely ask for (the baseline and
/// `stage::ahead`'s, for every stage to try) that the build cache holds: an unchanged
/// re-run's builds cost nothing, and the budget must not refuse it the stages the last run
/// climbed for builds it will not make.
/// Figures: docs/src/decisions.md, "A cached build costs the budget nothing".
fn cached_share(plan: &Plan, ctx: &Context) -> f64 {
    let ahead = stage::ahead(ctx, &plan.spec.stages.try_, &plan.baseline);
    let mut likely: Vec<_> = ahead.into_iter().flat_map(|(_, w)| w).collect();
    likely.push((String::new(), plan.baseline.clone()));
    let held = likely.iter().filter(|(_, s)| ctx.has_build(s)).count();
    held as f64 / likely.len() as f64
}

/// The run's budget, with how many candidates each stage tried builds (its contract's
/// count).
fn run_budget(plan: &Plan) -> Budget {
    let counts = (plan.spec.stages.try_.iter())
        .map(|&s| (s, stage::contract(s).count(plan)))
        .collect();
    Budget::new(plan.budget, counts, plan.spec.bench.max_time)
}

fn announce(plan: &Plan, run: &RunDir) {
    let p = &plan.project;
    plan.ui.step(&format!(
        "optimizing `{}` (package {} {}) → {}",
        p.bin,
        p.package,
        p.version,
        run.root
            .strip_prefix(&p.workspace_root)
            .unwrap_or(&run.root)
            .display()
    ));
    plan.ui.detail(&format!(
        "workloads confined by {}",
        crate::sys::confine::protection().describe()
    ));
    if let crate::sys::confine::Protection::Fallback { why } = crate::sys::confine::protection() {
        plan.ui.warn(&format!(
            "workloads run without the kernel's confinement ({why}): a write outside the run folder is found by a private copy checked after the fact, not refused"
        ));
    }
    if plan.quick {
        plan.ui.warn(&format!(
            "quick run: pgo only, one eval workload per name, a budget of {}, everything kept from earlier runs reused — for iteration, not shipping (`apply` refuses its winner without --allow-quick)",
            crate::util::format_span(plan.budget.as_secs_f64())
        ));
    }
    if !plan.baseline.user_rustflags.is_empty() {
        plan.ui.info(&format!(
            "your rustflags are kept in every build: {}",
            plan.baseline.user_rustflags.join(" ")
        ));
    }
}

/// Each `start = "cold"` workload where cold starts are skipped (off Linux): it runs warm,
/// and the run says so.
fn warn_cold_starts(plan: &Plan, ctx: &Context) {
    let Some(why) = crate::toolchain::platform::cold_start_skipped() else {
        return;
    };
    let cold = plan.spec.workloads.iter();
    for w in cold.filter(|w| w.start == crate::spec::Start::Cold) {
        ctx.warn_once(&format!(
            "{}:{}: workload `{}` start = \"cold\": {why}",
            plan.spec.path.display(),
            w.line,
            w.name
        ));
    }
}

/// The run record from the ladder's rows and verdicts.
fn assemble(
    plan: &Plan,
    ctx: &Context,
    mut ladder: Ladder,
    machine: MachineInfo,
    hits: u32,
    misses: u32,
) -> Report {
    let final_ = ladder.final_choice();
    let mut per_workload = ladder.take_per_workload();
    let nondeterministic = ladder.verifier().nondeterministic();
    let workloads = plan
        .spec
        .workloads
        .iter()
        .map(|w| WorkloadReport {
            name: w.name.clone(),
            uses: uses(w),
            per_stage: per_workload.remove(&w.name).unwrap_or_default(),
            deterministic: !nondeterministic.contains_key(&w.name),
            nondeterminism: nondeterministic.get(&w.name).cloned(),
        })
        .collect();
    Report {
        schema: report::SCHEMA,
        tool_version: env!("CARGO_PKG_VERSION").to_string(),
        run_id: ctx.run.id.clone(),
        crate_name: plan.project.package.clone(),
        bin: plan.project.bin.clone(),
        toolchain: ToolchainInfo {
            rustc: plan.rustc.version.clone(),
            llvm: plan.rustc.llvm_version.clone(),
            llvm_profdata: plan
                .llvm_profdata
                .as_ref()
                .map(|t| t.path.display().to_string()),
            llvm_bolt: plan
                .bolt_tools
                .as_ref()
                .and_then(|b| b.as_ref().ok())
                .map(|b| b.llvm_bolt.path.display().to_string()),
            host: plan.rustc.host.clone(),
        },
        stages: std::mem::take(&mut ladder.rows),
        workloads,
        final_: Some(final_),
        pipeline: ctx.steps(),
        machine: Some(machine),
        verdict_cache: Some(CacheCounts { hits, misses }),
        build_cache: Some({
            let (hits, misses) = ctx.build_counts();
            CacheCounts { hits, misses }
        }),
        hotspots: None,
        compile_cache: None,
        quick: plan.quick,
        budget: None,
        source: None,
        confinement: Some(crate::sys::confine::protection().kind().to_string()),
    }
}

/// When the run started and which revision of the workspace it measured.
fn source(plan: &Plan, started: std::time::SystemTime) -> report::RunSource {
    let root = &plan.project.workspace_root;
    let head = crate::git::Repo::of(root).ok().and_then(|r| r.head());
    let (commit, dirty) = match head {
        Some((commit, dirty)) => (Some(commit), Some(dirty)),
        None => (None, None),
    };
    report::RunSource {
        started: humantime::format_rfc3339_seconds(started).to_string(),
        workspace: root.display().to_string(),
        git_commit: commit,
        git_dirty: dirty,
    }
}

/// The projection before the first build, from the last run of the same program (its
/// builds' and workloads' times), printed; `None` without one.
fn early_projection(plan: &Plan, budget: &Budget) -> Option<report::Projection> {
    let last = report::load(&plan.optimize_dir.join("latest").join(report::FILE)).ok()?;
    let same = last.crate_name == plan.project.package && last.bin == plan.project.bin;
    let costs = budget::Costs::from_report(&last, &plan.spec).filter(|_| same)?;
    Some(project_and_say(
        plan,
        budget,
        costs,
        "from the last run's times; what has not changed since is reused and costs nothing",
    ))
}

/// The run's projection once the baseline is built and run (its build and run times teach
/// the budget better costs): the early one when there was one (what the user was shown),
/// else this one, printed; `None` when neither is known (the baseline's outputs were
/// reused, so nothing ran).
fn projection(
    plan: &Plan,
    baseline: &crate::context::Candidate,
    verifier: &verify::Verifier,
    budget: &Budget,
    early: Option<report::Projection>,
) -> Option<report::Projection> {
    let Some(times) = verifier.run_times() else {
        return early;
    };
    let costs = budget::Costs::of(&plan.spec, baseline.build_seconds, &times);
    match early {
        Some(p) => {
            budget.learn(costs);
            Some(p)
        }
        None => Some(project_and_say(
            plan,
            budget,
            costs,
            "from the baseline's times",
        )),
    }
}

fn project_and_say(
    plan: &Plan,
    budget: &Budget,
    costs: budget::Costs,
    whence: &str,
) -> report::Projection {
    budget.learn(costs);
    // What the budget pays for, as far as it can tell now; the ladder decides stage by
    // stage on what is left then, which on a crate of slow builds and workloads can be far
    // less than the whole ladder's projection.
    let all: Vec<_> = plan.spec.stages.try_.clone();
    let fit = budget.expected(crate::stages::StageName::BASELINE, &all);
    let max = plan.spec.bench.max_time;
    let p = budget::project(&costs, &fit, budget, max, 0.02);
    let secs = plan.budget.as_secs_f64();
    let mut line = budget::line(&p, secs, &costs);
    let out: Vec<_> = all.iter().filter(|s| !fit.contains(s)).copied().collect();
    if !out.is_empty() {
        let whole = budget::project(&costs, &all, budget, max, 0.02);
        line += &budget::left_out(&out, &whole, secs);
    }
    let cached = budget.cached();
    if cached > 0.0 {
        line += &format!(
            "; {:.0} % of the likely builds are in the build cache and cost nothing",
            100.0 * cached
        );
    }
    plan.ui.info(&format!("{line} ({whence})"));
    p
}

/// `--dry-run`: the plan, and what the last run of it cost; nothing is built or run.
fn dry_run(plan: &Plan) -> i32 {
    let spec = &plan.spec;
    // The c-compiler stage makes no row for a program without C: the plan leaves it out.
    let no_c = crate::cargo::cc::packages_of(&plan.project).is_empty();
    let c = crate::stages::changing(crate::stages::Changes::CCompiler);
    let stages: Vec<&str> = (spec.stages.try_.iter())
        .filter(|s| !(no_c && **s == c))
        .map(|s| s.as_str())
        .collect();
    let (train, eval) = (
        spec.workloads.iter().filter(|w| w.train).count(),
        spec.workloads.iter().filter(|w| w.eval).count(),
    );
    let last = report::load(&plan.optimize_dir.join("latest").join(report::FILE)).ok();
    if plan.ui.events {
        plan.ui.event(
            "plan",
            serde_json::json!({
                "bin": plan.project.bin, "spec": spec.path, "stages": stages,
                "workloads": spec.workloads.len(), "train": train, "eval": eval,
                "max_time_secs": spec.bench.max_time.as_secs_f64(),
                "budget_secs": plan.budget.as_secs_f64(),
                "last_run": last.as_ref().map(|r| serde_json::json!({
                    "run_id": r.run_id, "seconds": r.time_spent().0,
                })),
            }),
        );
        return 0;
    }
    println!(
        "plan: `{}` from {}; stages: {}; {} workload(s) ({train} train, {eval} eval); max-time {} per workload per comparison; budget {}",
        plan.project.bin,
        spec.path.display(),
        if stages.is_empty() { "none".to_string() } else { stages.join(" → ") },
        spec.workloads.len(),
        crate::util::format_span(spec.bench.max_time.as_secs_f64()),
        crate::util::format_span(plan.budget.as_secs_f64()),
    );
    match last {
        Some(r) => {
            let (total, kinds) = r.time_spent();
            let parts: Vec<String> = kinds
                .iter()
                .map(|(k, s)| format!("{k} {}", crate::util::format_span(*s)))
                .collect();
            println!(
                "the last run ({}) took {}: {}; what has not changed since is reused",
                r.run_id,
                crate::util::format_span(total),
                parts.join(", ")
            );
        }
        None => println!(
            "no earlier run: the projection is printed once the baseline is built and run (its build and run times set it)"
        ),
    }
    println!("dry run: nothing was built or run");
    0
}

/// The hottest functions of the run's PGO profile, for report.json (one `llvm-profdata
/// show`); `None`, with a warning when it could not be read, when no profile was made.
fn hotspots(plan: &Plan, ctx: &Context, ladder: &Ladder) -> Option<report::Hotspots> {
    let shipped = ladder.final_choice().binary;
    let pgo = report::hotspots::pgo_profile(&ladder.rows, Some(&shipped))?;
    let profile = pgo.existing()?;
    let profdata = plan.llvm_profdata.as_ref()?;
    let read = ctx.timed("hotspots: llvm-profdata show", || {
        crate::hotspots::for_report(&profdata.path, profile)
    });
    read.map_err(|e| plan.ui.warn(&format!("no hotspots in the report: {e}")))
        .ok()
}

/// The machine's facts for the record (cheap: /proc/cpuinfo and one counter probe).
fn machine() -> MachineInfo {
    let (cpu_model, level) = crate::toolchain::CpuFacts::model_and_level();
    let counters = crate::toolchain::hw_counters();
    MachineInfo {
        cpu_model,
        logical_cpus: std::thread::available_parallelism().ok().map(|n| n.get()),
        x86_64_level: level.map(|l| l.name().to_string()),
        hardware_counters: counters.available,
        hardware_counters_detail: counters.detail,
    }
}

/// The stages named in `--stages`/`try` that produced no candidate at all (every row of
/// theirs skipped). A default stage list asks for nothing by name.
fn unmet_requests(plan: &Plan, report: &Report) -> Vec<&'static str> {
    if !plan.spec.stages.try_explicit {
        return Vec::new();
    }
    plan.spec
        .stages
        .try_
        .iter()
        .map(|s| s.as_str())
        .filter(|name| {
            let rows: Vec<_> = report.stages.iter().filter(|r| r.name == *name).collect();
            !rows.is_empty() && rows.iter().all(|r| r.status == report::Status::Skipped)
        })
        // Not tried for lack of time is the budget the user gave, said on its own.
        .filter(|name| {
            report
                .budget
                .as_ref()
                .is_none_or(|b| !b.not_tried.iter().any(|n| n == name))
        })
        .collect()
}

/// Trim what later runs reuse to `[cache] max-size`, least recently used first — only when
/// no other run holds the folder (it may be using the entries).
fn trim_cache(plan: &Plan) {
    let Ok(_alone) = DirLock::for_clean(&plan.optimize_dir) else {
        return;
    };
    if let Ok((removed, freed)) = cache::gc(&plan.optimize_dir, plan.spec.cache_max_bytes) {
        if removed > 0 {
            plan.ui.info(&format!(
                "cache: removed {removed} least recently used entries ({}) to stay within [cache] max-size",
                crate::util::human_bytes(freed)
            ));
        }
    }
}

/// What sccache did since `before` (when the run had it as its rustc wrapper).
fn compile_cache(
    sccache: Option<&std::path::Path>,
    before: Option<crate::cargo::wrapper::CompileCounts>,
) -> Option<report::CompileCache> {
    let sccache = sccache?;
    let after = crate::cargo::wrapper::stats(sccache)?;
    Some(report::CompileCache {
        wrapper: sccache.display().to_string(),
        counts: after - before.unwrap_or_default(),
    })
}

/// `time: 224 s in all — measuring 190 s (85 %), building 18 s (8 %), …`
fn time_line(report: &Report) -> String {
    let (total, kinds) = report.time_spent();
    let parts: Vec<String> = kinds
        .iter()
        .map(|(k, s)| format!("{k} {s:.0} s ({:.0} %)", 100.0 * s / total.max(1e-9)))
        .collect();
    let kept: Vec<String> = [
        (report.build_cache, "builds"),
        (report.verdict_cache, "comparisons"),
    ]
    .into_iter()
    .filter_map(|(c, what)| c.filter(|c| c.hits > 0).map(|c| (c, what)))
    .map(|(c, what)| format!("{} of {} {what}", c.hits, c.hits + c.misses))
    .collect();
    let mut cache = if kept.is_empty() {
        String::new()
    } else {
        format!(
            "; reused from earlier runs: {} (--fresh redoes them)",
            kept.join(", ")
        )
    };
    if let Some(c) = &report.compile_cache {
        let n = c.counts;
        cache.push_str(&format!(
            "; sccache: {} compilation(s) from its cache, {} compiled, {} it cannot cache (binaries, build scripts)",
            n.hits, n.misses, n.not_cacheable
        ));
    }
    let total = if total < 10.0 {
        format!("{total:.1}")
    } else {
        format!("{total:.0}")
    };
    if let Some(b) = &report.budget {
        let span = crate::util::format_span;
        if let Some(p) = &b.projection {
            let [lo, hi] = p.total();
            cache.push_str(&format!("; projected {}–{}", span(lo), span(hi)));
        }
        cache.push_str(&format!("; budget {}", span(b.budget_secs)));
        let secs = (report.pipeline.iter())
            .find(|s| s.step == "total")
            .map(|s| s.seconds);
        if let Some(over) = secs.map(|t| t - b.budget_secs).filter(|o| *o > 0.0) {
            cache.push_str(&format!(", {} over it (what was running when it was spent, and the final confirmation's first look: docs/src/measuring.md)", span(over)));
        }
    }
    format!("time: {total} s in all — {}{cache}", parts.join(", "))
}

fn uses(w: &Workload) -> Vec<String> {
    let mut v = Vec::new();
    if w.train {
        v.push("train".to_string());
    }
    if w.eval {
        v.push("eval".to_string());
    }
    v
}
