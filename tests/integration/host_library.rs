//! Libraries a host program loads: workloads with `command` run a Python host, and the
//! package's `cdylib` is what the ladder builds, installs and times. `cdylib-ctypes` is a
//! C-ABI library a `ctypes` script loads by name through `LD_LIBRARY_PATH`; `pyo3-module` a
//! pyo3 extension module a script imports through `PYTHONPATH`, under the file name its
//! interpreter's `EXT_SUFFIX` gives. Each host prints the file it loaded once on stderr, which
//! verification keeps under `outputs/<tag>/`: every candidate's runs loaded that candidate's
//! own `bin/<tag>/` file, never another.

use std::path::{Path, PathBuf};

use crate::common::*;

/// Whether `python3` runs here; else the test is skipped (a failure under `CI=true`).
fn have_python() -> bool {
    let ok = std::process::Command::new("python3")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        missing_tool("python3", "apt-get install python3");
    }
    ok
}

/// The checks both fixtures share: the run succeeded, the library's stages have rows (bolt
/// skipped with its reason, or run), the tried candidates were verified, the pgo row's
/// profile counts the library's function `hot`, and every verified candidate's host loaded
/// exactly its own file (`marker`: the host's line before the path).
fn assert_library_ladder(name: &str, r: &Run, hot: &str, marker: &str) {
    assert_eq!(r.code, Some(0), "{}", r.all());
    let report = latest_report(&target_dir(name));
    for stage_name in ["profile", "cpu", "pgo", "alloc", "bolt"] {
        let row = stage(&report, stage_name);
        let status = row.status.as_str();
        assert!(
            matches!(status, "kept" | "dropped") || stage_name == "bolt",
            "{stage_name} {status}: {}",
            row.reason
        );
    }
    let bolt = stage(&report, "bolt");
    if bolt.status.as_str() == "skipped" {
        assert!(
            bolt.reason
                .contains("BOLT on a shared library is not supported yet"),
            "{bolt:#?}"
        );
    }
    let pgo = stage(&report, "pgo");
    let functions = pgo.facts.profile.as_ref().map_or(0, |p| p.functions);
    assert!(functions >= 1, "{functions} functions in {pgo:#?}");
    let hottest: Vec<&str> = (report.hotspots.iter())
        .flat_map(|h| h.functions.iter().map(|f| f.name.as_str()))
        .collect();
    assert!(
        hottest.iter().any(|f| f.contains(hot)),
        "the profile counts the library's `{hot}`: {hottest:?}"
    );
    let mut checked = 0;
    for row in report.stages.iter().filter(|s| s.verified == Some(true)) {
        let binary = PathBuf::from(row.binary.as_deref().expect("a verified row has a file"));
        checked += loaded_only(&binary, marker);
    }
    assert!(checked >= 4, "{checked} verification runs checked");
}

/// The runs of `binary`'s candidate kept under `outputs/<tag>/` each loaded `binary` itself
/// (the host's `marker` line names it): how many were checked (at least one).
fn loaded_only(binary: &Path, marker: &str) -> usize {
    let folder = binary.parent().unwrap();
    let tag = folder.file_name().unwrap();
    let run = folder.parent().unwrap().parent().unwrap();
    let outputs = run.join("outputs").join(tag);
    let mut checked = 0;
    for w in ["train", "eval"] {
        let Ok(stderr) = std::fs::read_to_string(outputs.join(format!("{w}.stderr"))) else {
            continue;
        };
        let lines: Vec<&str> = stderr.lines().filter(|l| l.starts_with(marker)).collect();
        assert_eq!(
            lines,
            [format!("{marker} {}", binary.display())],
            "{tag:?} {w}: the host loaded another file"
        );
        checked += 1;
    }
    assert!(checked > 0, "no saved run of {}", outputs.display());
    checked
}

#[test]
fn a_ctypes_host_times_each_candidate_cdylib_it_loads() {
    let _g = lock_target_dir("cdylib-ctypes");
    if !have_python() {
        return;
    }
    let r = optimize("cdylib-ctypes", &["--budget", "8m"], &[]);
    assert_library_ladder("cdylib-ctypes", &r, "churn", "loaded:");
    let report = latest_report(&target_dir("cdylib-ctypes"));
    let baseline = stage(&report, "baseline");
    let file = baseline.binary.as_deref().unwrap();
    assert!(
        file.ends_with("/bin/baseline/libcdylib_ctypes.so"),
        "{file}"
    );
}

#[test]
fn a_pyo3_module_climbs_the_default_ladder_imported_by_python() {
    let _g = lock_target_dir("pyo3-module");
    if !have_python() {
        return;
    }
    let suffix = std::process::Command::new("python3")
        .args([
            "-c",
            "import sysconfig; print(sysconfig.get_config_var('EXT_SUFFIX'))",
        ])
        .output()
        .unwrap();
    let suffix = String::from_utf8_lossy(&suffix.stdout).trim().to_string();
    let r = optimize("pyo3-module", &["--budget", "25m"], &[]);
    assert_library_ladder("pyo3-module", &r, "top_words", "module:");
    let report = latest_report(&target_dir("pyo3-module"));
    // The module's name is pyproject.toml's `module-name` (`fixture.hotpath`), not the lib
    // target's (`pyo3_module`).
    let file = stage(&report, "baseline").binary.clone().unwrap();
    assert!(
        file.ends_with(&format!("/bin/baseline/hotpath{suffix}")),
        "{file}"
    );
}

#[test]
fn a_host_that_is_not_found_is_exit_2_naming_the_workload_before_any_build() {
    let _g = shared();
    let tmp = copy_fixture("cdylib-ctypes");
    let spec = tmp.path().join("optimize.toml");
    let text = std::fs::read_to_string(&spec).unwrap();
    std::fs::write(&spec, text.replace("\"python3\"", "\"no-such-host-9\"")).unwrap();
    let td = tmp.path().join("target");
    let r = run(
        tmp.path(),
        &["optimize", "--target-dir", td.to_str().unwrap()],
        &[],
    );
    assert_eq!(r.code, Some(2), "{}", r.all());
    assert!(
        r.stderr.contains(
            "workload `train`: its host program `no-such-host-9` (`command`) is not found on PATH"
        ) && r.stderr.contains("fix: install it"),
        "{}",
        r.stderr
    );
    assert!(!td.join("optimize/build").exists(), "nothing is built");
}
