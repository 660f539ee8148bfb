//! What works on which platform: one row per feature — works, or skipped with the reason
//! and what to do instead — as `doctor` prints it under "Platform" and as the docs'
//! Platforms table says it. A pure function of the OS and architecture, so each platform's
//! answer is tested here on every platform.
//!
//! Must not: probe tools (doctor's other sections do); it says what the platform allows.

use serde::Serialize;

/// One feature on one platform.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct Row {
    pub feature: &'static str,
    pub works: bool,
    /// How it works here, or why it is skipped and what to do instead.
    pub detail: String,
}

fn row(feature: &'static str, works: bool, detail: impl Into<String>) -> Row {
    Row {
        feature,
        works,
        detail: detail.into(),
    }
}

/// What works on `os` (`std::env::consts::OS`) and `arch` (`…::ARCH`).
pub(crate) fn rows(os: &str, arch: &str) -> Vec<Row> {
    let linux = os == "linux";
    let tree = match os {
        "windows" => {
            "a job object per workload (killed whole), CPU times and peak memory from the job"
        }
        _ => "a process group per workload (killed whole), rusage",
    };
    let cpu = match (arch, os) {
        ("x86_64", _) => "x86-64 levels (x86-64-v2 … v4) and `native`".to_string(),
        ("aarch64", "macos") => {
            "the Apple core (`apple-m1` …, from `sysctl machdep.cpu.brand_string`) and `native`"
                .to_string()
        }
        ("aarch64", _) => "the core (`neoverse-n1`, `neoverse-v1`, `neoverse-v2` …, from /proc/cpuinfo's MIDR or HWCAP features) and `native`".to_string(),
        (other, _) => format!("`native` only (no named levels for {other})"),
    };
    let not_linux = |what: &str| format!("skipped: {what} is Linux-only");
    vec![
        row("workloads", true, tree),
        row(
            "PGO",
            true,
            "instrumented build, training, llvm-profdata (rustup's llvm-tools)",
        ),
        row("CPU levels", true, cpu),
        row(
            "BOLT",
            linux,
            match linux {
                true => "llvm-bolt on ELF binaries (instrumentation; perf + LBR sampling where the CPU has it)".to_string(),
                false => format!("skipped: llvm-bolt rewrites Linux ELF binaries only, and {os} builds none; BOLT a Linux build (a Linux CI cell)"),
            },
        ),
        row(
            "flamegraphs",
            linux,
            match linux {
                true => "`hotspots --flamegraph` with perf record".to_string(),
                false => not_linux("perf") + "; `hotspots` (from the PGO profile) works",
            },
        ),
        row(
            "cold starts",
            linux,
            match linux {
                true => "`start = \"cold\"`: files dropped from the page cache (posix_fadvise) before each run".to_string(),
                false => not_linux("dropping a file from the page cache") + ": such workloads run warm, and the run says so",
            },
        ),
        row(
            "other targets",
            true,
            "through cargo's runner (target.<triple>.runner, e.g. qemu-aarch64): `release` trains and verifies there, never times; the ladder times only a runner declared real hardware ([bench] runner-is-native = true)",
        ),
    ]
}

/// This platform's rows.
pub(crate) fn here() -> Vec<Row> {
    rows(std::env::consts::OS, std::env::consts::ARCH)
}

/// The reason a `start = "cold"` workload runs warm here (`None` where cold starts work).
pub(crate) fn cold_start_skipped() -> Option<String> {
    (!crate::sys::can_evict()).then(|| {
        format!(
            "cold starts are skipped on {}: dropping a file from the page cache is Linux-only, so the workload runs warm",
            std::env::consts::OS
        )
    })
}

/// The C compiler the `cc` crate will use for `target` (what builds the C code of crates
/// such as mimalloc): `CC_<target>`, `TARGET_CC` or `CC` when set, else the platform's
/// default (`cc`, `gcc` or `clang`; `cl.exe` for MSVC) found on the PATH; `None`: none.
pub(crate) fn c_compiler(target: &str) -> Option<String> {
    let vars = [
        format!("CC_{target}"),
        format!("CC_{}", target.replace('-', "_")),
        "TARGET_CC".into(),
        "CC".into(),
    ];
    for v in &vars {
        if let Some(cc) = std::env::var_os(v).filter(|s| !s.is_empty()) {
            return Some(format!("{} (${v})", cc.to_string_lossy()));
        }
    }
    let names: &[&str] = match target.contains("msvc") {
        true => &["cl.exe"],
        false => &["cc", "gcc", "clang"],
    };
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .flat_map(|d| names.iter().map(move |n| d.join(n)))
        .find(|p| p.is_file())
        .map(|p| p.display().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn find<'a>(rows: &'a [Row], feature: &str) -> &'a Row {
        rows.iter()
            .find(|r| r.feature.starts_with(feature))
            .unwrap()
    }

    #[test]
    fn each_platform_says_what_works_and_why_not() {
        let linux = rows("linux", "aarch64");
        assert!(linux.iter().all(|r| r.works), "{linux:?}");
        assert!(find(&linux, "CPU levels").detail.contains("neoverse-v1"));
        let mac = rows("macos", "aarch64");
        assert!(find(&mac, "CPU levels").detail.contains("apple-m1"));
        for f in ["BOLT", "flamegraphs", "cold starts"] {
            let r = find(&mac, f);
            assert!(!r.works && r.detail.starts_with("skipped: "), "{r:?}");
        }
        assert!(find(&mac, "BOLT").detail.contains("ELF"));
        let win = rows("windows", "x86_64");
        assert!(find(&win, "workloads").detail.contains("job object"));
        assert!(find(&win, "CPU levels").detail.contains("x86-64-v2"));
        assert!(find(&win, "PGO").works && !find(&win, "cold starts").works);
        assert!(find(&rows("linux", "riscv64"), "CPU levels")
            .detail
            .starts_with("`native` only"));
    }
}
