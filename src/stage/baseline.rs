//! The baseline: the binary exactly as the user builds it today (`cargo build --profile
//! <p>` with their features, target and rustflags). Everything is measured against it.

use super::{Candidate, Context, StageError};
use crate::cargo::BuildSettings;
use crate::spec::StageName;

pub fn prepare(ctx: &Context, settings: BuildSettings) -> Result<Candidate, StageError> {
    let built = ctx.build("baseline", &settings)?;
    let (binary, size_bytes) = ctx.install(StageName::Baseline, &built.binary)?;
    Ok(Candidate {
        stage: StageName::Baseline,
        binary,
        settings,
        size_bytes,
        build_seconds: built.seconds,
        notes: Vec::new(),
        facts: Default::default(),
    })
}
