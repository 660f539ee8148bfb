//! CPU facts: model name and flags from /proc/cpuinfo, the x86-64 microarchitecture level
//! (psABI v1–v4) those flags allow, a few key target features, and what LLVM calls the
//! host CPU (`-Ctarget-cpu=native`). On aarch64: the core LLVM names (`neoverse-n1`,
//! `neoverse-v1`, `neoverse-v2` …) from the MIDR fields /proc/cpuinfo shows (`CPU
//! implementer`, `CPU part`), else the highest of those the HWCAP features (`Features`)
//! allow; on macOS the Apple core (`apple-m1` …) from `sysctl machdep.cpu.brand_string`.
//!
//! The level computation is a pure function of a flag set so it can be tested with known
//! answers; only `CpuFacts::gather` reads the machine.

use std::collections::HashSet;

/// x86-64 psABI baseline (what every x86-64 CPU has). Names as /proc/cpuinfo spells them.
pub(crate) const X86_64_V1_FLAGS: &[&str] = &[
    "cmov", "cx8", "fpu", "fxsr", "mmx", "syscall", "sse", "sse2",
];
/// Added by x86-64-v2: CMPXCHG16B, LAHF/SAHF, POPCNT, SSE3 (`pni`), SSE4.1, SSE4.2, SSSE3.
pub(crate) const X86_64_V2_FLAGS: &[&str] = &[
    "cx16", "lahf_lm", "popcnt", "pni", "sse4_1", "sse4_2", "ssse3",
];
/// Added by x86-64-v3: AVX, AVX2, BMI1, BMI2, F16C, FMA, LZCNT (`abm`), MOVBE, XSAVE.
pub(crate) const X86_64_V3_FLAGS: &[&str] = &[
    "avx", "avx2", "bmi1", "bmi2", "f16c", "fma", "abm", "movbe", "xsave",
];
/// Added by x86-64-v4: AVX512F, AVX512BW, AVX512CD, AVX512DQ, AVX512VL.
pub(crate) const X86_64_V4_FLAGS: &[&str] =
    &["avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl"];

/// Features worth showing: (rustc target-feature name, /proc/cpuinfo flag).
pub(crate) const KEY_FEATURES: &[(&str, &str)] = &[
    ("sse4.2", "sse4_2"),
    ("avx2", "avx2"),
    ("fma", "fma"),
    ("bmi2", "bmi2"),
    ("avx512f", "avx512f"),
];

/// aarch64 cores by their MIDR fields (implementer, part), as LLVM names them.
pub(crate) const AARCH64_CORES: &[(u32, u32, &str)] = &[
    (0x41, 0xd08, "cortex-a72"),
    (0x41, 0xd0b, "cortex-a76"),
    (0x41, 0xd0c, "neoverse-n1"),
    (0x41, 0xd40, "neoverse-v1"),
    (0x41, 0xd49, "neoverse-n2"),
    (0x41, 0xd4f, "neoverse-v2"),
    (0x41, 0xd84, "neoverse-v3"),
    (0x41, 0xd8e, "neoverse-n3"),
    (0x46, 0x001, "a64fx"),
    (0xc0, 0xac3, "ampere1"),
    (0xc0, 0xac4, "ampere1a"),
];

/// aarch64 server cores as levels, each with the HWCAP features (/proc/cpuinfo names) its
/// code needs on top of the one before: a CPU no table names gets the highest it reaches.
pub(crate) const AARCH64_LEVELS: &[(&str, &[&str])] = &[
    (
        "neoverse-n1",
        &[
            "atomics", "asimdrdm", "lrcpc", "dcpop", "asimddp", "fphp", "asimdhp",
        ],
    ),
    ("neoverse-v1", &["sve", "bf16", "i8mm", "ilrcpc", "uscat"]),
    (
        "neoverse-v2",
        &["sve2", "svebf16", "svei8mm", "flagm2", "frint"],
    ),
];

/// The aarch64 core /proc/cpuinfo text describes: its MIDR fields when a table entry names
/// them, else the highest level of [`AARCH64_LEVELS`] its features reach.
pub(crate) fn aarch64_cpu(text: &str) -> Option<&'static str> {
    let hex = |key: &str| {
        let v = value_of(text, key)?;
        u32::from_str_radix(v.trim_start_matches("0x"), 16).ok()
    };
    if let (Some(imp), Some(part)) = (hex("CPU implementer"), hex("CPU part")) {
        let known = AARCH64_CORES
            .iter()
            .find(|(i, p, _)| (*i, *p) == (imp, part));
        if let Some((_, _, name)) = known {
            return Some(name);
        }
    }
    let (_, features) = parse_cpuinfo(text);
    let has = |f: &&str| features.iter().any(|x| x == f);
    AARCH64_LEVELS
        .iter()
        .take_while(|(_, needs)| needs.iter().all(has))
        .last()
        .map(|(name, _)| *name)
}

/// The Apple core of a `machdep.cpu.brand_string` ("Apple M2 Pro" → `apple-m2`).
pub(crate) fn apple_cpu(brand: &str) -> Option<String> {
    let chip = brand.strip_prefix("Apple M")?;
    let gen: String = chip.chars().take_while(char::is_ascii_digit).collect();
    (!gen.is_empty()).then(|| format!("apple-m{gen}"))
}

/// An x86-64 microarchitecture level.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum X86Level {
    V1,
    V2,
    V3,
    V4,
}

impl X86Level {
    pub(crate) const ALL: [X86Level; 4] = [X86Level::V1, X86Level::V2, X86Level::V3, X86Level::V4];

    /// "x86-64-v1" … "x86-64-v4".
    pub(crate) fn name(self) -> &'static str {
        match self {
            X86Level::V1 => "x86-64-v1",
            X86Level::V2 => "x86-64-v2",
            X86Level::V3 => "x86-64-v3",
            X86Level::V4 => "x86-64-v4",
        }
    }

    /// The `-Ctarget-cpu` value for this level (v1 is plain "x86-64").
    pub(crate) fn target_cpu(self) -> &'static str {
        match self {
            X86Level::V1 => "x86-64",
            other => other.name(),
        }
    }

    /// The flags this level adds over the previous one.
    pub(crate) fn added_flags(self) -> &'static [&'static str] {
        match self {
            X86Level::V1 => X86_64_V1_FLAGS,
            X86Level::V2 => X86_64_V2_FLAGS,
            X86Level::V3 => X86_64_V3_FLAGS,
            X86Level::V4 => X86_64_V4_FLAGS,
        }
    }
}

impl std::fmt::Display for X86Level {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl serde::Serialize for X86Level {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

fn flag_set<S: AsRef<str>>(flags: &[S]) -> HashSet<&str> {
    let mut set: HashSet<&str> = flags.iter().map(AsRef::as_ref).collect();
    // LZCNT is reported as `abm` by Linux; accept the direct name too.
    if set.contains("lzcnt") {
        set.insert("abm");
    }
    set
}

/// The highest x86-64 level whose flags (and all lower levels' flags) are all present;
/// `None` when even the v1 baseline is incomplete (not an x86-64 flag set).
pub(crate) fn x86_64_level<S: AsRef<str>>(flags: &[S]) -> Option<X86Level> {
    let set = flag_set(flags);
    X86Level::ALL
        .into_iter()
        .take_while(|level| level.added_flags().iter().all(|f| set.contains(f)))
        .last()
}

/// The level just above the one a CPU reaches and the flags it lacks for it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub(crate) struct NextLevel {
    pub level: X86Level,
    pub missing: Vec<&'static str>,
}

/// The flags missing for the level just above the one `flags` reach (for explanations);
/// `None` at v4.
pub(crate) fn missing_for_next_level<S: AsRef<str>>(flags: &[S]) -> Option<NextLevel> {
    let set = flag_set(flags);
    let next = X86Level::ALL
        .into_iter()
        .find(|level| !level.added_flags().iter().all(|f| set.contains(f)))?;
    let missing = next
        .added_flags()
        .iter()
        .copied()
        .filter(|f| !set.contains(f))
        .collect();
    Some(NextLevel {
        level: next,
        missing,
    })
}

/// Model name and flags from /proc/cpuinfo text (the first processor's; aarch64 calls
/// its flags `Features` and names no model).
pub(crate) fn parse_cpuinfo(text: &str) -> (Option<String>, Vec<String>) {
    let model = value_of(text, "model name").filter(|m| !m.is_empty());
    let flags = (value_of(text, "flags").or_else(|| value_of(text, "Features")))
        .map(|f| f.split_whitespace().map(str::to_string).collect())
        .unwrap_or_default();
    (model, flags)
}

fn value_of(text: &str, key: &str) -> Option<String> {
    text.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        (k.trim() == key).then(|| v.trim().to_string())
    })
}

/// One key target feature and whether this CPU has it.
#[derive(Debug, Clone, serde::Serialize)]
pub(crate) struct CpuFeature {
    /// rustc's target-feature name, e.g. "avx2".
    pub name: &'static str,
    pub present: bool,
}

/// What this machine's CPU offers.
#[derive(Debug, Clone, serde::Serialize)]
pub(crate) struct CpuFacts {
    /// `std::env::consts::ARCH`, e.g. "x86_64".
    pub arch: &'static str,
    /// "model name" from /proc/cpuinfo.
    pub model: Option<String>,
    /// x86-64 level from the flags (`None` on other architectures).
    pub x86_64_level: Option<X86Level>,
    /// The next level and the flags it would need (`None` at v4 or off x86-64).
    pub next_level: Option<NextLevel>,
    pub features: Vec<CpuFeature>,
    /// What LLVM (rustc) takes `-Ctarget-cpu=native` to be, e.g. "znver4".
    pub native_cpu: Option<String>,
    /// aarch64: the core LLVM names (`neoverse-v1`, `apple-m2`), the cpu stage's level.
    pub aarch64_cpu: Option<String>,
}

impl CpuFacts {
    /// The CPU model and x86-64 level from /proc/cpuinfo alone (no rustc query), for the
    /// run's record. Never fails: unknowns are `None`.
    pub(crate) fn model_and_level() -> (Option<String>, Option<X86Level>) {
        let text = crate::sys::cpuinfo().unwrap_or_default();
        let (model, flags) = parse_cpuinfo(&text);
        let flags = with_detected(flags);
        let level = if std::env::consts::ARCH == "x86_64" {
            x86_64_level(&flags)
        } else {
            None
        };
        (model, level)
    }

    /// Read /proc/cpuinfo and ask rustc what `native` means. Never fails: unknowns are `None`.
    pub(crate) fn gather() -> CpuFacts {
        let text = crate::sys::cpuinfo().unwrap_or_default();
        let (model, flags) = parse_cpuinfo(&text);
        let flags = with_detected(flags);
        let model = model.or_else(crate::sys::cpu_brand);
        let x86 = std::env::consts::ARCH == "x86_64";
        CpuFacts {
            arch: std::env::consts::ARCH,
            model,
            x86_64_level: if x86 { x86_64_level(&flags) } else { None },
            next_level: if x86 {
                missing_for_next_level(&flags)
            } else {
                None
            },
            features: KEY_FEATURES
                .iter()
                .map(|(name, flag)| CpuFeature {
                    name,
                    present: flags.iter().any(|f| f == flag),
                })
                .collect(),
            native_cpu: native_cpu(),
            aarch64_cpu: host_aarch64_cpu(&text),
        }
    }
}

/// The flags from /proc/cpuinfo, or where there is none (macOS, Windows) on x86-64 the
/// same names for what the CPU says it has (CPUID, through std's feature detection). The
/// x86-64 baseline and LAHF/SAHF, which std does not detect, are taken as present: every
/// x86-64 CPU has the first, every one with POPCNT the second.
fn with_detected(flags: Vec<String>) -> Vec<String> {
    if !flags.is_empty() {
        return flags;
    }
    #[cfg(target_arch = "x86_64")]
    {
        let mut v: Vec<&str> = X86_64_V1_FLAGS.to_vec();
        macro_rules! detect {
            ($($feature:tt => $flag:literal),* $(,)?) => {
                $(if std::arch::is_x86_feature_detected!($feature) { v.push($flag); })*
            };
        }
        detect!(
            "cmpxchg16b" => "cx16", "popcnt" => "popcnt", "sse3" => "pni", "sse4.1" => "sse4_1",
            "sse4.2" => "sse4_2", "ssse3" => "ssse3", "avx" => "avx", "avx2" => "avx2",
            "bmi1" => "bmi1", "bmi2" => "bmi2", "f16c" => "f16c", "fma" => "fma",
            "lzcnt" => "abm", "movbe" => "movbe", "xsave" => "xsave", "avx512f" => "avx512f",
            "avx512bw" => "avx512bw", "avx512cd" => "avx512cd", "avx512dq" => "avx512dq",
            "avx512vl" => "avx512vl",
        );
        if v.contains(&"popcnt") {
            v.push("lahf_lm");
        }
        v.into_iter().map(str::to_string).collect()
    }
    #[cfg(not(target_arch = "x86_64"))]
    flags
}

/// This aarch64 machine's core: from /proc/cpuinfo on Linux, from the brand string on
/// macOS; `None` elsewhere.
fn host_aarch64_cpu(cpuinfo: &str) -> Option<String> {
    if std::env::consts::ARCH != "aarch64" {
        return None;
    }
    match crate::sys::cpu_brand() {
        Some(brand) if std::env::consts::OS == "macos" => apple_cpu(&brand),
        _ => aarch64_cpu(cpuinfo).map(str::to_string),
    }
}

/// `rustc --print target-cpus` says "native - Select the CPU of the current host
/// (currently znver4)."; take the name in the parentheses.
fn native_cpu() -> Option<String> {
    let out = crate::process::tool_stdout(super::rustc_program(), ["--print", "target-cpus"])?;
    parse_native_cpu(&out)
}

fn parse_native_cpu(text: &str) -> Option<String> {
    let line = text
        .lines()
        .find(|l| l.trim_start().starts_with("native"))?;
    let rest = line.split("(currently ").nth(1)?;
    let name = rest.split(')').next()?.trim().trim_end_matches('.');
    (!name.is_empty()).then(|| name.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    const V1: &str = "fpu vme de pse tsc msr pae mce cx8 apic sep mtrr pge mca cmov pat pse36 \
                      clflush mmx fxsr sse sse2 syscall nx lm";
    const V2_EXTRA: &str = "pni ssse3 cx16 sse4_1 sse4_2 popcnt lahf_lm";
    const V3_EXTRA: &str = "fma movbe xsave avx f16c abm bmi1 avx2 bmi2";
    const V4_EXTRA: &str = "avx512f avx512dq avx512cd avx512bw avx512vl";

    fn flags(parts: &[&str]) -> Vec<String> {
        parts
            .iter()
            .flat_map(|p| p.split_whitespace())
            .map(str::to_string)
            .collect()
    }

    #[test]
    fn levels_known_answers() {
        assert_eq!(x86_64_level(&flags(&[V1])), Some(X86Level::V1));
        assert_eq!(x86_64_level(&flags(&[V1, V2_EXTRA])), Some(X86Level::V2));
        assert_eq!(
            x86_64_level(&flags(&[V1, V2_EXTRA, V3_EXTRA])),
            Some(X86Level::V3)
        );
        assert_eq!(
            x86_64_level(&flags(&[V1, V2_EXTRA, V3_EXTRA, V4_EXTRA])),
            Some(X86Level::V4)
        );
    }

    #[test]
    fn a_gap_caps_the_level() {
        // AVX-512 without BMI2 is still v2: levels are cumulative.
        let f = flags(&[V1, V2_EXTRA, &V3_EXTRA.replace("bmi2", ""), V4_EXTRA]);
        assert_eq!(x86_64_level(&f), Some(X86Level::V2));
        assert_eq!(
            missing_for_next_level(&f),
            Some(NextLevel {
                level: X86Level::V3,
                missing: vec!["bmi2"]
            })
        );
        // Without POPCNT: v1.
        let f = flags(&[V1, &V2_EXTRA.replace("popcnt", "")]);
        assert_eq!(x86_64_level(&f), Some(X86Level::V1));
        // Not an x86-64 flag set at all.
        assert_eq!(x86_64_level(&flags(&["fp asimd evtstrm aes"])), None);
        assert_eq!(x86_64_level::<&str>(&[]), None);
    }

    #[test]
    fn lzcnt_counts_as_abm() {
        let f = flags(&[V1, V2_EXTRA, &V3_EXTRA.replace("abm", "lzcnt")]);
        assert_eq!(x86_64_level(&f), Some(X86Level::V3));
    }

    #[test]
    fn real_epyc_flags_are_v4() {
        let text = "processor\t: 0\nmodel name\t: AMD EPYC\nflags\t\t: fpu vme de pse tsc msr \
            pae mce cx8 apic sep mtrr pge mca cmov pat pse36 clflush mmx fxsr sse sse2 ht syscall \
            nx mmxext fxsr_opt pdpe1gb rdtscp lm constant_tsc rep_good nopl xtopology nonstop_tsc \
            cpuid extd_apicid tsc_known_freq pni pclmulqdq ssse3 fma cx16 pcid sse4_1 sse4_2 \
            x2apic movbe popcnt tsc_deadline_timer aes xsave avx f16c rdrand hypervisor lahf_lm \
            cmp_legacy cr8_legacy abm sse4a misalignsse 3dnowprefetch osvw topoext vmmcall \
            fsgsbase tsc_adjust bmi1 avx2 smep bmi2 erms invpcid avx512f avx512dq rdseed adx \
            smap avx512ifma clflushopt clwb avx512cd sha_ni avx512bw avx512vl xsaveopt\n\
            processor\t: 1\nmodel name\t: other\n";
        let (model, f) = parse_cpuinfo(text);
        assert_eq!(model.as_deref(), Some("AMD EPYC"));
        assert_eq!(x86_64_level(&f), Some(X86Level::V4));
        assert_eq!(missing_for_next_level(&f), None);
    }

    /// /proc/cpuinfo of AWS Graviton 2, 3 and 4 (Neoverse N1, V1, V2), first processor.
    const GRAVITON2: &str = "processor\t: 0\nBogoMIPS\t: 243.75\nFeatures\t: fp asimd evtstrm aes \
        pmull sha1 sha2 crc32 atomics fphp asimdhp cpuid asimdrdm lrcpc dcpop asimddp ssbs\n\
        CPU implementer\t: 0x41\nCPU architecture: 8\nCPU variant\t: 0x3\nCPU part\t: 0xd0c\n\
        CPU revision\t: 1\n";
    const GRAVITON3_FEATURES: &str = "fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics fphp \
        asimdhp cpuid asimdrdm jscvt fcma lrcpc dcpop sha3 sm3 sm4 asimddp sha512 sve asimdfhm \
        dit uscat ilrcpc flagm ssbs paca pacg dcpodp svei8mm svebf16 i8mm bf16 dgh rng";

    #[test]
    fn aarch64_cores_from_known_cpuinfo() {
        assert_eq!(aarch64_cpu(GRAVITON2), Some("neoverse-n1"));
        let (model, features) = parse_cpuinfo(GRAVITON2);
        assert_eq!(model, None, "aarch64 names no model");
        assert!(features.iter().any(|f| f == "asimddp"), "{features:?}");
        let g3 = format!(
            "processor\t: 0\nFeatures\t: {GRAVITON3_FEATURES}\nCPU implementer\t: 0x41\nCPU part\t: 0xd40\n"
        );
        assert_eq!(aarch64_cpu(&g3), Some("neoverse-v1"));
        let g4 = g3.replace("0xd40", "0xd4f");
        assert_eq!(aarch64_cpu(&g4), Some("neoverse-v2"));
        // A part no table names: the highest level its features reach.
        assert_eq!(
            aarch64_cpu(&g3.replace("0xd40", "0x999")),
            Some("neoverse-v1")
        );
        let v2_features = format!("{GRAVITON3_FEATURES} sve2 flagm2 frint");
        let unknown =
            format!("Features\t: {v2_features}\nCPU implementer\t: 0x48\nCPU part\t: 0xd01\n");
        assert_eq!(aarch64_cpu(&unknown), Some("neoverse-v2"));
        // A Cortex-A53 board (no atomics): no level, only `native`.
        let a53 = "Features\t: fp asimd evtstrm crc32 cpuid\nCPU implementer\t: 0x41\nCPU part\t: 0xd03\n";
        assert_eq!(aarch64_cpu(a53), None);
        assert_eq!(aarch64_cpu(""), None);
    }

    /// Where /proc/cpuinfo says nothing, CPUID does: the same level on this machine.
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn detected_flags_give_the_level_cpuinfo_gives() {
        let detected = with_detected(Vec::new());
        assert!(x86_64_level(&detected).is_some(), "{detected:?}");
        if let Some(text) = crate::sys::cpuinfo() {
            let (_, flags) = parse_cpuinfo(&text);
            assert_eq!(x86_64_level(&detected), x86_64_level(&flags));
        }
    }

    #[test]
    fn apple_cores_from_the_brand_string() {
        assert_eq!(apple_cpu("Apple M1").as_deref(), Some("apple-m1"));
        assert_eq!(apple_cpu("Apple M2 Pro").as_deref(), Some("apple-m2"));
        assert_eq!(apple_cpu("Apple M4 Max").as_deref(), Some("apple-m4"));
        assert_eq!(apple_cpu("Intel(R) Core(TM) i9-9880H"), None);
    }

    #[test]
    fn target_cpu_names() {
        assert_eq!(X86Level::V1.target_cpu(), "x86-64");
        assert_eq!(X86Level::V3.target_cpu(), "x86-64-v3");
        assert_eq!(X86Level::V4.to_string(), "x86-64-v4");
    }

    #[test]
    fn native_cpu_from_rustc_output() {
        let text = "Available CPUs for this target:\n    native                  - Select the CPU \
                    of the current host (currently znver4).\n    alderlake\n";
        assert_eq!(parse_native_cpu(text).as_deref(), Some("znver4"));
        assert_eq!(parse_native_cpu("nothing"), None);
    }
}
