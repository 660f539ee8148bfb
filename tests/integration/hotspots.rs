//! `cargo optimize hotspots` and report.json's `hotspots`: the `hotspots` fixture has two
//! code paths, and `hot_loop` does nearly all the work; one `--stages pgo` run (shared by
//! the tests here) must rank it first in the report, the ladder and every format of the
//! command. `--flamegraph` is tested where `perf record -e cpu-clock` works (else the test
//! says why it is skipped). The error paths use the frozen demo report (no build).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use crate::common::*;

const FIXTURE: &str = "hotspots";
const HOT: &str = "hotspots::hot_loop";

/// The fixture's `--stages pgo` run, once for this file's tests (each holds the target
/// dir's lock while it reads `latest`).
fn pgo_run() -> &'static Run {
    static RUN: OnceLock<Run> = OnceLock::new();
    let run = RUN.get_or_init(|| optimize(FIXTURE, &["--stages", "pgo"], &[]));
    assert_eq!(run.code, Some(0), "{}", run.all());
    run
}

/// `cargo optimize hotspots ARGS` in the fixture, over its target dir.
fn hotspots(args: &[&str]) -> Run {
    let td = target_dir(FIXTURE);
    let mut all = vec!["optimize", "hotspots", "--target-dir", td.to_str().unwrap()];
    all.extend_from_slice(args);
    run(&fixture(FIXTURE), &all, &[])
}

fn latest_dir() -> PathBuf {
    target_dir(FIXTURE)
        .join("optimize/latest")
        .canonicalize()
        .unwrap()
}

#[test]
fn the_hot_loop_comes_first_in_the_report_and_in_every_format() {
    let _g = lock_target_dir(FIXTURE);
    let run = pgo_run();
    assert!(
        unwrapped(&run.stdout).contains(&format!("hottest: {HOT} ")),
        "{}",
        run.stdout
    );
    let report = latest_report(&target_dir(FIXTURE));
    let h = report.hotspots.as_ref().expect("report.json has hotspots");
    assert_eq!(h.functions[0].name, HOT, "{h:#?}");
    assert_eq!(h.functions[0].crate_name, "hotspots");
    assert!(h.functions[0].share > 0.8, "{h:#?}");
    assert!(h.functions.len() <= 15 && h.profile.is_file(), "{h:#?}");
    let dir = latest_dir();
    // The run's report.md (for a PR comment) leaves them out; `report --hotspots` has them
    // (issue 26, item 5).
    let md = std::fs::read_to_string(dir.join("report.md")).unwrap();
    assert!(!md.contains("### Hotspots"), "{md}");
    let asked = crate::common::run(
        Path::new(env!("CARGO_TARGET_TMPDIR")),
        &[
            "optimize",
            "report",
            dir.join("report.json").to_str().unwrap(),
            "--format",
            "md",
            "--hotspots",
        ],
        &[],
    );
    assert_eq!(asked.code, Some(0), "{}", asked.all());
    assert!(asked.stdout.contains("### Hotspots"), "{}", asked.stdout);
    assert!(
        asked
            .stdout
            .contains(&format!("| 1 | `{HOT}` | hotspots |")),
        "{}",
        asked.stdout
    );
    let html = std::fs::read_to_string(dir.join("report.html")).unwrap();
    assert!(
        html.contains(&format!(r#"data-chart="hotspots" data-key="{HOT}""#)),
        "no hotspots chart in report.html"
    );

    let term = hotspots(&[]);
    assert_eq!(term.code, Some(0), "{}", term.all());
    let first = term
        .stdout
        .lines()
        .find(|l| l.trim_start().starts_with("1 "))
        .unwrap_or_else(|| panic!("no first row in\n{}", term.stdout));
    assert!(first.ends_with(HOT), "{}", term.stdout);
    let share: f64 = first.split_whitespace().nth(1).unwrap().parse().unwrap();
    assert!(share > 80.0, "{}", term.stdout);
    assert!(term.stdout.contains("by crate:\n"), "{}", term.stdout);
    assert!(term.stdout.contains("by module:\n"), "{}", term.stdout);

    let json = hotspots(&["--format", "json", "--top", "2"]);
    assert_eq!(json.code, Some(0), "{}", json.all());
    let v: serde_json::Value = serde_json::from_str(&json.stdout).expect("JSON");
    assert_eq!(v["functions"].as_array().unwrap().len(), 2, "{v:#}");
    assert_eq!(v["functions"][0]["name"], HOT, "{v:#}");
    assert_eq!(v["functions"][0]["crate"], "hotspots", "{v:#}");
    assert!(v["functions"][0]["share"].as_f64().unwrap() > 0.8, "{v:#}");
    assert_eq!(v["crates"][0]["name"], "hotspots", "{v:#}");
    assert_eq!(v["run_id"], report.run_id.as_str());

    let md = hotspots(&["--format", "md"]);
    assert_eq!(md.code, Some(0), "{}", md.all());
    assert!(
        md.stdout.contains(&format!("| 1 | `{HOT}` | hotspots |")),
        "{}",
        md.stdout
    );

    // A workload the spec does not have: the ranking is printed, then exit 2 with the fix.
    let bad = hotspots(&["--flamegraph=nosuch"]);
    assert_eq!(bad.code, Some(2), "{}", bad.all());
    assert!(bad.stdout.contains(HOT), "{}", bad.all());
    assert!(
        bad.stderr.contains("no workload `nosuch`") && bad.stderr.contains("train, eval"),
        "{}",
        bad.stderr
    );
}

/// Whether `perf record -e cpu-clock:u` can sample here; why not when it cannot.
fn perf_can_record() -> Result<(), String> {
    let data = std::env::temp_dir().join(format!("hotspots-probe-{}.data", std::process::id()));
    let child = Command::new("perf")
        .args(["record", "-q", "-e", "cpu-clock:u", "-g", "-o"])
        .arg(&data)
        .args(["--", "true"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn();
    let mut child = child.map_err(|e| format!("cannot start perf: {e}"))?;
    let start = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().map_err(|e| e.to_string())? {
            break s;
        }
        if start.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            let _ = child.wait();
            return Err("perf record did not finish within 60 s".into());
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let _ = std::fs::remove_file(&data);
    if status.success() {
        return Ok(());
    }
    let mut err = String::new();
    if let Some(mut e) = child.stderr.take() {
        let _ = std::io::Read::read_to_string(&mut e, &mut err);
    }
    Err(format!("perf record exited with {status}: {}", err.trim()))
}

/// perf missing fails under CI (scripts/setup installs it); perf present but refused by
/// the machine (a container without `perf_event_open`) is a counted skip.
fn perf_missing(why: &str) {
    if why.starts_with("cannot start perf") {
        missing_tool(
            "perf",
            "scripts/setup installs it: apt-get install linux-perf",
        );
    } else {
        skip(&format!("perf cannot record on this machine: {why}"));
    }
}

#[test]
fn a_flamegraph_of_the_shipped_binary_names_the_hot_loop() {
    let _g = lock_target_dir(FIXTURE);
    if let Err(why) = perf_can_record() {
        return perf_missing(&why);
    }
    pgo_run();
    let out = hotspots(&["--top", "3", "--flamegraph"]);
    assert_eq!(out.code, Some(0), "{}", out.all());
    let svg = latest_dir().join("hotspots/eval.svg");
    assert!(
        out.stdout
            .contains(&format!("\nflamegraph: {}\n", svg.display())),
        "{}",
        out.all()
    );
    let text = std::fs::read_to_string(&svg).unwrap_or_else(|e| panic!("{e}: {}", out.all()));
    assert!(
        text.starts_with("<?xml"),
        "{}",
        &text[..text.len().min(200)]
    );
    assert!(text.contains(HOT), "the flamegraph does not name {HOT}");
}

#[test]
fn a_workload_timing_out_under_perf_is_said_with_its_timeout_and_the_fix() {
    let _g = lock_target_dir(FIXTURE);
    if let Err(why) = perf_can_record() {
        return perf_missing(&why);
    }
    pgo_run();
    // The fixture's spec with a `timeout` the eval workload cannot meet under perf.
    let tmp = tempfile::tempdir().unwrap();
    let spec = tmp.path().join("optimize.toml");
    let text = std::fs::read_to_string(fixture(FIXTURE).join("optimize.toml")).unwrap();
    let short = text.replace(
        "expect = \"exact\"",
        "expect = \"exact\"\ntimeout = \"5ms\"",
    );
    assert_ne!(text, short);
    std::fs::write(&spec, short).unwrap();
    let out = hotspots(&["--spec", spec.to_str().unwrap(), "--flamegraph=eval"]);
    assert_eq!(out.code, Some(2), "{}", out.all());
    for want in [
        "workload `eval` timed out under perf: it was stopped after 10.0 ms (twice its `timeout` of 5.00 ms, ",
        &format!("{}:", spec.display()),
        "fix: raise the workload's `timeout` at ",
        "(e.g. `timeout = \"1s\"`)",
    ] {
        assert!(out.stderr.contains(want), "{want:?} not in\n{}", out.stderr);
    }
    assert!(!out.stderr.contains("no error message"), "{}", out.stderr);
}

fn demo_report() -> serde_json::Value {
    let text = std::fs::read_to_string(fixture("reports/demo/report.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

/// `cargo optimize hotspots REPORT` from a folder without a project.
fn hotspots_of(report: &serde_json::Value) -> Run {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("report.json");
    std::fs::write(&path, serde_json::to_string(report).unwrap()).unwrap();
    run(
        Path::new(env!("CARGO_TARGET_TMPDIR")),
        &["optimize", "hotspots", path.to_str().unwrap()],
        &[],
    )
}

#[test]
fn a_run_without_a_profile_or_whose_profile_is_gone_says_how_to_get_one() {
    let _g = shared();
    // The demo run's profiles were on another machine: gone.
    let gone = hotspots_of(&demo_report());
    assert_eq!(gone.code, Some(2), "{}", gone.all());
    assert!(
        gone.stderr
            .contains("the PGO profile of run `20261101-120000-4242` (pgo) is gone")
            && gone
                .stderr
                .contains("fix: run `cargo optimize --stages pgo` again"),
        "{}",
        gone.stderr
    );
    let mut none = demo_report();
    none["stages"]
        .as_array_mut()
        .unwrap()
        .retain(|s| s["name"] != "pgo");
    let out = hotspots_of(&none);
    assert_eq!(out.code, Some(2), "{}", out.all());
    assert!(
        out.stderr
            .contains("has no PGO profile (its stages: baseline, profile, cpu")
            && out
                .stderr
                .contains("fix: run `cargo optimize --stages pgo` first"),
        "{}",
        out.stderr
    );
    assert!(out.stdout.is_empty(), "{}", out.stdout);
}
