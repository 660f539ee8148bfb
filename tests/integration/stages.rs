//! The stages of issue 28 on real fixtures: the fp stage (a dot product whose last digits
//! move under FMA contraction: rejected under `exact`, verified under `numeric`), the
//! profile stage's search (`max`, then by default one more once `max` is kept and two
//! more once that one is, eight with `--thorough`, builds and verdicts reused), and the
//! quick run (`--quick`) that `apply` refuses without `--allow-quick`.

use cargo_optimize::testing::report::Status;

use crate::common::*;

/// Whether this machine has FMA instructions (the fixture builds with +fma).
fn has_fma() -> bool {
    std::fs::read_to_string("/proc/cpuinfo").is_ok_and(|c| c.split_whitespace().any(|w| w == "fma"))
}

#[test]
fn fp_contraction_is_rejected_exactly_and_verified_numerically() {
    if !has_fma() {
        return skip("this CPU has no FMA instructions, which the fp-dot fixture builds with");
    }
    let _lock = lock_target_dir("fp-dot");
    let td = target_dir("fp-dot");

    // exact: the fused build's last digits differ, so it is rejected, with its drift.
    let r = optimize("fp-dot", &["--spec", "exact.toml"], &[]);
    assert_eq!(r.code, Some(0), "{}", r.all());
    let report = latest_report(&td);
    let fp = stage(&report, "fp");
    assert_eq!(fp.status, Status::Rejected, "{fp:#?}");
    assert_eq!(fp.verified, Some(false), "{fp:#?}");
    assert_eq!(fp.facts.variant.as_deref(), Some("--fp-contract=fast"));
    assert_eq!(
        fp.facts.fp_flags.as_deref(),
        Some(&["--fp-contract=fast".to_string()][..])
    );
    let rf = &fp.settings.as_ref().unwrap().stage_rustflags;
    assert!(
        rf.contains(&"-Cllvm-args=--fp-contract=fast".to_string()),
        "{rf:?}"
    );
    assert!(
        fp.reason.contains("stdout differs at line 2"),
        "{}",
        fp.reason
    );
    let d = fp
        .facts
        .output_deviation
        .expect("the row says how far outputs moved");
    assert_eq!((d.numbers_changed, d.workloads), (1, 1), "{d:?}");
    assert!(d.max_rel > 0.0 && d.max_rel < 1e-12, "{d:?}");
    assert!(d.max_abs > 0.0 && d.max_abs < 1e-9, "{d:?}");
    assert!(
        fp.notes
            .iter()
            .any(|n| n.starts_with("outputs moved: 1 number(s) changed")),
        "{:?}",
        fp.notes
    );
    assert_eq!(final_choice(&report).stage, "baseline");

    // numeric, rel = 1e-9: the same move is accepted; kept only if also faster.
    let r = optimize("fp-dot", &[], &[]);
    assert_eq!(r.code, Some(0), "{}", r.all());
    let report = latest_report(&td);
    let fp = stage(&report, "fp");
    assert_eq!(fp.verified, Some(true), "{fp:#?}");
    assert!(
        matches!(fp.status, Status::Kept | Status::Dropped),
        "{fp:#?}"
    );
    let d2 = fp.facts.output_deviation.expect("drift");
    assert_eq!(
        d2.max_rel, d.max_rel,
        "the same build moves the same digits"
    );

    // Without FMA in the target (RUSTFLAGS replaces the fixture's +fma): contraction could
    // change nothing, so it is skipped with the reason and the fix — and since `try` asks
    // for fp by name, the run says so with exit 1.
    let r = optimize("fp-dot", &[], &[("RUSTFLAGS", "--cfg plain")]);
    assert_eq!(r.code, Some(1), "{}", r.all());
    let report = latest_report(&td);
    let fp = stage(&report, "fp");
    assert_eq!(fp.status, Status::Skipped, "{fp:#?}");
    assert!(
        fp.reason.contains("fuses a * b + c into FMA instructions"),
        "{}",
        fp.reason
    );
    assert!(
        fp.reason.contains("fix: keep a CPU level with FMA first"),
        "{}",
        fp.reason
    );
}

#[test]
fn an_fp_flag_this_llvm_lacks_is_refused_naming_the_line_before_any_build() {
    let _lock = lock_target_dir("fp-dot");
    let td = target_dir("fp-dot");
    let runs = td.join("optimize/runs");
    let before = std::fs::read_dir(&runs).map_or(0, |d| d.count());
    let r = optimize("fp-dot", &["--spec", "unknown-flag.toml"], &[]);
    assert_eq!(r.code, Some(2), "{}", r.all());
    assert!(
        r.stderr.contains("unknown-flag.toml:6: [stages] fp: \"--enable-unsafe-fp-math\": this rustc's LLVM has no option `--enable-unsafe-fp-math`"),
        "{}",
        r.stderr
    );
    assert!(
        r.stderr
            .contains("fix: list options from `rustc -Cllvm-args=--help-hidden`"),
        "{}",
        r.stderr
    );
    assert_eq!(
        std::fs::read_dir(&runs).map_or(0, |d| d.count()),
        before,
        "a run folder was made"
    );
}

#[test]
fn a_quick_run_ends_with_a_ladder_and_apply_refuses_it_without_allow_quick() {
    let _guard = shared();
    let tmp = copy_fixture("pgo-basic");
    let dir = tmp.path();
    let td = dir.join("target");
    let td_s = td.to_str().unwrap();
    let r = run(dir, &["optimize", "--target-dir", td_s, "--quick"], &[]);
    assert_eq!(r.code, Some(0), "{}", r.all());
    assert!(
        r.stderr
            .contains("quick run: pgo only, one eval workload per name, a budget of 2m"),
        "{}",
        r.all()
    );
    // The ladder: the baseline and the pgo stage only.
    assert!(
        r.stdout.contains("baseline ") && r.stdout.contains("\npgo "),
        "{}",
        r.stdout
    );
    let report = latest_report(&td);
    assert!(report.quick);
    let names: Vec<&str> = report.stages.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names[0], "baseline");
    assert!(names[1..].iter().all(|n| *n == "pgo"), "{names:?}");
    assert_eq!(report.budget.as_ref().map(|b| b.budget_secs), Some(120.0));

    // apply refuses the quick run's winner: exit 2, the fix, nothing written.
    let manifest = std::fs::read_to_string(dir.join("Cargo.toml")).unwrap();
    let refused = run(dir, &["optimize", "apply", "--target-dir", td_s], &[]);
    assert_eq!(refused.code, Some(2), "{}", refused.all());
    assert!(
        refused.stderr.contains("was a quick run"),
        "{}",
        refused.all()
    );
    assert!(
        refused
            .stderr
            .contains("fix: run `cargo optimize` without --quick"),
        "{}",
        refused.all()
    );
    assert_eq!(
        std::fs::read_to_string(dir.join("Cargo.toml")).unwrap(),
        manifest
    );
    assert!(
        !dir.join("pgo").exists(),
        "a refused apply wrote the profile"
    );

    // --allow-quick: applied as any run (a dry run here: the diff, or nothing to apply).
    let allowed = run(
        dir,
        &[
            "optimize",
            "apply",
            "--target-dir",
            td_s,
            "--dry-run",
            "--allow-quick",
        ],
        &[],
    );
    assert_eq!(allowed.code, Some(0), "{}", allowed.all());
    assert!(
        !allowed.stderr.contains("was a quick run"),
        "{}",
        allowed.all()
    );
    // Either outcome is legitimate on pgo-basic (a small PGO gain within noise), and
    // each prints its own: a shipped pgo, the profile it would copy and the command that
    // builds with it (PGO changes no profile key, so Cargo.toml gets no diff); a pgo
    // dropped, or kept but refused at the final gate (not surely faster than the baseline
    // measured directly), that there is nothing to apply.
    let shipped = final_choice(&report).stage == "pgo";
    let said: &[&str] = if shipped {
        &["RUSTFLAGS=", "-Cprofile-use="]
    } else {
        &["nothing to apply"]
    };
    for s in said {
        assert!(allowed.all().contains(s), "{s} not in {}", allowed.all());
    }
}

#[test]
fn the_profile_search_goes_on_while_its_points_are_kept_and_thorough_builds_eight_reusing_what_it_built(
) {
    let _guard = shared();
    let tmp = copy_fixture("lto-neutral");
    let dir = tmp.path();
    let td = dir.join("target");
    let td_s = td.to_str().unwrap();
    let r = run(
        dir,
        &["optimize", "--target-dir", td_s, "--spec", "search.toml"],
        &[],
    );
    assert_eq!(r.code, Some(0), "{}", r.all());
    let report = latest_report(&td);
    let profile = rows(&report, "profile");
    let variants: Vec<Option<&str>> = profile.iter().map(|r| r.facts.variant.as_deref()).collect();
    // The search goes on only when `max` was kept and measured to within ±5 %; otherwise
    // no point after it is built, and its row says why the search stopped. Past its first
    // point only when that one was kept too.
    let max = profile[0].vs_best.expect("max was measured");
    let precise = (max.ci_high / max.ci_low).ln() / 2.0 <= 0.05f64.ln_1p();
    let why = match (profile[0].status == Status::Kept, precise) {
        (true, true) => None,
        (true, false) => Some("profile: search not run: `max` was measured to within"),
        (false, _) => Some("profile: search not run: `max` was not faster"),
    };
    match why {
        // The first point alone; the two between it and `max` only when it was kept.
        None if profile[1].status == Status::Kept => assert_eq!(
            variants,
            [
                None,
                Some("lto=thin cgu=16 O3"),
                Some("lto=fat cgu=16 O3"),
                Some("lto=thin cgu=1 O3")
            ]
        ),
        None => {
            assert_eq!(variants, [None, Some("lto=thin cgu=16 O3")], "{}", r.all());
            let stopped = "search stopped after `lto=thin cgu=16 O3`: it was not faster";
            assert!(
                profile[0].notes.iter().any(|n| n.starts_with(stopped)),
                "{:#?}",
                profile[0]
            );
            assert_eq!(r.stderr.matches(stopped).count(), 1, "{}", r.stderr);
        }
        Some(why) => {
            assert_eq!(variants, [None], "{}", r.all());
            let notes = &profile[0].notes;
            assert!(
                notes.iter().any(|n| n.contains("search not run")) && r.stderr.contains(why),
                "{}",
                r.all()
            );
            assert_eq!(
                r.stderr.matches("search not run").count(),
                1,
                "{}",
                r.stderr
            );
        }
    }
    search_rows_say_cost_and_effect(&profile);
    let before = profile.len() as u32;
    let misses = report.build_cache.unwrap().misses;

    // --thorough: all eight, whatever `max` gives; what was built before is reused.
    let r = run(
        dir,
        &[
            "optimize",
            "--target-dir",
            td_s,
            "--spec",
            "search.toml",
            "--thorough",
        ],
        &[],
    );
    assert_eq!(r.code, Some(0), "{}", r.all());
    let report = latest_report(&td);
    let profile = rows(&report, "profile");
    assert_eq!(profile.len(), 8, "{}", r.all());
    search_rows_say_cost_and_effect(&profile);
    search_points_are_raced(&profile[1..], &report, &r.stderr);
    let o = profile[1].facts.overrides.as_ref().unwrap();
    assert_eq!(o.get("lto").map(String::as_str), Some("\"thin\""));
    assert_eq!(o.get("codegen-units").map(String::as_str), Some("16"));
    assert_eq!(o.get("opt-level").map(String::as_str), Some("3"));
    assert!(
        !o.contains_key("panic"),
        "panic = abort is not allowed here"
    );
    let cache = report.build_cache.unwrap();
    assert!(cache.hits >= misses, "{cache:?} after {misses} builds");
    assert!(cache.misses <= 8 - before, "{cache:?}");
}

/// The search's points after `max` that were measured (not byte-identical to their rival)
/// were measured together: one race, said once, one `measure` step naming them all, each
/// with a row of its own.
fn search_points_are_raced(
    points: &[&cargo_optimize::testing::report::StageReport],
    report: &cargo_optimize::testing::report::Report,
    stderr: &str,
) {
    let measured = points.iter().filter(|r| r.vs_best.is_some()).count();
    if measured < 2 {
        return;
    }
    let said = format!("profile: racing {measured} setting(s) against");
    assert_eq!(stderr.matches(&said).count(), 1, "{said}\n{stderr}");
    // What ships is confirmed against the baseline on fresh pairs once the ladder is done: a
    // search point that won has that step too (`<point> vs baseline: measure`).
    let f = final_choice(report);
    let label = match &f.variant {
        Some(v) => format!("{} ({v})", f.stage),
        None => f.stage.clone(),
    };
    let confirmation = format!("{label} vs baseline: measure");
    let steps: Vec<&str> = (report.pipeline.iter())
        .map(|s| s.step.as_str())
        .filter(|s| s.starts_with("profile (lto=") && s.ends_with(": measure"))
        .filter(|s| *s != confirmation)
        .collect();
    assert_eq!(steps.len(), 1, "{steps:?}");
    assert!(steps[0].contains(" raced vs "), "{steps:?}");
    for row in points.iter().filter(|r| r.vs_best.is_some()) {
        let variant = row.facts.variant.as_deref().unwrap();
        assert!(steps[0].contains(variant), "{variant}: {steps:?}");
    }
}

/// Each setting: what it costs to build and, when built and different, its effect; a
/// winner that a cheaper build matches names it.
fn search_rows_say_cost_and_effect(profile: &[&cargo_optimize::testing::report::StageReport]) {
    for row in profile {
        let built = row.build_seconds.is_some();
        assert!(built || row.status == Status::Dropped, "{row:#?}");
        if matches!(row.status, Status::Kept) || row.vs_best.is_some() {
            assert!(row.vs_baseline.is_some() && built, "{row:#?}");
        }
    }
    for row in profile
        .iter()
        .filter(|r| r.facts.cheaper_alternative.is_some())
    {
        assert_eq!(row.status, Status::Kept);
        assert!(
            row.notes.iter().any(|n| n.contains("the cheaper choice")),
            "{row:#?}"
        );
    }
}

#[test]
fn objective_size_keeps_an_as_fast_smaller_binary_and_time_drops_it() {
    let _guard = shared();
    let tmp = copy_fixture("gate-chain");
    let dir = tmp.path();
    let td = dir.join("target");
    let td_s = td.to_str().unwrap();
    // The `size` preset (opt-level "s", thin LTO, one codegen unit, stripped) makes a much
    // smaller binary. gate-chain sleeps 60 ms as any candidate but pgo and bolt, so the two
    // are as fast as each other by construction, whatever else the machine runs (collatz
    // under a concurrent build once came out 1.280 [1.001, 1.635] for opt-level "s").
    let spec = |objective: &str| {
        format!(
            "bin = \"gate-chain\"\n[stages]\ntry = [\"profile\"]\nprofile = \"size\"\n[bench]\nmax-time = \"10s\"\nmargin = 0.4\nobjective = \"{objective}\"\n[[workload]]\nname = \"sleep\"\nargs = []\n"
        )
    };
    let profile_row = |objective: &str| {
        std::fs::write(dir.join("size.toml"), spec(objective)).unwrap();
        let r = run(
            dir,
            &["optimize", "--target-dir", td_s, "--spec", "size.toml"],
            &[],
        );
        assert_eq!(r.code, Some(0), "{}", r.all());
        let report = latest_report(&td);
        let base = rows(&report, "baseline")[0].size_bytes.unwrap();
        let row = rows(&report, "profile")[0].clone();
        assert!(row.size_bytes.unwrap() < base, "{row:#?}");
        row
    };
    let size = profile_row("size");
    assert_eq!(size.status, Status::Kept, "{size:#?}");
    assert!(size.reason.contains("kept for its size"), "{}", size.reason);
    let time = profile_row("time");
    assert_ne!(time.status, Status::Kept, "{time:#?}");

    std::fs::write(dir.join("size.toml"), spec("smallest")).unwrap();
    let r = run(dir, &["optimize", "--spec", "size.toml"], &[]);
    assert_eq!(r.code, Some(2), "{}", r.all());
    assert!(
        r.stderr.contains("size.toml:8") && r.stderr.contains("unknown objective"),
        "{}",
        r.stderr
    );
}

#[test]
fn the_instrumented_build_of_a_fat_lto_profile_leaves_lto_out_and_its_profile_still_fits() {
    let _guard = shared();
    // bolt-relink (a crate and a path dependency) built with its `fat` profile; a target
    // dir of this test's own.
    let td = target_dir("bolt-relink-fat");
    let args = [
        "optimize",
        "--target-dir",
        td.to_str().unwrap(),
        "--profile",
        "fat",
        "--stages",
        "pgo",
        "--fresh",
    ];
    let r = run(&fixture("bolt-relink"), &args, &[]);
    assert_eq!(r.code, Some(0), "{}", r.all());
    let report = latest_report(&td);
    let pgo = stage(&report, "pgo");
    let inst = pgo
        .facts
        .instrumented_rustflags
        .as_ref()
        .unwrap_or_else(|| panic!("no instrumented_rustflags: {pgo:#?}"));
    assert_eq!(
        inst.last().map(String::as_str),
        Some("-Clto=off"),
        "{inst:?}"
    );
    // The optimized build (fat LTO: its rustflags do not turn it off) found a profile for
    // every function it instrumented, the dependency's included.
    assert!(
        !settings(pgo)
            .rustflags
            .iter()
            .any(|f| f.starts_with("-Clto")),
        "{pgo:#?}"
    );
    assert_eq!(pgo.facts.functions_without_profile, Some(0), "{pgo:#?}");
    let functions = pgo.facts.profile.as_ref().map(|p| p.functions);
    assert!(functions.is_some_and(|n| n > 0), "{pgo:#?}");
    assert!(!r.stderr.contains("had no profile data"), "{}", r.stderr);
}

/// On a kept `max`, the pgo stage's work on it begins before the search's point is
/// measured: its instrumented build built and trained while the point builds beside, then
/// its optimized build started ahead; the stage takes that build when `max` stays the best.
#[test]
fn on_a_kept_max_the_pgo_build_starts_beside_the_search_and_is_taken_if_max_stays_best() {
    let _guard = shared();
    let tmp = copy_fixture("lto-helps");
    let dir = tmp.path();
    let td = dir.join("target");
    // Thirty pairs at the first look measure `max`'s gain closely enough for the search to
    // run, where a first look of four stops it (too wide).
    let spec = "bin = \"lto-helps\"\n[stages]\ntry = [\"profile\", \"pgo\"]\n\
                [bench]\nmax-time = \"4s\"\nmin-runs = 30\nbudget = \"4h\"\n\
                [[workload]]\nname = \"sum\"\nargs = [\"60000000\"]\n";
    std::fs::write(dir.join("ahead.toml"), spec).unwrap();
    let td_s = td.to_str().unwrap();
    let args = ["optimize", "--target-dir", td_s, "--spec", "ahead.toml"];
    let r = run(dir, &args, &[]);
    assert_eq!(r.code, Some(0), "{}", r.all());
    let report = latest_report(&td);
    let profile = rows(&report, "profile");
    let searched = profile.len() > 1;
    let max_stays = searched && profile[1..].iter().all(|p| p.status != Status::Kept);
    let err = r.stderr.as_str();
    let at = |line: &str| {
        err.find(line)
            .unwrap_or_else(|| panic!("no `{line}` in {err}"))
    };
    let taken = "pgo: optimized built ahead in";
    // What each legitimate outcome prints: with a search, the instrumented build on `max`
    // is built and trained before the point is taken, and the optimized build started
    // ahead is the stage's own when `max` stayed the best; without a search nothing of
    // the pgo stage starts early.
    if searched {
        let trained = at("pgo: trained on 1/1 workloads");
        assert!(at("pgo: instrumented built") < trained, "{err}");
        assert!(
            trained < at("building ahead, first, beside the run: pgo: optimized"),
            "{err}"
        );
        assert!(
            trained < at("profile (lto=thin cgu=16 O3) built ahead in"),
            "{err}"
        );
    }
    match (searched, max_stays) {
        (true, true) => assert!(err.contains(taken), "{err}"),
        // The point kept: the build started for `max` is nobody's (stopped when it was
        // still running, whichever the timer made it), and PGO builds on the point.
        (true, false) => assert!(!err.contains(taken), "{err}"),
        (false, _) => assert!(!err.contains("beside the run: pgo"), "{err}"),
    }
    if max_stays {
        let pgo = stage(&report, "pgo");
        let o = &settings(pgo).profile_overrides;
        assert_eq!(
            o.get("lto").map(String::as_str),
            Some("\"fat\""),
            "{pgo:#?}"
        );
        assert_eq!(pgo.facts.functions_without_profile, Some(0), "{pgo:#?}");
    }
}
