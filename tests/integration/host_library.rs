//! Libraries a host program loads: workloads with `command` run a Python host, and the
//! package's `cdylib` is what the ladder builds, installs and times. `cdylib-ctypes` is a
//! C-ABI library a `ctypes` script loads by name through `LD_LIBRARY_PATH`; `pyo3-module` a
//! pyo3 extension module a script imports through `PYTHONPATH`, under the file name its
//! interpreter's `EXT_SUFFIX` gives. Each host prints the file it loaded once on stderr, which
//! verification keeps under `outputs/<tag>/`: every candidate's runs loaded that candidate's
//! own `bin/<tag>/` file, never another. `release` of the pyo3 module builds a wheel with
//! maturin, installed into a fresh venv by pip.

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

/// The `EXT_SUFFIX` of `python3` on PATH (`.cpython-311-x86_64-linux-gnu.so`).
fn ext_suffix() -> String {
    let out = std::process::Command::new("python3")
        .args([
            "-c",
            "import sysconfig; print(sysconfig.get_config_var('EXT_SUFFIX'))",
        ])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).trim().to_string()
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
    let suffix = ext_suffix();
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

/// `init` on a copy of `name` without its spec: exit 0, the written spec, and the
/// `--dry-run` of it.
fn init_then_dry_run(tmp: &Path) -> (String, Run) {
    let spec = tmp.join("optimize.toml");
    std::fs::remove_file(&spec).unwrap();
    let r = run(tmp, &["optimize", "init"], &[]);
    assert_eq!(r.code, Some(0), "{}", r.all());
    assert!(
        r.stderr
            .contains("a host program loads: write the host script bench/run.py"),
        "{}",
        r.stderr
    );
    let written = std::fs::read_to_string(&spec).unwrap();
    for said in [
        "command = [\"python3\", \"bench/run.py\"]",
        "args = [\"train\"]",
        "args = [\"eval\"]",
        "WRITE bench/run.py",
    ] {
        assert!(written.contains(said), "{said}: {written}");
    }
    assert!(
        !written.lines().any(|l| l.starts_with("bin = ")),
        "{written}"
    );
    let td = tmp.join("target");
    let dry = [
        "optimize",
        "--dry-run",
        "--target-dir",
        td.to_str().unwrap(),
    ];
    (written, run(tmp, &dry, &[]))
}

/// `init` on a pyo3 module writes a Python host template; `--dry-run` names the script the
/// user must write until it exists, then accepts the spec.
#[test]
fn init_on_a_pyo3_module_writes_a_python_host_template() {
    let _g = shared();
    if !have_python() {
        return;
    }
    let tmp = copy_fixture("pyo3-module");
    let script = tmp.path().join("bench/run.py");
    let kept = std::fs::read(&script).unwrap();
    std::fs::remove_file(&script).unwrap();
    let (written, r) = init_then_dry_run(tmp.path());
    assert!(
        written.contains("import hotpath") && written.contains("Python extension module"),
        "{written}"
    );
    assert_eq!(r.code, Some(2), "{}", r.all());
    assert!(
        r.stderr.contains("workload `train`: the script `bench/run.py` its host `python3` runs (`command`) is no file")
            && r.stderr.contains("fix: write it"),
        "{}",
        r.stderr
    );
    std::fs::write(&script, kept).unwrap();
    let td = tmp.path().join("target");
    let dry = [
        "optimize",
        "--dry-run",
        "--target-dir",
        td.to_str().unwrap(),
    ];
    let r = run(tmp.path(), &dry, &[]);
    assert_eq!(r.code, Some(0), "{}", r.all());
    assert!(
        r.all().contains("dry run: nothing was built or run"),
        "{}",
        r.all()
    );
}

/// `init` on a plain cdylib writes a ctypes host template (and a C host's line), which
/// the fixture's own script satisfies.
#[test]
fn init_on_a_plain_cdylib_writes_a_ctypes_host_template() {
    let _g = shared();
    if !have_python() {
        return;
    }
    let tmp = copy_fixture("cdylib-ctypes");
    let (written, r) = init_then_dry_run(tmp.path());
    for said in [
        "ctypes.CDLL(\"libcdylib_ctypes.so\")",
        "Or a C host: command = [\"bench/host\"]",
        "-lcdylib_ctypes",
    ] {
        assert!(written.contains(said), "{said}: {written}");
    }
    assert_eq!(r.code, Some(0), "{}", r.all());
    assert!(
        r.all().contains("dry run: nothing was built or run"),
        "{}",
        r.all()
    );
}

/// `doctor` in a pyo3 module names the interpreter the workloads would run with its
/// `EXT_SUFFIX`, pyo3's range from Cargo.lock, and the module's ABI; a build interpreter
/// (`PYO3_PYTHON`) that does not answer is a problem with the fix.
#[test]
fn doctor_in_a_pyo3_module_names_the_interpreter_and_whether_it_matches() {
    let _g = shared();
    if !have_python() {
        return;
    }
    let suffix = ext_suffix();
    let tmp = copy_fixture("pyo3-module");
    let r = run(tmp.path(), &["optimize", "doctor"], &[("PYO3_PYTHON", "")]);
    let out = &r.stdout;
    assert!(
        out.contains("Host program of the library's workloads (`python3`)"),
        "{}",
        r.all()
    );
    let interpreter = out.lines().find(|l| l.contains(" interpreter ")).unwrap();
    assert!(
        interpreter.starts_with("  ok") && interpreter.contains(&format!("EXT_SUFFIX {suffix})")),
        "{out}"
    );
    assert!(
        out.contains("0.28.3 (Cargo.lock) builds for cpython"),
        "{out}"
    );
    assert!(
        out.contains(&format!("imported as hotpath{suffix}")),
        "{out}"
    );
    let r = run(
        tmp.path(),
        &["optimize", "doctor"],
        &[("PYO3_PYTHON", "/nonexistent/python3.9")],
    );
    assert_eq!(r.code, Some(1), "{}", r.all());
    assert!(
        r.stdout.contains("MISSING module ABI")
            && r.stdout
                .contains("/nonexistent/python3.9 (PYO3_PYTHON) did not answer")
            && r.stdout.contains("fix: set PYO3_PYTHON="),
        "{}",
        r.stdout
    );
}

/// Whether maturin runs here (on PATH, or as python3's module); else the test is skipped
/// (a failure under `CI=true`).
fn have_maturin() -> bool {
    let answers = |program: &str, args: &[&str]| {
        std::process::Command::new(program)
            .args(args)
            .output()
            .is_ok_and(|o| o.status.success())
    };
    let ok =
        answers("maturin", &["--version"]) || answers("python3", &["-m", "maturin", "--version"]);
    if !ok {
        missing_tool("maturin", "pip install maturin");
    }
    ok
}

/// `cmd` run to its end within `secs` seconds (killed and failed after), its output.
fn bounded(cmd: &mut std::process::Command, secs: u64) -> std::process::Output {
    let child = cmd
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn");
    let id = child.id();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || tx.send(child.wait_with_output()));
    match rx.recv_timeout(std::time::Duration::from_secs(secs)) {
        Ok(out) => out.expect("wait"),
        Err(_) => {
            let _ = std::process::Command::new("kill")
                .arg(id.to_string())
                .status();
            panic!("{cmd:?} did not finish within {secs} s");
        }
    }
}

/// `release` of a pyo3 module after a short run: a wheel built by maturin whose module is
/// the file the run measured (the same bytes), which `pip install` takes in a fresh venv,
/// and whose installed module prints on the eval input what the run recorded for it.
#[test]
fn release_of_a_pyo3_module_is_a_wheel_whose_installed_module_gives_the_measured_outputs() {
    let _g = lock_target_dir("pyo3-module");
    if !have_python() || !have_maturin() {
        return;
    }
    let td = target_dir("pyo3-module");
    let r = optimize("pyo3-module", &["--stages", "pgo", "--budget", "3m"], &[]);
    assert_eq!(r.code, Some(0), "{}", r.all());
    let report = latest_report(&td);
    let shipped = final_choice(&report);
    let tmp = tempfile::tempdir().unwrap();
    let dist = tmp.path().join("dist");
    let (tds, dists) = (td.to_str().unwrap(), dist.to_str().unwrap());
    let rel = run(
        &fixture("pyo3-module"),
        &[
            "optimize",
            "release",
            "--target-dir",
            tds,
            "--out-dir",
            dists,
        ],
        &[],
    );
    assert_eq!(rel.code, Some(0), "{}", rel.all());
    assert!(
        rel.stdout
            .contains("same bytes as the file the run measured"),
        "{}",
        rel.stdout
    );
    let manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dist.join("manifest.json")).unwrap()).unwrap();
    let a = &manifest["artifacts"][0];
    let lib = &a["library"];
    assert_eq!(lib["kind"], "wheel", "{a:#}");
    assert_eq!(lib["identity"], "same-bytes", "{a:#}");
    assert_eq!(lib["measured"].as_str(), Some(shipped.binary.as_str()));
    assert_eq!(lib["run"].as_str(), Some(report.run_id.as_str()));
    assert_eq!(a["pgo"]["applied"], shipped.stage == "pgo", "{a:#}");
    assert!(
        lib["built_by"]
            .as_str()
            .unwrap()
            .contains("build --release"),
        "{a:#}"
    );
    let wheel = dist.join(a["file"].as_str().unwrap());
    assert!(
        wheel.extension().is_some_and(|e| e == "whl"),
        "{}",
        wheel.display()
    );
    let sums = std::fs::read_to_string(dist.join("SHA256SUMS")).unwrap();
    assert!(sums.contains(a["file"].as_str().unwrap()), "{sums}");

    let venv = tmp.path().join("venv");
    let made = bounded(
        std::process::Command::new("python3")
            .args(["-m", "venv"])
            .arg(&venv),
        120,
    );
    assert!(made.status.success(), "{made:?}");
    let python = venv.join("bin/python");
    let pip = bounded(
        std::process::Command::new(&python)
            .args(["-m", "pip", "install", "--no-index", "--no-deps", "--quiet"])
            .arg(&wheel),
        180,
    );
    assert!(pip.status.success(), "{pip:?}");
    let eval = bounded(
        std::process::Command::new(&python)
            .args(["bench/run.py", "eval"])
            .current_dir(fixture("pyo3-module"))
            .env_remove("PYTHONPATH"),
        120,
    );
    assert!(eval.status.success(), "{eval:?}");
    let stderr = String::from_utf8_lossy(&eval.stderr);
    assert!(
        stderr.contains(&format!("module: {}", venv.display())),
        "the installed module was imported: {stderr}"
    );
    let run_dir = td.join("optimize/runs").join(&report.run_id);
    let recorded = std::fs::read(run_dir.join("outputs/baseline/eval.stdout")).unwrap();
    assert_eq!(
        String::from_utf8_lossy(&eval.stdout),
        String::from_utf8_lossy(&recorded),
        "the installed module's outputs are the run's"
    );
}

/// Without maturin (not on PATH, not python3's module), `release` of a pyo3 module is exit 2
/// with the fix `pip install maturin`, before anything is read or built.
#[test]
fn release_of_a_pyo3_module_without_maturin_is_exit_2_with_the_fix() {
    let _g = shared();
    if !have_python() {
        return;
    }
    let path: Vec<PathBuf> = std::env::split_paths(&std::env::var_os("PATH").unwrap())
        .filter(|d| !d.join("maturin").exists())
        .collect();
    let path = std::env::join_paths(path).unwrap();
    let path = path.to_str().unwrap();
    let without = std::process::Command::new("python3")
        .args(["-m", "maturin", "--version"])
        .env("PATH", path)
        .env("PYTHONNOUSERSITE", "1")
        .output()
        .is_ok_and(|o| o.status.success());
    if without {
        skip("maturin is installed beside python3 itself, so it cannot be hidden from it");
        return;
    }
    let tmp = copy_fixture("pyo3-module");
    let td = tmp.path().join("target");
    let r = run(
        tmp.path(),
        &["optimize", "release", "--target-dir", td.to_str().unwrap()],
        &[("PATH", path), ("PYTHONNOUSERSITE", "1")],
    );
    assert_eq!(r.code, Some(2), "{}", r.all());
    assert!(
        r.stderr
            .contains("maturin, which builds the wheel, is not installed")
            && r.stderr.contains("fix: pip install maturin"),
        "{}",
        r.stderr
    );
    assert!(!tmp.path().join("dist").exists(), "no release folder");
    assert!(
        !td.join("optimize/releases").exists(),
        "nothing was started"
    );
}

/// `check --against` on a library a host loads builds the revision's library as the run
/// does and times the host with each side's file first on its search path. Planted: the
/// working tree's `churn` does twenty times the rounds (the checksum unchanged), far beyond
/// the noise of a host that starts Python, so the check names the regression and fails.
#[test]
fn check_against_a_revision_of_a_cdylib_times_the_host_with_each_side_s_library() {
    let _g = shared();
    if !have_python() {
        return;
    }
    let tmp = copy_fixture("cdylib-ctypes");
    let dir = tmp.path();
    commit_all(dir);
    let lib = dir.join("src/lib.rs");
    let text = std::fs::read_to_string(&lib).unwrap();
    let slower = text
        .replace("    for i in 0..rounds {", "    for i in 0..rounds * 20 {")
        .replace(
            "        acc = acc.wrapping_add(x >> 11);",
            "        if i < rounds {\n            acc = acc.wrapping_add(x >> 11);\n        }",
        );
    assert_ne!(slower, text, "the plant changed nothing");
    std::fs::write(&lib, slower).unwrap();
    let args = ["optimize", "check", "--against", "HEAD"];
    let r = run(dir, &args, &[("GIT_CONFIG_GLOBAL", "/dev/null")]);
    assert_eq!(r.code, Some(1), "{}", r.all());
    assert!(
        r.stderr.contains("building cdylib_ctypes at"),
        "{}",
        r.all()
    );
    let eval = (r.stdout.lines())
        .find(|l| l.starts_with("eval "))
        .unwrap_or_else(|| panic!("no eval row: {}", r.stdout));
    assert!(
        eval.contains("slower") && eval.contains("regression"),
        "{eval}"
    );
    // Each side ran under the library's own file name, in its folder.
    let check_dir = dir.join("target/optimize/check/latest");
    for side in ["new", "old"] {
        let file = check_dir.join("bin").join(side).join("libcdylib_ctypes.so");
        assert!(file.is_file(), "{}", file.display());
    }
}

/// `release` of a plain `cdylib` ships the file the run measured: the same bytes as the
/// shipped candidate's, listed in `SHA256SUMS`.
#[test]
fn release_of_a_plain_cdylib_is_the_measured_library_file() {
    let _g = lock_target_dir("cdylib-ctypes");
    if !have_python() {
        return;
    }
    let td = target_dir("cdylib-ctypes");
    let r = optimize("cdylib-ctypes", &["--stages", "pgo", "--budget", "3m"], &[]);
    assert_eq!(r.code, Some(0), "{}", r.all());
    let report = latest_report(&td);
    let shipped = final_choice(&report);
    let tmp = tempfile::tempdir().unwrap();
    let dist = tmp.path().join("dist");
    let (tds, dists) = (td.to_str().unwrap(), dist.to_str().unwrap());
    let args = [
        "optimize",
        "release",
        "--target-dir",
        tds,
        "--out-dir",
        dists,
    ];
    let rel = run(&fixture("cdylib-ctypes"), &args, &[]);
    assert_eq!(rel.code, Some(0), "{}", rel.all());
    let manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dist.join("manifest.json")).unwrap()).unwrap();
    let a = &manifest["artifacts"][0];
    assert_eq!(
        a["library"]["measured"].as_str(),
        Some(shipped.binary.as_str()),
        "{a:#}"
    );
    let file = a["file"].as_str().unwrap();
    let shipped_bytes = std::fs::read(&shipped.binary).unwrap();
    let released = std::fs::read(dist.join(file)).unwrap_or_else(|e| panic!("{file}: {e}"));
    // Named as release names its artifacts; the file inside is cargo's name for it.
    assert!(file.ends_with(".so"), "{a:#}");
    assert_eq!(a["library"]["file"], "libcdylib_ctypes.so", "{a:#}");
    assert_eq!(a["library"]["identity"], "measured-file", "{a:#}");
    assert!(
        released == shipped_bytes,
        "the released file is not the measured one"
    );
    let sums = std::fs::read_to_string(dist.join("SHA256SUMS")).unwrap();
    assert!(sums.contains(file), "{sums}");
}
