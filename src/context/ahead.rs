//! Builds started ahead of need: while the baseline builds (and while its outputs are
//! recorded and candidates verified), the candidates the next stages will most likely ask
//! for are built by two threads of their own, each taking the next build queued; the one
//! build the ladder's longest chain waits for starts at once on a third, at a priority
//! above theirs ([`Ahead::start_urgent`]). The `Context` methods the stages call to build
//! ahead (`build_ahead`, `build_ahead_urgent`, `build_after_stage`) are here too.
//!
//! Why: a release build with fat LTO and one codegen unit spends most of its time on one
//! core, so a second build beside it costs little wall time (pulldown-cmark 0.13.6 on two
//! cores: baseline, profile and cpu builds took 20.7 s one after another).
//!
//! Its builds run at the lowest CPU priority (`cargo::build_in_background`): one that
//! competes with the build or the runs the pipeline waits for slows them down (resvg: the
//! baseline's build took 125 s beside two builds ahead instead of 60, and the budget,
//! learning from it, had no time left for the stages those builds were for); at the lowest
//! priority they take only the cycles the pipeline leaves idle.
//!
//! Must not share a CPU with a timed run: [`Ahead::quiet`], which the pipeline calls before
//! it measures anything, confines every build started here to the CPUs but the last one
//! (Linux, two CPUs or more: `sys::interrupt::Cancel::confine`), and the timed runs go on
//! that last one alone (`bench::pin`) — so a comparison no longer holds up the builds for
//! the stages after it (the demo's native and instrumented builds, stopped while
//! x86-64-v4 was timed, then cost 4.5 s of waiting). A timed program that keeps several
//! cores busy, or whose workload is not pinned, stops them after all
//! (`sys::interrupt::pause_confined`). Where CPUs cannot be confined they are stopped
//! while anything is timed (SIGSTOP to its process group, SIGCONT when the timing is done;
//! where a group cannot be paused, Windows, it waits for them instead). Stopped, a build
//! uses no CPU; its memory stays. Why not wait: a build for a later stage then never holds
//! up a comparison whose verdict may make it useless (the pgo stage's build on `max`,
//! started before the search's point is measured: pulldown-cmark's optimized build is
//! 17–22 s of one core). So a build for a later stage that cannot start before the
//! current stage's build is done may be held ([`Ahead::defer`]) until that stage has timed
//! its own candidates. A build asked for by [`Ahead::take`] hands over its result (an
//! error included, reported by the stage that asked, as a build of its own would be); a
//! build nobody asks for is kept in the build cache like any other.
//!
//! An early return (an error, or the run is over) drops the queue: nothing more starts, and
//! the builds still running are killed with their rustc and build scripts
//! (`sys::interrupt::Cancel`) before their threads are joined, so none outlives the run
//! or writes into a folder `clean` may then remove.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::path::PathBuf;
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use crate::cargo::{BuildCache, BuildSettings, Built, CargoError, Project};

/// A finished build: what [`BuildCache::build`] returned.
pub(crate) type Finished = Result<(Built, Option<String>), CargoError>;

/// How many builds run ahead at once (beside the one the pipeline may run itself), not
/// counting an urgent one ([`Ahead::start_urgent`]).
const BUILDERS: usize = 2;

/// The CPU priority (nice) of builds ahead: the lowest, so they take only the cycles the
/// pipeline leaves idle …
const NICE: i32 = 19;
/// … and of an urgent one: above the other builds ahead, below the pipeline's own.
const NICE_URGENT: i32 = 10;

#[derive(Default)]
struct AheadState {
    /// Builds not started yet, in the order they were asked for.
    queue: VecDeque<AheadBuild>,
    /// Settings hashes queued and not finished.
    pending: BTreeSet<String>,
    finished: BTreeMap<String, Finished>,
    /// Builders running: one leaves (and says so here) when it finds the queue empty.
    active: usize,
    /// Settings hashes of urgent builds cancelled ([`Ahead::cancel_urgent`]): their result
    /// is nobody's (a later ask builds them anew).
    cancelled: BTreeSet<String>,
}

/// The queue of builds started ahead, and the threads that run them.
#[derive(Default)]
pub(crate) struct Ahead {
    shared: Arc<(Mutex<AheadState>, Condvar)>,
    workers: Mutex<Vec<JoinHandle<()>>>,
    /// The builders' cargo process groups, killed together on drop.
    cancel: crate::sys::interrupt::Cancel,
    /// Builds asked for after the current stage's timings (`Context::build_after_stage`),
    /// as `(label, settings)`, not queued yet.
    deferred: Mutex<Vec<(String, BuildSettings)>>,
    /// The process groups of each urgent build ([`Ahead::start_urgent`]), a set of its own
    /// so that [`Ahead::cancel_urgent`] kills it alone.
    urgent: Mutex<Vec<(String, crate::sys::interrupt::Cancel)>>,
}

impl Drop for Ahead {
    fn drop(&mut self) {
        let mut s = self.shared.0.lock().unwrap_or_else(|e| e.into_inner());
        s.queue.clear();
        drop(s);
        // A builder may start the build it just took after a kill: kill until every
        // builder has returned (each returns once its cargo is gone), for 10 s at most.
        let until = std::time::Instant::now() + Duration::from_secs(10);
        while self.alive() && std::time::Instant::now() < until {
            self.cancel.kill();
            self.cancel_urgent();
            std::thread::sleep(Duration::from_millis(20));
        }
        self.settle();
    }
}

/// One build to start ahead: its settings and the target dir it builds into.
pub(crate) struct AheadBuild {
    pub settings: BuildSettings,
    pub target_dir: PathBuf,
}

impl Ahead {
    /// Queue `jobs`, in order, for [`BUILDERS`] threads of their own: the builders still
    /// running take them after their own, and new ones start up to that many. (Jobs queued
    /// while earlier ones ran used to be left out: resvg's PGO build without relocations,
    /// asked for while the profile and cpu builds were running, was built after the
    /// comparison instead of beside it, 37 s more.)
    pub(crate) fn start(
        &self,
        project: &Project,
        optimize_dir: PathBuf,
        toolchain: &str,
        jobs: Vec<AheadBuild>,
    ) {
        let mut workers = self.workers.lock().unwrap();
        workers.retain(|w| !w.is_finished());
        let spawn = {
            let mut s = self.shared.0.lock().unwrap();
            s.pending.extend(jobs.iter().map(|j| j.settings.hash()));
            s.queue.extend(jobs);
            let spawn = BUILDERS.saturating_sub(s.active).min(s.queue.len());
            s.active += spawn;
            spawn
        };
        for _ in 0..spawn {
            let (project, toolchain) = (project.clone(), toolchain.to_string());
            let (shared, dir) = (Arc::clone(&self.shared), optimize_dir.clone());
            let cancel = self.cancel.clone();
            workers.push(std::thread::spawn(move || {
                crate::cargo::build_in_background(NICE);
                cancel.enter();
                build_queued(&shared, &project, &dir, &toolchain)
            }));
        }
    }

    /// Start `job` now on a thread of its own, beside the builders and before what they
    /// have queued, at a CPU priority above theirs ([`NICE_URGENT`]): the build the ladder's
    /// longest chain waits for (the pgo stage's optimized build started during the profile
    /// stage's search, `stage::pgo::speculate`). Why: queued, it waited for the cpu level's
    /// and the search point's builds to end (pulldown-cmark: started 15 s late); beside
    /// them at the same priority, its one core was shared with their many threads.
    pub(crate) fn start_urgent(
        &self,
        project: &Project,
        optimize_dir: PathBuf,
        toolchain: &str,
        job: AheadBuild,
    ) {
        let mut workers = self.workers.lock().unwrap();
        self.shared
            .0
            .lock()
            .unwrap()
            .pending
            .insert(job.settings.hash());
        let (project, toolchain) = (project.clone(), toolchain.to_string());
        let cancel = crate::sys::interrupt::Cancel::default();
        let entry = (job.settings.hash(), cancel.clone());
        self.urgent.lock().unwrap().push(entry);
        let shared = Arc::clone(&self.shared);
        workers.push(std::thread::spawn(move || {
            crate::cargo::build_in_background(NICE_URGENT);
            cancel.enter();
            let cache = BuildCache {
                optimize_dir: &optimize_dir,
                toolchain: &toolchain,
            };
            build_one(&shared, &cache, &project, job);
        }));
    }

    /// Kill the urgent builds still running: they were started for the best as it stood
    /// (`stage::pgo::speculate`), and the ladder kept another (the search's point, a CPU
    /// level), so nobody will ask for them; left running, at their priority, they would
    /// take the cores the builds for the new best need. A killed build is a failed one that
    /// nobody takes, and is not kept.
    /// Returns how many were still running.
    pub(crate) fn cancel_urgent(&self) -> usize {
        let urgent = std::mem::take(&mut *self.urgent.lock().unwrap_or_else(|e| e.into_inner()));
        let mut s = self.shared.0.lock().unwrap_or_else(|e| e.into_inner());
        let mut running = 0;
        for (hash, cancel) in urgent {
            if s.pending.remove(&hash) {
                s.cancelled.insert(hash);
                cancel.kill();
                running += 1;
            }
        }
        running
    }

    /// Hold `wanted` until [`Ahead::take_deferred`].
    pub(crate) fn defer(&self, wanted: Vec<(String, BuildSettings)>) {
        self.deferred.lock().unwrap().extend(wanted);
    }

    /// What [`Ahead::defer`] held, to be queued now.
    pub(crate) fn take_deferred(&self) -> Vec<(String, BuildSettings)> {
        std::mem::take(&mut *self.deferred.lock().unwrap())
    }

    /// Whether `settings` was queued here (finished or not).
    pub(crate) fn has(&self, settings: &BuildSettings) -> bool {
        let hash = settings.hash();
        let s = self.shared.0.lock().unwrap();
        s.pending.contains(&hash) || s.finished.contains_key(&hash)
    }

    /// The result of the build of `settings` started ahead, once it is finished; `None`
    /// when it was not started here (or its thread died: the caller then builds it).
    pub(crate) fn take(&self, settings: &BuildSettings) -> Option<Finished> {
        let hash = settings.hash();
        let (lock, ready) = &*self.shared;
        let mut s = lock.lock().unwrap();
        loop {
            if let Some(done) = s.finished.remove(&hash) {
                return Some(done);
            }
            if !s.pending.contains(&hash) || !self.alive() {
                return None;
            }
            // Bounded waits: a worker that died is noticed within a second.
            s = ready.wait_timeout(s, Duration::from_secs(1)).unwrap().0;
        }
    }

    /// Keep every build started here off what is timed while the returned guard lives:
    /// on the CPUs the timed runs do not use until it drops, else stopped until it drops,
    /// or, where they cannot be paused, waited for now (`None`). With none running,
    /// nothing is kept apart; without `beside`, they are stopped even where they could
    /// go on.
    pub(crate) fn quiet(&self, beside: bool) -> Option<Paused> {
        // No build is running, and none starts while something is timed (only the
        // pipeline starts builders): the timed runs keep every CPU, as `bench` alone does.
        if !self.alive() {
            return Some(Paused(Vec::new()));
        }
        let urgent = self.urgent.lock().unwrap();
        let mut sets: Vec<_> = urgent.iter().map(|(_, c)| c.clone()).collect();
        drop(urgent);
        sets.push(self.cancel.clone());
        if beside && sets.iter().all(|c| c.confine()) {
            return Some(Paused(sets));
        }
        if !sets.iter().all(|c| c.pause()) {
            self.settle();
            return None;
        }
        Some(Paused(sets))
    }

    /// Wait until no build started here is running.
    pub(crate) fn settle(&self) {
        let workers = &mut *self.workers.lock().unwrap_or_else(|e| e.into_inner());
        for worker in std::mem::take(workers) {
            let _ = worker.join();
        }
    }

    fn alive(&self) -> bool {
        self.workers
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .any(|w| !w.is_finished())
    }
}

/// What the run's stages call to build ahead.
impl super::Context<'_> {
    /// Start building each of `wanted` (label, settings) on threads of their own (see this module), leaving out
    /// those the build cache already holds or already started; [`Context::build`] then
    /// takes the result.
    pub(crate) fn build_ahead(&self, wanted: Vec<(String, BuildSettings)>) {
        let (labels, jobs): (Vec<String>, Vec<AheadBuild>) = wanted
            .into_iter()
            .filter(|(_, s)| !self.has_build(s))
            .map(|(label, settings)| {
                let target_dir = self.build_dir(&settings);
                (
                    label,
                    AheadBuild {
                        target_dir,
                        settings,
                    },
                )
            })
            .unzip();
        if !jobs.is_empty() {
            self.ui().info(&format!(
                "building ahead, beside the run: {}",
                labels.join(", ")
            ));
        }
        let toolchain = self.plan.rustc.version.clone();
        (self.ahead).start(
            &self.plan.project,
            self.plan.optimize_dir.clone(),
            &toolchain,
            jobs,
        );
    }

    /// [`Context::build_ahead`] for the one build the ladder's longest chain waits for:
    /// started at once, above the other builds ahead (`Ahead::start_urgent`).
    pub(crate) fn build_ahead_urgent(&self, label: &str, settings: BuildSettings) {
        if self.has_build(&settings) {
            return;
        }
        self.ui()
            .info(&format!("building ahead, first, beside the run: {label}"));
        let job = AheadBuild {
            target_dir: self.build_dir(&settings),
            settings,
        };
        let toolchain = self.plan.rustc.version.clone();
        let dir = self.plan.optimize_dir.clone();
        (self.ahead).start_urgent(&self.plan.project, dir, &toolchain, job);
    }

    /// [`Context::build_ahead`] once the current stage's comparisons are timed
    /// ([`Context::start_deferred`]), not before: a build for a later stage started now
    /// would take the cores this stage's own builds use (and, when timings waited for every
    /// build ahead, held them up: pulldown-cmark, BOLT's fat-LTO relink asked for once the
    /// PGO build was done held pgo's timing for 17.8 s; started after it, it builds beside
    /// the next stage's build).
    pub(crate) fn build_after_stage(&self, wanted: Vec<(String, BuildSettings)>) {
        self.ahead.defer(wanted);
    }

    /// Start what [`Context::build_after_stage`] held (the ladder, when a stage is done).
    pub(crate) fn start_deferred(&self) {
        let wanted = self.ahead.take_deferred();
        if !wanted.is_empty() {
            self.build_ahead(wanted);
        }
    }
}

/// The builds ahead, stopped while this lives ([`Ahead::quiet`]).
pub(crate) struct Paused(Vec<crate::sys::interrupt::Cancel>);

impl Drop for Paused {
    fn drop(&mut self) {
        self.0
            .iter()
            .for_each(crate::sys::interrupt::Cancel::resume);
    }
}

/// One builder: take the next queued job until none is left, handing each result over.
fn build_queued(
    shared: &(Mutex<AheadState>, Condvar),
    project: &Project,
    optimize_dir: &std::path::Path,
    toolchain: &str,
) {
    let cache = BuildCache {
        optimize_dir,
        toolchain,
    };
    let (lock, _) = shared;
    loop {
        let job = {
            let mut s = lock.lock().unwrap();
            let job = s.queue.pop_front();
            if job.is_none() {
                s.active -= 1;
            }
            job
        };
        let Some(job) = job else {
            return;
        };
        build_one(shared, &cache, project, job);
    }
}

/// Build `job` and hand its result over to [`Ahead::take`].
fn build_one(
    shared: &(Mutex<AheadState>, Condvar),
    cache: &BuildCache,
    project: &Project,
    job: AheadBuild,
) {
    let done = cache.build(project, &job.settings, &job.target_dir, &mut |_| {});
    hand_over(shared, job.settings.hash(), done);
}

/// The build of `hash` is `done`: for [`Ahead::take`], unless it was cancelled (then
/// [`Ahead::cancel_urgent`] took it out of `pending` already: the same settings asked for
/// again since are another build's).
fn hand_over((lock, ready): &(Mutex<AheadState>, Condvar), hash: String, done: Finished) {
    let mut s = lock.lock().unwrap();
    if !s.cancelled.remove(&hash) {
        s.pending.remove(&hash);
        s.finished.insert(hash, done);
    }
    ready.notify_all();
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings() -> BuildSettings {
        BuildSettings::plain("release")
    }

    #[cfg(unix)]
    #[test]
    fn a_cancelled_urgent_build_is_killed_and_its_result_is_nobody_s() {
        let ahead = Ahead::default();
        let hash = settings().hash();
        let cancel = crate::sys::interrupt::Cancel::default();
        let mut sleeper = std::thread::scope(|s| {
            s.spawn(|| {
                cancel.enter();
                let mut cmd = std::process::Command::new("sleep");
                cmd.arg("30");
                crate::sys::interrupt::spawn_group(&mut cmd).unwrap()
            })
            .join()
            .unwrap()
        });
        ahead.shared.0.lock().unwrap().pending.insert(hash.clone());
        ahead.urgent.lock().unwrap().push((hash.clone(), cancel));
        assert_eq!(ahead.cancel_urgent(), 1);
        assert!(!ahead.has(&settings()), "no longer pending");
        let status = sleeper.wait().unwrap();
        crate::sys::interrupt::release(sleeper.id());
        assert_eq!(crate::sys::exit_signal(&status), Some(9), "killed");
        let failed = Err(CargoError::Alloc("killed".into()));
        hand_over(&ahead.shared, hash.clone(), failed);
        assert!(ahead.take(&settings()).is_none(), "nobody's result");
        assert!(ahead.shared.0.lock().unwrap().cancelled.is_empty());
    }

    #[test]
    fn nothing_queued_is_nothing_to_take_or_wait_for() {
        let ahead = Ahead::default();
        let settings = settings();
        assert!(!ahead.has(&settings));
        assert!(ahead.take(&settings).is_none());
        ahead.settle();
    }

    #[test]
    fn a_finished_build_is_handed_over_once() {
        let ahead = Ahead::default();
        let settings = settings();
        let hash = settings.hash();
        ahead
            .shared
            .0
            .lock()
            .unwrap()
            .finished
            .insert(hash, Err(CargoError::NoBinary("x".into())));
        assert!(ahead.has(&settings));
        assert!(matches!(ahead.take(&settings), Some(Err(_))));
        assert!(ahead.take(&settings).is_none());
    }

    /// A build deferred to the end of a stage is neither queued nor waited for until it is
    /// taken out, once.
    #[test]
    fn a_deferred_build_is_held_until_it_is_taken_out() {
        let ahead = Ahead::default();
        let settings = settings();
        ahead.defer(vec![("bolt: input".into(), settings.clone())]);
        assert!(!ahead.has(&settings));
        assert!(ahead.take(&settings).is_none());
        let held = ahead.take_deferred();
        assert_eq!(held.len(), 1);
        assert_eq!(held[0].1, settings);
        assert!(ahead.take_deferred().is_empty());
    }
}
