//! perf facts: is `perf` installed and working, what `perf_event_paranoid` allows, do
//! hardware counters work for this process, and can `perf record` sample branch stacks
//! (LBR) — which decides whether BOLT can use perf mode instead of instrumentation.
//!
//! Never panics and never fails: every check reports "no" with a reason instead.

use std::path::{Path, PathBuf};
use std::time::Duration;

/// A yes/no capability with the reason or evidence.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub(crate) struct Capability {
    pub available: bool,
    /// Evidence when available ("counted 1234 cycles"), the reason when not.
    pub detail: String,
}

impl Capability {
    pub(crate) fn yes(detail: impl Into<String>) -> Self {
        Capability {
            available: true,
            detail: detail.into(),
        }
    }
    pub(crate) fn no(detail: impl Into<String>) -> Self {
        Capability {
            available: false,
            detail: detail.into(),
        }
    }
}

/// What perf can do on this machine.
#[derive(Debug, Clone, serde::Serialize)]
pub(crate) struct PerfFacts {
    /// The `perf` binary on PATH.
    pub perf_path: Option<PathBuf>,
    /// Whether `perf --version` runs (detail: its version line or error).
    pub perf: Capability,
    /// /proc/sys/kernel/perf_event_paranoid.
    pub paranoid: Option<i32>,
    /// Whether the process runs as root (which overrides `paranoid`).
    pub root: bool,
    /// A cycles counter opened on this process and counted.
    pub hw_counters: Capability,
    /// `perf record -j any,u` (branch-stack sampling) works.
    pub lbr: Capability,
}

impl PerfFacts {
    pub(crate) fn gather() -> PerfFacts {
        let perf_path = super::find_on_path("perf");
        let perf = match &perf_path {
            None => Capability::no("perf is not on PATH"),
            Some(p) => perf_version(p),
        };
        let runnable = perf.available.then_some(perf_path.as_deref()).flatten();
        PerfFacts {
            paranoid: paranoid(),
            root: crate::sys::is_root(),
            hw_counters: hw_counters(),
            lbr: lbr_usable(runnable),
            perf,
            perf_path,
        }
    }

    /// The command that installs perf (Debian's package; Ubuntu ships it per kernel).
    pub(crate) fn install_fix() -> &'static str {
        "apt-get install -y linux-perf   # as root, Debian (Ubuntu: linux-tools-$(uname -r))"
    }
}

fn perf_version(perf: &Path) -> Capability {
    let cmd = crate::process::Command::new(perf)
        .arg("--version")
        .timeout(Duration::from_secs(15));
    match crate::process::run(&cmd) {
        Ok(out) if out.status.success() => {
            Capability::yes(String::from_utf8_lossy(&out.stdout).trim().to_string())
        }
        Ok(out) => Capability::no(format!(
            "`{} --version` failed ({}): {}",
            perf.display(),
            out.status,
            out.stderr_tail(2).trim()
        )),
        Err(e) => Capability::no(e.to_string()),
    }
}

/// /proc/sys/kernel/perf_event_paranoid (`None` when the kernel has no perf events).
pub(crate) fn paranoid() -> Option<i32> {
    crate::sys::perf_event_paranoid()
}

/// Open a hardware cycles counter on this process, run a little work, read it.
#[cfg(target_os = "linux")]
pub(crate) fn hw_counters() -> Capability {
    use perf_event::events::Hardware;
    let mut counter = match perf_event::Builder::new(Hardware::CPU_CYCLES).build() {
        Ok(c) => c,
        Err(e) => return Capability::no(open_error_reason(&e)),
    };
    let counted = (|| -> std::io::Result<(u64, Option<Duration>)> {
        counter.enable()?;
        let mut x: u64 = 1;
        for i in 0..200_000u64 {
            x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(i));
        }
        counter.disable()?;
        let data = counter.read_full()?;
        Ok((data.count(), data.time_running()))
    })();
    match counted {
        Err(e) => Capability::no(format!("cycles counter opened but not readable: {e}")),
        Ok((0, _)) => {
            Capability::no("cycles counter opened but counted 0 (PMU not passed through)")
        }
        Ok((_, Some(running))) if running.is_zero() => {
            Capability::no("cycles counter never scheduled on the PMU")
        }
        Ok((n, _)) => Capability::yes(format!("counted {n} cycles")),
    }
}

#[cfg(not(target_os = "linux"))]
pub(crate) fn hw_counters() -> Capability {
    Capability::no("perf_event_open is Linux-only")
}

#[cfg(target_os = "linux")]
fn open_error_reason(e: &std::io::Error) -> String {
    match crate::sys::errno_name(e) {
        Some("ENOENT" | "EOPNOTSUPP" | "ENODEV") => {
            format!("no hardware PMU exposed (typical in VMs): perf_event_open cycles: {e}")
        }
        Some("EACCES" | "EPERM") => {
            format!("not permitted (perf_event_paranoid too high): perf_event_open cycles: {e}")
        }
        _ => format!("perf_event_open cycles: {e}"),
    }
}

/// Whether `perf record` can sample branch stacks (LBR on Intel, BRS/LbrExtV2 on AMD),
/// which BOLT's perf mode needs. Runs `perf record -e cycles:u -j any,u -- true` once.
pub(crate) fn lbr_usable(perf: Option<&Path>) -> Capability {
    let Some(perf) = perf else {
        return Capability::no("perf is not installed or does not run");
    };
    // A fresh folder only we can write (0700, a random name, created exclusively): a name
    // in $TMPDIR that others can guess could be a symlink perf would write through.
    let dir = match tempfile::Builder::new()
        .prefix("cargo-optimize-lbr-")
        .tempdir()
    {
        Ok(d) => d,
        Err(e) => return Capability::no(format!("no temporary folder for the probe: {e}")),
    };
    let cmd = crate::process::Command::new(perf)
        .args(["record", "-q", "-e", "cycles:u", "-j", "any,u", "-o"])
        .arg(dir.path().join("perf.data"))
        .args(["--", "true"])
        .timeout(Duration::from_secs(20));
    let result = crate::process::run(&cmd);
    drop(dir);
    match result {
        Ok(out) if out.status.success() => Capability::yes("perf record -j any,u works"),
        Ok(out) if out.timed_out => Capability::no("`perf record -j any,u` timed out"),
        Ok(out) => {
            let text = String::from_utf8_lossy(&out.stderr);
            let reason = text
                .lines()
                .map(str::trim)
                .rfind(|l| !l.is_empty() && !l.eq_ignore_ascii_case("error:"))
                .unwrap_or("no error message")
                .to_string();
            Capability::no(format!(
                "`perf record -j any,u` failed ({}): {reason}",
                out.status
            ))
        }
        Err(e) => Capability::no(e.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_lbr_probe_writes_into_a_fresh_private_folder_never_a_predictable_name() {
        let tmp = tempfile::tempdir().unwrap();
        let perf = tmp.path().join("perf");
        let seen = tmp.path().join("seen");
        // A perf that writes to `-o` and says where.
        let script = format!(
            "#!/bin/sh\nwhile [ $# -gt 0 ]; do [ \"$1\" = -o ] && out=$2; shift; done\n[ -n \"$out\" ] || exit 0\nprintf data > \"$out\"\nprintf %s \"$out\" > {}\n",
            seen.display()
        );
        std::fs::write(&perf, script).unwrap();
        crate::sys::set_mode(&perf, 0o755).unwrap();
        // Another test thread forking while the file was open for writing makes exec fail
        // with ETXTBSY until that child execs; wait until it runs.
        for _ in 0..100 {
            match crate::process::run(&crate::process::Command::new(&perf)) {
                Err(crate::process::ProcessError::Spawn { error, .. })
                    if crate::sys::errno_name(&error) == Some("ETXTBSY") =>
                {
                    std::thread::sleep(Duration::from_millis(10))
                }
                _ => break,
            }
        }
        // Another user's symlink at the name the probe used to write is not followed.
        let victim = tmp.path().join("victim");
        std::fs::write(&victim, "keep").unwrap();
        let planted =
            std::env::temp_dir().join(format!("cargo-optimize-lbr-{}.data", std::process::id()));
        let _ = std::fs::remove_file(&planted);
        crate::sys::symlink(&victim, &planted).unwrap();
        let probed = lbr_usable(Some(&perf));
        let _ = std::fs::remove_file(&planted);
        assert!(probed.available, "{}", probed.detail);
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep");
        let used = std::path::PathBuf::from(std::fs::read_to_string(&seen).unwrap());
        assert_ne!(used, planted);
        assert!(!used.parent().unwrap().exists(), "its folder is removed");
    }

    #[test]
    fn checks_never_panic() {
        // Whatever this machine has, the answers come back with a reason.
        let c = hw_counters();
        assert!(!c.detail.is_empty());
        let l = lbr_usable(Some(Path::new("/nonexistent/perf")));
        assert!(!l.available);
        assert!(!lbr_usable(None).available);
    }
}
