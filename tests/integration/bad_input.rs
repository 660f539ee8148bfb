//! Bad input: each gets a message naming the file/line/cause and the fix, a non-zero
//! exit, and leaves the user's files as they were.
//!
//! The runs with `target_dir("pgo-basic")` take its lock: those that get as far as the
//! pipeline repoint its `optimize/latest`, which the pipeline and ladder tests read.

use std::path::Path;

use crate::common::*;

/// Run with a spec text written to a temp file (`--spec`), from the fixture's folder.
fn with_spec(fixture_name: &str, spec: &str, extra: &[&str]) -> (Run, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap().keep();
    let path = dir.join("optimize.toml");
    std::fs::write(&path, spec).unwrap();
    let before = snapshot(&fixture(fixture_name));
    let td = target_dir(fixture_name);
    let mut args = vec![
        "--spec",
        path.to_str().unwrap(),
        "--target-dir",
        td.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let r = run(&fixture(fixture_name), &args, &[]);
    assert_eq!(
        before,
        snapshot(&fixture(fixture_name)),
        "the fixture was modified"
    );
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        spec,
        "the spec was modified"
    );
    (r, path)
}

fn assert_failed_with(r: &Run, needles: &[&str]) {
    assert!(
        r.code.is_some() && r.code != Some(0),
        "exit code {:?}\n{}",
        r.code,
        r.all()
    );
    for n in needles {
        assert!(r.stderr.contains(n), "stderr lacks {n:?}:\n{}", r.stderr);
    }
}

#[test]
fn malformed_toml_names_file_line_and_column() {
    let _guard = lock_target_dir("pgo-basic");
    let (r, path) = with_spec(
        "pgo-basic",
        "bin = \"pgo-basic\"\n[[workload]]\nname = \"x\nargs = []\n",
        &[],
    );
    assert_failed_with(&r, &[&format!("{}:3:", path.display())]);
}

#[test]
fn unknown_key_names_its_position_and_the_valid_keys() {
    let _guard = lock_target_dir("pgo-basic");
    let spec = "bin = \"pgo-basic\"\n\n[[workload]]\nname = \"x\"\nargz = [\"1\"]\n";
    let (r, path) = with_spec("pgo-basic", spec, &[]);
    assert_failed_with(&r, &[&format!("{}:5:1", path.display()), "argz", "fix:"]);
}

#[test]
fn missing_spec_suggests_init() {
    let _guard = shared();
    let tmp = copy_fixture("pgo-basic");
    std::fs::remove_file(tmp.path().join("optimize.toml")).unwrap();
    let before = snapshot(tmp.path());
    let r = run(tmp.path(), &["optimize"], &[]);
    assert_failed_with(&r, &["optimize.toml", "cargo optimize init"]);
    assert_eq!(before, snapshot(tmp.path()));
}

#[test]
fn several_binaries_without_a_choice_is_an_error_listing_them() {
    let _guard = shared();
    let before = snapshot(&fixture("multi-bin"));
    let td = target_dir("multi-bin");
    let r = run(
        &fixture("multi-bin"),
        &["--target-dir", td.to_str().unwrap()],
        &[],
    );
    assert_failed_with(&r, &["alpha", "beta", "--bin"]);
    assert_eq!(before, snapshot(&fixture("multi-bin")));
}

#[test]
fn unknown_bin_and_unknown_package_list_what_exists() {
    let _guard = shared();
    let td = target_dir("multi-bin");
    let r = run(
        &fixture("multi-bin"),
        &["--bin", "gamma", "--target-dir", td.to_str().unwrap()],
        &[],
    );
    assert_failed_with(&r, &["gamma", "alpha, beta"]);
    let r = run(
        &fixture("multi-bin"),
        &["-p", "nope", "--target-dir", td.to_str().unwrap()],
        &[],
    );
    assert_failed_with(&r, &["nope", "multi-bin"]);
}

#[test]
fn workload_failing_on_the_baseline_shows_exit_code_and_stderr_tail() {
    let _guard = lock_target_dir("pgo-basic");
    let spec = r#"bin = "pgo-basic"
[stages]
try = ["pgo"]

[[workload]]
name = "bad-arg"
args = ["definitely-not-a-number"]
"#;
    let (r, path) = with_spec("pgo-basic", spec, &[]);
    assert_failed_with(
        &r,
        &[
            &format!("{}:5", path.display()),
            "bad-arg",
            "exit code",
            "fix:",
        ],
    );
}

/// A crash is said as a crash, with the signal, and never answered with "accept it"
/// (`expect = "exit-code"`); under `exit-code` a crash is accepted with a warning.
#[test]
fn a_crashing_baseline_names_the_signal_and_never_suggests_accepting_it() {
    let _guard = lock_target_dir("abort-exit");
    let spec = "bin = \"abort-exit\"\n[stages]\ntry = [\"cpu\"]\n\n[[workload]]\nname = \"abort\"\nargs = [\"crash\"]\n";
    let (r, path) = with_spec("abort-exit", spec, &[]);
    assert_failed_with(
        &r,
        &[
            &format!(
                "{}:5: workload `abort` crashed on the baseline",
                path.display()
            ),
            "killed by signal 6 (SIGABRT)",
            "the program crashed on this input",
            "fix: run the workload's command by hand",
        ],
    );
    assert!(!r.stderr.contains("exit-code"), "{}", r.stderr);
    let spec = spec.replace(
        "args = [\"crash\"]\n",
        "args = [\"crash\"]\nexpect = \"exit-code\"\n",
    );
    let (r, _) = with_spec("abort-exit", &spec, &["--stages", "none"]);
    assert_eq!(r.code, Some(0), "{}", r.all());
    assert!(
        r.stderr.contains("workload `abort` crashes on the baseline (killed by signal 6 (SIGABRT)); under `expect = \"exit-code\"` every candidate must crash the same way"),
        "{}",
        r.stderr
    );
}

#[test]
fn workload_exceeding_its_timeout_is_killed_and_reported() {
    let _guard = lock_target_dir("pgo-basic");
    let spec = r#"bin = "pgo-basic"
[[workload]]
name = "forever"
args = ["100000000000"]
timeout = "300ms"
"#;
    let start = std::time::Instant::now();
    let (r, _) = with_spec("pgo-basic", spec, &[]);
    assert_failed_with(&r, &["forever", "timeout", "300ms"]);
    assert!(start.elapsed() < std::time::Duration::from_secs(120));
}

#[test]
fn llvm_profdata_of_another_llvm_major_is_refused() {
    let _guard = lock_target_dir("pgo-basic");
    let other = Path::new("/usr/lib/llvm-14/bin/llvm-profdata");
    if !other.exists() {
        return missing_tool(
            "LLVM 14's llvm-profdata",
            "scripts/test installs it: apt-get install llvm-14",
        );
    }
    let td = target_dir("pgo-basic");
    let before = snapshot(&fixture("pgo-basic"));
    let r = run(
        &fixture("pgo-basic"),
        &["--target-dir", td.to_str().unwrap(), "--stages", "pgo"],
        &[("CARGO_OPTIMIZE_LLVM_PROFDATA", other.to_str().unwrap())],
    );
    assert_failed_with(
        &r,
        &["llvm-profdata", "14", "rustup component add llvm-tools"],
    );
    assert_eq!(before, snapshot(&fixture("pgo-basic")));
}

#[test]
fn init_writes_a_parseable_skeleton_and_never_overwrites() {
    let _guard = shared();
    let tmp = copy_fixture("pgo-basic");
    let spec = tmp.path().join("optimize.toml");
    std::fs::remove_file(&spec).unwrap();
    let r = run(tmp.path(), &["init"], &[]);
    assert_eq!(r.code, Some(0), "{}", r.all());
    let written = std::fs::read_to_string(&spec).unwrap();
    assert!(written.contains("bin = \"pgo-basic\""), "{written}");
    assert!(written.contains('#'), "the skeleton should be commented");
    // A second init refuses and leaves the file alone.
    std::fs::write(&spec, "# mine\n").unwrap();
    let r = run(tmp.path(), &["init"], &[]);
    assert_failed_with(&r, &["already exists"]);
    assert_eq!(std::fs::read_to_string(&spec).unwrap(), "# mine\n");
}

#[test]
fn init_needs_a_bin_choice_when_there_are_several() {
    let _guard = shared();
    let tmp = copy_fixture("multi-bin");
    let _ = std::fs::remove_file(tmp.path().join("optimize.toml"));
    let r = run(tmp.path(), &["init"], &[]);
    assert_failed_with(&r, &["alpha", "beta", "--bin"]);
    assert!(!tmp.path().join("optimize.toml").exists());
    let r = run(tmp.path(), &["init", "--bin", "beta"], &[]);
    assert_eq!(r.code, Some(0), "{}", r.all());
    assert!(std::fs::read_to_string(tmp.path().join("optimize.toml"))
        .unwrap()
        .contains("bin = \"beta\""));
}

#[test]
fn a_package_without_a_binary_is_refused_with_the_fix() {
    let _guard = shared();
    let tmp = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(tmp.path().join("src")).unwrap();
    std::fs::write(
        tmp.path().join("Cargo.toml"),
        "[package]\nname = \"only-lib\"\nversion = \"0.1.0\"\nedition = \"2021\"\n[workspace]\n",
    )
    .unwrap();
    std::fs::write(tmp.path().join("src/lib.rs"), "pub fn f() {}\n").unwrap();
    std::fs::write(
        tmp.path().join("optimize.toml"),
        "[[workload]]\nname = \"w\"\n",
    )
    .unwrap();
    let before = snapshot(tmp.path());
    let r = run(tmp.path(), &["optimize"], &[]);
    assert_failed_with(&r, &["only-lib", "no binary target", "fix:"]);
    let r = run(tmp.path(), &["init"], &[]);
    assert_failed_with(&r, &["no binary target"]);
    assert_eq!(before, snapshot(tmp.path()));
}
