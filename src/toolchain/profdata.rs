//! What a merged PGO profile says function by function: `llvm-profdata show --all-functions
//! --counts`, parsed into each function's counters (`FunctionCounts`), its name demangled
//! (`rustc-demangle`, without the hash) and split into crate and module path. The one reader
//! of per-function counts: hotspots and the train↔eval coverage both use it. Also a
//! profile's summary (`summary`: its functions and largest count, what the PGO stage checks
//! a merged or given profile by), whether this llvm-profdata reads it at all (`readable`), whether what it said means the
//! file is another LLVM version's format (`version_mismatch`), and the one `merge` (the PGO
//! stage's training and `profile merge` of many hosts' profiles).

use std::path::{Path, PathBuf};

use crate::process;

/// One function of a profile.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub(crate) struct FunctionCounts {
    /// The symbol as the profile names it (mangled; local symbols without their file prefix).
    pub symbol: String,
    /// Demangled, without the hash: `demo::interp::Vm::run`.
    pub name: String,
    /// The sum of its block counters: how much work ran in it (its share of all counts is
    /// what "hot" means here).
    pub total: u64,
    /// Its first counter: how often it was called when the profile counts entries first
    /// ([`Shown::entry_first`]), else the count of its first instrumented edge.
    pub entries: u64,
}

impl FunctionCounts {
    /// Whether rustc compiled it: its symbol is Rust-mangled (`_R…`, or `_ZN…17h<hash>E`).
    /// Anything else in a profile is C or C++ that clang instrumented beside it (the pgo
    /// stage's whole-program PGO).
    /// A Rust program's `main` is rustc's too (the C-ABI shim that calls the Rust one).
    pub(crate) fn is_rust(&self) -> bool {
        let s = self.symbol.as_str();
        s == "main"
            || s.starts_with("_R")
            || (s.starts_with("_ZN") && s.contains("17h") && s.ends_with('E'))
    }

    /// The crate the function belongs to: the first segment of its [`owner`](Self::owner).
    pub(crate) fn crate_name(&self) -> &str {
        let n = self.owner();
        n.split("::").next().unwrap_or(n)
    }

    /// The path the function is defined under: for `<X as Y>::f`, X when it is a path (an
    /// impl on the crate's own type), else Y (a blanket impl: `<T as core::fmt::Debug>`,
    /// `<[V] as alloc::…>`); otherwise its name.
    fn owner(&self) -> &str {
        let Some(rest) = self.name.strip_prefix('<') else {
            return &self.name;
        };
        let path = match rest.split_once(" as ") {
            Some((x, _)) if x.contains("::") => x,
            Some((_, y)) => y,
            None => rest,
        };
        // `[core::mem::MaybeUninit<T>]`, `&mut dyn core::any::Any`: the path inside.
        let mut p = path.trim_start_matches(['[', '&', '*', '(']);
        for word in ["mut ", "const ", "dyn "] {
            p = p.strip_prefix(word).unwrap_or(p);
        }
        p
    }

    /// The module path: the owner's path without its last segment when that is the
    /// function (`a::b::f` → `a::b`), and without the type segments before it
    /// (`a::b::Type::f` → `a::b`); by convention segments starting with an uppercase letter
    /// are types.
    pub(crate) fn module(&self) -> String {
        let n = self.owner();
        let n = n.split([' ', '<']).next().unwrap_or(n);
        let segs: Vec<&str> = n.split("::").collect();
        let mut end = match self.name.starts_with('<') {
            true => segs.len(),
            false => segs.len().saturating_sub(1),
        };
        while end > 1 && segs[end - 1].starts_with(|c: char| c.is_ascii_uppercase()) {
            end -= 1;
        }
        segs[..end.max(1)].join("::")
    }
}

/// Every function of `profile`, in the order llvm-profdata lists them; an error when
/// llvm-profdata fails or does not finish within [`SHOW_TIMEOUT`] (never an empty list
/// for a profile it could not read).
pub(crate) fn function_counts(
    profdata: &Path,
    profile: &Path,
) -> Result<Vec<FunctionCounts>, CountsError> {
    show(profdata, profile).map(|s| s.functions)
}

/// The bound of one `llvm-profdata show`: a large profile is read in seconds.
const SHOW_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(300);

fn show_command(profdata: &Path, profile: &Path) -> process::Command {
    process::Command::new(profdata)
        .args(["show", "--all-functions", "--counts"])
        .arg(profile)
        .timeout(SHOW_TIMEOUT)
        .label("the profile's function counts")
}

/// A profile's functions, and what their first counter is.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Shown {
    pub functions: Vec<FunctionCounts>,
    /// Each function's first counter is its entry count (`entry_first = 1`, or front-end
    /// instrumentation). rustc's IR instrumentation counts edges of the control-flow graph
    /// (`entry_first = 0`): then `entries` is the first edge's count, not the calls.
    pub entry_first: bool,
}

/// What llvm-profdata said about one input (its index), or about none (`input` is `None`).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Said {
    pub input: Option<usize>,
    pub message: String,
}

/// A merge could not be done.
#[derive(Debug, thiserror::Error)]
pub(crate) enum MergeError {
    #[error(transparent)]
    Process(#[from] process::ProcessError),
    #[error("cannot write the list of profiles to merge {path}: {error}")]
    List {
        path: PathBuf,
        error: std::io::Error,
    },
    #[error("{path}: a file name with a line break cannot be merged\n  fix: rename it")]
    LineBreak { path: PathBuf },
    #[error("{tool} merge failed ({status}):\n{tail}")]
    Failed {
        tool: String,
        status: String,
        tail: String,
    },
}

/// How long one merge may take (a fleet's profiles can be many and large).
const MERGE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(3600);

/// `llvm-profdata merge --failure-mode=warn` of `inputs` (path, weight) into `out`. The
/// inputs are listed in a file (`--input-files`), so their number is not bounded by the
/// command line. What llvm-profdata said, by input; an error when it failed.
pub(crate) fn merge(
    profdata: &Path,
    inputs: &[(&Path, u64)],
    out: &Path,
) -> Result<Vec<Said>, MergeError> {
    let list_path = out.with_extension("inputs");
    let mut list = String::new();
    for (path, weight) in inputs {
        let p = path.to_string_lossy();
        if p.contains('\n') {
            return Err(MergeError::LineBreak {
                path: path.to_path_buf(),
            });
        }
        list.push_str(&format!("{weight},{p}\n"));
    }
    std::fs::write(&list_path, list).map_err(|error| MergeError::List {
        path: list_path.clone(),
        error,
    })?;
    let ran = process::run(
        &process::Command::new(profdata)
            .args(["merge", "--failure-mode=warn", "-o"])
            .arg(out)
            .arg(format!("--input-files={}", list_path.display()))
            .timeout(MERGE_TIMEOUT)
            .label("llvm-profdata merge"),
    );
    let _ = std::fs::remove_file(&list_path);
    let ran = ran?;
    if !ran.status.success() {
        return Err(MergeError::Failed {
            tool: profdata.display().to_string(),
            status: ran.status.to_string(),
            tail: ran.stderr_tail(20),
        });
    }
    let paths: Vec<&Path> = inputs.iter().map(|(p, _)| *p).collect();
    Ok(said_by_input(&String::from_utf8_lossy(&ran.stderr), &paths))
}

/// llvm-profdata's `warning: <file>: <message>` lines (continuation lines joined), each
/// given to the input it names (the longest path that matches).
pub(crate) fn said_by_input(stderr: &str, inputs: &[&Path]) -> Vec<Said> {
    let mut out: Vec<Said> = Vec::new();
    for line in stderr.lines() {
        let body = ["warning: ", "error: "]
            .iter()
            .find_map(|p| line.strip_prefix(p));
        let Some(body) = body else {
            if let (Some(last), false) = (out.last_mut(), line.trim().is_empty()) {
                last.message.push('\n');
                last.message.push_str(line.trim());
            }
            continue;
        };
        let named = inputs
            .iter()
            .enumerate()
            .filter_map(|(n, p)| {
                let rest = body.strip_prefix(p.to_str()?)?.strip_prefix(": ")?;
                Some((n, p.as_os_str().len(), rest))
            })
            .max_by_key(|(_, len, _)| *len);
        out.push(match named {
            Some((n, _, rest)) => Said {
                input: Some(n),
                message: rest.to_string(),
            },
            None => Said {
                input: None,
                message: body.to_string(),
            },
        });
    }
    out
}

/// llvm-profdata could not list a profile's functions.
#[derive(Debug, thiserror::Error)]
pub(crate) enum CountsError {
    #[error(transparent)]
    Process(#[from] process::ProcessError),
    #[error("`{tool} show` could not read {profile} ({status}): {stderr}\n  fix: use the llvm-profdata of rustc's LLVM (`cargo optimize doctor`), or train the profile again (`cargo optimize --stages pgo`)")]
    Failed {
        tool: String,
        profile: PathBuf,
        status: String,
        stderr: String,
    },
}

/// [`function_counts`], failing when llvm-profdata does, with what the first counters are.
pub(crate) fn show(profdata: &Path, profile: &Path) -> Result<Shown, CountsError> {
    let text = read(profdata, profile, &show_command(profdata, profile))?;
    Ok(Shown {
        functions: parse(&text),
        entry_first: entry_first(&text),
    })
}

/// Whether what llvm-profdata said about a file means it is in another LLVM version's
/// profile format (a raw profile of another runtime version, an indexed profile of a newer
/// writer): only the llvm-profdata of that LLVM reads it.
pub(crate) fn version_mismatch(said: &str) -> bool {
    const SIGNS: [&str; 2] = [
        "raw profile version mismatch",
        "unsupported instrumentation profile format version",
    ];
    SIGNS.iter().any(|s| said.contains(s))
}

/// The first bytes of a raw profile (`.profraw`, what an instrumented program writes): the
/// magic `\xffprofr\x81` as a little-endian u64. A merged (indexed) one starts `\xfflprofi\x81`.
const RAW_MAGIC: [u8; 8] = [0x81, b'r', b'f', b'o', b'r', b'p', b'l', 0xff];

/// Whether `path` is a raw profile (which rustc's `-Cprofile-use` does not take: it must be
/// merged first).
pub(crate) fn is_raw(path: &Path) -> std::io::Result<bool> {
    use std::io::Read;
    let mut head = [0u8; 8];
    let mut f = std::fs::File::open(path)?;
    Ok(f.read_exact(&mut head).is_ok() && head == RAW_MAGIC)
}

/// What `llvm-profdata show` says of a profile, the summary only.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ProfdataSummary {
    /// `Total functions:` (0 when it does not say).
    pub functions: u64,
    /// `Maximum function count:` (0 when it does not say).
    pub max_count: u64,
}

/// The summary of `profile` (`llvm-profdata show`), bounded like every read of a profile;
/// an error when this llvm-profdata cannot read it.
pub(crate) fn summary(profdata: &Path, profile: &Path) -> Result<ProfdataSummary, CountsError> {
    let cmd = process::Command::new(profdata)
        .arg("show")
        .arg(profile)
        .timeout(SHOW_TIMEOUT)
        .label("the profile's summary");
    Ok(parse_summary(&read(profdata, profile, &cmd)?))
}

/// What `cmd`, `profdata` reading `profile`, printed; an error naming both when it failed.
fn read(profdata: &Path, profile: &Path, cmd: &process::Command) -> Result<String, CountsError> {
    let out = process::run(cmd)?;
    if out.timed_out {
        let bound = humantime::format_duration(cmd.timeout.unwrap_or_default());
        return Err(CountsError::Failed {
            tool: profdata.display().to_string(),
            profile: profile.to_path_buf(),
            status: format!("it did not finish within {bound} and was stopped"),
            stderr: out.stderr_tail(3).trim().to_string(),
        });
    }
    if !out.status.success() {
        return Err(CountsError::Failed {
            tool: profdata.display().to_string(),
            profile: profile.to_path_buf(),
            status: out.status.to_string(),
            stderr: out.stderr_tail(3).trim().to_string(),
        });
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

fn parse_summary(text: &str) -> ProfdataSummary {
    let field = |name: &str| {
        text.lines()
            .find_map(|l| l.trim().strip_prefix(name))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(0)
    };
    ProfdataSummary {
        functions: field("Total functions:"),
        max_count: field("Maximum function count:"),
    }
}

/// Whether this llvm-profdata reads `profile` (its [`summary`]).
pub(crate) fn readable(profdata: &Path, profile: &Path) -> Result<(), CountsError> {
    summary(profdata, profile).map(|_| ())
}

/// Whether the `Instrumentation level:` line says the first counter is the entry count.
pub(crate) fn entry_first(text: &str) -> bool {
    text.lines()
        .find_map(|l| l.trim().strip_prefix("Instrumentation level:"))
        .is_some_and(|l| l.contains("entry_first = 1") || l.trim().starts_with("Front-end"))
}

/// Parse `llvm-profdata show --all-functions --counts` text.
pub(crate) fn parse(text: &str) -> Vec<FunctionCounts> {
    let mut out = Vec::new();
    let mut symbol: Option<String> = None;
    for line in text.lines() {
        let trimmed = line.trim();
        if line.starts_with("  ") && !line.starts_with("   ") && trimmed.ends_with(':') {
            let raw = trimmed.trim_end_matches(':');
            // Local symbols are `<file>;<symbol>`.
            let sym = raw.rsplit_once(';').map_or(raw, |(_, s)| s);
            symbol = Some(sym.to_string());
        } else if let (Some(list), Some(sym)) = (trimmed.strip_prefix("Block counts: ["), &symbol) {
            let counts: Vec<u64> = list
                .trim_end_matches(']')
                .split(',')
                .filter_map(|c| c.trim().parse().ok())
                .collect();
            out.push(FunctionCounts {
                name: demangle(sym),
                symbol: sym.clone(),
                total: counts.iter().sum(),
                entries: counts.first().copied().unwrap_or(0),
            });
            symbol = None;
        }
    }
    out
}

/// `rustc-demangle`, without the hash; a name that is not a Rust symbol as it is.
pub(crate) fn demangle(symbol: &str) -> String {
    format!("{:#}", rustc_demangle::demangle(symbol))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_summary_says_functions_and_the_largest_count() {
        let text = "Instrumentation level: IR  entry_first = 0\nTotal functions: 42\nMaximum function count: 1000\nMaximum internal block count: 99\n";
        let s = parse_summary(text);
        assert_eq!((s.functions, s.max_count), (42, 1000));
        assert_eq!(parse_summary("Total functions: x\n").functions, 0);
    }

    const SHOW: &str = "Counters:
  demo.8eb0a8703b6716-cgu.05;_ZN4core3ptr65drop_in_place$LT$alloc..vec..Vec$LT$alloc..string..String$GT$$GT$17h47e7fe5f09e47a3aE:
    Hash: 0x03510b1ec0eebdf1
    Counters: 3
    Block counts: [0, 0, 0]
  _ZN4demo6interp2Vm3run17h0123456789abcdefE:
    Hash: 0x08c11c5bac4ba78f
    Counters: 4
    Block counts: [7, 100, 20, 3]
  main:
    Hash: 0x1
    Counters: 1
    Block counts: [1]
Instrumentation level: IR  entry_first = 0
Functions shown: 3
Total functions: 3
";

    #[test]
    fn functions_with_their_counts_demangled() {
        let f = parse(SHOW);
        assert_eq!(f.len(), 3);
        assert_eq!(
            f[0].name,
            "core::ptr::drop_in_place<alloc::vec::Vec<alloc::string::String>>"
        );
        assert_eq!((f[0].total, f[0].entries), (0, 0));
        assert_eq!(f[1].name, "demo::interp::Vm::run");
        assert_eq!(f[1].symbol, "_ZN4demo6interp2Vm3run17h0123456789abcdefE");
        assert_eq!((f[1].total, f[1].entries), (130, 7));
        assert_eq!(
            (f[1].crate_name(), f[1].module().as_str()),
            ("demo", "demo::interp")
        );
        assert_eq!((f[2].name.as_str(), f[2].total), ("main", 1));
        assert_eq!(f[2].module(), "main");
        assert_eq!(f[0].crate_name(), "core");
        assert_eq!(f[0].module(), "core::ptr");
        let f = |name: &str| FunctionCounts {
            symbol: String::new(),
            name: name.into(),
            total: 0,
            entries: 0,
        };
        let own = f("<demo::infer::Dense as demo::infer::Layer>::forward");
        assert_eq!(
            (own.crate_name(), own.module().as_str()),
            ("demo", "demo::infer")
        );
        let blanket = f("<Q as hashbrown::Equivalent<K>>::equivalent");
        assert_eq!(
            (blanket.crate_name(), blanket.module().as_str()),
            ("hashbrown", "hashbrown")
        );
        let inner = f("<[core::mem::maybe_uninit::MaybeUninit<T>] as core::fmt::Debug>::fmt");
        assert_eq!(
            (inner.crate_name(), inner.module().as_str()),
            ("core", "core::mem::maybe_uninit")
        );
        let slice = f("<[V] as alloc::slice::Concat<T>>::concat");
        assert_eq!(
            (slice.crate_name(), slice.module().as_str()),
            ("alloc", "alloc::slice")
        );
    }

    /// Issue 36 item 11: the exit status was ignored, so a profile llvm-profdata could not
    /// read gave an empty list of functions (eval coverage then said training covered
    /// nothing) instead of an error.
    #[test]
    fn function_counts_of_a_profile_llvm_profdata_cannot_read_is_an_error() {
        let rustc = crate::toolchain::rustc().expect("rustc");
        let tool = crate::toolchain::llvm_profdata(&rustc)
            .expect("llvm-profdata (rustup component add llvm-tools)");
        let dir = tempfile::tempdir().unwrap();
        let garbage = dir.path().join("garbage.profdata");
        std::fs::write(&garbage, b"not a profile at all\n").unwrap();
        let e = function_counts(&tool.path, &garbage).unwrap_err();
        assert!(matches!(e, CountsError::Failed { .. }), "{e}");
        assert!(e.to_string().contains("garbage.profdata"), "{e}");
    }

    #[test]
    fn another_llvms_profile_format_is_recognised() {
        let raw = "warning: h.profraw: raw profile version mismatch: Profile uses raw profile format version = 99; expected version = 10";
        assert!(version_mismatch(raw));
        assert!(version_mismatch(
            "error: m.profdata: unsupported instrumentation profile format version"
        ));
        assert!(!version_mismatch(
            "warning: t.profraw: invalid instrumentation profile data (file header is corrupt)"
        ));
    }

    #[test]
    fn whether_the_first_counter_counts_entries() {
        assert!(!entry_first(SHOW));
        let first = SHOW.replace("entry_first = 0", "entry_first = 1");
        assert!(entry_first(&first));
        assert!(entry_first("Instrumentation level: Front-end\n"));
        assert!(!entry_first("no header\n"));
    }
}
