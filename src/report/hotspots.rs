//! `hotspots` of report.json: the hottest functions of the run's merged PGO profile (where
//! the train workloads spent their counted work), and which profile a run's rows name
//! ([`Report::pgo_profile`]). The ranking itself is `hotspots::rank`; this is the record.
//!
//! Must not: run llvm-profdata or read the profile (the pipeline does, through `hotspots`).

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::{Report, Status};

/// The hottest functions of the run's merged PGO profile (absent when no PGO profile was
/// made, and in reports of older versions).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Hotspots {
    /// The merged profile the counts were read from.
    pub profile: PathBuf,
    /// Every block count of the profile, summed: what a function's share is a share of.
    pub total_counts: u64,
    /// Functions (by demangled name) with a non-zero count.
    pub functions_with_counts: usize,
    /// Functions (by demangled name) in the profile.
    pub functions_in_profile: usize,
    /// The counts of C and C++ functions (whole-program PGO), listed under the crate `C/C++`.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub c_counts: u64,
    /// The hottest functions, hottest first.
    pub functions: Vec<HotFunction>,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// One function of [`Hotspots`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HotFunction {
    /// Demangled, without the hash (the instantiations of a generic function summed).
    pub name: String,
    #[serde(rename = "crate")]
    pub crate_name: String,
    /// Its block counts, summed.
    pub counts: u64,
    /// `counts` over the profile's `total_counts` (0 to 1).
    pub share: f64,
    /// How often it was entered (its entry counter); `null` when the profile does not
    /// count entries (rustc's IR instrumentation counts edges).
    pub entries: Option<u64>,
}

impl Hotspots {
    /// The share of all counts of the functions listed.
    pub fn listed_share(&self) -> f64 {
        self.functions.iter().map(|f| f.share).sum()
    }

    /// Whether a listed function's calls are unknown (see [`HotFunction::entries`]).
    pub fn calls_unknown(&self) -> bool {
        self.functions.iter().any(|f| f.entries.is_none())
    }

    /// Whether any listed function's calls are known (else no calls column is drawn).
    pub fn any_calls(&self) -> bool {
        self.functions.iter().any(|f| f.entries.is_some())
    }
}

/// A calls column's cell: the count, or `-` when the profile did not count it.
pub(crate) fn calls_cell(entries: Option<u64>) -> String {
    entries.map_or_else(|| "-".into(), |n| n.to_string())
}

/// Said under a table where some calls are unknown (`-`, or no calls column at all).
pub(crate) const CALLS_UNKNOWN: &str = "calls are not shown where the profile does not count them: rustc's PGO instrumentation counts the edges of a function's control flow, not its entries";

/// The merged PGO profile a run's rows name: the files that may hold it, best first.
#[derive(Debug, Clone, PartialEq)]
pub struct PgoProfile {
    /// The row it comes from (`pgo`, `pgo (portable)`).
    pub row: String,
    /// The content-addressed copy the build used, then the run folder's merged file.
    pub paths: Vec<PathBuf>,
}

impl PgoProfile {
    /// The first of [`PgoProfile::paths`] that still exists.
    pub fn existing(&self) -> Option<&Path> {
        self.paths
            .iter()
            .map(PathBuf::as_path)
            .find(|p| p.is_file())
    }
}

impl Report {
    /// The merged PGO profile of the run: the shipped pgo row's, else a kept one's, else
    /// the first pgo row's that made one (a dropped PGO build's profile still says where
    /// the work is). `None` when no pgo row has a profile.
    pub fn pgo_profile(&self) -> Option<PgoProfile> {
        pgo_profile(
            &self.stages,
            self.final_.as_ref().map(|f| f.binary.as_str()),
        )
    }
}

/// [`Report::pgo_profile`] over the rows, `shipped` being the final choice's binary.
pub(crate) fn pgo_profile(
    stages: &[super::StageReport],
    shipped: Option<&str>,
) -> Option<PgoProfile> {
    let with_profile: Vec<_> = stages
        .iter()
        .filter(|s| s.name == crate::stages::label_of(crate::stages::Changes::TrainingProfile))
        .filter(|s| s.facts.profile.is_some() || s.facts.profile_fit.is_some())
        // Another program's profile (`--pgo-profile`) says nothing about this one's work.
        .filter(|s| !s.facts.profile_fit.as_ref().is_some_and(|f| f.foreign()))
        .collect();
    let row = with_profile
        .iter()
        .find(|s| shipped.is_some() && s.binary.as_deref() == shipped)
        .or_else(|| with_profile.iter().find(|s| s.status == Status::Kept))
        .or_else(|| with_profile.first())?;
    let flag = row
        .settings
        .iter()
        .flat_map(|s| &s.stage_rustflags)
        .find_map(|f| f.strip_prefix("-Cprofile-use="))
        .map(PathBuf::from);
    let mut paths: Vec<PathBuf> = Vec::new();
    let candidates = [
        row.facts.profile_fit.as_ref().map(|f| f.profile.clone()),
        flag,
        row.facts.profile.as_ref().map(|p| p.path.clone()),
    ];
    for p in candidates.into_iter().flatten() {
        if !paths.contains(&p) {
            paths.push(p);
        }
    }
    Some(PgoProfile {
        row: row.label(),
        paths,
    })
}

/// A small [`Hotspots`] for the renderers' tests.
#[cfg(test)]
pub(crate) fn sample() -> Hotspots {
    let f = |name: &str, crate_name: &str, counts: u64, entries: Option<u64>| HotFunction {
        name: name.into(),
        crate_name: crate_name.into(),
        counts,
        share: counts as f64 / 1000.0,
        entries,
    };
    Hotspots {
        profile: "/t/optimize/cache/ab.profdata".into(),
        total_counts: 1000,
        functions_with_counts: 4,
        functions_in_profile: 9,
        c_counts: 0,
        functions: vec![
            f("demo::interp::Vm::run", "demo", 412, Some(3)),
            f(
                "<alloc::vec::Vec<T> as core::ops::Drop>::drop",
                "alloc",
                250,
                None,
            ),
            f("demo::lex|tokens", "demo", 100, Some(1200)),
        ],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::context::facts::{PgoProfileFit, PgoProfileStats};
    use crate::report::StageReport;

    fn pgo_row(status: Status, binary: &str, merged: &str, cached: Option<&str>) -> StageReport {
        let mut r = StageReport::without_candidate("pgo", status, "why");
        r.binary = Some(binary.into());
        r.facts.profile = Some(PgoProfileStats {
            raw_files: 1,
            functions: 3,
            max_count: 9,
            dropped: vec![],
            path: merged.into(),
        });
        r.facts.profile_fit = cached.map(|c| PgoProfileFit {
            profile: c.into(),
            ..Default::default()
        });
        r
    }

    #[test]
    fn the_shipped_then_a_kept_then_any_pgo_row_names_the_profile() {
        let rows = vec![
            StageReport::without_candidate("baseline", Status::Kept, ""),
            pgo_row(
                Status::Dropped,
                "/b/pgo",
                "/r/pgo.profdata",
                Some("/c/1.profdata"),
            ),
            pgo_row(Status::Kept, "/b/pgo-portable", "/r/port.profdata", None),
        ];
        let p = pgo_profile(&rows, Some("/b/pgo")).unwrap();
        assert_eq!(p.row, "pgo");
        assert_eq!(
            p.paths,
            [
                PathBuf::from("/c/1.profdata"),
                PathBuf::from("/r/pgo.profdata")
            ]
        );
        let kept = pgo_profile(&rows, Some("/b/baseline")).unwrap();
        assert_eq!(kept.paths, [PathBuf::from("/r/port.profdata")]);
        let any = pgo_profile(&rows[..2], None).unwrap();
        assert_eq!(any.paths[0], PathBuf::from("/c/1.profdata"));
        assert_eq!(pgo_profile(&rows[..1], None), None);
        assert_eq!(any.existing(), None);

        // A given profile of another program names no hotspots.
        let mut foreign = rows[..2].to_vec();
        let fit = foreign[1].facts.profile_fit.as_mut().unwrap();
        (fit.functions_in_program, fit.functions_compared) = (Some(0), Some(7));
        assert_eq!(pgo_profile(&foreign, Some("/b/pgo")), None);
    }
}
