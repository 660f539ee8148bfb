//! The user's `RUSTC_WRAPPER` (sccache): every build keeps it (cargo reads it from the
//! environment we pass on), and a run counts what it did — sccache's statistics (`sccache
//! --show-stats --stats-format json`) before and after, so the report can say how many
//! compilations were cache hits.
//!
//! What sccache can cache here: library crates (the dependencies, including with
//! `-Cprofile-generate`/`-Cprofile-use` flags); never the binary crate itself (`crate-type`
//! bin is not cacheable) nor build scripts' runs. Its keys include the source file's absolute
//! path, so two checkouts at different paths share the compiled dependencies that live at
//! one path (crates.io's, git's, a path dependency outside both) and not those inside each.

use std::path::{Path, PathBuf};

use crate::process;

/// Compilations as sccache counted them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct CompileCounts {
    pub hits: u64,
    pub misses: u64,
    /// Requests sccache would not cache (binaries, build scripts, `-C incremental`…).
    pub not_cacheable: u64,
}

impl std::ops::Sub for CompileCounts {
    type Output = CompileCounts;
    fn sub(self, before: CompileCounts) -> CompileCounts {
        CompileCounts {
            hits: self.hits.saturating_sub(before.hits),
            misses: self.misses.saturating_sub(before.misses),
            not_cacheable: self.not_cacheable.saturating_sub(before.not_cacheable),
        }
    }
}

/// The rustc wrapper cargo will use (`RUSTC_WRAPPER`, `CARGO_BUILD_RUSTC_WRAPPER`), when it
/// is sccache.
pub(crate) fn sccache() -> Option<PathBuf> {
    let wrapper = std::env::var_os("RUSTC_WRAPPER")
        .or_else(|| std::env::var_os("CARGO_BUILD_RUSTC_WRAPPER"))
        .filter(|w| !w.is_empty())?;
    let path = PathBuf::from(wrapper);
    let name = path.file_stem()?.to_string_lossy().into_owned();
    name.starts_with("sccache").then_some(path)
}

/// The command name of the user's rustc wrapper (`RUSTC_WRAPPER`, `CARGO_BUILD_RUSTC_WRAPPER`):
/// its server (sccache's) is meant to outlive the builds that started it, so a build's
/// leftovers spare it (`sys::confine::spare`).
pub(crate) fn name() -> Option<String> {
    let wrapper = std::env::var_os("RUSTC_WRAPPER")
        .or_else(|| std::env::var_os("CARGO_BUILD_RUSTC_WRAPPER"))
        .filter(|w| !w.is_empty())?;
    Some(
        PathBuf::from(wrapper)
            .file_name()?
            .to_string_lossy()
            .into_owned(),
    )
}

/// sccache's counters now (its server's, since it started or was zeroed), when it answers.
pub(crate) fn stats(sccache: &Path) -> Option<CompileCounts> {
    let cmd = process::Command::new(sccache)
        .args(["--show-stats", "--stats-format", "json"])
        .timeout(std::time::Duration::from_secs(30));
    let out = process::run(&cmd).ok()?;
    out.status.success().then_some(())?;
    parse(&String::from_utf8_lossy(&out.stdout))
}

/// The counters of `sccache --show-stats --stats-format json`.
pub(crate) fn parse(json: &str) -> Option<CompileCounts> {
    let v: serde_json::Value = serde_json::from_str(json).ok()?;
    let stats = v.get("stats")?;
    let sum = |key: &str| -> u64 {
        stats
            .get(key)
            .and_then(|c| c.get("counts"))
            .and_then(|c| c.as_object())
            .map(|m| m.values().filter_map(|n| n.as_u64()).sum())
            .unwrap_or(0)
    };
    let n = |key: &str| stats.get(key).and_then(|n| n.as_u64()).unwrap_or(0);
    Some(CompileCounts {
        hits: sum("cache_hits"),
        misses: sum("cache_misses"),
        not_cacheable: n("requests_not_cacheable") + n("non_cacheable_compilations"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sccache_counters_are_read_and_subtracted() {
        let json = r#"{"stats":{"compile_requests":14,"requests_not_cacheable":12,"requests_executed":2,"cache_hits":{"counts":{"Rust":3,"C/C++":1}},"cache_misses":{"counts":{"Rust":2}},"non_cacheable_compilations":1,"not_cached":{"crate-type":2}}}"#;
        let now = parse(json).unwrap();
        assert_eq!(
            now,
            CompileCounts {
                hits: 4,
                misses: 2,
                not_cacheable: 13
            }
        );
        let before = CompileCounts {
            hits: 1,
            misses: 2,
            not_cacheable: 3,
        };
        assert_eq!(
            now - before,
            CompileCounts {
                hits: 3,
                misses: 0,
                not_cacheable: 10
            }
        );
        assert!(parse("not json").is_none());
    }
}
