//! Keeps the module layers honest: every `crate::<module>` path in `src/` must name a
//! module in a lower layer than the file's own (or its own module). The layer list is the
//! fenced `layers` block of ARCHITECTURE.md, so the document and the check cannot drift.
//! Strict layering also means there is no import cycle. The command modules of one layer
//! (`apply`, `check`, `fleet`, `release`) are peers that never use each other, no file of
//! `commands/` names another command's file, no file but `src/sys/` makes an OS call
//! (`only_sys_touches_the_os`: `std::os::{unix,windows,fd}`, `libc`, `windows_sys`), and a
//! module with submodules is its folder's `mod.rs`, never `x.rs` beside `x/`
//! (`a_module_with_submodules_is_its_folder_s_mod_rs`).

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

/// The top-level module a source file belongs to (`src/stage/pgo/mod.rs` → `stage`).
fn module_of(src: &Path, file: &Path) -> Option<String> {
    let rel = file.strip_prefix(src).ok()?;
    let first = rel.components().next()?.as_os_str().to_str()?;
    let name = first.strip_suffix(".rs").unwrap_or(first);
    // lib.rs and main.rs are the root; this check and `limits` are test-only.
    (!["lib", "main", "layers", "limits"].contains(&name)).then(|| name.to_string())
}

pub(crate) fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
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

/// What is wrong with the `crate::` paths of one file of module `me`: a module of a
/// higher layer, one of no layer, or a peer — a module of `me`'s own layer. Peers never
/// import each other: the command modules (`apply`, `check`, `fleet`, `release`) share a
/// layer, so what two of them need lives in a lower module.
fn problems_of(layer: &BTreeMap<String, usize>, me: &str, file: &str, text: &str) -> Vec<String> {
    let Some(&mine) = layer.get(me) else {
        return vec![format!("{file}: module `{me}` is in no layer")];
    };
    let refs = crate_refs(text).into_iter().chain(grouped_refs(text));
    let mut problems = Vec::new();
    for (line, other) in refs {
        match layer.get(&other) {
            _ if other == me => {}
            Some(&theirs) if theirs < mine => {}
            Some(&theirs) if theirs == mine => problems.push(format!(
                "{file}:{line}: `{me}` uses `{other}`, a peer (both layer {mine}): move what both need into a lower layer"
            )),
            Some(&theirs) => problems.push(format!(
                "{file}:{line}: `{me}` (layer {mine}) uses `{other}` (layer {theirs})"
            )),
            None => problems.push(format!("{file}:{line}: `{other}` is in no layer")),
        }
    }
    problems
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
        let text = std::fs::read_to_string(&file).unwrap();
        problems.extend(problems_of(&layer, &me, &file.display().to_string(), &text));
    }
    assert!(problems.is_empty(), "\n{}", problems.join("\n"));
}

#[test]
fn the_command_modules_are_peers_on_one_layer() {
    let doc =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("ARCHITECTURE.md"));
    let layer = layers(&doc.unwrap());
    let of: Vec<usize> = ["apply", "check", "fleet", "release"]
        .iter()
        .map(|m| layer[*m])
        .collect();
    assert!(of.iter().all(|l| *l == of[0]), "{of:?}");
    assert!(layer["commands"] > of[0] && layer["pipeline"] < of[0]);
}

#[test]
fn a_command_module_importing_another_is_refused() {
    let layer = layers("```layers\n2 cargo\n10 apply check release\n11 commands\n```\n");
    let check = "use crate::apply::write_all;\nuse crate::cargo::Project;\n";
    let got = problems_of(&layer, "check", "src/check/ci.rs", check);
    assert_eq!(got, ["src/check/ci.rs:1: `check` uses `apply`, a peer (both layer 10): move what both need into a lower layer"]);
    let release = "use crate::{\n    cargo,\n    check::{ci::propose, rev::Repo},\n};\n";
    let got = problems_of(&layer, "release", "src/release/ci.rs", release);
    assert_eq!(got.len(), 1, "{got:?}");
    assert!(got[0].starts_with("src/release/ci.rs:3: `release` uses `check`, a peer"));
    // A module's own paths and lower layers are free; a higher one is not.
    assert!(problems_of(
        &layer,
        "apply",
        "a.rs",
        "use crate::apply::x;\nuse crate::cargo;\n"
    )
    .is_empty());
    let up = problems_of(&layer, "apply", "a.rs", "crate::commands::run(g)");
    assert_eq!(
        up,
        ["a.rs:1: `apply` (layer 10) uses `commands` (layer 11)"]
    );
}

/// The other command files a file of `commands/` names (`super::clean::…`,
/// `crate::commands::clean::…`): each command is written whole in its own file, what two
/// need sits in `commands/mod.rs` or lower.
fn sibling_commands(text: &str, me: &str, siblings: &[String]) -> Vec<(usize, String)> {
    let re = regex::Regex::new(r"(?:super|crate::commands)::(\w+)::").unwrap();
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let code = line.split("//").next().unwrap_or("");
        for c in re.captures_iter(code) {
            if c[1] != *me && siblings.iter().any(|s| *s == c[1]) {
                out.push((i + 1, c[1].to_string()));
            }
        }
    }
    out
}

#[test]
fn command_files_do_not_import_one_another() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/commands");
    let mut files = Vec::new();
    rust_files(&dir, &mut files);
    let stem = |f: &Path| f.file_stem().unwrap().to_string_lossy().to_string();
    let siblings: Vec<String> = files.iter().map(|f| stem(f)).collect();
    let mut problems = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        for (line, other) in sibling_commands(&text, &stem(file), &siblings) {
            problems.push(format!("{}:{line}: uses the `{other}` command's file: move what both need into commands/mod.rs or lower", file.display()));
        }
    }
    assert!(problems.is_empty(), "\n{}", problems.join("\n"));
    let names = ["cache".to_string(), "clean".to_string()];
    let text = "use super::emit;\nlet d = super::clean::optimize_dir(g)?; // super::cache::x\n";
    assert_eq!(
        sibling_commands(text, "cache", &names),
        [(2, "clean".to_string())]
    );
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

/// The files of `files` (paths under one root) that break the crate's one module-file
/// convention: a module with submodules is `x/mod.rs`, so an `x.rs` beside a folder `x/`
/// is the other convention.
fn other_module_convention(files: &[PathBuf]) -> Vec<String> {
    let mut problems = Vec::new();
    for file in files {
        let Some(stem) = file.file_stem().filter(|s| *s != "mod") else {
            continue;
        };
        let folder = file.with_file_name(stem);
        if files.iter().any(|f| f.starts_with(&folder)) {
            problems.push(format!(
                "{}: a module with submodules is `{}`, not `{}` beside `{}/`",
                file.display(),
                folder.join("mod.rs").display(),
                file.display(),
                folder.display()
            ));
        }
    }
    problems
}

/// One module-file convention: `x/mod.rs` for a module with submodules (`x.rs` for one
/// without), never `x.rs` beside `x/`.
#[test]
fn a_module_with_submodules_is_its_folder_s_mod_rs() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let problems = other_module_convention(&files);
    assert!(problems.is_empty(), "\n{}", problems.join("\n"));
    let tree = |paths: &[&str]| paths.iter().map(PathBuf::from).collect::<Vec<_>>();
    let ours = tree(&["src/a/mod.rs", "src/a/b.rs", "src/c.rs", "src/lib.rs"]);
    assert!(other_module_convention(&ours).is_empty());
    let theirs = tree(&["src/a.rs", "src/a/b.rs", "src/c.rs", "src/ab/d.rs"]);
    assert_eq!(
        other_module_convention(&theirs),
        ["src/a.rs: a module with submodules is `src/a/mod.rs`, not `src/a.rs` beside `src/a/`"]
    );
}

/// ARCHITECTURE.md stays a map a newcomer reads in one sitting: at most 120 lines, the life
/// of a run in at most 12 numbered one-line steps (the detail is `docs/src/internals.md`).
#[test]
fn the_map_stays_short() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let doc = std::fs::read_to_string(root.join("ARCHITECTURE.md")).unwrap();
    assert!(doc.lines().count() <= 120, "{} lines", doc.lines().count());
    let run = doc
        .split("## A run, top to bottom")
        .nth(1)
        .expect("its section");
    let run = run.split("\n## ").next().unwrap_or(run);
    let steps: Vec<&str> = (run.lines())
        .filter(|l| {
            l.split_once(". ")
                .is_some_and(|(n, _)| n.parse::<u32>().is_ok())
        })
        .collect();
    assert!((1..=12).contains(&steps.len()), "{steps:#?}");
    let continued = run.lines().filter(|l| l.starts_with("   ")).count();
    assert_eq!(continued, 0, "each step is one line");
}
