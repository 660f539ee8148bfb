//! Small helpers every layer may use: text indentation, file-name sanitising, TOML string
//! literals, durations as users write them and as we print them, text shortened on a
//! character boundary (`clip`), resetting a scratch folder and making a fresh one no other
//! process shares. Lowest layer: imports nothing from the crate but `sys`. Submodules:
//! `atomic` (files a user names, written whole), `mirror` (a folder kept in step with a
//! source tree), `nofollow` (writing into the tool's own copies of a tree: never through a
//! link, never opening a special file), `zip` (files read out of a zip archive: a wheel).

pub(crate) mod atomic;
pub(crate) mod mirror;
pub(crate) mod nofollow;

use std::path::{Path, PathBuf};
use std::time::Duration;

/// `line` wrapped at spaces to `width` columns (colour codes take none); continuation lines
/// are indented to where the first line's text starts after its indentation and any `└ `
/// or `- ` marker. A word longer than the width stays whole.
pub(crate) fn wrap(line: &str, width: usize) -> String {
    if visible_len(line) <= width {
        return line.to_string();
    }
    let lead = line.len() - line.trim_start().len();
    let rest = &line[lead..];
    let marker = ["└ ", "- "]
        .iter()
        .find(|m| rest.starts_with(**m))
        .map_or(0, |m| m.chars().count());
    let indent = " ".repeat(lead + marker.max(2));
    let mut out = String::new();
    let mut cur = line[..lead].to_string();
    let mut cur_len = lead;
    for word in rest.split(' ') {
        let wl = visible_len(word);
        let at_start = cur_len == lead || cur.trim().is_empty();
        if !at_start && cur_len + 1 + wl > width {
            out.push_str(cur.trim_end());
            out.push('\n');
            cur = indent.clone();
            cur_len = indent.len();
        } else if !at_start {
            cur.push(' ');
            cur_len += 1;
        }
        cur.push_str(word);
        cur_len += wl;
    }
    out.push_str(cur.trim_end());
    out
}

/// Characters a terminal shows: ANSI colour sequences (`ESC [ … m`) take no column.
pub(crate) fn visible_len(s: &str) -> usize {
    let mut n = 0;
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c == '\x1b' {
            for d in chars.by_ref() {
                if d == 'm' {
                    break;
                }
            }
        } else {
            n += 1;
        }
    }
    n
}

/// Every non-empty line of `text` prefixed with `prefix` (empty lines stay empty, so a
/// block pasted into a message carries no trailing spaces).
pub(crate) fn indent(text: &str, prefix: &str) -> String {
    text.lines()
        .map(|l| {
            if l.is_empty() {
                String::new()
            } else {
                format!("{prefix}{l}")
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// `s` made safe as one file-name component: characters other than ASCII letters, digits
/// and `keep` become `_`.
pub(crate) fn file_safe(s: &str, keep: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || keep.contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// A TOML string literal for `s`: a literal string (`'…'`, no escaping of `\`) when it can
/// be one, else a basic string with escapes.
pub(crate) fn toml_string(s: &str) -> String {
    if !s.contains('\'') && !s.contains('\n') && !s.chars().any(char::is_control) {
        format!("'{s}'")
    } else {
        toml::Value::String(s.to_string()).to_string()
    }
}

/// A duration as users write it: `30s`, `2m`, `1m30s`, `500ms`, or plain seconds (`20`,
/// `2.5`). The error says what was wrong; callers add where and the fix.
pub(crate) fn parse_duration(s: &str) -> Result<Duration, String> {
    let t = s.trim();
    if let Ok(secs) = t.parse::<f64>() {
        return if (0.0..1e12).contains(&secs) {
            Ok(Duration::from_secs_f64(secs))
        } else {
            Err(format!("`{s}` is not a number of seconds"))
        };
    }
    humantime::parse_duration(t).map_err(|e| format!("`{s}` is not a duration ({e})"))
}

/// `error` with what was being done and where, and for a full disk (or quota) how to
/// make room: the bare OS message ("No space left on device (os error 28)") says neither.
pub(crate) fn io_error(error: std::io::Error, doing: &str, path: &Path) -> std::io::Error {
    let full = matches!(error.raw_os_error(), Some(28) | Some(122)); // ENOSPC, EDQUOT
    let hint = if full {
        let dir = path.parent().unwrap_or(path);
        format!(
            "\n  fix: free space on the disk that holds {} (`df -h {}`; `cargo optimize clean` removes old runs and builds), or point --target-dir at a disk with room",
            dir.display(),
            dir.display()
        )
    } else {
        String::new()
    };
    std::io::Error::new(
        error.kind(),
        format!("{doing} {}: {error}{hint}", path.display()),
    )
}

/// A size as users write it: `500M`, `5G`, `1024K`, `3GiB`, or plain bytes.
pub(crate) fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let split = t.find(|c: char| c.is_ascii_alphabetic()).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let n: f64 = num
        .trim()
        .parse()
        .map_err(|_| format!("`{s}` is not a size (examples: 500M, 5G)"))?;
    let scale: u64 = match unit.trim().to_ascii_uppercase().as_str() {
        "" | "B" => 1,
        "K" | "KB" | "KIB" => 1 << 10,
        "M" | "MB" | "MIB" => 1 << 20,
        "G" | "GB" | "GIB" => 1 << 30,
        "T" | "TB" | "TIB" => 1 << 40,
        _ => return Err(format!("`{s}`: unknown unit `{unit}` (use K, M, G or T)")),
    };
    if !(n.is_finite() && n >= 0.0) {
        return Err(format!("`{s}` is not a size"));
    }
    Ok((n * scale as f64) as u64)
}

/// `p` made absolute against the current directory (not canonicalised: it may not exist).
pub(crate) fn absolute(p: &Path) -> PathBuf {
    if p.is_absolute() {
        p.to_path_buf()
    } else {
        std::env::current_dir().unwrap_or_default().join(p)
    }
}

/// Whether the existing file `path` lies inside the existing folder `dir` once both are
/// resolved (symlinks followed, `..` taken out): a path a cache entry or a report names is
/// used only where we put it.
pub(crate) fn lies_inside(path: &Path, dir: &Path) -> bool {
    match (path.canonicalize(), dir.canonicalize()) {
        (Ok(p), Ok(d)) => p != d && p.starts_with(d),
        _ => false,
    }
}

/// Remove `dir` if it exists, then create it empty.
pub(crate) fn reset_dir(dir: &Path) -> std::io::Result<()> {
    match std::fs::remove_dir_all(dir) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(e),
    }
    std::fs::create_dir_all(dir)
}

/// A new folder in `parent` (made first when missing) that this call alone created: `stem`,
/// else — when that name is taken, say by a run of another PID namespace with the same pid in
/// the same second — `stem-<4 random hex digits>`, each tried with an exclusive create
/// (`create_dir`, never `create_dir_all`: an existing folder is never shared). Its name and
/// path; an error after 100 taken names. Run folders, release staging folders and check
/// worktrees are made here.
pub(crate) fn create_fresh_dir(parent: &Path, stem: &str) -> std::io::Result<(String, PathBuf)> {
    std::fs::create_dir_all(parent)?;
    let mut name = stem.to_string();
    for _ in 0..100 {
        let path = parent.join(&name);
        match std::fs::create_dir(&path) {
            Ok(()) => return Ok((name, path)),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                name = format!("{stem}-{:04x}", fastrand::u16(..));
            }
            Err(e) => return Err(e),
        }
    }
    Err(std::io::Error::new(
        std::io::ErrorKind::AlreadyExists,
        format!("100 names for a new folder {stem}-… were taken"),
    ))
}

/// The pid at the start of a name [`create_fresh_dir`] made from `<pid>` (`1234`,
/// `1234-a3f0`).
pub(crate) fn pid_of_fresh_name(name: &str) -> Option<u32> {
    name.split('-').next()?.parse().ok()
}

/// The first 8 hex digits of the SHA-256 of `bytes`: a short name that stays unique.
pub(crate) fn short_digest(bytes: &[u8]) -> String {
    use sha2::Digest as _;
    sha2::Sha256::digest(bytes)[..4]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The longest start of `s` of at most `max` bytes that ends on a character boundary: the
/// one way to shorten text that came from a user, a file or a cache (a commit read from a
/// report.json, a name), where `&s[..max]` would panic inside a multibyte character.
pub(crate) fn clip(s: &str, max: usize) -> &str {
    let mut cut = max.min(s.len());
    while !s.is_char_boundary(cut) {
        cut -= 1;
    }
    &s[..cut]
}

/// `1234567` → `1.2 MiB`.
pub(crate) fn human_bytes(b: u64) -> String {
    const UNITS: [&str; 4] = ["B", "KiB", "MiB", "GiB"];
    let mut v = b as f64;
    let mut u = 0;
    while v >= 1024.0 && u < UNITS.len() - 1 {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{b} B")
    } else {
        format!("{v:.1} {}", UNITS[u])
    }
}

/// A figure a program printed, to three significant digits or its whole part: `412`,
/// `41.2`, `4.12`, `0.0412`, `12345`.
pub(crate) fn format_number(v: f64) -> String {
    if !v.is_finite() {
        return "–".into();
    }
    let a = v.abs();
    let decimals = if a >= 100.0 || a == 0.0 {
        0
    } else {
        (2 - a.log10().floor() as i32).max(0) as usize
    };
    format!("{v:.decimals$}")
}

/// Seconds as a short human string: `41.2 ms`, `1.53 s`, `812 µs`.
pub fn format_secs(s: f64) -> String {
    if !s.is_finite() {
        return "–".into();
    }
    if s == 0.0 {
        return "0 s".into();
    }
    let (v, unit) = if s >= 1.0 {
        (s, "s")
    } else if s >= 1e-3 {
        (s * 1e3, "ms")
    } else {
        (s * 1e6, "µs")
    };
    let digits = if v >= 100.0 {
        0
    } else if v >= 10.0 {
        1
    } else {
        2
    };
    format!("{v:.digits$} {unit}")
}

/// A span of time as a short human string: [`format_secs`] under a minute (`8.10 s`), whole
/// seconds past it (`1m 23s`, `1h 2m 5s`).
pub(crate) fn format_span(s: f64) -> String {
    if s.is_finite() && s >= 59.5 {
        humantime::format_duration(Duration::from_secs(s.round() as u64)).to_string()
    } else {
        format_secs(s)
    }
}

/// serde for floats that may be NaN or infinite: JSON has no such numbers and serde_json
/// writes them as `null`, so a reader takes `null` back as NaN (the JSON then round-trips).
pub(crate) mod lenient_f64 {
    use serde::{Deserialize, Deserializer};

    fn value(v: Option<f64>) -> f64 {
        v.unwrap_or(f64::NAN)
    }

    pub(crate) fn one<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
        Option::<f64>::deserialize(d).map(value)
    }

    pub(crate) fn pair<'de, D: Deserializer<'de>>(d: D) -> Result<[f64; 2], D::Error> {
        let [a, b] = <[Option<f64>; 2]>::deserialize(d)?;
        Ok([value(a), value(b)])
    }

    pub(crate) fn opt_pair<'de, D: Deserializer<'de>>(d: D) -> Result<Option<[f64; 2]>, D::Error> {
        let p = Option::<[Option<f64>; 2]>::deserialize(d)?;
        Ok(p.map(|[a, b]| [value(a), value(b)]))
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn two_fresh_folders_of_one_stem_are_two_folders() {
        let tmp = tempfile::tempdir().unwrap();
        let parent = tmp.path().join("a/b");
        let (n1, p1) = create_fresh_dir(&parent, "20260101-000000-42").unwrap();
        let (n2, p2) = create_fresh_dir(&parent, "20260101-000000-42").unwrap();
        assert_eq!(n1, "20260101-000000-42");
        assert_ne!(p1, p2);
        assert!(n2.starts_with("20260101-000000-42-") && p2 == parent.join(&n2));
        assert!(p1.is_dir() && p2.is_dir());
        // A file of that name is taken too.
        std::fs::write(parent.join("7"), "").unwrap();
        let (n3, _) = create_fresh_dir(&parent, "7").unwrap();
        assert_eq!(pid_of_fresh_name(&n3), Some(7));
        assert_eq!(pid_of_fresh_name("x-1"), None);
    }

    use super::*;

    #[test]
    fn a_path_lies_inside_a_folder_only_once_resolved() {
        let d = tempfile::tempdir().unwrap();
        let dir = d.path().join("target");
        std::fs::create_dir_all(dir.join("release")).unwrap();
        std::fs::write(dir.join("release/prog"), "x").unwrap();
        std::fs::write(d.path().join("outside"), "x").unwrap();
        assert!(lies_inside(&dir.join("release/prog"), &dir));
        assert!(!lies_inside(&dir.join("release/../../outside"), &dir));
        assert!(!lies_inside(&d.path().join("outside"), &dir));
        assert!(!lies_inside(&dir.join("missing"), &dir));
        assert!(!lies_inside(&dir, &dir));
    }

    #[test]
    fn clip_cuts_on_a_character_boundary() {
        assert_eq!(clip("0123456789abcdef", 12), "0123456789ab");
        assert_eq!(clip("short", 12), "short");
        assert_eq!(clip("0123456789aé", 12), "0123456789a");
        assert_eq!(clip("ééé", 1), "");
        assert_eq!(clip("", 0), "");
    }

    #[test]
    fn bytes_in_binary_units() {
        assert_eq!(human_bytes(512), "512 B");
        assert_eq!(human_bytes(1_234_567), "1.2 MiB");
    }

    #[test]
    fn non_finite_floats_come_back_as_nan() {
        #[derive(serde::Serialize, serde::Deserialize)]
        struct T {
            #[serde(deserialize_with = "lenient_f64::one")]
            x: f64,
            #[serde(deserialize_with = "lenient_f64::pair")]
            p: [f64; 2],
        }
        let json = serde_json::to_string(&T {
            x: f64::INFINITY,
            p: [0.0, f64::NAN],
        })
        .unwrap();
        assert_eq!(json, r#"{"x":null,"p":[0.0,null]}"#);
        let back: T = serde_json::from_str(&json).unwrap();
        assert!(back.x.is_nan() && back.p[0] == 0.0 && back.p[1].is_nan());
        assert_eq!(serde_json::to_string(&back).unwrap(), json);
    }

    #[test]
    fn a_full_disk_says_where_and_what_to_do() {
        let e = io_error(
            std::io::Error::from_raw_os_error(28),
            "cannot copy the baseline binary to",
            Path::new("/t/runs/1/bin/baseline"),
        );
        let msg = e.to_string();
        assert!(
            msg.starts_with("cannot copy the baseline binary to /t/runs/1/bin/baseline: "),
            "{msg}"
        );
        assert!(
            msg.contains("os error 28")
                && msg.contains("fix: free space on the disk that holds /t/runs/1/bin"),
            "{msg}"
        );
        let other = io_error(
            std::io::Error::from_raw_os_error(2),
            "cannot read",
            Path::new("/x"),
        );
        assert!(!other.to_string().contains("fix:"));
    }

    #[test]
    fn sizes_in_every_form() {
        assert_eq!(parse_size("500M"), Ok(500 << 20));
        assert_eq!(parse_size("1.5G"), Ok(3 << 29));
        assert_eq!(parse_size("2GiB"), Ok(2 << 30));
        assert_eq!(parse_size("4096"), Ok(4096));
        assert!(parse_size("5X").unwrap_err().contains("unknown unit"));
        assert!(parse_size("lots").is_err());
    }

    #[test]
    fn indent_skips_empty_lines() {
        assert_eq!(indent("a\n\nb", "  "), "  a\n\n  b");
    }

    #[test]
    fn file_safe_keeps_what_it_is_told() {
        assert_eq!(file_safe("cpu (x86-64-v3)/a", "-_."), "cpu__x86-64-v3__a");
        assert_eq!(file_safe("a[1]+b", "-_.,=[]+"), "a[1]+b");
    }

    #[test]
    fn toml_strings_round_trip() {
        for s in ["plain", "C:\\dir", "it's", "two\nlines", "tab\there"] {
            let doc: toml::Table = format!("k = {}", toml_string(s)).parse().unwrap();
            assert_eq!(doc["k"].as_str(), Some(s), "{s:?}");
        }
        assert_eq!(toml_string("C:\\dir"), "'C:\\dir'");
    }

    #[test]
    fn seconds_are_readable() {
        assert_eq!(format_secs(0.0412), "41.2 ms");
        assert_eq!(format_secs(1.534), "1.53 s");
        assert_eq!(format_secs(0.000_812), "812 µs");
        assert_eq!(format_secs(0.005), "5.00 ms");
        assert_eq!(format_secs(0.0), "0 s");
    }

    #[test]
    fn spans_past_a_minute_in_whole_seconds() {
        assert_eq!(format_span(8.1), "8.10 s");
        assert_eq!(format_span(59.4), "59.4 s");
        assert_eq!(format_span(83.4), "1m 23s");
        assert_eq!(format_span(3725.0), "1h 2m 5s");
    }

    #[test]
    fn durations_in_every_form() {
        assert_eq!(parse_duration("20"), Ok(Duration::from_secs(20)));
        assert_eq!(parse_duration("2.5"), Ok(Duration::from_millis(2500)));
        assert_eq!(parse_duration(" 1m30s "), Ok(Duration::from_secs(90)));
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert!(parse_duration("-1").is_err());
        assert!(parse_duration("soon").unwrap_err().contains("soon"));
    }
}
