//! The profile stage (not implemented yet).

use super::{Candidate, Context, StageError};

pub fn prepare(_ctx: &Context, _best: &Candidate) -> Result<Candidate, StageError> {
    Err(StageError::NotAvailable(
        "the profile stage is not available in this version".into(),
    ))
}
