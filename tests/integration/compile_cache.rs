//! sccache as the user's `RUSTC_WRAPPER`: every build keeps it, and two runs in separate
//! copies of a crate share its compiled dependency (at one absolute path); the second run's
//! report counts the hit. Skipped, saying why, where sccache is not installed.

use std::path::Path;
use std::process::Command;

use crate::common::*;

/// A copy of `sccache-bin` whose dependency is the fixture's `sccache-dep` by absolute path.
fn copy_with_shared_dep() -> tempfile::TempDir {
    let tmp = copy_fixture("sccache-bin");
    let manifest = tmp.path().join("Cargo.toml");
    let dep = fixture("sccache-dep");
    let text = std::fs::read_to_string(&manifest).unwrap().replace(
        "path = \"../sccache-dep\"",
        &format!("path = \"{}\"", dep.display()),
    );
    std::fs::write(&manifest, text).unwrap();
    tmp
}

fn sccache(env: &[(&str, &str)], arg: &str) {
    let mut cmd = Command::new("sccache");
    cmd.arg(arg);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let _ = cmd.output();
}

#[test]
fn a_second_checkout_reuses_the_compiled_dependency_through_sccache() {
    let _g = shared();
    if Command::new("sccache").arg("--version").output().is_err() {
        return missing_tool(
            "sccache",
            "scripts/test installs it: apt-get install sccache",
        );
    }
    let cache = tempfile::tempdir().unwrap();
    let port = (4300 + std::process::id() % 1000).to_string();
    let env = [
        ("RUSTC_WRAPPER", "sccache"),
        ("SCCACHE_DIR", cache.path().to_str().unwrap()),
        ("SCCACHE_SERVER_PORT", port.as_str()),
    ];
    // Started here, so no build's pipes are held by the daemon it becomes.
    sccache(&env, "--start-server");
    let (one, two) = (copy_with_shared_dep(), copy_with_shared_dep());
    let first = run(one.path(), &["optimize", "--stages", "none"], &env);
    let second = run(two.path(), &["optimize", "--stages", "none"], &env);
    sccache(&env, "--stop-server");
    assert_eq!(first.code, Some(0), "{}", first.all());
    assert_eq!(second.code, Some(0), "{}", second.all());
    let counts = |dir: &Path| {
        latest_report(&dir.join("target"))
            .compile_cache
            .unwrap()
            .counts
    };
    let (a, b) = (counts(one.path()), counts(two.path()));
    assert_eq!(a.hits, 0, "the first run had nothing to reuse: {a:?}");
    assert!(a.misses >= 1, "the dependency was compiled: {a:?}");
    assert!(
        b.hits >= 1,
        "the second checkout did not reuse the dependency: {b:?}"
    );
    assert!(
        b.not_cacheable >= 1,
        "the binary crate itself cannot be cached: {b:?}"
    );
    assert!(
        second.stderr.contains("compilation(s) from its cache"),
        "{}",
        second.stderr
    );
}
