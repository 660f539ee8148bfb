//! The run report: the `report.json` schema (ARCHITECTURE §5) and its renderings.
//!
//! `report.json` is a contract (the CI gate and other tools read it): add fields freely,
//! never rename or drop one without bumping [`SCHEMA`].

pub mod terminal;

use std::collections::BTreeMap;
use std::path::Path;

use serde::Serialize;

pub const SCHEMA: u32 = 1;

#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub schema: u32,
    pub tool_version: String,
    pub run_id: String,
    #[serde(rename = "crate")]
    pub crate_name: String,
    pub bin: String,
    pub toolchain: ToolchainInfo,
    pub stages: Vec<StageReport>,
    pub workloads: Vec<WorkloadReport>,
    #[serde(rename = "final")]
    pub final_: Option<FinalChoice>,
    pub pipeline: Vec<PipelineStep>,
}

#[derive(Debug, Clone, Serialize)]
pub struct ToolchainInfo {
    pub rustc: String,
    pub llvm: String,
    pub llvm_profdata: Option<String>,
    pub llvm_bolt: Option<String>,
    pub host: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Kept,
    Dropped,
    Rejected,
    Skipped,
    Failed,
}

#[derive(Debug, Clone, Serialize)]
pub struct StageReport {
    pub name: String,
    pub status: Status,
    pub reason: String,
    pub binary: Option<String>,
    pub size_bytes: Option<u64>,
    pub build_seconds: Option<f64>,
    pub settings: Option<serde_json::Value>,
    pub verified: Option<bool>,
    /// `{ratio, ci_low, ci_high, verdict, …}` of the bench engine's estimate.
    pub vs_best: Option<serde_json::Value>,
    pub vs_baseline: Option<serde_json::Value>,
    pub notes: Vec<String>,
    pub facts: serde_json::Map<String, serde_json::Value>,
}

impl StageReport {
    /// A stage that produced nothing (skipped or failed before a candidate existed).
    pub fn without_candidate(name: &str, status: Status, reason: impl Into<String>) -> Self {
        StageReport {
            name: name.to_string(),
            status,
            reason: reason.into(),
            binary: None,
            size_bytes: None,
            build_seconds: None,
            settings: None,
            verified: None,
            vs_best: None,
            vs_baseline: None,
            notes: Vec::new(),
            facts: Default::default(),
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct WorkloadReport {
    pub name: String,
    #[serde(rename = "use")]
    pub uses: Vec<&'static str>,
    /// Per stage: the comparison against the best candidate before it.
    pub per_stage: BTreeMap<String, serde_json::Value>,
    /// Two runs of the baseline agreed. When false, candidates are held to the workload's
    /// exit status only, never rejected on its outputs.
    pub deterministic: bool,
    /// When not deterministic: the first difference between the two runs and the fix
    /// (`{mismatch, suggestion, status_stable}`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nondeterminism: Option<serde_json::Value>,
}

#[derive(Debug, Clone, Serialize)]
pub struct FinalChoice {
    pub stage: String,
    pub binary: String,
    /// baseline time / final time (above 1 is faster); `None` when not measured.
    pub speedup_vs_baseline: Option<f64>,
    pub speedup_ci: Option<(f64, f64)>,
    /// The stage's variant, e.g. the cpu stage's target-cpu.
    pub variant: Option<String>,
    /// The candidate's build settings (same shape as a stage's `settings`).
    pub settings: Option<serde_json::Value>,
    /// The best candidate without a stage `-Ctarget-cpu`: runs on any machine of the target
    /// (the same as the final choice when that one is portable; absent inside itself).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub portable: Option<Box<FinalChoice>>,
}

#[derive(Debug, Clone, Serialize)]
pub struct PipelineStep {
    pub step: String,
    pub seconds: f64,
    pub peak_rss_bytes: Option<u64>,
}

impl Report {
    /// Write `report.json` atomically.
    pub fn write_json(&self, dir: &Path) -> std::io::Result<()> {
        let json = serde_json::to_string_pretty(self).map_err(std::io::Error::other)?;
        let tmp = dir.join("report.json.tmp");
        std::fs::write(&tmp, json + "\n")?;
        std::fs::rename(tmp, dir.join("report.json"))
    }
}
