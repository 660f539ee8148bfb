//! A scheduler for a graph of jobs: `Graph` (jobs in insertion order, each after the jobs it
//! names, so insertion order is topological), `run` (at most `workers` jobs at once, each
//! holding one CPU slot of a GNU make jobserver that cargo started inside a job shares), and
//! the `JobsSummary` of a run (records, CPU time, utilization, critical path).
//!
//! Owns: the order jobs start in, skipping what comes after a job that did not succeed, the
//! jobserver of a run (`current_jobserver`, which `cargo` hands to the cargo it starts),
//! progress lines, the efficiency summary. Must not: know what a job does — releases, cargo,
//! specs or any other module's types (a job is a kind, a name, its dependencies and a
//! payload the caller's `work` interprets).
//!
//! Every wait here is bounded or has a progress guarantee: the loop waits for an event at
//! most `TICK` at a time, a job's end always sends one, and a CPU slot that does not come
//! back while no job runs (so nobody can hold it: a killed child took it with it) is waited
//! for `TOKEN_GRACE`, then the job starts without one.

use std::any::Any;
use std::collections::BTreeSet;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::ui::Ui;

mod summary;
use summary::{by_kind, count};
pub(crate) use summary::{JobsSummary, Record};

/// How long the scheduler waits for an event before looking again.
const TICK: Duration = Duration::from_millis(100);

/// How long a ready job waits for a CPU slot while no job runs before it starts without one
/// (shorter in tests, which keep each under a second).
const TOKEN_GRACE: Duration = Duration::from_millis(if cfg!(test) { 100 } else { 2000 });

/// A job's place in its graph (0-based; shown 1-based).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(transparent)]
pub(crate) struct JobId(pub usize);

/// One unit of work.
#[derive(Debug)]
pub(crate) struct Job<T> {
    /// What sort of work ("build", "train", "verify", "package", …): shown, and the
    /// summary adds up time by it.
    pub kind: &'static str,
    /// Unique within the graph together with `kind`; shown in progress lines.
    pub name: String,
    /// The jobs that must be `Done` before this one starts (all smaller ids).
    pub deps: Vec<JobId>,
    pub payload: T,
}

/// Jobs in insertion order; a job's dependencies were added before it, so insertion order
/// is a topological order.
#[derive(Debug)]
pub(crate) struct Graph<T> {
    jobs: Vec<Job<T>>,
}

impl<T> Default for Graph<T> {
    fn default() -> Self {
        Graph { jobs: Vec::new() }
    }
}

impl<T> Graph<T> {
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// Add a job after `deps`. Panics when a dependency is not already in the graph or the
    /// kind and name are those of a job already in it (a caller's bug).
    pub(crate) fn add(
        &mut self,
        kind: &'static str,
        name: impl Into<String>,
        deps: &[JobId],
        payload: T,
    ) -> JobId {
        let id = JobId(self.jobs.len());
        let name = name.into();
        for d in deps {
            assert!(
                d.0 < id.0,
                "job {kind} {name}: dependency {} is not in the graph yet",
                d.0
            );
        }
        assert!(
            !self.jobs.iter().any(|j| j.kind == kind && j.name == name),
            "job {kind} {name} is in the graph twice"
        );
        let mut deps = deps.to_vec();
        deps.sort();
        deps.dedup();
        self.jobs.push(Job {
            kind,
            name,
            deps,
            payload,
        });
        id
    }

    pub(crate) fn len(&self) -> usize {
        self.jobs.len()
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.jobs.is_empty()
    }

    pub(crate) fn job(&self, id: JobId) -> &Job<T> {
        &self.jobs[id.0]
    }

    pub(crate) fn iter(&self) -> impl Iterator<Item = (JobId, &Job<T>)> + '_ {
        self.jobs.iter().enumerate().map(|(i, j)| (JobId(i), j))
    }

    /// For `--dry-run`: every job, numbered from 1, with its kind, name and the numbers it
    /// waits for, then the count of jobs by kind:
    ///
    /// ```text
    ///   1  build  fast/portable
    ///   2  train  fast/portable  after 1
    /// 2 jobs: 1 build, 1 train
    /// ```
    pub(crate) fn render(&self) -> String {
        let w = self.len().to_string().len();
        let kw = self.jobs.iter().map(|j| j.kind.len()).max().unwrap_or(0);
        let nw = self
            .jobs
            .iter()
            .map(|j| j.name.chars().count())
            .max()
            .unwrap_or(0);
        let mut out = String::new();
        for (id, job) in self.iter() {
            let after = if job.deps.is_empty() {
                String::new()
            } else {
                let numbers: Vec<String> = job.deps.iter().map(|d| (d.0 + 1).to_string()).collect();
                format!("after {}", numbers.join(", "))
            };
            let line = format!(
                "  {:>w$}  {:<kw$}  {:<nw$}  {after}",
                id.0 + 1,
                job.kind,
                job.name
            );
            out.push_str(line.trim_end());
            out.push('\n');
        }
        let kinds: Vec<String> = by_kind(self.jobs.iter().map(|j| (j.kind, 0.0)))
            .into_iter()
            .map(|(kind, n, _)| format!("{n} {kind}"))
            .collect();
        out.push_str(&count(self.len(), "job"));
        if !kinds.is_empty() {
            out.push_str(": ");
            out.push_str(&kinds.join(", "));
        }
        out.push('\n');
        out
    }
}

/// How a job ended. Serialised as `{"status": "done"}`, `{"status": "failed", "reason": …}`,
/// `{"status": "skipped", "reason": …}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "status", content = "reason", rename_all = "lowercase")]
pub(crate) enum JobOutcome {
    Done,
    Failed(String),
    Skipped(String),
}

/// How much runs at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Options {
    /// At most this many jobs run at once.
    pub workers: usize,
    /// CPU slots, shared by the running jobs and every cargo they start: each running job
    /// holds one, and cargo takes its further ones from the same pool.
    pub tokens: usize,
}

impl Options {
    /// As many CPU slots as the machine has logical CPUs, and as many workers unless told.
    pub(crate) fn for_machine(workers: Option<usize>) -> Options {
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        Options {
            workers: workers.unwrap_or(cpus).max(1),
            tokens: cpus,
        }
    }
}

/// The jobservers of the runs going on, newest last (a stack, so that overlapping runs —
/// tests — each clear only their own).
static CURRENT: Mutex<Vec<(u64, jobserver::Client)>> = Mutex::new(Vec::new());
static NEXT_RUN: AtomicU64 = AtomicU64::new(0);

/// The jobserver of the run going on (the newest, if several), for the cargo a job starts:
/// `cargo` passes it on with `configure_make`. `None` outside `run`.
pub(crate) fn current_jobserver() -> Option<jobserver::Client> {
    let current = CURRENT.lock().unwrap_or_else(PoisonError::into_inner);
    current.last().map(|(_, c)| c.clone())
}

/// Makes a client current until dropped (also when unwinding).
struct Current(u64);

impl Current {
    fn set(client: jobserver::Client) -> Current {
        let id = NEXT_RUN.fetch_add(1, Ordering::Relaxed);
        let mut current = CURRENT.lock().unwrap_or_else(PoisonError::into_inner);
        current.push((id, client));
        Current(id)
    }
}

impl Drop for Current {
    fn drop(&mut self) {
        let mut current = CURRENT.lock().unwrap_or_else(PoisonError::into_inner);
        current.retain(|(id, _)| *id != self.0);
    }
}

enum Event {
    /// The helper thread acquired a token (or failed to).
    Token(std::io::Result<jobserver::Acquired>),
    /// A job ended; its token comes back with it.
    Finished {
        id: JobId,
        outcome: JobOutcome,
        seconds: f64,
        token: Option<jobserver::Acquired>,
    },
}

/// What the scheduler may do about a job that is ready.
enum Take {
    Token(jobserver::Acquired),
    /// Start it without a token.
    Without,
    /// Wait for a token.
    Wait,
}

/// The run's CPU slots: the jobserver, tokens in hand, requests outstanding.
struct Slots {
    /// Tokens in hand, not yet given to a job.
    held: Vec<jobserver::Acquired>,
    /// Acquires tokens without blocking the scheduler; `None`: no jobserver (or it broke),
    /// jobs start without tokens, bounded by the workers alone.
    helper: Option<jobserver::HelperThread>,
    _current: Option<Current>,
    /// Tokens asked of the helper and not yet received.
    requested: usize,
    /// Since when a ready job waits for a token while no job runs.
    waiting_since: Option<Instant>,
    warned: bool,
}

impl Slots {
    fn new(tokens: usize, tx: &mpsc::Sender<Event>, ui: &Ui) -> Slots {
        let mut slots = Slots {
            held: Vec::new(),
            helper: None,
            _current: None,
            requested: 0,
            waiting_since: None,
            warned: false,
        };
        let tx = tx.clone();
        let started = jobserver::Client::new(tokens).and_then(|client| {
            let current = client.clone();
            let helper = client.into_helper_thread(move |token| {
                let _ = tx.send(Event::Token(token));
            })?;
            Ok((current, helper))
        });
        match started {
            Ok((client, helper)) => {
                slots._current = Some(Current::set(client));
                slots.helper = Some(helper);
            }
            Err(e) => ui.warn(&format!(
                "cannot start a jobserver ({e}): jobs and the cargo they run do not share CPU slots"
            )),
        }
        slots
    }

    /// A token for the next job, or whether to start it without one or wait.
    fn take(&mut self, running: usize, ui: &Ui) -> Take {
        if let Some(t) = self.held.pop() {
            self.waiting_since = None;
            return Take::Token(t);
        }
        if self.helper.is_none() {
            return Take::Without;
        }
        if running > 0 {
            // A running job gives its token back when it ends.
            self.waiting_since = None;
            return Take::Wait;
        }
        let since = *self.waiting_since.get_or_insert_with(Instant::now);
        if since.elapsed() < TOKEN_GRACE {
            return Take::Wait;
        }
        self.waiting_since = None;
        if !self.warned {
            self.warned = true;
            ui.warn(&format!(
                "no CPU slot came back for {} s while no job ran (a killed process took its slots with it?): jobs start without one when nothing else runs",
                TOKEN_GRACE.as_secs_f64()
            ));
        }
        Take::Without
    }

    /// Hold or have asked for `want` tokens; give back what is in hand beyond that.
    fn balance(&mut self, want: usize) {
        let Some(helper) = &self.helper else {
            self.held.clear();
            return;
        };
        self.held.truncate(want);
        while self.held.len() + self.requested < want {
            helper.request_token();
            self.requested += 1;
        }
    }

    fn received(&mut self, token: std::io::Result<jobserver::Acquired>, ui: &Ui) {
        self.requested = self.requested.saturating_sub(1);
        match token {
            Ok(t) => self.held.push(t),
            Err(e) => {
                ui.warn(&format!(
                    "the jobserver failed ({e}): jobs start without CPU slots from now on"
                ));
                // Dropping the helper joins its thread (bounded: it is interrupted).
                self.helper = None;
                self.requested = 0;
            }
        }
    }
}

/// Where a job is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum JobState {
    Waiting,
    Ready,
    Running,
    Finished,
}

/// Run every job of `graph`: a job starts once all its dependencies are `Done`, a worker
/// is free and it holds a CPU slot; lowest id first. A job after one that failed or was
/// skipped is skipped, naming the job that did not succeed (`after build fast: <why>`);
/// independent jobs go on. A `work` that panics makes its job `Failed("panicked: …")`.
/// Progress goes to `ui` as lines.
pub(crate) fn run<T: Sync>(
    graph: &Graph<T>,
    opts: &Options,
    ui: &Ui,
    work: impl Fn(JobId, &Job<T>) -> JobOutcome + Sync,
) -> JobsSummary {
    let workers = opts.workers.max(1);
    let tokens = opts.tokens.max(1);
    let began = Instant::now();
    let cpu_before = cpu_seconds();
    let (tx, rx) = mpsc::channel::<Event>();
    let mut slots = Slots::new(tokens, &tx, ui);
    let work = &work;

    let records = std::thread::scope(|scope| {
        let mut s = Scheduler::new(graph, ui, began);
        loop {
            s.settle();
            // Start what may start.
            while s.running < workers {
                let Some(&i) = s.ready.first() else { break };
                let token = match slots.take(s.running, ui) {
                    Take::Token(t) => Some(t),
                    Take::Without => None,
                    Take::Wait => break,
                };
                s.begin(i);
                spawn_job(scope, JobId(i), &graph.jobs[i], work, tx.clone(), token);
            }
            let want = match slots.helper {
                Some(_) => s.ready.len().min(workers - s.running),
                None => 0,
            };
            slots.balance(want);
            if s.finished == graph.len() {
                break;
            }
            if s.running == 0 && s.ready.is_empty() {
                s.give_up();
                break;
            }
            match rx.recv_timeout(TICK) {
                Ok(Event::Token(t)) => slots.received(t, ui),
                Ok(Event::Finished {
                    id,
                    outcome,
                    seconds,
                    token,
                }) => {
                    slots.held.extend(token);
                    s.end(id.0, outcome, seconds);
                }
                Err(_) => {}
            }
        }
        s.records.into_iter().flatten().collect::<Vec<Record>>()
    });
    // Give back the tokens in hand, stop the helper, clear the current jobserver.
    drop(slots);
    JobsSummary {
        records,
        wall_seconds: began.elapsed().as_secs_f64(),
        cpu_seconds: (cpu_seconds() - cpu_before).max(0.0),
        workers,
        tokens,
    }
}

/// Run `job` on a thread of `scope`; its end (a panic is a failure) comes back on `done`
/// with the CPU slot it held. A thread that cannot start is a failed job.
fn spawn_job<'scope, 'env, T: Sync>(
    scope: &'scope std::thread::Scope<'scope, 'env>,
    id: JobId,
    job: &'env Job<T>,
    work: &'env (impl Fn(JobId, &Job<T>) -> JobOutcome + Sync),
    done: mpsc::Sender<Event>,
    token: Option<jobserver::Acquired>,
) {
    let failed = done.clone();
    let spawned = std::thread::Builder::new()
        .name(format!("job {}", id.0 + 1))
        .spawn_scoped(scope, move || {
            let t0 = Instant::now();
            let outcome = catch_unwind(AssertUnwindSafe(|| work(id, job))).unwrap_or_else(|p| {
                JobOutcome::Failed(format!("panicked: {}", panic_message(&*p)))
            });
            let _ = done.send(Event::Finished {
                id,
                outcome,
                seconds: t0.elapsed().as_secs_f64(),
                token,
            });
        });
    if let Err(e) = spawned {
        let _ = failed.send(Event::Finished {
            id,
            outcome: JobOutcome::Failed(format!("cannot start a thread for it: {e}")),
            seconds: 0.0,
            token: None,
        });
    }
}

/// Where every job of a run is: waiting, ready (lowest id first), running or finished,
/// with the record of each one that ended.
struct Scheduler<'g, T> {
    graph: &'g Graph<T>,
    ui: &'g Ui,
    began: Instant,
    state: Vec<JobState>,
    records: Vec<Option<Record>>,
    started: Vec<f64>,
    ready: BTreeSet<usize>,
    running: usize,
    finished: usize,
}

impl<'g, T> Scheduler<'g, T> {
    fn new(graph: &'g Graph<T>, ui: &'g Ui, began: Instant) -> Self {
        let n = graph.len();
        Scheduler {
            graph,
            ui,
            began,
            state: vec![JobState::Waiting; n],
            records: (0..n).map(|_| None).collect(),
            started: vec![0.0; n],
            ready: BTreeSet::new(),
            running: 0,
            finished: 0,
        }
    }

    /// `[ 3/12] build pgo (x86_64-…)`.
    fn label(&self, i: usize) -> String {
        let job = &self.graph.jobs[i];
        let n = self.graph.len();
        let w = n.to_string().len();
        format!("[{:>w$}/{n}] {} {}", i + 1, job.kind, job.name)
    }

    fn record(
        &self,
        i: usize,
        outcome: JobOutcome,
        start_seconds: f64,
        seconds: f64,
    ) -> Option<Record> {
        let job = &self.graph.jobs[i];
        Some(Record {
            id: JobId(i),
            kind: job.kind,
            name: job.name.clone(),
            deps: job.deps.clone(),
            outcome,
            start_seconds,
            seconds,
        })
    }

    /// Settle the waiting jobs whose dependencies have all ended: skipped after one that
    /// did not succeed, else ready. Ids are in topological order, so one pass carries a
    /// skip down a whole chain.
    fn settle(&mut self) {
        for i in 0..self.graph.len() {
            if self.state[i] != JobState::Waiting {
                continue;
            }
            let deps = &self.graph.jobs[i].deps;
            let blocked = deps.iter().find_map(|d| match &self.records[d.0] {
                Some(r) if r.outcome != JobOutcome::Done => Some(r),
                _ => None,
            });
            if let Some(cause) = blocked {
                let why = skip_reason(cause);
                self.ui.info(&format!("{} skipped: {why}", self.label(i)));
                let now = self.began.elapsed().as_secs_f64();
                self.records[i] = self.record(i, JobOutcome::Skipped(why), now, 0.0);
                self.state[i] = JobState::Finished;
                self.finished += 1;
            } else if deps.iter().all(|d| self.records[d.0].is_some()) {
                self.state[i] = JobState::Ready;
                self.ready.insert(i);
            }
        }
    }

    fn begin(&mut self, i: usize) {
        self.ready.remove(&i);
        self.state[i] = JobState::Running;
        self.running += 1;
        self.started[i] = self.began.elapsed().as_secs_f64();
        self.ui.step(&self.label(i));
    }

    fn end(&mut self, i: usize, outcome: JobOutcome, seconds: f64) {
        self.running -= 1;
        self.finished += 1;
        self.state[i] = JobState::Finished;
        match &outcome {
            JobOutcome::Done => self.ui.done(&self.label(i), seconds),
            JobOutcome::Failed(why) => self.ui.warn(&format!("{} failed: {why}", self.label(i))),
            JobOutcome::Skipped(why) => self.ui.info(&format!("{} skipped: {why}", self.label(i))),
        }
        self.records[i] = self.record(i, outcome, self.started[i], seconds);
    }

    /// Nothing runs and nothing is ready, yet not every job ended. Cannot happen (the lowest
    /// unfinished job's dependencies have all ended, so it is ready or skipped), but never
    /// wait for nothing: what is left fails.
    fn give_up(&mut self) {
        for i in 0..self.graph.len() {
            if self.records[i].is_none() {
                let why = "never became ready (a scheduler bug)".to_string();
                self.records[i] = self.record(i, JobOutcome::Failed(why), 0.0, 0.0);
            }
        }
    }
}

/// Why a job after `cause` (which failed or was skipped) does not run: the job that did not
/// succeed and its reason. A skipped cause already names the first job up the chain that
/// did not succeed, so a whole chain names that job rather than nesting every link.
fn skip_reason(cause: &Record) -> String {
    match &cause.outcome {
        JobOutcome::Skipped(why) if why.starts_with("after ") => why.clone(),
        JobOutcome::Failed(why) | JobOutcome::Skipped(why) => {
            format!("after {} {}: {why}", cause.kind, cause.name)
        }
        JobOutcome::Done => unreachable!("a job that is done does not hold others back"),
    }
}

fn panic_message(payload: &(dyn Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "(not a message)".to_string()
    }
}

/// User + system CPU seconds of this process and of every child it waited for so far.
fn cpu_seconds() -> f64 {
    crate::sys::cpu_seconds()
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;
    use std::sync::Condvar;

    /// Runs that check `current_jobserver` after they end take this, so no other run is
    /// going on then (the cargo module's test takes it too).
    pub(crate) static SERIAL: Mutex<()> = Mutex::new(());

    pub(crate) fn serial() -> std::sync::MutexGuard<'static, ()> {
        SERIAL.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn opts(workers: usize, tokens: usize) -> Options {
        Options { workers, tokens }
    }

    /// How many `work` calls overlap at most.
    #[derive(Default)]
    struct Overlap {
        now: AtomicUsize,
        max: AtomicUsize,
    }

    impl Overlap {
        fn enter(&self) {
            let now = self.now.fetch_add(1, Ordering::SeqCst) + 1;
            self.max.fetch_max(now, Ordering::SeqCst);
        }
        fn leave(&self) {
            self.now.fetch_sub(1, Ordering::SeqCst);
        }
        fn max(&self) -> usize {
            self.max.load(Ordering::SeqCst)
        }
    }

    fn outcomes(s: &JobsSummary) -> Vec<JobOutcome> {
        s.records.iter().map(|r| r.outcome.clone()).collect()
    }

    #[test]
    fn dependencies_end_before_their_dependents_start() {
        let _serial = serial();
        let mut g = Graph::new();
        let a = g.add("build", "a", &[], ());
        let b = g.add("train", "b", &[a], ());
        let c = g.add("train", "c", &[a], ());
        let d = g.add("merge", "d", &[b, c], ());
        let e = g.add("build", "e", &[], ());
        g.add("package", "f", &[d, e], ());
        g.add("verify", "g", &[b], ());
        let events = Mutex::new(Vec::new());
        let s = run(&g, &opts(3, 3), &Ui::plain(), |id, _| {
            events.lock().unwrap().push((id, true));
            std::thread::sleep(Duration::from_millis(2));
            events.lock().unwrap().push((id, false));
            JobOutcome::Done
        });
        let events = events.into_inner().unwrap();
        let at = |id: JobId, start: bool| events.iter().position(|e| *e == (id, start)).unwrap();
        for (id, job) in g.iter() {
            for d in &job.deps {
                assert!(
                    at(*d, false) < at(id, true),
                    "{d:?} ended after {id:?} began"
                );
            }
        }
        assert_eq!(s.records.len(), 7);
        assert_eq!(s.done(), 7);
        assert!(s.records.iter().enumerate().all(|(i, r)| r.id == JobId(i)));
    }

    #[test]
    fn a_failure_skips_what_comes_after_it_and_nothing_else() {
        let _serial = serial();
        let mut g = Graph::new();
        let a = g.add("build", "fast", &[], true);
        let b = g.add("train", "fast", &[a], false);
        let c = g.add("package", "fast", &[b], false);
        let x = g.add("build", "slow", &[], false);
        g.add("train", "slow", &[x], false);
        g.add("report", "all", &[c, x], false);
        let ran = Mutex::new(Vec::new());
        let s = run(&g, &opts(2, 2), &Ui::plain(), |id, job| {
            ran.lock().unwrap().push(id);
            if job.payload {
                JobOutcome::Failed(format!("{} broke", job.name))
            } else {
                JobOutcome::Done
            }
        });
        let why = "after build fast: fast broke".to_string();
        assert_eq!(
            outcomes(&s),
            vec![
                JobOutcome::Failed("fast broke".into()),
                JobOutcome::Skipped(why.clone()),
                JobOutcome::Skipped(why.clone()),
                JobOutcome::Done,
                JobOutcome::Done,
                JobOutcome::Skipped(why),
            ]
        );
        let mut ran = ran.into_inner().unwrap();
        ran.sort();
        assert_eq!(ran, vec![JobId(0), JobId(3), JobId(4)]);
        assert_eq!((s.failed(), s.skipped()), (1, 3));
    }

    #[test]
    fn a_skipped_job_holds_back_its_dependents_too() {
        let _serial = serial();
        let mut g = Graph::new();
        let a = g.add("bolt", "fast", &[], ());
        g.add("verify", "fast", &[a], ());
        let s = run(&g, &opts(1, 1), &Ui::plain(), |_, _| {
            JobOutcome::Skipped("no llvm-bolt".into())
        });
        assert_eq!(
            outcomes(&s)[1],
            JobOutcome::Skipped("after bolt fast: no llvm-bolt".into())
        );
    }

    #[test]
    fn a_panicking_job_fails() {
        let _serial = serial();
        let mut g = Graph::new();
        let a = g.add("build", "a", &[], ());
        g.add("train", "a", &[a], ());
        g.add("build", "b", &[], ());
        let s = run(&g, &opts(2, 2), &Ui::plain(), |id, _| {
            if id == a {
                panic!("oh {}", "no");
            }
            JobOutcome::Done
        });
        assert_eq!(
            outcomes(&s),
            vec![
                JobOutcome::Failed("panicked: oh no".into()),
                JobOutcome::Skipped("after build a: panicked: oh no".into()),
                JobOutcome::Done,
            ]
        );
    }

    #[test]
    fn one_worker_runs_one_job_at_a_time() {
        let _serial = serial();
        let mut g = Graph::new();
        for i in 0..5 {
            g.add("build", format!("j{i}"), &[], ());
        }
        let overlap = Overlap::default();
        let order = Mutex::new(Vec::new());
        let s = run(&g, &opts(1, 4), &Ui::plain(), |id, _| {
            overlap.enter();
            order.lock().unwrap().push(id);
            std::thread::sleep(Duration::from_millis(5));
            overlap.leave();
            JobOutcome::Done
        });
        assert_eq!(overlap.max(), 1);
        assert_eq!(s.done(), 5);
        // Ready jobs start lowest id first.
        assert_eq!(
            order.into_inner().unwrap(),
            (0..5).map(JobId).collect::<Vec<_>>()
        );
    }

    /// Each job waits (bounded) until at least `need` jobs are inside at once.
    fn handshake(arrived: &(Mutex<usize>, Condvar), need: usize) -> bool {
        let (lock, cvar) = arrived;
        let mut n = lock.lock().unwrap();
        *n += 1;
        cvar.notify_all();
        let (n, timeout) = cvar
            .wait_timeout_while(n, Duration::from_secs(5), |n| *n < need)
            .unwrap();
        drop(n);
        !timeout.timed_out()
    }

    #[test]
    fn several_workers_run_jobs_side_by_side() {
        let _serial = serial();
        let mut g = Graph::new();
        for i in 0..6 {
            g.add("train", format!("w{i}"), &[], ());
        }
        let overlap = Overlap::default();
        let arrived = (Mutex::new(0), Condvar::new());
        let met = AtomicUsize::new(0);
        let s = run(&g, &opts(3, 3), &Ui::plain(), |_, _| {
            overlap.enter();
            if handshake(&arrived, 2) {
                met.fetch_add(1, Ordering::SeqCst);
            }
            overlap.leave();
            JobOutcome::Done
        });
        assert_eq!(s.done(), 6);
        assert_eq!(met.load(Ordering::SeqCst), 6, "jobs never ran side by side");
        assert!((2..=3).contains(&overlap.max()), "{}", overlap.max());
    }

    #[test]
    fn cpu_slots_bound_concurrency_too() {
        let _serial = serial();
        let mut g = Graph::new();
        for i in 0..4 {
            g.add("build", format!("j{i}"), &[], ());
        }
        let overlap = Overlap::default();
        let s = run(&g, &opts(2, 1), &Ui::plain(), |_, _| {
            overlap.enter();
            std::thread::sleep(Duration::from_millis(5));
            overlap.leave();
            JobOutcome::Done
        });
        assert_eq!(s.done(), 4);
        assert_eq!(overlap.max(), 1);
        assert_eq!((s.workers, s.tokens), (2, 1));
    }

    #[test]
    fn the_jobserver_is_current_during_a_run_only() {
        let _serial = serial();
        assert!(current_jobserver().is_none());
        let mut g = Graph::new();
        g.add("build", "a", &[], ());
        let seen = AtomicUsize::new(0);
        run(&g, &opts(1, 1), &Ui::plain(), |_, _| {
            if current_jobserver().is_some() {
                seen.fetch_add(1, Ordering::SeqCst);
            }
            JobOutcome::Done
        });
        assert_eq!(seen.load(Ordering::SeqCst), 1);
        assert!(current_jobserver().is_none());
        // Also when `work` panics, the run ends normally and clears it.
        run(&g, &opts(1, 1), &Ui::plain(), |_, _| panic!("boom"));
        assert!(current_jobserver().is_none());
    }

    #[test]
    fn the_current_jobserver_is_cleared_when_run_unwinds() {
        let _serial = serial();
        let client = jobserver::Client::new(1).unwrap();
        let unwound = std::panic::catch_unwind(|| {
            let _current = Current::set(client);
            assert!(current_jobserver().is_some());
            panic!("the scheduler broke");
        });
        assert!(unwound.is_err());
        assert!(current_jobserver().is_none());
    }

    #[test]
    fn an_empty_graph_runs_nothing() {
        let _serial = serial();
        let s = run(
            &Graph::<()>::new(),
            &opts(2, 2),
            &Ui::plain(),
            |_, _| unreachable!(),
        );
        assert!(s.records.is_empty());
        assert_eq!(s.critical_path(), (Vec::new(), 0.0));
    }

    #[test]
    fn a_child_configured_by_the_jobserver_sees_it() {
        let client = jobserver::Client::new(2).unwrap();
        let mut cmd = std::process::Command::new("sh");
        cmd.args([
            "-c",
            // The read and write fds the flags name must be open in the child.
            r#"echo "$CARGO_MAKEFLAGS"; a=${CARGO_MAKEFLAGS##*--jobserver-auth=}; r=${a%%,*}; w=${a#*,}; w=${w%% *}; [ -e /dev/fd/$r ] && [ -e /dev/fd/$w ] && echo open"#,
        ]);
        client.configure_make(&mut cmd);
        let out = cmd.output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains("--jobserver-auth="), "{text}");
        assert!(text.lines().any(|l| l == "open"), "{text}");
    }

    fn rec(id: usize, kind: &'static str, name: &str, deps: &[usize], secs: f64) -> Record {
        Record {
            id: JobId(id),
            kind,
            name: name.into(),
            deps: deps.iter().copied().map(JobId).collect(),
            outcome: JobOutcome::Done,
            start_seconds: 0.0,
            seconds: secs,
        }
    }

    fn hand_built() -> JobsSummary {
        let mut skipped = rec(5, "package", "fast", &[3], 0.0);
        skipped.outcome = JobOutcome::Skipped("after verify fast: differs".into());
        let mut failed = rec(3, "verify", "fast", &[1, 2], 1.0);
        failed.outcome = JobOutcome::Failed("differs".into());
        JobsSummary {
            records: vec![
                rec(0, "build", "fast", &[], 3.0),
                rec(1, "train", "fast", &[0], 2.0),
                rec(2, "train", "slow", &[0], 5.0),
                failed,
                rec(4, "build", "slow", &[], 8.0),
                skipped,
            ],
            wall_seconds: 10.0,
            cpu_seconds: 15.0,
            workers: 2,
            tokens: 2,
        }
    }

    #[test]
    fn the_critical_path_is_the_longest_measured_chain() {
        let s = hand_built();
        assert_eq!(s.critical_path(), (vec![JobId(0), JobId(2), JobId(3)], 9.0));
        assert_eq!(s.utilization(), 0.75);
    }

    #[test]
    fn the_summary_renders() {
        let s = hand_built();
        assert_eq!(
            s.render(),
            "6 jobs in 10.0 s with 2 workers on 2 CPU slots: 4 done, 1 failed, 1 skipped\n\
             CPU time 15.0 s (user + system, this process and every child) — utilization 75 %\n\
             critical path 9.00 s (90 % of the wall time): build fast 3.00 s → train slow 5.00 s → verify fast 1.00 s\n\
             by kind: build 2 jobs 11.0 s · train 2 jobs 7.00 s · verify 1 job 1.00 s · package 1 job 0 s\n"
        );
    }

    #[test]
    fn the_summary_serialises_with_its_derived_numbers() {
        let v = serde_json::to_value(hand_built()).unwrap();
        assert_eq!(v["utilization"], 0.75);
        assert_eq!(v["critical_path"]["jobs"], serde_json::json!([0, 2, 3]));
        assert_eq!(v["critical_path"]["seconds"], 9.0);
        assert_eq!(v["records"][0]["id"], 0);
        assert_eq!(
            v["records"][0]["outcome"],
            serde_json::json!({"status": "done"})
        );
        assert_eq!(
            v["records"][3]["outcome"],
            serde_json::json!({"status": "failed", "reason": "differs"})
        );
        assert_eq!(v["records"][5]["outcome"]["status"], "skipped");
        assert_eq!(v["records"][3]["deps"], serde_json::json!([1, 2]));
    }

    #[test]
    fn a_graph_renders_for_a_dry_run() {
        let mut g = Graph::new();
        let b = g.add("build", "fast/portable", &[], ());
        let t = g.add("train", "fast/portable", &[b], ());
        let b2 = g.add("build", "slow", &[], ());
        g.add("package", "all", &[t, b2], ());
        assert_eq!(
            g.render(),
            "  1  build    fast/portable\n\
             \x20 2  train    fast/portable  after 1\n\
             \x20 3  build    slow\n\
             \x20 4  package  all            after 2, 3\n\
             4 jobs: 2 build, 1 train, 1 package\n"
        );
        assert_eq!(Graph::<()>::new().render(), "0 jobs\n");
        assert!(!g.is_empty() && Graph::<()>::new().is_empty());
        assert_eq!(
            (g.job(t).kind, g.job(t).deps.as_slice()),
            ("train", &[b][..])
        );
    }

    #[test]
    #[should_panic(expected = "not in the graph yet")]
    fn a_dependency_comes_first() {
        let mut g = Graph::new();
        g.add("build", "a", &[JobId(0)], ());
    }

    #[test]
    fn options_for_the_machine() {
        let o = Options::for_machine(None);
        assert!(o.tokens >= 1);
        assert_eq!(o.workers, o.tokens);
        assert_eq!(Options::for_machine(Some(3)).workers, 3);
        assert_eq!(Options::for_machine(Some(0)).workers, 1);
    }

    #[test]
    fn a_slot_that_never_comes_is_waited_for_a_while_only() {
        let _serial = serial();
        let (tx, _rx) = mpsc::channel();
        let ui = Ui::plain();
        let mut slots = Slots::new(1, &tx, &ui);
        assert!(slots.helper.is_some());
        // Nothing in hand (as when a killed child took every slot with it): a running job
        // will give its slot back, so the scheduler waits; with none running, it waits
        // `TOKEN_GRACE`, then starts the job without one.
        assert!(matches!(slots.take(1, &ui), Take::Wait));
        assert!(matches!(slots.take(0, &ui), Take::Wait));
        std::thread::sleep(TOKEN_GRACE + Duration::from_millis(20));
        assert!(matches!(slots.take(0, &ui), Take::Without));
        assert!(slots.warned);
        // The grace starts again for the next job.
        assert!(matches!(slots.take(0, &ui), Take::Wait));
    }
}
