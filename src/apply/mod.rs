//! `cargo optimize apply [RUN]`: write a run's winning settings into the project so a plain
//! cargo build reproduces them.
//!
//! - Profile overrides go into the Cargo.toml where cargo reads profiles (the workspace
//!   root's) as a named profile, `[profile.optimized]` by default, inheriting the profile
//!   the run was based on. Edited with toml_edit: comments and formatting survive.
//! - `-Ctarget-cpu` goes into `.cargo/config.toml` only with `--cpu`: a global
//!   `target-cpu=native` builds binaries that crash on other machines (cargo-wizard #17).
//! - A PGO profile is copied to `pgo/<bin>.profdata` in the package, and the exact command
//!   that builds with it is printed (cargo has no profile key for `-Cprofile-use`).
//!
//! Every change is shown as a unified diff first; `--dry-run` stops there. Files are written
//! atomically (temp + rename) after a backup (`<file>.bak`; not `.orig`, a name
//! `cargo package` reserves). Applying the same run again changes nothing and says so.
//!
//! Must not: build, run or measure anything (it reads report.json).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::Context as _;
use toml_edit::{DocumentMut, Item, Table, Value};

use crate::cargo::Workspace;
use crate::cli::{ApplyArgs, GlobalArgs};
use crate::report::{self, Report, Status};

/// Profile keys the profile stage can set: `apply` owns them inside its named profile and
/// removes those a newer run no longer chooses.
const MANAGED_KEYS: &[&str] = crate::spec::PROFILE_KEYS;

/// Profiles cargo defines itself: they take keys directly, never `inherits`.
const BUILTIN_PROFILES: &[&str] = &["dev", "release", "test", "bench"];

/// Names cargo reserves and rejects as custom profiles.
const RESERVED_PROFILES: &[&str] = &["doc", "check", "build", "debug", "default"];

const PGO_WARN: &str = "-Cllvm-args=-pgo-warn-missing-function";

/// What a run's report says to ship (the parts `apply` needs).
#[derive(Debug, Clone)]
pub struct Winner {
    pub crate_name: String,
    pub bin: String,
    pub host: String,
    pub stage: String,
    pub variant: Option<String>,
    pub binary: String,
    /// The profile the run was based on (`--profile`).
    pub base_profile: String,
    /// Key → TOML literal.
    pub overrides: BTreeMap<String, String>,
    /// The flags the stages added (not the user's).
    pub stage_rustflags: Vec<String>,
    pub user_rustflags: Vec<String>,
    pub target: Option<String>,
    pub features: crate::cargo::Features,
    pub speedup: Option<f64>,
}

impl Winner {
    /// What the report says to ship.
    pub fn from_report(report: &Report) -> anyhow::Result<Winner> {
        let fin = report
            .final_
            .as_ref()
            .ok_or_else(|| anyhow::anyhow!("the report has no `final` choice"))?;
        // Newer reports carry the settings in `final`; older ones only in the stage row.
        let settings = fin
            .settings
            .as_ref()
            .or_else(|| {
                report
                    .stages
                    .iter()
                    .rev()
                    .find(|s| s.name == fin.stage && s.status == Status::Kept)?
                    .settings
                    .as_ref()
            })
            .ok_or_else(|| anyhow::anyhow!("the report has no settings for `{}`", fin.stage))?;
        let (stage_rustflags, user_rustflags) =
            if settings.stage_rustflags.is_empty() && settings.user_rustflags.is_empty() {
                // Older reports: all flags in one list; keep the ones stages add.
                settings.rustflags.iter().cloned().partition(|f| {
                    f.starts_with("-Ctarget-cpu=")
                        || f.starts_with("-Cprofile-use=")
                        || f.as_str() == PGO_WARN
                })
            } else {
                (
                    settings.stage_rustflags.clone(),
                    settings.user_rustflags.clone(),
                )
            };
        Ok(Winner {
            crate_name: report.crate_name.clone(),
            bin: report.bin.clone(),
            host: report.toolchain.host.clone(),
            stage: fin.stage.clone(),
            variant: fin.variant.clone(),
            binary: fin.binary.clone(),
            base_profile: settings.profile.clone(),
            overrides: settings.profile_overrides.clone(),
            stage_rustflags,
            user_rustflags,
            target: settings.target.clone(),
            features: settings.features.clone(),
            speedup: fin.speedup_vs_baseline,
        })
    }

    pub fn target_cpu(&self) -> Option<String> {
        crate::cargo::target_cpu_of(&self.stage_rustflags)
    }

    pub fn profile_use(&self) -> Option<PathBuf> {
        self.stage_rustflags
            .iter()
            .rev()
            .find_map(|f| f.strip_prefix("-Cprofile-use="))
            .map(PathBuf::from)
    }

    /// Stage flags `apply` cannot write anywhere (nor fold into the printed command).
    fn other_flags(&self) -> Vec<String> {
        self.stage_rustflags
            .iter()
            .filter(|f| {
                !(f.starts_with("-Ctarget-cpu=")
                    || f.starts_with("-Cprofile-use=")
                    || f.as_str() == PGO_WARN)
            })
            .cloned()
            .collect()
    }
}

/// One file `apply` would write.
#[derive(Debug)]
struct Change {
    path: PathBuf,
    old: Option<Vec<u8>>,
    new: Vec<u8>,
    /// Shown as a diff (text) or as a copy (binary).
    text: bool,
    what: String,
}

impl Change {
    fn changes(&self) -> bool {
        self.old.as_deref() != Some(self.new.as_slice())
    }
}

/// `cargo optimize apply`.
pub fn run(g: &GlobalArgs, args: &ApplyArgs) -> anyhow::Result<i32> {
    validate_profile_name(&args.profile_name)?;
    let report_path = find_report(g, args.run.as_deref())?;
    let report = report::load(&report_path)?;
    let win =
        Winner::from_report(&report).with_context(|| format!("in {}", report_path.display()))?;
    eprintln!("applying run {} ({})", report.run_id, report_path.display());
    if win.stage == "baseline" {
        println!(
            "nothing to apply: no stage of this run was measurably faster than the baseline, so your current build is already the one to ship"
        );
        return Ok(0);
    }
    let ws = Workspace::load(&g.selection.cargo())?;
    let sel_package = g.selection.package.clone();
    let project = ws.project(
        &g.selection.cargo(),
        Some(sel_package.as_deref().unwrap_or(&win.crate_name)),
        Some(g.selection.bin.as_deref().unwrap_or(&win.bin)),
    )?;

    let mut changes = Vec::new();
    let mut notes = Vec::new();

    // 1. The named profile, where cargo reads profiles: the workspace root manifest.
    let manifest = project.workspace_root.join("Cargo.toml");
    let old =
        std::fs::read(&manifest).with_context(|| format!("cannot read {}", manifest.display()))?;
    let old_text = String::from_utf8(old.clone())
        .with_context(|| format!("{} is not UTF-8", manifest.display()))?;
    let new_text = edit_manifest(
        &old_text,
        &args.profile_name,
        &win.base_profile,
        &win.overrides,
    )
    .with_context(|| format!("cannot edit {}", manifest.display()))?;
    changes.push(Change {
        path: manifest.clone(),
        old: Some(old),
        new: new_text.into_bytes(),
        text: true,
        what: format!("[profile.{}]", args.profile_name),
    });

    // 2. target-cpu, only when asked.
    let cpu = win.target_cpu();
    match (&cpu, args.cpu) {
        (Some(cpu), true) => {
            let path = project.workspace_root.join(".cargo").join("config.toml");
            let old = std::fs::read(&path).ok();
            let old_text = old
                .as_deref()
                .map(|b| String::from_utf8_lossy(b).into_owned())
                .unwrap_or_default();
            let new_text = edit_config(&old_text, cpu)
                .with_context(|| format!("cannot edit {}", path.display()))?;
            changes.push(Change {
                path,
                old,
                new: new_text.into_bytes(),
                text: true,
                what: format!("-Ctarget-cpu={cpu}"),
            });
            notes.push(format!(
                "-Ctarget-cpu={cpu} now applies to every build of this workspace (all profiles): the binaries may crash with `illegal instruction` on CPUs that lack its features"
            ));
        }
        (Some(cpu), false) => notes.push(format!(
            "the winner was also built with -Ctarget-cpu={cpu}; not written, because binaries built for one CPU can crash on others. Pass --cpu to write it to .cargo/config.toml, or add it to RUSTFLAGS only where you build for this machine"
        )),
        (None, true) => notes.push(
            "--cpu: the winner does not pick a CPU; nothing to write to .cargo/config.toml".into(),
        ),
        (None, false) => {}
    }

    // 3. The PGO profile, at a stable path in the package.
    let mut pgo_dest = None;
    if let Some(src) = win.profile_use() {
        let dest = project
            .package_dir
            .join("pgo")
            .join(format!("{}.profdata", win.bin));
        let new = std::fs::read(&src).with_context(|| {
            format!(
                "cannot read the run's PGO profile {}\n  fix: rerun `cargo optimize` (target/optimize/cache was removed?)",
                src.display()
            )
        })?;
        changes.push(Change {
            old: std::fs::read(&dest).ok(),
            path: dest.clone(),
            new,
            text: false,
            what: "the PGO profile".into(),
        });
        pgo_dest = Some(dest);
    }
    if win.stage == "bolt" {
        notes.push(format!(
            "the winner was post-processed by BOLT, which no cargo setting reproduces: the settings written here are those of the build BOLT started from; the BOLT-optimized binary is {}",
            win.binary
        ));
    }
    let other = win.other_flags();
    if !other.is_empty() {
        notes.push(format!(
            "stage rustflags not written anywhere: {}",
            other.join(" ")
        ));
    }

    // Show.
    let mut any = false;
    for c in &changes {
        if !c.changes() {
            eprintln!("{}: {} already up to date", c.path.display(), c.what);
            continue;
        }
        any = true;
        if c.text {
            let old = String::from_utf8_lossy(c.old.as_deref().unwrap_or_default());
            let new = String::from_utf8_lossy(&c.new);
            let shown = c
                .path
                .strip_prefix(&project.workspace_root)
                .unwrap_or(&c.path);
            print!("{}", unified_diff(&old, &new, &shown.display().to_string()));
        } else {
            println!(
                "{} {} ({} bytes)",
                if c.old.is_some() { "replace" } else { "create" },
                c.path.display(),
                c.new.len()
            );
        }
    }

    if !any {
        println!("already applied: nothing to change");
    } else if args.dry_run {
        println!("dry run: nothing written");
    } else {
        for c in changes.iter().filter(|c| c.changes()) {
            let backup = write_atomic(&c.path, &c.new, c.text)?;
            match backup {
                Some(b) => eprintln!(
                    "wrote {} (previous version in {})",
                    c.path.display(),
                    b.display()
                ),
                None => eprintln!("wrote {}", c.path.display()),
            }
        }
    }
    if let (Some(cpu), true, false) = (&cpu, args.cpu, args.dry_run) {
        if let Some(why) = cpu_flag_not_in_effect(&project.workspace_root, &win.host, cpu) {
            notes.push(why);
        }
    }
    for n in &notes {
        eprintln!("note: {n}");
    }
    println!();
    print!(
        "{}",
        build_instructions(
            &win,
            &args.profile_name,
            &project.manifest_path,
            pgo_dest.as_deref(),
            cpu.is_some() && !args.cpu,
        )
    );
    Ok(0)
}

/// Cargo takes rustflags from one place only (RUSTFLAGS, else target tables, else
/// `[build]`): say so when the flag just written is not the one cargo will use here.
fn cpu_flag_not_in_effect(root: &Path, host: &str, cpu: &str) -> Option<String> {
    let cfg: Vec<String> = crate::process::tool_stdout(
        crate::toolchain::rustc_program(),
        ["--print", "cfg", "--target", host],
    )
    .unwrap_or_default()
    .lines()
    .map(str::to_string)
    .collect();
    let cargo_home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo")));
    let flags = crate::cargo::user_rustflags(
        &|k| std::env::var(k).ok(),
        root,
        cargo_home.as_deref(),
        host,
        &cfg,
    )
    .ok()?;
    let want = format!("-Ctarget-cpu={cpu}");
    (crate::cargo::target_cpu_of(&flags).as_deref() != Some(cpu)).then(|| {
        format!(
            "cargo will not use the {want} just written from {}: rustflags come from one place only (RUSTFLAGS or CARGO_ENCODED_RUSTFLAGS, else [target] tables, else [build]); the effective flags here are: {}",
            root.display(),
            if flags.is_empty() { "(none)".to_string() } else { flags.join(" ") }
        )
    })
}

fn validate_profile_name(name: &str) -> anyhow::Result<()> {
    let ok = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        && !RESERVED_PROFILES.contains(&name);
    if !ok {
        anyhow::bail!(
            "--profile-name `{name}` is not a usable cargo profile name\n  fix: use letters, digits, `-` and `_` (not one of {}), e.g. `optimized`",
            RESERVED_PROFILES.join(", ")
        );
    }
    Ok(())
}

/// RUN: a report.json, a run folder, a run id under target/optimize/runs, or (default) the
/// latest run.
fn find_report(g: &GlobalArgs, run: Option<&str>) -> anyhow::Result<PathBuf> {
    if let Some(r) = run.filter(|r| Path::new(r).exists()) {
        return Ok(report::locate(Path::new("."), Some(r))?);
    }
    Ok(report::locate(&optimize_dir(g)?, run)?)
}

fn optimize_dir(g: &GlobalArgs) -> anyhow::Result<PathBuf> {
    if let Some(d) = &g.selection.target_dir {
        return Ok(d.join("optimize"));
    }
    let project = match crate::pipeline::locate(g) {
        Ok(l) => l.project,
        Err(_) => {
            let ws = Workspace::load(&g.selection.cargo())?;
            ws.project(&g.selection.cargo(), None, None)?
        }
    };
    Ok(project.target_dir.join("optimize"))
}

/// `[profile.<name>]` with `inherits = "<base>"` and `overrides` (key → TOML literal), in
/// the manifest text; everything else is kept byte for byte.
pub fn edit_manifest(
    text: &str,
    name: &str,
    base: &str,
    overrides: &BTreeMap<String, String>,
) -> anyhow::Result<String> {
    let mut doc: DocumentMut = text.parse().context("Cargo.toml is not valid TOML")?;
    let profiles = doc.entry("profile").or_insert_with(|| {
        let mut t = Table::new();
        t.set_implicit(true);
        Item::Table(t)
    });
    let profiles = profiles
        .as_table_like_mut()
        .ok_or_else(|| anyhow::anyhow!("`profile` is not a table"))?;
    let created = profiles.get(name).is_none();
    if created {
        let mut t = Table::new();
        t.decor_mut().set_prefix(format!(
            "\n# Written by `cargo optimize apply`: the settings it measured as fastest.\n# Build with `cargo build --profile {name}`.\n"
        ));
        profiles.insert(name, Item::Table(t));
    }
    let table = profiles
        .get_mut(name)
        .and_then(|t| t.as_table_like_mut())
        .ok_or_else(|| anyhow::anyhow!("`profile.{name}` is not a table"))?;
    if !BUILTIN_PROFILES.contains(&name) && name != base {
        set_value(table, "inherits", Value::from(base));
    }
    for key in MANAGED_KEYS {
        if !overrides.contains_key(*key) {
            table.remove(key);
        }
    }
    for (key, literal) in overrides {
        let v: Value = literal
            .parse()
            .with_context(|| format!("profile value {key} = {literal} is not a TOML value"))?;
        set_value(table, key, v);
    }
    Ok(doc.to_string())
}

/// Set `key` unless it already has that value (so its formatting and comments stay);
/// a changed value keeps the old one's surrounding spaces and comment.
fn set_value(table: &mut dyn toml_edit::TableLike, key: &str, mut v: Value) {
    if let Some(old) = table.get_mut(key).and_then(|i| i.as_value_mut()) {
        if same_value(old, &v) {
            return;
        }
        *v.decor_mut() = old.decor().clone();
        *old = v;
        return;
    }
    table.insert(key, Item::Value(v));
}

fn same_value(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::String(x), Value::String(y)) => x.value() == y.value(),
        (Value::Integer(x), Value::Integer(y)) => x.value() == y.value(),
        (Value::Boolean(x), Value::Boolean(y)) => x.value() == y.value(),
        (Value::Float(x), Value::Float(y)) => x.value() == y.value(),
        _ => false,
    }
}

/// `-Ctarget-cpu=<cpu>` in a cargo config's rustflags: appended to
/// `[target.<triple>] rustflags` or `[build] rustflags` when the file already has one (any
/// other target-cpu there is replaced), else as a new `[build] rustflags`.
pub fn edit_config(text: &str, cpu: &str) -> anyhow::Result<String> {
    let mut doc: DocumentMut = text.parse().context("not valid TOML")?;
    let flag = format!("-Ctarget-cpu={cpu}");
    // An existing target table with rustflags wins over [build] in cargo: edit that one.
    let target_key = doc
        .get("target")
        .and_then(|t| t.as_table_like())
        .and_then(|t| {
            t.iter()
                .find(|(_, v)| v.get("rustflags").is_some())
                .map(|(k, _)| k.to_string())
        });
    let holder: &mut dyn toml_edit::TableLike = match target_key {
        Some(k) => doc["target"][k.as_str()]
            .as_table_like_mut()
            .ok_or_else(|| anyhow::anyhow!("`target.{k}` is not a table"))?,
        None => doc
            .entry("build")
            .or_insert_with(|| Item::Table(Table::new()))
            .as_table_like_mut()
            .ok_or_else(|| anyhow::anyhow!("`build` is not a table"))?,
    };
    let is_cpu = |f: &str| f.starts_with("-Ctarget-cpu=");
    match holder.get_mut("rustflags") {
        Some(item) => {
            if let Some(arr) = item.as_array_mut() {
                let present: Vec<String> = arr
                    .iter()
                    .filter_map(|v| v.as_str().map(str::to_string))
                    .collect();
                if present.iter().filter(|f| is_cpu(f)).count() == 1 && present.contains(&flag) {
                    return Ok(doc.to_string());
                }
                arr.retain(|v| !v.as_str().is_some_and(is_cpu));
                arr.push(flag.as_str());
            } else if let Some(s) = item.as_str() {
                let mut parts: Vec<&str> = s.split_whitespace().filter(|f| !is_cpu(f)).collect();
                parts.push(&flag);
                let joined = parts.join(" ");
                if joined != s {
                    *item = toml_edit::value(joined);
                }
            } else {
                anyhow::bail!("`rustflags` is neither a list nor a string");
            }
        }
        None => {
            let mut arr = toml_edit::Array::new();
            arr.push(flag.as_str());
            holder.insert("rustflags", toml_edit::value(arr));
        }
    }
    Ok(doc.to_string())
}

/// Write `content` to `path` through a temp file in the same folder and a rename; with
/// `backup`, an existing file is first copied to `<path>.bak`. Returns the backup's path.
fn write_atomic(path: &Path, content: &[u8], backup: bool) -> anyhow::Result<Option<PathBuf>> {
    use std::io::Write;
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut saved = None;
    if backup && path.exists() {
        let b = dir.join(format!("{name}.bak"));
        std::fs::copy(path, &b).with_context(|| format!("cannot back up to {}", b.display()))?;
        saved = Some(b);
    }
    let tmp = dir.join(format!(".{name}.optimize-{}.tmp", std::process::id()));
    let result = (|| -> std::io::Result<()> {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(content)?;
        f.sync_all()?;
        if let Ok(meta) = std::fs::metadata(path) {
            std::fs::set_permissions(&tmp, meta.permissions())?;
        }
        std::fs::rename(&tmp, path)
    })();
    if let Err(e) = result {
        let _ = std::fs::remove_file(&tmp);
        return Err(e).with_context(|| format!("cannot write {}", path.display()));
    }
    Ok(saved)
}

/// How to build what was applied.
fn build_instructions(
    win: &Winner,
    profile: &str,
    manifest: &Path,
    pgo: Option<&Path>,
    cpu_not_written: bool,
) -> String {
    let mut s = String::new();
    let features = features_args(&win.features);
    let target_arg = win
        .target
        .as_ref()
        .map(|t| format!(" --target {t}"))
        .unwrap_or_default();
    let manifest = shell_quote(&manifest.display().to_string());
    match pgo {
        None => {
            let flags = cpu_not_written
                .then(|| win.target_cpu())
                .flatten()
                .map(|c| format!("(this machine only: RUSTFLAGS=\"-Ctarget-cpu={c}\")\n"))
                .unwrap_or_default();
            s.push_str(&format!(
                "build it with:\n  cargo build --manifest-path {manifest} --profile {profile}{target_arg}{features}\n{flags}"
            ));
        }
        Some(p) => {
            // RUSTFLAGS replaces every rustflags of the cargo config, so the command repeats
            // the user's own flags (and the target-cpu the winner was built with).
            let mut flags = win.user_rustflags.clone();
            if let Some(c) = win.target_cpu() {
                flags.push(format!("-Ctarget-cpu={c}"));
            }
            flags.push(format!("-Cprofile-use={}", p.display()));
            flags.push(PGO_WARN.to_string());
            let target = win.target.clone().unwrap_or_else(|| win.host.clone());
            s.push_str(&format!(
                "build it with the PGO profile (RUSTFLAGS replaces your cargo config's rustflags, so yours are repeated; --target keeps build scripts uninstrumented):\n  RUSTFLAGS={} cargo build --manifest-path {manifest} --profile {profile} --target {target}{features}\n  → the binary: target/{target}/{profile}/{} (in cargo's target directory)\n(the profile matches this source code: after larger changes, rerun `cargo optimize` and `cargo optimize apply` to refresh it)\n",
                shell_quote(&flags.join(" ")),
                win.bin
            ));
        }
    }
    if let Some(x) = win.speedup {
        s.push_str(&format!(
            "(the run measured {x:.2}× the baseline's speed for `{}`)\n",
            match &win.variant {
                Some(v) => format!("{} ({v})", win.stage),
                None => win.stage.clone(),
            }
        ));
    }
    s
}

fn features_args(f: &crate::cargo::Features) -> String {
    let mut s = String::new();
    if !f.features.is_empty() {
        s.push_str(&format!(
            " --features {}",
            shell_quote(&f.features.join(","))
        ));
    }
    if f.all_features {
        s.push_str(" --all-features");
    }
    if f.no_default_features {
        s.push_str(" --no-default-features");
    }
    s
}

fn shell_quote(s: &str) -> String {
    if !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=,:+@%".contains(c))
    {
        s.to_string()
    } else {
        let mut q = String::from("\"");
        for c in s.chars() {
            if matches!(c, '\\' | '"' | '$' | '`') {
                q.push('\\');
            }
            q.push(c);
        }
        q.push('"');
        q
    }
}

/// A unified diff (3 lines of context) of two texts, `--- a/PATH` / `+++ b/PATH`.
pub fn unified_diff(old: &str, new: &str, path: &str) -> String {
    similar::TextDiff::from_lines(old, new)
        .unified_diff()
        .context_radius(3)
        .header(&format!("a/{path}"), &format!("b/{path}"))
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    const ODD: &str = r#"# top comment
[package]
name    =   "odd"        # spaced
version = "0.1.0"

  # indented comment before a profile
[profile.release]
debug = false   # keep me

[workspace]
"#;

    fn max() -> BTreeMap<String, String> {
        [
            ("lto", "\"fat\""),
            ("codegen-units", "1"),
            ("opt-level", "3"),
            ("incremental", "false"),
        ]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
    }

    #[test]
    fn manifest_gets_a_named_profile_and_keeps_everything_else() {
        let out = edit_manifest(ODD, "optimized", "release", &max()).unwrap();
        // Every line of the original survives, in order: the edit only inserts.
        let (a, b): (Vec<&str>, Vec<&str>) = (ODD.lines().collect(), out.lines().collect());
        let diff = similar::TextDiff::from_slices(&a, &b);
        let changes: Vec<_> = diff.iter_all_changes().collect();
        assert!(
            !changes
                .iter()
                .any(|c| c.tag() == similar::ChangeTag::Delete),
            "{out}"
        );
        let added: String = changes
            .iter()
            .filter(|c| c.tag() == similar::ChangeTag::Insert)
            .map(|c| format!("{}\n", c.value()))
            .collect();
        assert!(added.contains("[profile.optimized]"), "{out}");
        assert!(added.contains("inherits = \"release\""), "{out}");
        assert!(added.contains("lto = \"fat\""), "{out}");
        assert!(added.contains("codegen-units = 1"), "{out}");
        // It parses and cargo would read the right values.
        let t: toml::Table = out.parse().unwrap();
        assert_eq!(t["profile"]["optimized"]["opt-level"].as_integer(), Some(3));
        assert_eq!(t["profile"]["release"]["debug"].as_bool(), Some(false));
        // Idempotent.
        assert_eq!(
            edit_manifest(&out, "optimized", "release", &max()).unwrap(),
            out
        );
    }

    #[test]
    fn existing_profile_is_updated_in_place() {
        let text = "[package]\nname = \"x\"\n\n[profile.optimized]\ninherits = \"release\"\nlto = \"thin\"   # was thin\npanic = \"abort\"\ndebug = 1\nmy-own = 1\n";
        let mut o = BTreeMap::new();
        o.insert("lto".to_string(), "\"fat\"".to_string());
        let out = edit_manifest(text, "optimized", "release", &o).unwrap();
        assert!(out.contains("lto = \"fat\"   # was thin"), "{out}");
        assert!(!out.contains("panic"), "stale managed key kept: {out}");
        assert!(!out.contains("debug = 1"), "{out}");
        // Keys apply does not manage are the user's.
        assert!(out.contains("my-own = 1"), "{out}");
        assert!(!out.contains("Written by"), "{out}");
    }

    #[test]
    fn builtin_and_base_profiles_get_no_inherits() {
        let out = edit_manifest("[package]\nname = \"x\"\n", "release", "release", &max()).unwrap();
        assert!(
            out.contains("[profile.release]") && !out.contains("inherits"),
            "{out}"
        );
        let out = edit_manifest("", "fast", "fast", &max()).unwrap();
        assert!(!out.contains("inherits"), "{out}");
        assert!(validate_profile_name("doc").is_err());
        assert!(validate_profile_name("a b").is_err());
        assert!(validate_profile_name("optimized").is_ok());
    }

    #[test]
    fn config_gets_target_cpu_once() {
        let out = edit_config("", "x86-64-v3").unwrap();
        let t: toml::Table = out.parse().unwrap();
        assert_eq!(
            t["build"]["rustflags"].as_array().unwrap()[0].as_str(),
            Some("-Ctarget-cpu=x86-64-v3")
        );
        assert_eq!(edit_config(&out, "x86-64-v3").unwrap(), out);

        // The user's flags stay; an old target-cpu is replaced.
        let text = "# mine\n[build]\nrustflags = [\"--cfg\", \"user_flag\", \"-Ctarget-cpu=native\"] # c\n";
        let out = edit_config(text, "x86-64-v3").unwrap();
        assert!(out.starts_with("# mine\n[build]\n"), "{out}");
        assert!(out.contains("\"--cfg\", \"user_flag\""), "{out}");
        assert!(
            out.contains("-Ctarget-cpu=x86-64-v3") && !out.contains("native"),
            "{out}"
        );
        assert!(out.contains("# c"), "{out}");

        // A target table with rustflags is the one cargo uses.
        let text = "[build]\nrustflags = [\"-Cb\"]\n[target.x86_64-unknown-linux-gnu]\nrustflags = \"-Ct\"\n";
        let out = edit_config(text, "native").unwrap();
        let t: toml::Table = out.parse().unwrap();
        assert_eq!(
            t["target"]["x86_64-unknown-linux-gnu"]["rustflags"].as_str(),
            Some("-Ct -Ctarget-cpu=native")
        );
        assert_eq!(t["build"]["rustflags"].as_array().unwrap().len(), 1);
    }

    #[test]
    fn diff_shows_only_the_change_with_context() {
        let old = "a\nb\nc\nd\ne\nf\ng\nh\n";
        let new = "a\nb\nc\nd\nE\nf\ng\nh\ni\n";
        let d = unified_diff(old, new, "Cargo.toml");
        assert_eq!(
            d,
            "--- a/Cargo.toml\n+++ b/Cargo.toml\n@@ -2,7 +2,8 @@\n b\n c\n d\n-e\n+E\n f\n g\n h\n+i\n"
        );
        let d = unified_diff("", "x\n", "new.toml");
        // GNU diff style: a count of 1 is left out.
        assert!(d.ends_with("@@ -0,0 +1 @@\n+x\n"), "{d}");
        assert_eq!(unified_diff("same\n", "same\n", "p"), "");
    }

    #[test]
    fn winner_from_a_report() {
        let report = serde_json::json!({
            "schema": 1, "tool_version": "0", "run_id": "r",
            "crate": "demo", "bin": "demo",
            "toolchain": {"rustc": "1", "llvm": "22", "host": "x86_64-unknown-linux-gnu"},
            "stages": [], "workloads": [], "pipeline": [],
            "final": {
                "stage": "pgo", "binary": "/r/bin/pgo", "speedup_vs_baseline": 1.5,
                "settings": {
                    "profile": "release",
                    "profile_overrides": {"lto": "\"fat\""},
                    "rustflags": [],
                    "stage_rustflags": ["-Ctarget-cpu=x86-64-v3", "-Cprofile-use=/c/x.profdata", PGO_WARN],
                    "user_rustflags": ["--cfg", "user_flag"],
                    "target": "x86_64-unknown-linux-gnu",
                    "features": {"features": [], "all_features": false, "no_default_features": false}
                }
            }
        });
        let report: Report = serde_json::from_value(report).unwrap();
        let w = Winner::from_report(&report).unwrap();
        assert_eq!(w.target_cpu().as_deref(), Some("x86-64-v3"));
        assert_eq!(w.profile_use(), Some(PathBuf::from("/c/x.profdata")));
        assert!(w.other_flags().is_empty());
        let text = build_instructions(
            &w,
            "optimized",
            Path::new("/p/Cargo.toml"),
            Some(Path::new("/p/pgo/demo.profdata")),
            true,
        );
        assert!(
            text.contains("RUSTFLAGS=\"--cfg user_flag -Ctarget-cpu=x86-64-v3 -Cprofile-use=/p/pgo/demo.profdata -Cllvm-args=-pgo-warn-missing-function\" cargo build --manifest-path /p/Cargo.toml --profile optimized --target x86_64-unknown-linux-gnu"),
            "{text}"
        );
    }
}
