//! The typed facts a stage records about its candidate (`facts` of a stage row in
//! report.json). Every field is optional: each stage fills what it knows. Field names are
//! the report's keys, so they follow its schema rule: add freely, never rename or drop one
//! without bumping the report's schema.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::bench::Estimate;

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct StageFacts {
    /// The candidate's variant within its stage: the cpu stage's target-cpu, `portable`
    /// for the PGO build of the portable best, `lto alone` for `--explain` builds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub variant: Option<String>,
    /// The candidate it was measured against (its label), when it was measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rival: Option<String>,

    // cpu
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_cpu: Option<String>,
    /// What LLVM calls this machine's CPU, for `native`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub native_cpu: Option<String>,

    // profile
    /// The preset's name, or `inline`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub choice: Option<String>,
    /// Profile key → TOML literal.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub overrides: Option<BTreeMap<String, String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cargo_command: Option<String>,
    /// The profile stage's winner: a candidate within its margin that builds faster.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cheaper_alternative: Option<String>,
    /// `--explain`: each profile setting alone against the baseline.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub explain: Option<Vec<Explained>>,

    // alloc
    /// The binary's root file the `#[global_allocator]` item goes into, relative to the
    /// workspace root, and its SHA-256 (64 hex digits) when the run built it: `apply`
    /// writes the item only while the file still has it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alloc_root: Option<AllocRoot>,

    // c-compiler, pgo (whole-program)
    /// The C and C++ build scripts compiled into this build through `cc`, and how much of it
    /// the profile covered (whole-program PGO).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub c_code: Option<CCode>,

    // pgo
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<PgoProfileStats>,
    /// The SHA-256 (64 hex digits) of the profile file the build named (`-Cprofile-use`):
    /// `apply` copies that file only while it has this content (absent in older reports).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile_sha256: Option<String>,
    /// The profile file given with `--pgo-profile` (collected elsewhere, merged with
    /// `cargo optimize profile merge`), when the build used it instead of training here.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile_source: Option<PathBuf>,
    /// How well the PGO profile the build used fits its code: for the pgo stage its own
    /// fresh profile; for the baseline the profile your own rustflags name
    /// (`-Cprofile-use`), which is stale once functions change.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile_fit: Option<PgoProfileFit>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub functions_without_profile: Option<usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instrumented_rustflags: Option<Vec<String>>,
    /// `null` when the default counters sufficed (present for every PGO row).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub vp_counters_per_site: Option<Option<u32>>,
    /// Whether training ran what the eval workloads run (the eval coverage pass).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile_quality: Option<PgoProfileQuality>,

    // fp
    /// The LLVM floating-point options the build passes (`-Cllvm-args=…`): the ones kept
    /// before it and its own, last.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fp_flags: Option<Vec<String>>,
    /// How far the candidate's outputs moved from the baseline's (fp rows).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(rename = "output_drift")]
    pub output_deviation: Option<OutputDeviation>,

    // bolt
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dyno_stats: Option<BTreeMap<String, DynoStat>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bolt: Option<BoltFacts>,
}

/// A field that is present (even as `null`) is `Some`: keeps `null` apart from absent.
fn present<'de, D, T>(d: D) -> Result<Option<Option<T>>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Deserialize<'de>,
{
    Option::<T>::deserialize(d).map(Some)
}

/// The merged PGO profile.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PgoProfileStats {
    pub raw_files: usize,
    pub functions: u64,
    pub max_count: u64,
    /// llvm-profdata's warnings about raw files it dropped.
    pub dropped: Vec<String>,
    pub path: PathBuf,
}

/// How well a PGO profile fits the code built with it, from rustc's (LLVM's) warnings.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PgoProfileFit {
    pub profile: PathBuf,
    /// Functions in the profile (`llvm-profdata show`), when it could be read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile_functions: Option<u64>,
    /// Functions whose control flow changed since the profile was trained ("hash
    /// mismatch"): their counts are discarded and they are optimized without a profile.
    pub changed_functions: usize,
    /// The counts discarded with them (the largest count of each, summed).
    pub discarded_counts: u64,
    /// A given profile (`--pgo-profile`): how many of its functions other than `main` are
    /// functions of the program built with it (its symbol table), of
    /// [`functions_compared`](Self::functions_compared). None or almost none: the profile
    /// was collected from another program ([`PgoProfileFit::foreign`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub functions_in_program: Option<u64>,
    /// The profile's functions other than `main` that were looked for in the program.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub functions_compared: Option<u64>,
}

impl PgoProfileFit {
    /// The profile is another program's: under 1 % of its functions (other than `main`,
    /// which every program has) are in the program built with it — none, for a small one.
    pub fn foreign(&self) -> bool {
        match (self.functions_in_program, self.functions_compared) {
            (Some(found), Some(compared)) => compared > 0 && found * 100 < compared,
            _ => false,
        }
    }

    /// `it does not belong to this program: 0 of its 7 functions (besides main) are in it`.
    pub fn describe_foreign(&self) -> String {
        format!(
            "it does not belong to this program: {} of its {} function(s) (besides `main`) are in it, so it was collected from another program and this build is optimized as if without a profile",
            self.functions_in_program.unwrap_or(0),
            self.functions_compared.unwrap_or(0)
        )
    }

    /// `3 of 120 profiled functions changed since it was trained (their counts are
    /// discarded)`.
    pub fn describe(&self) -> String {
        let of = self
            .profile_functions
            .map(|n| format!(" of {n}"))
            .unwrap_or_default();
        format!(
            "{}{of} profiled function(s) changed since it was trained ({} count(s) discarded: those functions are optimized without the profile)",
            self.changed_functions, self.discarded_counts
        )
    }
}

/// How well the training profile covers what the eval workloads (your real use) run: the
/// eval workloads run once on the instrumented binary, each profile compared with the
/// training's function by function (`stage::pgo::coverage`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PgoProfileQuality {
    /// Functions of the training profile that ran (count above 0).
    pub functions_with_counts: u64,
    /// Every function of the profile: every instrumented function of the binary.
    pub functions_instrumented: u64,
    /// The share (0..1) of eval's counts in functions training also ran; each eval workload
    /// weighs the same (its counts are divided by its own total).
    pub eval_share_in_trained: f64,
    /// The hottest functions in eval that training ran little or not at all, hottest first.
    pub untrained_hot: Vec<UntrainedHot>,
}

impl PgoProfileQuality {
    /// `301 of 1204 functions ran in training; 97.5 % of eval's counts are in trained code`.
    pub fn describe(&self) -> String {
        format!(
            "{} of {} functions ran in training; {:.1} % of eval's counts are in trained code",
            self.functions_with_counts,
            self.functions_instrumented,
            self.eval_share_in_trained * 100.0
        )
    }
}

/// A function hot in eval that training ran little (under 1/20 of its eval share) or not.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UntrainedHot {
    /// Demangled, without the hash.
    pub function: String,
    /// Its share of eval's counts (0..1, each workload weighing the same).
    pub eval_share: f64,
    /// Its share of the training profile's counts (0..1).
    pub train_share: f64,
    /// The eval workload in which it takes the largest share.
    pub workload: String,
}

/// The largest differences between the numbers a candidate printed (or wrote) and the
/// baseline's, over every workload (`verify::deviation`); infinite (`null` in JSON) when a
/// number turned into NaN or an infinity.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct OutputDeviation {
    #[serde(deserialize_with = "crate::util::lenient_f64::one")]
    pub max_abs: f64,
    #[serde(deserialize_with = "crate::util::lenient_f64::one")]
    pub max_rel: f64,
    /// How many numbers differed at all.
    pub numbers_changed: usize,
    /// How many workloads' outputs were compared (those with outputs saved in this run).
    pub workloads: usize,
}

impl OutputDeviation {
    /// The fp row's note: how far the outputs moved.
    pub fn describe(&self) -> String {
        let of = format!(
            "{} workload{}",
            self.workloads,
            if self.workloads == 1 { "" } else { "s" }
        );
        if self.numbers_changed == 0 {
            return format!("outputs: no number moved ({of} compared)");
        }
        let e = |x: f64| match x.is_finite() {
            true => format!("{x:.2e}"),
            false => "∞ (a NaN or infinity appeared)".into(),
        };
        format!(
            "outputs moved: {} number(s) changed over {of}, by at most {} absolute, {} relative",
            self.numbers_changed,
            e(self.max_abs),
            e(self.max_rel)
        )
    }
}

/// One profile setting's own effect, measured alone on top of the baseline (`--explain`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Explained {
    pub setting: String,
    /// TOML literal, e.g. `"fat"` or `1`.
    pub value: String,
    pub binary: Option<String>,
    pub size_bytes: Option<u64>,
    pub build_seconds: Option<f64>,
    /// The binary's code is byte-identical to the baseline's: the base profile already has
    /// this setting, so it is not measured.
    pub same_code_as_baseline: bool,
    /// Time ratio against the baseline (below 1 is faster).
    pub vs_baseline: Option<Estimate>,
    /// Why it could not be built or measured.
    pub error: Option<String>,
}

/// One dyno-stats metric before and after BOLT (profile-weighted counts).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct DynoStat {
    pub before: u64,
    pub after: u64,
}

/// What the BOLT stage did to symbol names too long for BOLT's instrumentation runtime.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Shortened {
    /// Distinct names rewritten.
    pub names: usize,
    /// The longest name before, in bytes.
    pub longest_before: usize,
    /// The longest name after, in bytes.
    pub longest_after: usize,
    /// Over-long names left as they were because another name shares their bytes (a
    /// linker merged a shorter name into the tail of a longer one).
    pub left_shared: usize,
}

impl Shortened {
    /// No name was long enough to shorten (left out of report.json).
    pub fn is_empty(&self) -> bool {
        *self == Shortened::default()
    }
}

/// How the BOLT candidate was made.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BoltFacts {
    /// `instrument` or `perf`, and why.
    pub mode: String,
    pub mode_reason: String,
    pub llvm_bolt: String,
    pub llvm_bolt_version: String,
    pub args: Vec<String>,
    /// llvm-bolt's own time.
    pub seconds: f64,
    pub instrument_seconds: f64,
    pub train_seconds: f64,
    pub input: String,
    /// The input was built anew with `-Wl,-q` (else the best binary was used as is).
    pub input_rebuilt: bool,
    pub size_before_bytes: u64,
    pub input_size_bytes: u64,
    pub output_size_bytes: u64,
    pub stripped_after: bool,
    /// Symbol names too long for BOLT's instrumentation runtime, shortened in its input.
    #[serde(default, skip_serializing_if = "Shortened::is_empty")]
    pub long_names_shortened: Shortened,
    pub fdata_files: usize,
    pub profile: String,
    pub functions_with_profile: Option<u64>,
    pub functions_total: Option<u64>,
    pub warnings: Vec<String>,
    pub log: String,
}

/// Where the alloc stage's item went, and what that file held (see `StageFacts::alloc_root`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct AllocRoot {
    pub file: PathBuf,
    pub sha256: String,
}

/// The C and C++ of a build (see `StageFacts::c_code`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CCode {
    /// The compiler `cc` was given (its version line).
    pub compiler: String,
    /// The functions the build's C objects define, per package.
    pub defined: BTreeMap<String, usize>,
    /// Of those, the ones the PGO profile holds counts for, per package (whole-program
    /// PGO only); the names of the hottest (at most 10).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profiled: Option<BTreeMap<String, usize>>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hottest: Vec<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn null_and_absent_stay_apart() {
        let with_null = StageFacts {
            vp_counters_per_site: Some(None),
            ..Default::default()
        };
        let json = serde_json::to_string(&with_null).unwrap();
        assert_eq!(json, r#"{"vp_counters_per_site":null}"#);
        let back: StageFacts = serde_json::from_str(&json).unwrap();
        assert_eq!(back, with_null);
        let empty: StageFacts = serde_json::from_str("{}").unwrap();
        assert_eq!(serde_json::to_string(&empty).unwrap(), "{}");
    }
}

#[cfg(test)]
mod drift_tests {
    use super::OutputDeviation;

    #[test]
    fn the_note_says_how_far_outputs_moved() {
        let d = OutputDeviation {
            max_abs: 7.1e-14,
            max_rel: 1.7e-15,
            numbers_changed: 1,
            workloads: 1,
        };
        assert_eq!(
            d.describe(),
            "outputs moved: 1 number(s) changed over 1 workload, by at most 7.10e-14 absolute, 1.70e-15 relative"
        );
        let none = OutputDeviation {
            numbers_changed: 0,
            workloads: 2,
            ..d
        };
        assert_eq!(
            none.describe(),
            "outputs: no number moved (2 workloads compared)"
        );
        let nan = OutputDeviation {
            max_rel: f64::INFINITY,
            ..d
        };
        assert!(nan
            .describe()
            .ends_with("∞ (a NaN or infinity appeared) relative"));
    }
}
