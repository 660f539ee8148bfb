//! Interruption, and the children it must not leave behind. Every child process group we
//! start is registered here while it lives ([`spawn_group`]; `Tree::spawn` goes through
//! it), so that Ctrl-C, SIGTERM or SIGHUP ([`install`]) kills every one of them — builds
//! started ahead, workloads, llvm-bolt, perf, git —, removes the folders registered with
//! [`remove_on_interrupt`] (a workload's private copy of its cwd), and ends the process with
//! 128 + the signal (130 for Ctrl-C, 143 for SIGTERM). The run's lock is an OS file lock:
//! the exit releases it. What finished before the signal was written whole (temp + rename),
//! so a rerun reuses it and redoes the rest.
//!
//! A [`Cancel`] is a smaller set: the groups started by the threads that entered it (the
//! builds run ahead), killed together when their owner goes on an error, and paused
//! together (SIGSTOP, then SIGCONT; Unix) while something is timed.
//!
//! Why a registry instead of one process group for everything: each child has a group of its
//! own so that a timeout kills its whole tree and nothing else; the price is that the
//! terminal's Ctrl-C reaches only us, and we must pass it on.
//!
//! A group id is removed from the registry ([`release`]) before its leader is reaped: the
//! unreaped leader keeps the id reserved, so a kill from here never reaches a group that
//! another program got the same id for.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::process::{Child, Command};
use std::sync::atomic::{AtomicI32, AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};

#[derive(Default)]
struct Registry {
    /// Live groups (the leader's pid) and the [`Cancel`] each was started under (0: none).
    groups: BTreeMap<u32, u64>,
    /// Folders to remove on a signal, by registration id.
    paths: BTreeMap<u64, PathBuf>,
    /// The [`Cancel`] sets paused: a group started under one is stopped as it starts.
    paused: BTreeSet<u64>,
}

static REGISTRY: Mutex<Registry> = Mutex::new(Registry {
    groups: BTreeMap::new(),
    paths: BTreeMap::new(),
    paused: BTreeSet::new(),
});
/// The signal that is ending the process (0: none yet).
static SIGNALLED: AtomicI32 = AtomicI32::new(0);
static NEXT_ID: AtomicU64 = AtomicU64::new(1);

thread_local! {
    /// The [`Cancel`] the groups this thread starts belong to.
    static CANCEL: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

fn registry() -> MutexGuard<'static, Registry> {
    REGISTRY.lock().unwrap_or_else(|e| e.into_inner())
}

/// Whether a signal is ending the process (nothing new is started then).
pub(crate) fn interrupted() -> bool {
    SIGNALLED.load(Ordering::SeqCst) != 0
}

/// Start `cmd` as the leader of a process group of its own, registered until [`release`].
/// Refused once a signal is ending the process. The registry is held across the spawn, so
/// a signal either sees the new group or comes before it and refuses it.
pub(crate) fn spawn_group(cmd: &mut Command) -> std::io::Result<Child> {
    super::imp::own_group(cmd);
    let mut reg = registry();
    if interrupted() {
        let why = "the run is being interrupted: nothing new is started";
        return Err(std::io::Error::new(std::io::ErrorKind::Interrupted, why));
    }
    let child = cmd.spawn()?;
    let set = CANCEL.with(std::cell::Cell::get);
    if reg.paused.contains(&set) {
        super::imp::pause_group(child.id(), false);
    }
    reg.groups.insert(child.id(), set);
    Ok(child)
}

/// The group led by `pid` is no longer ours to kill (call before reaping its leader).
pub(crate) fn release(pid: u32) {
    registry().groups.remove(&pid);
}

/// A folder (or file) removed if a signal ends the process while the returned guard lives.
pub(crate) fn remove_on_interrupt(path: PathBuf) -> PathGuard {
    let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
    registry().paths.insert(id, path);
    PathGuard(id)
}

/// Unregisters its folder when dropped ([`remove_on_interrupt`]).
#[derive(Debug)]
pub(crate) struct PathGuard(u64);

impl Drop for PathGuard {
    fn drop(&mut self) {
        registry().paths.remove(&self.0);
    }
}

/// The groups started by the threads that [`Cancel::enter`]ed it (a clone is the same set).
#[derive(Clone)]
pub(crate) struct Cancel(u64);

impl Default for Cancel {
    fn default() -> Self {
        Cancel(NEXT_ID.fetch_add(1, Ordering::Relaxed))
    }
}

impl Cancel {
    /// From now on, the groups this thread starts belong to this set.
    pub(crate) fn enter(&self) {
        CANCEL.with(|c| c.set(self.0));
    }

    /// Kill every live group of this set; returns how many.
    pub(crate) fn kill(&self) -> usize {
        let reg = registry();
        let mine: Vec<u32> = (reg.groups.iter())
            .filter(|(_, set)| **set == self.0)
            .map(|(pid, _)| *pid)
            .collect();
        mine.iter().for_each(|pid| super::imp::kill_group(*pid));
        mine.len()
    }

    /// Stop every live group of this set, and each one it starts until [`Cancel::resume`]
    /// (the registry is held across a spawn, so none slips through); `false`, nothing
    /// done, where a group cannot be paused (Windows): the caller waits for them instead.
    pub(crate) fn pause(&self) -> bool {
        if !cfg!(unix) {
            return false;
        }
        let mut reg = registry();
        reg.paused.insert(self.0);
        self.signal(&reg, false);
        true
    }

    /// Let every group of this set run again (see [`Cancel::pause`]).
    pub(crate) fn resume(&self) {
        let mut reg = registry();
        if reg.paused.remove(&self.0) {
            self.signal(&reg, true);
        }
    }

    fn signal(&self, reg: &Registry, run: bool) {
        (reg.groups.iter())
            .filter(|(_, set)| **set == self.0)
            .for_each(|(pid, _)| super::imp::pause_group(*pid, run));
    }
}

/// Kill every live group (an exit on an error with builds still running); returns how many.
pub(crate) fn kill_all() -> usize {
    let reg = registry();
    reg.groups
        .keys()
        .for_each(|pid| super::imp::kill_group(*pid));
    reg.groups.len()
}

/// Handle SIGINT, SIGTERM and SIGHUP from now on ([`stop`]); a no-op where signals are not
/// Unix's (Windows: a job object's processes end with it).
pub(crate) fn install() {
    #[cfg(unix)]
    {
        use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
        let Ok(mut signals) = signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGHUP]) else {
            return;
        };
        std::thread::spawn(move || {
            if let Some(signal) = signals.forever().next() {
                stop(signal);
            }
        });
    }
}

/// What a signal does: every group killed, the registered folders removed, a line saying
/// so, and exit 128 + `signal`. The registry stays locked until the exit: nothing starts.
#[cfg(unix)]
fn stop(signal: i32) -> ! {
    SIGNALLED.store(signal, Ordering::SeqCst);
    let reg = registry();
    reg.groups
        .keys()
        .for_each(|pid| super::imp::kill_group(*pid));
    for path in reg.paths.values() {
        if std::fs::remove_dir_all(path).is_err() {
            let _ = std::fs::remove_file(path);
        }
    }
    let name = super::signal_name(signal).unwrap_or("a signal");
    eprintln!(
        "\ninterrupted by {name}: stopped {} running process group(s); what finished is kept, and a rerun reuses it",
        reg.groups.len()
    );
    std::process::exit(128 + signal)
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    /// As `Tree` does: the exit learnt (here: after a kill), the group released, then reaped.
    fn wait(child: &mut Child) -> std::io::Result<std::process::ExitStatus> {
        let status = child.wait();
        release(child.id());
        status
    }

    #[test]
    fn a_cancelled_set_kills_only_its_own_groups_and_released_ones_are_left_alone() {
        let sleeper = || {
            let mut cmd = Command::new("sleep");
            cmd.arg("30");
            spawn_group(&mut cmd).unwrap()
        };
        let cancel = Cancel::default();
        let mut other = sleeper();
        let mine = std::thread::scope(|s| {
            s.spawn(|| {
                cancel.enter();
                sleeper()
            })
            .join()
            .unwrap()
        });
        let mut mine = mine;
        assert_eq!(cancel.kill(), 1);
        let status = wait(&mut mine).unwrap();
        assert_eq!(super::super::exit_signal(&status), Some(9));
        assert!(!registry().groups.contains_key(&mine.id()));
        // Released before reaping: no set names it any more.
        assert_eq!(cancel.kill(), 0);
        assert!(registry().groups.contains_key(&other.id()));
        other.kill().unwrap();
        wait(&mut other).unwrap();
        assert!(!registry().groups.contains_key(&other.id()));
    }

    /// The state letter of process `pid` (`T`: stopped), from /proc.
    #[cfg(target_os = "linux")]
    fn state(pid: u32) -> char {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
        let after = &stat[stat.rfind(')').unwrap() + 2..];
        after.chars().next().unwrap()
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_paused_set_stops_its_groups_and_those_it_starts_until_resumed() {
        let cancel = Cancel::default();
        let start = || {
            std::thread::scope(|s| {
                s.spawn(|| {
                    cancel.enter();
                    let mut cmd = Command::new("sleep");
                    cmd.arg("30");
                    spawn_group(&mut cmd).unwrap()
                })
                .join()
                .unwrap()
            })
        };
        let mut before = start();
        let mut other = Command::new("sleep").arg("30").spawn().unwrap();
        assert!(cancel.pause());
        let mut during = start();
        for p in [&before, &during] {
            let until = std::time::Instant::now() + std::time::Duration::from_secs(5);
            while state(p.id()) != 'T' && std::time::Instant::now() < until {
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            assert_eq!(state(p.id()), 'T', "paused");
        }
        assert_ne!(state(other.id()), 'T', "not of the set");
        cancel.resume();
        for p in [&before, &during] {
            let until = std::time::Instant::now() + std::time::Duration::from_secs(5);
            while state(p.id()) == 'T' && std::time::Instant::now() < until {
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            assert_ne!(state(p.id()), 'T', "running again");
        }
        assert_eq!(cancel.kill(), 2);
        for p in [&mut before, &mut during] {
            wait(p).unwrap();
        }
        other.kill().unwrap();
        other.wait().unwrap();
    }

    #[test]
    fn a_registered_folder_is_unregistered_when_its_guard_goes() {
        let guard = remove_on_interrupt(PathBuf::from("/nonexistent/x"));
        let id = guard.0;
        assert!(registry().paths.contains_key(&id));
        drop(guard);
        assert!(!registry().paths.contains_key(&id));
    }
}
