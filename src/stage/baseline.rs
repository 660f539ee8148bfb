//! The baseline: the binary exactly as the user builds it today (`cargo build --profile
//! <p>` with their features, target and rustflags). Everything is measured against it;
//! the pipeline builds it before the ladder (it offers nothing itself).
//!
//! When the user's own rustflags name a PGO profile (`-Cprofile-use`, as `apply` prints),
//! the baseline's build says how well that profile still fits the code: functions changed
//! since it was trained lose their counts, so a stale profile is named with how stale it is.

use std::path::PathBuf;

use super::{Ahead, Candidate, Context, Count, Offer, StageError, Standing};
use crate::cargo::BuildSettings;
use crate::context::Plan;
use crate::stages::StageName;

/// The baseline's contract: it offers nothing (the pipeline builds it first, [`build`]),
/// costs the ladder nothing, and the builds ahead are guessed on it.
pub(crate) struct Baseline;

impl super::Stage for Baseline {
    fn offers<'c>(&self, _ctx: &'c Context, _standing: &Standing) -> Vec<Offer<'c>> {
        Vec::new()
    }

    fn count(&self, _plan: &Plan) -> Count {
        Count::exactly(0)
    }

    fn ahead(&self, _ctx: &Context, _stages: &[StageName], best: &BuildSettings) -> Ahead {
        Ahead {
            groups: Vec::new(),
            next_on: Some(best.clone()),
        }
    }
}

pub(crate) fn build(ctx: &Context, settings: BuildSettings) -> Result<Candidate, StageError> {
    let user_profile = profile_use(&settings.user_rustflags);
    let (mut cand, built) =
        super::build_candidate(ctx, StageName::BASELINE, settings, Default::default())?;
    if let Some(profile) = user_profile {
        let mut fit = super::pgo::profile_fit(&built.stderr, &profile);
        if fit.changed_functions > 0 {
            fit.profile_functions = ctx
                .plan
                .llvm_profdata
                .as_ref()
                .and_then(|t| super::pgo::profile_functions(&t.path, &profile));
            let msg = format!(
                "your PGO profile {} is stale: {}\n  fix: train it again on this code (`cargo optimize`, then `cargo optimize apply`)",
                profile.display(),
                fit.describe()
            );
            ctx.ui().warn(&msg);
            cand.notes.push(msg);
        }
        cand.facts.profile_fit = Some(fit);
    }
    Ok(cand)
}

/// The profile the last `-Cprofile-use` in `flags` names.
fn profile_use(flags: &[String]) -> Option<PathBuf> {
    crate::cargo::codegen_option(flags, "profile-use").map(PathBuf::from)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_profile_use_flag_names_the_profile() {
        let flags = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(profile_use(&flags(&["-Copt-level=3"])), None);
        assert_eq!(
            profile_use(&flags(&[
                "-Cprofile-use=/a.profdata",
                "-C",
                "profile-use=b.profdata"
            ])),
            Some(PathBuf::from("b.profdata"))
        );
    }
}
