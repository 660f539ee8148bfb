//! The race: several candidates (entrants) measured together against one rival
//! ([`race_jointly`]). Per workload, rounds run the rival once and every live entrant once, in a
//! fresh random order each round; each entrant's pair of a round is (the round's rival run, the
//! entrant's run), so the rival's runs serve every entrant at once. Each (entrant, workload) is an
//! ordinary [`Drive`](super::drive::Drive) over a queue of those pairs, and the entrants are
//! driven as the groups of [`drive_groups`]: every entrant stops as a duel would (decided,
//! futile, `max_time`), and its runs leave the rounds of a workload once its comparison there
//! has stopped, so the others' rounds get shorter. `max_time` bounds the race's running on a
//! workload (every entrant's clock is the race's: the race's running up to the latest round its
//! comparison has runs from), not each entrant's. With `in_turns` the race is a fixed design
//! instead (the confirmation of what ships and its portable alternative): every entrant takes
//! its fixed pairs on every workload, the workloads taking turns, and nothing stops early.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::rc::Rc;
use std::time::Duration;

use super::comparison::{BenchError, BenchOptions, Comparison, Progress, Side};
use super::joint::{drive_groups, drive_in_turns, GroupResult, Pairing};
use super::source::ProcessSource;
use super::source::{Observation, TimedRuns, PAD_MAX};
use crate::process::{ExitStatus, Lingering};

/// Measure several entrants against one rival: `entrants[j][w]` is entrant `j`'s comparison on workload
/// `w` (`None`: not measured there, e.g. kept from an earlier run) — its `a` the rival (the
/// same command for every entrant of a workload), its `b` the entrant, its `check_b` the entrant's
/// verification on its first run. `done[j]` are entrant `j`'s comparisons kept from earlier
/// runs (its geometric mean counts them, as [`compare_jointly`]'s `done`). One result per
/// entrant: its comparisons, in workload order, or its first error and the index (among its own
/// comparisons) it came from; a failing entrant does not end the others, a failing rival ends
/// them all. `on_progress(j, i, p)` reports entrant `j`'s comparison `i`.
///
/// [`compare_jointly`]: super::compare_jointly
pub(crate) fn race_jointly(
    entrants: &[Vec<Option<Pairing>>],
    done: &[&[Comparison]],
    opts: &BenchOptions,
    on_progress: &mut dyn FnMut(usize, usize, &Progress),
) -> Vec<GroupResult> {
    let workloads = entrants.iter().map(Vec::len).max().unwrap_or(0);
    let mut per_workload = Vec::new();
    for w in 0..workloads {
        let jobs: Vec<Option<&Pairing>> = entrants
            .iter()
            .map(|a| a.get(w).and_then(Option::as_ref))
            .collect();
        let Some(first) = jobs.iter().flatten().next() else {
            per_workload.push(None);
            continue;
        };
        first.a.prime();
        // Every run of a round on one CPU: the rival's run pairs with each entrant's.
        let pinnable = jobs.iter().flatten().all(|j| j.a.pinnable && j.b.pinnable);
        let pin = Rc::new(RefCell::new(super::pin::Pinning::here_by_round(pinnable)));
        let rival = ProcessSource::new(first.a, first.a, first.expected)
            .measuring(first.metric)
            .pinned_with(Rc::clone(&pin));
        let srcs = jobs
            .iter()
            .map(|j| {
                j.map(|j| {
                    j.b.prime();
                    ProcessSource::new(j.a, j.b, j.expected)
                        .checking_b(j.check_b)
                        .measuring(j.metric)
                        .pinned_with(Rc::clone(&pin))
                })
            })
            .collect();
        per_workload.push(Some((rival, srcs)));
    }
    let (mut results, rounds) = race(per_workload, done, opts, on_progress);
    for (j, result) in results.iter_mut().enumerate() {
        let Ok(cs) = result else { continue };
        let mine = rounds
            .iter()
            .flatten()
            .filter(|r| r.borrow().entrants[j].is_some());
        for (r, c) in mine.zip(cs.iter_mut()) {
            let r = r.borrow();
            if let Some(src) = &r.entrants[j] {
                src.fill_in(c);
            }
            if c.lingering == Lingering::None {
                c.lingering = r.rival.lingering();
            }
        }
    }
    results
}

/// The rounds of one workload, kept for what the sources know after the race.
type SharedRounds<S> = Rc<RefCell<Rounds<S>>>;

/// [`race_jointly`] over any sources: per workload, the rival's source (its side A is run)
/// and each entrant's (its side B is run; `None`: the entrant is not measured there). Also returns
/// each workload's rounds, whose sources know what the comparisons report.
pub(crate) fn race<S: TimedRuns>(
    per_workload: Vec<Option<(S, Vec<Option<S>>)>>,
    done: &[&[Comparison]],
    opts: &BenchOptions,
    on_progress: &mut dyn FnMut(usize, usize, &Progress),
) -> (Vec<GroupResult>, Vec<Option<SharedRounds<S>>>) {
    let k = done.len();
    let opts = &race_options(opts, k);
    let rounds: Vec<Option<SharedRounds<S>>> = per_workload
        .into_iter()
        .enumerate()
        .map(|(w, e)| {
            e.map(|(rival, entrants)| {
                let seed = opts.seed ^ (w as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
                Rc::new(RefCell::new(Rounds::new(rival, entrants, seed)))
            })
        })
        .collect();
    // Entrant j's comparisons, each with the workload it is on.
    let mut where_: Vec<Vec<usize>> = vec![Vec::new(); k];
    let mut srcs: Vec<Vec<EntrantSource<S>>> = (0..k).map(|_| Vec::new()).collect();
    for (w, r) in rounds.iter().enumerate() {
        let Some(r) = r else { continue };
        for j in 0..k {
            if r.borrow().entrants.get(j).is_some_and(Option::is_some) {
                where_[j].push(w);
                srcs[j].push(EntrantSource {
                    rounds: Rc::clone(r),
                    entrant: j,
                    pad: 0,
                    clock: Duration::ZERO,
                });
            }
        }
    }
    let mut on_stop = |j: usize, i: usize| {
        if let Some(r) = &rounds[where_[j][i]] {
            r.borrow_mut().live[j] = false;
        }
    };
    let results = match opts.in_turns {
        true => drive_entrants_in_turns(srcs, &where_, opts, on_progress, &mut on_stop),
        false => {
            let mut groups: Vec<&mut [EntrantSource<S>]> =
                srcs.iter_mut().map(Vec::as_mut_slice).collect();
            drive_groups(&mut groups, done, opts, on_progress, &mut on_stop)
        }
    };
    (results, rounds)
}

/// The race as a fixed design (`opts.in_turns`, the confirmation of what ships and its
/// portable alternative): every entrant's comparison on every workload driven by
/// [`drive_in_turns`], ordered by workload so that the entrants of a workload take their turns
/// one after another on the same rounds. `srcs[j][i]` is entrant `j`'s comparison on workload
/// `where_[j][i]`. An error ends the race: every entrant's result is that error.
fn drive_entrants_in_turns<S: TimedRuns>(
    srcs: Vec<Vec<EntrantSource<S>>>,
    where_: &[Vec<usize>],
    opts: &BenchOptions,
    on_progress: &mut dyn FnMut(usize, usize, &Progress),
    on_stop: &mut dyn FnMut(usize, usize),
) -> Vec<GroupResult> {
    // (workload, entrant, index among the entrant's comparisons), in the order of the turns.
    let mut order: Vec<(usize, usize, usize)> = (where_.iter().enumerate())
        .flat_map(|(j, ws)| ws.iter().enumerate().map(move |(i, &w)| (w, j, i)))
        .collect();
    order.sort_unstable();
    let mut by_entrant: Vec<Vec<Option<EntrantSource<S>>>> = (srcs.into_iter())
        .map(|v| v.into_iter().map(Some).collect())
        .collect();
    let mut flat: Vec<EntrantSource<S>> = (order.iter())
        .map(|&(_, j, i)| by_entrant[j][i].take().expect("each comparison once"))
        .collect();
    let driven = drive_in_turns(
        &mut flat,
        opts,
        &mut |x, p| on_progress(order[x].1, order[x].2, p),
        &mut |x| on_stop(order[x].1, order[x].2),
    );
    match driven {
        Ok(cs) => {
            let mut out: Vec<Vec<Option<Comparison>>> =
                where_.iter().map(|ws| vec![None; ws.len()]).collect();
            for (&(_, j, i), c) in order.iter().zip(cs) {
                out[j][i] = Some(c);
            }
            (out.into_iter())
                .map(|cs| Ok(cs.into_iter().map(|c| c.expect("driven")).collect()))
                .collect()
        }
        Err((x, e)) => {
            let w = order[x].0;
            (where_.iter())
                .map(|ws| Err((ws.iter().position(|&v| v == w).unwrap_or(0), again(&e))))
                .collect()
        }
    }
}

/// A run waiting for an entrant's comparison: what it measured, its pad, and the race's clock
/// at the end of its round.
type Queued = (Observation, usize, Duration);

/// The race's options: those of a duel, with `max_time` the race's bound on a workload,
/// `max_time · (k + 1) / 2` for `k` entrants. A round of the race runs `k + 1` programs where a
/// duel's pair runs 2, so while every entrant runs each gets the pairs a duel gets in
/// `max_time`, and once some have stopped the others get more; the race never runs longer
/// than the `k` duels it replaces could (`k · max_time`). Bounded by `max_time` itself, the
/// race of three found a planted 3 % in 66 races of 300 where three duels found it in 158
/// (`a_race_of_three_keeps_the_error_rate_and_costs_less_than_three_duels`).
pub(crate) fn race_options(opts: &BenchOptions, k: usize) -> BenchOptions {
    BenchOptions {
        max_time: opts.max_time.mul_f64((k.max(1) + 1) as f64 / 2.0),
        ..opts.clone()
    }
}

/// One workload's rounds: the rival and every live entrant once each, in a random order.
pub(crate) struct Rounds<S> {
    rng: fastrand::Rng,
    rival: S,
    entrants: Vec<Option<S>>,
    /// Whether entrant `j` still takes part (its comparison here has not stopped).
    live: Vec<bool>,
    /// Per entrant, the runs its comparison has not taken yet: the rival's (`[0]`) and its own
    /// (`[1]`).
    queues: Vec<[VecDeque<Queued>; 2]>,
    /// Per entrant, how its own run failed.
    failed: Vec<Option<BenchError>>,
    /// How the rival's run failed: every entrant's comparison ends with it.
    rival_failed: Option<BenchError>,
}

impl<S: TimedRuns> Rounds<S> {
    fn new(rival: S, entrants: Vec<Option<S>>, seed: u64) -> Self {
        let k = entrants.len();
        Rounds {
            rng: fastrand::Rng::with_seed(seed),
            rival,
            live: entrants.iter().map(Option::is_some).collect(),
            entrants,
            queues: (0..k).map(|_| Default::default()).collect(),
            failed: (0..k).map(|_| None).collect(),
            rival_failed: None,
        }
    }

    /// The race's running on this workload: the rival's and every entrant's.
    pub(crate) fn elapsed(&self) -> Duration {
        self.entrants
            .iter()
            .flatten()
            .map(TimedRuns::elapsed)
            .sum::<Duration>()
            + self.rival.elapsed()
    }

    /// One round: the rival and every live entrant once, in a fresh random order. Each run is
    /// queued with the race's clock at the round's end: an entrant's comparison has taken the
    /// race's time up to the rounds its runs come from.
    fn round(&mut self) {
        let mut order: Vec<Option<usize>> = std::iter::once(None)
            .chain((0..self.entrants.len()).filter(|&j| self.live[j]).map(Some))
            .collect();
        self.rng.shuffle(&mut order);
        self.rival.new_round();
        let mut ran = Vec::new();
        for who in order {
            let pad = self.rng.usize(0..PAD_MAX);
            match who {
                None => match self.rival.run(Side::A, pad) {
                    Ok(o) => ran.push((None, o, pad)),
                    Err(e) => self.rival_failed = Some(e),
                },
                Some(j) => {
                    let src = self.entrants[j].as_mut().expect("a live entrant runs here");
                    match src.run(Side::B, pad) {
                        Ok(o) => ran.push((Some(j), o, pad)),
                        Err(e) => {
                            self.failed[j] = Some(e);
                            self.live[j] = false;
                        }
                    }
                }
            }
            if self.rival_failed.is_some() {
                return;
            }
        }
        let clock = self.elapsed();
        for (who, o, pad) in ran {
            match who {
                Some(j) => self.queues[j][1].push_back((o, pad, clock)),
                None => {
                    for j in (0..self.entrants.len()).filter(|&j| self.live[j]) {
                        self.queues[j][0].push_back((o.clone(), pad, clock));
                    }
                }
            }
        }
    }

    /// Entrant `j`'s next run of `side`: from its queue, else from new rounds.
    fn take(&mut self, j: usize, side: Side) -> Result<Queued, BenchError> {
        let q = usize::from(side == Side::B);
        loop {
            if let Some(run) = self.queues[j][q].pop_front() {
                return Ok(run);
            }
            if let Some(e) = self.failed[j].take() {
                return Err(e);
            }
            if let Some(e) = &self.rival_failed {
                return Err(again(e));
            }
            // Asked for more runs, so its comparison is running: it takes part again.
            self.live[j] = true;
            self.round();
        }
    }
}

/// The rival's error again, for every entrant it ends.
fn again(e: &BenchError) -> BenchError {
    match e {
        BenchError::RunFailed {
            side,
            command,
            status,
            timed_out,
            what,
            stderr_tail,
        } => BenchError::RunFailed {
            side: *side,
            command: command.clone(),
            status: *status,
            timed_out: *timed_out,
            what: what.clone(),
            stderr_tail: stderr_tail.clone(),
        },
        BenchError::Process { side, error } => BenchError::RunFailed {
            side: *side,
            command: String::new(),
            status: ExitStatus {
                code: None,
                signal: None,
            },
            timed_out: false,
            what: error.to_string(),
            stderr_tail: String::new(),
        },
        BenchError::Rejected(why) => BenchError::Rejected(why.clone()),
        BenchError::Metric {
            side,
            command,
            what,
        } => BenchError::Metric {
            side: *side,
            command: command.clone(),
            what: what.clone(),
        },
    }
}

/// Entrant `entrant`'s comparison on one workload: its side A the rival's runs of the rounds, its
/// side B its own.
pub(crate) struct EntrantSource<S> {
    rounds: SharedRounds<S>,
    entrant: usize,
    pad: usize,
    /// The race's clock at the end of the latest round this comparison has runs from.
    clock: Duration,
}

impl<S: TimedRuns> TimedRuns for EntrantSource<S> {
    fn run(&mut self, side: Side, _pad: usize) -> Result<Observation, BenchError> {
        let (o, pad, clock) = self.rounds.borrow_mut().take(self.entrant, side)?;
        self.pad = pad;
        self.clock = self.clock.max(clock);
        Ok(o)
    }
    fn elapsed(&self) -> Duration {
        self.clock
    }
    fn pad_used(&self, _asked: usize) -> usize {
        self.pad
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::comparison::{StopReason, LADDER_MIN_PAIRS};
    use crate::bench::stats;

    /// Runs of `secs · (1 + 1 %·noise)` seconds; the B side fails from its `fail_at`-th run.
    struct Fake {
        rng: fastrand::Rng,
        secs: f64,
        fail_at: Option<u32>,
        runs: u32,
        clock: Duration,
    }

    fn fake(seed: u64, secs: f64, fail_at: Option<u32>) -> Fake {
        Fake {
            rng: fastrand::Rng::with_seed(seed),
            secs,
            fail_at,
            runs: 0,
            clock: Duration::ZERO,
        }
    }

    impl TimedRuns for Fake {
        fn run(&mut self, side: Side, _pad: usize) -> Result<Observation, BenchError> {
            self.runs += 1;
            if side == Side::B && self.fail_at.is_some_and(|n| self.runs >= n) {
                return Err(BenchError::Rejected("wrong output".into()));
            }
            let wall = Duration::from_secs_f64(self.secs * (1.0 + 0.01 * (self.rng.f64() - 0.5)));
            self.clock += wall;
            Ok(Observation::of_wall(wall))
        }
        fn elapsed(&self) -> Duration {
            self.clock
        }
    }

    fn options() -> BenchOptions {
        BenchOptions {
            only_faster: true,
            warmup: 0,
            min_pairs: LADDER_MIN_PAIRS,
            max_pairs: 200,
            max_time: Duration::from_secs(20),
            margin: 0.01,
            seed: 7,
            pairs_past_max_time: 0,
            estimator: Default::default(),
            in_turns: false,
        }
    }

    /// Entrant 0 is 20 % faster, entrant 1 fails its third run, entrant 2 ties, on two workloads (entrant 2
    /// not measured on the second): entrant 1's error is its own, entrant 0 is called faster on
    /// both, and the rival ran once per round — as often as the entrant that ran most.
    #[test]
    fn a_failing_entrant_ends_alone_and_the_rival_serves_every_entrant() {
        let per_workload = (0..2)
            .map(|w| {
                let entrants = vec![
                    Some(fake(w, 0.08, None)),
                    Some(fake(w + 10, 0.1, Some(3))),
                    (w == 0).then(|| fake(w + 20, 0.1, None)),
                ];
                Some((fake(w + 30, 0.1, None), entrants))
            })
            .collect();
        let done: Vec<&[Comparison]> = vec![&[]; 3];
        let (results, rounds) = race(per_workload, &done, &options(), &mut |_, _, _| {});
        let entrant0 = results[0].as_ref().expect("entrant 0 runs to the end");
        assert_eq!(entrant0.len(), 2);
        assert!(entrant0
            .iter()
            .all(|c| c.estimate.verdict == stats::Verdict::Faster));
        assert!(matches!(results[1], Err((0, BenchError::Rejected(_)))));
        assert_eq!(results[2].as_ref().expect("entrant 2 ends").len(), 1);
        for r in rounds.iter().flatten() {
            let r = r.borrow();
            let most = r.entrants.iter().flatten().map(|a| a.runs).max().unwrap();
            assert_eq!(r.rival.runs, most, "one rival run a round");
        }
    }

    /// The fixed design (`in_turns`, the confirmation of what ships and its portable
    /// alternative): every entrant gets exactly its pairs on every workload, none stops at a
    /// verdict, the rival runs once a round for both, and each entrant's estimate is its own.
    #[test]
    fn a_fixed_race_gives_every_entrant_its_pairs_on_one_series_of_the_rival() {
        let per_workload = (0..2)
            .map(|w| {
                let entrants = vec![Some(fake(w, 0.08, None)), Some(fake(w + 10, 0.1, None))];
                Some((fake(w + 30, 0.1, None), entrants))
            })
            .collect();
        let opts = BenchOptions {
            only_faster: false,
            min_pairs: 12,
            max_pairs: 12,
            max_time: Duration::from_secs(600),
            in_turns: true,
            ..options()
        };
        let done: Vec<&[Comparison]> = vec![&[]; 2];
        let (results, rounds) = race(per_workload, &done, &opts, &mut |_, _, _| {});
        for (j, result) in results.iter().enumerate() {
            let cs = result.as_ref().expect("no entrant fails");
            assert_eq!(cs.len(), 2);
            for c in cs {
                assert_eq!((c.n, c.stop), (12, StopReason::MaxPairs), "entrant {j}");
                let faster = c.estimate.verdict == stats::Verdict::Faster;
                assert_eq!(faster, j == 0, "entrant {j}: {:?}", c.estimate);
            }
        }
        for r in rounds.iter().flatten() {
            let r = r.borrow();
            let runs: Vec<u32> = r.entrants.iter().flatten().map(|a| a.runs).collect();
            assert_eq!(runs, [r.rival.runs; 2], "both entrants run every round");
            assert_eq!(r.rival.runs, 12, "a pair a round");
        }
    }
}
