//! Whether the ladder may run `--target`'s binaries, and through what. The ladder times
//! binaries, and times taken through cargo's runner for another architecture (an emulator
//! such as `qemu-aarch64`) are the emulator's, not the target's: it refuses them unless
//! the user says the runner is real hardware of that target (`[bench] runner-is-native =
//! true`: a remote-run script on a board). `cargo optimize release` is the way to a
//! trained binary for such a target: it trains and verifies through the runner, and times
//! nothing.
//!
//! Must not: run anything.

use anyhow::bail;

use crate::cargo::runner::{self, Runner};
use crate::spec::Spec;

/// The runner the ladder runs `triple`'s binaries through (`None`: natively), or the
/// error with the fix when it may not run them; `from` says where the target was chosen
/// (`--target X`, `build.target = "X" (/p/.cargo/config.toml)`).
pub(super) fn for_ladder(
    spec: &Spec,
    host: &str,
    triple: &str,
    from: &str,
    cfg: &[String],
) -> anyhow::Result<Option<Runner>> {
    if triple == host {
        return Ok(None);
    }
    match runner::target_runner_here(triple, cfg)? {
        None if runs_natively(host, triple) => Ok(None),
        None => bail!(
            "{from}: this machine ({host}) cannot run its binaries, and cargo has no runner for it, so the ladder cannot time them\n  fix: run `cargo optimize` on a {} machine; or set a runner (target.{triple}.runner in .cargo/config.toml, e.g. [\"qemu-aarch64\", \"-L\", \"/usr/aarch64-linux-gnu\"]) and run `cargo optimize release --targets {triple} --stages pgo`, which trains and verifies a PGO binary through it",
            arch(triple)
        ),
        Some(r) => {
            r.check_exists(triple).map_err(anyhow::Error::msg)?;
            if !spec.bench.runner_is_native {
                bail!(
                    "{from}: its binaries run here only through cargo's runner `{}` ({}), and times taken through a runner are the runner's (an emulator's), not {triple}'s: the ladder does not time through it\n  fix: `cargo optimize release --targets {triple} --stages pgo` trains and verifies a PGO binary through the runner (nothing timed); if the runner runs the binaries on real {} hardware, set `runner-is-native = true` in [bench] of {}",
                    r.line(),
                    r.from,
                    arch(triple),
                    spec.path.display()
                );
            }
            Ok(Some(r))
        }
    }
}

fn arch(triple: &str) -> &str {
    triple.split('-').next().unwrap_or(triple)
}

/// Whether `host` runs `triple`'s binaries without help: the same OS, and the same
/// architecture (or 32-bit x86 on x86-64): `x86_64-unknown-linux-musl` on a GNU/Linux
/// x86-64 host does, `aarch64-unknown-linux-gnu` does not.
pub(crate) fn runs_natively(host: &str, triple: &str) -> bool {
    let os = |t: &str| {
        ["linux", "darwin", "windows", "freebsd"]
            .into_iter()
            .find(|os| t.contains(os))
    };
    let same_arch = arch(host) == arch(triple)
        || (arch(host) == "x86_64" && ["i586", "i686"].contains(&arch(triple)));
    same_arch && os(host).is_some() && os(host) == os(triple)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn which_targets_run_natively() {
        let host = "x86_64-unknown-linux-gnu";
        assert!(runs_natively(host, "x86_64-unknown-linux-musl"));
        assert!(runs_natively(host, "i686-unknown-linux-gnu"));
        assert!(!runs_natively(host, "aarch64-unknown-linux-gnu"));
        assert!(!runs_natively(host, "x86_64-pc-windows-msvc"));
        assert!(!runs_natively(host, "wasm32-unknown-unknown"));
        assert!(runs_natively(
            "aarch64-apple-darwin",
            "aarch64-apple-darwin"
        ));
    }
}
