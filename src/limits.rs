//! Keeps the code readable top to bottom: no function in `src/` longer than
//! [`MAX_FN_LINES`] lines and no file with more than [`MAX_FILE_LINES`] lines of non-test code.
//!
//! How it counts, so the figures in notes and reviews mean one thing: a file's non-test code
//! is every line (blank lines and comments included) but the items under `#[cfg(test)]` — a
//! `mod x;` line, or a braced item from the attribute to its closing brace, wherever it
//! stands (it counted the lines before the first `#[cfg(test)]`, so a test helper near the
//! top hid 1 100 lines of `cargo/mod.rs`); a function runs from its `fn` line to the closing
//! brace at the `fn` line's indentation, both included (declarations ending in `;`, as in
//! traits, have no body and are skipped).

use std::path::Path;

use crate::layers::rust_files;

const MAX_FN_LINES: usize = 80;
const MAX_FILE_LINES: usize = 800;

/// The file's lines, each under `#[cfg(test)]` as `None`.
pub(crate) fn non_test(text: &str) -> Vec<Option<&str>> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::with_capacity(lines.len());
    let mut i = 0;
    while i < lines.len() {
        if lines[i].trim() != "#[cfg(test)]" {
            out.push(Some(lines[i]));
            i += 1;
            continue;
        }
        let end = test_item_end(&lines, i + 1);
        out.extend(std::iter::repeat_n(None, end + 1 - i));
        i = end + 1;
    }
    out
}

/// The last line of the item that starts at `from` (after its other attributes): a line
/// ending in `;` before any `{`, else the line where the braces opened after it close
/// (braces in strings and `//` comments do not count).
fn test_item_end(lines: &[&str], from: usize) -> usize {
    let strings = regex::Regex::new(r#""(\\.|[^"\\])*""#).unwrap();
    let (mut depth, mut opened) = (0i64, false);
    for (k, line) in lines.iter().enumerate().skip(from) {
        if line.trim_start().starts_with("#[") && !opened {
            continue;
        }
        let code = strings.replace_all(line, "\"\"");
        let code = code.split("//").next().unwrap_or("");
        depth += code.matches('{').count() as i64 - code.matches('}').count() as i64;
        opened |= code.contains('{');
        if (opened && depth <= 0) || (!opened && code.trim_end().ends_with(';')) {
            return k;
        }
    }
    lines.len() - 1
}

/// Each function longer than `max` lines: (first line number, name, length).
fn long_functions(lines: &[&str], max: usize) -> Vec<(usize, String, usize)> {
    let re = regex::Regex::new(
        r"^(\s*)(pub(\([^)]*\))?\s+)?(async\s+)?(const\s+)?(unsafe\s+)?fn\s+(\w+)",
    )
    .unwrap();
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let Some(c) = re.captures(lines[i]) else {
            i += 1;
            continue;
        };
        let indent = c[1].len();
        if lines[i].trim_end().ends_with('}') {
            i += 1; // `fn f() { … }` on one line
            continue;
        }
        // The signature may span lines: it ends at `{` (a body) or `;` (a declaration).
        let mut open = i;
        while open < lines.len() && !lines[open].trim_end().ends_with(['{', ';']) {
            open += 1;
        }
        if open == lines.len() || lines[open].trim_end().ends_with(';') {
            i = open + 1;
            continue;
        }
        let close = (open + 1..lines.len())
            .find(|&k| {
                let l = lines[k];
                l.len() > indent && l[..indent].trim().is_empty() && l[indent..].starts_with('}')
            })
            .unwrap_or(lines.len() - 1);
        let n = close - i + 1;
        if n > max {
            out.push((i + 1, c[7].to_string(), n));
        }
        i = close + 1;
    }
    out
}

#[test]
fn no_function_over_80_lines_and_no_file_over_800() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    files.sort();
    let mut problems = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        let kept = non_test(&text);
        let code = kept.iter().flatten().count();
        let lines: Vec<&str> = kept.iter().map(|l| l.unwrap_or("")).collect();
        let shown = file.strip_prefix(&src).unwrap_or(file).display();
        if code > MAX_FILE_LINES {
            problems.push(format!(
                "src/{shown}: {code} lines of non-test code (at most {MAX_FILE_LINES}: split what it owns)"
            ));
        }
        for (line, name, n) in long_functions(&lines, MAX_FN_LINES) {
            problems.push(format!(
                "src/{shown}:{line}: fn {name} is {n} lines (at most {MAX_FN_LINES})"
            ));
        }
    }
    assert!(problems.is_empty(), "\n{}", problems.join("\n"));
}

#[test]
fn long_functions_are_measured_from_fn_to_its_closing_brace() {
    let mut text = String::from("trait T {\n    fn decl(&self) -> u8;\n}\n");
    text.push_str("pub(crate) fn long(\n    a: u8,\n) -> u8 {\n");
    text.push_str(&"    let _ = a;\n".repeat(80));
    text.push_str("    a\n}\n\nfn short() {\n    if true {\n    }\n}\n");
    let lines: Vec<&str> = text.lines().collect();
    // 3 signature lines + 80 body lines + `a` + the closing brace.
    assert_eq!(
        long_functions(&lines, 80),
        vec![(4, "long".to_string(), 85)]
    );
    assert!(long_functions(&lines, 85).is_empty());
}

#[test]
fn test_code_does_not_count_wherever_it_stands() {
    let text = "fn a() {}\n#[cfg(test)]\n#[allow(dead_code)]\nimpl P {\n    fn b() { \"}\" }\n}\nfn c() {}\n#[cfg(test)]\nmod fixture;\nfn d() {\n}\n#[cfg(test)]\nmod tests {\n    fn e() {}\n}\n";
    let kept: Vec<&str> = non_test(text).into_iter().flatten().collect();
    assert_eq!(kept, vec!["fn a() {}", "fn c() {}", "fn d() {", "}"]);
    assert_eq!(non_test(text).len(), text.lines().count());
}
