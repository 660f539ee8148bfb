//! The pipeline end to end on real fixture crates, with the real rustc and llvm-profdata.

use cargo_optimize::testing::report::{Report, StageReport, Status};

use crate::common::*;

#[test]
fn pgo_pipeline_builds_verifies_measures_and_reports() {
    let _guard = lock_target_dir("pgo-basic");
    let before = snapshot(&fixture("pgo-basic"));
    // --fresh: other tests ran pgo-basic before; this one must train and measure.
    let r = optimize("pgo-basic", &["--stages", "pgo", "--fresh"], &[]);
    assert_eq!(r.code, Some(0), "{}", r.all());
    // Outside a terminal, one line per finished step, none per item (issue 26, item 3).
    assert!(r.stderr.contains("pgo: trained on "), "{}", r.stderr);
    assert!(r.stderr.contains("✓ pgo verified "), "{}", r.stderr);
    assert!(r.stderr.contains("✓ baseline ran "), "{}", r.stderr);
    for item in [
        "training [",
        "verifying [",
        "running [",
        ": building",
        "measuring [",
    ] {
        assert!(!r.stderr.contains(item), "`{item}` in\n{}", r.stderr);
    }
    // The ladder: no absolute path, no line over 80 columns, one ratio wording.
    let ws = fixture("pgo-basic").display().to_string();
    assert!(!r.stdout.contains(&format!("{ws}/")), "{}", r.stdout);
    // (A path longer than a line, outside the workspace here, stays whole on its own line.)
    assert!(
        r.stdout
            .lines()
            .all(|l| l.chars().count() <= 80 || !l.trim().contains(' ')),
        "{}",
        r.stdout
    );
    assert!(
        !r.all().contains("B/A = ") && !r.stdout.contains("× the baseline"),
        "{}",
        r.all()
    );

    let td = target_dir("pgo-basic");
    let report = latest_report(&td);
    assert_eq!(report.schema, 1);
    assert_eq!(report.bin, "pgo-basic");
    // Every field of the Report is in the file (`latest_report` checks that the file is the
    // typed Report re-serialised), and filled in.
    assert!(!report.tool_version.is_empty(), "{report:#?}");
    assert!(!report.run_id.is_empty(), "{report:#?}");
    assert_eq!(report.crate_name, "pgo-basic", "{report:#?}");
    assert!(!report.toolchain.rustc.is_empty(), "{report:#?}");
    assert!(!report.stages.is_empty(), "{report:#?}");
    assert!(!report.workloads.is_empty(), "{report:#?}");
    assert!(report.final_.is_some(), "{report:#?}");
    assert!(!report.pipeline.is_empty(), "{report:#?}");
    // Builds are steps with the peak memory of cargo and its compilers (rusage of children).
    let builds: Vec<_> = (report.pipeline.iter())
        .filter(|p| p.step.ends_with(" build"))
        .collect();
    assert!(!builds.is_empty(), "{:#?}", report.pipeline);
    assert!(
        builds
            .iter()
            .any(|p| p.peak_rss_bytes.unwrap_or(0) > 10 << 20),
        "{builds:#?}"
    );
    assert!(
        report.toolchain.llvm.contains('.'),
        "{:#?}",
        report.toolchain
    );

    let base = stage(&report, "baseline");
    let pgo = stage(&report, "pgo");
    assert_eq!(pgo.verified, Some(true), "{pgo:#?}");
    assert!(
        matches!(pgo.status, Status::Kept | Status::Dropped),
        "{pgo:#?}"
    );
    // The profile was real and non-empty.
    let prof = pgo
        .facts
        .profile
        .as_ref()
        .unwrap_or_else(|| panic!("no profile: {pgo:#?}"));
    assert!(prof.functions > 0, "{prof:#?}");
    assert!(prof.max_count > 0, "{prof:#?}");
    let merged = &prof.path;
    assert!(std::fs::metadata(merged).unwrap().len() > 0);
    // The PGO binary was built with that profile and differs from the baseline.
    let flags = &settings(pgo).rustflags;
    assert!(
        flags.iter().any(|f| f.starts_with("-Cprofile-use=")),
        "{flags:?}"
    );
    let (b, p) = (
        std::fs::read(base.binary.as_deref().expect("a baseline binary")).unwrap(),
        std::fs::read(pgo.binary.as_deref().expect("a pgo binary")).unwrap(),
    );
    assert_ne!(b, p, "the PGO binary is byte-identical to the baseline");
    // Measured with an interval around the ratio.
    let vs = pgo
        .vs_best
        .as_ref()
        .unwrap_or_else(|| panic!("not measured: {pgo:#?}"));
    let (lo, ratio, hi) = (vs.ci_low, vs.ratio, vs.ci_high);
    assert!(lo <= ratio && ratio <= hi && lo > 0.0, "{vs:#?}");
    // The verdict is the one its interval gives (the default 1 % margin).
    assert_eq!(
        vs.verdict,
        cargo_optimize::testing::bench::verdict(lo, hi, 0.01),
        "{vs:#?}"
    );
    // Outputs were kept for both binaries and are equal.
    let run_dir = td.join("optimize/latest");
    for w in &report.workloads {
        let name = &w.name;
        let a = std::fs::read(run_dir.join(format!("outputs/baseline/{name}.stdout"))).unwrap();
        let c = std::fs::read(run_dir.join(format!("outputs/pgo/{name}.stdout"))).unwrap();
        assert_eq!(a, c, "workload {name}");
    }
    assert!(
        run_dir.join("bin/baseline/pgo-basic").exists()
            && run_dir.join("bin/pgo/pgo-basic").exists()
    );
    // The ladder is printed to stdout.
    assert!(
        r.stdout.contains("pgo") && r.stdout.contains("ship:"),
        "{}",
        r.stdout
    );
    // report.md and report.html beside report.json, and `report` re-renders them (and the
    // ladder the run printed) byte for byte.
    for (format, file) in [("md", "report.md"), ("html", "report.html")] {
        let written = std::fs::read_to_string(run_dir.join(file)).unwrap();
        let again = run(
            &fixture("pgo-basic"),
            &[
                "optimize",
                "report",
                run_dir.to_str().unwrap(),
                "--format",
                format,
            ],
            &[],
        );
        assert_eq!(again.code, Some(0), "{}", again.all());
        assert!(
            again.stdout == written,
            "{file} differs from `report --format {format}`"
        );
    }
    let term = run(
        &fixture("pgo-basic"),
        &["optimize", "report", run_dir.to_str().unwrap()],
        &[],
    );
    assert!(
        r.stdout.contains(&term.stdout),
        "{}\n---\n{}",
        r.stdout,
        term.stdout
    );
    assert_eq!(
        before,
        snapshot(&fixture("pgo-basic")),
        "the fixture was modified"
    );
}

/// A multi-call program (as busybox is) does its work only under its own file name: every
/// candidate runs as `bin/<tag>/<name>` (issue 61, item 6), so the baseline runs, PGO trains
/// on the instrumented build and the pgo build is verified and measured. Before, each ran as
/// `bin/<tag>`, and the baseline exited 3 ("no applet named `baseline`").
#[test]
fn a_program_that_reads_its_own_name_runs_under_it_as_every_candidate() {
    let _guard = lock_target_dir("argv0-name");
    let r = optimize("argv0-name", &["--stages", "pgo"], &[]);
    assert_eq!(r.code, Some(0), "{}", r.all());
    assert!(!r.all().contains("no applet named"), "{}", r.all());
    let report = latest_report(&target_dir("argv0-name"));
    let pgo = stage(&report, "pgo");
    assert_eq!(pgo.verified, Some(true), "{pgo:#?}");
    assert!(
        matches!(pgo.status, Status::Kept | Status::Dropped),
        "{pgo:#?}"
    );
    let binary = pgo.binary.as_deref().expect("a pgo binary");
    assert!(binary.ends_with("/bin/pgo/argv0-name"), "{binary}");
    let run_dir = target_dir("argv0-name").join("optimize/latest");
    for tag in ["baseline", "pgo-instrumented", "pgo"] {
        let file = run_dir.join("bin").join(tag).join("argv0-name");
        assert!(file.is_file(), "{}", file.display());
    }
    let shipped = &final_choice(&report).binary;
    assert!(shipped.ends_with("/argv0-name"), "{shipped}");
}

#[test]
fn a_pgo_build_that_changes_output_is_rejected() {
    let _guard = shared();
    let r = optimize("cfg-changes", &["--stages", "pgo"], &[]);
    assert_eq!(r.code, Some(0), "{}", r.all());
    assert!(r.stderr.contains("pgo rejected"), "{}", r.stderr);
    assert!(
        r.stderr.contains("mode: plain") && r.stderr.contains("mode: pgo"),
        "{}",
        r.stderr
    );
    let report = latest_report(&target_dir("cfg-changes"));
    let pgo = stage(&report, "pgo");
    assert_eq!(pgo.status, Status::Rejected, "{pgo:#?}");
    assert_eq!(pgo.verified, Some(false), "{pgo:#?}");
    assert!(pgo.reason.contains("line 1"), "{pgo:#?}");
    assert_eq!(final_choice(&report).stage, "baseline");
}

#[test]
fn user_rustflags_from_cargo_config_reach_every_build() {
    let _guard = shared();
    // The fixture's .cargo/config.toml sets `--cfg user_flag`; cargo reads it from the
    // current directory, and so must we.
    let r = optimize("rustflags", &["--stages", "pgo"], &[]);
    assert_eq!(r.code, Some(0), "{}", r.all());
    let td = target_dir("rustflags");
    let report = latest_report(&td);
    for s in ["baseline", "pgo"] {
        let flags = &settings(stage(&report, s)).rustflags;
        assert!(
            flags.windows(2).any(|w| w == ["--cfg", "user_flag"]),
            "{s}: {flags:?}"
        );
        let out = std::fs::read_to_string(td.join(format!(
            "optimize/latest/outputs/{s}/{}.stdout",
            first_workload(&report)
        )))
        .unwrap();
        assert!(out.contains("user_flag: on"), "{s}: {out}");
    }
    // The instrumented build kept them too.
    let pgo = stage(&report, "pgo");
    let inst = pgo
        .facts
        .instrumented_rustflags
        .as_ref()
        .unwrap_or_else(|| panic!("no instrumented_rustflags: {pgo:#?}"));
    assert!(
        inst.windows(2).any(|w| w == ["--cfg", "user_flag"]),
        "{inst:?}"
    );
}

#[test]
fn user_rustflags_from_the_environment_are_kept_and_absent_ones_are_not_invented() {
    let _guard = shared();
    let elsewhere = tempfile::tempdir().unwrap();
    let manifest = fixture("rustflags").join("Cargo.toml");
    let td = target_dir("rustflags-env");
    let args = [
        "--manifest-path",
        manifest.to_str().unwrap(),
        "--target-dir",
        td.to_str().unwrap(),
        "--stages",
        "none",
        "--fresh",
    ];
    // From a folder without the config: off, unless RUSTFLAGS says so.
    let off = run(elsewhere.path(), &args, &[]);
    assert_eq!(off.code, Some(0), "{}", off.all());
    let report = latest_report(&td);
    let w = first_workload(&report);
    let out =
        std::fs::read_to_string(td.join(format!("optimize/latest/outputs/baseline/{w}.stdout")))
            .unwrap();
    assert!(out.contains("user_flag: off"), "{out}");

    let on = run(elsewhere.path(), &args, &[("RUSTFLAGS", "--cfg user_flag")]);
    assert_eq!(on.code, Some(0), "{}", on.all());
    let out =
        std::fs::read_to_string(td.join(format!("optimize/latest/outputs/baseline/{w}.stdout")))
            .unwrap();
    assert!(out.contains("user_flag: on"), "{out}");
}

fn first_workload(report: &Report) -> String {
    report
        .workloads
        .first()
        .unwrap_or_else(|| panic!("no workloads: {report:#?}"))
        .name
        .clone()
}

#[test]
fn value_profile_counter_exhaustion_is_collapsed_and_cured() {
    let _guard = shared();
    let r = optimize("vp-counters", &["--stages", "pgo"], &[]);
    assert_eq!(r.code, Some(0), "{}", r.all());
    let report = latest_report(&target_dir("vp-counters"));
    let pgo = stage(&report, "pgo");
    let notes = pgo.notes.join("\n");
    assert!(notes.contains("vp-counters-per-site"), "{pgo:#?}");
    assert!(
        matches!(pgo.facts.vp_counters_per_site, Some(Some(_))),
        "{pgo:#?}"
    );
    // One line per distinct warning, never thousands.
    let warning_lines = r
        .stderr
        .lines()
        .filter(|l| l.contains("Running out of static counters"))
        .count();
    assert!(warning_lines <= 2, "{}", r.stderr);
    // Its one workload trains and is timed: the eval coverage pass would only rerun it.
    assert!(
        r.stderr
            .contains("eval coverage not measured: every eval workload is also a train workload"),
        "{}",
        r.stderr
    );
    assert!(pgo.facts.profile_quality.is_none(), "{pgo:#?}");
    assert!(!report
        .pipeline
        .iter()
        .any(|s| s.step.contains("eval coverage")));
}

#[test]
fn a_program_that_aborts_produces_no_profile_and_the_stage_fails_explained() {
    let _guard = shared();
    let r = optimize("abort-exit", &["--stages", "pgo"], &[]);
    assert_eq!(r.code, Some(1), "{}", r.all());
    assert!(r.stderr.contains("no profile"), "{}", r.stderr);
    assert!(r.stderr.contains("abort"), "{}", r.stderr);
    let report = latest_report(&target_dir("abort-exit"));
    let pgo = stage(&report, "pgo");
    assert_eq!(pgo.status, Status::Failed, "{pgo:#?}");
    assert_eq!(final_choice(&report).stage, "baseline");
}

#[test]
fn works_as_a_cargo_subcommand() {
    let _guard = shared();
    let dir = tool().parent().unwrap().to_path_buf();
    let path = format!(
        "{}:{}",
        dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = std::process::Command::new("cargo")
        .args(["optimize", "--help"])
        .env("PATH", path)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains("Usage: cargo optimize"), "{text}");
    assert!(text.contains("doctor"), "{text}");
}

#[test]
fn an_unchanged_rerun_reuses_the_verdicts_and_fresh_measures_again() {
    let _guard = shared();
    let td = target_dir("verdict-cache");
    let _ = std::fs::remove_dir_all(&td);
    let args = ["--stages", "pgo"];
    let first = optimize_in(&td, &args);
    assert_eq!(first.code, Some(0), "{}", first.all());
    let counts = |td: &std::path::Path| latest_report(td).verdict_cache.unwrap();
    assert_eq!(counts(&td).hits, 0);
    let measured = counts(&td).misses;
    assert!(measured >= 2, "{measured}");
    let first_report = latest_report(&td);

    let again = optimize_in(&td, &args);
    assert_eq!(again.code, Some(0), "{}", again.all());
    let c = counts(&td);
    assert_eq!((c.hits, c.misses), (measured, 0), "{}", again.stderr);
    assert!(
        again.stderr.contains("kept from an earlier run"),
        "{}",
        again.stderr
    );
    assert!(!again.stderr.contains(" measured: "), "{}", again.stderr);
    // The same ladder: the same rows with the same verdicts and ratios.
    let rows = |r: &Report| -> Vec<String> {
        r.stages
            .iter()
            .map(|s| {
                format!(
                    "{} {:?} {:?} {:?}",
                    s.name, s.status, s.vs_best, s.vs_baseline
                )
            })
            .collect()
    };
    assert_eq!(rows(&first_report), rows(&latest_report(&td)));

    let fresh = optimize_in(&td, &["--stages", "pgo", "--fresh"]);
    assert_eq!(fresh.code, Some(0), "{}", fresh.all());
    assert_eq!(counts(&td).hits, 0, "{}", fresh.stderr);

    // A comparison measured anew (another max-time) of candidates whose outputs were checked
    // before records the baseline's outputs inside it, when its first timed runs need them:
    // each second is counted once in the time by part.
    for max_time in ["30s", "3s"] {
        let more = optimize_in(&td, &["--stages", "cpu", "--max-time", max_time]);
        assert_eq!(more.code, Some(0), "{}", more.all());
    }
    let steps = latest_report(&td).pipeline;
    let total = steps.iter().find(|s| s.step == "total").unwrap().seconds;
    let parts: f64 = (steps.iter().filter(|s| s.step != "total"))
        .map(|s| s.seconds)
        .sum();
    assert!(
        parts <= total + 0.05,
        "{parts} s of parts in {total} s: {steps:#?}"
    );
}

#[test]
fn an_unchanged_rerun_redoes_nothing_and_a_changed_source_redoes_what_depends_on_it() {
    let _guard = shared();
    let krate = copy_fixture("pgo-basic");
    let dir = krate.path();
    let args = ["optimize", "--stages", "pgo,bolt"];
    let first = run(dir, &args, &[]);
    assert_eq!(first.code, Some(0), "{}", first.all());
    let td = dir.join("target");
    let rows = |r: &Report| -> Vec<String> {
        let row = |s: &StageReport| format!("{} {:?} {:?}", s.name, s.status, s.vs_best);
        r.stages.iter().map(row).collect()
    };
    let first_rows = rows(&latest_report(&td));
    let measured = latest_report(&td).verdict_cache.unwrap().misses;

    // A file touched but not changed (cargo would rebuild on its mtime) and no change at
    // all: nothing is built, trained, BOLTed, verified or measured.
    let main_rs = dir.join("src/main.rs");
    let text = std::fs::read_to_string(&main_rs).unwrap();
    std::fs::write(&main_rs, &text).unwrap();
    let again = run(dir, &args, &[]);
    assert_eq!(again.code, Some(0), "{}", again.all());
    for busy in [
        " built (",
        " built ahead in ",
        "trained on ",
        " verified ",
        " measured: ",
        "baseline ran ",
        "bolt: optimized",
    ] {
        assert!(
            !again.stderr.contains(busy),
            "`{busy}` in\n{}",
            again.stderr
        );
    }
    // A build is said `built (…)`, or `built ahead in …` when it ran beside the run.
    let builds =
        first.stderr.matches(" built (").count() + first.stderr.matches(" built ahead in ").count();
    assert!(builds >= 3, "{}", first.stderr);
    assert_eq!(again.stderr.matches("build reused").count(), builds);
    // The budget knows it: the builds the ladder will likely ask for cost it nothing (the
    // first run's projection had nothing to say so of).
    let cached = "100 % of the likely builds are in the build cache";
    assert!(again.stderr.contains(cached), "{}", again.stderr);
    assert!(
        !first.stderr.contains("likely builds are in"),
        "{}",
        first.stderr
    );
    assert!(
        again.stderr.contains("bolt: reused the BOLTed binary"),
        "{}",
        again.stderr
    );
    let c = latest_report(&td).verdict_cache.unwrap();
    assert_eq!((c.hits, c.misses), (measured, 0));
    assert_eq!(rows(&latest_report(&td)), first_rows);

    // A real change (one the workloads' outputs do not see): everything built from that
    // file is built, trained and measured again.
    std::fs::write(&main_rs, text.replace("\"1000\"", "\"1001\"")).unwrap();
    let changed = run(dir, &args, &[]);
    assert_eq!(changed.code, Some(0), "{}", changed.all());
    assert!(
        !changed.stderr.contains("build reused"),
        "{}",
        changed.stderr
    );
    assert!(
        changed.stderr.contains("pgo: trained on "),
        "{}",
        changed.stderr
    );
    let c = latest_report(&td).verdict_cache.unwrap();
    assert_eq!(c.hits, 0, "{}", changed.stderr);
}

#[test]
fn two_runs_at_once_share_the_cache_and_a_third_reuses_what_they_kept() {
    let _guard = shared();
    let krate = copy_fixture("pgo-basic");
    let dir = krate.path().to_path_buf();
    let args = ["optimize", "--stages", "pgo"];
    let both: Vec<Run> = (0..2)
        .map(|_| {
            let dir = dir.clone();
            std::thread::spawn(move || run(&dir, &args, &[]))
        })
        .collect::<Vec<_>>()
        .into_iter()
        .map(|t| t.join().unwrap())
        .collect();
    let mut folders = Vec::new();
    for r in &both {
        assert_eq!(r.code, Some(0), "{}", r.all());
        let folder = r
            .stderr
            .lines()
            .find_map(|l| l.split_once(") → ").map(|(_, f)| f.trim().to_string()))
            .unwrap_or_else(|| panic!("{}", r.stderr));
        // Announced relative to the workspace (the crate's own target dir is in it).
        read_report(&dir.join(&folder).join("report.json"));
        folders.push(folder);
    }
    assert_ne!(folders[0], folders[1], "each run has its own folder");
    // What they kept is whole and usable: a third run builds, trains and measures nothing.
    let third = run(&dir, &args, &[]);
    assert_eq!(third.code, Some(0), "{}", third.all());
    for busy in [" built (", "trained on ", " measured: "] {
        assert!(
            !third.stderr.contains(busy),
            "`{busy}` in\n{}",
            third.stderr
        );
    }
    let c = latest_report(&dir.join("target")).verdict_cache.unwrap();
    assert!(c.hits > 0 && c.misses == 0, "{c:?}");
}

#[test]
fn a_stale_pgo_profile_in_your_rustflags_is_named_with_how_stale_it_is() {
    let _guard = shared();
    let krate = copy_fixture("pgo-basic");
    let dir = krate.path();
    let trained = run(dir, &["optimize", "--stages", "pgo"], &[]);
    assert_eq!(trained.code, Some(0), "{}", trained.all());
    let report = latest_report(&dir.join("target"));
    let fit = stage(&report, "pgo").facts.profile_fit.clone().unwrap();
    assert_eq!(
        fit.changed_functions, 0,
        "a fresh profile fits its own build"
    );
    assert!(fit.profile_functions.unwrap() > 0);
    let host = report.toolchain.host.clone();

    // The program's control flow changes after the profile was trained.
    let main_rs = dir.join("src/main.rs");
    let text = std::fs::read_to_string(&main_rs).unwrap();
    let arm = "        State::Plateau if x % 3 == 0 => State::Peak,\n";
    assert!(text.contains(arm));
    let changed = text.replace(
        arm,
        &format!("{arm}        State::Plateau if x % 7 == 1 && prev > 9 => State::Rising,\n"),
    );
    std::fs::write(&main_rs, changed).unwrap();
    let flags = format!("-Cprofile-use={}", fit.profile.display());
    let r = run(
        dir,
        &["optimize", "--stages", "none", "--target", &host],
        &[("RUSTFLAGS", &flags)],
    );
    assert_eq!(r.code, Some(0), "{}", r.all());
    assert!(r.stderr.contains("is stale"), "{}", r.stderr);
    let base = latest_report(&dir.join("target"));
    let stale = stage(&base, "baseline").facts.profile_fit.clone().unwrap();
    assert!(stale.changed_functions >= 1, "{stale:?}");
    assert!(stale.discarded_counts > 0, "{stale:?}");
    assert_eq!(stale.profile_functions, fit.profile_functions);
    let note = stage(&base, "baseline").notes.join("\n");
    assert!(
        note.contains(&format!("{} of ", stale.changed_functions)) && note.contains("fix:"),
        "{note}"
    );
}

/// The pipeline on pgo-basic with its own target dir.
fn optimize_in(td: &std::path::Path, extra: &[&str]) -> Run {
    let mut args = vec!["optimize", "--target-dir", td.to_str().unwrap()];
    args.extend_from_slice(extra);
    run(&fixture("pgo-basic"), &args, &[])
}

#[test]
fn cache_stats_and_clear_see_what_a_run_kept_and_clear_waits_for_no_run() {
    let _guard = shared();
    let td = target_dir("cache-command");
    let _ = std::fs::remove_dir_all(&td);
    let r = optimize_in(&td, &["--stages", "pgo"]);
    assert_eq!(r.code, Some(0), "{}", r.all());
    let cache = |action: &[&str]| {
        let mut args = vec!["optimize", "cache"];
        args.extend_from_slice(action);
        args.extend(["--target-dir", td.to_str().unwrap()]);
        run(&fixture("pgo-basic"), &args, &[])
    };
    let stats = cache(&["stats"]);
    assert_eq!(stats.code, Some(0), "{}", stats.all());
    let json = cache(&["stats", "--format", "json"]);
    let v: serde_json::Value = serde_json::from_str(&json.stdout).expect("cache stats JSON");
    let kinds = v["kinds"].as_array().expect("kinds");
    let verdicts = kinds
        .iter()
        .find(|k| k["kind"] == "verdicts")
        .expect("verdicts");
    assert!(verdicts["entries"].as_u64() >= Some(2), "{v}");
    let entries = |out: &str, kind: &str| -> u64 {
        out.lines()
            .find(|l| l.starts_with(kind))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("no {kind} line in\n{out}"))
    };
    assert!(entries(&stats.stdout, "verdicts") >= 2, "{}", stats.stdout);
    assert!(entries(&stats.stdout, "builds") >= 3, "{}", stats.stdout);
    assert_eq!(entries(&stats.stdout, "trainings"), 1, "{}", stats.stdout);

    // Refused while a run holds the folder, like clean.
    let lock = std::fs::File::create(td.join("optimize.lock")).unwrap();
    lock.lock_shared().unwrap();
    let refused = cache(&["clear"]);
    assert_eq!(refused.code, Some(2), "{}", refused.all());
    assert!(
        refused.stderr.contains("in use by a running"),
        "{}",
        refused.stderr
    );
    drop(lock);

    let cleared = cache(&["clear"]);
    assert_eq!(cleared.code, Some(0), "{}", cleared.all());
    let after = cache(&["stats"]).stdout;
    for kind in ["builds", "profiles", "trainings", "verdicts"] {
        assert_eq!(entries(&after, kind), 0, "{after}");
    }
    // The run's own folder and report stay.
    assert!(td.join("optimize/latest/report.json").is_file());
    let bad = cache(&["gc", "--max-size", "lots"]);
    assert_eq!(bad.code, Some(2), "{}", bad.all());
    assert!(
        bad.stderr.contains("fix: a size such as 500M"),
        "{}",
        bad.stderr
    );
}

#[test]
fn a_run_trims_what_it_keeps_to_the_specs_cache_max_size() {
    let _guard = shared();
    let td = target_dir("cache-max-size");
    let _ = std::fs::remove_dir_all(&td);
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("optimize.toml");
    let text = std::fs::read_to_string(fixture("pgo-basic").join("optimize.toml")).unwrap();
    std::fs::write(&spec, format!("{text}\n[cache]\nmax-size = \"1K\"\n")).unwrap();
    std::fs::copy(
        fixture("pgo-basic").join("input.txt"),
        dir.path().join("input.txt"),
    )
    .unwrap();
    let spec_s = spec.to_str().unwrap();
    let r = optimize_in(&td, &["--stages", "pgo", "--spec", spec_s]);
    assert_eq!(r.code, Some(0), "{}", r.all());
    assert!(
        r.stderr.contains("least recently used entries") && r.stderr.contains("[cache] max-size"),
        "{}",
        r.stderr
    );
    // Builds (many KiB each) are gone; the run itself and its report stay.
    assert_eq!(
        std::fs::read_dir(td.join("optimize/build")).map_or(0, |d| d.count()),
        0
    );
    assert!(td.join("optimize/latest/report.json").is_file());
}

/// The run's budget (issue 24): `--budget 0s` is bad input; `--dry-run` builds nothing and
/// says what the last run cost; a run projects its cost once the baseline is run and keeps
/// the projection; a budget that cannot pay for a stage leaves it untried, ships the best so
/// far, and says which stages and how to try them (exit 0: not a failure).
#[test]
fn a_budget_bounds_the_run_and_says_what_it_did_not_try_and_a_dry_run_builds_nothing() {
    let _g = shared();
    let td = tempfile::tempdir().unwrap();
    let dir = fixture("pgo-basic");
    let with = |extra: &[&str]| {
        let mut args = vec!["optimize", "--target-dir", td.path().to_str().unwrap()];
        args.extend_from_slice(extra);
        run(&dir, &args, &[])
    };
    let r = with(&["--budget", "0s"]);
    assert_eq!(r.code, Some(2), "{}", r.all());
    assert!(
        r.stderr.contains("`--budget` must be longer than zero"),
        "{}",
        r.stderr
    );

    let r = with(&["--dry-run"]);
    assert_eq!(r.code, Some(0), "{}", r.all());
    assert!(
        r.stdout
            .contains("stages: profile → cpu → pgo → alloc → bolt"),
        "{}",
        r.stdout
    );
    assert!(
        r.stdout.contains("budget 15m") && r.stdout.contains("no earlier run"),
        "{}",
        r.stdout
    );
    assert!(
        !td.path().join("optimize/build").exists(),
        "a dry run built"
    );

    let r = with(&["--stages", "profile"]);
    assert!(matches!(r.code, Some(0)), "{}", r.all());
    // The profile candidate builds beside the baseline, and the ladder takes that build;
    // the search's points wait for `max`'s verdict.
    let ahead = r.stderr.find("building ahead, beside the run: profile\n");
    let taken = r.stderr.find("profile built ahead in ");
    let measured = r.stderr.find("profile vs baseline measured");
    assert!(
        ahead.is_some() && ahead < taken && taken < measured,
        "{}",
        r.stderr
    );
    assert!(r.stderr.contains("projection: "), "{}", r.stderr);
    let report = latest_report(td.path());
    let b = report.budget.as_ref().expect("the budget is recorded");
    assert_eq!(b.budget_secs, 900.0);
    let p = b.projection.as_ref().expect("a projection");
    // The profile stage's search: `max` and, at most, three more settings.
    assert_eq!(p.builds, 4.0, "{p:?}");
    assert!(p.total()[0] > 0.0 && p.total()[0] <= p.total()[1], "{p:?}");

    assert!(
        r.stderr.contains("(from the baseline's times)"),
        "{}",
        r.stderr
    );
    let r = with(&["--dry-run"]);
    assert!(
        r.stdout.contains("the last run (") && r.stdout.contains("took"),
        "{}",
        r.stdout
    );
    // Before the first build, from the last run's times.
    let r = with(&["--stages", "profile", "--fresh"]);
    let early = r.stderr.find("(from the last run's times;");
    let built = r.stderr.find("baseline built");
    assert!(early.is_some() && early < built, "{}", r.stderr);

    // A budget spent by the baseline alone: nothing else is tried, the baseline ships.
    let r = with(&["--budget", "1ms", "--stages", "cpu,pgo", "--fresh"]);
    assert_eq!(r.code, Some(0), "{}", r.all());
    assert!(!r.stderr.contains("building ahead"), "{}", r.stderr);
    // The projection counts only what the budget pays for, and names the rest.
    assert!(
        r.stderr
            .contains("cpu, pgo do not fit in the budget (the whole ladder: "),
        "{}",
        r.stderr
    );
    assert!(
        r.stderr.contains("not tried for lack of time: cpu, pgo")
            && r.stderr.contains("fix: give the run more time (--budget"),
        "{}",
        r.stderr
    );
    let report = latest_report(td.path());
    assert_eq!(report.budget.as_ref().unwrap().not_tried, ["cpu", "pgo"]);
    let pgo = stage(&report, "pgo");
    assert_eq!(pgo.status, Status::Skipped, "{pgo:?}");
    assert!(
        pgo.reason.starts_with("not tried: ") && pgo.reason.contains("fix: --budget"),
        "{}",
        pgo.reason
    );
    assert_eq!(final_choice(&report).stage, "baseline");
}

/// Issue 36, item 16: a run of a project without a Cargo.lock leaves none behind (cargo
/// would), builds with the one it made, and a rerun reuses those builds.
#[test]
fn a_project_without_a_lock_file_is_left_without_one_and_a_rerun_reuses_its_builds() {
    let _guard = shared();
    let krate = copy_fixture("pgo-basic");
    let dir = krate.path();
    std::fs::remove_file(dir.join("Cargo.lock")).unwrap();
    let args = ["optimize", "--stages", "none"];
    for reused in [false, true] {
        let r = run(dir, &args, &[]);
        assert_eq!(r.code, Some(0), "{}", r.all());
        assert!(!dir.join("Cargo.lock").exists(), "{}", r.stderr);
        assert!(
            r.stderr.contains("the project has no Cargo.lock"),
            "{}",
            r.stderr
        );
        assert_eq!(r.stderr.contains("build reused"), reused, "{}", r.stderr);
    }
}

/// A train workload naming a folder too large to key (more than 1 GiB of files: one sparse
/// file, so nothing is written or read): the training cannot be kept for later runs, and
/// the run says so with the fix, instead of training again silently on every run.
#[test]
fn a_training_too_large_to_key_is_said_with_the_fix() {
    let _guard = shared();
    let tmp = copy_fixture("pgo-basic");
    let dir = tmp.path();
    let big = dir.join("big");
    std::fs::create_dir(&big).unwrap();
    let sparse = std::fs::File::create(big.join("sparse.bin")).unwrap();
    sparse.set_len((1 << 30) + 1).unwrap();
    // pgo-basic reads its first argument only; the folder is named, not read.
    let spec = "bin = \"pgo-basic\"\n\n[bench]\nmax-time = \"1s\"\n\n[[workload]]\nname = \"train\"\nargs = [\"80000\", \"big\"]\nuse = [\"train\"]\n\n[[workload]]\nname = \"eval\"\nargs = [\"120000\"]\nuse = [\"eval\"]\nexpect = \"exact\"\n";
    std::fs::write(dir.join("big.toml"), spec).unwrap();
    let td = dir.join("target");
    let r = optimize_into(dir, &td, &["--spec", "big.toml", "--stages", "pgo"]);
    assert!(matches!(r.code, Some(0 | 1)), "{}", r.all());
    let said = "pgo: the training is not kept for later runs, so an unchanged re-run trains again";
    assert_eq!(r.stderr.matches(said).count(), 1, "{}", r.stderr);
    assert!(r.stderr.contains("holds more than 1.0 GiB"), "{}", r.stderr);
    assert!(
        r.stderr.contains("fix: point it at fewer files"),
        "{}",
        r.stderr
    );
}
