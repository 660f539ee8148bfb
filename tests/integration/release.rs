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
const MISSING: &str = "aarch64-unknown-linux-gnu";

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
    let check = Command::new("sha256sum")
        .args(["-c", "SHA256SUMS"])
        .current_dir(&out)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&check.stdout);
    assert!(check.status.success(), "{said}");
    assert_eq!(said.matches(": OK").count(), 4, "{said}");
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
