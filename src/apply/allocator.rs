//! The alloc stage's winner written into the project: the allocator's crate among the
//! package's `[dependencies]` and its `#[global_allocator]` item at the end of the
//! binary's root file — the two edits `cargo::alloc` made to the private copy the run
//! built and measured, so a plain build of the edited project is that build. The root file
//! is edited only while it is the file the run built from (its SHA-256 in the row's
//! `alloc_root`); a root file that already has the item is left as it is.

use anyhow::Context as _;

use super::{Edited, ManifestEdit, Winner};
use crate::cargo::alloc::{self, Allocator};
use crate::report::{Report, Status};

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
    let recorded = report
        .stages
        .iter()
        .rev()
        .filter(|s| s.name == "alloc" && s.status == Status::Kept)
        .find(|s| s.settings.as_ref().and_then(|v| v.allocator.as_deref()) == Some(a.name))
        .and_then(|s| s.facts.alloc_root.clone())
        .ok_or_else(|| anyhow::anyhow!("the report's kept `alloc ({})` row does not say which root file it built from\n  fix: run `cargo optimize` again with this version, then apply", a.name))?;
    let root = project.workspace_root.join(&recorded.file);
    let bytes = std::fs::read(&root).with_context(|| format!("cannot read {}", root.display()))?;
    if String::from_utf8_lossy(&bytes).contains("#[global_allocator]") {
        notes.push(format!(
            "{} already declares a `#[global_allocator]`: left as it is",
            root.display()
        ));
        return Ok(out);
    }
    if crate::store::sha256_hex(&bytes) != recorded.sha256 {
        anyhow::bail!(
            "{} changed since run {} built `alloc ({})` from it: the item would go into a file that was not measured\n  fix: run `cargo optimize` again, then apply its winner",
            root.display(),
            report.run_id,
            a.name
        );
    }
    let edition_2015 = alloc::edition_2015(&manifest_text);
    out.push(ManifestEdit::text(
        root,
        format!("#[global_allocator] ({})", a.name),
        |text| Ok(Edited::unchanged(&alloc::with_item(text, a, edition_2015))),
        notes,
    )?);
    notes.push(format!(
        "the program now allocates through {} (crate `{}` from crates.io): the next build downloads and compiles it (it builds C code, so a C compiler is needed wherever you build)",
        a.name, a.krate
    ));
    Ok(out)
}
