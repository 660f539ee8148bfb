//! `cargo optimize release` on the `release-flavors` fixture: two feature flavors whose hot
//! paths differ (a sieve, trial division), each trained on its own build, verified,
//! packaged with checksums and a manifest; the same release at `-j 1` and in parallel (each
//! in a target dir of its own, so nothing is shared) gives the same bytes; a target that is
//! not installed is skipped with the fix and makes the release partial (exit 1).

use std::path::Path;
use std::process::Command;

use serde_json::Value;

use crate::common::*;

const FIXTURE: &str = "release-flavors";
/// A target whose standard library is not installed: not one `scripts/test` adds (it adds
/// aarch64 Linux, macOS and Windows for `platforms`), and one nobody here builds for.
const MISSING: &str = "riscv64gc-unknown-linux-gnu";

fn release(target_dir: &Path, out: &Path, extra: &[&str]) -> Run {
    let mut args = vec![
        "optimize",
        "release",
        "--target-dir",
        target_dir.to_str().unwrap(),
        "--out-dir",
        out.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    run(&fixture(FIXTURE), &args, &[])
}

/// `sha256sum -c SHA256SUMS` (the real tool) passes in `out`, for `files` files.
fn sha256sum_checks(out: &Path, files: usize) {
    let check = Command::new("sha256sum")
        .args(["-c", "SHA256SUMS"])
        .current_dir(out)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&check.stdout);
    assert!(check.status.success(), "{said}");
    assert_eq!(said.matches(": OK").count(), files, "{said}");
}

fn manifest(out: &Path) -> Value {
    let text = std::fs::read_to_string(out.join("manifest.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

fn artifact<'a>(m: &'a Value, flavor: &str) -> &'a Value {
    m["artifacts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["flavor"] == flavor)
        .unwrap_or_else(|| panic!("no {flavor} artifact in {m:#}"))
}

#[test]
fn a_dry_run_lists_every_job_and_builds_nothing() {
    let _g = shared();
    let tmp = tempfile::tempdir().unwrap();
    let (td, out) = (tmp.path().join("target"), tmp.path().join("dist"));
    let r = release(&td, &out, &["--dry-run", "--cpu", "x86-64-v2"]);
    assert_eq!(r.code, Some(0), "{}", r.all());
    for flavor in ["sieve", "trial"] {
        for cpu in ["portable", "x86-64-v2"] {
            for job in ["instrumented", "train + merge", "PGO", "verify"] {
                let line = format!("{flavor}/{cpu} {job}");
                assert!(
                    r.stdout.contains(&line),
                    "no `{line}` job in:\n{}",
                    r.stdout
                );
            }
        }
        assert!(
            r.stdout.contains(&format!("{flavor} baseline outputs")),
            "{}",
            r.stdout
        );
        let name = format!("release-flavors-0.3.1-x86_64-unknown-linux-gnu-{flavor}-x86-64-v2");
        assert!(
            r.stdout.contains(&name),
            "no artifact {name} in:\n{}",
            r.stdout
        );
    }
    // 2 flavors × (baseline + record + 2 CPU levels × 5 jobs).
    assert!(r.stdout.contains("24 jobs"), "{}", r.stdout);
    assert!(
        !td.join("optimize/build").exists(),
        "a dry run built something"
    );
    assert!(!out.exists(), "a dry run wrote the output folder");
}

#[test]
fn each_flavor_is_trained_on_its_own_build_and_parallel_gives_the_same_bytes_as_j1() {
    let _g = shared();
    let tmp = tempfile::tempdir().unwrap();
    let targets = format!("x86_64-unknown-linux-gnu,{MISSING}");
    let out = tmp.path().join("dist");
    let r = release(
        &tmp.path().join("t1"),
        &out,
        &["-j", "1", "--targets", &targets],
    );
    assert_eq!(
        r.code,
        Some(1),
        "a skipped target makes the release partial:\n{}",
        r.all()
    );
    assert!(
        r.stderr.contains(&format!("rustup target add {MISSING}")),
        "{}",
        r.stderr
    );

    let m = manifest(&out);
    assert_eq!(m["skipped"][0]["target"], MISSING);
    assert_eq!(
        m["skipped"][0]["fix"],
        format!("rustup target add {MISSING}")
    );
    assert_eq!(m["artifacts"].as_array().unwrap().len(), 2, "{m:#}");
    let (sieve, trial) = (artifact(&m, "sieve"), artifact(&m, "trial"));
    for (a, features) in [(sieve, "sieve"), (trial, "trial")] {
        assert_eq!(a["pgo"]["applied"], true, "{a:#}");
        assert_eq!(a["verified"], true, "{a:#}");
        // Trained under exactly the artifact's own settings.
        assert_eq!(a["pgo"]["trained_under"]["features"][0], features, "{a:#}");
        assert_eq!(a["features"][0], features);
        assert_eq!(a["pgo"]["trained_on"][0], "train");
        assert_eq!(a["target"], "x86_64-unknown-linux-gnu");
    }
    assert_eq!(trial["no_default_features"], true);
    assert_ne!(
        sieve["pgo"]["profile_sha256"], trial["pgo"]["profile_sha256"],
        "both flavors got the same profile"
    );

    // The checksums verify with the real sha256sum, and the binaries run.
    sha256sum_checks(&out, 4);
    for a in [sieve, trial] {
        let bin = out.join(a["file"].as_str().unwrap());
        let ran = Command::new(&bin).arg("1000").output().unwrap();
        assert_eq!(
            String::from_utf8_lossy(&ran.stdout),
            "168 primes below 1000, sum 76127\n"
        );
        let listed = Command::new("tar")
            .args(["tzf", a["archive"].as_str().unwrap()])
            .current_dir(&out)
            .output()
            .unwrap();
        let inner = format!("{}/release-flavors\n", a["file"].as_str().unwrap());
        assert_eq!(String::from_utf8_lossy(&listed.stdout), inner);
    }

    // The same release in parallel, from a target dir of its own: the same bytes.
    let out2 = tmp.path().join("dist2");
    let r2 = release(&tmp.path().join("t2"), &out2, &["-j", "2"]);
    assert_eq!(r2.code, Some(0), "{}", r2.all());
    let sums = |d: &Path| std::fs::read_to_string(d.join("SHA256SUMS")).unwrap();
    assert_eq!(sums(&out), sums(&out2), "-j 2 built other bytes than -j 1");
    let jobs = &manifest(&out2)["jobs"];
    assert_eq!(jobs["workers"], 2, "{jobs:#}");
}

#[test]
fn an_output_folder_with_other_files_is_refused_and_kept() {
    let _g = shared();
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("dist");
    std::fs::create_dir(&out).unwrap();
    std::fs::write(out.join("notes.txt"), "mine").unwrap();
    let r = release(&tmp.path().join("t"), &out, &[]);
    assert_eq!(r.code, Some(2), "{}", r.all());
    assert!(
        r.stderr.contains("not a release") && r.stderr.contains("--out-dir"),
        "{}",
        r.stderr
    );
    assert_eq!(
        std::fs::read_to_string(out.join("notes.txt")).unwrap(),
        "mine"
    );
    assert!(
        !tmp.path().join("t/optimize/build").exists(),
        "it built before refusing"
    );
    let r = release(
        &tmp.path().join("t"),
        &tmp.path().join("d2"),
        &["--flavors", "seive"],
    );
    assert_eq!(r.code, Some(2), "{}", r.all());
    assert!(r.stderr.contains("did you mean `sieve`"), "{}", r.stderr);
}

#[test]
fn a_flavor_this_machine_cannot_run_is_built_without_pgo_and_the_manifest_says_why() {
    let _g = shared();
    let tmp = copy_fixture(FIXTURE);
    let spec = tmp.path().join("optimize.toml");
    let text = std::fs::read_to_string(&spec).unwrap();
    let text = text.replace(
        "no-default-features = true\n",
        "no-default-features = true\nrun = false\n",
    );
    std::fs::write(&spec, text).unwrap();
    let out = tmp.path().join("dist");
    let r = run(tmp.path(), &["optimize", "release"], &[]);
    assert_eq!(r.code, Some(0), "by design, not partial:\n{}", r.all());
    let m = manifest(&out);
    let trial = artifact(&m, "trial");
    assert_eq!(trial["pgo"]["applied"], false, "{trial:#}");
    let why = trial["pgo"]["why_not"].as_str().unwrap();
    assert!(why.contains("run = false"), "{why}");
    assert_eq!(trial["verified"], false);
    assert!(trial["verification"]
        .as_str()
        .unwrap()
        .starts_with("not verified"));
    assert!(trial["pgo"]["trained_under"].is_null());
    // No profile flag of any kind in what it was built with.
    let flags = trial["rustflags"].to_string();
    assert!(!flags.contains("profile-use"), "{flags}");
    assert_eq!(artifact(&m, "sieve")["pgo"]["applied"], true);
    assert!(r.stdout.contains("not verified"), "{}", r.stdout);
}

const THREE_TARGETS: [(&str, &str); 3] = [
    ("x86_64-unknown-linux-gnu", "ubuntu-latest"),
    ("aarch64-unknown-linux-gnu", "ubuntu-24.04-arm"),
    ("x86_64-pc-windows-msvc", "windows-latest"),
];
const WORKFLOW: &str = ".github/workflows/release.yml";

/// The fixture in a git repository, its `[release]` naming the three targets.
fn three_target_repo() -> tempfile::TempDir {
    let tmp = copy_fixture(FIXTURE);
    let spec = tmp.path().join("optimize.toml");
    let text = std::fs::read_to_string(&spec).unwrap();
    let targets: Vec<String> = THREE_TARGETS
        .iter()
        .map(|(t, _)| format!("\"{t}\""))
        .collect();
    let line = format!("[release]\ntargets = [{}]\n", targets.join(", "));
    std::fs::write(&spec, text.replacen("[release]\n", &line, 1)).unwrap();
    commit_all(tmp.path());
    tmp
}

fn emit(dir: &Path, extra: &[&str]) -> Run {
    let mut args = vec!["optimize", "release", "--emit-ci", "github"];
    args.extend_from_slice(extra);
    run(dir, &args, &[("GIT_CONFIG_GLOBAL", "/dev/null")])
}

/// The build matrix's rows (one JSON object a line) in a workflow or in the new side of a
/// diff of one.
fn cells(text: &str) -> Vec<Value> {
    text.lines()
        .filter(|l| !l.starts_with('-'))
        .filter_map(|l| l.split_once("- {\"name\"").map(|(_, rest)| rest))
        .map(|rest| serde_json::from_str(&format!("{{\"name\"{rest}")).unwrap())
        .collect()
}

#[test]
fn emit_ci_writes_a_cell_per_target_flavor_and_cpu_level_and_actionlint_passes_it() {
    let _g = shared();
    let tmp = three_target_repo();
    let dir = tmp.path();
    let r = emit(dir, &[]);
    assert_eq!(r.code, Some(0), "{}", r.all());
    assert!(
        r.stdout.contains("+name: release\n"),
        "the diff first: {}",
        r.stdout
    );
    let text = std::fs::read_to_string(dir.join(WORKFLOW)).unwrap();
    // 3 targets × 2 flavors × 1 CPU level (the fixture's `cpu = []`: portable only).
    let rows = cells(&text);
    assert_eq!(rows.len(), 3 * 2, "{text}");
    for (target, runner) in THREE_TARGETS {
        for flavor in ["sieve", "trial"] {
            let row = rows
                .iter()
                .find(|c| c["target"] == target && c["flavor"] == flavor)
                .unwrap_or_else(|| panic!("no {target} {flavor} cell in {text}"));
            assert_eq!(row["runner"], runner, "{row}");
            assert_eq!(row["cpu"], "none", "{row}");
            assert_eq!(row["stages"], "pgo", "{row}");
            assert_eq!(row["name"], format!("{target}-{flavor}"), "{row}");
        }
    }
    for needed in [
        "    tags: [\"v*\"]\n  workflow_dispatch:\n",
        "runs-on: ${{ matrix.runner }}",
        "components: llvm-tools",
        "rustup target add \"$TARGET\"",
        "run: eval \"$CARGO_OPTIMIZE_INSTALL\"",
        "cargo optimize release \"${args[@]}\"",
        "\n  CRATE_MANIFEST: \"Cargo.toml\"\n  CRATE_PACKAGE: \"release-flavors\"\n  CRATE_BIN: \"release-flavors\"\n",
        "args=()\n          args+=(--manifest-path \"$CRATE_MANIFEST\")\n          args+=(-p \"$CRATE_PACKAGE\")\n          args+=(--bin \"$CRATE_BIN\")\n",
        "args+=(--targets \"$TARGET\" --cpu \"$CPU\" --stages \"$STAGES\" --out-dir dist-cell)",
        "    needs: build\n",
        "merge-multiple: false",
        "cargo optimize release --gather cells/* --out-dir dist",
    ] {
        assert!(text.contains(needed), "no `{needed}` in:\n{text}");
    }
    assert!(
        r.stderr
            .contains("6 cell(s) — 3 target(s) × 2 flavor(s) × 1 CPU level(s)"),
        "{}",
        r.stderr
    );
    lint_workflow(dir, WORKFLOW);

    // Again: nothing to do.
    let again = emit(dir, &[]);
    assert_eq!(again.code, Some(0), "{}", again.all());
    assert!(
        again.stdout.contains("already up to date"),
        "{}",
        again.stdout
    );
}

#[test]
fn emit_ci_takes_runners_and_cpu_levels_and_never_replaces_a_different_file_without_force() {
    let _g = shared();
    let tmp = three_target_repo();
    let dir = tmp.path();
    let path = dir.join(WORKFLOW);
    assert_eq!(emit(dir, &[]).code, Some(0));
    let written = std::fs::read_to_string(&path).unwrap();

    // --runner overrides one target's label; --dry-run writes nothing.
    let arm = "aarch64-unknown-linux-gnu=arm-box";
    let r = emit(dir, &["--runner", arm, "--dry-run"]);
    assert_eq!(r.code, Some(0), "{}", r.all());
    assert!(
        r.stdout.contains("dry run: nothing written"),
        "{}",
        r.stdout
    );
    let rows = cells(&r.stdout);
    assert_eq!(rows.len(), 6, "{}", r.stdout);
    for row in &rows {
        let expected = match row["target"].as_str().unwrap() {
            "aarch64-unknown-linux-gnu" => "arm-box",
            "x86_64-unknown-linux-gnu" => "ubuntu-latest",
            _ => "windows-latest",
        };
        assert_eq!(row["runner"], expected, "{row}");
    }
    assert_eq!(std::fs::read_to_string(&path).unwrap(), written);

    // A different file there: refused without --force (and kept), replaced with it.
    let r = emit(dir, &["--runner", arm]);
    assert_eq!(r.code, Some(2), "{}", r.all());
    assert!(r.stderr.contains("fix: pass --force"), "{}", r.stderr);
    assert_eq!(std::fs::read_to_string(&path).unwrap(), written);
    let r = emit(dir, &["--runner", arm, "--force"]);
    assert_eq!(r.code, Some(0), "{}", r.all());
    assert_eq!(
        cells(&std::fs::read_to_string(&path).unwrap())[2]["runner"],
        "arm-box"
    );
    assert_eq!(
        std::fs::read_to_string(path.with_extension("yml.bak")).unwrap(),
        written
    );

    // A CPU level is a cell of its own, built without the portable artifact.
    let x86 = ["--targets", "x86_64-unknown-linux-gnu"];
    let r = emit(
        dir,
        &[&x86[..], &["--cpu", "x86-64-v3", "--dry-run"]].concat(),
    );
    assert_eq!(r.code, Some(0), "{}", r.all());
    let rows = cells(&r.stdout);
    assert_eq!(rows.len(), 2 * 2, "{}", r.stdout);
    let v3 = rows
        .iter()
        .find(|c| c["name"] == "x86_64-unknown-linux-gnu-trial-x86-64-v3")
        .unwrap_or_else(|| panic!("{}", r.stdout));
    assert_eq!(
        (&v3["cpu"], &v3["stages"]),
        (&"x86-64-v3".into(), &"pgo".into())
    );
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(
        text.contains("if [ \"$CPU\" != none ]; then args+=(--no-portable); fi"),
        "{text}"
    );

    // A target with no known runner is cross-built without PGO, and both say so.
    let riscv = "riscv64gc-unknown-linux-gnu";
    let targets = format!("x86_64-unknown-linux-gnu,{riscv}");
    let r = emit(dir, &["--targets", &targets, "--dry-run"]);
    assert_eq!(r.code, Some(0), "{}", r.all());
    let rows = cells(&r.stdout);
    assert_eq!(rows.len(), 2 * 2, "{}", r.stdout);
    for row in rows.iter().filter(|c| c["target"] == riscv) {
        assert_eq!(
            (&row["runner"], &row["stages"]),
            (&"ubuntu-latest".into(), &"none".into()),
            "{row}"
        );
    }
    assert!(
        r.stderr.contains(&format!("{riscv}: no known runner"))
            && r.stderr.contains(&format!("--runner {riscv}=LABEL")),
        "{}",
        r.stderr
    );
    assert!(
        r.stdout.contains(&format!("+#   {riscv}: no known runner")),
        "{}",
        r.stdout
    );
}

/// `release --emit-ci github` for the fixture in a folder named like a command
/// substitution, below the repository's root: the workflow passes actionlint and
/// shellcheck, and its steps, run by bash at the root as GitHub runs them (but the
/// installs: this build is on PATH), release one cell and gather it — the path reaches
/// cargo-optimize whole, and no step creates a file named PWNED.
#[test]
fn emit_ci_passes_a_hostile_path_to_its_scripts_quoted_and_its_steps_run_from_the_root() {
    let _g = shared();
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    let sub = "my tool $(touch PWNED) `touch PWNED`";
    copy_dir(&fixture(FIXTURE), &root.join(sub));
    commit_all(root);
    let r = emit(&root.join(sub), &["--targets", "x86_64-unknown-linux-gnu"]);
    assert_eq!(r.code, Some(0), "{}", r.all());
    let text = std::fs::read_to_string(root.join(WORKFLOW)).unwrap();
    lint_workflow(root, WORKFLOW);
    let rows = cells(&text);
    let row = rows
        .iter()
        .find(|c| c["flavor"] == "sieve")
        .unwrap_or_else(|| panic!("{text}"));
    let field = |k: &str| row[k].as_str().unwrap().to_string();
    let matrix: Vec<(String, String)> = ["name", "target", "flavor", "cpu", "stages"]
        .iter()
        .map(|k| (format!("matrix.{k}"), field(k)))
        .collect();
    let exprs: Vec<(&str, &str)> = matrix
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    for job in ["build", "gather"] {
        let steps = workflow_steps(&text, job, &exprs);
        shellcheck_steps(&steps);
        // The target is this machine's, installed: `rustup target add` is not run either.
        let skip = |name: &str| name.starts_with("Install") || name == "Add the target";
        for step in steps.iter().filter(|s| !skip(&s.name)) {
            let r = run_workflow_step(root, step, &[]);
            let pwned = files_named(root, "PWNED");
            assert!(pwned.is_empty(), "the step `{}` made {pwned:?}", step.name);
            assert_eq!(
                r.code,
                Some(0),
                "{job}: the step `{}`:\n{}",
                step.name,
                r.all()
            );
        }
        if job == "build" {
            // What actions/download-artifact does between the jobs.
            copy_dir(
                &root.join("dist-cell"),
                &root.join("cells").join(field("name")),
            );
        }
    }
    let m = manifest(&root.join("dist"));
    assert_eq!(m["artifacts"].as_array().unwrap().len(), 1, "{m:#}");
    assert_eq!(artifact(&m, "sieve")["pgo"]["applied"], true, "{m:#}");
    sha256sum_checks(&root.join("dist"), 2);
}

#[test]
fn gather_merges_two_releases_and_refuses_a_tampered_file_leaving_the_output_as_it_was() {
    let _g = shared();
    let tmp = copy_fixture(FIXTURE);
    let dir = tmp.path();
    commit_all(dir);
    let target_dir = dir.join("target");
    let (a, b, out) = (dir.join("cells/a"), dir.join("cells/b"), dir.join("dist"));
    // `cells/b` and `dist` are symlinks (to a folder not there yet, and to an empty one): a
    // release lands where they point and the links stay (issue 23, defect 3).
    std::fs::create_dir_all(dir.join("cells")).unwrap();
    std::os::unix::fs::symlink(dir.join("www-b"), &b).unwrap();
    std::fs::create_dir(dir.join("public")).unwrap();
    std::os::unix::fs::symlink("public", &out).unwrap();
    for (flavor, cell) in [("sieve", &a), ("trial", &b)] {
        let args = [
            "optimize",
            "release",
            "--target-dir",
            target_dir.to_str().unwrap(),
            "--out-dir",
            cell.to_str().unwrap(),
            "--flavors",
            flavor,
        ];
        let r = run(dir, &args, &[("GIT_CONFIG_GLOBAL", "/dev/null")]);
        assert_eq!(r.code, Some(0), "{}", r.all());
    }
    let gather = |from: &[&Path]| {
        let mut args = vec!["optimize", "release", "--gather"];
        args.extend(from.iter().map(|p| p.to_str().unwrap()));
        args.extend(["--out-dir", out.to_str().unwrap()]);
        run(dir, &args, &[])
    };
    let r = gather(&[&a, &b]);
    assert_eq!(r.code, Some(0), "{}", r.all());
    for link in [&b, &out] {
        let meta = std::fs::symlink_metadata(link).unwrap();
        assert!(
            meta.file_type().is_symlink(),
            "{} was replaced",
            link.display()
        );
    }
    assert!(dir.join("www-b").join("manifest.json").is_file());
    assert!(dir.join("public").join("manifest.json").is_file());
    let m = manifest(&out);
    assert_eq!(m["artifacts"].as_array().unwrap().len(), 2, "{m:#}");
    let head = git(dir, &["rev-parse", "HEAD"]);
    assert_eq!(m["source"]["revision"], head.trim(), "{m:#}");
    assert_eq!(m["cells"].as_array().unwrap().len(), 2, "{m:#}");
    for flavor in ["sieve", "trial"] {
        let art = artifact(&m, flavor);
        assert_eq!(art["pgo"]["applied"], true, "{art:#}");
        assert!(art["toolchain"]["rustc"].is_string(), "{art:#}");
        // The binary is executable again, and runs.
        let ran = Command::new(out.join(art["file"].as_str().unwrap()))
            .arg("1000")
            .output()
            .unwrap();
        assert_eq!(
            String::from_utf8_lossy(&ran.stdout),
            "168 primes below 1000, sum 76127\n"
        );
    }
    sha256sum_checks(&out, 4);

    // Cells of another commit are refused.
    let other = dir.join("cells/other");
    std::fs::create_dir_all(&other).unwrap();
    for e in std::fs::read_dir(&b).unwrap() {
        let p = e.unwrap().path();
        std::fs::copy(&p, other.join(p.file_name().unwrap())).unwrap();
    }
    let text = std::fs::read_to_string(other.join("manifest.json")).unwrap();
    std::fs::write(
        other.join("manifest.json"),
        text.replace(head.trim(), &"0".repeat(40)),
    )
    .unwrap();
    let before = snapshot(&out);
    let r = gather(&[&a, &other]);
    assert_eq!(r.code, Some(2), "{}", r.all());
    assert!(r.stderr.contains("different commits"), "{}", r.stderr);

    // A tampered artifact: exit 2 naming it; the output folder as it was, no staging left.
    let file = artifact(&manifest(&b), "trial")["file"]
        .as_str()
        .unwrap()
        .to_string();
    let mut bytes = std::fs::read(b.join(&file)).unwrap();
    bytes.push(0);
    std::fs::write(b.join(&file), bytes).unwrap();
    let r = gather(&[&a, &b]);
    assert_eq!(r.code, Some(2), "{}", r.all());
    assert!(
        r.stderr
            .contains(&format!("{}: its SHA-256 is", b.join(&file).display())),
        "{}",
        r.stderr
    );
    assert!(r.stderr.contains("public is unchanged"), "{}", r.stderr);
    assert!(snapshot(&out) == before, "the output folder changed");
    let left: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains(".partial-"))
        .collect();
    assert!(left.is_empty(), "staging left: {left:?}");
}
