//! The baseline: the binary exactly as the user builds it today (`cargo build --profile
//! <p>` with their features, target and rustflags). Everything is measured against it;
//! the pipeline builds it before the ladder (it offers nothing itself).

use super::{Candidate, Context, StageError};
use crate::cargo::BuildSettings;
use crate::spec::StageName;

pub fn build(ctx: &Context, settings: BuildSettings) -> Result<Candidate, StageError> {
    Ok(super::build_candidate(ctx, StageName::Baseline, settings, Default::default())?.0)
}
