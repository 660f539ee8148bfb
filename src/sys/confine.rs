//! Confinement of the processes that run the user's code, enforced by the kernel: Linux's
//! Landlock, and the sweep of what a step left running.
//!
//! A [`Confinement`] is a Landlock ruleset made once in this process (the writable folders
//! opened, the ruleset's file descriptor kept): [`Confinement::apply`] has the child, between
//! its fork and its `exec`, set `no_new_privs` and restrict itself to it — two system calls,
//! async-signal-safe, no allocation — so the program and everything it starts, however late
//! and under whatever session, can write, create, remove, rename or link only beneath the
//! folders given. Reads, execution and the network are left alone. A confined process also
//! may not signal a process outside its domain (the tool, the user's shell), where the kernel
//! scopes signals (ABI 6).
//!
//! Where the kernel has no Landlock (older than 5.13, configured out, macOS, Windows) or
//! `CARGO_OPTIMIZE_LANDLOCK=off` turns it off, [`protection`] says so and `Confinement::new`
//! gives `None`: the callers fall back on the private copy and its check after the fact.
//!
//! Leftovers: every confined process carries [`STEP_VAR`] in its environment, a value unique
//! to its step; [`sweep`] finds every process of this user whose environment holds a given
//! value (`/proc/<pid>/environ`) and kills it — daemons, double forks and `setsid` children
//! that left the process group. A process that clears its own environment is not found
//! (Linux only; elsewhere the sweep finds nothing).

use std::path::PathBuf;

/// The variable naming a confined process's step, for [`sweep`]. Not `CARGO_…`: sccache
/// keys a compilation by every `CARGO_*` variable, so a value per build would miss its cache.
pub(crate) const STEP_VAR: &str = "_CARGO_OPTIMIZE_STEP";

/// Turns the confinement off when `off` (to compare timings with and without it, or where
/// a workload cannot run under it): the copy and its check then guard alone.
pub(crate) const OFF_VAR: &str = "CARGO_OPTIMIZE_LANDLOCK";

/// Which protection the processes running the user's code have.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Protection {
    /// The kernel refuses their writes outside their folders (Landlock, this ABI).
    Landlock { abi: u32 },
    /// Nothing in the kernel: why.
    Fallback { why: String },
}

impl Protection {
    /// One line for `doctor`, a run's first lines and `report.json`.
    pub(crate) fn describe(&self) -> String {
        match self {
            Protection::Landlock { abi } => format!(
                "Landlock (ABI {abi}): the kernel refuses a workload's writes outside its run folder"
            ),
            Protection::Fallback { why } => format!(
                "a private copy checked after the fact ({why}): a workload's write outside it is found, not refused"
            ),
        }
    }

    /// The short name report.json records: `landlock` or `copy-check`.
    pub(crate) fn kind(&self) -> &'static str {
        match self {
            Protection::Landlock { .. } => "landlock",
            Protection::Fallback { .. } => "copy-check",
        }
    }
}

/// The protection this machine offers, asked of the kernel once.
pub(crate) fn protection() -> Protection {
    static ONCE: std::sync::OnceLock<Protection> = std::sync::OnceLock::new();
    ONCE.get_or_init(|| {
        if std::env::var_os(OFF_VAR).is_some_and(|v| v == "off") {
            let why = format!("turned off by {OFF_VAR}=off");
            return Protection::Fallback { why };
        }
        imp::abi().map_or_else(
            |why| Protection::Fallback { why },
            |abi| Protection::Landlock { abi },
        )
    })
    .clone()
}

/// A ruleset: writes only beneath its folders and to its files.
#[derive(Debug, Clone)]
pub(crate) struct Confinement {
    #[cfg(target_os = "linux")]
    fd: std::sync::Arc<std::os::fd::OwnedFd>,
}

impl Confinement {
    /// The ruleset letting its processes write beneath `writable` (folders, or single files
    /// such as `/dev/null`) and nowhere else. `Ok(None)` where the kernel offers nothing
    /// ([`protection`]); a place that does not exist is left out.
    pub(crate) fn new(writable: &[PathBuf]) -> std::io::Result<Option<Confinement>> {
        if !matches!(protection(), Protection::Landlock { .. }) {
            return Ok(None);
        }
        imp::ruleset(writable)
    }

    /// Have the child `cmd` starts restrict itself to this ruleset before it runs anything.
    pub(crate) fn apply(&self, cmd: &mut std::process::Command) {
        imp::apply(self, cmd);
    }
}

/// A fresh value of [`STEP_VAR`] for one step: this process's id, a dot, a serial, a dot
/// (so that no step's value begins with another's: `7.1.` is not a prefix of `7.11.`).
pub(crate) fn step_value() -> String {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    format!("{}{n}.", own_prefix())
}

/// The prefix of every [`step_value`] this process gives.
pub(crate) fn own_prefix() -> String {
    format!("{}.", std::process::id())
}

/// Whether a process may have been started since `pid` was (the kernel's last pid given is
/// another): when not, `pid`'s step left nothing and [`sweep`] need not read `/proc`.
pub(crate) fn started_after(pid: u32) -> bool {
    imp::last_pid().is_none_or(|last| last != pid)
}

static SPARED: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());

/// From now on [`sweep`] spares the processes whose command name (`/proc/<pid>/comm`, at most
/// 15 bytes) is `name`: a compiler cache's server, which a build starts and is meant to
/// outlive it (the user's `RUSTC_WRAPPER`, sccache).
pub(crate) fn spare(name: &str) {
    let mut spared = SPARED.lock().unwrap_or_else(|e| e.into_inner());
    let name: String = name.chars().take(15).collect();
    if !spared.contains(&name) {
        spared.push(name);
    }
}

/// Kill every process of this user whose environment holds `STEP_VAR=<value>` with a value
/// starting with `prefix` (but what [`spare`] names); their values, one per process killed.
pub(crate) fn sweep(prefix: &str) -> Vec<String> {
    let spared = SPARED.lock().unwrap_or_else(|e| e.into_inner()).clone();
    imp::sweep(&format!("{STEP_VAR}={prefix}"), &spared)
}

#[cfg(target_os = "linux")]
mod imp {
    use super::Confinement;
    use landlock::{
        AccessFs, BitFlags, PathBeneath, PathFd, Ruleset, RulesetAttr as _,
        RulesetCreatedAttr as _, Scope, ABI,
    };
    use std::os::fd::AsRawFd as _;
    use std::path::PathBuf;

    /// The highest ABI this crate knows; the kernel's own is asked for.
    const ABI_KNOWN: ABI = ABI::V6;

    pub(super) fn abi() -> Result<u32, String> {
        // SAFETY: LANDLOCK_CREATE_RULESET_VERSION with a null attribute and size 0 only
        // returns the ABI version (or an error); it creates nothing.
        let v = unsafe {
            libc::syscall(
                libc::SYS_landlock_create_ruleset,
                std::ptr::null::<u8>(),
                0usize,
                1u32, // LANDLOCK_CREATE_RULESET_VERSION
            )
        };
        if v >= 1 {
            return Ok(v as u32);
        }
        let e = std::io::Error::last_os_error();
        Err(match e.raw_os_error() {
            Some(libc::ENOSYS) => "this kernel has no Landlock (Linux 5.13 or later has it)".into(),
            Some(libc::EOPNOTSUPP) => {
                "Landlock is configured out of this kernel's boot (`lsm=`)".into()
            }
            _ => format!("Landlock is not available: {e}"),
        })
    }

    /// The accesses handled, hence refused outside the rules: every kind of write, not
    /// device ioctls (a program's terminal), not reads.
    fn handled() -> BitFlags<AccessFs> {
        AccessFs::from_write(ABI::V4)
    }

    pub(super) fn ruleset(writable: &[PathBuf]) -> std::io::Result<Option<Confinement>> {
        let err = |e: landlock::RulesetError| std::io::Error::other(e.to_string());
        let mut rs = Ruleset::default()
            .handle_access(handled())
            .map_err(err)?
            .scope(Scope::Signal)
            .map_err(err)?
            .create()
            .map_err(err)?;
        for place in writable {
            let Ok(meta) = std::fs::metadata(place) else {
                continue;
            };
            let access = match meta.is_dir() {
                true => handled(),
                false => handled() & AccessFs::from_file(ABI_KNOWN),
            };
            let fd = PathFd::new(place).map_err(|e| std::io::Error::other(e.to_string()))?;
            rs = rs.add_rule(PathBeneath::new(fd, access)).map_err(err)?;
        }
        let fd: Option<std::os::fd::OwnedFd> = rs.into();
        Ok(fd.map(|fd| Confinement {
            fd: std::sync::Arc::new(fd),
        }))
    }

    pub(super) fn apply(c: &Confinement, cmd: &mut std::process::Command) {
        use std::os::unix::process::CommandExt as _;
        let keep = c.fd.clone();
        // SAFETY: between fork and exec the child only makes two system calls
        // (async-signal-safe, no allocation); the descriptor stays open while `keep` lives in
        // the closure, which the command owns until it is spawned.
        unsafe {
            cmd.pre_exec(move || {
                let fd = keep.as_raw_fd();
                if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                if libc::syscall(libc::SYS_landlock_restrict_self, fd, 0u32) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
    }

    pub(super) fn last_pid() -> Option<u32> {
        let avg = std::fs::read_to_string("/proc/loadavg").ok()?;
        avg.split_whitespace().nth(4)?.parse().ok()
    }

    pub(super) fn sweep(needle: &str, spare: &[String]) -> Vec<String> {
        let me = std::process::id();
        let mut killed = Vec::new();
        let Ok(procs) = std::fs::read_dir("/proc") else {
            return killed;
        };
        for pid in procs
            .flatten()
            .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
            .filter(|&pid| pid != me)
        {
            // Another user's environment cannot be read: only ours are found.
            let Ok(env) = std::fs::read(format!("/proc/{pid}/environ")) else {
                continue;
            };
            let Some(value) = env
                .split(|&b| b == 0)
                .find(|kv| kv.starts_with(needle.as_bytes()))
            else {
                continue;
            };
            let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
            if spare.iter().any(|s| s == comm.trim_end()) {
                continue;
            }
            // SAFETY: a pid whose environment names one of our steps; a pid reused
            // meanwhile by another of our processes would carry the same value only if it
            // were one of the step's own.
            unsafe {
                libc::kill(pid as libc::pid_t, libc::SIGKILL);
            }
            let value = String::from_utf8_lossy(value);
            let value = value.split_once('=').map_or("", |(_, v)| v);
            killed.push(value.to_string());
        }
        killed
    }
}

#[cfg(not(target_os = "linux"))]
mod imp {
    use super::Confinement;
    use std::path::PathBuf;

    pub(super) fn abi() -> Result<u32, String> {
        Err("this operating system has no Landlock".into())
    }

    pub(super) fn ruleset(_: &[PathBuf]) -> std::io::Result<Option<Confinement>> {
        Ok(None)
    }

    pub(super) fn apply(_: &Confinement, _: &mut std::process::Command) {}

    pub(super) fn sweep(_: &str, _: &[String]) -> Vec<String> {
        Vec::new()
    }

    pub(super) fn last_pid() -> Option<u32> {
        None
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;
    use std::path::Path;

    /// Landlock is on every kernel these tests run on in CI (ABI 7 on its VMs); elsewhere
    /// the test says why it did not run.
    fn landlock_or_skip() -> bool {
        match protection() {
            Protection::Landlock { .. } => true,
            Protection::Fallback { why } => {
                assert!(
                    std::env::var_os("CI").is_none(),
                    "no Landlock under CI: {why}"
                );
                eprintln!("skipped: {why}");
                false
            }
        }
    }

    fn sh(script: &str, c: &Confinement, env: &[(&str, &str)]) -> std::process::ExitStatus {
        let mut cmd = std::process::Command::new("sh");
        cmd.args(["-c", script]).envs(env.iter().copied());
        c.apply(&mut cmd);
        cmd.status().unwrap()
    }

    /// Writes beneath the folder go through; anywhere else — directly, through `..`, through
    /// a link made at run time, by a late background child — fail with EACCES.
    #[test]
    fn a_confined_process_writes_only_beneath_its_folders() {
        if !landlock_or_skip() {
            return;
        }
        let jail = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let j = jail.path().to_str().unwrap();
        let o = outside.path().to_str().unwrap();
        let c = Confinement::new(&[jail.path().to_path_buf(), "/dev/null".into()])
            .unwrap()
            .expect("a ruleset where Landlock is");
        let script = "echo a > $J/in; echo b > /dev/null || exit 9; \
                      echo c > $O/direct; echo d > $J/../$(basename $O)/dotdot; \
                      ln -s $O/linked $J/l; echo e > $J/l; \
                      (sleep 0.2; echo f > $O/late) & wait; exit 0";
        assert!(sh(script, &c, &[("J", j), ("O", o)]).success());
        assert_eq!(
            std::fs::read_to_string(jail.path().join("in")).unwrap(),
            "a\n"
        );
        assert!(jail.path().join("l").is_symlink(), "a link inside is made");
        let written: Vec<_> = std::fs::read_dir(outside.path()).unwrap().collect();
        assert!(written.is_empty(), "written outside: {written:?}");
        // The refusal is EACCES, as a program sees it.
        let status = sh("echo x > $O/x 2>/dev/null", &c, &[("O", o)]);
        assert!(!status.success());
        assert!(!Path::new(o).join("x").exists());
    }

    /// The confinement binds an ordinary user as it binds root: run as root (CI), the test
    /// above runs again as `nobody` (`setpriv`), and passes there too.
    #[test]
    fn an_ordinary_user_is_confined_too() {
        if !crate::sys::is_root() || !landlock_or_skip() {
            eprintln!("skipped: not root, so the suite itself runs as an ordinary user");
            return;
        }
        // A copy nobody may run, wherever the suite's own binary lies (a clone under /root).
        let dir = tempfile::tempdir().unwrap();
        super::super::set_mode(dir.path(), 0o755).unwrap();
        let me = dir.path().join("tests");
        std::fs::copy(std::env::current_exe().unwrap(), &me).unwrap();
        super::super::set_mode(&me, 0o755).unwrap();
        // A copy just written may be held open for writing by a child another test thread
        // forked meanwhile (until its exec closes it): `Text file busy`, for a moment.
        let run = || {
            std::process::Command::new("setpriv")
                .args(["--reuid=65534", "--regid=65534", "--clear-groups", "env"])
                .args(["HOME=/tmp", "TMPDIR=/tmp"])
                .arg(&me)
                .args([
                    "--exact",
                    "sys::confine::tests::a_confined_process_writes_only_beneath_its_folders",
                ])
                .current_dir("/")
                .output()
                .expect("setpriv (util-linux) runs")
        };
        let busy = |o: &std::process::Output| String::from_utf8_lossy(&o.stderr).contains("busy");
        let mut out = run();
        for _ in 0..20 {
            if !busy(&out) {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
            out = run();
        }
        let said = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{said}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(said.contains("1 passed"), "{said}");
    }

    /// What a step left running, outside its process group (`setsid`), is found by its
    /// step's value and killed; another step's is not.
    #[test]
    fn a_sweep_kills_what_its_step_left_running_and_nothing_else() {
        let (mine, theirs) = (step_value(), step_value());
        let start = |step: &str| {
            let mut cmd = std::process::Command::new("setsid");
            cmd.args(["sleep", "30"]).env(STEP_VAR, step);
            cmd.spawn().unwrap()
        };
        let (mut a, mut b) = (start(&mine), start(&theirs));
        // /proc/<pid>/environ is readable once the exec is done.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        let mut killed = Vec::new();
        while killed.is_empty() && std::time::Instant::now() < deadline {
            killed = sweep(&mine);
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        assert_eq!(killed, std::slice::from_ref(&mine));
        assert!(a.wait().unwrap().code().is_none(), "killed by a signal");
        assert!(
            b.try_wait().unwrap().is_none(),
            "another step's process runs on"
        );
        assert_eq!(sweep(&theirs), std::slice::from_ref(&theirs));
        b.wait().unwrap();
    }
}
