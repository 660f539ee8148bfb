//! The measurement engine against a real program: tests/fixtures/spin, built with cargo.
//!
//! Each test keeps its benchmarking to a few seconds, and takes `common::exclusive()`: it
//! runs alone, with no other test of the binary (builds, pipeline runs, other benchmarks)
//! disturbing its timings (CI has 2 cores).

use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Duration;

use cargo_optimize::testing::bench::{
    self, BenchError, BenchOptions, Comparison, Estimate, Side, Verdict,
};
use cargo_optimize::testing::process::{self, Command};

use crate::common::exclusive;

/// The fixture binary, built once per test run.
fn spin() -> &'static Path {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let target = Path::new(env!("CARGO_TARGET_TMPDIR")).join("spin-target");
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        let out = process::run(
            &Command::new(PathBuf::from(cargo))
                .args(["build", "--release", "--quiet", "--manifest-path"])
                .arg(root.join("tests/fixtures/spin/Cargo.toml"))
                .arg("--target-dir")
                .arg(&target),
        )
        .expect("cargo runs");
        assert!(
            out.status.success(),
            "building the fixture failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        target.join("release/spin")
    })
}

fn opts(max_secs: u64) -> BenchOptions {
    BenchOptions {
        warmup: 2,
        min_pairs: 10,
        max_pairs: 400,
        max_time: Duration::from_secs(max_secs),
        margin: 0.01,
        seed: 42,
        only_faster: false,
        pairs_past_max_time: 0,
        estimator: Default::default(),
        in_turns: false,
    }
}

/// [`opts`] for a few pairs: one warm-up pair, 4 pairs before the first look, at most
/// `max_pairs`.
fn few_pairs(max_pairs: u32, max_secs: u64) -> BenchOptions {
    BenchOptions {
        warmup: 1,
        min_pairs: 4,
        max_pairs,
        ..opts(max_secs)
    }
}

fn work(units: &str) -> Command {
    Command::new(spin()).args(["work", units])
}

#[test]
fn a_vs_a_is_never_faster_or_slower() {
    let cmd = work("25");
    let _guard = exclusive();
    let c = bench::compare(&cmd, &cmd, &opts(4), &mut |_| {}).unwrap();
    eprintln!("A vs A: {} ({:.1} s)", c.headline(), c.elapsed_secs);
    assert!(
        matches!(
            c.estimate.verdict,
            Verdict::Equivalent | Verdict::Inconclusive
        ),
        "{}",
        c.headline()
    );
    assert!(c.n >= 10);
    assert!(
        c.estimate.ci_low <= 1.0 + 0.05 && c.estimate.ci_high >= 1.0 - 0.05,
        "{}",
        c.headline()
    );
}

#[test]
fn twice_the_work_is_slower() {
    let a = work("20");
    let b = work("40");
    let _guard = exclusive();
    let mut updates = 0;
    let c = bench::compare(&a, &b, &opts(4), &mut |_| updates += 1).unwrap();
    eprintln!("2x work: {} ({:.1} s)", c.headline(), c.elapsed_secs);
    // Planted 2×: surely slower whatever the load. How close to 2 the estimate lands, and
    // how wide its interval is, is the machine's noise (a loaded suite gave 2.296 [1.427,
    // 3.695]): only a wide, honest band is asserted.
    assert_eq!(c.estimate.verdict, Verdict::Slower, "{}", c.headline());
    assert!((1.4..3.0).contains(&c.estimate.ratio), "{}", c.headline());
    assert!(c.estimate.ci_low > 1.0, "{}", c.headline());
    assert!(updates > 0);
    assert_eq!(c.samples.len() as u32, 2 * c.n);
    assert!(c
        .samples
        .iter()
        .all(|r| r.status.success() && r.wall_secs > 0.0));
}

/// Both runs of a pair on one CPU when the program keeps one core busy at a time (the
/// cores of a shared VM differ, and not for long), never when it uses several at once
/// (pinned, it would be serialized). Only Linux pins, and only with two CPUs or more.
///
/// The rule, not the luck: without warm-up the first two timed runs decide, unpinned, and
/// a comparison is pinned exactly when neither kept more than 1.2 cores busy. A two-thread
/// program on a loaded machine may not find a second core free; then it ran as one core's
/// and is pinned by the same rule, which is what is asserted.
#[test]
fn a_single_threaded_workload_is_pinned_and_a_multi_threaded_one_is_not() {
    let cpus = std::thread::available_parallelism().map_or(1, usize::from);
    let pins = cfg!(target_os = "linux") && cpus >= 2;
    let one = work("10");
    let many = Command::new(spin()).args(["threads", "2", "20"]);
    let _guard = exclusive();
    let o = BenchOptions {
        warmup: 0,
        ..few_pairs(8, 3)
    };
    let decided = |c: &Comparison| {
        let mut first = c.samples.iter().take(2);
        pins && !first.any(|r| (r.user_secs + r.sys_secs) > 1.2 * r.wall_secs)
    };
    for (name, cmd) in [("one thread", &one), ("two threads", &many)] {
        let c = bench::compare(cmd, cmd, &o, &mut |_| {}).unwrap();
        assert_eq!(
            c.pinned,
            decided(&c),
            "{name}, {cpus} CPUs: {:?}",
            c.samples
        );
    }
    // A single-threaded program never keeps two cores busy: pinned wherever pinning is.
    let c = bench::compare(&one, &one, &o, &mut |_| {}).unwrap();
    assert_eq!(c.pinned, pins, "{cpus} CPUs: {}", c.headline());
    // A workload's `pin = false`.
    let never = work("10").pinnable(false);
    let c = bench::compare(&never, &never, &o, &mut |_| {}).unwrap();
    assert!(!c.pinned, "{}", c.headline());
}

#[test]
fn doubling_through_the_environment_is_slower() {
    // Same binary, same args: only SPIN_FACTOR differs.
    let a = work("15");
    let b = work("15").env("SPIN_FACTOR", "2");
    let _guard = exclusive();
    let c = bench::compare(&a, &b, &opts(3), &mut |_| {}).unwrap();
    assert_eq!(c.estimate.verdict, Verdict::Slower, "{}", c.headline());
}

#[test]
fn peak_rss_is_reported() {
    let cmd = Command::new(spin()).args(["alloc", "64"]);
    let _guard = exclusive();
    let o = few_pairs(4, 2);
    let c = bench::compare(&cmd, &cmd, &o, &mut |_| {}).unwrap();
    let mib = |b: f64| b / (1024.0 * 1024.0);
    for s in [c.rss.a, c.rss.b] {
        assert!(
            (mib(s.median) / 64.0 - 1.0).abs() < 0.10,
            "peak RSS {:.1} MiB",
            mib(s.median)
        );
    }
    assert!(c.samples.iter().all(|r| r.max_rss_bytes > 60 << 20));
}

#[test]
fn a_failing_side_is_named_with_its_stderr() {
    let ok = work("1");
    let bad = Command::new(spin()).arg("fail");
    let _guard = exclusive();
    let e = bench::compare(&ok, &bad, &opts(2), &mut |_| {}).unwrap_err();
    match &e {
        BenchError::RunFailed {
            side,
            status,
            stderr_tail,
            ..
        } => {
            assert_eq!(*side, Side::B);
            assert_eq!(status.code, Some(3));
            assert!(stderr_tail.contains("failing on purpose"));
        }
        other => panic!("unexpected {other:?}"),
    }
    assert!(e.to_string().contains("exit code 3"), "{e}");
}

#[test]
fn bench_command_compares_two_commands_and_exports() {
    let spin = spin().display().to_string();
    let dir = tempfile::tempdir().unwrap();
    let (json, csv, md, html) = (
        dir.path().join("r.json"),
        dir.path().join("r.csv"),
        dir.path().join("r.md"),
        dir.path().join("r.html"),
    );
    let _guard = exclusive();
    let out = process::run(
        &Command::new(env!("CARGO_BIN_EXE_cargo-optimize"))
            .args([
                "bench",
                "--max-time",
                "3s",
                "--warmup",
                "1",
                "--min-runs",
                "6",
            ])
            .arg("--cmd")
            .arg(format!("'{spin}' work 10"))
            .arg("--cmd")
            .arg(format!("{spin} work \"20\""))
            .arg("--export-json")
            .arg(&json)
            .arg("--export-csv")
            .arg(&csv)
            .arg("--export-markdown")
            .arg(&md)
            .arg("--export-html")
            .arg(&html),
    )
    .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("time ratio ") && stdout.contains("slower (n="),
        "{stdout}"
    );

    // The export is not a run's `Report`: its workloads and geomean are read as the typed
    // `Comparison` and `Estimate` they were written from.
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let w: Comparison = serde_json::from_value(report["workloads"][0].clone())
        .unwrap_or_else(|e| panic!("workloads[0] is not a Comparison: {e}\n{report:#}"));
    assert_eq!(w.estimate.verdict, Verdict::Slower, "{}", w.headline());
    let n = u64::from(w.n);
    assert!(n >= 6);
    let geomean: Estimate = serde_json::from_value(report["geomean"].clone())
        .unwrap_or_else(|e| panic!("geomean is not an Estimate: {e}\n{report:#}"));
    assert_eq!(geomean.verdict, Verdict::Slower, "{geomean:#?}");

    let csv = std::fs::read_to_string(&csv).unwrap();
    let lines: Vec<&str> = csv.lines().collect();
    assert!(lines[0].starts_with("workload,side,pair,"));
    assert_eq!(lines.len() as u64, 1 + 2 * n);
    assert!(lines[1].starts_with("command,"));

    let md = std::fs::read_to_string(&md).unwrap();
    assert!(md.contains("| command |") && md.contains("slower"), "{md}");

    // The HTML page: the forest plot and the strip plot, one mark each for the workload, one
    // dot per pair.
    let html = std::fs::read_to_string(&html).unwrap();
    assert_eq!(
        html.matches(r#"data-chart="workloads" data-key="command""#)
            .count(),
        1
    );
    assert_eq!(
        html.matches(r#"data-chart="pairs" data-key="command""#)
            .count(),
        1
    );
    assert_eq!(html.matches(r#"class="dot""#).count() as u64, n);
}

#[test]
fn bench_command_fails_with_the_stderr_tail() {
    let spin = spin().display().to_string();
    let _guard = exclusive();
    let out = process::run(
        &Command::new(env!("CARGO_BIN_EXE_cargo-optimize"))
            .args(["bench", "-q", "--max-time", "2s"])
            .arg("--cmd")
            .arg(format!("{spin} fail"))
            .arg("--cmd")
            .arg(format!("{spin} work 1")),
    )
    .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code, Some(2), "{stderr}");
    assert!(
        stderr.contains("A failed (exit code 3)") && stderr.contains("failing on purpose"),
        "{stderr}"
    );
}
