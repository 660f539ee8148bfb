//! The command line as a shell sees it (issue 26, items 1 and 2): shell completions and
//! cargo's flags reaching cargo, a closed stdout (a real pipe), the colour variables on
//! every command, and `--message-format json` parsed back from a real fixture run.

use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::Value;

use crate::common::*;

/// `cargo-optimize optimize ARGS` in `cwd` with exactly these colour variables (the
/// others removed), stdout and stderr captured.
fn coloured(cwd: &Path, args: &[&str], env: &[(&str, &str)]) -> Run {
    let mut cmd = Command::new(tool());
    cmd.arg("optimize").args(args).current_dir(cwd);
    for k in ["NO_COLOR", "CLICOLOR_FORCE", "CLICOLOR", "CARGO_TERM_COLOR"] {
        cmd.env_remove(k);
    }
    cmd.envs(env.iter().copied());
    let out = cmd.output().expect("run cargo-optimize");
    Run {
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

fn demo_report() -> String {
    fixture("reports/demo/report.json").display().to_string()
}

#[test]
fn completions_name_every_subcommand_and_bash_parses_them() {
    let _g = shared();
    let tmp = Path::new(env!("CARGO_TARGET_TMPDIR"));
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let r = run(tmp, &["optimize", "completions", shell], &[]);
        assert_eq!(r.code, Some(0), "{}", r.all());
        for word in [
            "hotspots",
            "release",
            "completions",
            "message-format",
            "min-runs",
        ] {
            assert!(r.stdout.contains(word), "{shell}: no `{word}`");
        }
    }
    let bash = run(tmp, &["optimize", "completions", "bash"], &[]);
    let script = tmp.join("cargo-optimize.bash");
    std::fs::write(&script, &bash.stdout).unwrap();
    let syntax = Command::new("bash")
        .arg("-n")
        .arg(&script)
        .output()
        .unwrap();
    assert!(
        syntax.status.success(),
        "{}",
        String::from_utf8_lossy(&syntax.stderr)
    );
    let bad = run(tmp, &["optimize", "completions", "tcsh"], &[]);
    assert_eq!(bad.code, Some(2), "{}", bad.all());
    assert!(bad.stderr.contains("tcsh"), "{}", bad.stderr);
}

#[test]
fn global_options_before_the_subcommand_and_a_typo_s_suggestion() {
    let _g = shared();
    let tmp = Path::new(env!("CARGO_TARGET_TMPDIR"));
    let r = run(
        tmp,
        &[
            "optimize", "-q", "--color", "never", "doctor", "--format", "json",
        ],
        &[],
    );
    let v: Value = serde_json::from_str(&r.stdout).unwrap_or_else(|e| panic!("{e}: {}", r.all()));
    assert!(v["ready"].is_boolean(), "{v}");
    let typo = run(tmp, &["optimize", "bnech"], &[]);
    assert_eq!(typo.code, Some(2));
    assert!(
        typo.stderr.contains("a similar subcommand exists: 'bench'"),
        "{}",
        typo.stderr
    );
    let wrong = run(tmp, &["optimize", "-F", "x", "doctor"], &[]);
    assert_eq!(wrong.code, Some(2));
    assert!(
        wrong
            .stderr
            .contains("`--features` is not an option of `cargo optimize doctor`"),
        "{}",
        wrong.stderr
    );
}

/// `--config` reaches cargo (a value cargo refuses is cargo's error, naming the key), and
/// `--locked --offline -j 1` build the baseline of a fixture whose lock file is complete.
#[test]
fn cargo_s_flags_reach_every_cargo_call() {
    let _g = lock_target_dir("lto-helps");
    let td = target_dir("lto-helps");
    let dir = fixture("lto-helps");
    let tdir = td.to_str().unwrap();
    let r = run(
        &dir,
        &[
            "optimize",
            "--config",
            "build.jobs=0",
            "--stages",
            "none",
            "--target-dir",
            tdir,
        ],
        &[],
    );
    assert_eq!(r.code, Some(2), "{}", r.all());
    assert!(
        r.stderr.contains("jobs"),
        "cargo saw --config: {}",
        r.stderr
    );
    let r = run(
        &dir,
        &[
            "optimize",
            "--locked",
            "--offline",
            "-j",
            "1",
            "--stages",
            "none",
            "--target-dir",
            tdir,
        ],
        &[],
    );
    assert_eq!(r.code, Some(0), "{}", r.all());
}

/// A reader that goes away ends the command with exit 0 and nothing on stderr: the write
/// of a result (`report`, through `util::atomic::emit`) and `print!` (`bench`'s lines).
#[test]
fn a_closed_stdout_ends_the_command_quietly_with_exit_0() {
    let _g = shared();
    let tmp = Path::new(env!("CARGO_TARGET_TMPDIR"));
    let cases: [&[&str]; 3] = [
        &["report", &demo_report(), "--format", "json"],
        &["report", &demo_report(), "--format", "md"],
        &[
            "bench",
            "--cmd",
            "true",
            "--cmd",
            "true",
            "--max-time",
            "1s",
        ],
    ];
    for args in cases {
        let mut child = Command::new(tool())
            .arg("optimize")
            .args(args)
            .current_dir(tmp)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // The reader goes before the command writes anything.
        drop(child.stdout.take());
        let mut stderr = String::new();
        child
            .stderr
            .take()
            .unwrap()
            .read_to_string(&mut stderr)
            .unwrap();
        let status = child.wait().unwrap();
        assert_eq!(status.code(), Some(0), "{args:?}: {stderr}");
        assert!(!stderr.contains("Broken pipe"), "{args:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
    }
    // And as a shell pipeline: `| head -1`, the command's own status.
    let line = format!(
        "'{}' optimize report '{}' --format json | head -1; exit ${{PIPESTATUS[0]}}",
        tool().display(),
        demo_report()
    );
    let out = Command::new("bash").args(["-c", &line]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "{\n");
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn colour_follows_color_cargo_term_color_no_color_and_clicolor_force() {
    let _g = shared();
    let tmp = Path::new(env!("CARGO_TARGET_TMPDIR"));
    let esc = |r: &Run| r.stdout.contains("\x1b[");
    for (args, env, want) in [
        (&["doctor"][..], &[][..], false),
        (&["doctor"], &[("CLICOLOR_FORCE", "1")], true),
        (
            &["doctor", "--color", "never"],
            &[("CLICOLOR_FORCE", "1")],
            false,
        ),
        (&["doctor"], &[("CARGO_TERM_COLOR", "always")], true),
        (&["--color", "always", "doctor"], &[], true),
        (
            &["doctor", "--color", "always"],
            &[("CARGO_TERM_COLOR", "never")],
            true,
        ),
        (
            &["doctor"],
            &[("CLICOLOR_FORCE", "1"), ("NO_COLOR", "1")],
            false,
        ),
        (
            &["doctor", "--format", "json", "--color", "always"],
            &[],
            false,
        ),
        (&["report", &demo_report()], &[], false),
        (
            &["report", &demo_report()],
            &[("CLICOLOR_FORCE", "1")],
            true,
        ),
        (&["report", &demo_report(), "--color", "always"], &[], true),
        (
            &["report", &demo_report()],
            &[("CARGO_TERM_COLOR", "always"), ("NO_COLOR", "1")],
            true,
        ),
    ] {
        let r = coloured(tmp, args, env);
        assert!(matches!(r.code, Some(0 | 1)), "{args:?}: {}", r.all());
        assert_eq!(esc(&r), want, "{args:?} {env:?}:\n{}", r.stdout);
    }
    // The hotspots command's progress is stderr's: a run without a profile says so,
    // uncoloured unless asked.
    let plain = coloured(tmp, &["hotspots", &demo_report()], &[]);
    let forced = coloured(tmp, &["hotspots", &demo_report(), "--color", "always"], &[]);
    assert!(!plain.stderr.contains("\x1b["), "{}", plain.stderr);
    assert_eq!(plain.code, forced.code);
}

/// `--message-format json` on a real run: every stdout line is one JSON object with an
/// `event`, in order: the baseline's start and build first, the ship last; the verdict's
/// status is the report's row's.
#[test]
fn message_format_json_is_one_event_per_line_and_matches_the_report() {
    let _g = lock_target_dir("lto-helps");
    let r = optimize(
        "lto-helps",
        &["--stages", "profile", "--message-format", "json"],
        &[],
    );
    assert!(matches!(r.code, Some(0)), "{}", r.all());
    let events: Vec<Value> = BufReader::new(r.stdout.as_bytes())
        .lines()
        .map(|l| {
            let l = l.unwrap();
            serde_json::from_str(&l).unwrap_or_else(|e| panic!("not JSON: {e}: {l}"))
        })
        .collect();
    let kinds: Vec<&str> = events
        .iter()
        .map(|e| e["event"].as_str().unwrap())
        .collect();
    assert_eq!(kinds.first(), Some(&"stage-started"), "{kinds:?}");
    assert_eq!(events[0]["stage"], "baseline");
    assert_eq!(kinds.last(), Some(&"ship"), "{kinds:?}");
    for kind in ["built", "verified", "estimate", "verdict"] {
        assert!(kinds.contains(&kind), "no {kind} in {kinds:?}");
    }
    let of = |kind: &'static str| events.iter().filter(move |e| e["event"] == kind);
    assert!(of("stage-started").any(|e| e["stage"] == "profile"));
    assert!(of("built").any(|e| e["candidate"] == "baseline"));
    for e in of("built") {
        assert!(
            e["seconds"].as_f64().is_some() && e["binary"].is_string(),
            "{e}"
        );
    }
    for e in of("estimate") {
        assert!(e["look"].as_u64().unwrap() >= 1, "{e}");
        let est = &e["estimate"];
        assert!(est["ci_low"].as_f64() <= est["ratio"].as_f64(), "{e}");
        assert!(e["workload"] == "sum", "{e}");
    }
    // A dry run's plan is an event too: one JSON object, nothing else on stdout.
    let dry = optimize("lto-helps", &["--message-format", "json", "--dry-run"], &[]);
    assert!(matches!(dry.code, Some(0)), "{}", dry.all());
    let plan: Value = serde_json::from_str(dry.stdout.trim())
        .unwrap_or_else(|e| panic!("not one JSON object: {e}: {}", dry.stdout));
    assert_eq!(plan["event"], "plan");
    assert!(
        plan["last_run"]["seconds"].as_f64().unwrap() > 0.0,
        "{plan}"
    );
    let report = latest_report(&target_dir("lto-helps"));
    let row = stage(&report, "profile");
    let verdict = of("verdict")
        .find(|e| e["candidate"] == "profile")
        .expect("profile's verdict");
    assert_eq!(verdict["status"], row.status.as_str(), "{verdict}");
    assert_eq!(verdict["rival"], "baseline");
    let ship = events.last().unwrap();
    assert_eq!(
        ship["final"]["stage"],
        final_choice(&report).stage,
        "{ship}"
    );
    assert!(
        Path::new(ship["report"].as_str().unwrap()).is_file(),
        "{ship}"
    );
    // The ladder is not printed between the events; people's lines stay on stderr.
    assert!(!r.stdout.contains("stage "), "{}", r.stdout);
    assert!(r.stderr.contains("baseline"), "{}", r.stderr);
}

/// `bench --format json` prints only the JSON on stdout (the lines for a person go to
/// stderr); `-o FILE` writes the result there and nothing to stdout.
#[test]
fn bench_takes_format_and_o_like_every_command() {
    let _g = shared();
    let tmp = tempfile::tempdir().unwrap();
    let base = [
        "optimize",
        "bench",
        "--cmd",
        "true",
        "--cmd",
        "true",
        "--max-time",
        "1s",
    ];
    let json = run(
        tmp.path(),
        &[&base[..], &["--format", "json"]].concat(),
        &[],
    );
    assert_eq!(json.code, Some(0), "{}", json.all());
    let v: Value =
        serde_json::from_str(&json.stdout).unwrap_or_else(|e| panic!("{e}: {}", json.stdout));
    assert_eq!(v["kind"], "bench");
    assert!(json.stderr.contains("A: true"), "{}", json.stderr);
    let file = tmp.path().join("bench.md");
    let md = run(
        tmp.path(),
        &[&base[..], &["--format", "md", "-o", file.to_str().unwrap()]].concat(),
        &[],
    );
    assert_eq!(md.code, Some(0), "{}", md.all());
    assert!(md.stdout.is_empty(), "{}", md.stdout);
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(
        text.contains("| command |") || text.contains("command"),
        "{text}"
    );
    assert!(!text.contains("A: true"), "{text}");
}

/// Issue 36, item 16: a run that fails under `--message-format json` ends its stdout with an
/// `error` event (the message stderr gets, exit 2), so a program reading stdout learns why.
#[test]
fn a_failed_run_ends_its_json_events_with_an_error_event() {
    let _g = shared();
    let tmp = copy_fixture("pgo-basic");
    let r = run(
        tmp.path(),
        &[
            "optimize",
            "--message-format",
            "json",
            "--spec",
            "missing.toml",
        ],
        &[],
    );
    assert_eq!(r.code, Some(2), "{}", r.all());
    let last = r
        .stdout
        .lines()
        .last()
        .unwrap_or_else(|| panic!("{}", r.all()));
    let event: Value =
        serde_json::from_str(last).unwrap_or_else(|e| panic!("not a JSON object: {e}: {last}"));
    assert_eq!(event["event"], "error", "{event}");
    assert_eq!(event["exit_code"], 2, "{event}");
    let message = event["message"].as_str().unwrap();
    assert!(message.contains("missing.toml"), "{event}");
    assert!(
        r.stderr.contains(message.lines().next().unwrap()),
        "{}",
        r.stderr
    );
}
