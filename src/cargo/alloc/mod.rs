//! A global allocator swapped in by a real build: the allocators the alloc stage knows
//! ([`ALLOCATORS`]: a crate from crates.io and its `#[global_allocator]` type), the two
//! edits that swap one in — the dependency in the package's manifest ([`with_dependency`],
//! toml_edit, formatting kept) and the item at the end of the binary's root file
//! ([`with_item`], nothing before it moves, so no line number of the program changes) —,
//! what makes a binary unfit for one ([`refusal`]), and the private copy of the workspace
//! a build with [`BuildSettings::allocator`] compiles ([`source`], [`prepare`]).
//!
//! The root file is parsed ([`root`], syn), never searched for text: [`root_item`] is the
//! one decision, shared by the run's refusal, the copy's edit and `apply`, of whether the
//! binary has an allocator of its own for the target (`#[global_allocator]` directly or via
//! `cfg_attr`, at any depth of the file, its `cfg` evaluated against the target's `rustc
//! --print cfg`: refused, naming the line) and of the item to add otherwise (a name no item
//! of the file has; left out by `#[cfg(not(…))]` wherever an own allocator whose `cfg` is
//! false for this target is compiled). Comments and strings never count; an allocator a
//! macro's expansion declares is not seen; a root file syn cannot parse is refused with
//! its line. Other files of the package's `src/` are parsed too (one that does not parse is
//! passed over). The copy's manifests get every `path` that leads outside the workspace
//! made absolute ([`outside_paths`]): the copy holds only the workspace.
//!
//! The copy: `target/optimize/alloc/<allocator>/` holds the workspace's files (not `.git`,
//! not a cargo target dir: a folder with `CACHEDIR.TAG`), kept in step with the user's on
//! every build (a file copied when its size or time differs, with the source's time, so
//! cargo's freshness holds; files gone from the workspace removed), the two edits applied,
//! and its own Cargo.lock: the user's, to which `cargo metadata` adds the allocator's
//! packages (without `--locked`: the copy's lock must change; `--offline` kept). The
//! layout relative to the workspace root is the user's, so cargo's `-C metadata` (hashed
//! from paths relative to the workspace root) and the binary's panic locations are what a
//! plain build of the edited project gives. Nothing of the user's is written: the files the
//! stage edits are never copied as links (`util::mirror`'s `own`) but made anew in the copy
//! (`util::nofollow::replace`: unlink, then create new, never through a link), a link an
//! older copy holds there included; a link to a file outside the workspace is copied as
//! that file; a named pipe is recreated, never opened. A copy that fails (a full disk) is
//! an error naming the file and its copy, which the stage makes a skipped row.

use std::borrow::Cow;
use std::path::{Path, PathBuf};

use super::{child, BuildSettings, CargoError, Project};

pub(crate) mod root;

/// An allocator the alloc stage can swap in.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Allocator {
    /// The name in `[stages] alloc` and in the row (`alloc (mimalloc)`).
    pub name: &'static str,
    /// The crate on crates.io, its version requirement and its allocator type.
    pub krate: &'static str,
    pub version: &'static str,
    pub ty: &'static str,
    /// Why a target cannot have it (`None`: every target the stage runs on).
    pub unsupported: fn(&str) -> Option<&'static str>,
    /// The file names of the system's shared build of it, which the loader can preload
    /// into a program unchanged ([`preloadable`]; Debian's `libmimalloc2.0`, `libjemalloc2`).
    pub shared: &'static [&'static str],
}

/// The allocators `[stages] alloc` may name, in the default order.
pub(crate) const ALLOCATORS: [Allocator; 2] = [
    Allocator {
        name: "mimalloc",
        krate: "mimalloc",
        version: "0.1",
        ty: "mimalloc::MiMalloc",
        unsupported: |t| {
            t.contains("wasm")
                .then_some("mimalloc does not build for wasm")
        },
        shared: &crate::toolchain::platform::MIMALLOC_SHARED,
    },
    Allocator {
        name: "jemalloc",
        krate: "tikv-jemallocator",
        version: "0.6",
        ty: "tikv_jemallocator::Jemalloc",
        unsupported: |t| {
            (t.contains("msvc") || t.contains("wasm"))
                .then_some("jemalloc does not build for MSVC or wasm targets")
        },
        shared: &["libjemalloc.so.2", "libjemalloc.so"],
    },
];

/// The allocator named `name`.
pub(crate) fn named(name: &str) -> Option<&'static Allocator> {
    ALLOCATORS.iter().find(|a| a.name == name)
}

/// The manifest `text` with `a`'s crate among `[dependencies]` (kept as it is when the
/// package already depends on it), or what toml_edit could not read.
pub(crate) fn with_dependency(text: &str, a: &Allocator) -> Result<String, String> {
    let mut doc: toml_edit::DocumentMut = text.parse().map_err(|e| format!("{e}"))?;
    let deps = doc
        .entry("dependencies")
        .or_insert_with(toml_edit::table)
        .as_table_like_mut()
        .ok_or("`dependencies` is not a table")?;
    if deps.get(a.krate).is_none() {
        deps.insert(a.krate, toml_edit::value(a.version));
    }
    Ok(doc.to_string())
}

/// Why the stage adds no item to a root file ([`root_item`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum NoItem {
    /// A `#[global_allocator]` of its own compiled for the target, at this 1-based line.
    Own(usize),
    /// syn could not parse the file.
    Unparsed(root::Unparsed),
}

impl NoItem {
    /// The reason, naming `file` (as shown) and the line.
    pub(crate) fn describe(&self, file: &Path, a: &Allocator) -> String {
        match self {
            NoItem::Own(line) => format!("the binary declares its own `#[global_allocator]` at {}:{line}: keep it, or remove it to let the stage measure {}", file.display(), a.name),
            NoItem::Unparsed(e) => format!("the binary's root file does not parse ({}:{e}), so its own allocators cannot be known\n  fix: make it compile (`cargo check`)", file.display()),
        }
    }
}

/// The item the stage adds to a root file: its static's name, and the condition of the
/// file's own allocators, none compiled for the target, under which it is left out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RootItem {
    pub name: String,
    pub unless: Option<String>,
}

/// What the stage does with the binary's root file `text` for a target whose `rustc
/// --print cfg` lines are `cfg` (`root`: parsed by syn): refuse it (an allocator of its own
/// compiled for the target; a file that does not parse), or add an item named so that it
/// collides with no item of the file, left out wherever one of the file's own allocators
/// is compiled. The one decision the run (the refusal, the copy's edit) and `apply` share.
pub(crate) fn root_item(text: &str, cfg: &[String]) -> Result<RootItem, NoItem> {
    let scan = root::scan(text, cfg).map_err(NoItem::Unparsed)?;
    let own = scan.allocators;
    if let Some(d) = own.iter().find(|d| d.active) {
        return Err(NoItem::Own(d.line));
    }
    let whens: Vec<&str> = own.iter().filter_map(|d| d.when.as_deref()).collect();
    Ok(RootItem {
        name: scan.free_name,
        unless: match whens.as_slice() {
            [] => None,
            [one] => Some(one.to_string()),
            many => Some(format!("any({})", many.join(", "))),
        },
    })
}

/// The root file `text` with `#[global_allocator]` of `a` appended (in the file's own line
/// endings; `extern crate` first for edition 2015) as [`root_item`] decides it, nothing
/// before it moved (no line number of the program changes), or why not.
pub(crate) fn with_item(
    text: &str,
    a: &Allocator,
    edition_2015: bool,
    cfg: &[String],
) -> Result<String, NoItem> {
    let item = root_item(text, cfg)?;
    let eol = if text.contains("\r\n") { "\r\n" } else { "\n" };
    let mut out = text.to_string();
    if !out.is_empty() && !out.ends_with('\n') {
        out.push_str(eol);
    }
    out.push_str(eol);
    if edition_2015 {
        out.push_str(&format!("extern crate {};{eol}", a.krate.replace('-', "_")));
    }
    out.push_str(&format!(
        "// The global allocator `cargo optimize` measured faster for this program.{eol}"
    ));
    if let Some(when) = &item.unless {
        out.push_str(&format!(
            "// Left out where this file's own allocator is compiled.{eol}#[cfg(not({when}))]{eol}"
        ));
    }
    out.push_str(&format!(
        "#[global_allocator]{eol}static {name}: {ty} = {ty};{eol}",
        name = item.name,
        ty = a.ty
    ));
    Ok(out)
}

/// `rustc --print cfg` lines for `target` (`None`: the host), asked once per target; none
/// when rustc does not answer.
pub(crate) fn target_cfg(target: Option<&str>) -> Vec<String> {
    type Asked = std::collections::BTreeMap<Option<String>, Vec<String>>;
    static ASKED: std::sync::Mutex<Asked> = std::sync::Mutex::new(Asked::new());
    let key = target.map(str::to_string);
    if let Some(lines) = ASKED.lock().unwrap_or_else(|e| e.into_inner()).get(&key) {
        return lines.clone();
    }
    let mut args = vec!["--print", "cfg"];
    args.extend(target.map(|t| ["--target", t]).into_iter().flatten());
    let lines: Vec<String> = crate::process::tool_stdout(crate::toolchain::rustc_program(), args)
        .unwrap_or_default()
        .lines()
        .map(str::to_string)
        .collect();
    let mut asked = ASKED.lock().unwrap_or_else(|e| e.into_inner());
    asked.insert(key, lines.clone());
    lines
}

/// Whether the manifest `text` leaves the package on edition 2015 (no `edition`, or 2015).
pub(crate) fn edition_2015(text: &str) -> bool {
    let Ok(doc) = text.parse::<toml_edit::DocumentMut>() else {
        return false;
    };
    match doc.get("package").and_then(|p| p.get("edition")) {
        None => true,
        Some(e) => e.as_str() == Some("2015"),
    }
}

/// Why `project`'s binary cannot get `a` for `target`, with the fix: a harness, a root file
/// outside the workspace, `#![no_std]`, a `#[global_allocator]` of its own (file:line), a
/// target the crate does not build for, no C compiler (both crates compile C).
pub(crate) fn refusal(project: &Project, a: &Allocator, target: &str) -> Option<String> {
    if project.harness.is_some() {
        return Some(
            "the workloads run a bench or test harness, whose allocator is not the program's"
                .into(),
        );
    }
    let Some(root) = project.bin_root.as_deref() else {
        return Some("cargo names no root file for the binary".into());
    };
    if !root.starts_with(&project.workspace_root) {
        return Some(format!(
            "the binary's root file {} lies outside the workspace, which the private copy holds",
            root.display()
        ));
    }
    let shown = |f: &Path| {
        f.strip_prefix(&project.workspace_root)
            .unwrap_or(f)
            .to_path_buf()
    };
    let text = read_text(root).unwrap_or_default();
    let scan = match root::scan(&text, &[]) {
        Ok(scan) => scan,
        Err(e) => return Some(NoItem::Unparsed(e).describe(&shown(root), a)),
    };
    if let Some(line) = scan.no_std {
        return Some(format!(
            "the binary is `#![no_std]` ({}:{line}): it has no global allocator to swap",
            root.display()
        ));
    }
    let cfg = target_cfg(Some(target));
    if cfg.is_empty() {
        return Some(format!("`rustc --print cfg --target {target}` did not answer: which of the binary's own allocators are compiled for it cannot be known"));
    }
    if let Err(no) = root_item(&text, &cfg) {
        return Some(no.describe(&shown(root), a));
    }
    if let Some((f, line)) = own_allocator(project, root, &cfg) {
        return Some(NoItem::Own(line).describe(&shown(&f), a));
    }
    if let Some(why) = (a.unsupported)(target) {
        return Some(format!("{why} (target {target})"));
    }
    if crate::toolchain::platform::c_compiler(target).is_none() {
        return Some(format!("{} compiles C code and no C compiler was found for {target} (`cc`, or CC / CC_{})\n  fix: install one (Debian/Ubuntu: `apt install gcc`; Fedora: `dnf install gcc`; macOS: `xcode-select --install`), or set CC", a.krate, target.replace('-', "_")));
    }
    None
}

/// The system's shared build of `a` that a program built for `target` can have preloaded
/// (`sys::PRELOAD_VAR`) as it is, to preview what `a` does for it without a build: on a
/// glibc Linux host (not `crt-static`: `rustflags`), the first of `a.shared` in the
/// loader's usual folders for the target's architecture, an ELF file of `binary`'s class
/// and machine (the loader ignores another's, saying so on stderr: the preview would time
/// glibc's `malloc` against itself). `None` elsewhere: the stage builds the candidate, as
/// it does without the preview.
pub(crate) fn preloadable(
    a: &Allocator,
    (target, host): (&str, &str),
    rustflags: &[String],
    binary: &Path,
) -> Option<PathBuf> {
    crate::sys::PRELOAD_VAR?;
    let static_crt = rustflags.iter().any(|f| f.contains("crt-static"));
    if target != host || !target.ends_with("-linux-gnu") || static_crt {
        return None;
    }
    crate::toolchain::platform::shared_library(a.shared, target, binary)
}

/// A `#[global_allocator]` compiled for a target whose cfg lines are `cfg`, in a file of
/// the package's `src/` other than the binary's root (which [`root_item`] decides): the
/// file and line. A file syn cannot parse is passed over (rustc refuses it if the crate
/// has it); at most 5 000 files looked at.
fn own_allocator(project: &Project, root: &Path, cfg: &[String]) -> Option<(PathBuf, usize)> {
    let mut files = Vec::new();
    let mut dirs = vec![project.package_dir.join("src")];
    while let Some(dir) = dirs.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in entries.flatten().take(5_000) {
            let p = e.path();
            match e.file_type() {
                Ok(t) if t.is_dir() => dirs.push(p),
                Ok(t) if t.is_file() && p.extension().is_some_and(|x| x == "rs") => files.push(p),
                _ => {}
            }
        }
        if files.len() > 5_000 {
            break;
        }
    }
    files.into_iter().filter(|f| f != root).find_map(|f| {
        let scan = root::scan(&read_text(&f).ok()?, cfg).ok()?;
        let line = (scan.allocators.into_iter()).find(|d| d.active)?.line;
        Some((f, line))
    })
}

/// The folder of `name`'s private copy of the workspace.
fn copy_dir(project: &Project, name: &str) -> PathBuf {
    let alloc = crate::stages::label_of(crate::stages::Changes::Allocator);
    project.target_dir.join("optimize").join(alloc).join(name)
}

/// The project a build of `settings` compiles: `project` itself, or with an allocator its
/// private copy (the same layout under [`copy_dir`]; see [`prepare`]).
pub(crate) fn source<'p>(project: &'p Project, settings: &BuildSettings) -> Cow<'p, Project> {
    let Some(name) = &settings.allocator else {
        return Cow::Borrowed(project);
    };
    let base = copy_dir(project, name);
    let moved = |p: &Path| match p.strip_prefix(&project.workspace_root) {
        Ok(rel) => base.join(rel),
        Err(_) => p.to_path_buf(),
    };
    let mut p = project.clone();
    p.manifest_path = moved(&project.manifest_path);
    p.package_dir = moved(&project.package_dir);
    p.bin_root = project.bin_root.as_deref().map(moved);
    p.workspace_root = base;
    Cow::Owned(p)
}

/// Bring the private copy of a build with an allocator up to date (see the module doc);
/// nothing without one. An error says what failed and how to fix it (the registry not
/// reachable: `cargo metadata`'s words).
pub(crate) fn prepare(project: &Project, settings: &BuildSettings) -> Result<(), CargoError> {
    let Some(name) = &settings.allocator else {
        return Ok(());
    };
    let a = named(name).ok_or_else(|| CargoError::Alloc(format!("unknown allocator `{name}`")))?;
    let copy = source(project, settings);
    copy_workspace(project, &copy, a, settings.target.as_deref())?;
    lock_copy(project, &copy)
}

/// The workspace mirrored into `copy` (see the module doc) and the two edits applied. An
/// error names the file and what failed: a partial file is never left (`util::mirror`).
fn copy_workspace(
    project: &Project,
    copy: &Project,
    a: &Allocator,
    target: Option<&str>,
) -> Result<(), CargoError> {
    let name = a.name;
    let io = |what: &str, e: std::io::Error| {
        let fix = match e.to_string().contains("\n  fix: ") {
            true => String::new(),
            false => format!(
                "\n  fix: check the free space and permissions of {}",
                copy.workspace_root.display()
            ),
        };
        CargoError::Alloc(format!(
            "cannot make the private copy of the workspace for {name} ({what}): {e}{fix}"
        ))
    };
    let keep: Vec<PathBuf> = [
        &project.manifest_path,
        &project.workspace_root.join("Cargo.toml"),
    ]
    .into_iter()
    .cloned()
    .chain(project.bin_root.clone())
    .chain([project.workspace_root.join("Cargo.lock")])
    .collect();
    crate::util::mirror::mirror(
        &project.workspace_root,
        &copy.workspace_root,
        &project.target_dir,
        &keep,
    )
    .map_err(|e| io("copying", e))?;
    edit_copy(project, copy, a, target).map_err(|e| io("editing", e))
}

/// The copy's manifests and root file: the user's with the edits (the copy's root manifest
/// gets an empty `[workspace]` when the user's has none, so cargo does not look above the
/// copy for one); written only when they differ, so their times change only with them. The
/// user's are read through their links (a named pipe refused, never waited on); the copy's
/// are regular files made anew, never written through a link ([`write_if_changed`]).
fn edit_copy(
    project: &Project,
    copy: &Project,
    a: &Allocator,
    target: Option<&str>,
) -> std::io::Result<()> {
    let bad =
        |e: String| std::io::Error::other(format!("{}: {e}", project.manifest_path.display()));
    let root_manifest = project.workspace_root.join("Cargo.toml");
    let manifest = read_text(&project.manifest_path)?;
    let mut edited = with_dependency(&manifest, a).map_err(bad)?;
    let mut root_text = read_text(&root_manifest)?;
    if root_manifest == project.manifest_path {
        root_text = edited.clone();
    }
    if !root_text
        .parse::<toml_edit::DocumentMut>()
        .is_ok_and(|d| d.contains_key("workspace"))
    {
        root_text.push_str("\n[workspace]\n");
        if root_manifest == project.manifest_path {
            edited = root_text.clone();
        }
    }
    let ws = &project.workspace_root;
    let edited = outside_paths(&edited, &project.package_dir, ws).map_err(bad)?;
    let root_text = outside_paths(&root_text, ws, ws).map_err(bad)?;
    write_if_changed(&copy.manifest_path, edited.as_bytes())?;
    write_if_changed(
        &copy.workspace_root.join("Cargo.toml"),
        root_text.as_bytes(),
    )?;
    if let (Some(root), Some(copied)) = (&project.bin_root, &copy.bin_root) {
        let text = read_text(root)?;
        let cfg = target_cfg(target);
        let with = with_item(&text, a, edition_2015(&manifest), &cfg)
            .map_err(|no| std::io::Error::other(no.describe(root, a)))?;
        write_if_changed(copied, with.as_bytes())?;
    }
    Ok(())
}

/// The manifest `text` (in the folder `dir`) with every `path = "…"` that leads outside the
/// workspace `ws` made absolute (path dependencies, `[patch]`, `[lib]`/`[[bin]]` paths): in
/// the copy, which holds only the workspace, the relative path would lead nowhere. Cargo
/// resolves such a path to the same absolute folder for the user's build, so the package
/// built is the same one. Paths inside the workspace are left relative (the copy has them).
fn outside_paths(text: &str, dir: &Path, ws: &Path) -> Result<String, String> {
    struct Abs<'a>(&'a Path, &'a Path);
    impl toml_edit::visit_mut::VisitMut for Abs<'_> {
        fn visit_table_like_kv_mut(
            &mut self,
            key: toml_edit::KeyMut<'_>,
            node: &mut toml_edit::Item,
        ) {
            if key.get() == "path" {
                if let Some(p) = node.as_str() {
                    let full = resolved(&self.0.join(p));
                    let ws = resolved(self.1);
                    if !full.starts_with(&ws) {
                        if let Some(v) = node.as_value_mut() {
                            let decor = v.decor().clone();
                            *v = full.display().to_string().into();
                            *v.decor_mut() = decor;
                        }
                    }
                }
            }
            toml_edit::visit_mut::visit_table_like_kv_mut(self, key, node);
        }
    }
    let mut doc: toml_edit::DocumentMut = text.parse().map_err(|e| format!("{e}"))?;
    toml_edit::visit_mut::VisitMut::visit_document_mut(&mut Abs(dir, ws), &mut doc);
    Ok(doc.to_string())
}

/// `p` with its links resolved when it exists, else with `.` and `..` folded away.
fn resolved(p: &Path) -> PathBuf {
    if let Ok(real) = std::fs::canonicalize(p) {
        return real;
    }
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            std::path::Component::CurDir => {}
            std::path::Component::ParentDir => {
                out.pop();
            }
            c => out.push(c),
        }
    }
    out
}

/// A user's file as text, read through its links; only a regular file is read.
fn read_text(path: &Path) -> std::io::Result<String> {
    crate::util::nofollow::read_to_string(path)
}

/// `bytes` at `path` in the copy, unless a regular file there holds them already: made
/// anew (`util::nofollow::replace`), so a link there (one an older copy took from the
/// user's tree) is replaced, never written through.
fn write_if_changed(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let regular = std::fs::symlink_metadata(path).is_ok_and(|m| m.is_file());
    if regular && crate::util::nofollow::read(path).is_ok_and(|b| b == bytes) {
        return Ok(());
    }
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    crate::util::nofollow::replace(path, bytes)
}

/// The copy's Cargo.lock: the user's with the allocator's packages added by `cargo
/// metadata` (once per change of the user's lock: the user's as last copied is kept beside
/// the copy), so every build of the copy, `--locked` included, finds it complete.
fn lock_copy(project: &Project, copy: &Project) -> Result<(), CargoError> {
    let user =
        crate::util::nofollow::read(&project.workspace_root.join("Cargo.lock")).unwrap_or_default();
    let seen = copy.workspace_root.with_extension("user-lock");
    let lock = copy.workspace_root.join("Cargo.lock");
    let regular = std::fs::symlink_metadata(&lock).is_ok_and(|m| m.is_file());
    if regular && std::fs::read(&seen).is_ok_and(|s| s == user) {
        return Ok(());
    }
    let failed = |e: std::io::Error| CargoError::Alloc(e.to_string());
    if user.is_empty() {
        let _ = std::fs::remove_file(&lock);
    } else {
        crate::util::nofollow::replace(&lock, &user).map_err(failed)?;
    }
    let f = super::flags::flags();
    let mut args = vec![
        "metadata".to_string(),
        "--format-version".into(),
        "1".into(),
        "--manifest-path".into(),
        copy.manifest_path.display().to_string(),
    ];
    if f.offline || f.frozen {
        args.push("--offline".into());
    }
    args.extend(f.config_args());
    let (outcome, said) = child::run_quiet(
        &args,
        "`cargo metadata` of the allocator's copy",
        "cargo resolves the allocator's crate from the registry: check that the registry answers here",
    )?;
    if !outcome.status.success() {
        let offline = f.offline || f.frozen;
        let first = (said.lines())
            .find(|l| l.starts_with("error"))
            .unwrap_or("cargo metadata failed");
        return Err(CargoError::Alloc(format!(
            "cargo could not add the allocator's crate to the copy's Cargo.lock ({})\n{}\n  fix: {}",
            first.trim_start_matches("error: "),
            crate::process::tail_lines(said.as_bytes(), 8).trim_end(),
            match offline {
                _ if said.contains("failed to read") || said.contains("failed to load manifest") => "a `path` in a manifest of the private copy leads to no package: the copy holds only the workspace, and a path outside it is made absolute in the package's and the workspace root's manifests only; declare that path dependency in one of those two (`[workspace.dependencies]` works), or move it into the workspace, or leave the stage out: `[stages] alloc = []`",
                true => "run once without --offline/--frozen so cargo downloads it (or `cargo fetch` in a project that depends on it), or leave the stage out: `[stages] alloc = []`",
                false => "check that crates.io (or your registry mirror) answers here, or leave the stage out: `[stages] alloc = []`",
            }
        )));
    }
    crate::util::nofollow::replace(&seen, &user).map_err(failed)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A binary package `p` whose workspace is `ws` (its root `src/main.rs`), and the
    /// settings of a mimalloc build of it.
    fn project_in(ws: &Path) -> (Project, BuildSettings) {
        let mut p = Project::for_tests("p", "0.1.0");
        p.workspace_root = ws.to_path_buf();
        p.package_dir = ws.to_path_buf();
        p.manifest_path = ws.join("Cargo.toml");
        p.bin_root = Some(ws.join("src/main.rs"));
        p.target_dir = ws.join("target");
        let mut settings = BuildSettings::plain("release");
        settings.allocator = Some("mimalloc".into());
        (p, settings)
    }

    #[test]
    fn an_allocator_is_preloadable_only_into_a_dynamically_linked_host_binary() {
        let a = named("mimalloc").unwrap();
        let bin = std::env::current_exe().unwrap();
        let cross = ("aarch64-unknown-linux-gnu", "x86_64-unknown-linux-gnu");
        assert_eq!(preloadable(a, cross, &[], &bin), None, "another target");
        let host = ("x86_64-unknown-linux-gnu", "x86_64-unknown-linux-gnu");
        let crt = ["-Ctarget-feature=+crt-static".to_string()];
        assert_eq!(preloadable(a, host, &crt, &bin), None, "a static C runtime");
        let musl = ("x86_64-unknown-linux-musl", "x86_64-unknown-linux-musl");
        assert_eq!(preloadable(a, musl, &[], &bin), None, "musl");
    }

    #[test]
    fn the_dependency_is_added_once_keeping_the_manifest_s_text() {
        let text =
            "[package]\nname = \"p\" # mine\nedition = \"2021\"\n\n[dependencies]\nregex = \"1\"\n";
        let a = named("mimalloc").unwrap();
        let out = with_dependency(text, a).unwrap();
        assert_eq!(
            out,
            "[package]\nname = \"p\" # mine\nedition = \"2021\"\n\n[dependencies]\nregex = \"1\"\nmimalloc = \"0.1\"\n"
        );
        assert_eq!(
            with_dependency(&out, a).unwrap(),
            out,
            "already there: kept"
        );
        let bare =
            with_dependency("[package]\nname = \"p\"\n", named("jemalloc").unwrap()).unwrap();
        assert!(
            bare.ends_with("[dependencies]\ntikv-jemallocator = \"0.6\"\n"),
            "{bare}"
        );
        assert!(with_dependency("[package\n", a).is_err());
    }

    #[test]
    fn the_item_is_appended_in_the_file_s_line_endings_moving_no_line() {
        let a = named("mimalloc").unwrap();
        let out = with_item("fn main() {}\r\n", a, false, &[]).unwrap();
        assert!(out.starts_with("fn main() {}\r\n\r\n"), "{out:?}");
        assert!(out.ends_with("#[global_allocator]\r\nstatic GLOBAL_ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;\r\n"), "{out:?}");
        assert!(!out.replace("\r\n", "").contains('\n'));
        let old = with_item(
            "static GLOBAL: u8 = 0;\nfn main() {}",
            named("jemalloc").unwrap(),
            true,
            &[],
        )
        .unwrap();
        assert!(
            old.contains("fn main() {}\n\nextern crate tikv_jemallocator;\n"),
            "{old}"
        );
        assert!(
            old.contains("static GLOBAL_ALLOCATOR: tikv_jemallocator::Jemalloc"),
            "{old}"
        );
    }

    #[test]
    fn edition_2015_is_the_manifest_without_an_edition() {
        assert!(edition_2015("[package]\nname = \"p\"\n"));
        assert!(edition_2015("[package]\nedition = \"2015\"\n"));
        assert!(!edition_2015("[package]\nedition = \"2021\"\n"));
        assert!(!edition_2015("[package]\nedition.workspace = true\n"));
    }

    #[test]
    fn a_binary_with_its_own_allocator_or_no_std_is_refused_naming_the_line() {
        let (dir, p, root) = package();
        let a = named("mimalloc").unwrap();
        std::fs::write(&root, "fn main() {}\n").unwrap();
        let host = "x86_64-unknown-linux-gnu";
        let plain = refusal(&p, a, host);
        assert!(plain.is_none() || plain.unwrap().contains("no C compiler"));
        std::fs::write(
            dir.path().join("src/alloc.rs"),
            "\n\n#[global_allocator]\nstatic A: X = X;\n",
        )
        .unwrap();
        let why = refusal(&p, a, host).unwrap();
        assert!(why.contains("src/alloc.rs:3"), "{why}");
        std::fs::write(&root, "#![no_std]\nfn main() {}\n").unwrap();
        assert!(refusal(&p, a, host).unwrap().contains("src/main.rs:1"));
        std::fs::write(&root, "fn main() {}\n").unwrap();
        std::fs::remove_file(dir.path().join("src/alloc.rs")).unwrap();
        let msvc = refusal(&p, named("jemalloc").unwrap(), "x86_64-pc-windows-msvc").unwrap();
        assert!(msvc.contains("MSVC"), "{msvc}");
    }

    /// `rustc --print cfg` of x86_64 Linux with glibc, and with musl: a CLI that declares its allocator for musl only.
    fn linux(env: &str) -> Vec<String> {
        [
            "unix",
            "target_os=\"linux\"",
            "target_arch=\"x86_64\"",
            "target_pointer_width=\"64\"",
        ]
        .iter()
        .map(|s| s.to_string())
        .chain([format!("target_env=\"{env}\"")])
        .collect()
    }

    /// A package in a temporary folder (kept while the returned guard lives) whose binary's
    /// root is `src/main.rs` (not written yet).
    fn package() -> (tempfile::TempDir, Project, std::path::PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let mut p = Project::for_tests("p", "0.1.0");
        p.workspace_root = dir.path().to_path_buf();
        p.package_dir = dir.path().to_path_buf();
        std::fs::create_dir_all(dir.path().join("src")).unwrap();
        let root = dir.path().join("src/main.rs");
        p.bin_root = Some(root.clone());
        (dir, p, root)
    }

    /// A package whose root file is `text` in a temporary folder, and the refusal of
    /// mimalloc for x86_64 Linux (the C compiler's absence aside).
    fn refused(text: &str) -> Option<String> {
        let (_dir, p, root) = package();
        std::fs::write(&root, text).unwrap();
        let why = refusal(&p, named("mimalloc").unwrap(), "x86_64-unknown-linux-gnu");
        why.filter(|w| !w.contains("no C compiler"))
    }

    #[test]
    fn a_comment_mentioning_the_attribute_is_no_allocator_and_the_item_is_added() {
        let text = "// Uses the system allocator: no #[global_allocator] here.\n/*\n#[global_allocator]\n*/\nfn main() {}\n";
        assert_eq!(refused(text), None);
        let with = with_item(text, named("mimalloc").unwrap(), false, &linux("gnu")).unwrap();
        assert!(with.starts_with(text), "{with}");
        assert!(with.ends_with("#[global_allocator]\nstatic GLOBAL_ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;\n"), "{with}");
    }

    #[test]
    fn an_allocator_through_cfg_attr_nested_or_not_is_refused_naming_its_line() {
        let text = "fn main() {}\n\n#[cfg_attr(all(), global_allocator)]\nstatic A: std::alloc::System = std::alloc::System;\n";
        let why = refused(text).expect("refused");
        assert!(why.contains("src/main.rs:3"), "{why}");
        let nested = "use std::alloc::System;\n#[cfg_attr(unix, cfg_attr(target_os = \"linux\", global_allocator))]\nstatic A: System = System;\nfn main() {}\n";
        assert_eq!(root_item(nested, &linux("gnu")), Err(NoItem::Own(2)));
        let off = nested.replace("unix", "windows");
        let item = root_item(&off, &linux("gnu")).unwrap();
        assert_eq!(
            item.unless.as_deref().map(|u| u.replace(' ', "")),
            Some("all(windows,target_os=\"linux\")".into())
        );
    }

    #[test]
    fn a_raw_string_holding_the_attribute_is_no_allocator() {
        let text = "const HELP: &str = r#\"\n#[global_allocator]\nstatic A: X = X;\n\"#;\nfn main() { println!(\"{HELP}\"); }\n";
        assert_eq!(refused(text), None);
        assert!(root_item(text, &linux("gnu")).is_ok());
    }

    #[test]
    fn the_item_s_name_collides_with_no_item_of_the_file() {
        let text = "static GLOBAL_ALLOCATOR: u8 = 0;\nuse std::fmt as GLOBAL_ALLOCATOR_2;\nfn GLOBAL_ALLOCATOR_3() {}\nfn main() {}\n";
        let item = root_item(text, &linux("gnu")).unwrap();
        assert_eq!(item.name, "GLOBAL_ALLOCATOR_4");
        let with = with_item(text, named("jemalloc").unwrap(), false, &linux("gnu")).unwrap();
        assert!(
            with.contains("static GLOBAL_ALLOCATOR_4: tikv_jemallocator::Jemalloc"),
            "{with}"
        );
        let plain = root_item("static GLOBAL: u8 = 0;\nfn main() {}\n", &[]).unwrap();
        assert_eq!(plain.name, "GLOBAL_ALLOCATOR");
    }

    /// A binary that declares jemalloc for 64-bit musl only: on glibc it has none, so
    /// the stage measures mimalloc there, and the item is left out where the binary's is
    /// compiled (a musl build of the applied program has one allocator).
    #[test]
    fn an_allocator_only_for_musl_is_not_refused_on_glibc_and_the_item_yields_to_it() {
        let text = "// ripgrep, main.rs\n#[cfg(all(target_env = \"musl\", target_pointer_width = \"64\"))]\n#[global_allocator]\nstatic ALLOC: jemallocator::Jemalloc = jemallocator::Jemalloc;\n\nfn main() {}\n";
        assert_eq!(root_item(text, &linux("musl")), Err(NoItem::Own(3)));
        let item = root_item(text, &linux("gnu")).unwrap();
        assert_eq!(item.name, "GLOBAL_ALLOCATOR");
        let unless = item.unless.unwrap().replace(' ', "");
        assert_eq!(
            unless,
            "all(target_env=\"musl\",target_pointer_width=\"64\")"
        );
        let with = with_item(text, named("mimalloc").unwrap(), false, &linux("gnu")).unwrap();
        assert!(
            with.ends_with("fn main() {}\n\n// The global allocator `cargo optimize` measured faster for this program.\n// Left out where this file's own allocator is compiled.\n#[cfg(not(all(target_env = \"musl\", target_pointer_width = \"64\")))]\n#[global_allocator]\nstatic GLOBAL_ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;\n"),
            "{with}"
        );
        // The edited file, re-read for musl, has exactly the binary's allocator; for glibc ours.
        let ours = |cfg: &[String]| {
            (root::scan(&with, cfg).unwrap().allocators.iter())
                .filter(|d| d.active)
                .map(|d| d.line)
                .collect::<Vec<_>>()
        };
        assert_eq!(ours(&linux("musl")), vec![3]);
        assert_eq!(ours(&linux("gnu")).len(), 1);
        assert_ne!(ours(&linux("gnu")), vec![3]);
    }

    #[test]
    fn an_allocator_in_a_nested_module_is_refused_unless_its_cfg_is_false() {
        let text = "mod a {\n    mod b {\n        #[global_allocator]\n        static A: std::alloc::System = std::alloc::System;\n    }\n}\nfn main() {}\n";
        assert_eq!(root_item(text, &linux("gnu")), Err(NoItem::Own(3)));
        let why = refused(text).expect("refused");
        assert!(why.contains("src/main.rs:3"), "{why}");
        let gated = text.replace("mod a {", "#[cfg(windows)]\nmod a {");
        assert!(root_item(&gated, &linux("gnu")).is_ok());
        let in_fn = "fn main() {\n    #[global_allocator]\n    static A: std::alloc::System = std::alloc::System;\n}\n";
        assert_eq!(root_item(in_fn, &linux("gnu")), Err(NoItem::Own(2)));
    }

    #[test]
    fn a_root_file_that_does_not_parse_is_refused_naming_syn_s_line() {
        let why = refused("fn main() {}\nfn broken( {\n").expect("refused");
        assert!(why.contains("does not parse (src/main.rs:"), "{why}");
        let Err(NoItem::Unparsed(e)) = root_item("fn main() {}\n\nfn broken( {\n", &[]) else {
            panic!("parsed");
        };
        assert!(e.line >= 3, "{e}");
    }

    /// Unix only: the expected TOML spells the absolute path as a basic string.
    #[cfg(unix)]
    #[test]
    fn a_path_outside_the_workspace_is_made_absolute_in_the_copy_s_manifest() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().join("ws");
        let text = "[package]\nname = \"p\"\n\n[dependencies]\nhelper = { path = \"../helper\" } # mine\ninner = { path = \"crates/inner\" }\n\n[patch.crates-io]\nfoo = { path = \"../../foo\" }\n";
        let out = outside_paths(text, &ws, &ws).unwrap();
        let helper = dir.path().join("helper").display().to_string();
        assert!(
            out.contains(&format!("helper = {{ path = \"{helper}\" }} # mine")),
            "{out}"
        );
        assert!(out.contains("inner = { path = \"crates/inner\" }"), "{out}");
        assert!(!out.contains("../../foo"), "{out}");

        // The copy of a package depending on `../helper` gets the absolute path.
        std::fs::create_dir_all(ws.join("src")).unwrap();
        std::fs::create_dir_all(dir.path().join("helper")).unwrap();
        let manifest = "[package]\nname = \"p\"\nedition = \"2021\"\n\n[dependencies]\nhelper = { path = \"../helper\" }\n";
        std::fs::write(ws.join("Cargo.toml"), manifest).unwrap();
        std::fs::write(ws.join("src/main.rs"), "fn main() {}\n").unwrap();
        let (p, settings) = project_in(&ws);
        let copy = source(&p, &settings).into_owned();
        copy_workspace(&p, &copy, named("mimalloc").unwrap(), None).unwrap();
        let copied = std::fs::read_to_string(&copy.manifest_path).unwrap();
        let real = std::fs::canonicalize(dir.path().join("helper")).unwrap();
        assert!(
            copied.contains(&format!("helper = {{ path = \"{}\" }}", real.display())),
            "{copied}"
        );
        assert!(std::fs::read_to_string(&p.manifest_path).unwrap() == manifest);
    }

    /// A workspace whose `Cargo.toml` and `src/main.rs` are symlinks to files outside it:
    /// the copy gets regular files with the edits (the item once, however many runs), and
    /// the user's files keep their bytes and modification times.
    #[cfg(unix)]
    #[test]
    fn edits_in_the_copy_never_write_through_the_user_s_links() {
        let dir = tempfile::tempdir().unwrap();
        let (ws, outside) = (dir.path().join("ws"), dir.path().join("outside"));
        std::fs::create_dir_all(ws.join("src")).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        let manifest = "[package]\nname = \"p\"\nedition = \"2021\"\n";
        std::fs::write(outside.join("Cargo.toml"), manifest).unwrap();
        std::fs::write(outside.join("main.rs"), "fn main() {}\n").unwrap();
        crate::sys::symlink(outside.join("Cargo.toml"), ws.join("Cargo.toml")).unwrap();
        crate::sys::symlink("../../outside/main.rs", ws.join("src/main.rs")).unwrap();
        let stamp = |f: &str| {
            let p = outside.join(f);
            (
                std::fs::read(&p).unwrap(),
                std::fs::metadata(&p).unwrap().modified().unwrap(),
            )
        };
        let before = (stamp("Cargo.toml"), stamp("main.rs"));
        let (p, settings) = project_in(&ws);
        let copy = source(&p, &settings).into_owned();
        let a = named("mimalloc").unwrap();
        // A copy an older version made: the links recreated as they were.
        std::fs::create_dir_all(copy.workspace_root.join("src")).unwrap();
        crate::sys::symlink(outside.join("main.rs"), copy.bin_root.as_ref().unwrap()).unwrap();
        for _ in 0..3 {
            copy_workspace(&p, &copy, a, None).unwrap();
        }
        assert_eq!((stamp("Cargo.toml"), stamp("main.rs")), before);
        for f in [&copy.manifest_path, copy.bin_root.as_ref().unwrap()] {
            assert!(
                std::fs::symlink_metadata(f).unwrap().is_file(),
                "{}",
                f.display()
            );
        }
        let main = std::fs::read_to_string(copy.bin_root.as_ref().unwrap()).unwrap();
        assert_eq!(main.matches("#[global_allocator]").count(), 1, "{main}");
        let toml = std::fs::read_to_string(&copy.manifest_path).unwrap();
        assert!(
            toml.contains("mimalloc = \"0.1\"") && toml.contains("[workspace]"),
            "{toml}"
        );
    }

    /// A write that fails while the workspace is copied (a full disk, through the copy's
    /// writer seam) is an error naming the file and its copy, with the fix; no partial file
    /// is left. The alloc stage makes it a skipped row with these words.
    #[test]
    fn a_full_disk_while_copying_names_the_file_and_leaves_no_partial_file() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().join("ws");
        std::fs::create_dir_all(ws.join("src")).unwrap();
        std::fs::write(ws.join("Cargo.toml"), "[package]\nname = \"p\"\n").unwrap();
        std::fs::write(ws.join("src/main.rs"), "fn main() {}\n").unwrap();
        std::fs::write(ws.join("src/table.bin"), vec![9u8; 512 << 10]).unwrap();
        let (p, settings) = project_in(&ws);
        let copy = source(&p, &settings).into_owned();
        crate::util::nofollow::fail_writes_after(Some(64 << 10));
        let e = copy_workspace(&p, &copy, named("mimalloc").unwrap(), None).unwrap_err();
        crate::util::nofollow::fail_writes_after(None);
        let said = e.to_string();
        let partial = copy.workspace_root.join("src/table.bin");
        assert!(
            said.contains("private copy of the workspace for mimalloc (copying)"),
            "{said}"
        );
        assert!(
            said.contains(&ws.join("src/table.bin").display().to_string()),
            "{said}"
        );
        assert!(said.contains(&partial.display().to_string()), "{said}");
        assert_eq!(said.matches("fix:").count(), 1, "{said}");
        assert!(!partial.exists());
    }
}
