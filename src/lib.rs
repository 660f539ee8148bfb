//! cargo-optimize: baseline → profile → cpu → PGO → BOLT, each candidate verified and
//! measured against the best so far; only what measurably helps is kept.

pub mod bench;
pub mod cargo;
pub mod cli;
pub mod pipeline;
pub mod process;
pub mod report;
pub mod spec;
pub mod stage;
pub mod toolchain;
pub mod verify;
