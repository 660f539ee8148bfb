//! Another architecture, end to end: the `pgo-basic` fixture built for
//! `aarch64-unknown-linux-gnu` with Debian's cross linker, its whole PGO path — instrumented
//! build, training, merge, PGO build, verification against the aarch64 baseline — run
//! under `qemu-aarch64` as cargo's runner (`target.<triple>.runner`), and the bad inputs
//! around it: a runner that does not exist, one that cannot start the binary, a cross linker
//! that is missing, and the ladder asked to time through a runner.
//!
//! Needs `qemu-user` and `gcc-aarch64-linux-gnu` (apt) and the aarch64 target's std
//! (`rustup target add aarch64-unknown-linux-gnu`; its profiler runtime comes with it);
//! the tests that run binaries skip, saying why, only when `qemu-aarch64` is missing.

use std::path::Path;

use serde_json::Value;

use crate::common::*;

const AARCH64: &str = "aarch64-unknown-linux-gnu";
const FIXTURE: &str = "pgo-basic";
/// cargo's config for the cross build: Debian's linker, and qemu with the target's
/// libraries (from `gcc-aarch64-linux-gnu`'s `libc6-arm64-cross`).
const CONFIG: &str = "[target.aarch64-unknown-linux-gnu]\nlinker = \"aarch64-linux-gnu-gcc\"\nrunner = [\"qemu-aarch64\", \"-L\", \"/usr/aarch64-linux-gnu\"]\n";

fn on_path(program: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join(program).is_file()))
}

/// `qemu-aarch64` is here, else why the test skips (printed).
fn qemu() -> bool {
    let here = on_path("qemu-aarch64");
    if !here {
        let fix = "scripts/test installs it: apt-get install -y qemu-user gcc-aarch64-linux-gnu";
        missing_tool("qemu-aarch64", fix);
    }
    here
}

/// The fixture copied into a temp dir with `config` as its `.cargo/config.toml`.
fn crate_with(config: &str) -> tempfile::TempDir {
    let tmp = copy_fixture(FIXTURE);
    std::fs::create_dir_all(tmp.path().join(".cargo")).unwrap();
    std::fs::write(tmp.path().join(".cargo/config.toml"), config).unwrap();
    tmp
}

/// `release --targets aarch64 …` in `dir`, into `dir/dist`, its builds in a target dir
/// shared by these tests.
fn release(dir: &Path, extra: &[&str]) -> Run {
    let td = target_dir("pgo-basic-aarch64");
    let out = dir.join("dist");
    let mut args = vec![
        "optimize",
        "release",
        "--targets",
        AARCH64,
        "--cpu",
        "none",
        "--target-dir",
        td.to_str().unwrap(),
        "--out-dir",
        out.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    run(dir, &args, &[])
}

#[test]
fn an_aarch64_release_is_trained_and_verified_under_qemu() {
    if !qemu() {
        return;
    }
    let _g = shared();
    let dir = crate_with(CONFIG);
    let r = release(dir.path(), &["--stages", "pgo,bolt", "--fresh"]);
    assert_eq!(r.code, Some(0), "{}", r.all());
    let out = dir.path().join("dist");
    let m: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("manifest.json")).unwrap()).unwrap();
    let a = &m["artifacts"][0];
    assert_eq!(a["target"], AARCH64, "{a:#}");
    // Trained on its own instrumented aarch64 build, under qemu.
    assert_eq!(a["pgo"]["applied"], true, "{a:#}");
    assert!(a["pgo"]["profile_functions"].as_u64().unwrap() > 0, "{a:#}");
    assert_eq!(a["pgo"]["trained_under"]["target"], AARCH64, "{a:#}");
    assert_eq!(
        a["pgo"]["trained_on"],
        serde_json::json!(["train", "stdin-count"])
    );
    // Verified against the aarch64 baseline, under qemu; never timed.
    assert_eq!(a["verified"], true, "{a:#}");
    assert!(
        a["verification"]
            .as_str()
            .unwrap()
            .contains("portable baseline"),
        "{a:#}"
    );
    assert_eq!(
        a["runner"],
        "trained and verified under `qemu-aarch64`; not timed"
    );
    // BOLT: llvm-bolt 22's instrumentation runtime is x86-64 only, so instrumenting an
    // aarch64 binary is refused ("linking object with arch x86_64 into context with arch
    // aarch64"): the artifact ships without, saying so. A BOLT that can is welcome.
    let bolt = &a["bolt"];
    let why = bolt["why_not"].as_str().unwrap_or_default();
    assert!(
        bolt["applied"] == true || why.contains("linking object with arch"),
        "{bolt:#}"
    );
    // The shipped file is an aarch64 ELF executable (e_machine 183).
    let bytes = std::fs::read(out.join(a["name"].as_str().unwrap())).unwrap();
    assert_eq!(&bytes[..4], b"\x7fELF");
    assert_eq!(
        u16::from_le_bytes([bytes[18], bytes[19]]),
        183,
        "not aarch64"
    );
}

#[test]
fn a_runner_that_cannot_start_the_binary_is_named_with_the_fix() {
    if !qemu() {
        return;
    }
    let _g = shared();
    // Without `-L`, qemu cannot find the aarch64 dynamic loader.
    let dir = crate_with(
        "[target.aarch64-unknown-linux-gnu]\nlinker = \"aarch64-linux-gnu-gcc\"\nrunner = \"qemu-aarch64\"\n",
    );
    let r = release(dir.path(), &["--stages", "pgo"]);
    assert_eq!(r.code, Some(2), "{}", r.all());
    assert!(
        r.stderr.contains("no artifact could be built"),
        "{}",
        r.stderr
    );
    assert!(
        r.stderr
            .contains("ran through cargo's runner `qemu-aarch64`")
            && r.stderr
                .contains("fix: check that the runner starts the binary"),
        "{}",
        r.stderr
    );
    assert!(!dir.path().join("dist").exists(), "nothing half-written");
}

#[test]
fn a_runner_that_does_not_exist_is_refused_before_anything_is_built() {
    let _g = shared();
    let dir = crate_with("[target.aarch64-unknown-linux-gnu]\nrunner = \"qemu-nowhere-9\"\n");
    let r = release(dir.path(), &["--stages", "pgo"]);
    assert_eq!(r.code, Some(2), "{}", r.all());
    assert!(
        r.stderr
            .contains("the runner for aarch64-unknown-linux-gnu (`qemu-nowhere-9`")
            && r.stderr
                .contains(".cargo/config.toml: target.aarch64-unknown-linux-gnu.runner")
            && r.stderr.contains("fix: install it"),
        "{}",
        r.stderr
    );
    assert!(
        !r.stderr.contains("build default"),
        "built something: {}",
        r.stderr
    );
    assert!(!dir.path().join("dist").exists());
}

#[test]
fn a_missing_cross_linker_is_named_with_the_fix() {
    let _g = shared();
    let dir = crate_with("[target.aarch64-unknown-linux-gnu]\nlinker = \"aarch64-nowhere-gcc\"\n");
    let r = release(dir.path(), &["--stages", "none"]);
    assert_eq!(r.code, Some(2), "{}", r.all());
    assert!(
        r.stderr.contains("no linker for aarch64-unknown-linux-gnu")
            && r.stderr.contains("gcc-aarch64-linux-gnu"),
        "{}",
        r.stderr
    );
    assert!(!dir.path().join("dist").exists());
}

/// The ladder times, so it will not through an emulator: exit 2 naming `release` (and
/// `runner-is-native` for a runner that is real hardware); without a runner, it says the
/// binaries cannot run here. Nothing is built either way.
#[test]
fn the_ladder_refuses_to_time_through_a_runner() {
    let _g = shared();
    let dir = crate_with(CONFIG);
    let td = dir.path().join("target");
    let ladder = |d: &Path| {
        run(
            d,
            &[
                "optimize",
                "--target",
                AARCH64,
                "--target-dir",
                td.to_str().unwrap(),
            ],
            &[],
        )
    };
    let r = ladder(dir.path());
    assert_eq!(r.code, Some(2), "{}", r.all());
    assert!(
        r.stderr
            .contains("through cargo's runner `qemu-aarch64 -L /usr/aarch64-linux-gnu`")
            && r.stderr.contains(&format!(
                "fix: `cargo optimize release --targets {AARCH64} --stages pgo`"
            ))
            && r.stderr.contains("runner-is-native = true"),
        "{}",
        r.stderr
    );
    std::fs::remove_file(dir.path().join(".cargo/config.toml")).unwrap();
    let r = ladder(dir.path());
    assert_eq!(r.code, Some(2), "{}", r.all());
    assert!(
        r.stderr
            .contains("cannot run its binaries, and cargo has no runner for it"),
        "{}",
        r.stderr
    );
    assert!(!td.join("optimize/runs").exists(), "a run folder was made");
}

/// Issue 36 item 3: `[build] target` in `.cargo/config.toml` was ignored: the baseline
/// was built for it (cargo obeys it) while PGO was built with `--target <host>`. The
/// target is now resolved once and named by every build: every row's settings and the
/// final choice say it, and every build of the run landed in its `<triple>/` folder.
#[test]
fn a_build_target_in_cargo_s_config_is_every_candidate_s_target() {
    let _g = shared();
    let host = host();
    let dir = crate_with(&format!("[build]\ntarget = \"{host}\"\n"));
    let td = dir.path().join("target");
    let args = [
        "optimize",
        "--stages",
        "pgo",
        "--target-dir",
        td.to_str().unwrap(),
    ];
    let r = run(dir.path(), &args, &[]);
    assert_eq!(r.code, Some(0), "{}", r.all());
    let report = latest_report(&td);
    let rows: Vec<_> = report
        .stages
        .iter()
        .filter(|s| s.settings.is_some())
        .collect();
    assert!(rows.iter().any(|s| s.name == "baseline"), "{report:#?}");
    assert!(rows.iter().any(|s| s.name == "pgo"), "{report:#?}");
    for row in rows {
        let target = row.settings.as_ref().and_then(|s| s.target.as_deref());
        assert_eq!(target, Some(host.as_str()), "row {}", row.name);
    }
    let last = final_choice(&report).settings.as_ref();
    assert_eq!(last.and_then(|s| s.target.as_deref()), Some(host.as_str()));
    for build in std::fs::read_dir(td.join("optimize/build")).unwrap() {
        let build = build.unwrap().path();
        assert!(
            build.join(&host).is_dir(),
            "{} has no {host}/",
            build.display()
        );
        let hostless = build.join("release").join(FIXTURE);
        assert!(
            !hostless.exists(),
            "{} was built for no target",
            hostless.display()
        );
    }
}

/// A `build.target` of another architecture (no `--target`) is refused as `--target` is,
/// naming where it was set; nothing is built.
#[test]
fn a_build_target_this_machine_cannot_run_is_refused_naming_its_config_file() {
    let _g = shared();
    let dir = crate_with(&format!("[build]\ntarget = \"{AARCH64}\"\n"));
    let td = dir.path().join("target");
    let args = ["optimize", "--target-dir", td.to_str().unwrap()];
    let r = run(dir.path(), &args, &[]);
    assert_eq!(r.code, Some(2), "{}", r.all());
    let config = dir.path().join(".cargo/config.toml");
    let from = format!("build.target = \"{AARCH64}\" ({})", config.display());
    assert!(r.stderr.contains(&from), "{}", r.stderr);
    assert!(r.stderr.contains("cannot run its binaries"), "{}", r.stderr);
    assert!(!td.join("optimize/runs").exists(), "a run folder was made");
}
