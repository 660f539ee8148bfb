//! `cargo optimize release --gather DIR…`: several releases' output folders — the cells of
//! a CI matrix, each built on its own runner (`ci`) — merged into one. Each folder must be
//! a release (our `manifest.json`, its `SHA256SUMS` agreeing with it); every file listed in
//! a `SHA256SUMS` is copied and checked against it (a mismatch is an error naming the
//! file); the folders must be of the same crate, binary and version, and built from the
//! same source revision (else the cells built different commits); an artifact name may
//! appear once. The result — the files, one `SHA256SUMS`, one `manifest.json` (the union
//! of the artifacts, the skipped targets and failed artifacts of all) — is staged and put
//! in place whole, as a release is (`package`): on any error the output folder is as it
//! was.
//!
//! Must not: build or run anything, or write anywhere but the staging and output folders.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context as _};
use serde::Deserialize;

use super::manifest::{
    self, ArtifactEntry, Failed, GatheredCell, Manifest, Skipped, SourceRevision, Toolchain,
    MANIFEST,
};
use super::package;

const SUMS: &str = "SHA256SUMS";

/// What a cell's `manifest.json` holds that gathering reads (unknown fields are ignored).
#[derive(Debug, Deserialize)]
struct CellManifest {
    schema: u32,
    created_by: String,
    #[serde(rename = "crate")]
    crate_name: String,
    bin: String,
    version: String,
    source: Option<SourceRevision>,
    toolchain: Option<Toolchain>,
    #[serde(default)]
    choices: Vec<String>,
    artifacts: Vec<ArtifactEntry>,
    #[serde(default)]
    skipped: Vec<Skipped>,
    #[serde(default)]
    failed: Vec<Failed>,
    #[serde(default)]
    jobs: serde_json::Value,
}

/// One folder to gather.
#[derive(Debug)]
struct CellDir {
    dir: PathBuf,
    manifest: CellManifest,
    /// `SHA256SUMS`: (file name, SHA-256), in its order.
    sums: Vec<(String, String)>,
}

/// `release --gather DIRS --out-dir OUT`: the exit code (1 when a cell was partial).
pub(crate) fn run(dirs: &[PathBuf], out: &Path) -> anyhow::Result<i32> {
    let cells = dirs
        .iter()
        .map(|d| read_cell(d))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let merged = merge(&cells)?;
    package::check_replaceable(out)?;
    package::sweep_stale(out);
    let staging = package::create_staging(out)?;
    if let Err(e) = fill(&cells, &merged, &staging) {
        let _ = std::fs::remove_dir_all(&staging);
        return Err(anyhow::anyhow!("{e:#}\n  ({} is unchanged)", out.display()));
    }
    package::put_in_place(&staging, out)?;
    for c in &merged.cells {
        println!("{}: {}", c.dir, c.artifacts.join(", "));
    }
    println!(
        "→ {} ({} artifact(s) from {} folder(s), {SUMS}, {MANIFEST})",
        out.display(),
        merged.artifacts.len(),
        cells.len()
    );
    let partial = !merged.skipped.is_empty() || !merged.failed.is_empty();
    if partial {
        let what: Vec<String> = (merged.skipped.iter())
            .map(|s| format!("{} skipped ({})", s.target, s.reason))
            .chain((merged.failed.iter()).map(|f| format!("{} failed ({})", f.artifact, f.reason)))
            .collect();
        eprintln!("warning: partial release: {}", what.join("; "));
    }
    Ok(i32::from(partial))
}

/// A folder's manifest and checksums, checked against each other.
fn read_cell(dir: &Path) -> anyhow::Result<CellDir> {
    let path = dir.join(MANIFEST);
    let text = std::fs::read_to_string(&path).with_context(|| {
        format!(
            "{} is not a release folder: cannot read {}",
            dir.display(),
            path.display()
        )
    })?;
    let manifest: CellManifest = serde_json::from_str(&text)
        .with_context(|| format!("{} is not a release's manifest", path.display()))?;
    if manifest.created_by != manifest::CREATED_BY {
        bail!(
            "{} was not written by `{}`",
            path.display(),
            manifest::CREATED_BY
        );
    }
    if manifest.schema != manifest::SCHEMA {
        bail!(
            "{} has manifest schema {}, this cargo-optimize reads {}\n  fix: gather with the cargo-optimize version that made the cells",
            path.display(),
            manifest.schema,
            manifest::SCHEMA
        );
    }
    let sums_path = dir.join(SUMS);
    let text = std::fs::read_to_string(&sums_path)
        .with_context(|| format!("cannot read {}", sums_path.display()))?;
    let sums = parse_sums(&text).with_context(|| format!("in {}", sums_path.display()))?;
    let cell = CellDir {
        dir: dir.to_path_buf(),
        manifest,
        sums,
    };
    consistent(&cell)?;
    Ok(cell)
}

/// `sha256sum` lines: `<64 hex digits>  <file>` (or ` *<file>`); a file name must be a
/// plain name in the folder.
fn parse_sums(text: &str) -> anyhow::Result<Vec<(String, String)>> {
    let mut sums = Vec::new();
    for (n, line) in text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
    {
        let parsed = line.split_once(' ').and_then(|(digest, rest)| {
            let file = rest.strip_prefix(' ').or_else(|| rest.strip_prefix('*'))?;
            let hex = digest.len() == 64 && digest.bytes().all(|b| b.is_ascii_hexdigit());
            hex.then(|| (file.to_string(), digest.to_ascii_lowercase()))
        });
        let Some((file, digest)) = parsed else {
            bail!("line {}: not `<sha256>  <file>`: {line}", n + 1);
        };
        let plain = !file.is_empty()
            && !file.starts_with('.')
            && !file.contains(['/', '\\'])
            && file != MANIFEST
            && file != SUMS;
        if !plain {
            bail!("line {}: `{file}` is not an artifact's file name", n + 1);
        }
        sums.push((file, digest));
    }
    Ok(sums)
}

/// Every artifact's binary and archive are in `SHA256SUMS` with the manifest's digest.
fn consistent(cell: &CellDir) -> anyhow::Result<()> {
    for a in &cell.manifest.artifacts {
        let p = &a.packaged;
        let archive = p.archive.as_ref().zip(p.archive_sha256.as_ref());
        for (file, digest) in std::iter::once((&p.file, &p.sha256)).chain(archive) {
            match cell.sums.iter().find(|(f, _)| f == file) {
                Some((_, d)) if d == digest => {}
                Some((_, d)) => bail!(
                    "{}: {MANIFEST} gives {file} the SHA-256 {digest}, {SUMS} gives {d}",
                    cell.dir.display()
                ),
                None => bail!("{}: {SUMS} does not list {file}", cell.dir.display()),
            }
        }
    }
    Ok(())
}

/// One manifest for all the cells, after checking they are parts of one release.
fn merge(cells: &[CellDir]) -> anyhow::Result<Manifest> {
    if cells.is_empty() {
        bail!("--gather names no folder");
    }
    once_each(cells)?;
    same(cells, "crate, binary and version", |c| {
        let m = &c.manifest;
        format!("{} {} {}", m.crate_name, m.bin, m.version)
    })?;
    same(
        cells,
        "source revision (the cells built different commits)",
        |c| {
            (c.manifest.source.as_ref())
                .map_or_else(|| "none (not built in git)".into(), |s| s.revision.clone())
        },
    )?;
    no_duplicates(cells)?;
    Ok(assemble(cells))
}

/// The gathered manifest: the first cell's crate and revision (all the same), the
/// toolchain when all agree (else each artifact names its own), everything else of all.
fn assemble(cells: &[CellDir]) -> Manifest {
    let each: Vec<&CellManifest> = cells.iter().map(|c| &c.manifest).collect();
    let first = each[0];
    let toolchain = match each.iter().all(|m| m.toolchain == first.toolchain) {
        true => first.toolchain.clone(),
        false => None,
    };
    let mut choices: Vec<String> = Vec::new();
    for c in each.iter().flat_map(|m| &m.choices) {
        if !choices.contains(c) {
            choices.push(c.clone());
        }
    }
    let artifacts = each.iter().flat_map(|m| {
        m.artifacts.iter().map(|a| ArtifactEntry {
            toolchain: a.toolchain.clone().or_else(|| m.toolchain.clone()),
            ..a.clone()
        })
    });
    Manifest {
        schema: manifest::schema(),
        created_by: manifest::CREATED_BY,
        tool_version: env!("CARGO_PKG_VERSION"),
        crate_name: first.crate_name.clone(),
        bin: first.bin.clone(),
        version: first.version.clone(),
        source: first.source.as_ref().map(|s| SourceRevision {
            revision: s.revision.clone(),
            dirty: each
                .iter()
                .any(|m| m.source.as_ref().is_some_and(|s| s.dirty)),
        }),
        toolchain,
        choices,
        artifacts: artifacts.collect(),
        skipped: each.iter().flat_map(|m| m.skipped.clone()).collect(),
        failed: each.iter().flat_map(|m| m.failed.clone()).collect(),
        jobs: serde_json::Value::Null,
        cells: cells
            .iter()
            .map(|c| GatheredCell {
                dir: dir_name(&c.dir),
                artifacts: c
                    .manifest
                    .artifacts
                    .iter()
                    .map(|a| a.name.clone())
                    .collect(),
                toolchain: c.manifest.toolchain.clone(),
                jobs: c.manifest.jobs.clone(),
            })
            .collect(),
    }
}

fn dir_name(dir: &Path) -> String {
    crate::util::absolute(dir)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| dir.display().to_string())
}

/// All cells give the same `key`, else an error listing each one's.
fn same(cells: &[CellDir], what: &str, key: impl Fn(&CellDir) -> String) -> anyhow::Result<()> {
    let keys: Vec<String> = cells.iter().map(&key).collect();
    if keys.iter().all(|k| *k == keys[0]) {
        return Ok(());
    }
    let each: Vec<String> = cells
        .iter()
        .zip(&keys)
        .map(|(c, k)| format!("{}: {k}", c.dir.display()))
        .collect();
    bail!(
        "the folders differ in {what}, so they are not parts of one release:\n{}\n  fix: gather the cells of one run of the workflow (one commit)",
        crate::util::indent(&each.join("\n"), "  ")
    )
}

/// No folder is given twice, however it is spelt (its canonical path; the path as given when
/// it has none): each of its artifacts would be listed twice.
fn once_each(cells: &[CellDir]) -> anyhow::Result<()> {
    let canonical = |d: &Path| std::fs::canonicalize(d).unwrap_or_else(|_| d.to_path_buf());
    let mut seen: Vec<(PathBuf, &Path)> = Vec::new();
    for c in cells {
        let key = canonical(&c.dir);
        if let Some((_, first)) = seen.iter().find(|(k, _)| *k == key) {
            let also = match *first == c.dir {
                true => String::new(),
                false => format!(" (as {} and {})", first.display(), c.dir.display()),
            };
            bail!(
                "--gather: the folder {} is given twice{also}\n  fix: name each cell's folder once",
                c.dir.display()
            );
        }
        seen.push((key, &c.dir));
    }
    Ok(())
}

/// No artifact, and no file, comes from two cells.
fn no_duplicates(cells: &[CellDir]) -> anyhow::Result<()> {
    let mut seen: Vec<(&str, &Path)> = Vec::new();
    let names = cells.iter().flat_map(|c| {
        let artifacts = c.manifest.artifacts.iter().map(|a| a.name.as_str());
        let files = c.sums.iter().map(|(f, _)| f.as_str());
        artifacts.chain(files).map(|n| (n, c.dir.as_path()))
    });
    for (name, dir) in names {
        if let Some((_, other)) = seen.iter().find(|(n, d)| *n == name && *d != dir) {
            bail!(
                "{name} is in both {} and {}\n  fix: gather each cell once; two cells built the same artifact",
                other.display(),
                dir.display()
            );
        }
        seen.push((name, dir));
    }
    Ok(())
}

/// Copy every listed file into `staging`, checking each copy against its `SHA256SUMS`;
/// then the one `SHA256SUMS` and `manifest.json`.
fn fill(cells: &[CellDir], merged: &Manifest, staging: &Path) -> anyhow::Result<()> {
    let mut all: Vec<(String, String)> = Vec::new();
    for cell in cells {
        let binaries: Vec<&str> = (cell.manifest.artifacts.iter())
            .map(|a| a.packaged.file.as_str())
            .collect();
        for (file, digest) in &cell.sums {
            let (from, to) = (cell.dir.join(file), staging.join(file));
            std::fs::copy(&from, &to)
                .map_err(|e| crate::util::io_error(e, "cannot copy the artifact file", &from))?;
            let got = crate::store::file_sha256(&to)?;
            if got != *digest {
                bail!(
                    "{}: its SHA-256 is {got}, but {} says {digest}: the file changed after the release was made\n  fix: build that cell again; nothing was gathered",
                    from.display(),
                    cell.dir.join(SUMS).display()
                );
            }
            // Artifact stores may drop the executable bit; the binaries get it back.
            let mode = if binaries.contains(&file.as_str()) {
                0o755
            } else {
                0o644
            };
            crate::sys::set_mode(&to, mode)?;
            all.push((file.clone(), digest.clone()));
        }
    }
    all.sort();
    let sums: String = all.iter().map(|(f, d)| format!("{d}  {f}\n")).collect();
    std::fs::write(staging.join(SUMS), sums)?;
    let json = serde_json::to_string_pretty(merged)? + "\n";
    std::fs::write(staging.join(MANIFEST), json)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: &str = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";

    #[test]
    fn sums_are_read_in_both_sha256sum_modes_and_odd_names_are_refused() {
        let text = format!("{A}  tool-x\n{} *tool-x.tar.gz\n\n", A.to_uppercase());
        let sums = parse_sums(&text).unwrap();
        assert_eq!(
            sums,
            [
                ("tool-x".to_string(), A.to_string()),
                ("tool-x.tar.gz".to_string(), A.to_string())
            ]
        );
        for bad in [
            format!("{A}  ../etc/passwd"),
            format!("{A}  {MANIFEST}"),
            "abc  tool".to_string(),
            A.to_string(),
        ] {
            assert!(parse_sums(&bad).is_err(), "{bad} was accepted");
        }
    }

    fn cell(dir: &str, revision: &str, artifacts: &[&str]) -> CellDir {
        let manifest = CellManifest {
            schema: manifest::SCHEMA,
            created_by: manifest::CREATED_BY.into(),
            crate_name: "c".into(),
            bin: "c".into(),
            version: "1.0.0".into(),
            source: Some(SourceRevision {
                revision: revision.into(),
                dirty: false,
            }),
            toolchain: None,
            choices: vec!["stages: pgo ([release] stages)".into()],
            artifacts: Vec::new(),
            skipped: Vec::new(),
            failed: Vec::new(),
            jobs: serde_json::Value::Null,
        };
        CellDir {
            dir: dir.into(),
            manifest,
            sums: artifacts
                .iter()
                .map(|a| (a.to_string(), A.into()))
                .collect(),
        }
    }

    #[test]
    fn a_folder_given_twice_is_refused_naming_it() {
        let e = merge(&[cell("x", "r1", &["a"]), cell("x", "r1", &["a"])])
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("x is given twice") && e.contains("fix: name each cell's folder once"),
            "{e}"
        );
        // Another spelling of the same folder is the same folder.
        let tmp = tempfile::tempdir().unwrap();
        let d = tmp.path().to_str().unwrap();
        let e = merge(&[cell(d, "r1", &["a"]), cell(&format!("{d}/."), "r1", &["a"])])
            .unwrap_err()
            .to_string();
        assert!(e.contains("is given twice"), "{e}");
    }

    #[test]
    fn cells_of_other_commits_or_with_the_same_file_are_refused() {
        let ok = merge(&[cell("x", "r1", &["a"]), cell("y", "r1", &["b"])]).unwrap();
        assert_eq!(ok.choices.len(), 1, "choices are not repeated");
        assert_eq!(ok.source.unwrap().revision, "r1");
        let e = merge(&[cell("x", "r1", &["a"]), cell("y", "r2", &["b"])])
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("different commits") && e.contains("x: r1") && e.contains("y: r2"),
            "{e}"
        );
        let e = merge(&[cell("x", "r1", &["a"]), cell("y", "r1", &["a"])])
            .unwrap_err()
            .to_string();
        assert!(e.contains("a is in both x and y"), "{e}");
    }
}
