//! The user docs cannot drift from the code: every `cargo optimize …` command line in
//! README.md and `docs/` (code blocks and inline code) parses with the real command-line
//! definition (`Cli::try_parse_from`), and the report.json schema page names every key of
//! a real report. (The spec reference is checked against the validator by the unit test
//! `spec::reference`.)

use std::path::{Path, PathBuf};

use cargo_optimize::testing::report::Report;
use cargo_optimize::testing::Cli;
use clap::Parser;

use super::common::shared;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// README.md and every Markdown page under `docs/` (the built book excepted).
fn doc_files() -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
            .unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()))
            .map(|e| e.expect("a directory entry").path())
            .collect();
        entries.sort();
        for p in entries {
            if p.is_dir() && p.file_name().is_some_and(|n| n != "book") {
                walk(&p, out);
            } else if p.extension().is_some_and(|x| x == "md") {
                out.push(p);
            }
        }
    }
    let mut files = vec![root().join("README.md")];
    walk(&root().join("docs"), &mut files);
    files
}

/// The code spans of `text` (a run of n backticks up to the next run of exactly n), each
/// with its byte offset; a span that quotes code itself (a message naming a command) gives
/// its own spans.
fn code_spans(text: &str) -> Vec<(usize, String)> {
    let b = text.as_bytes();
    let run_at = |i: usize| b[i..].iter().take_while(|c| **c == b'`').count();
    let mut spans = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i] != b'`' {
            i += 1;
            continue;
        }
        let n = run_at(i);
        let start = i + n;
        let mut j = start;
        let close = loop {
            if j >= b.len() {
                break None;
            }
            if b[j] == b'`' {
                let m = run_at(j);
                if m == n {
                    break Some(j);
                }
                j += m;
            } else {
                j += 1;
            }
        };
        let Some(end) = close else { break };
        let inner = text[start..end].trim();
        if inner.contains('`') {
            spans.extend(code_spans(inner).into_iter().map(|(o, s)| (start + o, s)));
        } else {
            spans.push((start, inner.to_owned()));
        }
        i = end + n;
    }
    spans
}

/// The `cargo optimize …` command lines of a Markdown text, with their 1-based lines.
fn command_lines(text: &str) -> Vec<(usize, String)> {
    let mut found = Vec::new();
    let mut take = |line: usize, s: &str| {
        if let Some(at) = s.find("cargo optimize") {
            // In a sample of output, a command is followed by its gloss in parentheses
            // after a gap (`cargo optimize apply   (the portable alternative; …`).
            let command = s[at..].split("  (").next().unwrap_or_default();
            found.push((line, command.replace("\\|", "|")));
        }
    };
    let mut in_code = false;
    // Prose is read a paragraph at a time: a code span may run across a line break.
    let mut para: Vec<(usize, &str)> = Vec::new();
    let flush = |para: &mut Vec<(usize, &str)>, take: &mut dyn FnMut(usize, &str)| {
        let joined: String = para.iter().map(|(_, l)| format!("{l}\n")).collect();
        for (offset, span) in code_spans(&joined) {
            let line = para[0].0 + joined[..offset].matches('\n').count();
            take(line, &span.replace('\n', " "));
        }
        para.clear();
    };
    for (i, line) in text.lines().enumerate() {
        let n = i + 1;
        let fence = line.trim_start().starts_with("```") || line.trim_start().starts_with("~~~");
        if fence {
            flush(&mut para, &mut take);
            in_code = !in_code;
        } else if in_code {
            if line.contains('`') {
                for (_, span) in code_spans(line) {
                    take(n, &span);
                }
            } else {
                take(n, line);
            }
        } else if line.trim().is_empty() {
            flush(&mut para, &mut take);
        } else {
            para.push((n, line));
        }
    }
    flush(&mut para, &mut take);
    found
}

/// `s` up to a shell comment (`#` starting a word, outside quotes).
fn strip_comment(s: &str) -> &str {
    let mut quote = None;
    let mut prev = ' ';
    for (i, c) in s.char_indices() {
        match (quote, c) {
            (None, '\'' | '"') => quote = Some(c),
            (Some(q), _) if c == q => quote = None,
            (None, '#') if prev.is_whitespace() => return &s[..i],
            _ => {}
        }
        prev = c;
    }
    s
}

/// The concrete command lines a usage line stands for: `[X]` both with and without X,
/// `a|b` each alternative, `N` a number, `…` dropped.
fn variants(command: &str) -> Vec<String> {
    let command = strip_comment(command).replace('…', " ");
    let mut shapes = vec![command.replace(['[', ']'], "")];
    if command.contains('[') {
        let optional = regex::Regex::new(r"\[[^\[\]]*\]").expect("regex");
        shapes.push(optional.replace_all(&command, "").into_owned());
    }
    let mut out = Vec::new();
    for shape in shapes {
        let words: Vec<&str> = shape.split_whitespace().collect();
        let alternatives = |w: &str| -> Vec<String> {
            if w.contains('|') && w.len() > 2 && !w.contains("||") {
                w.split('|').map(str::to_owned).collect()
            } else {
                vec![w.to_owned()]
            }
        };
        let k = words
            .iter()
            .map(|w| alternatives(w).len())
            .max()
            .unwrap_or(1);
        for i in 0..k {
            let line: Vec<String> = (words.iter())
                .map(|w| {
                    let alts = alternatives(w);
                    let w = alts[i.min(alts.len() - 1)].clone();
                    match w.as_str() {
                        "N" => "3".to_owned(),
                        _ => w.strip_suffix("=N").map_or(w.clone(), |s| format!("{s}=3")),
                    }
                })
                .collect();
            out.push(line.join(" "));
        }
    }
    out.dedup();
    out
}

/// Why `command` does not parse, or `None` when it does.
fn parse_error(command: &str) -> Option<String> {
    let words = match shell_words::split(command) {
        Ok(w) => w,
        Err(e) => return Some(format!("cannot split it as a shell would: {e}")),
    };
    let shell = ["|", "||", "&&", ";", "&"];
    let end = (words.iter())
        .position(|w| shell.contains(&w.as_str()) || w.starts_with('>') || w.starts_with('<'))
        .unwrap_or(words.len());
    let mut args = vec!["cargo-optimize".to_owned()];
    args.extend(words[..end].iter().skip(2).cloned());
    match Cli::try_parse_from(&args) {
        Ok(_) => None,
        Err(e)
            if matches!(
                e.kind(),
                clap::error::ErrorKind::DisplayHelp | clap::error::ErrorKind::DisplayVersion
            ) =>
        {
            None
        }
        Err(e) => Some(e.to_string().lines().next().unwrap_or_default().to_owned()),
    }
}

#[test]
fn every_command_line_in_the_docs_parses() {
    let _guard = shared();
    let mut checked = 0;
    let mut problems = Vec::new();
    for file in doc_files() {
        let text = std::fs::read_to_string(&file).expect("a doc page");
        let rel = file
            .strip_prefix(root())
            .unwrap_or(&file)
            .display()
            .to_string();
        for (line, command) in command_lines(&text) {
            for variant in variants(&command) {
                checked += 1;
                if let Some(why) = parse_error(&variant) {
                    problems.push(format!("{rel}:{line}: `{variant}`: {why}"));
                }
            }
        }
    }
    assert!(
        problems.is_empty(),
        "{} of {checked} command lines in the docs do not parse:\n{}",
        problems.len(),
        problems.join("\n")
    );
    // The extraction itself works: the README alone shows a few dozen.
    assert!(checked >= 50, "only {checked} command lines found");
}

#[test]
fn the_extraction_finds_spans_blocks_and_usage_variants() {
    let _guard = shared();
    let text = "Run `cargo optimize report\n--format md` now.\n\n```sh\ncargo optimize check --against v1 --format md >> \"$S\"   # it's a comment\n```\n| `cargo optimize hotspots --format term\\|json` | x |\n";
    let lines = command_lines(text);
    assert_eq!(
        lines,
        vec![
            (1, "cargo optimize report --format md".to_owned()),
            (
                5,
                "cargo optimize check --against v1 --format md >> \"$S\"   # it's a comment"
                    .to_owned()
            ),
            (7, "cargo optimize hotspots --format term|json".to_owned()),
        ]
    );
    assert_eq!(parse_error(&variants(&lines[1].1)[0]), None);
    assert_eq!(
        variants("cargo optimize profile merge [--weight FILE=N]… -o OUT INPUTS…"),
        vec![
            "cargo optimize profile merge --weight FILE=3 -o OUT INPUTS",
            "cargo optimize profile merge -o OUT INPUTS",
        ]
    );
    assert_eq!(
        variants("cargo optimize hotspots --format term|json"),
        vec![
            "cargo optimize hotspots --format term",
            "cargo optimize hotspots --format json",
        ]
    );
    assert!(parse_error("cargo optimize bench --no-such-flag").is_some());
}

#[test]
fn every_relative_link_in_the_docs_points_to_a_file() {
    let _guard = shared();
    let link = regex::Regex::new(r"\]\(([^)\s]+)\)").expect("regex");
    let mut problems = Vec::new();
    let mut checked = 0;
    for file in doc_files() {
        let text = std::fs::read_to_string(&file).expect("a doc page");
        let rel = file
            .strip_prefix(root())
            .unwrap_or(&file)
            .display()
            .to_string();
        for (i, line) in text.lines().enumerate() {
            for cap in link.captures_iter(line) {
                let target = &cap[1];
                if target.contains("://")
                    || target.starts_with('#')
                    || target.starts_with("mailto:")
                {
                    continue;
                }
                checked += 1;
                let path = target.split('#').next().unwrap_or(target);
                let dir = file.parent().expect("a page's folder");
                if !dir.join(path).exists() {
                    problems.push(format!(
                        "{rel}:{}: the link `{target}` leads nowhere",
                        i + 1
                    ));
                }
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    assert!(checked >= 20, "only {checked} links found");
}

/// Every object key in `v`, the keys of maps whose keys are data (a candidate tag, a dyno
/// stat's name, a profile key) excepted.
fn keys(v: &serde_json::Value, out: &mut std::collections::BTreeSet<String>) {
    const DATA_KEYED: [&str; 4] = ["per_stage", "dyno_stats", "overrides", "profile_overrides"];
    match v {
        serde_json::Value::Object(map) => {
            for (k, child) in map {
                out.insert(k.clone());
                if DATA_KEYED.contains(&k.as_str()) {
                    if let serde_json::Value::Object(m) = child {
                        m.values().for_each(|c| keys(c, out));
                    }
                } else {
                    keys(child, out);
                }
            }
        }
        serde_json::Value::Array(items) => items.iter().for_each(|c| keys(c, out)),
        _ => {}
    }
}

#[test]
fn the_report_schema_names_every_field() {
    let _guard = shared();
    let fixture = root().join("tests/fixtures/reports/demo/report.json");
    let report: Report =
        serde_json::from_str(&std::fs::read_to_string(&fixture).expect("the frozen report"))
            .expect("the frozen report parses as a Report");
    let json = serde_json::to_value(&report).expect("a report serialises");
    let mut fields = std::collections::BTreeSet::new();
    keys(&json, &mut fields);
    let page = std::fs::read_to_string(root().join("docs/src/report-json.md")).expect("the page");
    let named: std::collections::BTreeSet<String> = code_spans(&page)
        .into_iter()
        .flat_map(|(_, s)| {
            (s.split(|c: char| !(c.is_alphanumeric() || c == '_')))
                .map(str::to_owned)
                .collect::<Vec<_>>()
        })
        .collect();
    let missing: Vec<&String> = fields.iter().filter(|k| !named.contains(*k)).collect();
    assert!(
        missing.is_empty(),
        "docs/src/report-json.md names no `{}` (keys of {})",
        missing
            .iter()
            .map(|k| k.as_str())
            .collect::<Vec<_>>()
            .join("`, `"),
        fixture.display()
    );
    assert!(fields.len() > 100, "only {} keys read", fields.len());
}
