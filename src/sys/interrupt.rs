//! Interruption, and the children it must not leave behind. Every child process group we
//! start is registered here while it lives ([`spawn_group`]; `Tree::spawn` goes through
//! it), so that Ctrl-C, SIGTERM or SIGHUP ([`install`]) kills every one of them — builds
//! started ahead, workloads, llvm-bolt, perf, git —, removes the folders registered with
//! [`remove_on_interrupt`] (a workload's private copy of its cwd), calls the clean-ups
//! registered with [`call_on_interrupt`] (a `Cargo.lock` the tool made: removed only while
//! it is unchanged and no other run uses it, `cargo::lockfile`), and ends the process with
//! 128 + the signal (130 for Ctrl-C, 143 for SIGTERM). The run's lock is an OS file lock:
//! the exit releases it. What finished before the signal was written whole (temp + rename),
//! so a rerun reuses it and redoes the rest.
//!
//! A [`Cancel`] is a smaller set: the groups started by the threads that entered it (the
//! builds run ahead), killed together when their owner goes on an error, and kept off what
//! is timed together: confined to the CPUs no timed run uses (Linux, two CPUs or more:
//! [`Cancel::confine`], [`reserved_cpus`]), else paused (SIGSTOP, then SIGCONT; Unix).
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
    /// What to do on a signal (a folder to remove, a clean-up to call), by registration id.
    paths: BTreeMap<u64, OnInterrupt>,
    /// The [`Cancel`] sets paused: a group started under one is stopped as it starts.
    paused: BTreeSet<u64>,
    /// The [`Cancel`] sets confined: a group started under one starts on `split.1`.
    confined: BTreeSet<u64>,
    /// While any set is confined: the CPUs kept for timed runs, and the others (where the
    /// confined sets run).
    split: Option<(Vec<usize>, Vec<usize>)>,
}

static REGISTRY: Mutex<Registry> = Mutex::new(Registry {
    groups: BTreeMap::new(),
    paths: BTreeMap::new(),
    paused: BTreeSet::new(),
    confined: BTreeSet::new(),
    split: None,
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
    let set = CANCEL.with(std::cell::Cell::get);
    #[cfg(target_os = "linux")]
    if let (true, Some((_, others))) = (reg.confined.contains(&set), &reg.split) {
        super::linux::pin_to_cpus(cmd, others);
    }
    if interrupted() {
        let why = "the run is being interrupted: nothing new is started";
        return Err(std::io::Error::new(std::io::ErrorKind::Interrupted, why));
    }
    let child = cmd.spawn()?;
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

/// What a signal does for one registration.
enum OnInterrupt {
    Remove(PathBuf),
    Call(Box<dyn FnMut() + Send>),
}

impl OnInterrupt {
    #[cfg_attr(not(unix), allow(dead_code))]
    fn run(&mut self) {
        match self {
            OnInterrupt::Remove(path) => {
                if std::fs::remove_dir_all(&*path).is_err() {
                    let _ = std::fs::remove_file(&*path);
                }
            }
            OnInterrupt::Call(f) => f(),
        }
    }
}

/// A folder (or file) removed if a signal ends the process while the returned guard lives.
pub(crate) fn remove_on_interrupt(path: PathBuf) -> PathGuard {
    register(OnInterrupt::Remove(path))
}

/// `clean_up` called if a signal ends the process while the returned guard lives: what
/// decides before it removes (a file removed only while it has the content it was made
/// with). It runs on the signal's thread with every process group already killed and the
/// registry held: it must not start a process or register anything, and a lock it waits
/// for must be one the process's other threads never hold while they register or drop a
/// guard (they would wait for the registry, it for them).
pub(crate) fn call_on_interrupt(clean_up: impl FnMut() + Send + 'static) -> PathGuard {
    register(OnInterrupt::Call(Box::new(clean_up)))
}

fn register(what: OnInterrupt) -> PathGuard {
    let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
    registry().paths.insert(id, what);
    PathGuard(id)
}

/// Unregisters its folder or clean-up when dropped ([`remove_on_interrupt`],
/// [`call_on_interrupt`]).
#[derive(Debug)]
pub(crate) struct PathGuard(u64);

impl PathGuard {
    /// Do what a signal would do for this registration, now (tests of the signal path,
    /// without ending the process).
    #[cfg(test)]
    pub(crate) fn interrupt_now(&self) {
        if let Some(what) = registry().paths.get_mut(&self.0) {
            what.run();
        }
    }
}

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
        let mine: Vec<u32> = self.groups(&reg).collect();
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

    /// Keep every live group of this set, and each one it starts until [`Cancel::resume`],
    /// off the CPUs [`reserved_cpus`] then names, on the others: something timed on a
    /// reserved CPU has it alone while the builds go on beside it. `false`, nothing done,
    /// where that cannot be (not Linux, fewer than two allowed CPUs): the caller pauses
    /// them instead.
    pub(crate) fn confine(&self) -> bool {
        #[cfg(target_os = "linux")]
        {
            let mut cpus = super::allowed_cpus();
            if cpus.len() < 2 {
                return false;
            }
            let mut reg = registry();
            // The last allowed CPU is kept for timing (on a machine of two, the other one
            // builds); while sets are confined the split stays the one they were moved by.
            let (_, others) = reg.split.get_or_insert_with(|| {
                let timing = cpus.split_off(cpus.len() - 1);
                (timing, cpus)
            });
            let others = others.clone();
            reg.confined.insert(self.0);
            self.groups(&reg)
                .for_each(|pid| super::linux::move_group(pid, &others));
            true
        }
        #[cfg(not(target_os = "linux"))]
        false
    }

    /// Let every group of this set run again (see [`Cancel::pause`]), on every allowed CPU
    /// (see [`Cancel::confine`]).
    pub(crate) fn resume(&self) {
        let mut reg = registry();
        if reg.paused.remove(&self.0) {
            self.signal(&reg, true);
        }
        if reg.confined.remove(&self.0) {
            #[cfg(target_os = "linux")]
            {
                let all = super::allowed_cpus();
                self.groups(&reg)
                    .for_each(|pid| super::linux::move_group(pid, &all));
            }
            if reg.confined.is_empty() {
                reg.split = None;
            }
        }
    }

    /// The live groups of this set (their leaders' pids).
    fn groups<'r>(&self, reg: &'r Registry) -> impl Iterator<Item = u32> + 'r {
        let me = self.0;
        (reg.groups.iter())
            .filter(move |(_, set)| **set == me)
            .map(|(pid, _)| *pid)
    }

    fn signal(&self, reg: &Registry, run: bool) {
        self.groups(reg)
            .for_each(|pid| super::imp::pause_group(pid, run));
    }
}

/// While builds are confined ([`Cancel::confine`]): the CPUs kept for timed runs.
pub(crate) fn reserved_cpus() -> Option<Vec<usize>> {
    registry().split.as_ref().map(|(timing, _)| timing.clone())
}

/// A timed program that does not stay on the reserved CPU (it keeps several cores busy,
/// or its workload is not to be pinned) would share the others with the confined builds:
/// they are stopped after all, as [`Cancel::pause`] would, until each set resumes.
pub(crate) fn pause_confined() {
    let mut reg = registry();
    for set in reg.confined.clone() {
        if reg.paused.insert(set) {
            Cancel(set).signal(&reg, false);
        }
    }
}

/// Kill every live group (an exit on an error with builds still running); returns how many.
pub(crate) fn kill_all() -> usize {
    let reg = registry();
    reg.groups
        .keys()
        .for_each(|pid| super::imp::kill_group(*pid));
    // What workloads left running outside their groups (daemons, `setsid`).
    super::confine::sweep(&super::confine::own_prefix());
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

/// What a signal does: every group killed, the registered folders removed and clean-ups
/// called (in the order they were registered), a line saying so, and exit 128 + `signal`. The registry stays locked until the exit: nothing starts.
#[cfg(unix)]
fn stop(signal: i32) -> ! {
    SIGNALLED.store(signal, Ordering::SeqCst);
    let mut reg = registry();
    reg.groups
        .keys()
        .for_each(|pid| super::imp::kill_group(*pid));
    super::confine::sweep(&super::confine::own_prefix());
    reg.paths.values_mut().for_each(OnInterrupt::run);
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

    /// Whether process `pid` is stopped, once a signal sent to it has had up to 5 s to
    /// land (`stopped`: the state awaited).
    #[cfg(target_os = "linux")]
    fn settles_stopped(pid: u32, stopped: bool) -> bool {
        let until = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while (state(pid) == 'T') != stopped && std::time::Instant::now() < until {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        state(pid) == 'T'
    }

    /// `sh -c script` started as a group of `cancel`'s set.
    #[cfg(target_os = "linux")]
    fn start_in(cancel: &Cancel, script: &str) -> Child {
        std::thread::scope(|s| {
            s.spawn(|| {
                cancel.enter();
                spawn_group(Command::new("sh").args(["-c", script])).unwrap()
            })
            .join()
            .unwrap()
        })
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_paused_set_stops_its_groups_and_those_it_starts_until_resumed() {
        let cancel = Cancel::default();
        let mut before = start_in(&cancel, "exec sleep 30");
        let mut other = Command::new("sleep").arg("30").spawn().unwrap();
        assert!(cancel.pause());
        let mut during = start_in(&cancel, "exec sleep 30");
        for p in [&before, &during] {
            assert!(settles_stopped(p.id(), true), "paused");
        }
        assert_ne!(state(other.id()), 'T', "not of the set");
        cancel.resume();
        for p in [&before, &during] {
            assert!(!settles_stopped(p.id(), false), "running again");
        }
        assert_eq!(cancel.kill(), 2);
        for p in [&mut before, &mut during] {
            wait(p).unwrap();
        }
        other.kill().unwrap();
        other.wait().unwrap();
    }

    /// The CPUs each process of the group `pgid` leads may run on (`Cpus_allowed_list`).
    #[cfg(target_os = "linux")]
    fn allowed_in_group(pgid: u32) -> Vec<String> {
        (super::super::linux::group_members(pgid).into_iter())
            .filter_map(|pid| std::fs::read_to_string(format!("/proc/{pid}/status")).ok())
            .filter_map(|status| {
                let line = status
                    .lines()
                    .find(|l| l.starts_with("Cpus_allowed_list"))?;
                Some(line.split(':').nth(1)?.trim().to_string())
            })
            .collect()
    }

    /// Confined, a set's groups (every process of each, the one started after too) leave
    /// the reserved CPU to what is timed; resumed, they may use every CPU again; a timed
    /// program that needs the other CPUs stops them after all.
    #[cfg(target_os = "linux")]
    #[test]
    fn a_confined_set_keeps_off_the_reserved_cpu_until_resumed() {
        let cpus = crate::sys::allowed_cpus();
        let cancel = Cancel::default();
        if cpus.len() < 2 {
            assert!(!cancel.confine(), "one CPU: nothing to keep apart");
            return;
        }
        let script = "sleep 30 & exec sleep 30";
        let mut before = start_in(&cancel, script);
        assert!(
            settles_with_two(before.id()),
            "the shell's background child started"
        );
        assert!(cancel.confine());
        let mut during = start_in(&cancel, script);
        assert!(
            settles_with_two(during.id()),
            "the shell's background child started"
        );
        let reserved = reserved_cpus().expect("a CPU is kept for timing");
        assert_eq!(reserved, [*cpus.last().unwrap()]);
        let others = cpus[..cpus.len() - 1]
            .iter()
            .map(usize::to_string)
            .collect::<Vec<_>>();
        for p in [&before, &during] {
            let lists = allowed_in_group(p.id());
            assert_eq!(lists.len(), 2, "both processes of the group: {lists:?}");
            for list in lists {
                let listed: Vec<String> = expand(&list);
                assert_eq!(listed, others, "off the reserved CPU");
            }
        }
        pause_confined();
        assert!(settles_stopped(before.id(), true), "stopped after all");
        cancel.resume();
        assert_eq!(reserved_cpus(), None);
        for p in [&before, &during] {
            for list in allowed_in_group(p.id()) {
                assert_eq!(expand(&list).len(), cpus.len(), "every CPU again: {list}");
            }
            assert!(!settles_stopped(p.id(), false), "running again");
        }
        assert_eq!(cancel.kill(), 2);
        for p in [&mut before, &mut during] {
            wait(p).unwrap();
        }
    }

    /// Whether the group `pgid` leads has two processes, once it has had up to 5 s to fork.
    #[cfg(target_os = "linux")]
    fn settles_with_two(pgid: u32) -> bool {
        let until = std::time::Instant::now() + std::time::Duration::from_secs(5);
        let two = || super::super::linux::group_members(pgid).len() >= 2;
        while !two() && std::time::Instant::now() < until {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        two()
    }

    /// `0-2,5` → `["0", "1", "2", "5"]`.
    #[cfg(target_os = "linux")]
    fn expand(list: &str) -> Vec<String> {
        list.split(',')
            .flat_map(|r| match r.split_once('-') {
                Some((a, b)) => (a.parse::<usize>().unwrap()..=b.parse().unwrap()).collect(),
                None => vec![r.parse::<usize>().unwrap()],
            })
            .map(|c| c.to_string())
            .collect()
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
