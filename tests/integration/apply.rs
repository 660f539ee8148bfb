//! `cargo optimize apply` on a copy of a fixture crate, after a real run: the diff, the
//! formatting and comments that must survive, idempotence, and a plain cargo build with the
//! written profile getting the settings (seen in `cargo build -v`'s rustc flags).

use std::path::Path;
use std::process::Command;

use cargo_optimize::testing::report::Status;

use crate::common::*;

/// Whether the lines of `old` appear in `new` in the same order (nothing removed).
fn keeps_all_lines(old: &str, new: &str) -> bool {
    let mut rest = new.lines();
    old.lines().all(|l| rest.any(|n| n == l))
}

fn cargo_build_v(dir: &Path, args: &[&str]) -> String {
    let out = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
        .args(["build", "-v"])
        .args(args)
        .current_dir(dir)
        .env_remove("RUSTFLAGS")
        .env_remove("CARGO_ENCODED_RUSTFLAGS")
        .env_remove("CARGO_BUILD_RUSTFLAGS")
        .env("CARGO_TERM_COLOR", "never")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{err}");
    err
}

/// The rustc line cargo prints for the fixture's own binary crate.
fn rustc_line<'a>(log: &'a str, crate_name: &str) -> &'a str {
    log.lines()
        .find(|l| l.contains("Running") && l.contains(&format!("--crate-name {crate_name} ")))
        .unwrap_or_else(|| panic!("no rustc line for {crate_name}:\n{log}"))
}

#[test]
fn apply_writes_a_named_profile_keeps_the_file_and_is_idempotent() {
    let _guard = shared();
    let tmp = copy_fixture("lto-helps");
    let dir = tmp.path();
    let td = dir.join("target");
    let td_s = td.to_str().unwrap();
    let r = run(
        dir,
        &["optimize", "--target-dir", td_s, "--stages", "profile,pgo"],
        &[],
    );
    assert_eq!(r.code, Some(0), "{}", r.all());
    let report = latest_report(&td);
    assert_eq!(
        stage(&report, "profile").status,
        Status::Kept,
        "{report:#?}"
    );
    // PGO built on the best settings so far: the profile stage's overrides.
    let pgo = stage(&report, "pgo");
    assert_eq!(
        settings(pgo).profile_overrides,
        settings(stage(&report, "profile")).profile_overrides,
        "{pgo:#?}"
    );

    let manifest = dir.join("Cargo.toml");
    let original = std::fs::read_to_string(&manifest).unwrap();

    // --dry-run: the diff, nothing written.
    let dry = run(
        dir,
        &["optimize", "apply", "--target-dir", td_s, "--dry-run"],
        &[],
    );
    assert_eq!(dry.code, Some(0), "{}", dry.all());
    for line in [
        "--- a/Cargo.toml",
        "+++ b/Cargo.toml",
        "+[profile.optimized]",
        "+inherits = \"release\"",
        "+lto = \"fat\"",
        "+codegen-units = 1",
        "dry run: nothing written",
    ] {
        assert!(dry.stdout.contains(line), "no `{line}` in:\n{}", dry.stdout);
    }
    assert!(
        !dry.stdout.contains("\n-"),
        "a line would be removed:\n{}",
        dry.stdout
    );
    assert_eq!(std::fs::read_to_string(&manifest).unwrap(), original);
    assert!(!dir.join("Cargo.toml.bak").exists());
    assert!(!dir.join("pgo").exists());

    // apply: written, with a backup, comments and odd spacing intact.
    let a = run(dir, &["optimize", "apply", "--target-dir", td_s], &[]);
    assert_eq!(a.code, Some(0), "{}", a.all());
    let applied = std::fs::read_to_string(&manifest).unwrap();
    assert_ne!(applied, original);
    assert_eq!(
        std::fs::read_to_string(dir.join("Cargo.toml.bak")).unwrap(),
        original
    );
    assert!(keeps_all_lines(&original, &applied), "{applied}");
    assert!(
        applied.contains("name    =   \"lto-helps\"        # odd spacing on purpose"),
        "{applied}"
    );
    assert!(
        applied.contains("  # The user's own release profile"),
        "{applied}"
    );
    let parsed: toml::Table = applied.parse().unwrap();
    let p = &parsed["profile"]["optimized"];
    assert_eq!(p["inherits"].as_str(), Some("release"));
    assert_eq!(p["lto"].as_str(), Some("fat"));
    assert_eq!(p["codegen-units"].as_integer(), Some(1));
    assert_eq!(parsed["profile"]["release"]["debug"].as_bool(), Some(false));

    // The PGO profile, when PGO won, is copied into the package and the command printed.
    let fin = final_choice(&report);
    if fin.stage == "pgo" {
        let copied = dir.join("pgo/lto-helps.profdata");
        assert!(copied.exists(), "{}", a.all());
        let host = &report.toolchain.host;
        for part in [
            "RUSTFLAGS=",
            &format!("-Cprofile-use={}", copied.display()),
            "-Cllvm-args=-pgo-warn-missing-function",
            "--profile optimized",
            &format!("--target {host}"),
        ] {
            assert!(a.stdout.contains(part), "no `{part}` in:\n{}", a.stdout);
        }
    } else {
        assert!(!dir.join("pgo").exists());
        assert!(a.stdout.contains("--profile optimized"), "{}", a.stdout);
    }

    // A second apply changes nothing and says so.
    let before = snapshot(dir);
    let again = run(dir, &["optimize", "apply", "--target-dir", td_s], &[]);
    assert_eq!(again.code, Some(0), "{}", again.all());
    assert!(
        again.stdout.contains("already applied: nothing to change"),
        "{}",
        again.all()
    );
    assert_eq!(before, snapshot(dir), "the second apply changed files");

    // A plain cargo build with the written profile gets the settings.
    let log = cargo_build_v(
        dir,
        &[
            "--profile",
            "optimized",
            "--target-dir",
            dir.join("plain-build").to_str().unwrap(),
        ],
    );
    let line = rustc_line(&log, "lto_helps");
    assert!(line.contains("-C lto"), "{line}");
    assert!(line.contains("-C codegen-units=1"), "{line}");
    assert!(line.contains("-C opt-level=3"), "{line}");

    // And it reproduces the shipped binary, byte for byte: with the printed command when
    // PGO won, with the profile alone otherwise.
    eprintln!("the run shipped the {} stage", fin.stage);
    let shipped = std::fs::read(&fin.binary).unwrap();
    let rebuilt = if fin.stage == "pgo" {
        let cmd = a
            .stdout
            .lines()
            .map(str::trim)
            .find(|l| l.starts_with("RUSTFLAGS="))
            .unwrap();
        let td2 = dir.join("plain-pgo");
        let out = Command::new("sh")
            .arg("-c")
            .arg(format!("{cmd} --target-dir {}", td2.display()))
            .current_dir(dir)
            .env_remove("CARGO_ENCODED_RUSTFLAGS")
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{cmd}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        td2.join(&report.toolchain.host).join("optimized/lto-helps")
    } else {
        dir.join("plain-build/optimized/lto-helps")
    };
    assert!(
        std::fs::read(&rebuilt).unwrap() == shipped,
        "{} differs from the shipped {}",
        rebuilt.display(),
        fin.binary
    );
}

#[test]
fn apply_with_another_profile_name_and_a_run_without_a_winner() {
    let _guard = shared();
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    std::fs::create_dir_all(dir.join("src")).unwrap();
    let manifest =
        "[package]\nname = \"tiny\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[workspace]\n";
    std::fs::write(dir.join("Cargo.toml"), manifest).unwrap();
    std::fs::write(dir.join("src/main.rs"), "fn main() {}\n").unwrap();
    let report = |stage: &str, overrides: serde_json::Value| {
        serde_json::json!({
            "schema": 1, "run_id": "r1", "crate": "tiny", "bin": "tiny",
            "toolchain": { "host": "x86_64-unknown-linux-gnu" },
            "stages": [],
            "final": {
                "stage": stage, "binary": "/nowhere", "speedup_vs_baseline": 1.2,
                "settings": {
                    "profile": "release", "profile_overrides": overrides,
                    "stage_rustflags": [], "user_rustflags": [], "target": null,
                    "features": { "features": [], "all_features": false, "no_default_features": false }
                }
            }
        })
    };
    let path = dir.join("report.json");
    std::fs::write(&path, report("baseline", serde_json::json!({})).to_string()).unwrap();
    let r = run(dir, &["optimize", "apply", path.to_str().unwrap()], &[]);
    assert_eq!(r.code, Some(0), "{}", r.all());
    assert!(r.stdout.contains("nothing to apply"), "{}", r.all());
    assert_eq!(
        std::fs::read_to_string(dir.join("Cargo.toml")).unwrap(),
        manifest
    );

    std::fs::write(
        &path,
        report(
            "profile",
            serde_json::json!({ "opt-level": "\"s\"", "strip": "true" }),
        )
        .to_string(),
    )
    .unwrap();
    let r = run(
        dir,
        &[
            "optimize",
            "apply",
            path.to_str().unwrap(),
            "--profile-name",
            "small",
        ],
        &[],
    );
    assert_eq!(r.code, Some(0), "{}", r.all());
    let applied = std::fs::read_to_string(dir.join("Cargo.toml")).unwrap();
    assert!(applied.starts_with(manifest), "{applied}");
    assert!(
        applied
            .contains("[profile.small]\ninherits = \"release\"\nopt-level = \"s\"\nstrip = true\n"),
        "{applied}"
    );
    let log = cargo_build_v(
        dir,
        &[
            "--profile",
            "small",
            "--target-dir",
            dir.join("t").to_str().unwrap(),
        ],
    );
    let line = rustc_line(&log, "tiny");
    assert!(line.contains("-C opt-level=s"), "{line}");
    assert!(line.contains("-C strip=symbols"), "{line}");

    // A winner built for a CPU: the target-cpu is written only with --cpu.
    let mut cpu_report = report(
        "cpu",
        serde_json::json!({ "opt-level": "\"s\"", "strip": "true" }),
    );
    cpu_report["final"]["settings"]["stage_rustflags"] =
        serde_json::json!(["-Ctarget-cpu=x86-64-v2"]);
    cpu_report["final"]["variant"] = "x86-64-v2".into();
    std::fs::write(&path, cpu_report.to_string()).unwrap();
    let args = [
        "optimize",
        "apply",
        path.to_str().unwrap(),
        "--profile-name",
        "small",
    ];
    let r = run(dir, &args, &[]);
    assert_eq!(r.code, Some(0), "{}", r.all());
    assert!(r.stdout.contains("already applied"), "{}", r.all());
    assert!(r.stderr.contains("Pass --cpu"), "{}", r.all());
    assert!(!dir.join(".cargo").exists());
    let r = run(dir, &[&args[..], &["--cpu"]].concat(), &[]);
    assert_eq!(r.code, Some(0), "{}", r.all());
    let config = std::fs::read_to_string(dir.join(".cargo/config.toml")).unwrap();
    let parsed: toml::Table = config.parse().unwrap();
    assert_eq!(
        parsed["build"]["rustflags"].as_array().unwrap()[0].as_str(),
        Some("-Ctarget-cpu=x86-64-v2"),
        "{config}"
    );
    assert!(r.stderr.contains("illegal instruction"), "{}", r.all());
    let r = run(dir, &[&args[..], &["--cpu"]].concat(), &[]);
    assert!(r.stdout.contains("already applied"), "{}", r.all());
    if std::env::consts::ARCH == "x86_64" {
        let log = cargo_build_v(
            dir,
            &[
                "--profile",
                "small",
                "--target-dir",
                dir.join("t").to_str().unwrap(),
            ],
        );
        let line = rustc_line(&log, "tiny");
        assert!(line.contains("-Ctarget-cpu=x86-64-v2"), "{line}");
    }

    // A name cargo reserves is refused before anything is read.
    let r = run(dir, &["optimize", "apply", "--profile-name", "doc"], &[]);
    assert_eq!(r.code, Some(2), "{}", r.all());
    assert!(
        r.stderr.contains("not a usable cargo profile name"),
        "{}",
        r.stderr
    );
}

/// Issue 23, item 8, the real thing: a pgo row records the SHA-256 of the profile its
/// build named (in the content-addressed cache, named by its digest), and `apply` of that
/// row copies that file. (The run's winner may be another stage, so the pgo row is made
/// the winner of a second report in the same run folder.)
#[test]
fn apply_copies_a_real_runs_pgo_profile_with_its_recorded_digest() {
    let _guard = shared();
    let tmp = copy_fixture("lto-helps");
    let dir = tmp.path();
    let td = dir.join("target");
    let td_s = td.to_str().unwrap();
    let r = run(
        dir,
        &["optimize", "--target-dir", td_s, "--stages", "pgo"],
        &[],
    );
    assert_eq!(r.code, Some(0), "{}", r.all());
    let report = latest_report(&td);
    let pgo = stage(&report, "pgo");
    let flags = &settings(pgo).stage_rustflags;
    let profile = flags
        .iter()
        .find_map(|f| f.strip_prefix("-Cprofile-use="))
        .unwrap_or_else(|| panic!("no -Cprofile-use in {flags:?}"));
    let bytes = std::fs::read(profile).unwrap();
    let digest = {
        use sha2::Digest as _;
        let d = sha2::Sha256::digest(&bytes);
        d.iter().map(|b| format!("{b:02x}")).collect::<String>()
    };
    assert_eq!(pgo.facts.profile_sha256.as_deref(), Some(digest.as_str()));
    assert_eq!(
        Path::new(profile).file_name().unwrap().to_str().unwrap(),
        format!("{}.profdata", &digest[..24])
    );

    let run_dir = td.join("optimize/latest");
    let mut json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run_dir.join("report.json")).unwrap())
            .unwrap();
    json["final"]["stage"] = "pgo".into();
    json["final"]["variant"] = serde_json::Value::Null;
    json["final"]["settings"] = serde_json::to_value(settings(pgo)).unwrap();
    let as_pgo = run_dir.join("report-pgo.json");
    std::fs::write(&as_pgo, json.to_string()).unwrap();
    let a = run(
        dir,
        &[
            "optimize",
            "apply",
            "--target-dir",
            td_s,
            as_pgo.to_str().unwrap(),
        ],
        &[],
    );
    assert_eq!(a.code, Some(0), "{}", a.all());
    assert!(
        std::fs::read(dir.join("pgo/lto-helps.profdata")).unwrap() == bytes,
        "{}",
        a.all()
    );
}

/// Whether the ELF file at `path` has a section named `name`.
fn has_section(path: &Path, name: &str) -> bool {
    use object::{Object, ObjectSection};
    let data = std::fs::read(path).unwrap();
    let file = object::File::parse(&*data).unwrap();
    let found = file.sections().any(|s| s.name() == Ok(name));
    found
}

/// Issue 26, item 4: what ships is what was measured and no larger than needed. The pgo
/// build carries no relocations (BOLT's input is a build of its own, with `-Wl,-q`), the
/// shipped binary has no `.rela.text`, the ship line shows the size against the baseline,
/// and `apply`'s printed command rebuilds the pgo bytes (shipped, or BOLT's starting point).
#[test]
fn a_pgo_winner_without_bolt_ships_without_relocations_and_apply_rebuilds_it() {
    let _guard = shared();
    let tmp = copy_fixture("pgo-wins");
    let dir = tmp.path();
    let td = dir.join("target");
    let td_s = td.to_str().unwrap();
    let r = run(
        dir,
        &["optimize", "--target-dir", td_s, "--stages", "pgo,bolt"],
        &[],
    );
    let report = latest_report(&td);
    let fin = final_choice(&report);
    eprintln!("the run shipped the {} stage", fin.stage);
    let reloc = "-Clink-args=-Wl,-q";
    for f in [Some(fin), fin.portable.as_deref()].into_iter().flatten() {
        if f.stage == "bolt" || f.stage == "baseline" {
            continue;
        }
        let flags = &settings(f).stage_rustflags;
        assert!(!flags.iter().any(|x| x == reloc), "{f:#?}");
        assert!(!has_section(Path::new(&f.binary), ".rela.text"), "{f:#?}");
    }
    if fin.stage != "baseline" {
        assert!(r.stdout.contains("\n  size "), "{}", r.stdout);
        assert!(r.stdout.contains("(baseline "), "{}", r.stdout);
    }
    // PGO makes pgo-wins several times faster: kept on any machine. BOLT on top of it may
    // be kept or dropped (a tie within noise); both outcomes are asserted below.
    let pgo = stage(&report, "pgo");
    let bolt = stage(&report, "bolt");
    assert_eq!(pgo.status, Status::Kept, "{pgo:#?}");
    assert!(
        matches!(bolt.status, Status::Kept | Status::Dropped),
        "{bolt:#?}"
    );
    let bolt_shipped = bolt.status == Status::Kept;
    assert_eq!(fin.stage, if bolt_shipped { "bolt" } else { "pgo" });
    // BOLT's input, with relocations, was a build of its own, larger than the pgo build
    // it started from; the pgo binary is what was measured.
    let input = bolt.facts.bolt.as_ref().expect("bolt facts");
    assert!(input.input_rebuilt, "{bolt:#?}");
    assert!(
        pgo.size_bytes.unwrap() < input.input_size_bytes,
        "{pgo:#?} {bolt:#?}"
    );
    assert!(
        !pgo.notes.iter().any(|n| n.contains("linked again without")),
        "{pgo:#?}"
    );
    let a = run(dir, &["optimize", "apply", "--target-dir", td_s], &[]);
    assert_eq!(a.code, Some(0), "{}", a.all());
    // A BOLT winner: apply says no cargo setting reproduces it, and no cargo command
    // rebuilds its output: nothing more to check then.
    assert_eq!(
        a.all().contains("post-processed by BOLT"),
        bolt_shipped,
        "{}",
        a.all()
    );
    if bolt_shipped {
        return;
    }
    // Nothing to write into Cargo.toml: PGO alone changes no profile key.
    assert!(!std::fs::read_to_string(dir.join("Cargo.toml"))
        .unwrap()
        .contains("[profile.optimized]"));
    let cmd = a
        .stdout
        .lines()
        .map(str::trim)
        .find(|l| l.starts_with("RUSTFLAGS="))
        .unwrap_or_else(|| panic!("no command in {}", a.stdout));
    assert!(!cmd.contains("-Wl,-q"), "{cmd}");
    let td2 = dir.join("plain-pgo");
    let out = Command::new("sh")
        .arg("-c")
        .arg(format!("{cmd} --target-dir {}", td2.display()))
        .current_dir(dir)
        .env_remove("CARGO_ENCODED_RUSTFLAGS")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{cmd}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let rebuilt = td2.join(&report.toolchain.host).join("release/pgo-wins");
    let pgo_binary = pgo.binary.as_deref().expect("the pgo row's binary");
    assert!(
        std::fs::read(&rebuilt).unwrap() == std::fs::read(pgo_binary).unwrap(),
        "{} differs from the pgo binary {pgo_binary}",
        rebuilt.display(),
    );
}
