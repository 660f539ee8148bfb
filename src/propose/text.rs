//! A user's text file as `apply` reads, edits and shows it: UTF-8 (with a byte-order mark
//! kept if there is one), line endings kept line by line (the TOML edits work on LF text;
//! [`Text::encode`] gives every untouched line its own ending back and new lines the
//! file's usual one), and the unified diff printed before a write.

use std::path::Path;

/// The original bytes of a text file, decoded.
#[derive(Debug, Clone)]
pub(crate) struct Text {
    bom: bool,
    /// Without the byte-order mark.
    original: String,
}

const BOM: &str = "\u{feff}";

impl Text {
    /// The text of `bytes` (read from `path`, named in the error).
    pub(crate) fn decode(bytes: &[u8], path: &Path) -> anyhow::Result<Text> {
        let s = std::str::from_utf8(bytes).map_err(|e| {
            anyhow::anyhow!(
                "{} is not UTF-8 (invalid byte at offset {}), so apply cannot edit it without corrupting it\n  fix: save it as UTF-8 (cargo requires UTF-8 TOML)",
                path.display(),
                e.valid_up_to()
            )
        })?;
        Ok(match s.strip_prefix(BOM) {
            Some(rest) => Text {
                bom: true,
                original: rest.to_string(),
            },
            None => Text {
                bom: false,
                original: s.to_string(),
            },
        })
    }

    /// The text with LF line endings (what the TOML edits and the diff work on).
    pub(crate) fn lf(&self) -> String {
        self.original.replace("\r\n", "\n")
    }

    /// Whether most lines end in CRLF (new lines get that ending).
    pub(crate) fn crlf(&self) -> bool {
        let crlf = self.original.matches("\r\n").count();
        crlf > 0 && crlf * 2 >= self.original.matches('\n').count()
    }

    /// The bytes to write for `edited` (LF text, an edit of [`Text::lf`]): each line the
    /// edit kept has its original ending, each new line the file's usual one.
    pub(crate) fn encode(&self, edited: &str) -> Vec<u8> {
        let mut out = String::with_capacity(edited.len() + edited.len() / 16);
        if self.bom {
            out.push_str(BOM);
        }
        if !self.original.contains("\r\n") {
            out.push_str(edited);
            return out.into_bytes();
        }
        let newline = if self.crlf() { "\r\n" } else { "\n" };
        let originals: Vec<&str> = self.original.split_inclusive('\n').collect();
        let old = self.lf();
        // Lines split at LF only (similar's own line split also breaks at a lone CR).
        let old_lines: Vec<&str> = old.split_inclusive('\n').collect();
        let new_lines: Vec<&str> = edited.split_inclusive('\n').collect();
        let diff = similar::TextDiff::from_slices(&old_lines, &new_lines);
        for change in diff.iter_all_changes() {
            match change.tag() {
                similar::ChangeTag::Equal => {
                    let i = change.old_index().expect("an equal line has an old index");
                    out.push_str(originals[i]);
                }
                similar::ChangeTag::Insert => {
                    let line = change.value();
                    match line.strip_suffix('\n') {
                        Some(body) => {
                            out.push_str(body);
                            out.push_str(newline);
                        }
                        None => out.push_str(line),
                    }
                }
                similar::ChangeTag::Delete => {}
            }
        }
        out.into_bytes()
    }
}

/// A unified diff (3 lines of context) of two texts, `--- a/PATH` / `+++ b/PATH`.
pub(crate) fn unified_diff(old: &str, new: &str, path: &str) -> String {
    similar::TextDiff::from_lines(old, new)
        .unified_diff()
        .context_radius(3)
        .header(&format!("a/{path}"), &format!("b/{path}"))
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(s: &str) -> Text {
        Text::decode(s.as_bytes(), Path::new("f")).unwrap()
    }

    #[test]
    fn crlf_round_trip_keeps_every_line_ending() {
        let t = text("a\r\nb\r\nc\r\n");
        assert!(t.crlf());
        assert_eq!(t.lf(), "a\nb\nc\n");
        // Unchanged: the same bytes.
        assert_eq!(t.encode(&t.lf()), b"a\r\nb\r\nc\r\n");
        // Inserted and replaced lines take CRLF; removed ones go.
        assert_eq!(t.encode("a\nB\nnew\nc\n"), b"a\r\nB\r\nnew\r\nc\r\n");
        assert_eq!(t.encode("a\nc\n"), b"a\r\nc\r\n");
        // No final newline stays so.
        let t = text("a\r\nb");
        assert_eq!(t.encode("a\nx\nb"), b"a\r\nx\r\nb");
    }

    #[test]
    fn mixed_endings_stay_line_by_line_and_lf_files_are_untouched() {
        // Mostly LF: untouched lines keep their CRLF, new ones get LF.
        let t = text("a\r\nb\nc\nd\n");
        assert!(!t.crlf());
        assert_eq!(t.encode("a\nb\nnew\nc\nd\n"), b"a\r\nb\nnew\nc\nd\n");
        // Mostly CRLF: the new lines get CRLF, the one LF line stays LF.
        let t = text("a\r\nb\nc\r\nd\r\n");
        assert_eq!(t.encode("a\nb\nc\nd\nnew\n"), b"a\r\nb\nc\r\nd\r\nnew\r\n");
        let t = text("a\nb\n");
        assert_eq!(t.encode("a\nb\nc\n"), b"a\nb\nc\n");
        // A lone CR is not a line ending: kept.
        let t = text("a\rb\r\nc\r\n");
        assert_eq!(t.encode("a\rb\nc\nd\n"), b"a\rb\r\nc\r\nd\r\n");
    }

    #[test]
    fn a_byte_order_mark_is_kept_and_not_utf8_is_refused() {
        let t = Text::decode("\u{feff}a\r\n".as_bytes(), Path::new("f")).unwrap();
        assert_eq!(t.lf(), "a\n");
        assert_eq!(t.encode("a\nb\n"), "\u{feff}a\r\nb\r\n".as_bytes());
        let e = Text::decode(b"a = \"\xff\"\n", Path::new("/p/Cargo.toml")).unwrap_err();
        let e = format!("{e:#}");
        assert!(
            e.contains("/p/Cargo.toml is not UTF-8 (invalid byte at offset 5)")
                && e.contains("fix:"),
            "{e}"
        );
    }

    #[test]
    fn diff_shows_only_the_change_with_context() {
        let old = "a\nb\nc\nd\ne\nf\ng\nh\n";
        let new = "a\nb\nc\nd\nE\nf\ng\nh\ni\n";
        let d = unified_diff(old, new, "Cargo.toml");
        assert_eq!(
            d,
            "--- a/Cargo.toml\n+++ b/Cargo.toml\n@@ -2,7 +2,8 @@\n b\n c\n d\n-e\n+E\n f\n g\n h\n+i\n"
        );
        let d = unified_diff("", "x\n", "new.toml");
        // GNU diff style: a count of 1 is left out.
        assert!(d.ends_with("@@ -0,0 +1 @@\n+x\n"), "{d}");
        assert_eq!(unified_diff("same\n", "same\n", "p"), "");
    }
}
