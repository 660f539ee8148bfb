//! `check.json`: what one `cargo optimize check` found, typed (Serialize + Deserialize), the
//! one input of every rendering (`render/`).
//!
//! Must not: measure or decide (the fields hold what `gate` decided).

use serde::{Deserialize, Serialize};

use super::gate::{Judgement, LimitOutcome, Mean};

pub(crate) const SCHEMA: u32 = 1;

/// What the working tree was compared with.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Against {
    /// `revision` (`--against`), `baseline` (`--baseline`) or `none` (budgets only).
    pub kind: String,
    /// The revision or the baseline's name as given.
    pub name: String,
    /// The commit it resolved to (a baseline: the commit it was saved at, when known).
    pub commit: Option<String>,
    /// The old binary was here to run interleaved with the new one (the strong
    /// comparison); false when only saved statistics could be compared. With
    /// `byte_identical`, nothing was run either way.
    pub paired: bool,
    /// The new binary has the same bytes as the old one (compared file to file, or to the
    /// saved baseline's SHA-256): no regression is possible, so nothing was verified or
    /// compared; every workload's judgement is `byte-identical`.
    #[serde(default)]
    pub byte_identical: bool,
    /// Why the comparison is weaker, or how the old binary was found (reused build).
    pub notes: Vec<String>,
}

/// One eval workload.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorkloadCheck {
    pub name: String,
    /// The ratio new/old with its interval; `None` when nothing was compared.
    pub ratio: Option<Ratio>,
    pub judgement: Option<Judgement>,
    /// The new build's wall time per run.
    pub time: Option<Mean>,
    /// The new build's wall time of every measured run, in seconds.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub runs_secs: Vec<f64>,
    /// The old side's wall time per run, when known.
    pub old_time: Option<Mean>,
    /// The new build's user + sys time per run.
    pub cpu_time: Option<Mean>,
    /// The new build's peak RSS per run (bytes).
    pub peak_rss: Option<Mean>,
    #[serde(rename = "budgets")]
    pub limits: Vec<LimitOutcome>,
    /// The new build's outputs differ from the old one's: what differs.
    pub output_changed: Option<String>,
    /// With an output change: timed anyway (`--allow-changed-output`).
    pub timed_anyway: bool,
}

impl WorkloadCheck {
    /// Whether this workload fails the check.
    pub fn fails(&self) -> bool {
        self.judgement == Some(Judgement::Regression)
            || self.output_changed.is_some()
            || self.limits.iter().any(|b| b.over)
    }
}

/// new/old with its interval: the engine's estimate (margin = max-regression) and the
/// pairs (paired) or runs of the new build (unpaired) behind it. Reads as the estimate.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Ratio {
    #[serde(flatten)]
    pub estimate: crate::bench::Estimate,
    pub n: u32,
}

impl std::ops::Deref for Ratio {
    type Target = crate::bench::Estimate;
    fn deref(&self) -> &Self::Target {
        &self.estimate
    }
}

/// The new binary's size against the old one's and the limit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SizeCheck {
    pub new_bytes: u64,
    pub old_bytes: Option<u64>,
    pub limit: Option<u64>,
    /// Line of `max-binary-size` in the spec.
    pub line: usize,
    pub over: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CheckReport {
    pub schema: u32,
    pub tool_version: String,
    #[serde(rename = "crate")]
    pub crate_name: String,
    pub bin: String,
    /// The spec file, for messages that point at a line.
    pub spec: String,
    pub against: Against,
    #[serde(deserialize_with = "crate::util::lenient_f64::one")]
    pub max_regression: f64,
    pub workloads: Vec<WorkloadCheck>,
    pub binary_size: SizeCheck,
    /// The geometric mean of new/old over the compared workloads.
    pub overall: Option<Ratio>,
    /// One line per failure (empty: the check passed).
    pub failures: Vec<String>,
    pub exit_code: i32,
    /// Saved as a baseline under this name (`--save-baseline`).
    pub saved_baseline: Option<String>,
    #[serde(deserialize_with = "crate::util::lenient_f64::one")]
    pub seconds: f64,
}

impl CheckReport {
    /// One line per failure, in workload order, then the size.
    pub fn list_failures(&self) -> Vec<String> {
        let mut out = Vec::new();
        for w in &self.workloads {
            if let Some(what) = &w.output_changed {
                out.push(format!("workload `{}`: output changed: {what}", w.name));
            }
            if let (Some(Judgement::Regression), Some(r)) = (w.judgement, &w.ratio) {
                out.push(format!(
                    "workload `{}`: regression: new/old = {} [{:.3}, {:.3}], above the {:.0} % allowed",
                    w.name,
                    format_ratio(r.ratio),
                    r.ci_low,
                    r.ci_high,
                    self.max_regression * 100.0
                ));
            }
            for b in w.limits.iter().filter(|b| b.over) {
                out.push(format!(
                    "workload `{}`: {} budget exceeded: {} ({}:{})",
                    w.name,
                    b.kind,
                    b.describe(),
                    self.spec,
                    b.line
                ));
            }
        }
        let s = &self.binary_size;
        if let (true, Some(limit)) = (s.over, s.limit) {
            out.push(format!(
                "binary size {} > max-binary-size {} ({}:{})",
                crate::util::human_bytes(s.new_bytes),
                crate::util::human_bytes(limit),
                self.spec,
                s.line
            ));
        }
        out
    }
}

/// `1.243×`.
pub(crate) fn format_ratio(r: f64) -> String {
    if r.is_finite() {
        format!("{r:.3}×")
    } else {
        "–".into()
    }
}
