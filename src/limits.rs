//! Keeps the code readable top to bottom: no function in `src/` longer than
//! [`MAX_FN_LINES`] lines and no file with more than [`MAX_FILE_LINES`] lines of non-test code.
//!
//! How it counts, so the figures in notes and reviews mean one thing: a file's non-test
//! code is every line (blank lines and comments included) but the items under
//! `#[cfg(test)]` — a `mod x;` line, or a braced item from the attribute to its closing
//! brace, wherever it stands (a test helper near the top must not hide the code after it);
//! a function runs from its `fn` line to the closing brace at the `fn` line's indentation,
//! both included (declarations ending in `;`, as in traits, have no body and are skipped).
//! Figures: docs/src/decisions.md, "Test code does not count wherever it stands".

use std::path::{Path, PathBuf};
use std::sync::LazyLock;

use regex::Regex;

use crate::layers::rust_files;
use crate::stages::{Row, StageName, TABLE};

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

/// `src/` and its Rust files, sorted.
fn sources() -> (PathBuf, Vec<PathBuf>) {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    files.sort();
    (src, files)
}

#[test]
fn no_function_over_80_lines_and_no_file_over_800() {
    let (src, files) = sources();
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

/// The programs whose measurements live in docs/src/decisions.md, not in `src/` comments:
/// a comment says the rule and its general reason, and a figure seen on one crate, or the
/// story of what was tried on it, dates as soon as the crate or the tool changes. Names of
/// crates the code uses (`mimalloc`, `serde_json`, `landlock`) are not here: naming a
/// dependency is not reporting a run.
const MEASURED_PROGRAMS: &[&str] = &[
    "ripgrep",
    "pulldown-cmark",
    "resvg",
    "jaq",
    "rhai",
    "tokei",
    "fd-find",
    "bat",
    "polars",
    "pydantic",
    "the demo",
    "demo's",
    "examples/demo",
];

/// Words that make a figure next to them a run's: what a particular run took.
const RUN_WORDS: &[&str] = &[
    "took",
    "measured",
    "ran",
    "held",
    "cost",
    "re-run",
    "2-core",
    "two cores",
    "vcpu",
];

/// A time or a percentage, not a bound (`±5 %`): `76 s`, `20.7 s`, `5ms`, `78 %`.
static FIGURE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(^|[^\w.±])\d+([.,]\d+)?( ?(ms|µs|us|ns|s|min|minutes?|seconds?|h|hours?)\b| ?%)")
        .unwrap()
});

/// A code span: what a program prints or a user writes (`time: 224 s in all`), not a run.
static CODE_SPAN: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"`[^`]*`").unwrap());

/// A string literal on a line of code.
static STRING: LazyLock<Regex> = LazyLock::new(|| Regex::new(r#""(\\.|[^"\\])*""#).unwrap());

/// Why `comment` (a comment's text) has no place in `src/`: the measured program it names,
/// or the run figure it reports (a time or a percentage outside code spans, on a line that
/// says what a run took); `None` when it has neither.
fn measurement_in(comment: &str) -> Option<String> {
    let lower = comment.to_lowercase();
    if let Some(name) = MEASURED_PROGRAMS.iter().find(|n| has_word(&lower, n)) {
        return Some(format!("names {name}"));
    }
    let word = RUN_WORDS.iter().find(|w| has_word(&lower, w))?;
    let prose = CODE_SPAN.replace_all(&lower, "``");
    let m = FIGURE.find(&prose)?;
    Some(format!("a run figure ({}, {word})", m.as_str().trim()))
}

/// Whether `word` stands in `text` as a word of its own (not inside `batch`, `ranges`).
fn has_word(text: &str, word: &str) -> bool {
    let part = |c: char| c.is_alphanumeric() || c == '_' || c == '-';
    text.match_indices(word).any(|(i, _)| {
        let before = text[..i].chars().next_back();
        let after = text[i + word.len()..].chars().next();
        !before.is_some_and(part) && !after.is_some_and(part)
    })
}

/// The text of the comment on `line`, if it has one (`//` outside a string literal).
fn comment_of(line: &str) -> Option<&str> {
    let mut code = line.to_string();
    for m in STRING.find_iter(line) {
        code.replace_range(m.range(), &"_".repeat(m.len()));
    }
    let at = code.find("//")?;
    Some(line[at..].trim_start_matches(['/', '!']).trim())
}

/// The files of `files` that are compiled for tests only: those a `#[cfg(test)] mod x;`
/// declares, and everything under their folders.
fn test_only(files: &[PathBuf]) -> Vec<PathBuf> {
    let decl = Regex::new(r"^\s*(pub(\([^)]*\))?\s+)?mod\s+(\w+);").unwrap();
    let mut out = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(file).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        let stem = file.file_stem().unwrap().to_str().unwrap();
        let dir = match stem {
            "mod" | "lib" | "main" => file.parent().unwrap().to_path_buf(),
            _ => file.with_extension(""),
        };
        for (i, line) in lines.iter().enumerate() {
            if line.trim() != "#[cfg(test)]" {
                continue;
            }
            let next = lines[i + 1..]
                .iter()
                .find(|l| !l.trim_start().starts_with("#["));
            if let Some(c) = next.and_then(|l| decl.captures(l)) {
                out.push(dir.join(format!("{}.rs", &c[3])));
                out.push(dir.join(&c[3]));
            }
        }
    }
    out
}

#[test]
fn no_comment_in_src_names_a_measured_crate_or_a_run_figure() {
    let (src, files) = sources();
    let tests = test_only(&files);
    // Known answers: the simulation is test-only, its engine is not.
    assert!(tests
        .iter()
        .any(|t| src.join("bench/sim.rs").starts_with(t)));
    assert!(!tests
        .iter()
        .any(|t| src.join("bench/comparison.rs").starts_with(t)));
    let mut problems = Vec::new();
    for file in files
        .iter()
        .filter(|f| !tests.iter().any(|t| f.starts_with(t)))
    {
        let text = std::fs::read_to_string(file).unwrap();
        let shown = file.strip_prefix(&src).unwrap_or(file).display();
        for (i, line) in non_test(&text).into_iter().enumerate() {
            let Some(comment) = line.and_then(comment_of) else {
                continue;
            };
            if let Some(why) = measurement_in(comment) {
                problems.push(format!(
                    "src/{shown}:{}: {why}: {}",
                    i + 1,
                    line.unwrap().trim()
                ));
            }
        }
    }
    assert!(
        problems.is_empty(),
        "a crate's figures and the story of a run go to docs/src/decisions.md, with one \
         `// Figures: docs/src/decisions.md, \"<title>\".` line where a reader needs them:\n{}",
        problems.join("\n")
    );
}

#[test]
fn measurements_are_told_from_rules() {
    for line in [
        "(jemalloc's own configure and make) took 76 s on a 2-core VM",
        "baseline, profile and cpu builds took 20.7 s one after another",
        "the pgo stage's own build took 29 s instead of 20",
        "78 % of an 8.4 s re-run was SHA-256",
        "held pgo's timing for 17.8 s",
        "the search ran 5ms longer",
        "On ripgrep the search stopped",
        "on pulldown-cmark: ±2.6 %",
        "the demo's `infer` is quick",
        "intervals of ±6–12 %, measured",
        "Resvg's scenes",
    ] {
        assert!(measurement_in(line).is_some(), "not caught: {line}");
    }
    for line in [
        "no function longer than 80 lines, at most 80 lines",
        "retry for at most 5 s",
        "Upper bound of time per workload (e.g. 20s).",
        "A duration as users write it: `30s`, `2m`, `1m30s`, `500ms`",
        "`time: 224 s in all — measuring 190 s (85 %), building 18 s (8 %), …`",
        "the ladder measured it 5 times",
        "a comparison measured to within ±1.5: the pairs it took",
        "The file name cargo gives the program (`demo`, `demo.exe`)",
        "The frozen demo report the renderings' tests read.",
        "split into batches; the ranges it took",
        "the `landlock` crate, and mimalloc's shared build",
        "and measured to within ±5 %",
        "`301 of 1204 functions ran in training; 97.5 % of eval's counts are in trained code`",
    ] {
        assert_eq!(measurement_in(line), None, "{line}");
    }
}

#[test]
fn comments_are_read_outside_string_literals() {
    assert_eq!(comment_of("let x = 1; // took 5 s"), Some("took 5 s"));
    assert_eq!(comment_of("/// Doc."), Some("Doc."));
    assert_eq!(comment_of("//! Module."), Some("Module."));
    assert_eq!(comment_of(r#"let u = "path+file:///p#demo";"#), None);
    assert_eq!(comment_of("let y = 2;"), None);
}

/// Every `Figures: docs/src/decisions.md, "<title>".` line in `src/` names an entry there
/// (`- **<title>**`), so a renamed or dropped entry cannot leave a pointer to nothing.
#[test]
fn every_figures_line_names_an_entry_of_decisions_md() {
    let (src, files) = sources();
    let doc = std::fs::read_to_string(src.join("../docs/src/decisions.md")).unwrap();
    let pointer = Regex::new(r#"^Figures: .*docs/src/decisions\.md, "([^"]+)""#).unwrap();
    let mut missing = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        for (i, line) in text.lines().enumerate() {
            for c in comment_of(line)
                .into_iter()
                .flat_map(|t| pointer.captures_iter(t))
            {
                if !doc.contains(&format!("- **{}**", &c[1])) {
                    missing.push(format!("{}:{}: \"{}\"", file.display(), i + 1, &c[1]));
                }
            }
        }
    }
    assert!(
        missing.is_empty(),
        "no such entry in decisions.md:\n{}",
        missing.join("\n")
    );
}

/// A stage is named (`StageName::Pgo`, or its label as a string literal where the
/// label means nothing else) in non-test code only in the table (`stages.rs`), in
/// `stage/mod.rs`'s contract, and in its own module: everything else reads the table.
#[test]
fn only_the_table_names_a_stage() {
    let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut found = Vec::new();
    for file in files {
        let rel = file
            .strip_prefix(&src)
            .unwrap()
            .to_string_lossy()
            .replace('\\', "/");
        // The table, the contract's match, and test files (a `tests.rs` or `tests/`, these
        // checks).
        let test_file = rel.ends_with("tests.rs") || rel.contains("tests/");
        let test_file = test_file || rel == "limits.rs" || rel == "layers.rs";
        if rel == "stages.rs" || rel == "stage/mod.rs" || test_file {
            continue;
        }
        let text = std::fs::read_to_string(&file).unwrap();
        for (i, line) in non_test(&text).into_iter().enumerate() {
            let Some(line) = line else { continue };
            let code = line.split("//").next().unwrap_or("");
            for row in TABLE.iter().filter(|r| !names_itself(&rel, r)) {
                // The spec parses names (its keys are stages' labels too).
                let parsed = rel.starts_with("spec/") && !code.contains("StageName::");
                if names(code, row) && !parsed {
                    found.push(format!(
                        "src/{rel}:{}: {}: {}",
                        i + 1,
                        row.label,
                        line.trim()
                    ));
                }
            }
        }
    }
    assert!(
        found.is_empty(),
        "stages named outside the table:\n{}",
        found.join("\n")
    );
    // What it catches.
    let pgo = StageName::Pgo.row();
    assert!(names("x == StageName::Pgo", pgo) && names("s.name == \"pgo\"", pgo));
    assert!(!names("StageName::BASELINE", pgo) && !names("\"pgo-default\"", pgo));
}

/// Whether `code` names `row`'s stage: its variant, or its label as a whole string
/// literal (but for `profile`, `cpu` and `fp`, also the spec's keys and cargo's word,
/// and `baseline`, what every comparison is against, the reports' word).
fn names(code: &str, row: &Row) -> bool {
    let variant = format!("StageName::{:?}", row.name);
    let at = code.match_indices(&variant);
    let whole = |(i, _): (usize, &str)| {
        let next = code[i + variant.len()..].chars().next();
        !next.is_some_and(|c| c.is_alphanumeric() || c == '_')
    };
    let literal = !["profile", "cpu", "fp", "baseline"].contains(&row.label)
        && code.contains(&format!("\"{}\"", row.label));
    at.into_iter().any(whole) || literal
}

/// A stage's own module may name it.
fn names_itself(rel: &str, row: &Row) -> bool {
    let m = row.module;
    rel == format!("stage/{m}.rs") || rel.starts_with(&format!("stage/{m}/"))
}
