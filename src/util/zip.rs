//! Files read out of a zip archive (a Python wheel): the central directory found from the
//! end record, each entry stored or deflated (`flate2`), its CRC-32 and size checked. No
//! ZIP64, encryption or other compression methods: an error names what the archive uses.
//!
//! Must not: write anything.

use std::io::Read;

const END_SIG: u32 = 0x0605_4b50;
const CENTRAL_SIG: u32 = 0x0201_4b50;
const LOCAL_SIG: u32 = 0x0403_4b50;
/// The end record's size without its comment; the comment is at most 64 KiB.
const END_LEN: usize = 22;

/// One entry of the central directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Entry {
    pub(crate) name: String,
    method: u16,
    crc: u32,
    compressed: usize,
    size: usize,
    local_offset: usize,
}

fn u16_at(b: &[u8], at: usize) -> Result<u16, String> {
    (b.get(at..at + 2))
        .map(|s| u16::from_le_bytes([s[0], s[1]]))
        .ok_or_else(|| "truncated".to_string())
}

fn u32_at(b: &[u8], at: usize) -> Result<u32, String> {
    (b.get(at..at + 4))
        .map(|s| u32::from_le_bytes([s[0], s[1], s[2], s[3]]))
        .ok_or_else(|| "truncated".to_string())
}

/// The entries of the archive `zip`, in the central directory's order.
pub(crate) fn entries(zip: &[u8]) -> Result<Vec<Entry>, String> {
    let lowest = zip.len().saturating_sub(END_LEN + usize::from(u16::MAX));
    let end = (lowest..=zip.len().saturating_sub(END_LEN))
        .rev()
        .find(|&at| u32_at(zip, at) == Ok(END_SIG))
        .ok_or("not a zip archive (no end of central directory record)")?;
    let count = usize::from(u16_at(zip, end + 10)?);
    let mut at = u32_at(zip, end + 16)? as usize;
    if count == usize::from(u16::MAX) || at == u32::MAX as usize {
        return Err("a ZIP64 archive, which is not read here".into());
    }
    let mut out = Vec::with_capacity(count);
    for _ in 0..count {
        if u32_at(zip, at)? != CENTRAL_SIG {
            return Err(format!("no central directory entry at byte {at}"));
        }
        let name_len = usize::from(u16_at(zip, at + 28)?);
        let skip = usize::from(u16_at(zip, at + 30)?) + usize::from(u16_at(zip, at + 32)?);
        let name = zip.get(at + 46..at + 46 + name_len).ok_or("truncated")?;
        out.push(Entry {
            name: String::from_utf8_lossy(name).into_owned(),
            method: u16_at(zip, at + 10)?,
            crc: u32_at(zip, at + 16)?,
            compressed: u32_at(zip, at + 20)? as usize,
            size: u32_at(zip, at + 24)? as usize,
            local_offset: u32_at(zip, at + 42)? as usize,
        });
        at += 46 + name_len + skip;
    }
    Ok(out)
}

/// The content of `entry` of `zip`, checked against its recorded size and CRC-32.
pub(crate) fn read(zip: &[u8], entry: &Entry) -> Result<Vec<u8>, String> {
    let at = entry.local_offset;
    if u32_at(zip, at)? != LOCAL_SIG {
        return Err(format!("{}: no local header at byte {at}", entry.name));
    }
    let start = at + 30 + usize::from(u16_at(zip, at + 26)?) + usize::from(u16_at(zip, at + 28)?);
    let data = (zip.get(start..start + entry.compressed))
        .ok_or_else(|| format!("{}: truncated", entry.name))?;
    let bytes = match entry.method {
        0 => data.to_vec(),
        8 => {
            let mut out = Vec::with_capacity(entry.size);
            flate2::read::DeflateDecoder::new(data)
                .read_to_end(&mut out)
                .map_err(|e| format!("{}: {e}", entry.name))?;
            out
        }
        m => {
            return Err(format!(
                "{}: compression method {m}, not stored (0) or deflated (8)",
                entry.name
            ))
        }
    };
    let mut crc = flate2::Crc::new();
    crc.update(&bytes);
    if bytes.len() != entry.size || crc.sum() != entry.crc {
        return Err(format!("{}: damaged (size or CRC-32 differ)", entry.name));
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A zip of `files` (name, content, deflated?) written by hand as the format says.
    fn zip_of(files: &[(&str, &[u8], bool)]) -> Vec<u8> {
        use std::io::Write;
        let (mut out, mut central) = (Vec::new(), Vec::new());
        for (name, content, deflate) in files {
            let data = match deflate {
                true => {
                    let mut e = flate2::write::DeflateEncoder::new(
                        Vec::new(),
                        flate2::Compression::default(),
                    );
                    e.write_all(content).unwrap();
                    e.finish().unwrap()
                }
                false => content.to_vec(),
            };
            let mut crc = flate2::Crc::new();
            crc.update(content);
            let method: u16 = if *deflate { 8 } else { 0 };
            let offset = out.len() as u32;
            let fixed = |sig: u32| {
                let mut h = sig.to_le_bytes().to_vec();
                h.extend([20, 0, 20, 0, 0, 0]);
                h
            };
            let mut local = LOCAL_SIG.to_le_bytes().to_vec();
            local.extend([20, 0, 0, 0]);
            local.extend(method.to_le_bytes());
            local.extend([0; 4]);
            for v in [crc.sum(), data.len() as u32, content.len() as u32] {
                local.extend(v.to_le_bytes());
            }
            local.extend((name.len() as u16).to_le_bytes());
            local.extend([0, 0]);
            out.extend(local);
            out.extend(name.as_bytes());
            out.extend(&data);
            let mut c = fixed(CENTRAL_SIG);
            c.extend(method.to_le_bytes());
            c.extend([0; 4]);
            for v in [crc.sum(), data.len() as u32, content.len() as u32] {
                c.extend(v.to_le_bytes());
            }
            c.extend((name.len() as u16).to_le_bytes());
            c.extend([0; 12]);
            c.extend(offset.to_le_bytes());
            c.extend(name.as_bytes());
            central.extend(c);
        }
        let cd_offset = out.len() as u32;
        let cd_len = central.len() as u32;
        out.extend(central);
        out.extend(END_SIG.to_le_bytes());
        out.extend([0; 4]);
        let n = (files.len() as u16).to_le_bytes();
        out.extend(n);
        out.extend(n);
        out.extend(cd_len.to_le_bytes());
        out.extend(cd_offset.to_le_bytes());
        out.extend([0, 0]);
        out
    }

    #[test]
    fn stored_and_deflated_entries_read_back_checked() {
        let module = b"\x7fELF module bytes ".repeat(50);
        let zip = zip_of(&[
            ("pkg/__init__.py", b"from .m import *\n", false),
            ("pkg/m.cpython-311-x86_64-linux-gnu.so", &module, true),
        ]);
        let e = entries(&zip).unwrap();
        let names: Vec<&str> = e.iter().map(|e| e.name.as_str()).collect();
        assert_eq!(
            names,
            ["pkg/__init__.py", "pkg/m.cpython-311-x86_64-linux-gnu.so"]
        );
        assert_eq!(read(&zip, &e[0]).unwrap(), b"from .m import *\n");
        assert_eq!(read(&zip, &e[1]).unwrap(), module);
        let mut damaged = zip.clone();
        damaged[e[1].local_offset + 30 + e[1].name.len() + 2] ^= 0xff;
        assert!(read(&damaged, &e[1]).is_err());
        assert!(entries(b"not a zip at all, just some text here").is_err());
    }
}
