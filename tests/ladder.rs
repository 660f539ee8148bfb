//! The profile and cpu stages and the ladder, on real fixture crates with real builds.
//! No assertion depends on timings except where the effect is large by construction
//! (fat LTO inlining a hot cross-crate call: several times faster).

mod common;

use common::*;

fn overrides(st: &serde_json::Value) -> serde_json::Map<String, serde_json::Value> {
    st["settings"]["profile_overrides"]
        .as_object()
        .cloned()
        .unwrap_or_else(|| panic!("no profile_overrides in {st:#}"))
}

fn strings(v: &serde_json::Value) -> Vec<String> {
    serde_json::from_value(v.clone()).unwrap_or_else(|_| panic!("not a string list: {v}"))
}

#[test]
fn fat_lto_that_inlines_across_crates_is_measured_and_kept() {
    let before = snapshot(&fixture("lto-helps"));
    let r = optimize("lto-helps", &[], &[]);
    assert_eq!(r.code, Some(0), "{}", r.all());
    let report = latest_report(&target_dir("lto-helps"));
    let profile = stage(&report, "profile");

    // The preset's exact settings reached cargo as overrides of the user's profile…
    let o = overrides(profile);
    assert_eq!(o["lto"], "\"fat\"", "{profile:#}");
    assert_eq!(o["codegen-units"], "1", "{profile:#}");
    assert_eq!(o["opt-level"], "3", "{profile:#}");
    assert_eq!(o["incremental"], "false", "{profile:#}");
    assert!(
        o.get("panic").is_none(),
        "panic=abort without allow-panic-abort"
    );
    assert_eq!(profile["settings"]["profile"], "release");
    let command = profile["facts"]["cargo_command"].as_str().unwrap();
    assert!(
        command.contains("--config profile.release.lto=\"fat\"")
            && command.contains("--config profile.release.codegen-units=1"),
        "{command}"
    );
    // …and made a different binary, verified like the baseline and measurably faster:
    // without LTO every iteration calls into the dependency crate.
    assert_eq!(profile["verified"], true, "{profile:#}");
    assert_eq!(profile["status"], "kept", "{profile:#}");
    assert_eq!(profile["vs_best"]["verdict"], "faster", "{profile:#}");
    assert_ne!(
        std::fs::read(profile["binary"].as_str().unwrap()).unwrap(),
        std::fs::read(stage(&report, "baseline")["binary"].as_str().unwrap()).unwrap()
    );

    // What to ship: the profile build, with its settings and speedup; it picks no CPU, so
    // it is its own portable alternative.
    let fin = &report["final"];
    assert_eq!(fin["stage"], "profile", "{fin:#}");
    assert!(
        fin["speedup_vs_baseline"].as_f64().unwrap() > 1.0,
        "{fin:#}"
    );
    assert_eq!(fin["settings"]["profile_overrides"]["lto"], "\"fat\"");
    assert_eq!(fin["portable"]["binary"], fin["binary"], "{fin:#}");

    // The ladder: a row per stage with ratios, then what to ship.
    let row = r
        .stdout
        .lines()
        .find(|l| l.starts_with("profile "))
        .unwrap_or_else(|| panic!("no profile row:\n{}", r.stdout));
    assert!(row.contains("kept") && row.contains("faster"), "{row}");
    assert!(r.stdout.contains("ship: "), "{}", r.stdout);
    assert!(r.stdout.contains("lto = \"fat\""), "{}", r.stdout);
    assert!(r.stdout.contains("measured "), "{}", r.stdout);
    assert!(r.stdout.contains("cargo optimize apply"), "{}", r.stdout);
    assert_eq!(
        before,
        snapshot(&fixture("lto-helps")),
        "the fixture changed"
    );
}

#[test]
fn profile_settings_are_reported_and_explained_one_at_a_time() {
    // A hot loop inside one crate that calls nothing: LTO has nothing to inline. Whether
    // the stage is kept is up to the measurement; the settings and the report shape are not.
    let r = optimize("lto-neutral", &["--explain"], &[]);
    assert_eq!(r.code, Some(0), "{}", r.all());
    let report = latest_report(&target_dir("lto-neutral"));
    let profile = stage(&report, "profile");
    let o = overrides(profile);
    assert_eq!(o.len(), 2, "{o:?}");
    assert_eq!(o["lto"], "\"fat\"");
    assert_eq!(o["codegen-units"], "1");
    assert_eq!(profile["facts"]["choice"], "inline");
    assert_eq!(profile["verified"], true);
    let status = profile["status"].as_str().unwrap();
    assert!(["kept", "dropped"].contains(&status), "{profile:#}");
    for key in ["vs_best", "vs_baseline"] {
        let e = &profile[key];
        let (lo, ratio, hi) = (
            e["ci_low"].as_f64().unwrap(),
            e["ratio"].as_f64().unwrap(),
            e["ci_high"].as_f64().unwrap(),
        );
        assert!(0.0 < lo && lo <= ratio && ratio <= hi, "{e:#}");
    }
    if status == "dropped" {
        assert_eq!(report["final"]["stage"], "baseline");
        assert!(
            profile["reason"]
                .as_str()
                .unwrap()
                .starts_with("profile vs baseline:"),
            "{profile:#}"
        );
    }

    // --explain: one entry per setting, in the spec's order, each built alone on top of
    // the baseline and either measured or recognised as the baseline's own code.
    let explained = profile["facts"]["explain"].as_array().expect("explain");
    let names: Vec<&str> = explained
        .iter()
        .map(|e| e["setting"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["codegen-units", "lto"], "{explained:#?}");
    for e in explained {
        assert!(e["error"].is_null(), "{e:#}");
        assert!(e["size_bytes"].as_u64().unwrap() > 0, "{e:#}");
        let same = e["same_code_as_baseline"].as_bool().unwrap();
        assert!(
            same || e["vs_baseline"]["verdict"].is_string(),
            "neither measured nor identical: {e:#}"
        );
    }
    assert!(
        r.stdout.contains("each alone vs the baseline (--explain)"),
        "{}",
        r.stdout
    );
    assert!(r.stdout.contains("lto = \"fat\""), "{}", r.stdout);
}

/// Whether /proc/cpuinfo lists `flag`.
fn cpu_has(flag: &str) -> bool {
    std::fs::read_to_string("/proc/cpuinfo")
        .unwrap_or_default()
        .lines()
        .find(|l| l.starts_with("flags"))
        .is_some_and(|l| l.split_whitespace().any(|f| f == flag))
}

#[test]
fn a_cpu_the_machine_lacks_is_skipped_and_the_portable_binary_is_kept() {
    // The spec lists x86-64-v2 (any x86-64 of the last 15 years) and sapphirerapids
    // (AVX-512 FP16, AVX-VNNI).
    if std::env::consts::ARCH != "x86_64" || cpu_has("avx512_fp16") {
        eprintln!("skipped: this machine can run sapphirerapids code");
        return;
    }
    let r = optimize("cpu-levels", &[], &[]);
    assert_eq!(r.code, Some(0), "{}", r.all());
    assert!(
        r.stderr.contains("cpu (sapphirerapids): skipped"),
        "{}",
        r.stderr
    );
    let td = target_dir("cpu-levels");
    let report = latest_report(&td);
    let cpu_rows: Vec<&serde_json::Value> = report["stages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["name"] == "cpu")
        .collect();
    assert_eq!(cpu_rows.len(), 2, "{report:#}");

    let v2 = cpu_rows[0];
    assert_eq!(v2["facts"]["variant"], "x86-64-v2", "{v2:#}");
    assert_eq!(
        strings(&v2["settings"]["stage_rustflags"]),
        ["-Ctarget-cpu=x86-64-v2"]
    );
    assert_eq!(v2["verified"], true, "{v2:#}");
    assert!(
        ["kept", "dropped"].contains(&v2["status"].as_str().unwrap()),
        "{v2:#}"
    );
    assert!(td.join("optimize/latest/bin/cpu-x86-64-v2").exists());
    assert!(td
        .join("optimize/latest/outputs/cpu-x86-64-v2/dot.stdout")
        .exists());

    let spr = cpu_rows[1];
    assert_eq!(spr["facts"]["variant"], "sapphirerapids", "{spr:#}");
    assert_eq!(spr["status"], "skipped", "{spr:#}");
    let reason = spr["reason"].as_str().unwrap();
    assert!(
        reason.contains("cannot run") && reason.contains("lacks"),
        "{reason}"
    );
    assert!(spr["binary"].is_null());

    // The portable alternative is always reported and never picks a CPU.
    let fin = &report["final"];
    let portable = &fin["portable"];
    assert!(
        !strings(&portable["settings"]["stage_rustflags"])
            .iter()
            .any(|f| f.contains("target-cpu")),
        "{fin:#}"
    );
    if fin["stage"] == "cpu" {
        assert_eq!(portable["stage"], "baseline");
        assert_ne!(portable["binary"], fin["binary"]);
        assert!(r.stdout.contains("portable alternative"), "{}", r.stdout);
    }
    for row in ["cpu (x86-64-v2)", "cpu (sapphirerapids)"] {
        assert!(
            r.stdout.lines().any(|l| l.starts_with(row)),
            "no `{row}` row:\n{}",
            r.stdout
        );
    }
}

#[test]
fn settings_that_change_nothing_are_dropped_without_measuring() {
    // `opt-level = 3` is already what `release` uses: the candidate is the baseline's bytes.
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("optimize.toml");
    let text = r#"bin = "pgo-basic"
[stages]
try = ["profile"]
profile = { opt-level = 3 }
[bench]
max-time = "3s"
[[workload]]
name = "eval"
args = ["120000"]
"#;
    std::fs::write(&spec, text).unwrap();
    let td = target_dir("pgo-basic");
    let r = run(
        &fixture("pgo-basic"),
        &[
            "--spec",
            spec.to_str().unwrap(),
            "--target-dir",
            td.to_str().unwrap(),
        ],
        &[],
    );
    assert_eq!(r.code, Some(0), "{}", r.all());
    let report = latest_report(&td);
    let profile = stage(&report, "profile");
    assert_eq!(profile["status"], "dropped", "{profile:#}");
    assert!(
        profile["reason"]
            .as_str()
            .unwrap()
            .contains("byte-identical"),
        "{profile:#}"
    );
    assert!(profile["vs_best"].is_null(), "it was measured: {profile:#}");
    assert!(
        !r.stderr.contains("profile vs baseline: measuring"),
        "{}",
        r.stderr
    );
}

#[test]
fn a_cpu_specific_best_also_gets_a_portable_pgo_build() {
    // popcnt from x86-64-v2 on makes the cpu candidate faster by construction; PGO then
    // builds on it, and must also profile the portable best so a binary that runs on any
    // x86-64 machine gets PGO too.
    let r = optimize("cpu-popcnt", &[], &[]);
    assert_eq!(r.code, Some(0), "{}", r.all());
    let td = target_dir("cpu-popcnt");
    let report = latest_report(&td);
    let rows = report["stages"].as_array().unwrap();
    let cpu = rows.iter().find(|s| s["name"] == "cpu").unwrap();
    assert_eq!(cpu["status"], "kept", "the premise failed: {}", r.stdout);

    let pgo: Vec<&serde_json::Value> = rows.iter().filter(|s| s["name"] == "pgo").collect();
    assert_eq!(pgo.len(), 2, "{report:#}");
    let (main, portable) = (pgo[0], pgo[1]);
    assert!(main["facts"]["variant"].is_null(), "{main:#}");
    assert!(strings(&main["settings"]["stage_rustflags"])
        .contains(&"-Ctarget-cpu=x86-64-v2".to_string()));
    assert_eq!(portable["facts"]["variant"], "portable", "{portable:#}");
    let flags = strings(&portable["settings"]["stage_rustflags"]);
    assert!(!flags.iter().any(|f| f.contains("target-cpu")), "{flags:?}");
    assert!(
        flags.iter().any(|f| f.starts_with("-Cprofile-use=")),
        "{flags:?}"
    );
    // Its instrumented build had the same (portable) settings as its optimized one.
    let inst = strings(&portable["facts"]["instrumented_rustflags"]);
    assert!(!inst.iter().any(|f| f.contains("target-cpu")), "{inst:?}");
    // Measured against the portable best (the baseline), verified, with its own binary.
    assert_eq!(portable["verified"], true, "{portable:#}");
    assert!(
        portable["reason"].as_str().unwrap().contains("vs baseline"),
        "{portable:#}"
    );
    assert!(td.join("optimize/latest/bin/pgo-portable").exists());
    // The portable alternative never targets a CPU; it is the PGO build when that won.
    let p = &report["final"]["portable"];
    let expected = if portable["status"] == "kept" {
        "pgo"
    } else {
        "baseline"
    };
    assert_eq!(p["stage"], expected, "{p:#}");
}
