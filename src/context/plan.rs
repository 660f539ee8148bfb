//! [`Plan`]: what a run does, resolved once from the command line, the spec and the
//! toolchain before anything is built; everything below reads it and never goes back to
//! flags, files or the environment. Resolving it is `pipeline::plan`'s (it reads the command
//! line, a layer above); the type lives here, beside the [`Context`](super::Context) that
//! holds it.

use std::path::PathBuf;

use crate::cargo::{BuildSettings, Project};
use crate::spec::Spec;
use crate::toolchain::{BoltTools, Rustc, Tool, ToolError};
use crate::ui::Ui;

/// One run, resolved.
pub(crate) struct Plan {
    pub project: Project,
    /// The spec with the command line's overrides (`--stages`, `--max-time`) applied.
    pub spec: Spec,
    pub rustc: Rustc,
    /// Looked for only when the pgo stage is tried.
    pub llvm_profdata: Option<Tool>,
    /// Looked for only when the bolt stage is tried.
    pub bolt_tools: Option<Result<BoltTools, ToolError>>,
    /// The baseline's settings: the user's profile, features, target and rustflags.
    pub baseline: BuildSettings,
    /// `target/optimize`.
    pub optimize_dir: PathBuf,
    /// `--explain`: measure each profile setting alone.
    pub explain: bool,
    /// `--fresh`: look up no kept verdict.
    pub fresh: bool,
    /// `--pgo-profile FILE` (absolute, checked): the pgo stage builds with it instead of
    /// training.
    pub pgo_profile: Option<PathBuf>,
    /// The wall time the whole run may take (`--budget`, `[bench] budget`, the default).
    pub budget: std::time::Duration,
    /// `--dry-run`: print the plan and what an earlier run of it cost; build nothing.
    pub dry_run: bool,
    /// `--quick`: pgo only, one eval workload per name, a short budget (`pipeline::plan`).
    pub quick: bool,
    pub ui: Ui,
    /// cargo's runner for `--target`, which the user said is real hardware
    /// (`[bench] runner-is-native`; `pipeline::runner::for_ladder`).
    pub runner: Option<crate::cargo::runner::Runner>,
    /// A build whose BOLT input will be asked for can link that input beside itself
    /// (`cargo::twin`): the target is GNU Linux and its linker is rustc's own.
    pub twin_links: bool,
}
