//! `cargo optimize check` and `ci` on a real git repository: the `check-regress`
//! fixture copied into a temp dir, committed, and changed by a second commit (a hot loop
//! that runs more rounds: slower, same output) or in the working tree (another output).
//! The timing tests run alone; their effect is large by construction (several times the
//! work). The same commit against itself gives the same bytes, which are not measured.

use std::path::Path;

use serde_json::Value;

use crate::common::*;

/// The fixture in a fresh git repository: one commit as it is.
fn repo() -> tempfile::TempDir {
    let tmp = copy_fixture("check-regress");
    commit_all(tmp.path());
    tmp
}

/// Replace `from` by `to` in the repository's src/main.rs.
fn edit(dir: &Path, from: &str, to: &str) {
    let p = dir.join("src/main.rs");
    let text = std::fs::read_to_string(&p).unwrap();
    assert!(text.contains(from), "{from} not in {}", p.display());
    std::fs::write(&p, text.replace(from, to)).unwrap();
}

fn check(dir: &Path, args: &[&str]) -> Run {
    let mut all = vec!["optimize", "check"];
    all.extend_from_slice(args);
    run(dir, &all, &[("GIT_CONFIG_GLOBAL", "/dev/null")])
}

/// check.json of the newest check, and that `--format json` printed the same.
fn report(dir: &Path) -> Value {
    let text =
        std::fs::read_to_string(dir.join("target/optimize/check/latest/check.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

fn workload<'a>(r: &'a Value, name: &str) -> &'a Value {
    r["workloads"]
        .as_array()
        .unwrap()
        .iter()
        .find(|w| w["name"] == name)
        .unwrap_or_else(|| panic!("no workload {name} in {r:#}"))
}

/// The user's files (not git's own, nor target/).
fn user_files(dir: &Path) -> std::collections::BTreeMap<std::path::PathBuf, Vec<u8>> {
    let mut s = snapshot(dir);
    s.retain(|p, _| !p.starts_with(dir.join(".git")));
    s
}

/// No worktree is left registered or on disk.
fn no_worktree_left(dir: &Path) {
    let list = git(dir, &["worktree", "list", "--porcelain"]);
    assert_eq!(list.matches("worktree ").count(), 1, "{list}");
    let left = dir.join("target/optimize/check/worktrees");
    let n = std::fs::read_dir(&left).map(|d| d.count()).unwrap_or(0);
    assert_eq!(n, 0, "left in {}", left.display());
}

#[test]
fn a_slower_second_commit_fails_naming_the_workload() {
    let _guard = exclusive();
    let tmp = repo();
    let dir = tmp.path();
    edit(dir, "const ROUNDS: u64 = 1;", "const ROUNDS: u64 = 4;");
    git(dir, &["commit", "-q", "-am", "four rounds"]);
    let before = user_files(dir);
    let r = check(dir, &["--against", "HEAD~1", "--format", "json"]);
    assert_eq!(r.code, Some(1), "{}", r.all());
    let json: Value = serde_json::from_str(&r.stdout).expect("--format json prints check.json");
    assert_eq!(json, report(dir));
    measured(&json);
    let hot = workload(&json, "hot");
    assert_eq!(hot["judgement"], "regression", "{hot:#}");
    let low = hot["ratio"]["ci_low"].as_f64().unwrap();
    assert!(low > 1.05, "{hot:#}");
    assert_ne!(
        workload(&json, "cold")["judgement"],
        "regression",
        "{json:#}"
    );
    let failures = json["failures"].as_array().unwrap();
    assert_eq!(failures.len(), 1, "{json:#}");
    assert!(
        failures[0]
            .as_str()
            .unwrap()
            .starts_with("workload `hot`: regression: new/old = "),
        "{json:#}"
    );
    assert_eq!(
        json["against"]["commit"].as_str().unwrap().trim(),
        git(dir, &["rev-parse", "HEAD~1"]).trim()
    );
    assert_eq!(json["exit_code"], 1);
    // The Markdown beside it says the same; nothing of the user's changed; no worktree left.
    let md = std::fs::read_to_string(dir.join("target/optimize/check/latest/check.md")).unwrap();
    assert!(
        md.starts_with("## cargo optimize check: ❌ failed (1 problem)"),
        "{md}"
    );
    assert!(
        md.lines()
            .any(|l| l.starts_with("| `hot` |") && l.contains("❌ regression")),
        "{md}"
    );
    assert!(before == user_files(dir), "the user's files changed");
    no_worktree_left(dir);
}

#[test]
fn the_same_commit_against_itself_passes_and_its_build_is_kept() {
    let _guard = shared();
    let tmp = repo();
    let dir = tmp.path();
    let r = check(dir, &["--against", "HEAD"]);
    assert_eq!(r.code, Some(0), "{}", r.all());
    let json = report(dir);
    for w in json["workloads"].as_array().unwrap() {
        assert_eq!(w["judgement"], "byte-identical", "{w:#}");
    }
    assert!(r.stdout.contains("\nPASS\n"), "{}", r.stdout);
    assert!(r.stdout.contains("byte-identical binaries"), "{}", r.stdout);
    // Checked again: the revision's build is reused (its bytes checked), not rebuilt.
    let again = check(dir, &["--against", "main", "--format", "md"]);
    assert_eq!(again.code, Some(0), "{}", again.all());
    assert!(
        again
            .stdout
            .starts_with("## cargo optimize check: ✅ passed"),
        "{}",
        again.stdout
    );
    assert!(
        again
            .stdout
            .contains("was kept from an earlier check (its bytes checked)"),
        "{}",
        again.stdout
    );
    assert!(
        !again.stderr.contains("building check-regress at"),
        "{}",
        again.stderr
    );
    // `-o FILE`: the result goes to FILE instead of stdout (as for every command).
    let to_file = dir.join("check-out.md");
    let o = check(
        dir,
        &[
            "--against",
            "main",
            "--format",
            "md",
            "-o",
            to_file.to_str().unwrap(),
        ],
    );
    assert_eq!(o.code, Some(0), "{}", o.all());
    assert!(o.stdout.is_empty(), "{}", o.stdout);
    let written = std::fs::read_to_string(&to_file).unwrap();
    assert!(
        written.starts_with("## cargo optimize check: ✅ passed"),
        "{written}"
    );
    // A kept build whose bytes changed is not trusted: built again.
    // (Its record in cache/revs/ names its blob in cache/blobs/.)
    let revs = dir.join("target/optimize/cache/revs");
    let record = std::fs::read_dir(&revs)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|x| x == "json"))
        .unwrap();
    let record: serde_json::Value =
        serde_json::from_slice(&std::fs::read(record).unwrap()).unwrap();
    let blob = record["value"]["blob"].as_str().unwrap();
    let bin = dir.join("target/optimize/cache/blobs").join(blob);
    std::fs::write(&bin, b"not the binary").unwrap();
    let third = check(dir, &["--against", "HEAD", "--max-time", "1s"]);
    assert_eq!(third.code, Some(0), "{}", third.all());
    assert!(
        third
            .stderr
            .contains("does not match its record; building it again"),
        "{}",
        third.stderr
    );
    no_worktree_left(dir);
}

#[test]
fn a_budget_the_fixture_misses_fails_with_the_measured_value() {
    let _guard = shared();
    let tmp = repo();
    let dir = tmp.path();
    let spec = std::fs::read_to_string(dir.join("optimize.toml")).unwrap();
    let spec = spec.replace(
        "args = [\"hot\", \"8\"]\n",
        "args = [\"hot\", \"8\"]\nbudget = { time = \"1ms\", max-rss = \"1G\" }\n",
    );
    std::fs::write(dir.join("optimize.toml"), &spec).unwrap();
    let line = spec.lines().position(|l| l.starts_with("budget")).unwrap() + 1;
    let r = check(dir, &["--max-time", "1s"]);
    assert_eq!(r.code, Some(1), "{}", r.all());
    let json = report(dir);
    let b = &workload(&json, "hot")["budgets"];
    assert_eq!(b[0]["kind"], "time");
    assert_eq!(b[0]["over"], true);
    let mean = b[0]["measured"]["mean"].as_f64().unwrap();
    assert!(mean > 0.001, "{b:#}");
    assert_eq!(b[1]["kind"], "max-rss");
    assert_eq!(b[1]["over"], false, "{b:#}");
    // The failure names the workload, the measured value with its interval, the budget
    // and where it is written.
    let shown = format!(
        "mean {} [",
        cargo_optimize::testing::bench::format_secs(mean)
    );
    let fail = r
        .stdout
        .lines()
        .find(|l| l.contains("time budget exceeded"))
        .unwrap_or_else(|| panic!("{}", r.stdout));
    assert!(
        fail.contains("workload `hot`") && fail.contains(&shown),
        "{fail} / {shown}"
    );
    assert!(
        fail.ends_with(&format!("> budget 1.00 ms (optimize.toml:{line})")),
        "{fail}"
    );
    assert!(
        r.stdout.contains("the working tree alone (budgets only"),
        "{}",
        r.stdout
    );
}

#[test]
fn a_changed_output_is_reported_not_timed() {
    let _guard = shared();
    let tmp = repo();
    let dir = tmp.path();
    edit(dir, "const OFFSET: u64 = 0;", "const OFFSET: u64 = 1;");
    let r = check(
        dir,
        &[
            "--against",
            "HEAD",
            "--max-time",
            "1s",
            "--format",
            "github",
        ],
    );
    assert_eq!(r.code, Some(1), "{}", r.all());
    let json = report(dir);
    let hot = workload(&json, "hot");
    let what = hot["output_changed"]
        .as_str()
        .unwrap_or_else(|| panic!("{hot:#}"));
    assert!(what.starts_with("stdout differs at line 1"), "{what}");
    assert!(
        hot["ratio"].is_null() && hot["time"].is_null(),
        "timed: {hot:#}"
    );
    assert_eq!(workload(&json, "cold")["output_changed"], Value::Null);
    assert!(workload(&json, "cold")["ratio"].is_object(), "{json:#}");
    let err = r
        .stdout
        .lines()
        .find(|l| l.starts_with("::error title=output changed::"))
        .unwrap_or_else(|| panic!("{}", r.stdout));
    assert!(
        err.contains("workload `hot`") && err.contains("stdout differs"),
        "{err}"
    );
    no_worktree_left(dir);
}

#[test]
fn a_revision_that_does_not_exist_is_exit_2_with_the_fix() {
    let _guard = shared();
    let tmp = repo();
    let dir = tmp.path();
    let r = check(dir, &["--against", "no-such-branch"]);
    assert_eq!(r.code, Some(2), "{}", r.all());
    assert!(
        r.stderr
            .contains("--against no-such-branch: no such revision in the git repository at"),
        "{}",
        r.stderr
    );
    assert!(
        r.stderr.contains("\n  fix: give a branch, tag or commit"),
        "{}",
        r.stderr
    );
    // Checked before anything was built.
    assert!(
        !dir.join("target").exists(),
        "built before the input was checked"
    );
    // Outside a git repository, the fix is to use a saved baseline.
    let plain = copy_fixture("check-regress");
    let r = check(plain.path(), &["--against", "HEAD"]);
    assert_eq!(r.code, Some(2), "{}", r.all());
    assert!(
        r.stderr.contains("not in a git repository") && r.stderr.contains("--baseline NAME"),
        "{}",
        r.stderr
    );
    let r = check(dir, &["--baseline", "nope"]);
    assert_eq!(r.code, Some(2), "{}", r.all());
    assert!(r.stderr.contains("--save-baseline nope"), "{}", r.stderr);
}

#[test]
fn a_saved_baseline_is_paired_while_its_binary_is_kept_else_compared_unpaired() {
    let _guard = shared();
    let tmp = repo();
    let dir = tmp.path();
    let r = check(dir, &["--max-time", "1s", "--save-baseline", "main"]);
    assert_eq!(r.code, Some(0), "{}", r.all());
    let saved = dir.join("target/optimize/baselines/main");
    let b: Value =
        serde_json::from_str(&std::fs::read_to_string(saved.join("baseline.json")).unwrap())
            .unwrap();
    assert_eq!(
        b["commit"].as_str().unwrap(),
        git(dir, &["rev-parse", "HEAD"]).trim()
    );
    let hot = b["workloads"]
        .as_array()
        .unwrap()
        .iter()
        .find(|w| w["name"] == "hot")
        .unwrap();
    assert!(hot["wall_secs"].as_array().unwrap().len() >= 2, "{b:#}");
    assert!(hot["peak_rss"]["mean"].as_f64().unwrap() > 0.0, "{b:#}");
    assert!(b["binary_size"].as_u64().unwrap() > 0);
    // Other bytes (a message the workloads never print), the same speed: measured.
    edit(dir, "hot N | cold", "hot N or cold");
    let r = check(dir, &["--max-time", "1s", "--baseline", "main"]);
    passed_or_noise(dir, &r);
    let json = report(dir);
    assert_eq!(json["against"]["paired"], true);
    measured(&json);
    // Without its binary, only the statistics: said to be weaker.
    std::fs::remove_file(saved.join("bin")).unwrap();
    let file = saved.join("baseline.json");
    let r = check(
        dir,
        &["--max-time", "1s", "--baseline", file.to_str().unwrap()],
    );
    passed_or_noise(dir, &r);
    let json = report(dir);
    assert_eq!(json["against"]["paired"], false);
    assert!(
        r.stdout
            .contains("unpaired: weaker than an interleaved comparison"),
        "{}",
        r.stdout
    );
    measured(&json);
}

/// Exit 0, or 1 when noise made the same speed a regression (the verdict is the timer's);
/// never another failure or an error.
fn passed_or_noise(dir: &Path, r: &Run) {
    match r.code {
        Some(0) => {}
        Some(1) => {
            let f = report(dir)["failures"].clone();
            let all_noise = f.as_array().unwrap().iter().all(|f| {
                f.as_str()
                    .is_some_and(|f| f.contains(": regression: new/old"))
            });
            assert!(all_noise, "{}", r.all());
        }
        _ => panic!("{}", r.all()),
    }
}

/// Old and new binaries differ: every workload was compared (a ratio of runs, a time).
fn measured(json: &Value) {
    assert_eq!(json["against"]["byte_identical"], false, "{json:#}");
    for w in json["workloads"].as_array().unwrap() {
        assert!(w["ratio"]["n"].as_u64().unwrap_or(0) >= 2, "{w:#}");
        assert!(w["time"].is_object(), "{w:#}");
        assert_ne!(w["judgement"], "byte-identical", "{w:#}");
    }
}

/// Every workload of the newest check says the binaries were byte-identical and nothing
/// was run: no ratio, no time, no run recorded, no output verified.
fn nothing_measured(dir: &Path, r: &Run) {
    let json = report(dir);
    assert_eq!(json["against"]["byte_identical"], true, "{json:#}");
    for w in json["workloads"].as_array().unwrap() {
        assert_eq!(w["judgement"], "byte-identical", "{w:#}");
        assert!(w["ratio"].is_null() && w["time"].is_null(), "timed: {w:#}");
        assert!(w["runs_secs"].is_null(), "timed: {w:#}");
    }
    assert!(json["overall"].is_null(), "{json:#}");
    assert_eq!(json["exit_code"], 0);
    let outputs = dir.join("target/optimize/check/latest/outputs");
    assert!(
        !outputs.exists(),
        "workloads were run: {}",
        outputs.display()
    );
    assert!(
        r.stdout.contains("byte-identical: not measured"),
        "{}",
        r.stdout
    );
}

#[test]
fn byte_identical_binaries_are_not_measured_and_pass_against_a_revision_or_a_saved_baseline() {
    let _guard = shared();
    let tmp = repo();
    let dir = tmp.path();
    // A comment and a README: the binary's bytes do not change.
    edit(dir, "fn main() {", "// Only a comment.\nfn main() {");
    std::fs::write(dir.join("README.md"), "docs only\n").unwrap();
    git(dir, &["add", "-A"]);
    git(dir, &["commit", "-q", "-m", "docs only"]);
    let r = check(dir, &["--against", "HEAD~1", "--max-time", "10m"]);
    assert_eq!(r.code, Some(0), "{}", r.all());
    nothing_measured(dir, &r);
    assert!(r.stdout.contains("\nPASS\n"), "{}", r.stdout);
    let md = std::fs::read_to_string(dir.join("target/optimize/check/latest/check.md")).unwrap();
    assert!(md.starts_with("## cargo optimize check: ✅ passed"), "{md}");
    assert!(
        md.lines()
            .any(|l| l.starts_with("| `hot` |") && l.contains("byte-identical: not measured")),
        "{md}"
    );
    // A budget is the new build's own: a spec change (not in the binary) is still checked,
    // on the new build timed alone.
    let spec = std::fs::read_to_string(dir.join("optimize.toml")).unwrap();
    std::fs::write(
        dir.join("optimize.toml"),
        spec.replace(
            "args = [\"hot\", \"8\"]\n",
            "args = [\"hot\", \"8\"]\nbudget = { time = \"1ms\" }\n",
        ),
    )
    .unwrap();
    let r = check(dir, &["--against", "HEAD~1", "--max-time", "1s"]);
    assert_eq!(r.code, Some(1), "{}", r.all());
    let json = report(dir);
    let hot = workload(&json, "hot");
    assert_eq!(hot["judgement"], "byte-identical", "{hot:#}");
    assert!(hot["ratio"].is_null(), "{hot:#}");
    assert_eq!(hot["budgets"][0]["over"], true, "{hot:#}");
    assert!(workload(&json, "cold")["time"].is_null(), "{json:#}");
    assert!(
        r.stdout.contains("byte-identical: timed alone"),
        "{}",
        r.stdout
    );
    std::fs::write(dir.join("optimize.toml"), spec).unwrap();
    let gh = check(dir, &["--against", "HEAD~1", "--format", "github"]);
    assert_eq!(gh.code, Some(0), "{}", gh.all());
    assert!(
        gh.stdout
            .contains("::notice title=cargo optimize check::passed: ")
            && gh.stdout.contains("byte-identical"),
        "{}",
        gh.stdout
    );
    // A saved baseline of the same bytes: paired (its binary kept) or not (only its
    // digest left to compare), nothing is measured either.
    let save = check(dir, &["--max-time", "1s", "--save-baseline", "main"]);
    assert_eq!(save.code, Some(0), "{}", save.all());
    let r = check(dir, &["--baseline", "main", "--max-time", "10m"]);
    assert_eq!(r.code, Some(0), "{}", r.all());
    nothing_measured(dir, &r);
    assert_eq!(report(dir)["against"]["paired"], true);
    let saved = dir.join("target/optimize/baselines/main");
    std::fs::remove_file(saved.join("bin")).unwrap();
    let file = saved.join("baseline.json");
    let r = check(
        dir,
        &["--baseline", file.to_str().unwrap(), "--max-time", "10m"],
    );
    assert_eq!(r.code, Some(0), "{}", r.all());
    nothing_measured(dir, &r);
    assert_eq!(report(dir)["against"]["paired"], false);
    assert!(!r.stdout.contains("unpaired"), "{}", r.stdout);
}

#[test]
fn ci_github_writes_the_workflow_and_replaces_it_only_with_force() {
    let _guard = shared();
    let tmp = repo();
    let dir = tmp.path();
    let r = run(dir, &["optimize", "ci", "--emit-ci", "github"], &[]);
    assert_eq!(r.code, Some(0), "{}", r.all());
    let path = dir.join(".github/workflows/optimize.yml");
    let written = std::fs::read_to_string(&path).unwrap();
    assert!(
        r.stdout.contains("+name: optimize"),
        "the diff first: {}",
        r.stdout
    );
    assert!(written.contains("cargo optimize check --against \"origin/$BASE_REF\" --manifest-path \"$CRATE_MANIFEST\" -p \"$CRATE_PACKAGE\" --bin \"$CRATE_BIN\" --format github"), "{written}");
    assert!(
        written
            .contains("\n  CRATE_MANIFEST: \"Cargo.toml\"\n  CRATE_PACKAGE: \"check-regress\"\n"),
        "{written}"
    );
    assert!(
        written.contains("\n  PGO_PROFILE: \"pgo/check-regress.profdata\"\n"),
        "{written}"
    );
    assert!(
        r.stderr
            .contains("pgo/check-regress.profdata does not exist"),
        "{}",
        r.stderr
    );
    lint_workflow(dir, ".github/workflows/optimize.yml");
    // The old spelling still works, with a warning naming the new one.
    let again = run(dir, &["optimize", "ci", "--github"], &[]);
    assert!(
        again
            .stderr
            .contains("`ci --github` is deprecated: use `ci --emit-ci github`"),
        "{}",
        again.stderr
    );
    assert_eq!(again.code, Some(0));
    assert!(
        again.stdout.contains("already up to date"),
        "{}",
        again.stdout
    );
    std::fs::write(&path, "mine\n").unwrap();
    let refused = run(dir, &["optimize", "ci"], &[]);
    assert_eq!(refused.code, Some(2), "{}", refused.all());
    assert!(refused.stdout.contains("-mine"), "{}", refused.stdout);
    assert!(
        refused.stderr.contains("fix: pass --force"),
        "{}",
        refused.stderr
    );
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "mine\n");
    let forced = run(dir, &["optimize", "ci", "--force"], &[]);
    assert_eq!(forced.code, Some(0), "{}", forced.all());
    assert_eq!(std::fs::read_to_string(&path).unwrap(), written);
    assert_eq!(
        std::fs::read_to_string(dir.join(".github/workflows/optimize.yml.bak")).unwrap(),
        "mine\n"
    );
}

/// The fixture in the folder `sub` of a git repository, its workloads timed for 1 s, with
/// an `origin/main` (as a pull request's checkout with `fetch-depth: 0` has).
fn repo_in(sub: &str) -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join(sub);
    copy_dir(&fixture("check-regress"), &dir);
    let spec = dir.join("optimize.toml");
    let text = std::fs::read_to_string(&spec).unwrap();
    std::fs::write(
        &spec,
        text.replace("max-time = \"4s\"", "max-time = \"1s\""),
    )
    .unwrap();
    commit_all(tmp.path());
    git(
        tmp.path(),
        &["update-ref", "refs/remotes/origin/main", "HEAD"],
    );
    tmp
}

/// `ci` in the crate's folder `sub`, then the workflow linted (actionlint, and
/// shellcheck on every script) and every `run:` step of both jobs run by bash at the
/// repository's root as GitHub runs it (but the installs: this build is on PATH): the PR
/// job checks the crate and puts check.md in the job summary, the tag job builds the
/// binary its upload step names. No step creates a file named PWNED.
fn ci_workflow_runs_from_the_root(sub: &str) {
    let tmp = repo_in(sub);
    let root = tmp.path();
    let r = run(
        &root.join(sub),
        &["optimize", "ci"],
        &[("GIT_CONFIG_GLOBAL", "/dev/null")],
    );
    assert_eq!(r.code, Some(0), "{}", r.all());
    let file = ".github/workflows/optimize.yml";
    let text = std::fs::read_to_string(root.join(file)).unwrap();
    lint_workflow(root, file);
    let out = tempfile::tempdir().unwrap();
    let summary = out.path().join("summary.md");
    let summary_env = [("GITHUB_STEP_SUMMARY", summary.to_str().unwrap())];
    for job in ["check", "release"] {
        let steps = workflow_steps(&text, job, &[("github.base_ref", "main")]);
        assert!(steps.len() >= 3, "{job}: {steps:?}\n{text}");
        shellcheck_steps(&steps);
        for step in steps.iter().filter(|s| !s.name.starts_with("Install")) {
            let r = run_workflow_step(root, step, &summary_env);
            let pwned = files_named(root, "PWNED");
            assert!(pwned.is_empty(), "the step `{}` made {pwned:?}", step.name);
            // `check` may judge noise a regression (exit 1); 2 is an error.
            let ok = match step.name.as_str() {
                "cargo optimize check" => matches!(r.code, Some(0 | 1)),
                _ => r.code == Some(0),
            };
            assert!(ok, "{job}: the step `{}`:\n{}", step.name, r.all());
        }
    }
    let md = std::fs::read_to_string(&summary).unwrap_or_default();
    assert!(
        md.starts_with("## cargo optimize check: "),
        "summary: {md:?}"
    );
    let check: Value = serde_json::from_str(
        &std::fs::read_to_string(
            root.join(sub)
                .join("target/optimize/check/latest/check.json"),
        )
        .unwrap(),
    )
    .unwrap();
    let head = git(root, &["rev-parse", "HEAD"]);
    assert_eq!(check["against"]["commit"].as_str(), Some(head.trim()));
    // The upload step's path, as GitHub expands it, is the binary the build step made.
    let env = workflow_steps(&text, "release", &[]).remove(0).env;
    let path = text
        .lines()
        .find_map(|l| l.trim().strip_prefix("path: "))
        .unwrap_or_else(|| panic!("no upload path in {text}"));
    let binary = root.join(workflow_value(path, &[], &env));
    assert!(binary.is_file(), "{} was not built", binary.display());
    assert_eq!(binary, root.join(sub).join("target/release/check-regress"));
}

#[test]
fn ci_github_for_a_crate_in_a_subfolder_works_from_the_repository_root() {
    let _guard = shared();
    ci_workflow_runs_from_the_root("app");
}

#[test]
fn ci_github_passes_a_hostile_path_to_its_scripts_quoted_and_runs_nothing() {
    let _guard = shared();
    ci_workflow_runs_from_the_root("my tool $(touch PWNED) `touch PWNED`");
}

#[test]
fn check_removes_only_its_own_worktrees_never_the_users() {
    let _guard = shared();
    let tmp = repo();
    let dir = tmp.path();
    // The user's own worktree, moved away for a while (git lists it as prunable).
    let outside = tempfile::tempdir().unwrap();
    let wt = outside.path().join("wt");
    let away = outside.path().join("wt-away");
    git(
        dir,
        &["worktree", "add", "-q", wt.to_str().unwrap(), "-b", "f"],
    );
    std::fs::rename(&wt, &away).unwrap();
    // A killed check's worktree whose folder is gone: its entry, and only it, goes.
    let dead = std::process::Command::new("true").spawn().unwrap();
    let pid = dead.id();
    dead.wait_with_output().unwrap();
    let stale = dir.join(format!("target/optimize/check/worktrees/{pid}"));
    git(
        dir,
        &["worktree", "add", "-q", "--detach", stale.to_str().unwrap()],
    );
    std::fs::remove_dir_all(&stale).unwrap();
    let r = check(dir, &["--against", "HEAD", "--max-time", "1s"]);
    // The same commit: 0, or 1 when load made noise a regression; never an error.
    assert!(matches!(r.code, Some(0 | 1)), "{}", r.all());
    std::fs::rename(&away, &wt).unwrap();
    let status = git(&wt, &["status", "--porcelain"]);
    assert_eq!(status, "", "the user's worktree: {status}");
    let list = git(dir, &["worktree", "list", "--porcelain"]);
    assert_eq!(list.matches("worktree ").count(), 2, "{list}");
    assert!(list.contains("branch refs/heads/f"), "{list}");
    assert!(!list.contains(&stale.display().to_string()), "{list}");
}

#[test]
fn a_revision_without_the_crate_is_exit_2_naming_its_manifest_and_the_fix() {
    let _guard = shared();
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    std::fs::write(root.join("README"), "before the crate\n").unwrap();
    commit_all(root);
    copy_dir(&fixture("check-regress"), &root.join("app"));
    git(root, &["add", "-A"]);
    git(root, &["commit", "-q", "-m", "the crate"]);
    let r = check(&root.join("app"), &["--against", "HEAD~1"]);
    assert_eq!(r.code, Some(2), "{}", r.all());
    let short = git(root, &["rev-parse", "--short=12", "HEAD~1"]);
    assert!(
        r.stderr.contains(&format!(
            "--against HEAD~1: the package's manifest app/Cargo.toml does not exist at {}",
            short.trim()
        )),
        "{}",
        r.stderr
    );
    assert!(
        r.stderr
            .contains("\n  fix: compare with a later revision that has it")
            && r.stderr.contains("--save-baseline NAME"),
        "{}",
        r.stderr
    );
    assert!(!r.stderr.contains("worktrees"), "{}", r.stderr);
    // Said before anything was built or checked out.
    assert!(!root.join("app/target").exists(), "built first");
    no_worktree_left(root);
}

#[test]
fn a_path_dependency_in_a_submodule_is_checked_out_in_the_revisions_worktree_or_said() {
    let _guard = shared();
    let tmp = tempfile::tempdir().unwrap();
    // A library in a repository of its own, a submodule of the crate's at vendor/helper,
    // and the crate's path dependency.
    let helper = tmp.path().join("helper");
    std::fs::create_dir_all(helper.join("src")).unwrap();
    std::fs::write(
        helper.join("Cargo.toml"),
        "[package]\nname = \"helper\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
    )
    .unwrap();
    std::fs::write(helper.join("src/lib.rs"), "pub fn one() -> u64 { 1 }\n").unwrap();
    commit_all(&helper);
    let dir = tmp.path().join("app");
    copy_dir(&fixture("check-regress"), &dir);
    let manifest = dir.join("Cargo.toml");
    let text = std::fs::read_to_string(&manifest).unwrap();
    let dep = "\n[dependencies]\nhelper = { path = \"vendor/helper\" }\n";
    std::fs::write(&manifest, format!("{text}{dep}")).unwrap();
    git(&tmp.path().join("app"), &["init", "-q", "-b", "main"]);
    let url = helper.to_str().unwrap();
    let allow = ["-c", "protocol.file.allow=always"];
    git(
        &dir,
        &[
            &allow[..],
            &["submodule", "add", "-q", url, "vendor/helper"],
        ]
        .concat(),
    );
    git(&dir, &["add", "-A"]);
    git(&dir, &["commit", "-q", "-m", "one"]);
    // git refuses to clone a submodule from a folder unless told: said, with the fix.
    let r = check(&dir, &["--against", "HEAD", "--max-time", "1s"]);
    assert_eq!(r.code, Some(2), "{}", r.all());
    assert!(
        r.stderr
            .contains("git submodules could not be checked out in its temporary worktree")
            && r.stderr.contains("transport 'file' not allowed"),
        "{}",
        r.stderr
    );
    let last = r.stderr.trim_end().lines().last().unwrap_or_default();
    assert!(
        last.starts_with("  fix: make `git submodule update --init` work"),
        "{}",
        r.stderr
    );
    no_worktree_left(&dir);
    // Allowed: the submodule is checked out in the worktree and the revision builds.
    let env = [
        ("GIT_CONFIG_GLOBAL", "/dev/null"),
        ("GIT_CONFIG_COUNT", "1"),
        ("GIT_CONFIG_KEY_0", "protocol.file.allow"),
        ("GIT_CONFIG_VALUE_0", "always"),
    ];
    let r = run(
        &dir,
        &["optimize", "check", "--against", "HEAD", "--max-time", "1s"],
        &env,
    );
    assert!(matches!(r.code, Some(0 | 1)), "{}", r.all());
    let built = std::fs::read_dir(dir.join("target/optimize/cache/revs"))
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .path()
                .extension()
                .is_some_and(|x| x == "json")
        })
        .count();
    assert_eq!(built, 1, "{}", r.all());
    no_worktree_left(&dir);
}

/// A program that reads the name it was run as (the `argv0-name` fixture, a multi-call
/// binary) is checked under its own file name on both sides, `bin/new/<name>` and
/// `bin/old/<name>` (issue 61, item 6): before, the new build ran as `bin/new` and exited 3.
#[test]
fn a_program_that_reads_its_own_name_is_checked_under_it_on_both_sides() {
    let _guard = shared();
    let tmp = copy_fixture("argv0-name");
    let dir = tmp.path();
    commit_all(dir);
    // Another binary, the same output: the old build is built, run and measured.
    let p = dir.join("src/main.rs");
    let text = std::fs::read_to_string(&p).unwrap();
    std::fs::write(&p, text.replace("no applet named", "no applet is named")).unwrap();
    let r = check(dir, &["--against", "HEAD", "--max-time", "1s"]);
    passed_or_noise(dir, &r);
    assert!(!r.all().contains("no applet"), "{}", r.all());
    measured(&report(dir));
    let latest = dir.join("target/optimize/check/latest");
    for side in ["new", "old"] {
        let file = latest.join("bin").join(side).join("argv0-name");
        assert!(file.is_file(), "{}", file.display());
    }
}
