//! The pipeline end to end on real fixture crates, with the real rustc and llvm-profdata.

mod common;

use common::*;

#[test]
fn pgo_pipeline_builds_verifies_measures_and_reports() {
    let before = snapshot(&fixture("pgo-basic"));
    let r = optimize("pgo-basic", &["--stages", "pgo"], &[]);
    assert_eq!(r.code, Some(0), "{}", r.all());
    // Progress names each training workload with its position.
    assert!(r.stderr.contains("pgo: training [1/"), "{}", r.stderr);

    let td = target_dir("pgo-basic");
    let report = latest_report(&td);
    assert_eq!(report["schema"], 1);
    assert_eq!(report["bin"], "pgo-basic");
    for key in [
        "tool_version",
        "run_id",
        "crate",
        "toolchain",
        "stages",
        "workloads",
        "final",
        "pipeline",
    ] {
        assert!(
            report.get(key).is_some(),
            "report.json lacks `{key}`: {report:#}"
        );
    }
    assert!(report["toolchain"]["llvm"].as_str().unwrap().contains('.'));

    let base = stage(&report, "baseline");
    let pgo = stage(&report, "pgo");
    assert_eq!(pgo["verified"], true, "{pgo:#}");
    assert!(
        ["kept", "dropped"].contains(&pgo["status"].as_str().unwrap()),
        "{pgo:#}"
    );
    // The profile was real and non-empty.
    let prof = &pgo["facts"]["profile"];
    assert!(prof["functions"].as_u64().unwrap() > 0, "{prof:#}");
    assert!(prof["max_count"].as_u64().unwrap() > 0, "{prof:#}");
    let merged = std::path::PathBuf::from(prof["path"].as_str().unwrap());
    assert!(std::fs::metadata(&merged).unwrap().len() > 0);
    // The PGO binary was built with that profile and differs from the baseline.
    let flags: Vec<String> = serde_json::from_value(pgo["settings"]["rustflags"].clone()).unwrap();
    assert!(
        flags.iter().any(|f| f.starts_with("-Cprofile-use=")),
        "{flags:?}"
    );
    let (b, p) = (
        std::fs::read(base["binary"].as_str().unwrap()).unwrap(),
        std::fs::read(pgo["binary"].as_str().unwrap()).unwrap(),
    );
    assert_ne!(b, p, "the PGO binary is byte-identical to the baseline");
    // Measured with an interval around the ratio.
    let vs = &pgo["vs_best"];
    let (lo, ratio, hi) = (
        vs["ci_low"].as_f64().unwrap(),
        vs["ratio"].as_f64().unwrap(),
        vs["ci_high"].as_f64().unwrap(),
    );
    assert!(lo <= ratio && ratio <= hi && lo > 0.0, "{vs:#}");
    assert!(["faster", "slower", "equivalent", "inconclusive"]
        .contains(&vs["verdict"].as_str().unwrap()));
    // Outputs were kept for both binaries and are equal.
    let run_dir = td.join("optimize/latest");
    for w in report["workloads"].as_array().unwrap() {
        let name = w["name"].as_str().unwrap();
        let a = std::fs::read(run_dir.join(format!("outputs/baseline/{name}.stdout"))).unwrap();
        let c = std::fs::read(run_dir.join(format!("outputs/pgo/{name}.stdout"))).unwrap();
        assert_eq!(a, c, "workload {name}");
    }
    assert!(run_dir.join("bin/baseline").exists() && run_dir.join("bin/pgo").exists());
    // The ladder is printed to stdout.
    assert!(
        r.stdout.contains("pgo") && r.stdout.contains("ship:"),
        "{}",
        r.stdout
    );
    assert_eq!(
        before,
        snapshot(&fixture("pgo-basic")),
        "the fixture was modified"
    );
}

#[test]
fn a_pgo_build_that_changes_output_is_rejected() {
    let r = optimize("cfg-changes", &["--stages", "pgo"], &[]);
    assert_eq!(r.code, Some(0), "{}", r.all());
    assert!(r.stderr.contains("pgo rejected"), "{}", r.stderr);
    assert!(
        r.stderr.contains("mode: plain") && r.stderr.contains("mode: pgo"),
        "{}",
        r.stderr
    );
    let report = latest_report(&target_dir("cfg-changes"));
    let pgo = stage(&report, "pgo");
    assert_eq!(pgo["status"], "rejected");
    assert_eq!(pgo["verified"], false);
    assert!(
        pgo["reason"].as_str().unwrap().contains("line 1"),
        "{pgo:#}"
    );
    assert_eq!(report["final"]["stage"], "baseline");
}

#[test]
fn user_rustflags_from_cargo_config_reach_every_build() {
    // The fixture's .cargo/config.toml sets `--cfg user_flag`; cargo reads it from the
    // current directory, and so must we.
    let r = optimize("rustflags", &["--stages", "pgo"], &[]);
    assert_eq!(r.code, Some(0), "{}", r.all());
    let td = target_dir("rustflags");
    let report = latest_report(&td);
    for s in ["baseline", "pgo"] {
        let st = stage(&report, s);
        let flags: Vec<String> =
            serde_json::from_value(st["settings"]["rustflags"].clone()).unwrap();
        assert!(
            flags.windows(2).any(|w| w == ["--cfg", "user_flag"]),
            "{s}: {flags:?}"
        );
        let out = std::fs::read_to_string(td.join(format!(
            "optimize/latest/outputs/{s}/{}.stdout",
            first_workload(&report)
        )))
        .unwrap();
        assert!(out.contains("user_flag: on"), "{s}: {out}");
    }
    // The instrumented build kept them too.
    let inst: Vec<String> =
        serde_json::from_value(stage(&report, "pgo")["facts"]["instrumented_rustflags"].clone())
            .unwrap();
    assert!(
        inst.windows(2).any(|w| w == ["--cfg", "user_flag"]),
        "{inst:?}"
    );
}

#[test]
fn user_rustflags_from_the_environment_are_kept_and_absent_ones_are_not_invented() {
    let elsewhere = tempfile::tempdir().unwrap();
    let manifest = fixture("rustflags").join("Cargo.toml");
    let td = target_dir("rustflags-env");
    let args = [
        "--manifest-path",
        manifest.to_str().unwrap(),
        "--target-dir",
        td.to_str().unwrap(),
        "--stages",
        "",
    ];
    // From a folder without the config: off, unless RUSTFLAGS says so.
    let off = run(elsewhere.path(), &args, &[]);
    assert_eq!(off.code, Some(0), "{}", off.all());
    let report = latest_report(&td);
    let w = first_workload(&report);
    let out =
        std::fs::read_to_string(td.join(format!("optimize/latest/outputs/baseline/{w}.stdout")))
            .unwrap();
    assert!(out.contains("user_flag: off"), "{out}");

    let on = run(elsewhere.path(), &args, &[("RUSTFLAGS", "--cfg user_flag")]);
    assert_eq!(on.code, Some(0), "{}", on.all());
    let out =
        std::fs::read_to_string(td.join(format!("optimize/latest/outputs/baseline/{w}.stdout")))
            .unwrap();
    assert!(out.contains("user_flag: on"), "{out}");
}

fn first_workload(report: &serde_json::Value) -> String {
    report["workloads"][0]["name"].as_str().unwrap().to_string()
}

#[test]
fn value_profile_counter_exhaustion_is_collapsed_and_cured() {
    let r = optimize("vp-counters", &["--stages", "pgo"], &[]);
    assert_eq!(r.code, Some(0), "{}", r.all());
    let report = latest_report(&target_dir("vp-counters"));
    let pgo = stage(&report, "pgo");
    let notes = pgo["notes"].to_string();
    assert!(notes.contains("vp-counters-per-site"), "{pgo:#}");
    assert!(
        pgo["facts"]["vp_counters_per_site"].as_u64().is_some(),
        "{pgo:#}"
    );
    // One line per distinct warning, never thousands.
    let warning_lines = r
        .stderr
        .lines()
        .filter(|l| l.contains("Running out of static counters"))
        .count();
    assert!(warning_lines <= 2, "{}", r.stderr);
}

#[test]
fn a_program_that_aborts_produces_no_profile_and_the_stage_fails_explained() {
    let r = optimize("abort-exit", &["--stages", "pgo"], &[]);
    assert_eq!(r.code, Some(1), "{}", r.all());
    assert!(r.stderr.contains("no profile"), "{}", r.stderr);
    assert!(r.stderr.contains("abort"), "{}", r.stderr);
    let report = latest_report(&target_dir("abort-exit"));
    assert_eq!(stage(&report, "pgo")["status"], "failed");
    assert_eq!(report["final"]["stage"], "baseline");
}

#[test]
fn works_as_a_cargo_subcommand() {
    let dir = tool().parent().unwrap().to_path_buf();
    let path = format!(
        "{}:{}",
        dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = std::process::Command::new("cargo")
        .args(["optimize", "--help"])
        .env("PATH", path)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains("Usage: cargo optimize"), "{text}");
    assert!(text.contains("doctor"), "{text}");
}
