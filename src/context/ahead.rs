//! Builds started ahead of need: while the baseline builds (and while its outputs are
//! recorded and candidates verified), the candidates the next stages will most likely ask
//! for are built by two threads of their own, each taking the next build queued; the one
//! build the ladder's longest chain waits for starts at once on a third, at a priority
//! above theirs ([`Ahead::start_urgent`]). The `Context` methods the stages call to build
//! ahead (`build_ahead`, `build_ahead_urgent`, `build_after_stage`) are here too.
//!
//! Why: a release build with fat LTO and one codegen unit spends most of its time on one
//! core, so a second build beside it costs little wall time.
//!
//! Its builds run at the lowest CPU priority (`cargo::build_in_background`): one that
//! competes with the build or the runs the pipeline waits for slows them down (and the
//! budget, learning its costs from the slowed baseline, leaves no time for the stages those
//! builds were for); at the lowest priority they take only the cycles the pipeline leaves
//! idle.
//! Figures: docs/src/decisions.md, "Builds ahead run beside, at the lowest priority".
//!
//! Must not share a CPU with a timed run: [`Ahead::quiet`], which the pipeline calls before
//! it measures anything, confines every build started here to the CPUs but the last one
//! (Linux, two CPUs or more: `sys::interrupt::Cancel::confine`), and the timed runs go on
//! that last one alone (`bench::pin`) — so a comparison does not hold up the builds for the
//! stages after it (stopped while it is timed, they would be waited for afterwards). A
//! timed program that keeps several cores busy, or whose workload is not pinned, stops them
//! after all (`sys::interrupt::pause_confined`). Where CPUs cannot be confined they are
//! stopped while anything is timed (SIGSTOP to its process group, SIGCONT when the timing
//! is done; where a group cannot be paused, Windows, it waits for them instead). Stopped, a
//! build uses no CPU; its memory stays. Why not wait: a build for a later stage then never
//! holds up a comparison whose verdict may make it useless (the pgo stage's build on `max`,
//! started before the search's point is measured: under fat LTO, a whole build's time on
//! one core). So a build for a later stage that cannot start before the current stage's
//! build is done may be held ([`Ahead::defer`]) until that stage has timed its own
//! candidates. A build asked for by [`Ahead::take`] hands over its result (an error
//! included, reported by the stage that asked, as a build of its own would be); a build
//! nobody asks for is kept in the build cache like any other.
//!
//! An early return (an error, or the run is over) drops the queue: nothing more starts, and
//! the builds still running are killed with their rustc and build scripts
//! (`sys::interrupt::Cancel`) before their threads are joined, so none outlives the run
//! or writes into a folder `clean` may then remove.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::path::PathBuf;
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

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
    /// Settings hashes of builds cancelled ([`Ahead::cancel_urgent`], [`Ahead::abandon`]):
    /// their result is nobody's (a later ask builds them anew).
    cancelled: BTreeSet<String>,
    /// Each builder running, by its number: its own set of process groups (so that one
    /// build can be killed alone: [`Ahead::abandon`]) and the build it runs now.
    builders: BTreeMap<u64, Builder>,
    /// The next builder's number.
    next_builder: u64,
}

impl AheadState {
    /// Kill each of `builds` (settings hash, its process groups) still pending: its result
    /// is nobody's ([`hand_over`]). One no longer pending is finished, nothing left to
    /// stop. Returns how many were killed.
    fn kill(&mut self, builds: Vec<(String, crate::sys::interrupt::Cancel)>) -> usize {
        let mut killed = 0;
        for (hash, cancel) in builds {
            if self.pending.remove(&hash) {
                self.cancelled.insert(hash);
                cancel.kill();
                killed += 1;
            }
        }
        killed
    }
}

impl AheadState {
    /// The build of settings hash `hash` no longer wanted: out of the queue, or killed when
    /// a builder runs it ([`Ahead::take`] at the run's deadline).
    fn drop_build(&mut self, hash: &str) {
        self.queue.retain(|j| j.settings.hash() != hash);
        let running: Vec<(String, crate::sys::interrupt::Cancel)> = (self.builders.values())
            .filter(|b| b.running.as_ref().is_some_and(|(h, _)| h == hash))
            .map(|b| (hash.to_string(), b.cancel.clone()))
            .collect();
        if self.kill(running) == 0 {
            self.pending.remove(hash);
        }
    }
}

/// One builder thread of [`Ahead::start`].
struct Builder {
    cancel: crate::sys::interrupt::Cancel,
    /// The build it runs now: its settings hash and [`AheadBuild::basis`].
    running: Option<(String, Option<String>)>,
}

/// The queue of builds started ahead, and the threads that run them.
#[derive(Default)]
pub(crate) struct Ahead {
    shared: Arc<(Mutex<AheadState>, Condvar)>,
    workers: Mutex<Vec<JoinHandle<()>>>,
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
            self.builder_sets().iter().for_each(|c| {
                c.kill();
            });
            self.cancel_urgent();
            std::thread::sleep(Duration::from_millis(20));
        }
        self.settle();
    }
}

/// `build` (a build the run makes itself) on a thread of its own whose processes are one set,
/// killed at `deadline` (the run's budget spent): then [`CargoError::OutOfBudget`], whatever
/// the killed build said. Without a deadline, `build` here.
pub(crate) fn until<T: Send>(
    deadline: Option<Instant>,
    build: impl FnOnce() -> Result<T, CargoError> + Send,
) -> Result<T, CargoError> {
    let Some(deadline) = deadline else {
        return build();
    };
    let set = crate::sys::interrupt::Cancel::default();
    std::thread::scope(|s| {
        let running = s.spawn(|| {
            set.enter();
            build()
        });
        while !running.is_finished() {
            if Instant::now() >= deadline {
                set.kill();
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let built = running
            .join()
            .unwrap_or_else(|p| std::panic::resume_unwind(p));
        match Instant::now() >= deadline {
            true if built.is_err() => Err(CargoError::OutOfBudget),
            _ => built,
        }
    })
}

/// Builds wanted ahead: each one's label and settings.
pub(crate) type Wanted = Vec<(String, BuildSettings)>;

/// One build to start ahead: its settings and the target dir it builds into.
pub(crate) struct AheadBuild {
    pub settings: BuildSettings,
    pub target_dir: PathBuf,
    /// The settings hash of the candidate this build is for when the ladder keeps it, and
    /// the ladder has not decided yet (the cpu stage's `native` on its level): when it does
    /// not keep it, the build is stopped ([`Ahead::abandon`]).
    pub basis: Option<String>,
}

impl Ahead {
    /// Queue `jobs`, in order, for [`BUILDERS`] threads of their own: the builders still
    /// running take them after their own, and new ones start up to that many: a job queued
    /// while earlier ones run is built beside the comparison, not after it.
    /// Figures: docs/src/decisions.md, "Jobs queued while the builders run are theirs".
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
            let cancel = crate::sys::interrupt::Cancel::default();
            let id = {
                let mut s = self.shared.0.lock().unwrap();
                s.next_builder += 1;
                let (id, running) = (s.next_builder, None);
                let builder = Builder {
                    cancel: cancel.clone(),
                    running,
                };
                s.builders.insert(id, builder);
                id
            };
            workers.push(std::thread::spawn(move || {
                crate::cargo::build_in_background(NICE);
                cancel.enter();
                build_queued(&shared, id, &project, &dir, &toolchain)
            }));
        }
    }

    /// Start `job` now on a thread of its own, beside the builders and before what they
    /// have queued, at a CPU priority above theirs ([`NICE_URGENT`]): the build the ladder's
    /// longest chain waits for (the pgo stage's optimized build started during the profile
    /// stage's search, `stage::pgo::speculate`). Why: queued, it would wait for the cpu
    /// level's and the search point's builds to end; beside them at the same priority, its
    /// one core would be shared with their many threads.
    /// Figures: docs/src/decisions.md, "The PGO build on `max` starts early and urgent".
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
            let done = cache.build(&project, &job.settings, &job.target_dir, &mut |_| {});
            hand_over(&shared, None, job.settings.hash(), done);
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
        s.kill(urgent)
    }

    /// Stop every build started here for the candidate of settings hash `basis`
    /// ([`AheadBuild::basis`]), which the ladder did not keep: nobody will ask for them,
    /// and they would take the cores the builds the ladder waits for need.
    /// Figures: docs/src/decisions.md, "A dropped candidate's builds ahead are stopped".
    /// Queued ones leave the queue; running ones are killed, a failed build nobody takes,
    /// not kept. Returns how many were stopped.
    pub(crate) fn abandon(&self, basis: &str) -> usize {
        let on = |b: &Option<String>| b.as_deref() == Some(basis);
        let mut s = self.shared.0.lock().unwrap_or_else(|e| e.into_inner());
        let queued: Vec<AheadBuild> = std::mem::take(&mut s.queue).into_iter().collect();
        let (gone, kept): (Vec<_>, Vec<_>) = queued.into_iter().partition(|j| on(&j.basis));
        s.queue = kept.into();
        for job in &gone {
            s.pending.remove(&job.settings.hash());
        }
        let running: Vec<(String, crate::sys::interrupt::Cancel)> = (s.builders.values())
            .filter_map(|b| match &b.running {
                Some((hash, b_on)) if on(b_on) => Some((hash.clone(), b.cancel.clone())),
                _ => None,
            })
            .collect();
        gone.len() + s.kill(running)
    }

    /// Every builder's set of process groups.
    fn builder_sets(&self) -> Vec<crate::sys::interrupt::Cancel> {
        let s = self.shared.0.lock().unwrap_or_else(|e| e.into_inner());
        s.builders.values().map(|b| b.cancel.clone()).collect()
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
    /// when it was not started here (or its thread died: the caller then builds it), or
    /// when it is not finished at `until` (the run's budget is spent): it is then killed,
    /// or leaves the queue.
    pub(crate) fn take(
        &self,
        settings: &BuildSettings,
        until: Option<Instant>,
    ) -> Option<Finished> {
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
            let now = Instant::now();
            if until.is_some_and(|u| now >= u) {
                // An urgent build of these settings is killed too (one lock at a time).
                drop(s);
                let mut urgent = self.urgent.lock().unwrap_or_else(|e| e.into_inner());
                let (mine, rest) = std::mem::take(&mut *urgent)
                    .into_iter()
                    .partition(|(h, _)| *h == hash);
                *urgent = rest;
                drop(urgent);
                let mut s = lock.lock().unwrap();
                s.kill(mine);
                s.drop_build(&hash);
                return None;
            }
            // Bounded waits: a worker that died is noticed within a second.
            let wait = until.map_or(Duration::from_secs(1), |u| u - now);
            s = ready
                .wait_timeout(s, wait.min(Duration::from_secs(1)))
                .unwrap()
                .0;
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
        sets.extend(self.builder_sets());
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
    pub(crate) fn build_ahead(&self, wanted: Wanted) {
        self.build_ahead_groups(vec![(None, wanted)]);
    }

    /// [`Context::build_ahead`] for builds wanted only when the ladder keeps the candidate
    /// of `basis` (not decided yet): when it does not, they are stopped
    /// ([`Context::abandon_ahead`]).
    pub(crate) fn build_ahead_on(&self, basis: &BuildSettings, wanted: Wanted) {
        self.build_ahead_groups(vec![(Some(basis.clone()), wanted)]);
    }

    /// [`Context::build_ahead`] and [`Context::build_ahead_on`] at once, in order: each
    /// group's builds with the candidate they build on when that is undecided.
    pub(crate) fn build_ahead_groups(&self, groups: Vec<(Option<BuildSettings>, Wanted)>) {
        let (labels, jobs): (Vec<String>, Vec<AheadBuild>) = groups
            .into_iter()
            .flat_map(|(basis, wanted)| {
                let basis = basis.map(|b| b.hash());
                wanted.into_iter().map(move |w| (basis.clone(), w))
            })
            .filter(|(_, (_, s))| !self.has_build(s))
            .map(|(basis, (label, settings))| {
                let target_dir = self.build_dir(&settings);
                let job = AheadBuild {
                    target_dir,
                    settings,
                    basis,
                };
                (label, job)
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

    /// Stop the builds started ahead on `cand` ([`Context::build_ahead_on`]): the ladder
    /// did not keep it. Says so when some were.
    pub(crate) fn abandon_ahead(&self, cand: &super::Candidate) {
        let stopped = self.ahead.abandon(&cand.settings.hash());
        if stopped > 0 {
            self.ui().info(&format!(
                "stopped {stopped} build(s) started ahead on {}: it was not kept",
                cand.label()
            ));
        }
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
            basis: None,
        };
        let toolchain = self.plan.rustc.version.clone();
        let dir = self.plan.optimize_dir.clone();
        (self.ahead).start_urgent(&self.plan.project, dir, &toolchain, job);
    }

    /// [`Context::build_ahead`] once the current stage's comparisons are timed
    /// ([`Context::start_deferred`]), not before: a build for a later stage started now
    /// would take the cores this stage's own builds use; started after it, it builds beside
    /// the next stage's build.
    /// Figures: docs/src/decisions.md, "BOLT's input is built beside the PGO build".
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

/// Builder `id`: take the next queued job until none is left, handing each result over.
fn build_queued(
    shared: &(Mutex<AheadState>, Condvar),
    id: u64,
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
            match &job {
                Some(j) => {
                    let running = Some((j.settings.hash(), j.basis.clone()));
                    if let Some(b) = s.builders.get_mut(&id) {
                        b.running = running;
                    }
                }
                None => {
                    s.active -= 1;
                    s.builders.remove(&id);
                }
            }
            job
        };
        let Some(job) = job else {
            return;
        };
        let done = cache.build(project, &job.settings, &job.target_dir, &mut |_| {});
        hand_over(shared, Some(id), job.settings.hash(), done);
    }
}

/// The build of `hash` is `done` (by builder `builder`, else an urgent one): for
/// [`Ahead::take`], unless it was cancelled (then [`Ahead::cancel_urgent`] or
/// [`Ahead::abandon`] took it out of `pending` already: the same settings asked for again
/// since are another build's).
fn hand_over(
    (lock, ready): &(Mutex<AheadState>, Condvar),
    builder: Option<u64>,
    hash: String,
    done: Finished,
) {
    let mut s = lock.lock().unwrap();
    if let Some(b) = builder.and_then(|id| s.builders.get_mut(&id)) {
        b.running = None;
    }
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
        let mut sleeper = sleeper(&cancel);
        ahead.shared.0.lock().unwrap().pending.insert(hash.clone());
        ahead.urgent.lock().unwrap().push((hash.clone(), cancel));
        assert_eq!(ahead.cancel_urgent(), 1);
        assert!(!ahead.has(&settings()), "no longer pending");
        let status = sleeper.wait().unwrap();
        crate::sys::interrupt::release(sleeper.id());
        assert_eq!(crate::sys::exit_signal(&status), Some(9), "killed");
        let failed = Err(CargoError::Alloc("killed".into()));
        hand_over(&ahead.shared, None, hash.clone(), failed);
        assert!(ahead.take(&settings(), None).is_none(), "nobody's result");
        assert!(ahead.shared.0.lock().unwrap().cancelled.is_empty());
    }

    /// A job on `basis` (none: wanted whatever the ladder keeps), of `settings`.
    #[cfg(unix)]
    fn job(settings: BuildSettings, basis: Option<&str>) -> AheadBuild {
        AheadBuild {
            target_dir: PathBuf::from("unused"),
            settings,
            basis: basis.map(str::to_string),
        }
    }

    #[cfg(unix)]
    #[test]
    fn the_builds_on_a_candidate_not_kept_are_stopped_queued_or_running() {
        let ahead = Ahead::default();
        let on = |flag: &str| settings().with_rustflags(vec![flag.to_string()]);
        let (running, queued, other, free) = (on("-Ca"), on("-Cb"), on("-Cc"), on("-Cd"));
        let cancel = crate::sys::interrupt::Cancel::default();
        let mut sleeper = sleeper(&cancel);
        {
            let mut s = ahead.shared.0.lock().unwrap();
            for (x, basis) in [(&queued, Some("v4")), (&other, Some("max")), (&free, None)] {
                s.pending.insert(x.hash());
                s.queue.push_back(job(x.clone(), basis));
            }
            s.pending.insert(running.hash());
            let running = Some((running.hash(), Some("v4".to_string())));
            s.builders.insert(1, Builder { cancel, running });
        }
        assert_eq!(ahead.abandon("v4"), 2, "the queued one and the running one");
        assert!(!ahead.has(&running) && !ahead.has(&queued));
        assert!(
            ahead.has(&other) && ahead.has(&free),
            "the others stay queued"
        );
        let left: Vec<_> = ahead
            .shared
            .0
            .lock()
            .unwrap()
            .queue
            .iter()
            .map(|j| j.settings.hash())
            .collect();
        assert_eq!(left, [other.hash(), free.hash()], "in their order");
        let status = sleeper.wait().unwrap();
        crate::sys::interrupt::release(sleeper.id());
        assert_eq!(crate::sys::exit_signal(&status), Some(9), "killed");
        let failed = Err(CargoError::Alloc("killed".into()));
        hand_over(&ahead.shared, Some(1), running.hash(), failed);
        assert!(ahead.take(&running, None).is_none(), "nobody's result");
        assert_eq!(ahead.shared.0.lock().unwrap().builders[&1].running, None);
        assert_eq!(ahead.abandon("v4"), 0, "nothing left on it");
    }

    #[cfg(unix)]
    #[test]
    fn a_build_ahead_not_finished_at_the_deadline_is_killed_not_waited_for() {
        let ahead = Ahead::default();
        let (running, queued) = (
            settings(),
            settings().with_rustflags(vec!["-Cb".to_string()]),
        );
        let cancel = crate::sys::interrupt::Cancel::default();
        let mut sleeper = sleeper(&cancel);
        // A live worker, so that `take` waits as it does in a run.
        let (stop, parked) = std::sync::mpsc::channel::<()>();
        let worker = std::thread::spawn(move || {
            let _ = parked.recv();
        });
        ahead.workers.lock().unwrap().push(worker);
        {
            let mut s = ahead.shared.0.lock().unwrap();
            s.pending.insert(running.hash());
            s.pending.insert(queued.hash());
            s.queue.push_back(job(queued.clone(), None));
            let run = Some((running.hash(), None));
            s.builders.insert(
                1,
                Builder {
                    cancel,
                    running: run,
                },
            );
        }
        let started = Instant::now();
        let until = started + Duration::from_millis(300);
        assert!(
            ahead.take(&running, Some(until)).is_none(),
            "not waited for"
        );
        let waited = started.elapsed();
        assert!(waited >= Duration::from_millis(300), "{waited:?}");
        assert!(waited < Duration::from_secs(10), "{waited:?}");
        let status = sleeper.wait().unwrap();
        crate::sys::interrupt::release(sleeper.id());
        assert_eq!(crate::sys::exit_signal(&status), Some(9), "killed");
        assert!(!ahead.has(&running));
        // One still queued at the deadline leaves the queue at once.
        assert!(ahead.take(&queued, Some(started)).is_none());
        assert!(!ahead.has(&queued) && ahead.shared.0.lock().unwrap().queue.is_empty());
        // An urgent one (the pgo stage's optimized build) is killed as well.
        let urgent = settings().with_rustflags(vec!["-Cu".to_string()]);
        let set = crate::sys::interrupt::Cancel::default();
        let mut urgent_sleeper = tests::sleeper(&set);
        ahead.shared.0.lock().unwrap().pending.insert(urgent.hash());
        ahead.urgent.lock().unwrap().push((urgent.hash(), set));
        assert!(ahead.take(&urgent, Some(started)).is_none());
        let status = urgent_sleeper.wait().unwrap();
        crate::sys::interrupt::release(urgent_sleeper.id());
        assert_eq!(crate::sys::exit_signal(&status), Some(9), "killed");
        assert!(!ahead.has(&urgent) && ahead.urgent.lock().unwrap().is_empty());
        stop.send(()).unwrap();
        ahead.settle();
    }

    #[cfg(unix)]
    #[test]
    fn a_build_of_the_run_s_own_is_killed_at_the_deadline() {
        let sleep = || {
            let mut cmd = std::process::Command::new("sleep");
            cmd.arg("30");
            let mut child = crate::sys::interrupt::spawn_group(&mut cmd).unwrap();
            let status = child.wait().unwrap();
            crate::sys::interrupt::release(child.id());
            match crate::sys::exit_signal(&status) {
                Some(9) => Err(CargoError::Alloc("killed".into())),
                _ => Ok(()),
            }
        };
        let started = Instant::now();
        let until_ = started + Duration::from_millis(300);
        assert!(matches!(
            until(Some(until_), sleep),
            Err(CargoError::OutOfBudget)
        ));
        let took = started.elapsed();
        assert!(
            took >= Duration::from_millis(300) && took < Duration::from_secs(10),
            "{took:?}"
        );
        // Ended before its deadline, or without one: what it returned.
        let far = Instant::now() + Duration::from_secs(60);
        assert!(matches!(until(Some(far), || Ok(7)), Ok(7)));
        assert!(until(None, || Err::<(), _>(CargoError::OutOfBudget)).is_err());
    }

    /// `sleep 30` in a process group of `set`'s.
    #[cfg(unix)]
    fn sleeper(set: &crate::sys::interrupt::Cancel) -> std::process::Child {
        std::thread::scope(|s| {
            s.spawn(|| {
                set.enter();
                let mut cmd = std::process::Command::new("sleep");
                cmd.arg("30");
                crate::sys::interrupt::spawn_group(&mut cmd).unwrap()
            })
            .join()
            .unwrap()
        })
    }

    #[test]
    fn nothing_queued_is_nothing_to_take_or_wait_for() {
        let ahead = Ahead::default();
        let settings = settings();
        assert!(!ahead.has(&settings));
        assert!(ahead.take(&settings, None).is_none());
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
        assert!(matches!(ahead.take(&settings, None), Some(Err(_))));
        assert!(ahead.take(&settings, None).is_none());
    }

    /// A build deferred to the end of a stage is neither queued nor waited for until it is
    /// taken out, once.
    #[test]
    fn a_deferred_build_is_held_until_it_is_taken_out() {
        let ahead = Ahead::default();
        let settings = settings();
        ahead.defer(vec![("bolt: input".into(), settings.clone())]);
        assert!(!ahead.has(&settings));
        assert!(ahead.take(&settings, None).is_none());
        let held = ahead.take_deferred();
        assert_eq!(held.len(), 1);
        assert_eq!(held[0].1, settings);
        assert!(ahead.take_deferred().is_empty());
    }
}
