//! Small helpers every layer may use: text indentation, file-name sanitising, TOML string
//! literals, durations as users write them, and resetting a scratch folder. Lowest layer:
//! imports nothing from the crate.

use std::path::Path;
use std::time::Duration;

/// Every non-empty line of `text` prefixed with `prefix` (empty lines stay empty, so a
/// block pasted into a message carries no trailing spaces).
pub fn indent(text: &str, prefix: &str) -> String {
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
pub fn file_safe(s: &str, keep: &str) -> String {
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
pub fn toml_string(s: &str) -> String {
    if !s.contains('\'') && !s.contains('\n') && !s.chars().any(char::is_control) {
        format!("'{s}'")
    } else {
        toml::Value::String(s.to_string()).to_string()
    }
}

/// A duration as users write it: `30s`, `2m`, `1m30s`, `500ms`, or plain seconds (`20`,
/// `2.5`). The error says what was wrong; callers add where and the fix.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let t = s.trim();
    if let Ok(secs) = t.parse::<f64>() {
        return if secs.is_finite() && (0.0..1e12).contains(&secs) {
            Ok(Duration::from_secs_f64(secs))
        } else {
            Err(format!("`{s}` is not a number of seconds"))
        };
    }
    humantime::parse_duration(t).map_err(|e| format!("`{s}` is not a duration ({e})"))
}

/// Remove `dir` if it exists, then create it empty.
pub fn reset_dir(dir: &Path) -> std::io::Result<()> {
    match std::fs::remove_dir_all(dir) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(e),
    }
    std::fs::create_dir_all(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn durations_in_every_form() {
        assert_eq!(parse_duration("20"), Ok(Duration::from_secs(20)));
        assert_eq!(parse_duration("2.5"), Ok(Duration::from_millis(2500)));
        assert_eq!(parse_duration(" 1m30s "), Ok(Duration::from_secs(90)));
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert!(parse_duration("-1").is_err());
        assert!(parse_duration("soon").unwrap_err().contains("soon"));
    }
}
