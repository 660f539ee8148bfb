//! Issue 60: the user's code runs confined by the kernel. Each hostile workload of the
//! fault rounds (writes through `../`, `/proc/self/cwd`, a link made at run time, the
//! project's path spelled `/a/./proj`, the caller's `$OLDPWD` or a variable naming the
//! project, a late child, `git` finding the project's `.git`, a `setsid` daemon) leaves the
//! project and every file outside the run folder as they were — content, kind, mode and
//! modification time —, leaves no process behind, and is named with the fix.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::common::*;

/// Every entry of `dir` (its `.git` included) with its kind, mode, content and mtime.
fn snapshot_with_times(dir: &Path) -> Snapshot {
    let mut out = BTreeMap::new();
    for (path, (kind, bytes)) in snapshot_entries(dir) {
        let mtime = std::fs::symlink_metadata(&path)
            .unwrap()
            .modified()
            .unwrap();
        out.insert(path, (kind, bytes, mtime));
    }
    out
}

type Snapshot = BTreeMap<PathBuf, (String, Vec<u8>, std::time::SystemTime)>;

/// Fails naming each entry of `dir` that differs from `before` (kind, mode, bytes, mtime).
fn assert_unchanged(before: &Snapshot, dir: &Path, context: &str) {
    let after = snapshot_with_times(dir);
    let mut diff = Vec::new();
    for (path, entry) in before {
        match after.get(path) {
            None => diff.push(format!("{} removed", path.display())),
            Some(e) if e != entry => diff.push(format!("{} changed", path.display())),
            Some(_) => {}
        }
    }
    let new = after.keys().filter(|p| !before.contains_key(*p));
    diff.extend(new.map(|p| format!("{} new", p.display())));
    assert!(diff.is_empty(), "the project changed: {diff:?}\n{context}");
}

/// `cargo optimize --target-dir TD --stages none` in `dir`: the baseline's runs are where
/// every case shows (the writes-nothing check, the determinism check).
fn baseline_only(dir: &Path, td: &Path, env: &[(&str, &str)]) -> Run {
    let args = [
        "optimize",
        "--target-dir",
        td.to_str().unwrap(),
        "--stages",
        "none",
    ];
    run(dir, &args, env)
}

/// No process whose command line matches `pattern` is left (`pgrep -f`).
fn assert_none_running(pattern: &str) {
    let left = std::process::Command::new("pgrep")
        .args(["-f", pattern])
        .output()
        .unwrap();
    let left = String::from_utf8_lossy(&left.stdout);
    assert!(left.is_empty(), "left running: {left}");
}

/// `verify-files` copied, made a git repository with a name in its own config.
fn project() -> tempfile::TempDir {
    let tmp = copy_fixture("verify-files");
    for args in [&["init", "-q"][..], &["config", "user.name", "the user"]] {
        let ok = std::process::Command::new("git")
            .args(args)
            .current_dir(tmp.path())
            .status()
            .unwrap();
        assert!(ok.success());
    }
    tmp
}

fn spec(dir: &Path, script: &str, extra: &str) {
    let toml = format!(
        "bin = \"verify-files\"\n\n[[workload]]\nname = \"hostile\"\nargs = [\"--sh\", '{script}']\n{extra}"
    );
    std::fs::write(dir.join("optimize.toml"), toml).unwrap();
}

/// The project's path spelled another way (`/tmp/./x`): no rewriting of paths sees it.
fn respelled(dir: &Path) -> String {
    let s = dir.to_str().unwrap();
    let (head, tail) = s.rsplit_once('/').unwrap();
    format!("{head}/./{tail}")
}

fn git(dir: &Path, args: &[&str]) -> String {
    let out = std::process::Command::new("git")
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Each way of reaching the project from the workload fails in the workload: the run is
/// exit 2 naming it, and nothing of the user's changed (`.git` included).
#[test]
fn a_workload_cannot_write_outside_its_run_folder_however_it_spells_the_path() {
    let _g = shared();
    let tmp = project();
    let dir = tmp.path();
    let outside = tempfile::tempdir().unwrap();
    let theirs = outside.path().join("theirs.txt");
    std::fs::write(&theirs, "the user's\n").unwrap();
    let ups = "../".repeat(16);
    let p = respelled(dir);
    let o = theirs.to_str().unwrap().trim_start_matches('/').to_string();
    let cases = [
        ("dot-dot", format!("set -e; echo x >> {ups}{o}")),
        (
            "proc-cwd",
            format!("set -e; echo x >> /proc/self/cwd/{ups}{o}"),
        ),
        ("respelled", format!("set -e; echo x >> {p}/Cargo.toml")),
        (
            "link-made-now",
            format!("set -e; ln -s {p}/Cargo.toml l; echo x >> l"),
        ),
        (
            "variable",
            "set -e; echo x >> \"${MYV:-/nonexistent}/escape.txt\"".to_string(),
        ),
        (
            "oldpwd",
            "set -e; echo x >> \"$OLDPWD/escape.txt\"".to_string(),
        ),
        (
            "git",
            "set -e; git config user.name evil; git tag t1".to_string(),
        ),
    ];
    let td = target_dir("confine-paths");
    let env = [
        ("MYV", dir.to_str().unwrap()),
        ("OLDPWD", dir.to_str().unwrap()),
    ];
    for (case, script) in cases {
        spec(dir, &script, "");
        let before = snapshot_with_times(dir);
        let r = baseline_only(dir, &td, &env);
        assert_unchanged(&before, dir, &format!("{case}: {}", r.all()));
        assert_eq!(
            std::fs::read_to_string(&theirs).unwrap(),
            "the user's\n",
            "{case}"
        );
        assert_eq!(r.code, Some(2), "{case}: {}", r.all());
        assert!(
            r.stderr.contains("workload `hostile`"),
            "{case}: {}",
            r.stderr
        );
        assert!(r.stderr.contains("fix:"), "{case}: {}", r.stderr);
    }
    assert_eq!(git(dir, &["config", "user.name"]).trim(), "the user");
    assert_eq!(git(dir, &["tag"]), "", "no tag was made");
}

/// A child the workload leaves behind — late, in the background, or a `setsid` daemon —
/// is killed when its run ends (named in a warning) and could not have written anyway.
#[test]
fn nothing_a_workload_starts_outlives_its_run_or_writes_late() {
    let _g = shared();
    let tmp = project();
    let dir = tmp.path();
    let p = respelled(dir);
    let marker = format!("6{}.25", std::process::id() % 1000);
    let script = format!(
        "(sleep 1; echo late > {p}/late.txt) & setsid sleep {marker} & (sleep {marker} &) ; echo done"
    );
    spec(dir, &script, "");
    let before = snapshot_with_times(dir);
    let td = target_dir("confine-late");
    let r = baseline_only(dir, &td, &[]);
    std::thread::sleep(std::time::Duration::from_secs(2));
    assert_unchanged(&before, dir, &r.all());
    assert_eq!(r.code, Some(0), "{}", r.all());
    assert_none_running(&format!("sleep {marker}"));
    assert!(
        r.stderr
            .contains("workload `hostile` left processes running after it exited"),
        "{}",
        r.stderr
    );
}

/// A workload sees what is keyed: a variable of the caller's only when `env-pass` names it,
/// and a change of its value is a new check, never "checked by an earlier run".
#[test]
fn a_workload_sees_only_what_is_keyed_and_a_changed_value_is_checked_again() {
    let _g = shared();
    let tmp = project();
    let dir = tmp.path();
    let td = target_dir("confine-env");
    spec(
        dir,
        "echo \"[$MYV] [$OTHER] [$OLDPWD] [$PWD]\"",
        "env-pass = [\"MYV\"]\n",
    );
    let r1 = baseline_only(
        dir,
        &td,
        &[("MYV", "1"), ("OTHER", "secret"), ("OLDPWD", "/x")],
    );
    assert_eq!(r1.code, Some(0), "{}", r1.all());
    let latest = td.join("optimize/latest/outputs/baseline/hostile.stdout");
    let printed = std::fs::read_to_string(&latest).unwrap();
    assert!(printed.starts_with("[1] [] [] ["), "{printed}");
    assert!(
        !printed.contains("[]\n") && printed.contains(dir.file_name().unwrap().to_str().unwrap()),
        "PWD is the cwd: {printed}"
    );
    let r2 = baseline_only(dir, &td, &[("MYV", "2")]);
    assert_eq!(r2.code, Some(0), "{}", r2.all());
    assert!(
        !r2.all().contains("checked by an earlier run"),
        "{}",
        r2.all()
    );
    let printed = std::fs::read_to_string(&latest).unwrap();
    assert!(printed.starts_with("[2] "), "{printed}");
}

/// A workload that declares a place outside (`writes`) may write there, and only there.
#[test]
fn a_declared_place_is_writable_and_an_undeclared_one_is_not() {
    let _g = shared();
    let tmp = project();
    let dir = tmp.path();
    let outside = tempfile::tempdir().unwrap();
    let o = outside.path().to_str().unwrap();
    let td = target_dir("confine-writes");
    let script = format!("set -e; echo x > {o}/out.txt; echo ok");
    spec(dir, &script, "");
    let r = baseline_only(dir, &td, &[]);
    assert_eq!(r.code, Some(2), "{}", r.all());
    assert!(r.stderr.contains("writes = ["), "{}", r.stderr);
    assert!(!outside.path().join("out.txt").exists());
    spec(dir, &script, &format!("writes = [\"{o}\"]\n"));
    let r = baseline_only(dir, &td, &[]);
    assert_eq!(r.code, Some(0), "{}", r.all());
    assert_eq!(
        std::fs::read_to_string(outside.path().join("out.txt")).unwrap(),
        "x\n"
    );
}

/// A build script that leaves a daemon (`setsid`, no pipes held) behind: the build's step
/// kills it when cargo ends, and the run ends with none of its processes left.
#[test]
fn a_build_script_s_daemon_does_not_outlive_the_build() {
    let _g = shared();
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let marker = format!("7{}.75", std::process::id() % 1000);
    std::fs::create_dir(dir.join("src")).unwrap();
    std::fs::write(
        dir.join("Cargo.toml"),
        "[package]\nname = \"daemonic\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[workspace]\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("build.rs"),
        format!(
            "fn main() {{\n    std::process::Command::new(\"sh\").args([\"-c\", \"setsid sleep {marker} </dev/null >/dev/null 2>&1 &\"]).status().unwrap();\n}}\n"
        ),
    )
    .unwrap();
    std::fs::write(dir.join("src/main.rs"), "fn main() { println!(\"hi\"); }\n").unwrap();
    std::fs::write(
        dir.join("Cargo.lock"),
        "version = 4\n\n[[package]]\nname = \"daemonic\"\nversion = \"0.1.0\"\n",
    )
    .unwrap();
    let td = target_dir("confine-build-daemon");
    // A build cargo finds fresh runs no build script: start from nothing.
    let _ = std::fs::remove_dir_all(&td);
    let args = [
        "optimize",
        "--target-dir",
        td.to_str().unwrap(),
        "--stages",
        "none",
        "--fresh",
        "--",
        "x",
    ];
    let r = run(dir, &args, &[]);
    assert_eq!(r.code, Some(0), "{}", r.all());
    assert!(r.stderr.contains("baseline built"), "{}", r.all());
    assert_none_running(&format!("sleep {marker}"));
}
