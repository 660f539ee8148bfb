//! The integration tests, in one test binary (`cargo test --test integration`): each module
//! was a test binary of its own. Tests run in parallel threads; see `common` for the locks
//! that keep apart the ones that must not overlap.
//!
//! Unix only: they run the real toolchain on fixtures through `/bin/sh` scripts, symlinks
//! and Unix modes; on Windows this binary is empty (the crate itself builds there, which
//! the `platforms` module checks with clippy for each target).
#![cfg(unix)]

mod common;
mod faults;

mod alloc;
mod apply;
mod bad_input;
mod bench_engine;
mod bolt;
mod c_code;
mod check;
mod cli;
mod compile_cache;
mod coverage;
mod cross;
mod docs;
mod faults_apply;
mod faults_proc;
mod fleet;
mod hotspots;
mod interrupt;
mod ladder;
mod library;
mod metric;
mod pipeline;
mod platforms;
mod release;
mod report;
mod stages;
mod verify;
mod zero_config;
