//! The alloc stage's winner written into the project: the allocator's crate among the
//! package's `[dependencies]` and its `#[global_allocator]` item at the end of the
//! binary's root file — the two edits `cargo::alloc` made to the private copy the run
//! built and measured, so a plain build of the edited project is that build. The root file
//! is edited only while it is the file the run built from (its SHA-256 in the row's
//! `alloc_root`), by the function the run's copy used (`cargo::alloc::with_item`, for the
//! target the kept row built for), so what is written is what was measured, or nothing: a
//! refusal. A root file that is the recorded one with that very item already is left as it
//! is; any other `#[global_allocator]` text (a comment) counts for nothing.

use anyhow::Context as _;

use super::{Edited, ManifestEdit, Winner};
use crate::cargo::alloc::{self, Allocator};
use crate::report::{Report, Status};
use crate::stages::{label_of, Changes};

/// The winner's allocator, `None` without one; an allocator this version does not know is
/// an error (a report of a newer version).
pub(super) fn of(win: &Winner) -> anyhow::Result<Option<&'static Allocator>> {
    let Some(name) = &win.allocator else {
        return Ok(None);
    };
    match alloc::named(name) {
        Some(a) => Ok(Some(a)),
        None => anyhow::bail!(
            "the report's winner uses the allocator `{name}`, which this version of cargo-optimize does not know\n  fix: update cargo-optimize, or run `cargo optimize` again with this one"
        ),
    }
}

/// `a`'s crate added to the manifest edit `e` (nothing without `a`).
pub(super) fn add_dependency(e: &mut Edited, a: Option<&Allocator>) -> anyhow::Result<()> {
    if let Some(a) = a {
        e.text = alloc::with_dependency(&e.text, a).map_err(anyhow::Error::msg)?;
    }
    Ok(())
}

/// The root file's change, and with `member` the package manifest's (when it is not the
/// workspace root's, which the profile's edit holds).
pub(super) fn changes(
    project: &crate::cargo::Project,
    a: &Allocator,
    report: &Report,
    member: bool,
    notes: &mut Vec<String>,
) -> anyhow::Result<Vec<ManifestEdit>> {
    let mut out = Vec::new();
    let manifest_text = std::fs::read_to_string(&project.manifest_path)
        .with_context(|| format!("cannot read {}", project.manifest_path.display()))?;
    if member {
        out.push(ManifestEdit::text(
            project.manifest_path.clone(),
            format!("the `{}` dependency", a.krate),
            |text| {
                let mut e = Edited::unchanged(text);
                add_dependency(&mut e, Some(a))?;
                Ok(e)
            },
            notes,
        )?);
    }
    let recorded = kept_row(report, a)
        .and_then(|s| s.facts.alloc_root.clone())
        .ok_or_else(|| anyhow::anyhow!("the report's kept `alloc ({})` row does not say which root file it built from\n  fix: run `cargo optimize` again with this version, then apply", a.name))?;
    let root = project.workspace_root.join(&recorded.file);
    let bytes = std::fs::read(&root).with_context(|| format!("cannot read {}", root.display()))?;
    let target = kept_target(report, a);
    let cfg = alloc::target_cfg(target.as_deref());
    let edition_2015 = alloc::edition_2015(&manifest_text);
    let edit = |text: &str| alloc::with_item(text, a, edition_2015, &cfg);
    if crate::store::sha256_hex(&bytes) != recorded.sha256 {
        if applied_before(&String::from_utf8_lossy(&bytes), &recorded.sha256, edit) {
            notes.push(format!(
                "{} already has the measured `#[global_allocator]` ({}): left as it is",
                root.display(),
                a.name
            ));
            return Ok(out);
        }
        anyhow::bail!(
            "{} changed since run {} built `alloc ({})` from it: the item would go into a file that was not measured\n  fix: run `cargo optimize` again, then apply its winner",
            root.display(),
            report.run_id,
            a.name
        );
    }
    let shown = recorded.file.clone();
    out.push(ManifestEdit::text(
        root,
        format!("#[global_allocator] ({})", a.name),
        |text| match edit(text) {
            Ok(with) => Ok(Edited::unchanged(&with)),
            Err(no) => anyhow::bail!(
                "{}\n  the run measured {} in this file built for {}: apply writes only what was measured\n  fix: run `cargo optimize` again",
                no.describe(&shown, a),
                a.name,
                target.as_deref().unwrap_or("the host")
            ),
        },
        notes,
    )?);
    notes.push(format!(
        "the program now allocates through {} (crate `{}` from crates.io): the next build downloads and compiles it (it builds C code, so a C compiler is needed wherever you build)",
        a.name, a.krate
    ));
    Ok(out)
}

/// The report's kept `alloc (<a>)` row, the last one.
fn kept_row<'r>(report: &'r Report, a: &Allocator) -> Option<&'r crate::report::StageReport> {
    report
        .stages
        .iter()
        .rev()
        .filter(|s| s.name == label_of(Changes::Allocator) && s.status == Status::Kept)
        .find(|s| s.settings.as_ref().and_then(|v| v.allocator.as_deref()) == Some(a.name))
}

/// The target the kept row built for (`None`: the host).
fn kept_target(report: &Report, a: &Allocator) -> Option<String> {
    kept_row(report, a).and_then(|s| s.settings.as_ref()?.target.clone())
}

/// Whether `text` is a root file whose SHA-256 was `sha256` with the item `edit` adds to
/// it: `apply` already wrote what was measured (the item's comment starts the appended
/// part, after one blank line, and the line ending the file may have been added).
fn applied_before(
    text: &str,
    sha256: &str,
    edit: impl Fn(&str) -> Result<String, alloc::NoItem>,
) -> bool {
    let Some(at) = text.rfind("// The global allocator `cargo optimize` measured faster") else {
        return false;
    };
    let head = &text[..at];
    let eol = if text.contains("\r\n") { "\r\n" } else { "\n" };
    let mut originals = vec![head.strip_suffix(eol).unwrap_or(head)];
    originals.extend(originals[0].strip_suffix(eol));
    let edition_2015_head = head.rfind("extern crate ").map(|i| &text[..i]);
    originals.extend(edition_2015_head.and_then(|h| h.strip_suffix(eol)));
    originals.extend(edition_2015_head.and_then(|h| h.strip_suffix(eol)?.strip_suffix(eol)));
    originals.into_iter().any(|o| {
        crate::store::sha256_hex(o.as_bytes()) == sha256 && edit(o).is_ok_and(|w| w == text)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A root file `apply` already gave the measured item is recognised by the recorded
    /// SHA-256 of the file before and that exact item (LF, CRLF, edition 2015); a file that
    /// merely holds the item's comment, or was changed besides, is not.
    #[test]
    fn apply_writes_the_measured_item_once_and_refuses_what_was_not_measured() {
        let a = alloc::named("mimalloc").unwrap();
        let cfg = ["unix".to_string(), "target_env=\"gnu\"".to_string()];
        for (original, ed2015) in [
            ("fn main() {}\n", false),
            ("fn main() {}", false),
            ("fn main() {}\r\n", false),
            ("static GLOBAL_ALLOCATOR: u8 = 0;\nfn main() {}\n", true),
        ] {
            let sha = crate::store::sha256_hex(original.as_bytes());
            let edit = |t: &str| alloc::with_item(t, a, ed2015, &cfg);
            let with = edit(original).unwrap();
            assert!(applied_before(&with, &sha, edit), "{with:?}");
            let changed = with.replace("fn main() {}", "fn main() { }");
            assert!(!applied_before(&changed, &sha, edit), "{changed:?}");
        }
        let comment_only =
            "fn main() {}\n// The global allocator `cargo optimize` measured faster\n";
        let sha = crate::store::sha256_hex(b"fn main() {}\n");
        let edit = |t: &str| alloc::with_item(t, a, false, &cfg);
        assert!(!applied_before(comment_only, &sha, edit));
        // The file's own allocator for the target: no item, whatever was recorded.
        let own = "#[cfg_attr(unix, global_allocator)]\nstatic A: std::alloc::System = std::alloc::System;\nfn main() {}\n";
        assert_eq!(edit(own), Err(alloc::NoItem::Own(1)));
    }
}
