//! Toolchain and machine facts: rustc and its LLVM version, LLVM tool discovery
//! (llvm-profdata, llvm-bolt, merge-fdata, perf2bolt) matched to rustc's LLVM major,
//! CPU model/features/x86-64 level, perf capability; and the `doctor` command built on them.
//!
//! Must not: run cargo (cargo.rs) or spawn workloads; it runs tools only through
//! `process::run_tool`/`process::tool_stdout`.

use std::path::PathBuf;

/// What `rustc -vV` says.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Rustc {
    /// e.g. "rustc 1.95.0 (59807616e 2026-04-14)"
    pub version: String,
    /// e.g. "x86_64-unknown-linux-gnu"
    pub host: String,
    /// e.g. "22.1.2"
    pub llvm_version: String,
    pub llvm_major: u32,
    pub sysroot: PathBuf,
}

/// A found LLVM tool.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Tool {
    pub path: PathBuf,
    /// Its own version line, e.g. "LLVM version 22.1.2".
    pub version: String,
    pub llvm_major: Option<u32>,
}

/// The BOLT tool set, all of one LLVM major.
#[derive(Debug, Clone, serde::Serialize)]
pub struct BoltTools {
    pub llvm_bolt: Tool,
    pub merge_fdata: Tool,
    pub perf2bolt: Option<Tool>,
}

/// A missing or mismatched tool: what is wrong and the exact command that fixes it.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{problem}\n  fix: {fix}")]
pub struct ToolError {
    pub problem: String,
    pub fix: String,
}

pub fn rustc() -> anyhow::Result<Rustc> {
    unimplemented!()
}

/// llvm-profdata whose LLVM major equals rustc's: rustup's llvm-tools first, then
/// `llvm-profdata-N`, `/usr/lib/llvm-N/bin/llvm-profdata`, plain `llvm-profdata`.
pub fn llvm_profdata(_rustc: &Rustc) -> Result<Tool, ToolError> {
    unimplemented!()
}

/// llvm-bolt + merge-fdata (+ perf2bolt) of rustc's LLVM major.
pub fn bolt_tools(_rustc: &Rustc) -> Result<BoltTools, ToolError> {
    unimplemented!()
}

/// `cargo optimize doctor`: print the facts (or JSON), fix what `--fix` can; exit code 1
/// when something the default pipeline needs is missing.
pub fn doctor_command(_args: &crate::cli::DoctorArgs) -> anyhow::Result<i32> {
    anyhow::bail!("not yet")
}
