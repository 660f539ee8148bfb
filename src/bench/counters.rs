//! Hardware performance counters (cycles, instructions, branch misses, cache misses) around
//! a child's run, through `perf_event_open`.
//!
//! Owns: probing whether the machine allows counting, opening the counters, reading them.
//! Must not: spawn processes (`process` does) or fail a benchmark — where the kernel, the
//! hypervisor or `perf_event_paranoid` refuse, everything degrades to "not supported".
//!
//! How a child is counted: the counters are opened on the calling thread with `inherit`
//! set, user space only, enabled just before `process::run` spawns the child and disabled
//! after it has been reaped. The kernel folds the counts of an inherited child (and of its
//! descendants) into the parent's counter when the child exits. The counts therefore also
//! include cargo-optimize's own small user-space work during the run (fork and the pipe
//! drain threads); that part is the same for A and B. Counters open on *this* thread, so
//! a `CounterSet` must be used on the thread that opened it.

use serde::{Deserialize, Serialize};

/// Counts observed over one run; `None` where that counter is not available.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counts {
    pub cycles: Option<u64>,
    pub instructions: Option<u64>,
    pub branch_misses: Option<u64>,
    pub cache_misses: Option<u64>,
}

/// The counter kinds, in `Counts` order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Cycles,
    Instructions,
    BranchMisses,
    CacheMisses,
}

impl Kind {
    pub const ALL: [Kind; 4] = [
        Kind::Cycles,
        Kind::Instructions,
        Kind::BranchMisses,
        Kind::CacheMisses,
    ];

    pub fn name(&self) -> &'static str {
        match self {
            Kind::Cycles => "cycles",
            Kind::Instructions => "instructions",
            Kind::BranchMisses => "branch-misses",
            Kind::CacheMisses => "cache-misses",
        }
    }
}

impl Counts {
    pub fn get(&self, k: Kind) -> Option<u64> {
        match k {
            Kind::Cycles => self.cycles,
            Kind::Instructions => self.instructions,
            Kind::BranchMisses => self.branch_misses,
            Kind::CacheMisses => self.cache_misses,
        }
    }
    #[cfg(target_os = "linux")]
    fn set(&mut self, k: Kind, v: u64) {
        let slot = match k {
            Kind::Cycles => &mut self.cycles,
            Kind::Instructions => &mut self.instructions,
            Kind::BranchMisses => &mut self.branch_misses,
            Kind::CacheMisses => &mut self.cache_misses,
        };
        *slot = Some(v);
    }
}

/// Whether counting is possible here: `Ok(())` or the reason it is not.
#[cfg(test)]
pub(crate) fn probe() -> Result<(), String> {
    CounterSet::open_inherited().map(|_| ())
}

#[cfg(target_os = "linux")]
mod imp {
    use super::{Counts, Kind};
    use perf_event::events::Hardware;
    use perf_event::{Builder, Counter};

    /// Open counters on the calling thread, inherited by the children it spawns.
    pub(crate) struct CounterSet {
        counters: Vec<(Kind, Counter)>,
    }

    fn event(k: Kind) -> Hardware {
        match k {
            Kind::Cycles => Hardware::CPU_CYCLES,
            Kind::Instructions => Hardware::INSTRUCTIONS,
            Kind::BranchMisses => Hardware::BRANCH_MISSES,
            Kind::CacheMisses => Hardware::CACHE_MISSES,
        }
    }

    impl CounterSet {
        /// Open every counter the machine has; an error (with the reason) when it has none.
        pub(crate) fn open_inherited() -> Result<Self, String> {
            let mut counters = Vec::new();
            let mut first_error = None;
            for k in Kind::ALL {
                let built = Builder::new(event(k))
                    .observe_self()
                    .any_cpu()
                    .inherit(true)
                    .exclude_kernel(true)
                    .exclude_hv(true)
                    .build();
                match built {
                    Ok(c) => counters.push((k, c)),
                    Err(e) => {
                        first_error.get_or_insert(e);
                    }
                }
            }
            // Cycles is the one that matters; without it, call the whole thing unsupported.
            if !counters.iter().any(|(k, _)| *k == Kind::Cycles) {
                let why = first_error
                    .map(|e| e.to_string())
                    .unwrap_or_else(|| "no cycles counter".into());
                return Err(format!(
                    "hardware counters not supported here (perf_event_open: {why})"
                ));
            }
            Ok(CounterSet { counters })
        }

        /// Zero and enable the counters (call right before the run).
        pub(crate) fn start(&mut self) -> std::io::Result<()> {
            for (_, c) in &mut self.counters {
                c.reset()?;
                c.enable()?;
            }
            Ok(())
        }

        /// Disable the counters and read them (call after the child was reaped). A counter
        /// that was multiplexed is scaled by enabled/running time.
        pub(crate) fn stop(&mut self) -> Counts {
            let mut counts = Counts::default();
            for (k, c) in &mut self.counters {
                let _ = c.disable();
                if let Ok(ct) = c.read_count_and_time() {
                    if ct.time_running > 0 {
                        let v = (u128::from(ct.count) * u128::from(ct.time_enabled)
                            / u128::from(ct.time_running)) as u64;
                        counts.set(*k, v);
                    } else if ct.time_enabled == 0 {
                        counts.set(*k, ct.count);
                    }
                }
            }
            counts
        }
    }
}

#[cfg(not(target_os = "linux"))]
mod imp {
    use super::Counts;

    pub(crate) struct CounterSet;

    impl CounterSet {
        pub(crate) fn open_inherited() -> Result<Self, String> {
            Err("hardware counters are only supported on Linux".into())
        }
        pub(crate) fn start(&mut self) -> std::io::Result<()> {
            Ok(())
        }
        pub(crate) fn stop(&mut self) -> Counts {
            Counts::default()
        }
    }
}

pub(crate) use imp::CounterSet;

/// Medians of each counter for A and B over a comparison, and B/A of the medians.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CounterSummary {
    pub counters: Vec<CounterComparison>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CounterComparison {
    pub name: String,
    #[serde(deserialize_with = "crate::util::lenient_f64::one")]
    pub median_a: f64,
    #[serde(deserialize_with = "crate::util::lenient_f64::one")]
    pub median_b: f64,
    /// `median_b / median_a`.
    #[serde(deserialize_with = "crate::util::lenient_f64::one")]
    pub ratio: f64,
}

/// Summarize per-run counts (`None` runs had no counters). `None` when nothing was counted.
pub(crate) fn summarize(a: &[Option<Counts>], b: &[Option<Counts>]) -> Option<CounterSummary> {
    let column = |runs: &[Option<Counts>], k: Kind| -> Vec<f64> {
        runs.iter()
            .filter_map(|c| c.and_then(|c| c.get(k)))
            .map(|v| v as f64)
            .collect()
    };
    let counters: Vec<CounterComparison> = Kind::ALL
        .iter()
        .filter_map(|&k| {
            let (ca, cb) = (column(a, k), column(b, k));
            if ca.is_empty() || cb.is_empty() {
                return None;
            }
            let (ma, mb) = (super::stats::median(&ca), super::stats::median(&cb));
            Some(CounterComparison {
                name: k.name().to_string(),
                median_a: ma,
                median_b: mb,
                ratio: if ma > 0.0 { mb / ma } else { f64::NAN },
            })
        })
        .collect();
    (!counters.is_empty()).then_some(CounterSummary { counters })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn probe_never_panics_and_explains() {
        match probe() {
            Ok(()) => {
                // Where counting works, a run of our own busy loop counts cycles.
                let mut set = CounterSet::open_inherited().unwrap();
                set.start().unwrap();
                let mut x = 0u64;
                for i in 0..1_000_000u64 {
                    x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(i));
                }
                let c = set.stop();
                assert!(c.cycles.unwrap_or(0) > 0, "{c:?} {x}");
            }
            Err(why) => assert!(why.contains("not supported"), "{why}"),
        }
    }

    #[test]
    fn summary_of_counts() {
        let c = |cy| {
            Some(Counts {
                cycles: Some(cy),
                ..Counts::default()
            })
        };
        let s = summarize(&[c(100), c(110), c(90)], &[c(200), c(190), c(210)]).unwrap();
        assert_eq!(s.counters.len(), 1);
        assert_eq!(s.counters[0].name, "cycles");
        assert_eq!(s.counters[0].ratio, 2.0);
        assert!(summarize(&[None], &[None]).is_none());
    }
}
