//! Verification end to end on real fixture crates: each fixture's build.rs sets
//! `--cfg pgo_use` when it is built with `-Cprofile-use`, so the PGO candidate differs from
//! the baseline in a known place (a stdout line, a float's last digits, an output file, a
//! crate test), and verification must catch exactly that.
//!
//! One test per fixture: tests sharing a target dir would race on `optimize/latest`.

use cargo_optimize::testing::report::{Report, Status};

use crate::common::*;

fn reason(report: &Report, stage_name: &str) -> String {
    stage(report, stage_name).reason.clone()
}

fn steps(report: &Report) -> Vec<String> {
    report.pipeline.iter().map(|s| s.step.clone()).collect()
}

fn assert_rejected(report: &Report) {
    let pgo = stage(report, "pgo");
    assert_eq!(pgo.status, Status::Rejected, "{pgo:#?}");
    assert_eq!(pgo.verified, Some(false), "{pgo:#?}");
    let fin = final_choice(report);
    assert_eq!(fin.stage, "baseline", "{fin:#?}");
}

#[test]
fn a_changed_stdout_line_is_rejected_with_its_line_number() {
    let _guard = shared();
    let r = optimize("verify-exact", &["--stages", "pgo"], &[]);
    assert_eq!(r.code, Some(0), "{}", r.all());
    assert!(
        r.stderr
            .contains("pgo rejected: its outputs differ from the baseline's"),
        "{}",
        r.stderr
    );
    let td = target_dir("verify-exact");
    let report = latest_report(&td);
    assert_rejected(&report);
    let why = reason(&report, "pgo");
    assert!(
        why.starts_with(
            "workload `report` on the pgo candidate: stdout differs at line 3, column 8:\n    \
             baseline:  mode: plain\n    candidate: mode: pgo\n    full outputs: "
        ),
        "{why}"
    );
    // The full outputs named in the reason exist.
    let run = td.join("optimize/latest");
    for s in ["baseline", "pgo", "baseline-rerun"] {
        let out = std::fs::read_to_string(run.join(format!("outputs/{s}/report.stdout"))).unwrap();
        assert!(out.starts_with("verify-exact\n"), "{s}: {out}");
    }
    // Verification costs are in the pipeline section.
    let st = steps(&report);
    for step in ["baseline: determinism check", "pgo: verify"] {
        assert!(st.iter().any(|s| s == step), "no `{step}` in {st:?}");
    }
    let first = report.workloads.first().expect("a workload");
    assert!(first.deterministic, "{first:#?}");
}

#[test]
fn float_noise_passes_numeric_and_fails_exact() {
    let _guard = shared();
    // optimize.toml: { numeric = 1e-6 } accepts the PGO build's 3e-12 relative noise.
    let r = optimize("verify-float", &["--stages", "pgo"], &[]);
    assert_eq!(r.code, Some(0), "{}", r.all());
    let td = target_dir("verify-float");
    let report = latest_report(&td);
    let pgo = stage(&report, "pgo");
    assert_eq!(pgo.verified, Some(true), "{pgo:#?}");
    assert!(
        matches!(pgo.status, Status::Kept | Status::Dropped),
        "{pgo:#?}"
    );
    let run = td.join("optimize/latest/outputs");
    let (a, b) = (
        std::fs::read_to_string(run.join("baseline/zeta.stdout")).unwrap(),
        std::fs::read_to_string(run.join("pgo/zeta.stdout")).unwrap(),
    );
    assert_ne!(
        a, b,
        "the fixture's PGO build should print other last digits"
    );

    // The same outputs verified exactly: rejected at the float's line.
    let r = optimize(
        "verify-float",
        &["--stages", "pgo", "--spec", "exact.toml"],
        &[],
    );
    assert_eq!(r.code, Some(0), "{}", r.all());
    let report = latest_report(&td);
    assert_rejected(&report);
    let why = reason(&report, "pgo");
    assert!(
        why.starts_with("workload `zeta` on the pgo candidate: stdout differs at line 2, column "),
        "{why}"
    );
    assert!(why.contains("baseline:  zeta2: 1.64"), "{why}");

    // A tolerance tighter than the noise: rejected, with the relative error.
    let r = optimize(
        "verify-float",
        &["--stages", "pgo", "--spec", "tight.toml"],
        &[],
    );
    assert_eq!(r.code, Some(0), "{}", r.all());
    let report = latest_report(&td);
    assert_rejected(&report);
    let why = reason(&report, "pgo");
    assert!(why.contains("stdout differs at line 2, column 8:"), "{why}");
    assert!(why.contains(": relative error "), "{why}");
    assert!(why.contains(" > tolerance 1e-15"), "{why}");
}

#[test]
fn a_difference_in_an_output_file_is_reported_by_file() {
    let _guard = shared();
    // The program writes out/result.txt into its cwd: run it on a copy of the fixture.
    let tmp = copy_fixture("verify-files");
    let td = target_dir("verify-files");
    let r = run(
        tmp.path(),
        &[
            "optimize",
            "--target-dir",
            td.to_str().unwrap(),
            "--stages",
            "pgo",
        ],
        &[],
    );
    assert_eq!(r.code, Some(0), "{}", r.all());
    // Baseline runs, PGO training and verification all wrote into private copies.
    assert!(
        !tmp.path().join("out").exists(),
        "a run wrote into the user's tree"
    );
    let report = latest_report(&td);
    assert_rejected(&report);
    let why = reason(&report, "pgo");
    assert!(
        why.starts_with(
            "workload `write` on the pgo candidate: file out/result.txt differs at line 2, column 8:\n    \
             baseline:  mode: plain\n    candidate: mode: pgo"
        ),
        "{why}"
    );
    // Both files are kept, and the reason names them.
    let run_dir = td.join("optimize/latest");
    for (s, mode) in [
        ("baseline", "plain"),
        ("pgo", "pgo"),
        ("baseline-rerun", "plain"),
    ] {
        let rel = format!("outputs/{s}/write.files/out/result.txt");
        let text = std::fs::read_to_string(run_dir.join(&rel)).unwrap();
        assert!(text.ends_with(&format!("mode: {mode}\n")), "{s}: {text}");
        if s != "baseline-rerun" {
            assert!(why.contains(&rel), "{why}");
        }
    }
    // Each run had its own copy of the cwd, removed afterwards.
    let sandboxes = run_dir.join("sandbox");
    let left: Vec<_> = std::fs::read_dir(&sandboxes)
        .map(|d| d.map(|e| e.unwrap().path()).collect())
        .unwrap_or_default();
    assert!(left.is_empty(), "sandboxes left behind: {left:?}");
}

#[test]
fn a_failing_crate_test_rejects_the_candidate_by_name() {
    let _guard = shared();
    // Whichever runner is installed (nextest when it is), then libtest's output.
    for runner in [None, Some("cargo")] {
        let env: Vec<(&str, &str)> = runner
            .map(|r| vec![("CARGO_OPTIMIZE_TEST_RUNNER", r)])
            .unwrap_or_default();
        let r = optimize("verify-tests", &["--stages", "pgo"], &env);
        assert_eq!(r.code, Some(0), "{}", r.all());
        assert!(
            r.stderr
                .contains("pgo rejected: the crate's own tests fail with its settings"),
            "{}",
            r.stderr
        );
        let td = target_dir("verify-tests");
        let report = latest_report(&td);
        assert_rejected(&report);
        let why = reason(&report, "pgo");
        assert!(
            why.starts_with(
                "1 of the crate's tests fail with the pgo candidate's settings: tests::parity_holds\n"
            ),
            "{runner:?}: {why}"
        );
        assert!(why.contains("the parity check changed"), "{why}");
        // With the candidate's exact settings: its profile-use flag and host target.
        assert!(why.contains("-Cprofile-use="), "{why}");
        assert!(why.contains("--target "), "{why}");
        let log = td.join("optimize/latest/tests/pgo.log");
        assert!(std::fs::read_to_string(&log)
            .unwrap()
            .contains("parity_holds"));
        // The baseline's tests were run too (they pass, so the failure is the candidate's).
        let st = steps(&report);
        for step in ["pgo: crate tests", "baseline: crate tests"] {
            assert!(st.iter().any(|s| s == step), "no `{step}` in {st:?}");
        }
    }
}

#[test]
fn a_nondeterministic_baseline_is_named_not_held_against_candidates() {
    let _guard = shared();
    let r = optimize("verify-nondet", &["--stages", "pgo", "-v"], &[]);
    assert_eq!(r.code, Some(0), "{}", r.all());
    // -v names every untimed run's command and every build's cargo command.
    assert!(r.stderr.contains("running `steady`: "), "{}", r.stderr);
    // `steady` runs on the baseline three times up front: in a private copy (does it write
    // into its cwd?), in place, and again for the determinism check. `slow-clock`'s run in
    // the copy is its observation too, and its second run is the one the candidate's
    // difference asks for.
    let baseline_runs = |args: &str| {
        r.stderr
            .matches(&format!("bin/baseline/verify-nondet {args}\n"))
            .count()
    };
    assert_eq!(baseline_runs("steady"), 3, "{}", r.stderr);
    assert_eq!(baseline_runs("clock slow"), 2, "{}", r.stderr);
    assert!(
        r.stderr.contains(" cargo build --manifest-path "),
        "{}",
        r.stderr
    );
    assert!(
        r.stderr
            .contains("workload `clock` is not deterministic: two runs of the baseline differ"),
        "{}",
        r.stderr
    );
    assert!(
        r.stderr.contains(r"ignore = '^pid \d+ at \d+$'"),
        "{}",
        r.stderr
    );
    assert!(!r.stderr.contains("workload `steady` is not deterministic"));
    // `slow-clock` (0.6 s a run) is not run twice up front: the first candidate that
    // differs on it has the baseline run it once more, and it is named then.
    assert!(
        r.stderr
            .contains("1 workload(s) of 500 ms or more a run checked only if a candidate differs"),
        "{}",
        r.stderr
    );
    assert!(
        r.stderr.contains(
            "workload `slow-clock` is not deterministic: two runs of the baseline differ"
        ),
        "{}",
        r.stderr
    );
    let named_at = |s: &str| r.stderr.find(s).unwrap_or(usize::MAX);
    assert!(
        named_at("workload `slow-clock` is not deterministic")
            > named_at("outputs differ on `slow-clock`; the baseline runs it once more"),
        "{}",
        r.stderr
    );
    let report = latest_report(&target_dir("verify-nondet"));
    let pgo = stage(&report, "pgo");
    assert_eq!(pgo.verified, Some(true), "{pgo:#?}");
    assert_ne!(pgo.status, Status::Rejected, "{pgo:#?}");
    let by_name = |n: &str| {
        report
            .workloads
            .iter()
            .find(|w| w.name == n)
            .unwrap_or_else(|| panic!("no workload {n}: {:#?}", report.workloads))
    };
    let (clock, steady) = (by_name("clock"), by_name("steady"));
    assert!(!clock.deterministic, "{clock:#?}");
    assert!(
        !by_name("slow-clock").deterministic,
        "{:#?}",
        by_name("slow-clock")
    );
    assert!(steady.deterministic, "{steady:#?}");
    let nd = clock
        .nondeterminism
        .as_ref()
        .unwrap_or_else(|| panic!("no nondeterminism: {clock:#?}"));
    assert_eq!(nd.mismatch.line, 2, "{nd:#?}");
    assert!(nd.status_stable, "{nd:#?}");
    assert!(steady.nondeterminism.is_none(), "{steady:#?}");
}

/// A workload printing 300 MB is verified from files: its output is written down as it
/// arrives and compared line by line, so the tool's own peak memory stays far below it
/// (it held every run's whole stdout: the baseline's, its determinism rerun's and each
/// candidate's). The peak is the tool's own high-water mark (`VmHWM`, which never goes
/// down), read while it runs: its builds and workloads are not counted.
#[cfg(target_os = "linux")]
#[test]
fn a_workload_printing_300_mb_is_verified_without_holding_it_in_memory() {
    let _guard = shared();
    let tmp = copy_fixture("verify-exact");
    std::fs::write(
        tmp.path().join("optimize.toml"),
        "bin = \"verify-exact\"\n\n[bench]\nmax-time = \"2s\"\n\n[[workload]]\nname = \"big\"\nargs = [\"1000\", \"300\"]\n",
    )
    .unwrap();
    let td = target_dir("verify-exact-big");
    let log = tmp.path().join("log");
    let mut child = std::process::Command::new(tool())
        .args(["optimize", "--fresh", "--stages", "profile", "--target-dir"])
        .arg(&td)
        .current_dir(tmp.path())
        .env_remove("RUSTFLAGS")
        .env_remove("CARGO_TARGET_DIR")
        .env("NO_COLOR", "1")
        .stdout(std::fs::File::create(&log).unwrap())
        .stderr(std::fs::File::create(tmp.path().join("log.err")).unwrap())
        .spawn()
        .unwrap();
    let status_file = format!("/proc/{}/status", child.id());
    let mut peak_kib = 0u64;
    let status = loop {
        if let Ok(text) = std::fs::read_to_string(&status_file) {
            let hwm = text
                .lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok());
            peak_kib = peak_kib.max(hwm.unwrap_or(0));
        }
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    let said = std::fs::read_to_string(tmp.path().join("log.err")).unwrap();
    assert!(status.success(), "{said}");
    let saved = td.join("optimize/latest/outputs/baseline/big.stdout");
    let len = std::fs::metadata(&saved).unwrap().len();
    assert!(len >= 300 << 20, "{}: {len} bytes", saved.display());
    assert!(
        peak_kib > 0 && peak_kib < 100 << 10,
        "the tool's peak memory was {} MiB for a workload printing {} MiB\n{said}",
        peak_kib >> 10,
        len >> 20
    );
}
