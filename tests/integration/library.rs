//! A library crate, optimized through its bench harness: `cargo = "bench"` workloads run the
//! executable `cargo bench` builds (`--bench` first, then the workload's filter), PGO trains
//! on it and the ladder times it. The `lib-bench` fixture has no binary at all.

use std::process::Command;

use crate::common::*;

#[test]
fn a_library_is_optimized_through_its_bench_harness() {
    let _g = lock_target_dir("lib-bench");
    let r = optimize("lib-bench", &[], &[]);
    assert_eq!(r.code, Some(0), "{}", r.all());
    let report = latest_report(&target_dir("lib-bench"));
    assert_eq!(
        (report.crate_name.as_str(), report.bin.as_str()),
        ("lib-bench", "hot")
    );
    let pgo = stage(&report, "pgo");
    assert!(
        matches!(pgo.status.as_str(), "kept" | "dropped"),
        "pgo {}: {}",
        pgo.status.as_str(),
        pgo.reason
    );
    // Trained on the harness: the library's hot function has counts.
    let functions = pgo.facts.profile.as_ref().map(|p| p.functions).unwrap_or(0);
    assert!(functions >= 2, "{functions} functions with counts");
    // What was built and timed is the bench harness.
    let baseline = target_dir("lib-bench").join("optimize/latest/bin/baseline/hot");
    let out = Command::new(&baseline)
        .args(["--bench", "large"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.starts_with("hot/large: 6135095 steps"), "{text}");
    // Its timing lines differ from run to run: only the exit status is compared. The train
    // workload is verified before measuring, the timed one on its first timed run.
    assert!(
        r.stderr.contains("pgo verified 1/1") && r.stderr.contains("pgo vs baseline measured: "),
        "{}",
        r.stderr
    );
    assert_eq!(pgo.verified, Some(true), "{pgo:#?}");
}

#[test]
fn a_bench_target_that_does_not_exist_is_named_with_the_ones_that_do() {
    let _g = shared();
    let tmp = copy_fixture("lib-bench");
    let spec = tmp.path().join("optimize.toml");
    let text = std::fs::read_to_string(&spec).unwrap();
    std::fs::write(&spec, format!("bench-target = \"cold\"\n{text}")).unwrap();
    let r = run(tmp.path(), &["optimize"], &[]);
    assert_eq!(r.code, Some(2), "{}", r.all());
    assert!(
        r.stderr.contains("no bench target named `cold`") && r.stderr.contains("one of: hot"),
        "{}",
        r.stderr
    );
}

#[test]
fn init_in_a_library_writes_bench_workloads_that_run() {
    let _g = shared();
    let tmp = copy_fixture("lib-bench");
    std::fs::remove_file(tmp.path().join("optimize.toml")).unwrap();
    let r = run(tmp.path(), &["optimize", "init"], &[]);
    assert_eq!(r.code, Some(0), "{}", r.all());
    assert!(
        r.stderr.contains("bench harness of library `lib-bench`"),
        "{}",
        r.stderr
    );
    let spec = std::fs::read_to_string(tmp.path().join("optimize.toml")).unwrap();
    assert_eq!(spec.matches("\ncargo = \"bench\"").count(), 2, "{spec}");
    let r = run(tmp.path(), &["optimize", "--stages", "none"], &[]);
    assert_eq!(r.code, Some(0), "{}", r.all());
    let report = latest_report(&tmp.path().join("target"));
    assert_eq!(report.bin, "hot");
    assert!(!r.stderr.contains("criterion"), "{}", r.stderr);

    // A criterion harness runs each benchmark for a fixed time: init says its runs are
    // measured by criterion's own estimates (a local crate named criterion stands in for it).
    let dir = tmp.path();
    std::fs::create_dir_all(dir.join("criterion/src")).unwrap();
    std::fs::write(
        dir.join("criterion/Cargo.toml"),
        "[package]\nname = \"criterion\"\nversion = \"0.5.0\"\nedition = \"2021\"\n",
    )
    .unwrap();
    std::fs::write(dir.join("criterion/src/lib.rs"), "").unwrap();
    let manifest = std::fs::read_to_string(dir.join("Cargo.toml")).unwrap();
    let manifest = manifest.replace(
        "[dependencies]\n",
        "[dependencies]\n\n[dev-dependencies]\ncriterion = { path = \"criterion\" }\n",
    );
    std::fs::write(dir.join("Cargo.toml"), manifest).unwrap();
    std::fs::remove_file(dir.join("optimize.toml")).unwrap();
    let r = run(dir, &["optimize", "init"], &[]);
    assert_eq!(r.code, Some(0), "{}", r.all());
    assert!(
        r.stderr.contains("note: the bench harness `hot` uses criterion: each run is measured by its benchmarks' own per-iteration estimates"),
        "{}",
        r.stderr
    );

    // A criterion this tool does not read is timed whole, and the run says why (the
    // version the manifest asks for, when Cargo.lock has none yet).
    std::fs::write(
        dir.join("criterion/Cargo.toml"),
        "[package]\nname = \"criterion\"\nversion = \"0.3.0\"\nedition = \"2021\"\n",
    )
    .unwrap();
    let manifest = std::fs::read_to_string(dir.join("Cargo.toml")).unwrap();
    let manifest = manifest.replace(
        "criterion = { path = \"criterion\" }",
        "criterion = { path = \"criterion\", version = \"0.3.0\" }",
    );
    std::fs::write(dir.join("Cargo.toml"), manifest).unwrap();
    let r = run(dir, &["optimize", "--dry-run"], &[]);
    assert_eq!(r.code, Some(0), "{}", r.all());
    assert!(
        r.stderr.contains("uses criterion 0.3.0: its per-iteration estimates are read from criterion 0.4 to 0.8 only"),
        "{}",
        r.stderr
    );
}

#[test]
fn a_criterion_library_gets_a_pgo_row_measured_by_its_benchmarks_estimates() {
    let _guard = shared();
    let tmp = copy_fixture("criterion-lib");
    let dir = tmp.path();
    let (r, report) = optimize_in_place(dir);
    assert!(
        r.stderr.contains("each run of the bench harness `ops` is measured by its benchmarks' own per-iteration estimates"),
        "{}",
        r.stderr
    );
    let pgo = stage(&report, "pgo");
    assert!(pgo.vs_best.is_some(), "{pgo:#?}");
    let w = report
        .workloads
        .iter()
        .find(|w| w.name == "pipeline")
        .unwrap();
    let c = w.per_stage.get("pgo").expect("pgo measured");
    let m = c.metric.as_ref().expect("criterion's metric");
    assert_eq!(m.unit, "ns/iter");
    assert_eq!(m.benchmarks, ["pipeline/short", "pipeline/long"]);
    // The figures are criterion's per-iteration estimates (tens to hundreds of µs), not the
    // harness's run time (about a second).
    assert!(m.median_a > 1e3 && m.median_a < 1e7, "{m:?}");
    assert!(
        c.samples.iter().all(|s| s.wall_secs > 0.3),
        "{:?}",
        c.samples
    );
}

/// A bench harness that panics (exit 101) on the baseline is a failure, not a status to
/// reproduce: exit 2 naming the workload, with its stderr and the fix — never "baseline
/// ran 1/1" and every candidate "verified" while it crashes (issue 61).
#[test]
fn a_bench_harness_that_panics_on_the_baseline_is_exit_2_with_its_stderr() {
    let _g = shared();
    let tmp = copy_fixture("lib-bench");
    let dir = tmp.path();
    std::fs::write(
        dir.join("benches/hot.rs"),
        "fn main() {\n    let args: Vec<String> = std::env::args().collect();\n    \
         println!(\"hot/small: 1 steps\");\n    \
         if args.iter().any(|a| a == \"large\") {\n        \
         panic!(\"the large benchmark exploded\");\n    }\n}\n",
    )
    .unwrap();
    let r = run(dir, &["optimize", "--stages", "pgo"], &[]);
    assert_eq!(r.code, Some(2), "{}", r.all());
    assert!(
        r.stderr
            .contains("workload `large` failed on the baseline (exit code 101)"),
        "{}",
        r.stderr
    );
    assert!(
        r.stderr.contains("the large benchmark exploded"),
        "{}",
        r.stderr
    );
    assert!(
        r.stderr.contains("fix: run the harness by hand"),
        "{}",
        r.stderr
    );
    assert!(!r.stderr.contains("baseline ran 2/2"), "{}", r.stderr);
}
