//! The crate builds everywhere Rust developers work: `cargo clippy --all-targets -- -D
//! warnings` is clean for each target the platform layer (`src/sys/`) has a part for,
//! besides this machine's own (which the main clippy run covers). Only compiled here: the
//! macOS and Windows parts have never run.

use std::path::Path;
use std::process::Command;

use super::common::shared;

/// The targets checked besides the host (`scripts/test` installs their standard libraries).
const TARGETS: [&str; 4] = [
    "aarch64-unknown-linux-gnu",
    "aarch64-apple-darwin",
    "x86_64-apple-darwin",
    "x86_64-pc-windows-msvc",
];

/// One clippy per target, in a target dir of its own under cargo's test tmpdir (shared by
/// the four, so host build scripts and proc macros are built once) so it never waits for
/// the lock of the build that runs this test. Cold: about 45 s a target on 2 cores; warm
/// and unchanged: a second or two.
#[test]
fn clippy_is_clean_for_every_platform() {
    let _guard = shared();
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let target_dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("platforms");
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut failures = Vec::new();
    for target in TARGETS {
        let out = Command::new(&cargo)
            .args([
                "clippy",
                "--all-targets",
                "--message-format=short",
                "--target",
            ])
            .arg(target)
            .arg("--target-dir")
            .arg(&target_dir)
            .args(["--", "-D", "warnings"])
            .current_dir(root)
            .env_remove("RUSTC_WRAPPER")
            .output()
            .expect("cargo runs");
        let stderr = String::from_utf8_lossy(&out.stderr);
        let problems: Vec<&str> = (stderr.lines())
            .filter(|l| {
                let l = l.trim_start();
                l.starts_with("error")
                    || l.starts_with("warning")
                    || l.contains(": error")
                    || l.contains(": warning")
            })
            .collect();
        let finished = stderr
            .lines()
            .any(|l| l.trim_start().starts_with("Finished"));
        if !out.status.success() || !problems.is_empty() || !finished {
            let hint = if stderr.contains("rustup target add")
                || stderr.contains("may not be installed")
            {
                "\n  fix: scripts/test (it runs `rustup target add` for the four targets)"
            } else {
                ""
            };
            failures.push(format!(
                "{target}: {}\n{}{hint}",
                out.status,
                if problems.is_empty() {
                    stderr.trim_end().to_string()
                } else {
                    problems.join("\n")
                }
            ));
        }
    }
    assert!(failures.is_empty(), "\n{}", failures.join("\n\n"));
}
