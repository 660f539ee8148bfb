//! The `Cargo.lock` of a project that has none (`cargo::lockfile`): every command that
//! builds makes one, and leaves none behind; one the user writes while a run goes on is
//! theirs and is kept. (Runs sharing one, and the signal path, are the unit tests of
//! `cargo::lockfile`.)

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use crate::common::*;

/// A fixture copied, without its lock file.
fn without_lock(name: &str) -> tempfile::TempDir {
    let tmp = copy_fixture(name);
    std::fs::remove_file(tmp.path().join("Cargo.lock")).unwrap();
    tmp
}

fn no_lock_left(dir: &Path, r: &Run) {
    assert!(!dir.join("Cargo.lock").exists(), "{}", r.all());
}

/// Issue 60, item 5: `check` made a lock file up front no more (cargo's build wrote one)
/// and left it in the tree.
#[test]
fn check_leaves_no_lock_file_behind() {
    let _guard = shared();
    let tmp = without_lock("check-regress");
    let dir = tmp.path();
    let args = ["optimize", "check", "--max-time", "1s"];
    let r = run(dir, &args, &[("GIT_CONFIG_GLOBAL", "/dev/null")]);
    assert!(matches!(r.code, Some(0 | 1)), "{}", r.all());
    no_lock_left(dir, &r);
}

/// `check` of the slow-ahead fixture copied into `dir` (without its lock file), whose
/// `hold` workload waits forever: started, and waited for until the workload runs (it
/// writes `workload-<pid>` into `marks` first). Its stderr goes to `marks/stderr`.
fn holding_check(dir: &Path, marks: &Path) -> std::process::Child {
    let m = marks.to_str().unwrap();
    let spec = std::fs::read_to_string(dir.join("optimize.toml")).unwrap();
    // The workload writes its marker outside its run folder: it declares the folder.
    let spec = spec.replace(
        "args = [\"ok\"]",
        &format!("args = [\"hold\", {m:?}]\nwrites = [{m:?}]"),
    );
    std::fs::write(dir.join("hold.toml"), spec).unwrap();
    let err = marks.join("stderr");
    let mut child = spawn_marked(dir, ["optimize", "check", "--spec", "hold.toml"], m, &err);
    let start = Instant::now();
    let running = || {
        let names = std::fs::read_dir(marks).unwrap().flatten();
        let mut names = names.into_iter().map(|e| e.file_name());
        names.any(|n| n.to_string_lossy().starts_with("workload-"))
    };
    while !running() {
        if start.elapsed() > Duration::from_secs(300) || child.try_wait().unwrap().is_some() {
            let _ = child.kill();
            let said = std::fs::read_to_string(&err).unwrap();
            panic!("the workload did not start: {said}");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    child
}

/// SIGTERM to `child`; its exit code once it has ended (within 20 s) and its stderr.
fn terminate(mut child: std::process::Child, marks: &Path) -> (Option<i32>, String) {
    let pid = child.id().to_string();
    let sent = Command::new("kill").args(["-TERM", &pid]).status();
    assert!(sent.unwrap().success());
    let start = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if start.elapsed() > Duration::from_secs(20) {
            let _ = child.kill();
            panic!("SIGTERM: the command did not end within 20 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let said = std::fs::read_to_string(marks.join("stderr")).unwrap();
    (status.code(), said)
}

/// Issue 60, item 5: `check` stopped by SIGTERM left the lock file its build wrote.
#[test]
fn check_stopped_by_sigterm_leaves_no_lock_file_behind() {
    let _guard = shared();
    let marks = tempfile::tempdir().unwrap();
    let tmp = without_lock("slow-ahead");
    let dir = tmp.path();
    let child = holding_check(dir, marks.path());
    assert!(
        dir.join("Cargo.lock").exists(),
        "the build used a lock file"
    );
    let (code, said) = terminate(child, marks.path());
    assert_eq!(code, Some(143), "{said}");
    assert!(!dir.join("Cargo.lock").exists(), "{said}");
}

/// Issue 60, item 5: two runs of one project share the lock file one of them made. A run
/// that ends while a `check` still builds and runs with it leaves it (its writes-nothing
/// check saw nothing come or go); the `check`, stopped by SIGTERM, is the last one out and
/// removes it.
#[test]
fn a_run_beside_another_leaves_the_lock_file_to_the_last_one_out() {
    let _guard = shared();
    let marks = tempfile::tempdir().unwrap();
    let tmp = without_lock("slow-ahead");
    let dir = tmp.path();
    let child = holding_check(dir, marks.path());
    let r = run(dir, &["optimize", "--stages", "none"], &[]);
    let lock_after_run = dir.join("Cargo.lock").exists();
    let (code, said) = terminate(child, marks.path());
    assert_eq!(r.code, Some(0), "{}", r.all());
    assert!(
        lock_after_run,
        "removed while the check used it: {}",
        r.all()
    );
    let left = "left it to another run still using it";
    assert!(r.stderr.contains(left), "{left:?} not in\n{}", r.stderr);
    assert_eq!(code, Some(143), "{said}");
    assert!(!dir.join("Cargo.lock").exists(), "{said}");
}

/// Issue 60, item 5: `release` left the lock file its builds wrote (one flavor, no stage
/// past the baseline: built, verified and packaged in a second).
#[test]
fn release_leaves_no_lock_file_behind() {
    let _guard = shared();
    let tmp = without_lock("release-flavors");
    let dir = tmp.path();
    let out = dir.join("dist");
    let args = [
        "optimize",
        "release",
        "--stages",
        "none",
        "--flavors",
        "sieve",
    ];
    let mut args = args.to_vec();
    args.extend(["--out-dir", out.to_str().unwrap()]);
    let r = run(dir, &args, &[]);
    assert_eq!(r.code, Some(0), "{}", r.all());
    assert!(out.join("manifest.json").exists(), "{}", r.all());
    no_lock_left(dir, &r);
}

/// Issue 60, item 5: `profile collect` left the lock file its build wrote.
#[test]
fn profile_collect_leaves_no_lock_file_behind() {
    let _guard = shared();
    let tmp = without_lock("pgo-basic");
    let dir = tmp.path();
    let into = dir.join("profiles");
    let collector = dir.join("collector");
    let args = [
        "profile",
        "collect",
        "--dir",
        into.to_str().unwrap(),
        "-o",
        collector.to_str().unwrap(),
    ];
    let r = run(dir, &args, &[]);
    if r.stderr.contains("no llvm-profdata of rustc's LLVM") {
        return missing_tool("llvm-profdata", "rustup component add llvm-tools");
    }
    assert_eq!(r.code, Some(0), "{}", r.all());
    assert!(collector.exists(), "{}", r.all());
    no_lock_left(dir, &r);
}

/// Issue 60, item 5: the user's own `Cargo.lock`, made while a run goes on (here: deleted
/// and made again by `cargo generate-lockfile` when the run's first build starts, through
/// a `CARGO` that does so), was removed at the run's end as if it were the run's. It is
/// kept, with a note, and a later run takes it for the project's own.
#[test]
fn a_lock_file_the_user_makes_during_a_run_is_kept() {
    let _guard = shared();
    let tmp = without_lock("pgo-basic");
    let dir = tmp.path();
    let lock = dir.join("Cargo.lock");
    let wrapper = dir.join("cargo-wrapper.sh");
    let script = r#"#!/bin/sh
if [ "$1" = build ] && [ ! -e "$ONCE" ]; then
    : > "$ONCE"
    rm -f "$LOCK"
    "$REAL_CARGO" generate-lockfile --offline --manifest-path "$MANIFEST" || exit 1
fi
exec "$REAL_CARGO" "$@"
"#;
    std::fs::write(&wrapper, script).unwrap();
    let mode = std::os::unix::fs::PermissionsExt::from_mode(0o755);
    std::fs::set_permissions(&wrapper, mode).unwrap();
    let real = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let once = dir.join("once");
    let manifest = dir.join("Cargo.toml");
    let env = [
        ("CARGO", wrapper.to_str().unwrap()),
        ("REAL_CARGO", real.as_str()),
        ("ONCE", once.to_str().unwrap()),
        ("LOCK", lock.to_str().unwrap()),
        ("MANIFEST", manifest.to_str().unwrap()),
    ];
    let args = ["optimize", "--stages", "none"];
    let r = run(dir, &args, &env);
    assert_eq!(r.code, Some(0), "{}", r.all());
    assert!(once.exists(), "the wrapper ran no build: {}", r.all());
    assert!(
        lock.exists(),
        "the user's lock file was removed: {}",
        r.all()
    );
    let said = "Cargo.lock was kept: it changed during the run";
    assert!(r.stderr.contains(said), "{said:?} not in\n{}", r.stderr);
    let r = run(dir, &args, &[]);
    assert_eq!(r.code, Some(0), "{}", r.all());
    assert!(lock.exists(), "{}", r.all());
    assert!(
        !r.stderr.contains("the project has no Cargo.lock"),
        "{}",
        r.stderr
    );
}
