//! Profiles from production (Go's PGO workflow): instead of training on the spec's
//! workloads, profile the program where it really runs and build with that.
//!
//! - `collect`: the binary to deploy — the PGO stage's own instrumented build
//!   (`stage::pgo::instrument_into`, through a `Context` of the plan) of the project's
//!   settings, with the folder it writes into compiled in — and what to tell the operator:
//!   where it writes (`<dir>/default_%m.profraw`, merged online: one file per binary) and
//!   the settings a profile from it is valid for.
//! - `merge`: the hosts' profiles merged, weighted, with the llvm-profdata of rustc's LLVM;
//!   a file it cannot read is dropped and named, one in another LLVM version's format
//!   refuses the merge; a summary (functions, the hottest, through `hotspots::rank`).
//!
//! The merged profile is then used by `cargo optimize --pgo-profile FILE` (the pgo stage's
//! `given` profile), which verifies and measures the build like any candidate.
//!
//! Must not: measure or decide; build other than through the `Context`; run a process
//! except through `process`; write other than the collector's copy and the merged profile.

pub(crate) mod collect;
pub(crate) mod merge;
