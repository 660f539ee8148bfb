//! What works on which platform: one row per feature — works, or skipped with the reason
//! and what to do instead — as `doctor` prints it under "Platform" and as the docs'
//! Platforms table says it. A pure function of the OS and architecture, so each platform's
//! answer is tested here on every platform.
//!
//! And where a shared library the loader can preload is ([`shared_library`]: the alloc
//! stage's preview, and doctor's line about it).
//!
//! Must not: probe tools (doctor's other sections do); it says what the platform allows.

use std::path::{Path, PathBuf};

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

/// The file names of mimalloc's shared build (Debian's `libmimalloc2.0`), which the alloc
/// stage preloads to preview mimalloc (`cargo::alloc::ALLOCATORS`) and doctor looks for.
pub(crate) const MIMALLOC_SHARED: [&str; 2] = ["libmimalloc.so.2", "libmimalloc.so"];

/// The shared library of one of `names` (its file names, in order of preference) that the
/// loader can load into a program built for the Linux `target` that is like `binary`: in
/// the loader's usual folders for the target's architecture, an ELF file of `binary`'s
/// class and machine (the loader ignores another's, saying so on stderr). `None`: none.
pub(crate) fn shared_library(names: &[&str], target: &str, binary: &Path) -> Option<PathBuf> {
    let arch = target.split('-').next().unwrap_or_default();
    let arch = match arch.starts_with('i') && arch.ends_with("86") {
        true => "i386",
        false => arch,
    };
    let multiarch = format!("{arch}-linux-gnu");
    let dirs = [
        Path::new("/usr/lib").join(&multiarch),
        Path::new("/lib").join(&multiarch),
        PathBuf::from("/usr/lib64"),
        PathBuf::from("/usr/local/lib"),
        PathBuf::from("/usr/lib"),
    ];
    find_library(&dirs, names, elf_kind(binary)?)
}

/// The first of `names` in one of `dirs`, folder by folder, that is an ELF file of `kind`.
fn find_library(dirs: &[PathBuf], names: &[&str], kind: [u8; 3]) -> Option<PathBuf> {
    dirs.iter()
        .flat_map(|d| names.iter().map(move |n| d.join(n)))
        .find(|p| elf_kind(p) == Some(kind))
}

/// An ELF file's class, byte order and machine (`e_ident[4..6]`, the low byte of
/// `e_machine`); `None` for anything else.
fn elf_kind(path: &Path) -> Option<[u8; 3]> {
    use std::io::Read;
    let mut head = [0u8; 20];
    std::fs::File::open(path).ok()?.read_exact(&mut head).ok()?;
    let machine = match head[5] == 1 {
        true => head[18],
        false => head[19],
    };
    (head[..4] == *b"\x7fELF").then_some([head[4], head[5], machine])
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An ELF header of `class` (1: 32-bit, 2: 64-bit), little-endian, for `machine`.
    fn elf(class: u8, machine: u8) -> Vec<u8> {
        let mut h = b"\x7fELF".to_vec();
        h.extend([class, 1, 1]);
        h.resize(18, 0);
        h.extend([machine, 0, 1, 0]);
        h
    }

    #[test]
    fn a_shared_library_is_the_first_of_the_binary_s_kind_folder_by_folder() {
        let tmp = tempfile::tempdir().unwrap();
        let (d32, d64) = (tmp.path().join("32"), tmp.path().join("64"));
        for d in [&d32, &d64] {
            std::fs::create_dir_all(d).unwrap();
        }
        // A 32-bit x86 build first in the search, then the x86-64 one under its second name.
        std::fs::write(d32.join("libm.so.2"), elf(1, 3)).unwrap();
        std::fs::write(d64.join("libm.so"), elf(2, 62)).unwrap();
        std::fs::write(d64.join("notelf.so.2"), b"INPUT(libm.so)\n").unwrap();
        let bin = tmp.path().join("bin");
        std::fs::write(&bin, elf(2, 62)).unwrap();
        let kind = elf_kind(&bin).unwrap();
        let dirs = [tmp.path().join("none"), d32.clone(), d64.clone()];
        assert_eq!(
            find_library(&dirs, &["libm.so.2", "libm.so"], kind),
            Some(d64.join("libm.so"))
        );
        assert_eq!(find_library(&dirs, &["notelf.so.2"], kind), None);
        assert_eq!(elf_kind(&d64.join("notelf.so.2")), None);
        assert_eq!(
            shared_library(&["libm.so"], "x86_64-unknown-linux-gnu", &d32),
            None
        );
    }

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
