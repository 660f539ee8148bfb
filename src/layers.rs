//! Keeps the module layers honest: every `crate::<module>` path in `src/` must name a
//! module in a lower layer than the file's own (or its own module). The layer list is the
//! fenced `layers` block of ARCHITECTURE.md, so the document and the check cannot drift.
//! Strict layering also means there is no import cycle.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Module name → layer number, from ARCHITECTURE.md.
fn layers(doc: &str) -> BTreeMap<String, usize> {
    let block = doc
        .split("```layers\n")
        .nth(1)
        .and_then(|rest| rest.split("```").next())
        .expect("ARCHITECTURE.md has a ```layers block");
    let mut out = BTreeMap::new();
    for line in block.lines().filter(|l| !l.trim().is_empty()) {
        let mut words = line.split_whitespace();
        let n: usize = words.next().unwrap().parse().expect("a layer number");
        for m in words {
            out.insert(m.to_string(), n);
        }
    }
    out
}

/// The top-level module a source file belongs to (`src/stage/pgo.rs` → `stage`).
fn module_of(src: &Path, file: &Path) -> Option<String> {
    let rel = file.strip_prefix(src).ok()?;
    let first = rel.components().next()?.as_os_str().to_str()?;
    let name = first.strip_suffix(".rs").unwrap_or(first);
    // lib.rs and main.rs are the root; this check and `limits` are test-only.
    (!["lib", "main", "layers", "limits"].contains(&name)).then(|| name.to_string())
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// Every `crate::name` outside comments, with its line number.
fn crate_refs(text: &str) -> Vec<(usize, String)> {
    let re = regex::Regex::new(r"\bcrate::([a-z_]+)").unwrap();
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let code = line.split("//").next().unwrap_or("");
        for c in re.captures_iter(code) {
            out.push((i + 1, c[1].to_string()));
        }
    }
    out
}

/// `use crate::{a, b::c}` groups name several modules at once — over several lines as
/// rustfmt writes them, and nested (`crate::{a::{b, c}, d}` names `a` and `d`).
fn grouped_refs(text: &str) -> Vec<(usize, String)> {
    let code: Vec<&str> = text
        .lines()
        .map(|l| l.split("//").next().unwrap_or(""))
        .collect();
    let code = code.join("\n");
    let mut out = Vec::new();
    let mut push = |from: usize, to: usize| {
        let item = &code[from..to];
        let first = item.trim().split("::").next().unwrap_or("").trim();
        if !first.is_empty() && first != "self" {
            let at = from + (item.len() - item.trim_start().len());
            out.push((code[..at].matches('\n').count() + 1, first.to_string()));
        }
    };
    let mut from = 0;
    while let Some(found) = code[from..].find("crate::{") {
        let mut i = from + found + "crate::{".len();
        let (mut depth, mut item) = (1, i);
        while depth > 0 && i < code.len() {
            match code.as_bytes()[i] {
                b'{' => depth += 1,
                b'}' if depth == 1 => {
                    push(item, i);
                    depth = 0;
                }
                b'}' => depth -= 1,
                b',' if depth == 1 => {
                    push(item, i);
                    item = i + 1;
                }
                _ => {}
            }
            i += 1;
        }
        from = i;
    }
    out
}

#[test]
fn every_module_imports_only_from_lower_layers() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let doc = std::fs::read_to_string(root.join("ARCHITECTURE.md")).unwrap();
    let layer = layers(&doc);
    let src = root.join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut problems = Vec::new();
    for file in files {
        let Some(me) = module_of(&src, &file) else {
            continue;
        };
        let Some(&mine) = layer.get(&me) else {
            problems.push(format!("{}: module `{me}` is in no layer", file.display()));
            continue;
        };
        let text = std::fs::read_to_string(&file).unwrap();
        let refs = crate_refs(&text).into_iter().chain(grouped_refs(&text));
        for (line, other) in refs {
            if other == me {
                continue;
            }
            match layer.get(&other) {
                Some(&theirs) if theirs < mine => {}
                Some(&theirs) => problems.push(format!(
                    "{}:{line}: `{me}` (layer {mine}) uses `{other}` (layer {theirs})",
                    file.display()
                )),
                None => problems.push(format!(
                    "{}:{line}: `{other}` is in no layer",
                    file.display()
                )),
            }
        }
    }
    assert!(problems.is_empty(), "\n{}", problems.join("\n"));
}

#[test]
fn groups_over_several_lines_and_nested_groups_name_their_modules() {
    let text = "use crate::{\n    bench::{self, Comparison},\n    // a comment, not an item: crate::{nope}\n    cache::{\n        key_of,\n        Store, // trailing\n    },\n    self,\n    spec::Workload,\n};\nuse crate::{a, b::{c::{d, e}, f}};\n";
    let got: Vec<(usize, String)> = grouped_refs(text);
    let want: Vec<(usize, String)> = [
        (2, "bench"),
        (4, "cache"),
        (9, "spec"),
        (11, "a"),
        (11, "b"),
    ]
    .iter()
    .map(|(l, m)| (*l, m.to_string()))
    .collect();
    assert_eq!(got, want);
}

#[test]
fn the_layer_list_parses() {
    let l = layers("x\n```layers\n0 util\n1 process ui\n```\n");
    assert_eq!(l["ui"], 1);
    assert_eq!(l["util"], 0);
}

/// Code (not comments) that names an OS-specific API: `std::os::{unix,windows,fd,…}`,
/// `libc`, `windows_sys`.
fn os_specific(text: &str) -> Vec<(usize, String)> {
    let re = regex::Regex::new(
        r"\b(std::)?os::(unix|windows|fd|linux|macos|darwin|wasi)\b|\buse std::os\b|\blibc\b|\bwindows_sys\b",
    )
    .unwrap();
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let code = line.split("//").next().unwrap_or("");
        if let Some(m) = re.find(code) {
            out.push((i + 1, m.as_str().to_string()));
        }
    }
    out
}

/// The platform layer is the only place that calls the OS directly: every other file of
/// `src/` — its unit tests included, no exemption — goes through `crate::sys`, so the
/// crate builds for every target `sys` has a part for.
#[test]
fn only_sys_touches_the_os() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut problems = Vec::new();
    for file in files {
        let in_sys = file.starts_with(src.join("sys"));
        if in_sys || file == src.join("layers.rs") {
            continue;
        }
        let text = std::fs::read_to_string(&file).unwrap();
        for (line, what) in os_specific(&text) {
            problems.push(format!(
                "{}:{line}: `{what}` outside src/sys/ (add what you need to the platform layer)",
                file.display()
            ));
        }
    }
    assert!(problems.is_empty(), "\n{}", problems.join("\n"));
}

#[test]
fn os_specific_code_is_found_and_comments_are_not() {
    let text = "use std::os::unix::fs::PermissionsExt;\n\
                // libc::kill in a comment\n\
                let r = unsafe { libc::geteuid() };\n\
                use std::os::{fd::AsRawFd, unix};\n\
                std::os::windows::fs::symlink_file(a, b)\n\
                let os = \"unix\"; std::env::consts::OS\n";
    let found: Vec<usize> = os_specific(text).into_iter().map(|(l, _)| l).collect();
    assert_eq!(found, [1, 3, 4, 5]);
}
