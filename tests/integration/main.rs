//! The integration tests, in one test binary (`cargo test --test integration`): each module
//! was a test binary of its own. Tests run in parallel threads; see `common` for the locks
//! that keep apart the ones that must not overlap.
//!
//! Unix only: they run the real toolchain on fixtures through `/bin/sh` scripts, symlinks
//! and Unix modes; on Windows this binary is empty (the crate itself builds there, which
//! the `platforms` module checks with clippy for each target).
//!
//! They build the fixture crates under `tests/fixtures/` with the real rustc, llvm-profdata
//! and llvm-bolt and run the real binary; every report a test reads is parsed into the typed
//! `Report` and must re-serialise to the same JSON. No verdict depends on a timer's figure:
//! where a test needs a stage kept, its fixture plants a difference far beyond noise
//! (`pgo-bolt-wins`: an indirect call PGO makes direct, then 256 functions on 4 KiB
//! boundaries that BOLT packs; `gate-chain`: sleeps per candidate), and where either outcome
//! is legitimate the test asserts what each prints. A test never returns early unseen:
//! `common::missing_tool` (a tool `scripts/test` installs) fails under `CI=true`, and
//! `common::skip` (what the machine cannot do) is counted in `scripts/test`'s closing line.
//!
//! - `report`: the frozen demo report (`tests/fixtures/reports/demo/`, with the expected
//!   `report.md` and `ladder.txt`), and its HTML page loaded in headless Chromium, failing on
//!   any console message (a probe page first checks that errors do show up);
//! - the workflows `ci --github` and `release --emit-ci github` write are linted with
//!   actionlint (`common::lint_workflow`), and their `run:` steps shellchecked and run by bash
//!   with this build on PATH (`common::workflow_steps`, `run_workflow_step`, `shellcheck_steps`);
//! - `platforms`: `cargo clippy --all-targets --target T -- -D warnings` for aarch64 Linux,
//!   both macOS targets and Windows, in `target/tmp/platforms`;
//! - `docs`: every `cargo optimize …` command line of README.md and `docs/` (code blocks and
//!   inline code; a usage line's `[optional]` parts both ways, each `a|b` alternative) parsed
//!   by `Cli::try_parse_from`, every relative link checked, and the report.json page checked
//!   against a real report (the spec page is checked by the unit test `spec::reference`).
//!
//! `scripts/setup` installs what the tool needs to run (llvm-tools, bolt-N, perf);
//! `scripts/test` (which `.ci/run` runs) runs it, installs what only the tests use (clippy
//! and the cross targets, Chromium, sccache, actionlint, shellcheck, qemu-user,
//! gcc-aarch64-linux-gnu, llvm-14, mdbook), builds the book, runs `cargo test` and counts the
//! skips. The unit tests sit beside the code; `src/layers.rs` and `src/limits.rs` keep the
//! layers and the size limits.
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
mod confine;
mod coverage;
mod cross;
mod docs;
mod faults_apply;
mod faults_proc;
mod fleet;
mod host_library;
mod hotspots;
mod interrupt;
mod ladder;
mod library;
mod lockfile;
mod metric;
mod pipeline;
mod platforms;
mod release;
mod report;
mod stages;
mod verify;
mod zero_config;
