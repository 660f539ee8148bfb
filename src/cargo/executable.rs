//! Whether a build's output is a whole executable for its target: parsed by `object` in
//! the target's format (ELF, Mach-O, PE) and for its architecture, an executable (a PIE
//! included), every section and segment inside the file. Cargo judges an output fresh by
//! file times alone, so a truncated binary looks fresh to it; a fresh output, the binary a
//! kept build record hands out and a binary about to be kept are checked with [`check`].
//! A target whose format is none of these (wasm, …) is not checked.
//!
//! Must not: run what it checks.

use std::path::Path;

use object::{Architecture, BinaryFormat, Object, ObjectKind, ObjectSection, ObjectSegment};

/// `Ok` when `path` is a whole executable for `target` (`None`: this host), else what it is
/// not.
pub(crate) fn check(path: &Path, target: Option<&str>) -> Result<(), String> {
    let (format, archs) = expected(target);
    let Some(format) = format else {
        return Ok(());
    };
    let data = std::fs::read(path).map_err(|e| format!("it cannot be read: {e}"))?;
    whole(&data, format, &archs)
}

/// [`check`] on the file's bytes.
fn whole(data: &[u8], format: BinaryFormat, archs: &[Architecture]) -> Result<(), String> {
    let file = object::File::parse(data)
        .map_err(|e| format!("it is not a whole executable ({e}; {} bytes)", data.len()))?;
    if file.format() != format {
        return Err(format!(
            "it is {:?}, not {format:?} as the target's executables are",
            file.format()
        ));
    }
    if !matches!(file.kind(), ObjectKind::Executable | ObjectKind::Dynamic) {
        return Err(format!(
            "it is no executable (an object of kind {:?})",
            file.kind()
        ));
    }
    if !archs.is_empty() && !archs.contains(&file.architecture()) {
        return Err(format!(
            "it is built for {:?}, not for the target",
            file.architecture()
        ));
    }
    let len = data.len() as u64;
    let past_end = |(offset, size): (u64, u64)| offset.checked_add(size).is_none_or(|e| e > len);
    let section = file
        .sections()
        .find(|s| s.file_range().is_some_and(past_end));
    let segment = file.segments().find(|s| past_end(s.file_range()));
    if section.is_some() || segment.is_some() {
        return Err(format!(
            "it is cut short: a part of it lies past its end ({len} bytes)"
        ));
    }
    Ok(())
}

/// The format and architectures of `target`'s executables (`None`: this host); no format for
/// a target this does not know, no architecture for an architecture it does not know.
fn expected(target: Option<&str>) -> (Option<BinaryFormat>, Vec<Architecture>) {
    let (arch, os) = match target {
        Some(t) => (t.split('-').next().unwrap_or(""), t),
        None => (std::env::consts::ARCH, std::env::consts::OS),
    };
    let format = if os.contains("windows") {
        Some(BinaryFormat::Pe)
    } else if os.contains("apple") || os.contains("darwin") || os.contains("macos") {
        Some(BinaryFormat::MachO)
    } else if ["linux", "android", "bsd", "illumos", "solaris"]
        .iter()
        .any(|k| os.contains(k))
    {
        Some(BinaryFormat::Elf)
    } else {
        None
    };
    use Architecture as A;
    let archs = match arch {
        "x86_64" => vec![A::X86_64, A::X86_64_X32],
        "aarch64" | "arm64" | "arm64e" => vec![A::Aarch64, A::Aarch64_Ilp32],
        "x86" | "i386" | "i586" | "i686" => vec![A::I386],
        "riscv64" | "riscv64gc" => vec![A::Riscv64],
        "powerpc64" | "powerpc64le" => vec![A::PowerPc64],
        "s390x" => vec![A::S390x],
        "loongarch64" => vec![A::LoongArch64],
        a if a.starts_with("arm") || a.starts_with("thumb") => vec![A::Arm],
        _ => Vec::new(),
    };
    (format, archs)
}

/// A minimal x86-64 Linux executable (an ELF header and one loaded segment holding the
/// file) followed by `payload`, for tests of what handles binaries.
#[cfg(test)]
pub(crate) fn tiny_elf(payload: &[u8]) -> Vec<u8> {
    let len = (64 + 56 + payload.len()) as u64;
    let mut b = vec![0x7f, b'E', b'L', b'F', 2, 1, 1, 0];
    b.resize(16, 0);
    b.extend(2u16.to_le_bytes()); // ET_EXEC
    b.extend(62u16.to_le_bytes()); // EM_X86_64
    b.extend(1u32.to_le_bytes());
    b.extend(0x40_0078u64.to_le_bytes()); // entry
    b.extend(64u64.to_le_bytes()); // program headers
    b.extend(0u64.to_le_bytes()); // no section headers
    b.extend(0u32.to_le_bytes());
    for half in [64u16, 56, 1, 64, 0, 0] {
        b.extend(half.to_le_bytes());
    }
    b.extend(1u32.to_le_bytes()); // PT_LOAD
    b.extend(5u32.to_le_bytes()); // r-x
    for word in [0, 0x40_0000, 0x40_0000, len, len, 0x1000u64] {
        b.extend(word.to_le_bytes());
    }
    b.extend(payload);
    b
}

/// The target [`tiny_elf`] is for.
#[cfg(test)]
pub(crate) const TINY_TARGET: &str = "x86_64-unknown-linux-gnu";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tiny_elf_is_whole_until_it_is_cut() {
        let (format, archs) = expected(Some(TINY_TARGET));
        let bytes = tiny_elf(b"payload");
        assert_eq!(whole(&bytes, format.unwrap(), &archs), Ok(()));
        let e = whole(&bytes[..bytes.len() - 1], format.unwrap(), &archs).unwrap_err();
        assert!(e.contains("cut short"), "{e}");
    }

    /// This test binary is a whole executable for the host; cut short, a script, or for
    /// another target, it is not.
    #[test]
    fn a_whole_executable_passes_and_a_cut_one_or_a_script_does_not() {
        let me = std::env::current_exe().unwrap();
        assert_eq!(check(&me, None), Ok(()));
        let dir = tempfile::tempdir().unwrap();
        let bytes = std::fs::read(&me).unwrap();
        let (format, archs) = expected(None);
        let format = format.unwrap();
        assert_eq!(whole(&bytes, format, &archs), Ok(()));
        for len in [1000, bytes.len() / 2, bytes.len() - 1] {
            let e = whole(&bytes[..len], format, &archs).unwrap_err();
            assert!(
                e.contains("not a whole") || e.contains("cut short"),
                "{len}: {e}"
            );
        }
        let script = dir.path().join("script");
        std::fs::write(&script, "#!/bin/sh\necho hi\n").unwrap();
        assert!(check(&script, None).is_err());
        let other = if cfg!(target_arch = "x86_64") {
            "aarch64-unknown-linux-gnu"
        } else {
            "x86_64-unknown-linux-gnu"
        };
        if cfg!(target_os = "linux") {
            let e = check(&me, Some(other)).unwrap_err();
            assert!(e.contains("not for the target"), "{e}");
        }
        assert_eq!(check(&script, Some("wasm32-unknown-unknown")), Ok(()));
    }
}
