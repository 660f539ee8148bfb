//! What the BOLT stage needs to know about an ELF file, read with the `object` crate: does
//! it have a symbol table, link-time relocations of its code, debug info; and the one edit
//! the stage makes to a BOLT input before instrumenting it: shortening symbol names too long
//! for BOLT's instrumentation runtime.
//!
//! Why shorten names: the instrumented binary writes its profile from an exit hook, one
//! line per edge or call (`1 <from-name> <offset> 1 <to-name> <offset> 0 <count>`), built
//! in a fixed buffer of [`BOLT_RT_LINE_BUFFER`] bytes (`BufSize` in bolt/runtime/common.h);
//! a name that does not fit stops the program with `Assertion failed: buffer overflow,
//! function name too large`. Legacy Rust mangling spells out the full type of generic drop
//! glue (`core::ptr::drop_in_place::<Map<Chain<Chain<…>>>>`), and large crates have such
//! names of 5–50 KB. Names longer than [`MAX_NAME`] are rewritten, in the copy BOLT reads,
//! to a short name that keeps their readable start and a hash of the whole (a legacy name
//! stays a valid legacy name, so it still demangles). Instrumentation and optimization
//! read the same rewritten input, so the profile matches; the BOLTed binary carries the
//! short names. Code and data are untouched: only bytes of `.strtab` (which is not loaded
//! at run time) change.
//!
//! Must not: modify any file other than the destination it is given.

use std::path::Path;

use object::elf;
use object::read::elf::{FileHeader, SectionHeader, Sym};
use object::Endianness;

type Header = elf::FileHeader64<Endianness>;

/// The line buffer of BOLT's instrumentation runtime (`BufSize`, bolt/runtime/common.h):
/// llvm-22's libbolt_rt_instr.a reserves 0x2800 bytes of stack for each line and checks
/// names against 0x27e7 (10240 − 25).
pub(crate) const BOLT_RT_LINE_BUFFER: usize = 10240;

/// Names longer than this are shortened. One profile line holds two names (the source and
/// the target of an edge or call) plus about 60 bytes of numbers, so two names of this
/// length always fit.
pub(crate) const MAX_NAME: usize = 4000;

/// A rewritten name keeps this many bytes of every over-long part of the original.
const KEEP: usize = 160;

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct ElfFacts {
    /// `.symtab`: the static symbol table (gone when stripped).
    pub symtab: bool,
    /// `.rela.text`: link-time relocations of the code (present only with --emit-relocs).
    pub text_relocs: bool,
    /// `.debug_info`: DWARF.
    pub debug_info: bool,
    /// The longest name in `.symtab`, in bytes.
    pub longest_name: usize,
    /// How many names in `.symtab` are longer than [`MAX_NAME`].
    pub long_names: usize,
}

/// The facts of the ELF file at `path`.
pub(crate) fn facts(path: &Path) -> Result<ElfFacts, String> {
    let data = std::fs::read(path).map_err(|e| e.to_string())?;
    facts_of(&data)
}

fn parse(data: &[u8]) -> Result<(&Header, Endianness), String> {
    if !data.starts_with(b"\x7fELF") {
        return Err("not an ELF file".into());
    }
    let header = Header::parse(data).map_err(|e| format!("not a 64-bit ELF file ({e})"))?;
    let endian = header
        .endian()
        .map_err(|e| format!("unreadable ELF header ({e})"))?;
    Ok((header, endian))
}

fn facts_of(data: &[u8]) -> Result<ElfFacts, String> {
    let (header, endian) = parse(data)?;
    let sections = header
        .sections(endian, data)
        .map_err(|e| format!("unreadable section headers ({e})"))?;
    let mut facts = ElfFacts::default();
    for section in sections.iter() {
        let name = sections.section_name(endian, section).unwrap_or_default();
        match (section.sh_type(endian), name) {
            (elf::SHT_SYMTAB, _) => facts.symtab = true,
            (elf::SHT_RELA, b".rela.text") => facts.text_relocs = true,
            (_, b".debug_info") => facts.debug_info = true,
            _ => {}
        }
    }
    if facts.symtab {
        let symbols = sections
            .symbols(endian, data, elf::SHT_SYMTAB)
            .map_err(|e| format!("unreadable symbol table ({e})"))?;
        for sym in symbols.iter() {
            let len = sym.name(endian, symbols.strings()).map_or(0, <[u8]>::len);
            facts.longest_name = facts.longest_name.max(len);
            facts.long_names += usize::from(len > MAX_NAME);
        }
    }
    Ok(facts)
}

/// The names in the `.symtab` of the ELF file at `path` (empty when it is stripped).
pub(crate) fn symbol_names(path: &Path) -> Result<std::collections::HashSet<Vec<u8>>, String> {
    let data = std::fs::read(path).map_err(|e| e.to_string())?;
    let (header, endian) = parse(&data)?;
    let sections = header
        .sections(endian, &*data)
        .map_err(|e| format!("unreadable section headers ({e})"))?;
    let symbols = sections
        .symbols(endian, &*data, elf::SHT_SYMTAB)
        .map_err(|e| format!("unreadable symbol table ({e})"))?;
    Ok(symbols
        .iter()
        .filter_map(|sym| sym.name(endian, symbols.strings()).ok())
        .map(<[u8]>::to_vec)
        .collect())
}

/// What [`copy_with_short_names`] did.
pub(crate) use crate::context::facts::Shortened;

/// Copy the ELF file `src` to `dest` with every `.symtab` name longer than [`MAX_NAME`]
/// shortened (module doc). `dest` is written anew; `src` is not touched.
pub(crate) fn copy_with_short_names(src: &Path, dest: &Path) -> Result<Shortened, String> {
    let mut data = std::fs::read(src).map_err(|e| format!("{}: {e}", src.display()))?;
    let (edits, report) = plan_short_names(&data)?;
    for (at, name) in edits {
        data[at..at + name.len()].copy_from_slice(&name);
        data[at + name.len()] = 0;
    }
    let perms = std::fs::metadata(src)
        .map_err(|e| e.to_string())?
        .permissions();
    crate::util::atomic::with_temp(dest, |tmp| {
        std::fs::write(tmp, &data)?;
        std::fs::set_permissions(tmp, perms)
    })
    .map_err(|e| format!("{}: {e}", dest.display()))?;
    Ok(report)
}

/// An in-place edit: the file offset of a name, and its new bytes (without the NUL).
type Edit = (usize, Vec<u8>);

/// The edits that shorten the long names.
fn plan_short_names(data: &[u8]) -> Result<(Vec<Edit>, Shortened), String> {
    let (header, endian) = parse(data)?;
    let sections = header
        .sections(endian, data)
        .map_err(|e| format!("unreadable section headers ({e})"))?;
    let symbols = sections
        .symbols(endian, data, elf::SHT_SYMTAB)
        .map_err(|e| format!("unreadable symbol table ({e})"))?;
    let mut report = Shortened::default();
    if symbols.is_empty() {
        return Ok((Vec::new(), report));
    }
    let strtab_index = symbols.string_section();
    let strtab = sections
        .section(strtab_index)
        .map_err(|e| format!("unreadable string table ({e})"))?;
    let (strtab_at, strtab_len) = strtab
        .file_range(endian)
        .ok_or("the symbol string table has no bytes in the file")?;
    // Every offset into the string table that something names: a rewrite must not reach
    // into another name's bytes.
    let mut offsets: Vec<u32> = symbols.iter().map(|s| s.st_name(endian)).collect();
    if header
        .shstrndx(endian, data)
        .is_ok_and(|i| i as usize == strtab_index.0)
    {
        offsets.extend(sections.iter().map(|s| s.sh_name(endian)));
    }
    offsets.sort_unstable();
    offsets.dedup();

    let mut edits = Vec::new();
    for (i, &off) in offsets.iter().enumerate() {
        let Ok(name) = symbols.strings().get(off) else {
            continue;
        };
        report.longest_before = report.longest_before.max(name.len());
        if name.len() <= MAX_NAME {
            report.longest_after = report.longest_after.max(name.len());
            continue;
        }
        let short = short_name(name);
        let next = offsets.get(i + 1).map_or(u64::MAX, |&n| u64::from(n));
        if next <= u64::from(off) + short.len() as u64 || u64::from(off) >= strtab_len {
            report.left_shared += 1;
            report.longest_after = report.longest_after.max(name.len());
            continue;
        }
        report.names += 1;
        report.longest_after = report.longest_after.max(short.len());
        edits.push((strtab_at as usize + off as usize, short));
    }
    Ok((edits, report))
}

/// A short stand-in for an over-long symbol name, unique by a hash of the whole name.
/// A legacy Rust name (`_ZN` + length-prefixed parts + `E`) stays one, with each long part
/// cut to its first [`KEEP`] bytes plus `::…<hash>`, so `rustc-demangle` and `c++filt` still
/// read it; any other name becomes its first [`KEEP`] bytes plus `.bolt.<hash>`.
pub(crate) fn short_name(name: &[u8]) -> Vec<u8> {
    let hash = format!("{:016x}", fnv1a(name));
    if let Some(parts) = legacy_parts(name) {
        let mut out = b"_ZN".to_vec();
        for part in parts {
            let part: Vec<u8> = if part.len() > KEEP {
                let mut p = legacy_prefix(part, KEEP).to_vec();
                p.extend_from_slice(b"..");
                p.extend_from_slice(format!("long_name_{hash}").as_bytes());
                p
            } else {
                part.to_vec()
            };
            out.extend_from_slice(part.len().to_string().as_bytes());
            out.extend_from_slice(&part);
        }
        out.push(b'E');
        return out;
    }
    let mut out = name[..KEEP.min(name.len())].to_vec();
    out.extend_from_slice(format!(".bolt.{hash}").as_bytes());
    out
}

/// The length-prefixed parts of a legacy-mangled name `_ZN<len><part>…E`.
fn legacy_parts(name: &[u8]) -> Option<Vec<&[u8]>> {
    let mut rest = name.strip_prefix(b"_ZN")?;
    let mut parts = Vec::new();
    loop {
        if rest == b"E" {
            return Some(parts);
        }
        let digits = rest.iter().take_while(|b| b.is_ascii_digit()).count();
        let len: usize = std::str::from_utf8(&rest[..digits]).ok()?.parse().ok()?;
        let part = rest.get(digits..digits + len)?;
        parts.push(part);
        rest = &rest[digits + len..];
    }
}

/// The longest start of a legacy part of at most `max` bytes that does not cut a `$…$`
/// escape or a `..` separator in two.
fn legacy_prefix(part: &[u8], max: usize) -> &[u8] {
    let mut end = max.min(part.len());
    loop {
        let p = &part[..end];
        let open_escape = p.iter().filter(|&&b| b == b'$').count() % 2 == 1;
        if end == 0 || (!open_escape && !p.ends_with(b".")) {
            return p;
        }
        end -= 1;
    }
}

fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn facts_of_this_test_binary_and_of_non_elf_files() {
        let me = std::env::current_exe().unwrap();
        let facts = facts(&me).unwrap();
        assert!(facts.symtab, "test binaries keep their symbols");
        assert!(!facts.text_relocs, "not linked with --emit-relocs");
        assert!(facts.longest_name > 0);
        let tmp = tempfile::tempdir().unwrap();
        let not_elf = tmp.path().join("x");
        std::fs::write(&not_elf, b"#!/bin/sh\necho hi\n").unwrap();
        assert_eq!(super::facts(&not_elf).unwrap_err(), "not an ELF file");
        std::fs::write(&not_elf, b"\x7fELF\x02\x01").unwrap();
        assert!(super::facts(&not_elf)
            .unwrap_err()
            .starts_with("not a 64-bit ELF file"));
    }

    #[test]
    fn a_long_legacy_name_stays_a_legacy_name() {
        let long_part = format!(
            "drop_in_place$LT${}$GT$",
            "core..iter..Chain$LT$".repeat(400)
        );
        let name = format!(
            "_ZN4core3ptr{}{long_part}17h0123456789abcdefE",
            long_part.len()
        );
        assert!(name.len() > MAX_NAME);
        let short = short_name(name.as_bytes());
        let short = String::from_utf8(short).unwrap();
        assert!(short.len() < 300, "{short}");
        let parts: Vec<&[u8]> = legacy_parts(short.as_bytes()).expect("valid legacy name");
        assert_eq!(parts[0], b"core");
        assert_eq!(parts[1], b"ptr");
        assert!(parts[2].starts_with(b"drop_in_place$LT$core..iter..Chain$LT$"));
        let hash = format!("..long_name_{:016x}", fnv1a(name.as_bytes()));
        assert!(parts[2].ends_with(hash.as_bytes()), "{short}");
        // Escapes are never cut in two.
        let kept = &parts[2][..parts[2].len() - hash.len()];
        assert_eq!(kept.iter().filter(|&&b| b == b'$').count() % 2, 0);
        assert_eq!(parts[3], b"h0123456789abcdef");
        // Different long names stay different.
        let other = name.replace("17h0123456789abcdef", "17h0123456789abcdee");
        assert_ne!(short_name(other.as_bytes()), short.as_bytes());
    }

    #[test]
    fn other_long_names_keep_their_start() {
        let name = format!("_R{}", "x".repeat(5000));
        let short = String::from_utf8(short_name(name.as_bytes())).unwrap();
        assert!(short.starts_with("_Rxxxx"));
        assert!(short.contains(".bolt."));
        assert!(short.len() < 200, "{short}");
    }

    #[test]
    fn copying_a_binary_without_long_names_changes_no_byte() {
        let me = std::env::current_exe().unwrap();
        let before = facts(&me).unwrap();
        if before.long_names > 0 {
            return; // not the case this test is about
        }
        let tmp = tempfile::tempdir().unwrap();
        let copy = tmp.path().join("copy");
        let report = copy_with_short_names(&me, &copy).unwrap();
        assert_eq!(report.names, 0);
        assert_eq!(report.longest_before, before.longest_name);
        assert_eq!(std::fs::read(&me).unwrap(), std::fs::read(&copy).unwrap());
    }
}
