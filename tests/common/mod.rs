//! Shared helpers for the integration tests: run the real `cargo-optimize` binary on the
//! fixture crates under `tests/fixtures/`, with one target dir per fixture under cargo's
//! test tmpdir so builds are shared between tests and runs.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

pub fn tool() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_cargo-optimize"))
}

pub fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

/// The target dir a fixture's builds share across tests.
pub fn target_dir(name: &str) -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("fixtures")
        .join(name)
}

#[derive(Debug)]
pub struct Run {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    pub fn all(&self) -> String {
        format!("{}\n{}", self.stdout, self.stderr)
    }
}

/// Run `cargo-optimize ARGS` in `cwd` with extra env; the user's rustflags variables are
/// cleared unless the test sets them.
pub fn run(cwd: &Path, args: &[&str], env: &[(&str, &str)]) -> Run {
    let mut cmd = Command::new(tool());
    cmd.args(args)
        .current_dir(cwd)
        .env_remove("RUSTFLAGS")
        .env_remove("CARGO_ENCODED_RUSTFLAGS")
        .env_remove("CARGO_BUILD_RUSTFLAGS")
        .env("NO_COLOR", "1");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().expect("run cargo-optimize");
    Run {
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// Run the pipeline on a fixture from inside its folder, with its shared target dir.
pub fn optimize(name: &str, extra: &[&str], env: &[(&str, &str)]) -> Run {
    let td = target_dir(name);
    let mut args = vec!["optimize", "--target-dir", td.to_str().unwrap()];
    args.extend_from_slice(extra);
    run(&fixture(name), &args, env)
}

/// The report.json of the newest run under a target dir. Every report a test reads is
/// also checked to parse into the typed `Report` and to re-serialise to the same JSON.
pub fn latest_report(target_dir: &Path) -> serde_json::Value {
    let path = target_dir.join("optimize/latest/report.json");
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    let json: serde_json::Value = serde_json::from_str(&text).expect("report.json is JSON");
    let typed = typed_report(&path, &text);
    let again = serde_json::to_value(&typed).expect("Report serialises");
    assert!(
        json == again,
        "{} does not round-trip through Report",
        path.display()
    );
    json
}

/// `text` (the report at `path`) as the typed `Report`, or a panic naming the line.
pub fn typed_report(path: &Path, text: &str) -> cargo_optimize::report::Report {
    serde_json::from_str(text).unwrap_or_else(|e| {
        let line = text.lines().nth(e.line().saturating_sub(1)).unwrap_or("");
        let before: Vec<&str> = text.lines().take(e.line()).collect();
        let context = before[before.len().saturating_sub(12)..].join("\n");
        panic!(
            "{} is not a Report: {e}\n{context}\n>>> {line}",
            path.display()
        )
    })
}

/// The report of a specific run, by the run folder printed in the output.
pub fn stage<'a>(report: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    report["stages"]
        .as_array()
        .expect("stages array")
        .iter()
        .find(|s| s["name"] == name)
        .unwrap_or_else(|| panic!("no stage {name} in {report:#}"))
}

/// Every file of a tree (but `target/`) with its bytes: compare before/after to prove
/// that a command changed nothing of the user's.
pub fn snapshot(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.file_name().is_some_and(|n| n == "target") {
                continue;
            }
            if p.is_dir() {
                stack.push(p);
            } else {
                out.insert(p.clone(), std::fs::read(&p).unwrap());
            }
        }
    }
    out
}

/// Copy a fixture into a fresh temp dir (for tests that write into the crate).
pub fn copy_fixture(name: &str) -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    copy_dir(&fixture(name), tmp.path());
    tmp
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let p = e.unwrap().path();
        let name = p.file_name().unwrap();
        if name == "target" {
            continue;
        }
        if p.is_dir() {
            copy_dir(&p, &to.join(name));
        } else {
            std::fs::copy(&p, to.join(name)).unwrap();
        }
    }
}
