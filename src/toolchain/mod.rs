//! Toolchain and machine facts: rustc and its LLVM version, LLVM tool discovery
//! (llvm-profdata, llvm-bolt, merge-fdata, perf2bolt) matched to rustc's LLVM major,
//! CPU model/features/x86-64 level, perf capability; and the `doctor` command built on them.
//!
//! Must not: run cargo (the `cargo` module) or spawn workloads; it runs tools only through
//! `process::run_tool`/`process::tool_stdout`/`process::run`. Nor take the CLI's types
//! (`doctor` takes plain flags).
//!
//! Why the LLVM major matters: a `.profraw` written by rustc's LLVM N and merged by an
//! llvm-profdata of another major is either rejected or — worse — silently read wrong, and
//! PGO then makes the binary slower. So every tool is version-checked, and a mismatch is an
//! error that names both majors and the command that fixes it.
//!
//! Submodules: `clang` (the clang of rustc's LLVM, for C and C++ built by `cc`), `cpu` (flags → x86-64 level, pure), `perf` (perf binary, paranoid, counters,
//! LBR), `doctor` (the `Facts` bundle and the `doctor` command's output and `--fix`),
//! `profdata` (a merged PGO profile's per-function counts, demangled), `llvm_args` (the
//! `-Cllvm-args` options this rustc's LLVM accepts, asked once and kept in
//! `cache/toolchain/`).

pub(crate) mod clang;
mod cpu;
mod doctor;
pub(crate) mod llvm_args;
mod perf;
pub(crate) mod platform;
pub(crate) mod profdata;
pub(crate) mod python;

pub(crate) use cpu::{CpuFacts, X86Level};
pub(crate) use doctor::doctor_command;
pub(crate) use perf::{hw_counters, lbr_usable, paranoid as perf_paranoid, Capability, PerfFacts};

use crate::process;
use anyhow::Context as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Override for the llvm-profdata to use (still version-checked against rustc's LLVM).
pub(crate) const LLVM_PROFDATA_ENV: &str = "CARGO_OPTIMIZE_LLVM_PROFDATA";
/// Override for the llvm-bolt to use (still version-checked; merge-fdata/perf2bolt are
/// looked for next to it first).
pub(crate) const LLVM_BOLT_ENV: &str = "CARGO_OPTIMIZE_LLVM_BOLT";

/// How long a `--version` query may take before the tool counts as unusable.
const VERSION_TIMEOUT: Duration = Duration::from_secs(15);

/// What `rustc -vV` says.
#[derive(Debug, Clone, serde::Serialize)]
pub(crate) struct Rustc {
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
pub(crate) struct Tool {
    pub path: PathBuf,
    /// Its own version line, e.g. "LLVM version 22.1.2".
    pub version: String,
    pub llvm_major: Option<u32>,
}

/// The BOLT tool set, all of one LLVM major.
#[derive(Debug, Clone, serde::Serialize)]
pub(crate) struct BoltTools {
    pub llvm_bolt: Tool,
    pub merge_fdata: Tool,
    pub perf2bolt: Option<Tool>,
}

/// A missing or mismatched tool: what is wrong and the exact command that fixes it.
#[derive(Debug, Clone, thiserror::Error, serde::Serialize)]
#[error("{problem}\n  fix: {fix}")]
pub(crate) struct ToolError {
    pub problem: String,
    pub fix: String,
}

/// An LLVM version found in a tool's output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LlvmVersion {
    /// The whole (trimmed) line it was found on, e.g. "Debian LLVM version 22.1.8".
    pub line: String,
    /// e.g. "22.1.8"
    pub version: String,
    pub major: u32,
}

// ---------------------------------------------------------------------------------------
// rustc

/// The rustc to ask: `$RUSTC` when set (as cargo does), else `rustc` on PATH.
pub(crate) fn rustc_program() -> PathBuf {
    std::env::var_os("RUSTC")
        .filter(|s| !s.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("rustc"))
}

/// rustc's version, host, LLVM version (`rustc -vV`) and sysroot (`rustc --print sysroot`).
pub(crate) fn rustc() -> anyhow::Result<Rustc> {
    let program = rustc_program();
    let vv = tool_output_checked(&program, &["-vV"])?;
    let sysroot = tool_output_checked(&program, &["--print", "sysroot"])?;
    parse_rustc_vv(&vv, PathBuf::from(sysroot.trim()))
        .with_context(|| format!("unexpected output of `{} -vV`", program.display()))
}

/// Parse `rustc -vV` output (plus the separately obtained sysroot).
pub(crate) fn parse_rustc_vv(text: &str, sysroot: PathBuf) -> anyhow::Result<Rustc> {
    let version = text
        .lines()
        .map(str::trim)
        .find(|l| l.starts_with("rustc "))
        .context("no `rustc …` version line")?
        .to_string();
    let field = |key: &str| {
        text.lines()
            .find_map(|l| l.trim().strip_prefix(key).map(|v| v.trim().to_string()))
    };
    let host = field("host:").context("no `host:` line")?;
    let llvm_version = field("LLVM version:")
        .context("no `LLVM version:` line (is this rustc built with LLVM?)")?;
    let llvm_major = leading_number(&llvm_version)
        .with_context(|| format!("cannot read the LLVM major from {llvm_version:?}"))?;
    Ok(Rustc {
        version,
        host,
        llvm_version,
        llvm_major,
        sysroot,
    })
}

/// Find "LLVM version X.Y.Z" in a tool's `--version` output (any vendor prefix, e.g.
/// "Debian LLVM version 22.1.8" or "LLVM version 22.1.2-rust-1.95.0-stable").
pub(crate) fn parse_llvm_version(text: &str) -> Option<LlvmVersion> {
    let re = regex::Regex::new(r"(?:LLVM|clang) version:?\s+(\d+(?:\.\d+)*)").expect("valid regex");
    text.lines().find_map(|line| {
        let caps = re.captures(line)?;
        let version = caps[1].to_string();
        Some(LlvmVersion {
            line: line.trim().to_string(),
            major: leading_number(&version)?,
            version,
        })
    })
}

fn leading_number(s: &str) -> Option<u32> {
    let digits: String = s.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

/// Run a tool that must succeed; its stdout, or an error with its stderr.
fn tool_output_checked(program: &Path, args: &[&str]) -> anyhow::Result<String> {
    let cmd = process::Command::new(program)
        .args(args)
        .timeout(Duration::from_secs(60));
    let line = cmd.display();
    // ProcessError's message already includes its cause; `{e}` alone avoids repeating it.
    let out = process::run(&cmd).map_err(|e| anyhow::anyhow!("cannot run `{line}`: {e}"))?;
    if !out.status.success() {
        anyhow::bail!("`{line}` failed ({}): {}", out.status, out.stderr_tail(5));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

// ---------------------------------------------------------------------------------------
// Finding tools

/// Where to look: the directories of PATH and the root of Debian's versioned LLVM
/// installs (`/usr/lib`, holding `llvm-N/bin`). Separate from the process environment so
/// tests can point it at fake tools.
#[derive(Debug, Clone)]
pub(crate) struct Search {
    pub path_dirs: Vec<PathBuf>,
    pub llvm_root: PathBuf,
}

impl Search {
    pub(crate) fn from_env() -> Self {
        Search {
            path_dirs: std::env::var_os("PATH")
                .map(|p| std::env::split_paths(&p).collect())
                .unwrap_or_default(),
            llvm_root: PathBuf::from("/usr/lib"),
        }
    }

    /// The first executable file called `name` in PATH (`name.exe` on Windows).
    pub(crate) fn which(&self, name: &str) -> Option<PathBuf> {
        let file = format!("{name}{}", std::env::consts::EXE_SUFFIX);
        self.path_dirs
            .iter()
            .map(|d| d.join(&file))
            .find(|p| is_executable(p))
    }

    /// `/usr/lib/llvm-N/bin/<name>` when it exists.
    fn versioned_dir_tool(&self, major: u32, name: &str) -> Option<PathBuf> {
        let p = self.llvm_root.join(format!("llvm-{major}/bin/{name}"));
        is_executable(&p).then_some(p)
    }
}

/// The first executable called `name` on PATH.
pub(crate) fn find_on_path(name: &str) -> Option<PathBuf> {
    Search::from_env().which(name)
}

fn is_executable(p: &Path) -> bool {
    std::fs::metadata(p)
        .map(|m| crate::sys::is_executable(&m))
        .unwrap_or(false)
}

/// The LLVM version a tool reports: `--version` first; LLVM ≤ 14's llvm-profdata only
/// answers `merge --version`, so callers may give further argument lists to try.
pub(crate) fn tool_llvm_version(path: &Path, arg_sets: &[&[&str]]) -> Option<LlvmVersion> {
    arg_sets.iter().find_map(|args| {
        let cmd = process::Command::new(path)
            .args(args.iter().copied())
            .timeout(VERSION_TIMEOUT);
        let out = process::run(&cmd).ok()?;
        if out.timed_out {
            return None;
        }
        let mut text = String::from_utf8_lossy(&out.stdout).into_owned();
        text.push('\n');
        text.push_str(&String::from_utf8_lossy(&out.stderr));
        parse_llvm_version(&text)
    })
}

const PROFDATA_VERSION_ARGS: &[&[&str]] = &[&["--version"], &["merge", "--version"]];
const VERSION_ARGS: &[&[&str]] = &[&["--version"]];

/// Why a found file was not taken.
#[derive(Debug, Clone)]
struct Rejected {
    reason: String,
}

/// Check one candidate: its LLVM major must equal `want`. A candidate `trusted` by where it
/// lives (next to the matching llvm-bolt, or named `tool-N`) is accepted when it reports no
/// version at all.
fn probe(path: &Path, want: u32, arg_sets: &[&[&str]], trusted: bool) -> Result<Tool, Rejected> {
    match tool_llvm_version(path, arg_sets) {
        Some(v) if v.major == want => Ok(Tool {
            path: path.to_path_buf(),
            version: v.line,
            llvm_major: Some(v.major),
        }),
        Some(v) => Err(Rejected {
            reason: format!(
                "{} is LLVM {} ({}), but rustc uses LLVM {want}",
                path.display(),
                v.major,
                v.version
            ),
        }),
        None if trusted => Ok(Tool {
            path: path.to_path_buf(),
            version: "unknown (no version output; accepted by its location/name)".into(),
            llvm_major: None,
        }),
        None => Err(Rejected {
            reason: format!(
                "{} does not report an LLVM version (cannot check it matches LLVM {want})",
                path.display()
            ),
        }),
    }
}

/// Try candidates in order (skipping duplicates of the same file); the first that matches
/// wins, otherwise every rejection is returned.
fn first_match(
    candidates: Vec<(PathBuf, bool)>,
    want: u32,
    arg_sets: &[&[&str]],
) -> Result<Tool, Vec<Rejected>> {
    let mut seen = Vec::new();
    let mut rejected = Vec::new();
    for (path, trusted) in candidates {
        let key = std::fs::canonicalize(&path).unwrap_or_else(|_| path.clone());
        if seen.contains(&key) {
            continue;
        }
        seen.push(key);
        match probe(&path, want, arg_sets, trusted) {
            Ok(tool) => return Ok(tool),
            Err(r) => rejected.push(r),
        }
    }
    Err(rejected)
}

fn env_override(var: &str) -> Option<PathBuf> {
    std::env::var_os(var)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
}

/// The command that installs rustup's llvm-tools for this rustc. With `$RUSTC` set the
/// toolchain may not be the active one, so it is named explicitly.
pub(crate) fn llvm_tools_fix(rustc: &Rustc) -> String {
    format!("rustup {}", llvm_tools_rustup_args(rustc).join(" "))
}

/// The arguments to `rustup` that [`llvm_tools_fix`] shows.
pub(crate) fn llvm_tools_rustup_args(rustc: &Rustc) -> Vec<String> {
    let mut args: Vec<String> = ["component", "add", "llvm-tools"]
        .map(String::from)
        .to_vec();
    let toolchain = std::env::var_os("RUSTC")
        .filter(|v| !v.is_empty())
        .and_then(|_| rustup_toolchain_name(&rustc.sysroot));
    if let Some(t) = toolchain {
        args.extend(["--toolchain".to_string(), t]);
    }
    args
}

/// `~/.rustup/toolchains/<name>` → `<name>`.
fn rustup_toolchain_name(sysroot: &Path) -> Option<String> {
    let parent = sysroot.parent()?;
    (parent.file_name()? == "toolchains")
        .then(|| {
            sysroot
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
        })
        .flatten()
}

/// The command that installs Debian's BOLT package for LLVM `major`.
pub(crate) fn bolt_fix(major: u32) -> String {
    format!("apt-get update && apt-get install -y bolt-{major}   # as root, on Debian/Ubuntu")
}

/// rustup's llvm-tools copy of a tool for this rustc: `<sysroot>/lib/rustlib/<host>/bin/`.
pub(crate) fn rustup_llvm_tool(rustc: &Rustc, name: &str) -> PathBuf {
    rustc
        .sysroot
        .join("lib/rustlib")
        .join(&rustc.host)
        .join("bin")
        .join(format!("{name}{}", std::env::consts::EXE_SUFFIX))
}

/// llvm-profdata whose LLVM major equals rustc's: rustup's llvm-tools first, then
/// `llvm-profdata-N`, `/usr/lib/llvm-N/bin/llvm-profdata`, plain `llvm-profdata`.
/// `$CARGO_OPTIMIZE_LLVM_PROFDATA`, when set, is the only candidate (and still checked).
pub(crate) fn llvm_profdata(rustc: &Rustc) -> Result<Tool, ToolError> {
    llvm_profdata_in(rustc, &Search::from_env(), env_override(LLVM_PROFDATA_ENV))
}

pub(crate) fn llvm_profdata_in(
    rustc: &Rustc,
    search: &Search,
    override_path: Option<PathBuf>,
) -> Result<Tool, ToolError> {
    let n = rustc.llvm_major;
    let fix = llvm_tools_fix(rustc);
    if let Some(path) = override_path {
        return first_match(vec![(path.clone(), false)], n, PROFDATA_VERSION_ARGS).map_err(
            |rejected| ToolError {
                problem: match rejected.first() {
                    Some(r) if path.exists() => format!("{LLVM_PROFDATA_ENV}: {}", r.reason),
                    _ => format!("{LLVM_PROFDATA_ENV}={} does not exist", path.display()),
                },
                fix: format!("unset {LLVM_PROFDATA_ENV} && {fix}"),
            },
        );
    }
    let rustup = rustup_llvm_tool(rustc, "llvm-profdata");
    let candidates: Vec<PathBuf> = [
        is_executable(&rustup).then_some(rustup.clone()),
        search.which(&format!("llvm-profdata-{n}")),
        search.versioned_dir_tool(n, "llvm-profdata"),
        search.which("llvm-profdata"),
    ]
    .into_iter()
    .flatten()
    .collect();
    let candidates = candidates.into_iter().map(|p| (p, false)).collect();
    first_match(candidates, n, PROFDATA_VERSION_ARGS).map_err(|rejected| ToolError {
        problem: if rejected.is_empty() {
            format!(
                "llvm-profdata not found (PGO needs one of rustc's LLVM {n}); looked at {}, \
                 llvm-profdata-{n} and llvm-profdata on PATH, {}",
                rustup.display(),
                search
                    .llvm_root
                    .join(format!("llvm-{n}/bin/llvm-profdata"))
                    .display()
            )
        } else {
            format!(
                "no llvm-profdata of rustc's LLVM {n} found: {} — profiles must be merged by \
                 the same LLVM major that wrote them",
                join_reasons(&rejected)
            )
        },
        fix,
    })
}

fn join_reasons(rejected: &[Rejected]) -> String {
    rejected
        .iter()
        .map(|r| r.reason.as_str())
        .collect::<Vec<_>>()
        .join("; ")
}

/// llvm-bolt + merge-fdata (+ perf2bolt) of rustc's LLVM major.
///
/// llvm-bolt: `$CARGO_OPTIMIZE_LLVM_BOLT` (alone, when set), else `llvm-bolt-N` on PATH,
/// `/usr/lib/llvm-N/bin/llvm-bolt`, plain `llvm-bolt` — each version-checked. merge-fdata
/// and perf2bolt are looked for next to that llvm-bolt (its own directory and the one its
/// symlink resolves to), then as `name-N` on PATH, in `/usr/lib/llvm-N/bin`, and plain on
/// PATH. Some builds of merge-fdata print no version; one that lives next to the matching
/// llvm-bolt or is called `merge-fdata-N` is accepted anyway. A reported version must match.
/// perf2bolt is optional (only perf/LBR mode needs it).
pub(crate) fn bolt_tools(rustc: &Rustc) -> Result<BoltTools, ToolError> {
    if let Some(why) = bolt_unsupported_here() {
        return Err(why);
    }
    bolt_tools_in(rustc, &Search::from_env(), env_override(LLVM_BOLT_ENV))
}

/// Why BOLT cannot run on this OS at all (`None` on Linux): llvm-bolt rewrites ELF
/// binaries, and macOS (Mach-O) and Windows (PE) build neither.
pub(crate) fn bolt_unsupported_here() -> Option<ToolError> {
    let os = std::env::consts::OS;
    (os != "linux").then(|| ToolError {
        problem: format!("BOLT rewrites Linux ELF binaries only; this machine builds {os} binaries, so the bolt stage is skipped here"),
        fix: "none on this OS: BOLT a Linux build (a Linux CI cell, `release --emit-ci github`)".into(),
    })
}

pub(crate) fn bolt_tools_in(
    rustc: &Rustc,
    search: &Search,
    override_path: Option<PathBuf>,
) -> Result<BoltTools, ToolError> {
    let n = rustc.llvm_major;
    let fix = bolt_fix(n);
    let llvm_bolt = match override_path {
        Some(path) => {
            first_match(vec![(path.clone(), false)], n, VERSION_ARGS).map_err(|rejected| {
                ToolError {
                    problem: match rejected.first() {
                        Some(r) if path.exists() => format!("{LLVM_BOLT_ENV}: {}", r.reason),
                        _ => format!("{LLVM_BOLT_ENV}={} does not exist", path.display()),
                    },
                    fix: format!("unset {LLVM_BOLT_ENV} && {fix}"),
                }
            })?
        }
        None => {
            let candidates = [
                search.which(&format!("llvm-bolt-{n}")),
                search.versioned_dir_tool(n, "llvm-bolt"),
                search.which("llvm-bolt"),
            ]
            .into_iter()
            .flatten()
            .map(|p| (p, false))
            .collect();
            first_match(candidates, n, VERSION_ARGS).map_err(|rejected| ToolError {
                problem: if rejected.is_empty() {
                    format!(
                        "llvm-bolt not found (the bolt stage needs LLVM {n}'s); looked for \
                         llvm-bolt-{n} and llvm-bolt on PATH, {}",
                        search
                            .llvm_root
                            .join(format!("llvm-{n}/bin/llvm-bolt"))
                            .display()
                    )
                } else {
                    format!(
                        "no llvm-bolt of rustc's LLVM {n} found: {}",
                        join_reasons(&rejected)
                    )
                },
                fix: fix.clone(),
            })?
        }
    };
    let merge_fdata =
        companion(&llvm_bolt.path, "merge-fdata", n, search).map_err(|rejected| ToolError {
            problem: format!(
                "merge-fdata of LLVM {n} not found (llvm-bolt is {}){}",
                llvm_bolt.path.display(),
                if rejected.is_empty() {
                    String::new()
                } else {
                    format!(": {}", join_reasons(&rejected))
                }
            ),
            fix: fix.clone(),
        })?;
    let perf2bolt = companion(&llvm_bolt.path, "perf2bolt", n, search).ok();
    Ok(BoltTools {
        llvm_bolt,
        merge_fdata,
        perf2bolt,
    })
}

/// A BOLT companion tool (merge-fdata, perf2bolt) matching the llvm-bolt at `bolt`.
fn companion(bolt: &Path, name: &str, n: u32, search: &Search) -> Result<Tool, Vec<Rejected>> {
    let versioned = format!("{name}-{n}");
    let mut dirs: Vec<PathBuf> = bolt.parent().map(Path::to_path_buf).into_iter().collect();
    if let Some(real_dir) = std::fs::canonicalize(bolt)
        .ok()
        .and_then(|p| p.parent().map(Path::to_path_buf))
    {
        if !dirs.contains(&real_dir) {
            dirs.push(real_dir);
        }
    }
    let mut candidates: Vec<(PathBuf, bool)> = Vec::new();
    for dir in &dirs {
        for file in [&versioned, &name.to_string()] {
            let p = dir.join(file);
            if is_executable(&p) {
                candidates.push((p, true));
            }
        }
    }
    candidates.extend(search.which(&versioned).map(|p| (p, true)));
    candidates.extend(search.versioned_dir_tool(n, name).map(|p| (p, true)));
    candidates.extend(search.which(name).map(|p| (p, false)));
    first_match(candidates, n, VERSION_ARGS)
}

#[cfg(test)]
mod tests {
    use super::*;

    const RUSTC_VV: &str = "rustc 1.95.0 (59807616e 2026-04-14)
binary: rustc
commit-hash: 59807616e1fa2540724bfbac14d7976d7e4a3860
commit-date: 2026-04-14
host: x86_64-unknown-linux-gnu
release: 1.95.0
LLVM version: 22.1.2
";

    const PROFDATA_22: &str = "LLVM (http://llvm.org/):
  LLVM version 22.1.2-rust-1.95.0-stable
  Optimized build.
";

    const PROFDATA_14: &str = "Debian LLVM version 14.0.6
  Optimized build.
  Default target: x86_64-pc-linux-gnu
  Host CPU: znver3
";

    const BOLT_22: &str = "Debian LLVM version 22.1.8
  Optimized build.
BOLT revision <unknown>

  Registered Targets:
    aarch64    - AArch64 (little endian)
    x86-64     - 64-bit X86: EM64T and AMD64
";

    #[test]
    fn parses_rustc_vv() {
        let r = parse_rustc_vv(RUSTC_VV, PathBuf::from("/sysroot")).unwrap();
        assert_eq!(r.version, "rustc 1.95.0 (59807616e 2026-04-14)");
        assert_eq!(r.host, "x86_64-unknown-linux-gnu");
        assert_eq!(r.llvm_version, "22.1.2");
        assert_eq!(r.llvm_major, 22);
        assert_eq!(r.sysroot, PathBuf::from("/sysroot"));
    }

    #[test]
    fn rustc_vv_without_llvm_is_an_error() {
        let text = "rustc 1.95.0 (x)\nhost: x86_64-unknown-linux-gnu\n";
        assert!(parse_rustc_vv(text, PathBuf::new()).is_err());
    }

    #[test]
    fn parses_tool_versions() {
        let v = parse_llvm_version(PROFDATA_22).unwrap();
        assert_eq!(v.major, 22);
        assert_eq!(v.version, "22.1.2");
        assert_eq!(v.line, "LLVM version 22.1.2-rust-1.95.0-stable");

        let v = parse_llvm_version(PROFDATA_14).unwrap();
        assert_eq!((v.major, v.version.as_str()), (14, "14.0.6"));
        assert_eq!(v.line, "Debian LLVM version 14.0.6");

        let v = parse_llvm_version(BOLT_22).unwrap();
        assert_eq!((v.major, v.version.as_str()), (22, "22.1.8"));

        assert_eq!(parse_llvm_version("llvm-profdata: Unknown command!"), None);
    }

    #[test]
    fn toolchain_name_from_sysroot() {
        let s = Path::new("/root/.rustup/toolchains/nightly-x86_64-unknown-linux-gnu");
        assert_eq!(
            rustup_toolchain_name(s).as_deref(),
            Some("nightly-x86_64-unknown-linux-gnu")
        );
        assert_eq!(rustup_toolchain_name(Path::new("/usr")), None);
    }

    /// A fake tool: a shell script printing `version_text` for `--version`.
    fn fake_tool(dir: &Path, name: &str, version_text: &str) -> PathBuf {
        std::fs::create_dir_all(dir).unwrap();
        let p = dir.join(name);
        let script = format!("#!/bin/sh\ncat <<'EOF'\n{version_text}\nEOF\n");
        std::fs::write(&p, script).unwrap();
        crate::sys::set_mode(&p, 0o755).unwrap();
        // Another test thread forking while the file was open for writing makes exec fail
        // with ETXTBSY until that child execs; wait until it runs.
        for _ in 0..100 {
            match process::run(&process::Command::new(&p)) {
                Err(process::ProcessError::Spawn { error, .. })
                    if crate::sys::errno_name(&error) == Some("ETXTBSY") =>
                {
                    std::thread::sleep(Duration::from_millis(10))
                }
                _ => break,
            }
        }
        p
    }

    fn fake_rustc(sysroot: &Path) -> Rustc {
        Rustc {
            version: "rustc 1.95.0".into(),
            host: "x86_64-unknown-linux-gnu".into(),
            llvm_version: "22.1.2".into(),
            llvm_major: 22,
            sysroot: sysroot.to_path_buf(),
        }
    }

    #[test]
    fn mismatched_profdata_is_rejected_naming_both_majors() {
        let tmp = tempfile::tempdir().unwrap();
        let bin = tmp.path().join("bin");
        fake_tool(&bin, "llvm-profdata", PROFDATA_14);
        let search = Search {
            path_dirs: vec![bin.clone()],
            llvm_root: tmp.path().join("usr-lib"),
        };
        let rustc = fake_rustc(&tmp.path().join("sysroot"));
        let err = llvm_profdata_in(&rustc, &search, None).unwrap_err();
        assert!(err
            .problem
            .contains(&bin.join("llvm-profdata").display().to_string()));
        assert!(err.problem.contains("LLVM 14"), "{}", err.problem);
        assert!(err.problem.contains("LLVM 22"), "{}", err.problem);
        assert!(err.fix.contains("rustup component add llvm-tools"));
    }

    #[test]
    fn profdata_search_order_prefers_rustup_then_versioned() {
        let tmp = tempfile::tempdir().unwrap();
        let rustc = fake_rustc(&tmp.path().join("sysroot"));
        let bin = tmp.path().join("bin");
        fake_tool(&bin, "llvm-profdata", PROFDATA_14);
        let versioned = fake_tool(&bin, "llvm-profdata-22", PROFDATA_22);
        let search = Search {
            path_dirs: vec![bin],
            llvm_root: tmp.path().join("usr-lib"),
        };
        let tool = llvm_profdata_in(&rustc, &search, None).unwrap();
        assert_eq!(tool.path, versioned);
        assert_eq!(tool.llvm_major, Some(22));

        let rustup_dir = tmp
            .path()
            .join("sysroot/lib/rustlib/x86_64-unknown-linux-gnu/bin");
        let rustup = fake_tool(&rustup_dir, "llvm-profdata", PROFDATA_22);
        assert_eq!(
            llvm_profdata_in(&rustc, &search, None).unwrap().path,
            rustup
        );
    }

    #[test]
    fn missing_profdata_says_how_to_install() {
        let tmp = tempfile::tempdir().unwrap();
        let search = Search {
            path_dirs: vec![],
            llvm_root: tmp.path().to_path_buf(),
        };
        let err = llvm_profdata_in(&fake_rustc(tmp.path()), &search, None).unwrap_err();
        assert!(err.problem.contains("not found"));
        assert_eq!(err.fix, "rustup component add llvm-tools");
    }

    #[test]
    fn override_is_still_version_checked() {
        let tmp = tempfile::tempdir().unwrap();
        let old = fake_tool(tmp.path(), "my-profdata", PROFDATA_14);
        let search = Search {
            path_dirs: vec![],
            llvm_root: tmp.path().to_path_buf(),
        };
        let rustc = fake_rustc(tmp.path());
        let err = llvm_profdata_in(&rustc, &search, Some(old)).unwrap_err();
        assert!(err.problem.contains(LLVM_PROFDATA_ENV));
        assert!(err.problem.contains("LLVM 14"));
        let new = fake_tool(tmp.path(), "new-profdata", PROFDATA_22);
        assert_eq!(
            llvm_profdata_in(&rustc, &search, Some(new.clone()))
                .unwrap()
                .path,
            new
        );
    }

    #[test]
    fn bolt_tools_from_versioned_dir_accept_silent_merge_fdata() {
        let tmp = tempfile::tempdir().unwrap();
        let llvm_bin = tmp.path().join("usr-lib/llvm-22/bin");
        let bolt = fake_tool(&llvm_bin, "llvm-bolt", BOLT_22);
        let merge = fake_tool(&llvm_bin, "merge-fdata", "");
        let search = Search {
            path_dirs: vec![],
            llvm_root: tmp.path().join("usr-lib"),
        };
        let tools = bolt_tools_in(&fake_rustc(tmp.path()), &search, None).unwrap();
        assert_eq!(tools.llvm_bolt.path, bolt);
        assert_eq!(tools.merge_fdata.path, merge);
        assert_eq!(tools.merge_fdata.llvm_major, None);
        assert!(tools.perf2bolt.is_none());
    }

    #[test]
    fn bolt_of_another_major_is_rejected() {
        let tmp = tempfile::tempdir().unwrap();
        let bin = tmp.path().join("bin");
        fake_tool(&bin, "llvm-bolt", &BOLT_22.replace("22.1.8", "18.1.3"));
        fake_tool(&bin, "merge-fdata", "");
        let search = Search {
            path_dirs: vec![bin],
            llvm_root: tmp.path().join("usr-lib"),
        };
        let err = bolt_tools_in(&fake_rustc(tmp.path()), &search, None).unwrap_err();
        assert!(err.problem.contains("LLVM 18"), "{}", err.problem);
        assert!(err
            .fix
            .starts_with("apt-get update && apt-get install -y bolt-22"));
    }

    /// The real toolchain of this machine: llvm-profdata must be found and match rustc.
    #[test]
    fn real_rustc_and_llvm_profdata_match() {
        let rustc = rustc().expect("rustc -vV works");
        assert!(rustc.llvm_major > 0);
        let tool = llvm_profdata(&rustc).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(tool.llvm_major, Some(rustc.llvm_major));
    }
}
