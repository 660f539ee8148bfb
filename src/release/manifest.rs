//! `manifest.json`: what each artifact is and how it was made — its settings, features and
//! rustflags, the PGO profile's hash and what it was trained on (or why it has none), BOLT,
//! the toolchain, the source revision, its size and checksums, and whether it was verified
//! — plus what was left out and why, and the jobs' efficiency summary. A library's artifact
//! (`library`) also says whether it is the file the run measured.
//!
//! A gathered release (`release --gather`) has the same shape: its `toolchain` is `null`
//! when its cells' differ (each artifact then names its own), `jobs` is `null`, and `cells`
//! lists the folders it was gathered from.
//!
//! Must not: build, run or decide anything; it describes what the jobs made.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::matrix::{Artifact, Matrix};
use super::package::Packaged;
pub(crate) use super::package::{CREATED_BY, MANIFEST};
use super::work::State;
use crate::spec::Spec;

/// Bumped when a field is renamed or dropped.
pub(crate) const SCHEMA: u32 = 1;

#[derive(Debug, Serialize)]
pub(crate) struct Manifest {
    pub(crate) schema: u32,
    pub(crate) created_by: &'static str,
    pub(crate) tool_version: &'static str,
    #[serde(rename = "crate")]
    pub(crate) crate_name: String,
    pub(crate) bin: String,
    pub(crate) version: String,
    /// The commit built, and whether the working tree differed from it.
    pub(crate) source: Option<SourceRevision>,
    /// `None` in a gathered release whose cells were built with different toolchains.
    pub(crate) toolchain: Option<Toolchain>,
    /// Where the stages, profile and CPU levels came from.
    pub(crate) choices: Vec<String>,
    pub(crate) artifacts: Vec<ArtifactEntry>,
    /// Targets that could not be built here, with the fix.
    pub(crate) skipped: Vec<Skipped>,
    /// Artifacts that were not packaged, and the job that stopped them.
    pub(crate) failed: Vec<Failed>,
    pub(crate) jobs: serde_json::Value,
    /// A gathered release: the folders it was gathered from.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) cells: Vec<GatheredCell>,
}

/// One folder of a gathered release.
#[derive(Debug, Serialize)]
pub(crate) struct GatheredCell {
    /// The folder's name.
    pub(crate) dir: String,
    pub(crate) artifacts: Vec<String>,
    pub(crate) toolchain: Option<Toolchain>,
    /// The cell's jobs summary.
    pub(crate) jobs: serde_json::Value,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct SourceRevision {
    pub(crate) revision: String,
    pub(crate) dirty: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Toolchain {
    pub(crate) rustc: String,
    pub(crate) llvm: String,
    pub(crate) host: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct ArtifactEntry {
    pub(crate) name: String,
    pub(crate) target: String,
    pub(crate) flavor: String,
    pub(crate) cpu: String,
    pub(crate) features: Vec<String>,
    pub(crate) no_default_features: bool,
    pub(crate) profile: String,
    pub(crate) profile_overrides: BTreeMap<String, String>,
    /// Everything rustc saw (the user's flags first).
    pub(crate) rustflags: Vec<String>,
    #[serde(flatten)]
    pub(crate) packaged: Packaged,
    pub(crate) pgo: Pgo,
    pub(crate) bolt: Applied,
    pub(crate) verified: bool,
    /// How it was verified, or why it was not.
    pub(crate) verification: String,
    /// Trained and verified through cargo's runner for its target (an emulator): which,
    /// and that nothing was timed there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) runner: Option<String>,
    /// In a gathered release: the toolchain of the folder it came from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) toolchain: Option<Toolchain>,
    /// A library a host program loads: what shipped, and whether it is the file measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) library: Option<LibraryShipped>,
}

/// A library's artifact (`release::library`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct LibraryShipped {
    /// `wheel` (built by maturin) or `cdylib` (the measured file itself).
    pub(crate) kind: String,
    /// The file the host loads: `<module><EXT_SUFFIX>` inside the wheel, or `lib<name>.so`.
    pub(crate) file: String,
    /// The run whose choice this is, and the file it measured.
    pub(crate) run: String,
    pub(crate) measured: String,
    /// `same-bytes`, `same-symbols` (a wheel's module against the measured file) or
    /// `measured-file` (the measured file shipped itself).
    pub(crate) identity: String,
    pub(crate) identity_detail: String,
    /// The command that built the wheel.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) built_by: Option<String>,
}

/// A stage applied (with how), or why not.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Applied {
    pub(crate) applied: bool,
    pub(crate) why_not: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Pgo {
    pub(crate) applied: bool,
    pub(crate) why_not: Option<String>,
    /// SHA-256 of the merged profile.
    pub(crate) profile_sha256: Option<String>,
    pub(crate) profile_functions: Option<u64>,
    /// The train workloads it ran.
    pub(crate) trained_on: Vec<String>,
    /// The instrumented build's settings: the same as the artifact's but for the
    /// instrumentation flags — features, target, CPU level and profile included.
    pub(crate) trained_under: Option<TrainedUnder>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct TrainedUnder {
    pub(crate) target: Option<String>,
    pub(crate) features: Vec<String>,
    pub(crate) no_default_features: bool,
    pub(crate) profile: String,
    pub(crate) profile_overrides: BTreeMap<String, String>,
    pub(crate) rustflags: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Skipped {
    pub(crate) target: String,
    pub(crate) reason: String,
    pub(crate) fix: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Failed {
    pub(crate) artifact: String,
    pub(crate) reason: String,
}

/// The manifest's entry for artifact `a`, when it was packaged.
pub(crate) fn entry(
    a: usize,
    art: &Artifact,
    matrix: &Matrix,
    spec: &Spec,
    state: &State,
) -> Option<ArtifactEntry> {
    let packaged = state.packaged[a].clone()?;
    let binary = state.binaries[a].as_ref()?;
    let flavor = &matrix.flavors[art.flavor];
    let settings = &binary.settings;
    let profile = state.profiles[a].as_ref();
    let why_not_pgo = match (&art.cannot_run, art.pgo) {
        (_, true) => None,
        (Some(why), false) => Some(format!("not trained: {why}")),
        (None, false) => Some("pgo is not among the release's stages".to_string()),
    };
    let pgo = Pgo {
        applied: profile.is_some(),
        why_not: why_not_pgo,
        profile_sha256: profile.and_then(|p| crate::store::file_sha256(&p.stable).ok()),
        profile_functions: profile.map(|p| p.stats.functions),
        trained_on: match profile {
            Some(_) => spec
                .workloads
                .iter()
                .filter(|w| w.train)
                .map(|w| w.name.clone())
                .collect(),
            None => Vec::new(),
        },
        trained_under: profile
            .and_then(|p| p.instrumented.as_ref())
            .map(|i| TrainedUnder {
                target: i.target.clone(),
                features: i.features.features.clone(),
                no_default_features: i.features.no_default_features,
                profile: i.profile.clone(),
                profile_overrides: i.profile_overrides.clone(),
                rustflags: i.all_rustflags(),
            }),
    };
    let bolt = Applied {
        applied: art.bolt && state.bolt_skipped[a].is_none(),
        why_not: match (&art.cannot_run, art.bolt, &state.bolt_skipped[a]) {
            (_, true, Some(why)) => Some(why.clone()),
            (_, true, None) => None,
            (Some(why), false, _) => Some(format!("not trained: {why}")),
            (None, false, _) => Some("bolt is not among the release's stages".into()),
        },
    };
    let verification = match (&state.verified[a], &art.cannot_run) {
        (Some(how), _) => how.clone(),
        (None, Some(why)) => format!("not verified: {why}"),
        (None, None) => "not verified".into(),
    };
    Some(ArtifactEntry {
        name: art.name.clone(),
        target: art.target.clone(),
        flavor: flavor.name.clone(),
        cpu: art.cpu.clone(),
        features: settings.features.features.clone(),
        no_default_features: settings.features.no_default_features,
        profile: settings.profile.clone(),
        profile_overrides: settings.profile_overrides.clone(),
        rustflags: settings.all_rustflags(),
        packaged,
        pgo,
        bolt,
        verified: state.verified[a].is_some(),
        verification,
        runner: (art.runner.as_ref())
            .map(|r| runner_note(r, profile.is_some(), state.verified[a].is_some())),
        toolchain: None,
        library: None,
    })
}

/// What an artifact's runner did: trained and verified it (never timed).
fn runner_note(runner: &str, trained: bool, verified: bool) -> String {
    match (trained, verified) {
        (true, true) => format!("trained and verified under `{runner}`; not timed"),
        (true, false) => format!("trained under `{runner}`; not timed"),
        (false, true) => format!("verified under `{runner}`; not timed"),
        (false, false) => format!("cargo's runner `{runner}` was not used; not timed"),
    }
}

pub(crate) fn schema() -> u32 {
    SCHEMA
}
