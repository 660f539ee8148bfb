//! Which CPU a comparison's next timed run goes on: both runs of a pair on the same one,
//! when the workload keeps one core busy at a time.
//!
//! Why: on a shared VM the cores are not alike, and not for long: each vCPU's caches are
//! shared with whatever its host core runs, and that changes every few seconds, so one
//! program's run time differs from one vCPU to the other while a loop that touches no
//! memory runs alike on both. Unpinned, the scheduler puts A on one core and B on the
//! other, and a pair's ratio measures the cores; pinned, a pair's two runs, adjacent in
//! time on one core, see the same neighbour, and the same time buys intervals several times
//! narrower. The CPU changes every block of two pairs ([`RUNS_PER_CPU`]), so the ratio is
//! still every allowed core's.
//! Figures: docs/src/decisions.md, "Timed runs are pinned".
//!
//! While builds started ahead go on beside the timing (`context::ahead`), they keep off the
//! last allowed CPU and every pinned run goes there (`sys::interrupt::reserved_cpus`).
//!
//! A program that uses several cores at once is never pinned (one core would serialize
//! it: another program than the one the user runs): the first runs, unpinned, decide
//! ([`MANY_CORES`]). Nothing is pinned where the OS gives no affinity (`sys::allowed_cpus`
//! is empty: macOS, Windows) or allows one CPU only.

/// A run whose CPU time (user + system, its children's included) is above this many times
/// its wall time kept more than one core busy: the comparison is not pinned.
const MANY_CORES: f64 = 1.2;

/// Unpinned runs that decide (a warm-up pair, or a first block's first pair).
const DECIDING_RUNS: u32 = 2;

/// Runs on one CPU before the next: an ABBA block (two pairs), so both runs of a pair
/// share a CPU whether the first block began pinned or not.
const RUNS_PER_CPU: u64 = 4;

/// One comparison's pinning (both sides share it), or one race's on a workload (the
/// rival's and every entrant's runs share it).
#[derive(Debug)]
pub(super) struct Pinning {
    cpus: Vec<usize>,
    state: State,
    /// A race's: the CPU changes with each round ([`Pinning::new_round`]), and pinning
    /// starts at a round's start, so every run of a round (the rival's and the entrants'
    /// runs it pairs with) shares one CPU. A duel's: every [`RUNS_PER_CPU`] runs.
    by_round: bool,
    /// Pinned runs so far (a duel), or rounds so far (a race): which CPU comes next.
    count: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Deciding {
        seen: u32,
    },
    /// Decided to pin, from the next round on (a race).
    Next,
    On,
    Off,
}

impl Pinning {
    /// Pinning over `cpus` (the allowed CPUs; fewer than two: never pinned).
    pub(super) fn new(cpus: Vec<usize>) -> Self {
        let state = match cpus.len() >= 2 {
            true => State::Deciding { seen: 0 },
            false => State::Off,
        };
        Pinning {
            cpus,
            state,
            by_round: false,
            count: 0,
        }
    }

    /// A duel's pinning over the CPUs this process may use; none unless `pinnable` (a
    /// workload's `pin = false`). While builds go on beside the timing
    /// (`sys::interrupt::reserved_cpus`), over the CPU kept for it alone; a workload that
    /// may not go there stops those builds instead ([`Pinning::observe`] too).
    pub(super) fn here(pinnable: bool) -> Self {
        match (pinnable, crate::sys::interrupt::reserved_cpus()) {
            // One CPU, but pinned to it all the same (`new` pins only over two or more).
            (true, Some(cpus)) => Pinning {
                state: State::Deciding { seen: 0 },
                ..Self::new(cpus)
            },
            (false, Some(_)) => {
                crate::sys::interrupt::pause_confined();
                Self::new(Vec::new())
            }
            (true, None) => Self::new(crate::sys::allowed_cpus()),
            (false, None) => Self::new(Vec::new()),
        }
    }

    /// A race's pinning over the CPUs this process may use (see [`Pinning::new_round`]).
    pub(super) fn here_by_round(pinnable: bool) -> Self {
        Pinning {
            by_round: true,
            ..Self::here(pinnable)
        }
    }

    /// A race's next round begins: its runs go on the next CPU.
    pub(super) fn new_round(&mut self) {
        if self.state == State::Next {
            self.state = State::On;
        }
        if self.state == State::On {
            self.count += 1;
        }
    }

    /// The CPU for the next run (`None`: unpinned).
    pub(super) fn next(&mut self) -> Option<usize> {
        if self.state != State::On {
            return None;
        }
        let i = match self.by_round {
            true => self.count,
            false => {
                self.count += 1;
                (self.count - 1) / RUNS_PER_CPU
            }
        };
        Some(self.cpus[i as usize % self.cpus.len()])
    }

    /// What a run cost: while deciding, one that kept more than one core busy turns
    /// pinning off for good, and [`DECIDING_RUNS`] that did not turn it on.
    pub(super) fn observe(&mut self, cpu_secs: f64, wall_secs: f64) {
        let State::Deciding { seen } = self.state else {
            return;
        };
        self.state = if cpu_secs > MANY_CORES * wall_secs {
            // Unpinned, it would share the builds' CPUs (if any go on beside it).
            crate::sys::interrupt::pause_confined();
            State::Off
        } else if seen + 1 >= DECIDING_RUNS {
            match self.by_round {
                true => State::Next,
                false => State::On,
            }
        } else {
            State::Deciding { seen: seen + 1 }
        };
    }

    /// Whether its timed runs went on one CPU a block.
    pub(super) fn pinned(&self) -> bool {
        self.state == State::On
    }
}

#[cfg(test)]
mod tests {
    use super::Pinning;

    #[test]
    fn a_single_threaded_workload_is_pinned_a_block_per_cpu_after_two_runs() {
        let mut p = Pinning::new(vec![2, 5]);
        assert_eq!(p.next(), None);
        p.observe(0.05, 0.06);
        assert_eq!(p.next(), None);
        p.observe(0.06, 0.06);
        assert!(p.pinned());
        let cpus: Vec<Option<usize>> = (0..10).map(|_| p.next()).collect();
        let (a, b) = (Some(2), Some(5));
        assert_eq!(cpus, [a, a, a, a, b, b, b, b, a, a]);
        // Pinned runs cannot show more than one core: nothing turns it off any more.
        p.observe(0.5, 0.1);
        assert!(p.pinned());
    }

    #[test]
    fn a_race_pins_from_the_round_after_it_decided_and_moves_on_each_round() {
        let mut p = Pinning {
            by_round: true,
            ..Pinning::new(vec![0, 1])
        };
        p.new_round();
        for _ in 0..3 {
            assert_eq!(p.next(), None);
            p.observe(0.05, 0.06);
        }
        assert!(!p.pinned(), "decided mid-round: the round ends unpinned");
        assert_eq!(p.next(), None);
        let mut rounds = Vec::new();
        for _ in 0..3 {
            p.new_round();
            rounds.push([p.next(), p.next(), p.next()]);
        }
        let (a, b) = (Some(0), Some(1));
        assert_eq!(rounds, [[b, b, b], [a, a, a], [b, b, b]]);
    }

    #[test]
    fn a_workload_that_used_two_cores_is_never_pinned() {
        let mut p = Pinning::new(vec![0, 1]);
        p.observe(0.05, 0.06);
        p.observe(0.11, 0.06);
        assert!(!p.pinned());
        p.observe(0.05, 0.06);
        assert!((0..8).all(|_| p.next().is_none()));
    }

    #[test]
    fn one_allowed_cpu_or_none_pins_nothing() {
        for cpus in [vec![], vec![3]] {
            let mut p = Pinning::new(cpus);
            p.observe(0.05, 0.06);
            p.observe(0.05, 0.06);
            assert!(!p.pinned() && p.next().is_none());
        }
    }
}
