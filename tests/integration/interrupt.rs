//! Interruption and early failure (issue 36, items 1 and 2), on the slow-ahead fixture: its
//! cpu builds (run ahead) and its `hold` workload never end by themselves, and each writes
//! its pid into a marker folder, so a test knows exactly which processes must be gone.
//!
//! Every wait here is bounded; a bound is far above what the behaviour needs (a signal is
//! answered within 2 s), so no verdict depends on a timer's figure.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use crate::common::*;

const FIXTURE: &str = "slow-ahead";

/// The fixture copied, with `<name>.toml` whose workload runs with `args`.
fn crate_with_spec(name: &str, args: &[&str]) -> tempfile::TempDir {
    let tmp = copy_fixture(FIXTURE);
    let spec = std::fs::read_to_string(tmp.path().join("optimize.toml")).unwrap();
    let quoted: Vec<String> = args.iter().map(|a| format!("{a:?}")).collect();
    // The workload writes its markers into the folder its second argument names, outside
    // its run folder: it declares it, as the confinement asks.
    let writes: Vec<String> = args.iter().skip(1).map(|a| format!("{a:?}")).collect();
    let spec = spec.replace(
        "args = [\"ok\"]",
        &format!(
            "args = [{}]\nwrites = [{}]",
            quoted.join(", "),
            writes.join(", ")
        ),
    );
    std::fs::write(tmp.path().join(format!("{name}.toml")), spec).unwrap();
    tmp
}

/// The pid in the first marker named `<prefix><pid>` in `dir`, once there is one.
fn wait_for_marker(dir: &Path, prefix: &str, limit: Duration) -> u32 {
    let start = Instant::now();
    loop {
        let found = std::fs::read_dir(dir).unwrap().flatten().find_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            name.strip_prefix(prefix).and_then(|p| p.parse().ok())
        });
        if let Some(pid) = found {
            return pid;
        }
        assert!(
            start.elapsed() < limit,
            "no {prefix}* marker within {limit:?}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Whether process `pid` has ended (gone, or a zombie nobody reaped yet).
fn ended(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
    }
}

/// Every pid has ended within 5 s; else they are killed and the test fails.
fn assert_ended(pids: &[u32], what: &str) {
    let start = Instant::now();
    while !pids.iter().all(|p| ended(*p)) && start.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(50));
    }
    let left: Vec<u32> = pids.iter().copied().filter(|p| !ended(*p)).collect();
    for p in &left {
        let _ = Command::new("kill")
            .arg("-KILL")
            .arg(p.to_string())
            .status();
    }
    assert!(
        left.is_empty(),
        "{what}: processes {left:?} were left running"
    );
}

/// The pids of the markers named `<prefix><pid>` in `dir`.
fn markers(dir: &Path, prefix: &str) -> Vec<u32> {
    let names = std::fs::read_dir(dir).unwrap().flatten();
    let names = names.map(|e| e.file_name().to_string_lossy().into_owned());
    names
        .filter_map(|n| n.strip_prefix(prefix).and_then(|p| p.parse().ok()))
        .collect()
}

#[test]
fn a_signal_ends_the_run_killing_every_child_and_a_rerun_reuses_what_finished() {
    let _guard = shared();
    let marks = tempfile::tempdir().unwrap();
    let m = marks.path().to_str().unwrap();
    let tmp = crate_with_spec("hold", &["hold", m]);
    let dir = tmp.path();
    for (signal, code) in [("INT", 130), ("TERM", 143)] {
        for e in std::fs::read_dir(marks.path()).unwrap().flatten() {
            std::fs::remove_file(e.path()).unwrap();
        }
        let err = marks.path().join("..").join(format!("stderr-{signal}"));
        let mut child = spawn_marked(dir, ["optimize", "--spec", "hold.toml"], m, &err);
        // A workload running and a build running ahead, both waiting forever.
        let workload = wait_for_marker(marks.path(), "workload-", Duration::from_secs(300));
        let build = wait_for_marker(marks.path(), "build-", Duration::from_secs(300));
        let sent = Command::new("kill")
            .arg(format!("-{signal}"))
            .arg(child.id().to_string())
            .status()
            .unwrap();
        assert!(sent.success());
        let start = Instant::now();
        let status = loop {
            if let Some(s) = child.try_wait().unwrap() {
                break s;
            }
            if start.elapsed() > Duration::from_secs(20) {
                let _ = child.kill();
                panic!("SIG{signal}: the run did not end within 20 s");
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        let stderr = std::fs::read_to_string(&err).unwrap();
        assert_eq!(status.code(), Some(code), "SIG{signal}: {stderr}");
        assert!(
            stderr.contains(&format!("interrupted by SIG{signal}")),
            "{stderr}"
        );
        assert_ended(&[workload, build], &format!("after SIG{signal}"));
        // No private copy or lock holder left: `clean` takes the lock at once.
        let runs = dir.join("target/optimize/runs");
        for run in std::fs::read_dir(&runs).unwrap().flatten() {
            let copies = std::fs::read_dir(run.path().join("sandbox"));
            let left: Vec<_> = copies.into_iter().flatten().flatten().collect();
            assert!(left.is_empty(), "private copies left: {left:?}");
        }
    }
    // What finished (the baseline's build) is reused by the next run.
    let r = run(
        dir,
        &["optimize", "--stages", "none"],
        &[("SLOW_AHEAD_MARKERS", m)],
    );
    assert_eq!(r.code, Some(0), "{}", r.all());
    assert!(r.stderr.contains("build reused"), "{}", r.stderr);
}

#[test]
fn a_run_that_fails_while_builds_run_ahead_stops_them_before_it_exits() {
    let _guard = shared();
    let marks = tempfile::tempdir().unwrap();
    let m = marks.path().to_str().unwrap();
    let tmp = crate_with_spec("fail", &["fail", m]);
    let r = run(
        tmp.path(),
        &["optimize", "--spec", "fail.toml"],
        &[("SLOW_AHEAD_MARKERS", m)],
    );
    assert_ne!(r.code, Some(0), "{}", r.all());
    assert!(r.stderr.contains("failing on purpose"), "{}", r.stderr);
    let builds = markers(marks.path(), "build-");
    assert!(!builds.is_empty(), "no build ran ahead: {}", r.stderr);
    assert_ended(&builds, "after the failed run");
}

/// Issue 61, item 8: the budget is a bound. The cpu stage's builds, started ahead, never end
/// by themselves; before, the ladder waited for them whatever the budget (`--budget 6s` was
/// still running after 90 s, and `--budget 15s` after 37 s here, until the build bound of two
/// hours). Now no build outlasts the budget: one waited for is killed when it is spent, and
/// nothing starts after it. 15 s, not 6: under a loaded suite the baseline's own build takes
/// seconds, and the cpu stage must still fit, so that the run waits for its builds.
///
/// The bound the rule gives past the budget (docs/src/measuring.md): a comparison that
/// started before it, then the final confirmation's first look — here nothing is compared
/// (the fixture's workload takes milliseconds), so the run's own `total` may pass the budget
/// by 2 s at most (the kill's and the report's latency); the test's clock allows 20 s more
/// for starting the tool, `cargo metadata` and builders stopping.
#[test]
fn a_budget_bounds_the_run_when_a_build_ahead_never_ends() {
    let _guard = shared();
    let marks = tempfile::tempdir().unwrap();
    let m = marks.path().to_str().unwrap();
    let tmp = copy_fixture(FIXTURE);
    let td = tempfile::tempdir().unwrap();
    let err = marks.path().join("..").join("stderr-budget");
    let budget = 15.0;
    let start = Instant::now();
    let args = ["optimize", "--budget", "15s", "--target-dir"].map(std::ffi::OsStr::new);
    let args = args.into_iter().chain([td.path().as_os_str()]);
    let mut child = spawn_marked(tmp.path(), args, m, &err);
    let limit = Duration::from_secs_f64(budget + 2.0 + 20.0);
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            // Killing the tool leaves its builds running: they go too.
            for p in markers(marks.path(), "build-") {
                let _ = Command::new("kill")
                    .arg("-KILL")
                    .arg(p.to_string())
                    .status();
            }
            panic!(
                "--budget 15s still running after {limit:?}:\n{}",
                std::fs::read_to_string(&err).unwrap()
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let stderr = std::fs::read_to_string(&err).unwrap();
    assert_eq!(status.code(), Some(0), "{stderr}");
    let report = latest_report(td.path());
    let total = (report.pipeline.iter())
        .find(|s| s.step == "total")
        .map(|s| s.seconds)
        .expect("the run's total");
    assert!(total <= budget + 2.0, "total {total} s: {stderr}");
    // The builds ahead ran, and are gone; the cpu stage says it was not tried, with the fix.
    let builds = markers(marks.path(), "build-");
    assert!(!builds.is_empty(), "no build ran ahead: {stderr}");
    assert_ended(&builds, "after the run");
    assert!(
        stderr.contains(
            "cpu (x86-64-v4): not tried: the run's budget of 15.0 s is spent; fix: --budget 30.0 s"
        ),
        "{stderr}"
    );
    let b = report.budget.as_ref().expect("the budget is recorded");
    assert_eq!(b.not_tried, ["cpu"], "{stderr}");
}
