//! `cargo optimize profile merge`: the profiles of many hosts merged into one, with the
//! llvm-profdata of rustc's LLVM (`toolchain::llvm_profdata`). Each input counts once, or N
//! times with `--weight FILE=N` (`N,FILE` in llvm-profdata's input list); folders stand for
//! the profiles in them. A file is one input whatever it is called (by device and inode:
//! another spelling of its path, a symlink, a hard link), each other name said in a warning;
//! a weight is the file's, whichever name it was given to. `--failure-mode=warn`: a file llvm-profdata cannot read is dropped
//! and named — except one in another LLVM version's profile format, which refuses the whole
//! merge (exit 2: naming it, what llvm-profdata said, and the fix), since its host's counts
//! would otherwise be silently missing. The result is summarised (its functions and the 5
//! hottest: `hotspots::rank`) and put at `-o` as every `-o` is (`util::atomic::write_by`:
//! through a symlink, into a device or pipe, a regular file replaced whole).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::Context as _;

use crate::hotspots::{self, Ranking};
use crate::toolchain::{profdata, Rustc, Tool};
use crate::ui::Ui;

/// How many of the hottest functions the summary lists.
const TOP: usize = 5;

/// One profile to merge.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Input {
    /// As the user named it (or its folder joined with its name).
    pub(crate) shown: PathBuf,
    /// Absolute: what llvm-profdata is given and names in its warnings.
    pub(crate) path: PathBuf,
    pub(crate) weight: u64,
}

/// `FILE=N` of `--weight`.
pub(crate) fn parse_weight(arg: &str) -> anyhow::Result<(PathBuf, u64)> {
    let bad = |why: &str| {
        anyhow::anyhow!("--weight {arg}: {why}\n  fix: --weight FILE=N, N an integer ≥ 1 (e.g. --weight host-a.profraw=3)")
    };
    let (file, n) = arg.rsplit_once('=').ok_or_else(|| bad("no `=N`"))?;
    let n: u64 = n.trim().parse().map_err(|_| bad("N is not an integer"))?;
    if n == 0 || file.is_empty() {
        return Err(bad(if n == 0 { "N must be ≥ 1" } else { "no FILE" }));
    }
    Ok((PathBuf::from(file), n))
}

/// A file's identity: its device and inode (symlinks followed), so the same file under
/// two names (`a.profraw` and `sub/../a.profraw`, a symlink, a hard link) is one input.
type FileId = (u64, u64);

fn file_id(p: &Path) -> anyhow::Result<FileId> {
    let meta = std::fs::metadata(p).map_err(|e| {
        anyhow::anyhow!("{}: {e}\n  fix: name profiles that exist (.profraw from the hosts, .profdata merged before)", p.display())
    })?;
    // Without a file identity (Windows), the canonical path stands in for one.
    Ok(crate::sys::file_id(&meta).unwrap_or_else(|| {
        use std::hash::{Hash as _, Hasher as _};
        let canon = std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
        let mut h = std::collections::hash_map::DefaultHasher::new();
        canon.hash(&mut h);
        (0, h.finish())
    }))
}

/// The inputs: `paths` (each counted once) and the weighted files (folders expanded), in
/// that order, each file once — by device and inode, whatever its name —, and a warning for
/// each name that was the same file as an earlier one. A weight names a file, not a
/// spelling: it applies whichever name the file is also given by, and two different weights
/// for one file are refused.
pub(crate) fn inputs(
    paths: &[PathBuf],
    weighted: &[(PathBuf, u64)],
) -> anyhow::Result<(Vec<Input>, Vec<String>)> {
    let mut found = Found::default();
    for p in paths {
        for shown in expand(p)? {
            found.add(shown, 1)?;
        }
    }
    let mut set: BTreeMap<FileId, (u64, String)> = BTreeMap::new();
    for (p, n) in weighted {
        for shown in expand(p)? {
            let id = file_id(&shown)?;
            let arg = format!("{}={n}", p.display());
            if let Some((m, first)) = set.get(&id).filter(|(m, _)| m != n) {
                anyhow::bail!("--weight {first} and --weight {arg} give {} two weights ({m} and {n}): a weight is the file's, whichever name it is given by\n  fix: give each file one weight", shown.display());
            }
            set.insert(id, (*n, arg));
            let k = found.add(shown, *n)?;
            found.inputs[k].weight = *n;
        }
    }
    if found.inputs.is_empty() {
        anyhow::bail!("no profile to merge\n  fix: name the .profraw/.profdata files (or folders of them): cargo optimize profile merge -o merged.profdata host-a.profraw host-b.profraw");
    }
    Ok((found.inputs, found.duplicates))
}

/// The inputs so far, each file once, and what was said about names given twice.
#[derive(Default)]
struct Found {
    inputs: Vec<Input>,
    ids: Vec<FileId>,
    duplicates: Vec<String>,
}

impl Found {
    /// `shown` with `weight`, unless its file is in already; its index either way.
    fn add(&mut self, shown: PathBuf, weight: u64) -> anyhow::Result<usize> {
        let id = file_id(&shown)?;
        let path = crate::util::absolute(&shown);
        let Some(k) = self.ids.iter().position(|i| *i == id) else {
            self.ids.push(id);
            self.inputs.push(Input {
                shown,
                path,
                weight,
            });
            return Ok(self.inputs.len() - 1);
        };
        let first = &self.inputs[k];
        if first.path != path {
            let canonical = |p: &Path| std::fs::canonicalize(p).ok();
            let how = if canonical(&first.path) == canonical(&path) {
                "its path spelled another way or through a symlink"
            } else {
                "a hard link to it"
            };
            self.duplicates.push(format!(
                "{} is the same file as {} ({how}: device {}, inode {}): merged once, not twice",
                shown.display(),
                first.shown.display(),
                id.0,
                id.1
            ));
        }
        Ok(k)
    }
}

/// A file as itself; a folder as its .profraw and .profdata files, sorted.
fn expand(p: &Path) -> anyhow::Result<Vec<PathBuf>> {
    let meta = std::fs::metadata(p).map_err(|e| {
        anyhow::anyhow!("{}: {e}\n  fix: name profiles that exist (.profraw from the hosts, .profdata merged before)", p.display())
    })?;
    if !meta.is_dir() {
        return Ok(vec![p.to_path_buf()]);
    }
    let mut files: Vec<PathBuf> = std::fs::read_dir(p)
        .with_context(|| format!("cannot list {}", p.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|f| f.is_file())
        .filter(|f| {
            f.extension()
                .is_some_and(|x| x == "profraw" || x == "profdata")
        })
        .collect();
    files.sort();
    if files.is_empty() {
        anyhow::bail!("{}: a folder without .profraw or .profdata files\n  fix: name the folder the hosts' profiles were gathered into", p.display());
    }
    Ok(files)
}

/// A merge done: its inputs, what was dropped, and the merged profile's ranking.
#[derive(Debug)]
pub(crate) struct Merged {
    pub(crate) out: PathBuf,
    pub(crate) tool: String,
    pub(crate) inputs: Vec<Input>,
    /// Inputs dropped, with llvm-profdata's reason.
    pub(crate) dropped: Vec<(Input, String)>,
    /// Warnings about functions of merged inputs (e.g. one built from other code).
    pub(crate) warnings: Vec<String>,
    pub(crate) ranking: Ranking,
}

/// Merge `inputs` into `out` with `tool` (the llvm-profdata of `rustc`'s LLVM); progress on
/// `ui`. `out` is written only when the merge succeeds.
pub(crate) fn merge(
    tool: &Tool,
    rustc: &Rustc,
    inputs: &[Input],
    out: &Path,
    ui: &Ui,
) -> anyhow::Result<Merged> {
    let out = crate::util::absolute(out);
    let parent = out.parent().unwrap_or(Path::new("/")).to_path_buf();
    std::fs::create_dir_all(&parent)
        .with_context(|| format!("cannot create {}", parent.display()))?;
    ui.step(&format!(
        "merging {} profile(s) with {}",
        inputs.len(),
        tool.path.display()
    ));
    let weighted: Vec<(&Path, u64)> = inputs
        .iter()
        .map(|i| (i.path.as_path(), i.weight))
        .collect();
    // What llvm-profdata made of the inputs decides whether the file is put in place; it is
    // read before, since `-o` may be a device or a pipe, put as every `-o` is.
    let mut judged = None;
    let written = crate::util::atomic::write_by(&out, |tmp| {
        let ran = profdata::merge(&tool.path, &weighted, tmp).map_err(anyhow::Error::from);
        let made = ran.and_then(|said| {
            let judged = judge(tool, rustc, inputs, &said)?;
            let shown = profdata::show(&tool.path, tmp)?;
            let ranking = hotspots::rank(&shown, TOP, 0);
            empty_refused(&ranking, inputs)?;
            Ok((judged, ranking))
        });
        match judged.insert(made) {
            Ok(_) => Ok(()),
            Err(_) => Err(std::io::Error::other("not merged")),
        }
    });
    let made = judged.transpose()?;
    written?;
    let (Judged { dropped, warnings }, ranking) = made.context("llvm-profdata did not run")?;
    Ok(Merged {
        out,
        tool: tool.path.display().to_string(),
        inputs: inputs.to_vec(),
        dropped,
        warnings,
        ranking,
    })
}

/// A merge whose profile counts nothing (every input empty: a collector that never ran its
/// program, or one killed before it wrote) is refused, nothing put in place: building with
/// it would be PGO in name only.
fn empty_refused(ranking: &hotspots::Ranking, inputs: &[Input]) -> anyhow::Result<()> {
    if ranking.functions_with_counts > 0 {
        return Ok(());
    }
    let names: Vec<String> = inputs
        .iter()
        .map(|i| i.path.display().to_string())
        .collect();
    anyhow::bail!(
        "the merged profile counts nothing: {} hold no function that ran
  nothing was written
  fix: collect again with the instrumented binary (`cargo optimize profile collect`) running the program's real work, and merge the .profraw files it writes",
        names.join(", ")
    )
}

/// What llvm-profdata said, judged: an input in another LLVM version's format refuses the
/// merge (the error names each, with the fix); others it could not read are dropped;
/// warnings about a function of an input that was merged are kept as warnings. Fails too
/// when nothing could be merged.
fn judge(
    tool: &Tool,
    rustc: &Rustc,
    inputs: &[Input],
    said: &[profdata::Said],
) -> anyhow::Result<Judged> {
    let foreign: Vec<&profdata::Said> = said
        .iter()
        .filter(|s| s.input.is_some() && profdata::version_mismatch(&s.message))
        .collect();
    if !foreign.is_empty() {
        anyhow::bail!("{}", refusal(tool, rustc, inputs, &foreign));
    }
    let mut dropped: Vec<(Input, String)> = Vec::new();
    let mut warnings = Vec::new();
    for s in said {
        match s.input {
            Some(n) if !about_a_function(&s.message) => {
                if !dropped.iter().any(|(i, _)| *i == inputs[n]) {
                    dropped.push((inputs[n].clone(), s.message.clone()));
                }
            }
            Some(n) => warnings.push(format!("{}: {}", inputs[n].shown.display(), s.message)),
            None => warnings.push(s.message.clone()),
        }
    }
    if dropped.len() == inputs.len() {
        let why: Vec<String> = dropped
            .iter()
            .map(|(i, m)| format!("  {}: {m}", i.shown.display()))
            .collect();
        anyhow::bail!("no profile could be merged: llvm-profdata could read none of them\n{}\n  fix: merge the .profraw files the collector wrote (`cargo optimize profile collect`), or .profdata files merged before", why.join("\n"));
    }
    Ok(Judged { dropped, warnings })
}

/// What llvm-profdata said about a merge that went through.
#[derive(Debug)]
struct Judged {
    /// Inputs dropped, with the reason.
    dropped: Vec<(Input, String)>,
    /// About functions of merged inputs, or about none.
    warnings: Vec<String>,
}

/// A warning about one function of a file that was merged (`<function>: … (counter
/// mismatch)`: the hosts ran binaries of different code), not about the file itself.
fn about_a_function(message: &str) -> bool {
    ["counter mismatch", "counter overflow", "hash mismatch"]
        .iter()
        .any(|m| message.contains(m))
}

/// The error for inputs in another LLVM version's profile format.
fn refusal(tool: &Tool, rustc: &Rustc, inputs: &[Input], foreign: &[&profdata::Said]) -> String {
    let files: Vec<String> = foreign
        .iter()
        .filter_map(|s| {
            let i = &inputs[s.input?];
            let said = s.message.replace('\n', "\n      ");
            Some(format!(
                "  {}\n    llvm-profdata said: {said}",
                i.shown.display()
            ))
        })
        .collect();
    format!(
        "refused: {} profile(s) in another LLVM version's format than this toolchain's ({}, LLVM {}; {}), so their hosts' counts cannot be merged:\n{}\n  nothing was written\n  fix: merge them first with the llvm-profdata of the LLVM that built their collector (`llvm-profdata merge -o theirs.profdata FILE…`: a newer LLVM reads an older one's merged profile) and merge that here; or rebuild the collector with this toolchain (`cargo optimize profile collect`), deploy it and collect again",
        foreign.len(),
        rustc.version,
        rustc.llvm_version,
        tool.path.display(),
        files.join("\n")
    )
}

impl Merged {
    /// What [`Merged::summary`] says, as JSON (`profile merge --format json`).
    pub(crate) fn json(&self) -> serde_json::Value {
        let inputs: Vec<_> = (self.inputs.iter())
            .map(|i| {
                let dropped = self.dropped.iter().find(|(d, _)| d == i);
                serde_json::json!({
                    "path": i.shown, "weight": i.weight,
                    "dropped": dropped.map(|(_, why)| why),
                })
            })
            .collect();
        serde_json::json!({
            "out": self.out, "tool": self.tool, "inputs": inputs,
            "warnings": self.warnings, "ranking": self.ranking,
        })
    }

    /// What was merged (with weights), what was dropped, the functions, the hottest.
    pub(crate) fn summary(&self) -> String {
        use std::fmt::Write;
        let mut s = String::new();
        let merged = self.inputs.len() - self.dropped.len();
        let _ = writeln!(
            s,
            "merged {merged} of {} profile(s) into {} ({}):",
            self.inputs.len(),
            self.out.display(),
            self.tool
        );
        for i in &self.inputs {
            let gone = self.dropped.iter().find(|(d, _)| d == i);
            let state = match gone {
                Some((_, why)) => format!("dropped: {}", why.lines().next().unwrap_or("")),
                None => format!("weight {}", i.weight),
            };
            let _ = writeln!(s, "  {}  {state}", i.shown.display());
        }
        for w in &self.warnings {
            let _ = writeln!(s, "  warning: {}", w.lines().next().unwrap_or(""));
        }
        let r = &self.ranking;
        let _ = writeln!(
            s,
            "functions: {} in the profile, {} ran (count > 0); {} counts in all",
            r.functions_in_profile, r.functions_with_counts, r.total_counts
        );
        let _ = writeln!(s, "hottest:");
        for f in &r.functions {
            let _ = writeln!(
                s,
                "  {:>2}. {:>5.1} %  {:>14}  {}",
                f.rank,
                f.share * 100.0,
                f.counts,
                f.name
            );
        }
        if r.functions.is_empty() {
            let _ = writeln!(s, "  no function has counts");
        }
        let _ = writeln!(
            s,
            "use it: cargo optimize --pgo-profile {}",
            self.out.display()
        );
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input(path: &str, weight: u64) -> Input {
        Input {
            shown: PathBuf::from(path),
            path: PathBuf::from(path),
            weight,
        }
    }

    fn tool() -> Tool {
        Tool {
            path: "/t/llvm-profdata".into(),
            version: "LLVM version 22.1.2".into(),
            llvm_major: Some(22),
        }
    }

    fn rustc() -> Rustc {
        Rustc {
            version: "rustc 1.95.0".into(),
            host: "x86_64-unknown-linux-gnu".into(),
            llvm_version: "22.1.2".into(),
            llvm_major: 22,
            sysroot: "/s".into(),
        }
    }

    /// An llvm-profdata that writes `merged` to `-o` and shows one function that ran.
    fn fake_profdata(dir: &Path) -> Tool {
        fake_profdata_showing(dir, "  main:\\n    Block counts: [5]\\n")
    }

    /// An llvm-profdata that writes `merged` to `-o` and shows `shows` (printf's format).
    fn fake_profdata_showing(dir: &Path, shows: &str) -> Tool {
        let p = dir.join("llvm-profdata");
        let script = format!("#!/bin/sh\n[ \"$1\" = show ] && {{ printf '{shows}'; exit 0; }}\n[ \"$1\" = merge ] || exit 0\nwhile [ $# -gt 0 ]; do [ \"$1\" = -o ] && out=$2; shift; done\nprintf merged > \"$out\"\n");
        std::fs::write(&p, script).unwrap();
        crate::sys::set_mode(&p, 0o755).unwrap();
        // Another test thread forking while the file was open for writing makes exec fail
        // with ETXTBSY until that child execs; wait until it runs.
        for _ in 0..100 {
            match crate::process::run(&crate::process::Command::new(&p)) {
                Err(crate::process::ProcessError::Spawn { error, .. })
                    if crate::sys::errno_name(&error) == Some("ETXTBSY") =>
                {
                    std::thread::sleep(std::time::Duration::from_millis(10))
                }
                _ => break,
            }
        }
        Tool { path: p, ..tool() }
    }

    #[test]
    fn a_merge_that_counts_nothing_is_refused_and_nothing_written() {
        let tmp = tempfile::tempdir().unwrap();
        let d = tmp.path();
        let tool = fake_profdata_showing(d, "");
        let raw = d.join("empty.profraw");
        std::fs::write(&raw, b"").unwrap();
        let ins = [input(raw.to_str().unwrap(), 1)];
        let ui = Ui::new(true, 0, Some(false));
        let out = d.join("merged.profdata");
        let e = merge(&tool, &rustc(), &ins, &out, &ui).unwrap_err();
        let e = format!("{e:#}");
        assert!(e.contains("the merged profile counts nothing"), "{e}");
        assert!(e.contains("empty.profraw") && e.contains("fix:"), "{e}");
        assert!(!out.exists(), "an empty profile was put in place");
    }

    #[test]
    fn the_merged_profile_goes_through_a_symlink_and_never_replaces_a_pipe_or_a_folder() {
        let tmp = tempfile::tempdir().unwrap();
        let d = tmp.path();
        let tool = fake_profdata(d);
        let raw = d.join("a.profraw");
        std::fs::write(&raw, b"x").unwrap();
        let ins = [input(raw.to_str().unwrap(), 1)];
        let ui = Ui::new(true, 0, Some(false));
        std::fs::write(d.join("real.profdata"), b"old").unwrap();
        crate::sys::symlink("real.profdata", d.join("link.profdata")).unwrap();
        merge(&tool, &rustc(), &ins, &d.join("link.profdata"), &ui).unwrap();
        let link = std::fs::symlink_metadata(d.join("link.profdata")).unwrap();
        assert!(link.file_type().is_symlink(), "the link was replaced");
        assert_eq!(std::fs::read(d.join("real.profdata")).unwrap(), b"merged");
        let fifo = d.join("p");
        crate::sys::testing::mkfifo(&fifo).unwrap();
        let e = merge(&tool, &rustc(), &ins, &fifo, &ui).unwrap_err();
        assert!(format!("{e:#}").contains("no process is reading"), "{e:#}");
        let kind = std::fs::symlink_metadata(&fifo).unwrap().file_type();
        assert!(crate::sys::testing::is_fifo(&kind), "the pipe was replaced");
        let reader = {
            let fifo = fifo.clone();
            std::thread::spawn(move || std::fs::read(fifo).unwrap())
        };
        // The reader opens the pipe in its own time: retry for at most 5 s.
        let start = std::time::Instant::now();
        while let Err(e) = merge(&tool, &rustc(), &ins, &fifo, &ui) {
            assert!(start.elapsed().as_secs() < 5, "no reader came: {e:#}");
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        assert_eq!(reader.join().unwrap(), b"merged");
        let e = merge(&tool, &rustc(), &ins, d, &ui).unwrap_err();
        assert!(format!("{e:#}").contains("it is a directory"), "{e:#}");
        let names: Vec<_> = std::fs::read_dir(d)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names.len(), 5, "no temporary file is left: {names:?}");
    }

    #[test]
    fn weights_are_file_equals_a_positive_integer() {
        assert_eq!(
            parse_weight("dc=east/a.profraw=3").unwrap(),
            (PathBuf::from("dc=east/a.profraw"), 3)
        );
        for bad in ["a.profraw", "a.profraw=0", "a.profraw=x", "=2", "a=-1"] {
            let e = parse_weight(bad).unwrap_err().to_string();
            assert!(e.contains("fix: --weight FILE=N"), "{bad}: {e}");
        }
    }

    #[test]
    fn inputs_are_each_file_once_folders_expanded_weights_applied() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        for f in ["a.profraw", "b.profraw", "c.profdata", "notes.txt"] {
            std::fs::write(d.join(f), b"x").unwrap();
        }
        let a = d.join("a.profraw");
        let (got, duplicates) = inputs(&[a.clone(), d.to_path_buf()], &[(a.clone(), 3)]).unwrap();
        assert!(duplicates.is_empty(), "{duplicates:?}");
        let names: Vec<(String, u64)> = got
            .iter()
            .map(|i| {
                (
                    i.path.file_name().unwrap().to_string_lossy().into(),
                    i.weight,
                )
            })
            .collect();
        assert_eq!(
            names,
            [
                ("a.profraw".into(), 3),
                ("b.profraw".into(), 1),
                ("c.profdata".into(), 1)
            ]
        );
        let twice = inputs(&[], &[(a.clone(), 2), (d.to_path_buf(), 3)]).unwrap_err();
        assert!(
            twice.to_string().contains("two weights (2 and 3)"),
            "{twice}"
        );
        let missing = inputs(&[d.join("nope.profraw")], &[]).unwrap_err();
        assert!(missing.to_string().contains("nope.profraw"), "{missing}");
        assert!(inputs(&[], &[]).is_err());
    }

    #[test]
    fn one_file_under_several_names_is_one_input_with_a_warning_and_its_weight() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        std::fs::create_dir(d.join("sub")).unwrap();
        let a = d.join("a.profraw");
        std::fs::write(&a, b"x").unwrap();
        std::fs::write(d.join("b.profraw"), b"y").unwrap();
        crate::sys::symlink(&a, d.join("link.profraw")).unwrap();
        std::fs::hard_link(&a, d.join("hard.profraw")).unwrap();
        let names = [
            a.clone(),
            d.join("sub/../a.profraw"),
            d.join("link.profraw"),
            d.join("hard.profraw"),
            d.join("b.profraw"),
        ];
        let (got, duplicates) = inputs(&names, &[]).unwrap();
        assert_eq!(got.len(), 2, "{got:?}");
        assert_eq!((got[0].shown.as_path(), got[0].weight), (a.as_path(), 1));
        assert_eq!(duplicates.len(), 3, "{duplicates:?}");
        assert!(duplicates[0].contains("sub/../a.profraw is the same file as"));
        assert!(duplicates[1].contains("link.profraw") && duplicates[1].contains("symlink"));
        assert!(duplicates[2].contains("hard.profraw") && duplicates[2].contains("hard link"));
        assert!(duplicates.iter().all(|w| w.contains("merged once")));
        // A weight given to one name is the file's.
        let (got, _) = inputs(&names[..2], &[(d.join("link.profraw"), 4)]).unwrap();
        assert_eq!(got.len(), 1);
        assert_eq!((got[0].shown.as_path(), got[0].weight), (a.as_path(), 4));
        let e = inputs(&[], &[(a.clone(), 2), (d.join("hard.profraw"), 3)]).unwrap_err();
        assert!(e.to_string().contains("two weights (2 and 3)"), "{e}");
    }

    fn paths(ins: &[Input]) -> Vec<&Path> {
        ins.iter().map(|i| i.path.as_path()).collect()
    }

    const STDERR: &str = "warning: /h/c.profraw: raw profile version mismatch: Profile uses raw profile format version = 99; expected version = 10\nPLEASE update this tool to version in the raw profile, or regenerate raw profile with expected version.\nwarning: /h/t.profraw: invalid instrumentation profile data (file header is corrupt)\nwarning: /h/a.profraw: _ZN1m1fE: function basic block count change detected (counter mismatch)\n";

    #[test]
    fn what_llvm_profdata_said_goes_to_the_file_it_names() {
        let ins = [
            input("/h/a.profraw", 1),
            input("/h/c.profraw", 1),
            input("/h/t.profraw", 1),
        ];
        let said = profdata::said_by_input(STDERR, &paths(&ins));
        assert_eq!(said.len(), 3);
        assert_eq!(said[0].input, Some(1));
        assert!(said[0].message.ends_with("\nPLEASE update this tool to version in the raw profile, or regenerate raw profile with expected version."));
        assert_eq!((said[1].input, said[2].input), (Some(2), Some(0)));
        // Another LLVM's format refuses the merge, naming the file and what was said.
        let e = judge(&tool(), &rustc(), &ins, &said)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("  /h/c.profraw\n    llvm-profdata said: raw profile version mismatch"),
            "{e}"
        );
        assert!(e.contains("fix: "), "{e}");
        // Without it: the unreadable file is dropped, the function warning kept.
        let judged = judge(&tool(), &rustc(), &ins, &said[1..]).unwrap();
        assert_eq!(judged.dropped.len(), 1);
        assert_eq!(judged.dropped[0].0, ins[2]);
        assert_eq!(judged.warnings.len(), 1);
        assert!(judged.warnings[0].contains("counter mismatch"));
        // Nothing readable: an error.
        let only_bad = [input("/h/t.profraw", 1)];
        let said = profdata::said_by_input(STDERR, &paths(&only_bad));
        let e = judge(&tool(), &rustc(), &only_bad, &said).unwrap_err();
        assert!(e.to_string().contains("no profile could be merged"), "{e}");
    }
}
