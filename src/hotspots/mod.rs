//! Where a program spends its work, as its merged PGO profile counted it: the functions
//! ranked by their block counts ([`rank`]: share of all counts, cumulative share, calls,
//! crate, and the same grouped by crate and by module), read from a run's profile
//! ([`profile_of`] + [`of_run`], [`for_report`] for report.json's `hotspots`); the `cargo optimize hotspots`
//! outputs ([`render`]: terminal, Markdown, JSON); and a flamegraph of the shipped binary
//! sampled by `perf` ([`flamegraph`]).
//!
//! Counts come from the *train* workloads (the profile's), and a block count is work, not
//! time: a proxy that needs no hardware counters. The instantiations of one generic
//! function (one demangled name) are one row.
//!
//! Must not: build, measure or decide anything; write outside the run folder's
//! `hotspots/`; run a process except through `process`.

pub(crate) mod flamegraph;
pub(crate) mod render;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::report::{HotFunction, Hotspots, Report};
use crate::toolchain::profdata::{self, CountsError, FunctionCounts, Shown};

/// How many hotspots every run keeps in report.json.
pub(crate) const IN_REPORT: usize = 15;

/// The crate and module the C and C++ functions of a whole-program profile are listed under.
pub(crate) const C_GROUP: &str = "C/C++";

/// How many crates and modules the grouping lists.
pub(crate) const GROUPS: usize = 10;

/// A profile's functions ranked by their counts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Ranking {
    /// Every block count of the profile, summed.
    pub total_counts: u64,
    /// Functions (by name) with a non-zero count, and all of them.
    pub functions_with_counts: usize,
    pub functions_in_profile: usize,
    /// The counts of C and C++ functions (whole-program PGO; 0 for a Rust-only profile).
    #[serde(default)]
    pub c_counts: u64,
    /// The hottest functions, hottest first (only functions with counts).
    pub functions: Vec<Ranked>,
    /// Counts by crate and by module, largest first.
    pub crates: Vec<FunctionGroup>,
    pub modules: Vec<FunctionGroup>,
}

/// One function of a [`Ranking`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Ranked {
    /// 1 for the hottest.
    pub rank: usize,
    pub name: String,
    #[serde(rename = "crate")]
    pub crate_name: String,
    pub module: String,
    pub counts: u64,
    /// Of all counts, 0 to 1.
    pub share: f64,
    /// This function's and every hotter one's.
    pub cumulative: f64,
    /// Calls (its entry counter); `None` when the profile does not count entries (rustc's
    /// IR instrumentation counts edges).
    pub entries: Option<u64>,
}

/// The counts of a crate or a module.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FunctionGroup {
    pub name: String,
    /// Its functions with counts.
    pub functions: usize,
    pub counts: u64,
    pub share: f64,
}

/// One function: the counts of every symbol with its demangled name.
struct MergedCounts {
    name: String,
    crate_name: String,
    module: String,
    counts: u64,
    entries: u64,
}

/// Merge symbols of the same name (a generic function's instantiations), by name.
fn merge(counts: &[FunctionCounts]) -> Vec<MergedCounts> {
    let mut by_name: BTreeMap<&str, MergedCounts> = BTreeMap::new();
    for f in counts {
        // C and C++ (whole-program PGO) have no crate path: they are one group of their own.
        let (crate_name, module) = match f.is_rust() {
            true => (f.crate_name().to_string(), f.module()),
            false => (C_GROUP.to_string(), C_GROUP.to_string()),
        };
        let m = by_name.entry(&f.name).or_insert_with(|| MergedCounts {
            name: f.name.clone(),
            crate_name,
            module,
            counts: 0,
            entries: 0,
        });
        m.counts = m.counts.saturating_add(f.total);
        m.entries = m.entries.saturating_add(f.entries);
    }
    by_name.into_values().collect()
}

fn share(part: u64, total: u64) -> f64 {
    if total == 0 {
        0.0
    } else {
        part as f64 / total as f64
    }
}

/// Rank a profile's functions: the `top` hottest (largest counts first, ties by name),
/// and the `groups` largest crates and modules over every function.
pub(crate) fn rank(shown: &Shown, top: usize, groups: usize) -> Ranking {
    let mut merged = merge(&shown.functions);
    let total = merged.iter().fold(0u64, |t, m| t.saturating_add(m.counts));
    // Stable: equal counts stay in name order.
    merged.sort_by_key(|m| std::cmp::Reverse(m.counts));
    let mut cumulative = 0u64;
    let functions = merged
        .iter()
        .filter(|m| m.counts > 0)
        .take(top)
        .enumerate()
        .map(|(i, m)| {
            cumulative += m.counts;
            Ranked {
                rank: i + 1,
                name: m.name.clone(),
                crate_name: m.crate_name.clone(),
                module: m.module.clone(),
                counts: m.counts,
                share: share(m.counts, total),
                cumulative: share(cumulative, total),
                entries: shown.entry_first.then_some(m.entries),
            }
        })
        .collect();
    Ranking {
        total_counts: total,
        // Counted as the profile lists them (one per instantiation), as the coverage line
        // counts them, so the two numbers agree.
        functions_with_counts: shown.functions.iter().filter(|f| f.total > 0).count(),
        functions_in_profile: shown.functions.len(),
        c_counts: (merged.iter())
            .filter(|m| m.crate_name == C_GROUP)
            .fold(0u64, |t, m| t.saturating_add(m.counts)),
        functions,
        crates: group(&merged, |m| &m.crate_name, total, groups),
        modules: group(&merged, |m| &m.module, total, groups),
    }
}

/// The functions with counts summed by `key`, the `n` largest (ties by name).
fn group(
    merged: &[MergedCounts],
    key: fn(&MergedCounts) -> &String,
    total: u64,
    n: usize,
) -> Vec<FunctionGroup> {
    let mut by: BTreeMap<&str, (usize, u64)> = BTreeMap::new();
    for m in merged.iter().filter(|m| m.counts > 0) {
        let e = by.entry(key(m)).or_default();
        e.0 += 1;
        e.1 = e.1.saturating_add(m.counts);
    }
    let mut out: Vec<FunctionGroup> = by
        .into_iter()
        .map(|(name, (functions, counts))| FunctionGroup {
            name: name.to_string(),
            functions,
            counts,
            share: share(counts, total),
        })
        .collect();
    out.sort_by_key(|g| std::cmp::Reverse(g.counts));
    out.truncate(n);
    out
}

impl Ranking {
    /// report.json's record of this ranking, read from `profile`.
    pub fn to_report(&self, profile: &Path) -> Hotspots {
        Hotspots {
            profile: profile.to_path_buf(),
            total_counts: self.total_counts,
            functions_with_counts: self.functions_with_counts,
            functions_in_profile: self.functions_in_profile,
            c_counts: self.c_counts,
            functions: self
                .functions
                .iter()
                .map(|f| HotFunction {
                    name: f.name.clone(),
                    crate_name: f.crate_name.clone(),
                    counts: f.counts,
                    share: f.share,
                    entries: f.entries,
                })
                .collect(),
        }
    }
}

/// The [`IN_REPORT`] hottest functions of `profile`, for report.json (one
/// `llvm-profdata show`).
pub(crate) fn for_report(profdata: &Path, profile: &Path) -> Result<Hotspots, CountsError> {
    let shown = profdata::show(profdata, profile)?;
    Ok(rank(&shown, IN_REPORT, 0).to_report(profile))
}

/// What cannot be ranked, with the fix.
#[derive(Debug, thiserror::Error)]
pub(crate) enum HotspotsError {
    #[error("run `{run}` has no PGO profile (its stages: {stages})\n  fix: run `cargo optimize --stages pgo` first")]
    NoProfile { run: String, stages: String },
    #[error("the PGO profile of run `{run}` ({row}) is gone: {}\n  (removed by `cargo optimize clean`, `cargo optimize cache gc` or [cache] max-size)\n  fix: run `cargo optimize --stages pgo` again", paths.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", "))]
    ProfileGone {
        run: String,
        row: String,
        paths: Vec<PathBuf>,
    },
    #[error("the PGO profile of run `{run}` ({}, given with --pgo-profile) does not belong to this program: it was collected from another one, so its hot functions are not this program's\n  fix: run `cargo optimize --stages pgo` (trained here), or give a profile collected with this project's collector (`cargo optimize profile collect`)", profile.display())]
    ForeignProfile { run: String, profile: PathBuf },
    #[error(transparent)]
    Counts(#[from] CountsError),
}

/// A run's hotspots as `cargo optimize hotspots` shows them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct View {
    pub run_id: String,
    /// The row whose profile this is (`pgo`).
    pub row: String,
    pub profile: PathBuf,
    #[serde(flatten)]
    pub ranking: Ranking,
    /// The flamegraph drawn (`--flamegraph`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flamegraph: Option<PathBuf>,
}

/// The run's merged PGO profile that still exists, and the row it comes from
/// ([`Report::pgo_profile`]).
pub(crate) fn profile_of(report: &Report) -> Result<(String, PathBuf), HotspotsError> {
    let Some(pgo) = report.pgo_profile() else {
        let foreign = report.stages.iter().find_map(|s| {
            let fit = s.facts.profile_fit.as_ref().filter(|f| f.foreign())?;
            Some(
                s.facts
                    .profile_source
                    .clone()
                    .unwrap_or(fit.profile.clone()),
            )
        });
        if let Some(profile) = foreign {
            return Err(HotspotsError::ForeignProfile {
                run: report.run_id.clone(),
                profile,
            });
        }
        let mut stages: Vec<String> = report.stages.iter().map(|s| s.label()).collect();
        stages.dedup();
        return Err(HotspotsError::NoProfile {
            run: report.run_id.clone(),
            stages: stages.join(", "),
        });
    };
    match pgo.existing() {
        Some(p) => Ok((pgo.row.clone(), p.to_path_buf())),
        None => Err(HotspotsError::ProfileGone {
            run: report.run_id.clone(),
            row: pgo.row,
            paths: pgo.paths,
        }),
    }
}

/// The `top` hottest functions of `report`'s `profile` (from [`profile_of`]), read with
/// `profdata`.
pub(crate) fn of_run(
    report: &Report,
    row: String,
    profile: PathBuf,
    profdata: &Path,
    top: usize,
) -> Result<View, HotspotsError> {
    let shown = profdata::show(profdata, &profile)?;
    Ok(View {
        run_id: report.run_id.clone(),
        row,
        profile,
        ranking: rank(&shown, top, GROUPS),
        flamegraph: None,
    })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub(crate) fn f(name: &str, total: u64, entries: u64) -> FunctionCounts {
        FunctionCounts {
            symbol: format!("_Rsym:{name}"),
            name: name.into(),
            total,
            entries,
        }
    }

    /// 1000 counts: hot::Vm::run 600, hot::parse 250 (two instantiations), core::fmt::write
    /// 100, hot::io::read 50, two functions that never ran; entries counted.
    pub(crate) fn sample() -> Shown {
        let functions = vec![
            f("hot::io::read", 50, 5),
            f("core::fmt::write", 100, 20),
            f("hot::parse", 200, 2),
            f("hot::Vm::run", 600, 1),
            f("hot::parse", 50, 1),
            f("hot::never", 0, 0),
            f("alloc::never", 0, 0),
        ];
        Shown {
            functions,
            entry_first: true,
        }
    }

    #[test]
    fn ranks_by_counts_with_shares_and_cumulative_shares() {
        let r = rank(&sample(), 3, 10);
        assert_eq!(r.total_counts, 1000);
        // Counted per instantiation (7 listed, 5 ran), as the coverage line counts them.
        assert_eq!((r.functions_with_counts, r.functions_in_profile), (5, 7));
        let got: Vec<(usize, &str, u64, f64, f64, u64)> = r
            .functions
            .iter()
            .map(|f| {
                (
                    f.rank,
                    f.name.as_str(),
                    f.counts,
                    f.share,
                    f.cumulative,
                    f.entries.unwrap(),
                )
            })
            .collect();
        assert_eq!(
            got,
            [
                (1, "hot::Vm::run", 600, 0.6, 0.6, 1),
                (2, "hot::parse", 250, 0.25, 0.85, 3),
                (3, "core::fmt::write", 100, 0.1, 0.95, 20),
            ]
        );
        assert_eq!(r.functions[0].module, "hot");
        assert_eq!(r.functions[2].crate_name, "core");
    }

    #[test]
    fn c_functions_of_a_whole_program_profile_are_one_group_and_their_share_is_said() {
        let mut shown = sample();
        let c = |symbol: &str, total| FunctionCounts {
            symbol: symbol.into(),
            name: symbol.into(),
            total,
            entries: 0,
        };
        shown.functions.push(c("vm_run", 3000));
        shown.functions.push(c("vm.c;rare", 1000));
        // rustc's C-ABI `main` shim is Rust's.
        shown.functions.push(c("main", 1));
        let r = rank(&shown, 2, 10);
        assert_eq!(r.c_counts, 4000);
        assert_eq!(
            (
                r.functions[0].name.as_str(),
                r.functions[0].crate_name.as_str()
            ),
            ("vm_run", C_GROUP)
        );
        assert_eq!(
            (r.crates[0].name.as_str(), r.crates[0].functions),
            (C_GROUP, 2)
        );
        assert!(r.crates.iter().any(|g| g.name == "main"), "{:?}", r.crates);
        assert_eq!(rank(&sample(), 2, 10).c_counts, 0);
    }

    #[test]
    fn groups_by_crate_and_module_over_every_function() {
        let r = rank(&sample(), 1, 10);
        let crates: Vec<(&str, usize, u64, f64)> = r
            .crates
            .iter()
            .map(|g| (g.name.as_str(), g.functions, g.counts, g.share))
            .collect();
        assert_eq!(crates, [("hot", 3, 900, 0.9), ("core", 1, 100, 0.1)]);
        let modules: Vec<(&str, u64)> = r
            .modules
            .iter()
            .map(|g| (g.name.as_str(), g.counts))
            .collect();
        assert_eq!(modules, [("hot", 850), ("core::fmt", 100), ("hot::io", 50)]);
        assert_eq!(rank(&sample(), 1, 2).modules.len(), 2);
    }

    #[test]
    fn ties_go_by_name_and_an_empty_profile_has_no_shares() {
        let shown = |functions: Vec<FunctionCounts>| Shown {
            functions,
            entry_first: false,
        };
        let r = rank(
            &shown(vec![f("b", 5, 1), f("a", 5, 1), f("c", 0, 0)]),
            10,
            10,
        );
        let names: Vec<&str> = r.functions.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, ["a", "b"]);
        assert_eq!(r.functions[1].cumulative, 1.0);
        // Edge counts are not calls.
        assert_eq!(r.functions[0].entries, None);
        let empty = rank(&shown(vec![f("a", 0, 0)]), 10, 10);
        assert_eq!((empty.total_counts, empty.functions.len()), (0, 0));
        assert!(empty.crates.is_empty());
        assert_eq!(rank(&shown(vec![]), 10, 10).functions_in_profile, 0);
    }

    #[test]
    fn the_report_keeps_name_crate_share_and_calls() {
        let h = rank(&sample(), 2, 0).to_report(Path::new("/c/p.profdata"));
        assert_eq!(h.total_counts, 1000);
        assert_eq!(h.functions.len(), 2);
        assert_eq!(
            h.functions[1],
            HotFunction {
                name: "hot::parse".into(),
                crate_name: "hot".into(),
                counts: 250,
                share: 0.25,
                entries: Some(3)
            }
        );
        assert!((h.listed_share() - 0.85).abs() < 1e-12);
    }
}
