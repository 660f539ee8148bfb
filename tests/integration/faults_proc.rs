//! Faults around the processes the tool runs and the limits it is given (issue 10): a
//! workload that leaves processes behind holding its output, time bounds, exit-code
//! workloads, and the messages for bad specs and flags. Each test asserts the exit code,
//! the message (what, where, fix) and that the user's tree is byte for byte unchanged.
//!
//! Every run goes through [`watched`]: the tool is killed and the test fails when it takes
//! longer than its bound, so a hang fails the suite instead of stalling it.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use cargo_optimize::testing::report::Status;

use crate::common::*;

const FIXTURE: &str = "leaves-child";

/// `cargo-optimize ARGS` in `cwd`, killed after `limit`. Returns the run and how long it
/// took; panics (after the kill) when it had to be killed.
fn watched(cwd: &Path, args: &[&str], limit: Duration) -> (Run, Duration) {
    watched_env(cwd, args, limit, &[])
}

/// [`watched`] with extra environment variables.
fn watched_env(
    cwd: &Path,
    args: &[&str],
    limit: Duration,
    env: &[(&str, &Path)],
) -> (Run, Duration) {
    let dir = tempfile::tempdir().unwrap();
    let (out_path, err_path) = (dir.path().join("stdout"), dir.path().join("stderr"));
    let start = Instant::now();
    let mut child = Command::new(tool())
        .args(args)
        .current_dir(cwd)
        .env_remove("RUSTFLAGS")
        .env_remove("CARGO_ENCODED_RUSTFLAGS")
        .env_remove("CARGO_BUILD_RUSTFLAGS")
        .env("NO_COLOR", "1")
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out_path).unwrap())
        .stderr(std::fs::File::create(&err_path).unwrap())
        .spawn()
        .expect("start cargo-optimize");
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break Some(s);
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let took = start.elapsed();
    let run = Run {
        code: status.and_then(|s| s.code()),
        stdout: std::fs::read_to_string(&out_path).unwrap_or_default(),
        stderr: std::fs::read_to_string(&err_path).unwrap_or_default(),
    };
    assert!(
        status.is_some(),
        "cargo-optimize {} did not finish within {limit:?} and was killed\n{}",
        args.join(" "),
        run.all()
    );
    (run, took)
}

/// A spec with `text` in a temp folder of its own (or `bytes`, for non-text).
fn spec_file(bytes: &[u8]) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("optimize.toml");
    std::fs::write(&path, bytes).unwrap();
    (dir, path)
}

/// The pipeline on the fixture with `--spec` (the fixture's own spec when `None`), the
/// fixture's tree snapshotted before and compared after.
fn optimize_with(spec: Option<&Path>, extra: &[&str], limit: Duration) -> (Run, Duration) {
    let before = snapshot(&fixture(FIXTURE));
    let td = target_dir(FIXTURE);
    // --fresh: the tests here look at what the run does, which reuse would skip.
    let mut args = vec!["optimize", "--fresh", "--target-dir", td.to_str().unwrap()];
    if let Some(spec) = spec {
        args.extend(["--spec", spec.to_str().unwrap()]);
    }
    args.extend_from_slice(extra);
    let r = watched(&fixture(FIXTURE), &args, limit);
    assert_eq!(
        before,
        snapshot(&fixture(FIXTURE)),
        "the fixture was modified"
    );
    r
}

fn assert_exit(r: &Run, code: i32, needles: &[&str]) {
    assert_eq!(r.code, Some(code), "exit code\n{}", r.all());
    for n in needles {
        assert!(r.stderr.contains(n), "stderr lacks {n:?}:\n{}", r.stderr);
    }
}

/// A spec error: exit 2, `file:line:col: message`, then a `fix:` line with `fix`; the
/// spec file itself unchanged.
fn assert_spec_error(bytes: &[u8], line_col: &str, message: &str, fix: &str) {
    let (_dir, path) = spec_file(bytes);
    let (r, _) = optimize_with(Some(&path), &[], Duration::from_secs(120));
    let at = format!("{}:{line_col}: {message}", path.display());
    assert_exit(&r, 2, &[&at, &format!("\n  fix: {fix}")]);
    assert_eq!(
        std::fs::read(&path).unwrap(),
        bytes,
        "the spec was modified"
    );
}

// ---- no hang ------------------------------------------------------------------------

/// Item 1: the workload starts `sleep 30`, which holds its stdout after it exits. Before,
/// the tool read the pipe until EOF: each run waited the full 30 s (a daemon: forever).
#[test]
fn a_workload_whose_child_holds_its_output_does_not_hang_the_run() {
    let _g = lock_target_dir(FIXTURE);
    let (r, took) = optimize_with(None, &["--stages", "pgo"], Duration::from_secs(120));
    assert_exit(
        &r,
        0,
        &["warning: workload `leaves` left processes behind that kept its output open; they were killed"],
    );
    // Once per run, not once per execution of the workload.
    assert_eq!(
        r.stderr.matches("left processes behind").count(),
        1,
        "{}",
        r.stderr
    );
    assert!(took < Duration::from_secs(110), "took {took:?}");
    let report = latest_report(&target_dir(FIXTURE));
    let pgo = stage(&report, "pgo");
    assert!(
        matches!(pgo.status, Status::Kept | Status::Dropped),
        "{pgo:#?}"
    );
}

/// Item 1, the escaping kind: a child that `setsid`s is out of reach of the group kill and
/// keeps the pipe; the tool stops reading after a bounded grace instead of waiting.
#[test]
fn a_child_that_escapes_the_process_group_does_not_hang_bench() {
    let _g = shared();
    let bin = fixture_binary();
    let cmd = format!("{} setsid", bin.display());
    let tmp = copy_fixture(FIXTURE);
    let before = snapshot(tmp.path());
    let (r, took) = watched(
        tmp.path(),
        &[
            "bench",
            "--cmd",
            &cmd,
            "--cmd",
            &cmd,
            "--min-runs",
            "2",
            "--warmup",
            "0",
            "--max-time",
            "1s",
        ],
        Duration::from_secs(100),
    );
    assert_exit(
        &r,
        0,
        &["warning: workload `command` left processes behind that kept its output open and escaped its process group"],
    );
    assert!(took < Duration::from_secs(30), "took {took:?}");
    assert_eq!(before, snapshot(tmp.path()));
}

/// The fixture's release binary, built once into its shared target dir.
fn fixture_binary() -> PathBuf {
    let td = target_dir(FIXTURE);
    let out = Command::new(env!("CARGO"))
        .args(["build", "--release", "--quiet", "--target-dir"])
        .arg(&td)
        .current_dir(fixture(FIXTURE))
        .status()
        .expect("cargo build");
    assert!(out.success());
    td.join("release").join(FIXTURE)
}

// ---- bounds ---------------------------------------------------------------------------

/// Item 2: `--max-time` bounds the comparison even when `--min-runs` asks for more pairs than
/// fit (before: 100000 pairs were collected whatever the time), and says so.
#[test]
fn bench_max_time_bounds_the_comparison_even_short_of_runs() {
    let _g = shared();
    let tmp = copy_fixture(FIXTURE);
    let before = snapshot(tmp.path());
    let (r, took) = watched(
        tmp.path(),
        &[
            "bench",
            "--cmd",
            "true",
            "--cmd",
            "true",
            "--min-runs",
            "100000",
            "--max-time",
            "1s",
        ],
        Duration::from_secs(60),
    );
    assert_exit(
        &r,
        0,
        &[
            "warning: workload `command`: max-time (1s) was reached after",
            "fewer than the 100000 asked for",
            "raise max-time or ask for fewer runs",
        ],
    );
    assert!(took < Duration::from_secs(20), "took {took:?}");
    assert_eq!(before, snapshot(tmp.path()));
}

/// Item 2: durations have an upper bound (a day), in the spec and on the command line.
#[test]
fn durations_above_a_day_are_refused_with_the_bound() {
    let _g = shared();
    assert_spec_error(
        b"bin = \"leaves-child\"\n[bench]\nmax-time = \"1000000h\"\n[[workload]]\nname = \"w\"\n",
        "3:12",
        "`max-time` is 1000000h, more than the limit of 24h",
        "write at most max-time = \"24h\"",
    );
    assert_spec_error(
        b"bin = \"leaves-child\"\n[[workload]]\nname = \"w\"\ntimeout = \"100d\"\n",
        "4:11",
        "`timeout` is 2400h, more than the limit of 24h",
        "write at most timeout = \"24h\"",
    );
    let tmp = copy_fixture(FIXTURE);
    let before = snapshot(tmp.path());
    let (r, _) = watched(
        tmp.path(),
        &[
            "bench",
            "--cmd",
            "true",
            "--cmd",
            "true",
            "--max-time",
            "1000000h",
        ],
        Duration::from_secs(60),
    );
    assert_exit(
        &r,
        2,
        &[
            "`--max-time` is 1000000h, more than the limit of 24h",
            "fix: write at most --max-time 24h",
        ],
    );
    assert_eq!(before, snapshot(tmp.path()));
}

// ---- exit-code workloads ----------------------------------------------------------------

/// Item 10: a workload whose exit status is its result (`expect = "exit-code"`, exit 3) is
/// verified *and measured*: before, the bench runner failed every candidate on exit 3.
#[test]
fn exit_code_workloads_are_measured() {
    let _g = lock_target_dir(FIXTURE);
    let spec = "bin = \"leaves-child\"\n[bench]\nmax-time = \"1s\"\n\n[[workload]]\nname = \"exits-3\"\nargs = [\"exit3\"]\nexpect = \"exit-code\"\n";
    let (_dir, path) = spec_file(spec.as_bytes());
    let (r, _) = optimize_with(Some(&path), &["--stages", "pgo"], Duration::from_secs(300));
    assert_exit(&r, 0, &[]);
    assert!(!r.all().contains("measuring failed"), "{}", r.all());
    let report = latest_report(&target_dir(FIXTURE));
    let pgo = stage(&report, "pgo");
    assert!(
        matches!(pgo.status, Status::Kept | Status::Dropped),
        "{pgo:#?}"
    );
    assert!(pgo.vs_best.is_some(), "{pgo:#?}");
    let w = report
        .workloads
        .iter()
        .find(|w| w.name == "exits-3")
        .expect("workload in the report");
    let c = w.per_stage.get("pgo").expect("pgo measured");
    assert!(c.samples.iter().all(|s| s.status.code == Some(3)));
}

// ---- messages that say where and how ----------------------------------------------------

#[test]
fn a_non_utf8_spec_names_the_line_and_column_of_the_bad_byte() {
    let _g = shared();
    assert_spec_error(
        b"bin = \"leaves-child\"\n[[workload]]\nname = \"caf\xe9\"\n",
        "3:12",
        "the file is not UTF-8: byte 0xe9 (byte offset 45)",
        "save optimize.toml as UTF-8",
    );
}

#[test]
fn a_bare_number_duration_gets_the_quoted_form_as_the_fix() {
    let _g = shared();
    assert_spec_error(
        b"bin = \"leaves-child\"\n[bench]\nmax-time = 2\n[[workload]]\nname = \"w\"\n",
        "3:12",
        "`max-time` must be a string with a unit, not the number 2",
        "write max-time = \"2s\"",
    );
    assert_spec_error(
        b"bin = \"leaves-child\"\n[[workload]]\nname = \"w\"\ntimeout = 30\n",
        "4:11",
        "`timeout` must be a string with a unit, not the number 30",
        "write timeout = \"30s\"",
    );
}

/// `--margin 0` was accepted though the spec refuses `margin = 0`: one check, one wording.
#[test]
fn margin_zero_is_refused_on_the_command_line_as_in_the_spec() {
    let _g = shared();
    assert_spec_error(
        b"bin = \"leaves-child\"\n[bench]\nmargin = 0\n[[workload]]\nname = \"w\"\n",
        "3:10",
        "`margin` must be between 0 and 0.5 (exclusive), not 0",
        "margin = 0.01 means differences within 1 % count as equivalent",
    );
    let tmp = copy_fixture(FIXTURE);
    let before = snapshot(tmp.path());
    let (r, _) = watched(
        tmp.path(),
        &["bench", "--cmd", "true", "--cmd", "true", "--margin", "0"],
        Duration::from_secs(60),
    );
    assert_exit(
        &r,
        2,
        &[
            "`--margin` must be between 0 and 0.5 (exclusive), not 0",
            "fix: --margin 0.01 means differences within 1 % count as equivalent",
        ],
    );
    assert!(r.stdout.is_empty(), "nothing was measured:\n{}", r.stdout);
    assert_eq!(before, snapshot(tmp.path()));
}

#[test]
fn an_unclosed_placeholder_is_an_error_with_the_fix() {
    let _g = shared();
    assert_spec_error(
        b"bin = \"leaves-child\"\n[[workload]]\nname = \"w\"\nargs = [\"--in\", \"{root/data.txt\"]\n",
        "4:18",
        "unclosed placeholder {root: the closing `}` is missing",
        "write {root}, e.g. \"{root}/data/input.txt\"",
    );
}

#[test]
fn absolute_output_files_are_refused() {
    let _g = shared();
    assert_spec_error(
        b"bin = \"leaves-child\"\n[[workload]]\nname = \"w\"\nfiles = [\"/tmp/out.json\"]\n",
        "4:10",
        "output file /tmp/out.json is an absolute path; `files` must be relative to the workload's cwd",
        "write the path relative to the workload's cwd",
    );
}

/// "Argument list too long" named neither the workload nor the size.
#[test]
fn argument_list_too_long_names_the_workload_and_the_size() {
    let _g = lock_target_dir(FIXTURE);
    let spec = format!(
        "bin = \"leaves-child\"\n[stages]\ntry = [\"none\"]\n[[workload]]\nname = \"huge-arg\"\nargs = [\"{}\"]\n",
        "x".repeat(200 * 1024)
    );
    let (_dir, path) = spec_file(spec.as_bytes());
    let (r, _) = optimize_with(Some(&path), &[], Duration::from_secs(300));
    assert_exit(
        &r,
        2,
        &[
            "for workload `huge-arg`: Argument list too long",
            "; 1 argument, 20",
            "fix: pass large inputs in a file",
        ],
    );
}

/// Issue 36 item 10: a build script that sleeps hung the tool forever (cargo builds had no
/// bound). Now every build has one (`CARGO_OPTIMIZE_BUILD_TIMEOUT`, else 2h): past it
/// cargo, rustc and the build script are killed together, and the error names the build,
/// the bound and the fix. The build script writes its pid and cargo's before it sleeps;
/// both are gone when the tool has exited, and what it writes after its sleep never is.
#[test]
fn a_build_past_its_bound_is_stopped_with_everything_it_started() {
    let _g = shared();
    let tmp = tempfile::tempdir().unwrap();
    let pids = tmp.path().join("pids");
    let td = tmp.path().join("target");
    let args = [
        "optimize",
        "--stages",
        "none",
        "--target-dir",
        td.to_str().unwrap(),
    ];
    let env = [
        ("CARGO_OPTIMIZE_BUILD_TIMEOUT", Path::new("20s")),
        ("SLOW_BUILD_PIDS", pids.as_path()),
    ];
    let (r, _) = watched_env(
        &fixture("slow-build"),
        &args,
        Duration::from_secs(240),
        &env,
    );
    assert_exit(
        &r,
        2,
        &[
            "the build `",
            "did not finish within 20s and was stopped, with everything it started",
            "fix: a build script or proc macro",
            "CARGO_OPTIMIZE_BUILD_TIMEOUT=4h",
        ],
    );
    let text = std::fs::read_to_string(&pids).expect("the build script started");
    for pid in text.split_whitespace() {
        assert!(
            gone(pid),
            "process {pid} (build script, cargo) outlived the tool"
        );
    }
    let mut done = pids.into_os_string();
    done.push(".done");
    assert!(
        !Path::new(&done).exists(),
        "the build script ran to its end"
    );
}

/// Whether process `pid` has ended (no /proc entry, or a zombie its new parent has not
/// reaped yet); a killed process is given a few seconds to get there.
fn gone(pid: &str) -> bool {
    let stat = Path::new("/proc").join(pid).join("stat");
    for _ in 0..100 {
        match std::fs::read_to_string(&stat) {
            Err(_) => return true,
            Ok(s)
                if s.rsplit(')')
                    .next()
                    .is_some_and(|r| r.trim_start().starts_with('Z')) =>
            {
                return true
            }
            Ok(_) => std::thread::sleep(Duration::from_millis(100)),
        }
    }
    false
}
