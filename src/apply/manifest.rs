//! The TOML edits `apply` makes, on text with LF line endings (`text` restores the file's
//! own): the named profile in Cargo.toml and `-Ctarget-cpu` in `.cargo/config.toml`. Edited
//! with toml_edit, so comments and formatting survive; every value of the user's that an
//! edit replaces, or keeps although the run measured without it, comes back as a note.
//!
//! Whose keys: a profile table `apply` created carries [`MARKER`] in the comment above its
//! header, and there `apply` owns the [`MANAGED_KEYS`] (it removes those a newer run no
//! longer chooses). In any other table (hand-written, or the base profile itself) every key
//! is the user's: a key the run sets replaces the user's value (said in a note), and no key
//! is ever removed.

use std::collections::BTreeMap;

use anyhow::Context as _;
use toml_edit::{DocumentMut, Item, Table, Value};

/// Profile keys the profile stage can set.
pub(crate) const MANAGED_KEYS: &[&str] = crate::spec::PROFILE_KEYS;

/// Profiles cargo defines itself: they take keys directly, never `inherits`.
const BUILTIN_PROFILES: &[&str] = &["dev", "release", "test", "bench"];

/// In the comment above a profile `apply` created: the table is apply's.
pub(crate) const MARKER: &str = "Written by `cargo optimize apply`";

/// An edited text and what the edit did to the user's own values.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Edited {
    pub text: String,
    /// One line each (a `fix:` line where there is one).
    pub notes: Vec<String>,
}

impl Edited {
    /// `text` as it is, no note (an edit that changes nothing, for another to follow).
    pub(crate) fn unchanged(text: &str) -> Edited {
        Edited {
            text: text.to_string(),
            notes: Vec::new(),
        }
    }
}

/// `[profile.<name>]` with `inherits = "<base>"` and `overrides` (key → TOML literal), in
/// the manifest text; everything else is kept byte for byte (see the module doc for whose
/// keys are whose).
pub(crate) fn edit_manifest(
    text: &str,
    name: &str,
    base: &str,
    overrides: &BTreeMap<String, String>,
) -> anyhow::Result<Edited> {
    let mut doc: DocumentMut = text.parse().context("Cargo.toml is not valid TOML")?;
    let profiles = doc.entry("profile").or_insert_with(|| {
        let mut t = Table::new();
        t.set_implicit(true);
        Item::Table(t)
    });
    let profiles = profiles
        .as_table_like_mut()
        .ok_or_else(|| anyhow::anyhow!("`profile` is not a table"))?;
    if profiles.get(name).is_none() {
        let mut t = Table::new();
        t.decor_mut().set_prefix(format!(
            "\n# {MARKER}: the settings it measured as fastest.\n# Build with `cargo build --profile {name}`.\n"
        ));
        profiles.insert(name, Item::Table(t));
    }
    let item = profiles
        .get_mut(name)
        .ok_or_else(|| anyhow::anyhow!("`profile.{name}` vanished"))?;
    let ours = item.as_table().is_some_and(|t| {
        t.decor()
            .prefix()
            .and_then(|p| p.as_str())
            .is_some_and(|p| p.contains(MARKER))
    });
    let table = item
        .as_table_like_mut()
        .ok_or_else(|| anyhow::anyhow!("`profile.{name}` is not a table"))?;
    let here = format!("[profile.{name}]");
    let mut notes = Vec::new();
    let mut replaced = |key: &str, old: String, new: String| {
        if !ours {
            notes.push(format!(
                "{here}: replaced your `{key} = {old}` with `{key} = {new}` (the run's choice)"
            ));
        }
    };
    if !BUILTIN_PROFILES.contains(&name) && name != base {
        if let Some(old) = set_value(table, "inherits", Value::from(base)) {
            replaced("inherits", old, bare(&Value::from(base)));
        }
    }
    let kept = match name == base {
        // The base profile is what the run measured on: its keys stay as they are.
        true => Vec::new(),
        false => unmeasured_keys(table, overrides, ours),
    };
    for (key, literal) in overrides {
        let v: Value = literal
            .parse()
            .with_context(|| format!("profile value {key} = {literal} is not a TOML value"))?;
        let new = bare(&v);
        if let Some(old) = set_value(table, key, v) {
            replaced(key, old, new);
        }
    }
    if !kept.is_empty() {
        notes.push(format!(
            "{here}: kept your {}: the run measured without {} ([profile.{base}]'s value), so `--profile {name}` builds differ from the measured one\n  fix: remove {} from {here} to build what was measured",
            kept.join(", "),
            if kept.len() == 1 { "it" } else { "them" },
            if kept.len() == 1 { "that line" } else { "those lines" },
        ));
    }
    Ok(Edited {
        text: doc.to_string(),
        notes,
    })
}

/// The managed keys the run did not set: removed from a profile `apply` created (`ours`),
/// kept in the user's own and returned (`key = value`) for the note.
fn unmeasured_keys(
    table: &mut dyn toml_edit::TableLike,
    overrides: &BTreeMap<String, String>,
    ours: bool,
) -> Vec<String> {
    let mut kept = Vec::new();
    for key in MANAGED_KEYS.iter().filter(|k| !overrides.contains_key(**k)) {
        let Some(old) = table.get(key).and_then(|i| i.as_value()).map(bare) else {
            continue;
        };
        if ours {
            table.remove(key);
        } else {
            kept.push(format!("`{key} = {old}`"));
        }
    }
    kept
}

/// A value as TOML without its surrounding spaces and comment.
fn bare(v: &Value) -> String {
    let mut v = v.clone();
    v.decor_mut().clear();
    v.to_string()
}

/// Set `key` unless it already has that value (so its formatting and comments stay); a
/// changed value keeps the old one's surrounding spaces and comment. Returns the value it
/// replaced, if any.
fn set_value(table: &mut dyn toml_edit::TableLike, key: &str, mut v: Value) -> Option<String> {
    if let Some(old) = table.get_mut(key).and_then(|i| i.as_value_mut()) {
        if same_value(old, &v) {
            return None;
        }
        let was = bare(old);
        *v.decor_mut() = old.decor().clone();
        *old = v;
        return Some(was);
    }
    table.insert(key, Item::Value(v));
    None
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

/// `-Ctarget-cpu=<cpu>` in a cargo config's rustflags: appended to the host's
/// `[target.<host>] rustflags`, else a matching `[target.'cfg(…)'] rustflags`, or
/// `[build] rustflags` when the file already has one (any other target-cpu there is
/// replaced, with a note), else as a new `[build] rustflags`. A `[target.X]` table with
/// rustflags that applies to the host wins over `[build]` in cargo: its key. Another
/// target's table is never the one (cargo does not read it for host builds).
fn target_with_rustflags(doc: &DocumentMut, host: &str, cfg: &[String]) -> Option<String> {
    let tables = doc.get("target").and_then(|t| t.as_table_like())?;
    let with_flags: Vec<String> = tables
        .iter()
        .filter(|(_, v)| v.get("rustflags").is_some())
        .map(|(k, _)| k.to_string())
        .collect();
    let own = with_flags.iter().find(|k| *k == host);
    own.or_else(|| {
        (with_flags.iter())
            .find(|k| k.starts_with("cfg(") && crate::cargo::target_applies(k, host, cfg))
    })
    .cloned()
}

/// `flag` (a `-Ctarget-cpu=`) into a rustflags array: in the first target-cpu's place (and
/// spacing), the others removed; at the end when there is none.
fn put_cpu(arr: &mut toml_edit::Array, flag: &str) {
    let is_cpu = |v: &toml_edit::Value| v.as_str().is_some_and(|f| f.starts_with("-Ctarget-cpu="));
    let first = arr.iter().position(is_cpu);
    match first {
        Some(i) => {
            // `replace` keeps the old element's spaces.
            arr.replace(i, flag);
            let mut j = 0;
            arr.retain(|v| {
                j += 1;
                j - 1 == i || !is_cpu(v)
            });
        }
        None => arr.push(flag),
    }
}

pub(crate) fn edit_config(
    text: &str,
    cpu: &str,
    host: &str,
    cfg: &[String],
) -> anyhow::Result<Edited> {
    let mut doc: DocumentMut = text.parse().context("not valid TOML")?;
    let flag = format!("-Ctarget-cpu={cpu}");
    let target_key = target_with_rustflags(&doc, host, cfg);
    let here = match &target_key {
        Some(k) => format!("[target.{k}] rustflags"),
        None => "[build] rustflags".to_string(),
    };
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
    let mut notes = Vec::new();
    let mut replaced = |present: Vec<String>| {
        let others: Vec<String> = present
            .into_iter()
            .filter(|f| is_cpu(f) && *f != flag)
            .map(|f| format!("`{f}`"))
            .collect();
        if !others.is_empty() {
            notes.push(format!(
                "{here}: replaced your {} with `{flag}` (the run's choice)",
                others.join(", ")
            ));
        }
    };
    match holder.get_mut("rustflags") {
        Some(item) => {
            if let Some(arr) = item.as_array_mut() {
                let present: Vec<String> = arr
                    .iter()
                    .filter_map(|v| v.as_str().map(str::to_string))
                    .collect();
                if present.iter().filter(|f| is_cpu(f)).count() == 1 && present.contains(&flag) {
                    return Ok(Edited {
                        text: doc.to_string(),
                        notes,
                    });
                }
                replaced(present);
                put_cpu(arr, &flag);
            } else if let Some(s) = item.as_str() {
                replaced(s.split_whitespace().map(str::to_string).collect());
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
    Ok(Edited {
        text: doc.to_string(),
        notes,
    })
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
        let edited = edit_manifest(ODD, "optimized", "release", &max()).unwrap();
        assert!(edited.notes.is_empty(), "{edited:?}");
        let out = edited.text;
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
        assert!(added.contains(MARKER), "{out}");
        assert!(added.contains("inherits = \"release\""), "{out}");
        assert!(added.contains("lto = \"fat\""), "{out}");
        assert!(added.contains("codegen-units = 1"), "{out}");
        // It parses and cargo would read the right values.
        let t: toml::Table = out.parse().unwrap();
        assert_eq!(t["profile"]["optimized"]["opt-level"].as_integer(), Some(3));
        assert_eq!(t["profile"]["release"]["debug"].as_bool(), Some(false));
        // Idempotent.
        let again = edit_manifest(&out, "optimized", "release", &max()).unwrap();
        assert_eq!(again.text, out);
        assert!(again.notes.is_empty(), "{again:?}");
    }

    #[test]
    fn a_profile_apply_wrote_is_apply_s_to_update() {
        let text = format!("[package]\nname = \"x\"\n\n# {MARKER}: …\n[profile.optimized]\ninherits = \"release\"\nlto = \"thin\"   # was thin\npanic = \"abort\"\ndebug = 1\nmy-own = 1\n");
        let mut o = BTreeMap::new();
        o.insert("lto".to_string(), "\"fat\"".to_string());
        let e = edit_manifest(&text, "optimized", "release", &o).unwrap();
        let out = &e.text;
        assert!(out.contains("lto = \"fat\"   # was thin"), "{out}");
        assert!(!out.contains("panic"), "stale managed key kept: {out}");
        assert!(!out.contains("debug = 1"), "{out}");
        // Keys apply does not manage are the user's.
        assert!(out.contains("my-own = 1"), "{out}");
        assert!(e.notes.is_empty(), "{e:?}");
    }

    #[test]
    fn a_hand_written_profile_keeps_the_users_keys_and_comments() {
        let text = "[package]\nname = \"x\"\n\n# mine\n[profile.optimized]  # header comment\ninherits = \"dev\"\n# symbols for perf\ndebug = true\nsplit-debuginfo = \"packed\" # keep\nlto = \"thin\"   # was thin\n# trailing comment\n";
        let e = edit_manifest(text, "optimized", "release", &max()).unwrap();
        assert_eq!(
            e.text,
            "[package]\nname = \"x\"\n\n# mine\n[profile.optimized]  # header comment\ninherits = \"release\"\n# symbols for perf\ndebug = true\nsplit-debuginfo = \"packed\" # keep\nlto = \"fat\"   # was thin\ncodegen-units = 1\nincremental = false\nopt-level = 3\n# trailing comment\n"
        );
        assert_eq!(e.notes.len(), 3, "{e:?}");
        assert_eq!(
            e.notes[0],
            "[profile.optimized]: replaced your `inherits = \"dev\"` with `inherits = \"release\"` (the run's choice)"
        );
        assert_eq!(
            e.notes[1],
            "[profile.optimized]: replaced your `lto = \"thin\"` with `lto = \"fat\"` (the run's choice)"
        );
        assert!(
            e.notes[2].starts_with("[profile.optimized]: kept your `debug = true`: the run measured without it ([profile.release]'s value)")
                && e.notes[2].contains("\n  fix: remove that line"),
            "{e:?}"
        );
        // Applying again: nothing changes, the kept key is said again.
        let again = edit_manifest(&e.text, "optimized", "release", &max()).unwrap();
        assert_eq!(again.text, e.text);
        assert_eq!(again.notes.len(), 1, "{again:?}");
    }

    #[test]
    fn the_base_profile_itself_loses_nothing() {
        let text = "[profile.release]\npanic = \"abort\"\nlto = \"thin\"\n";
        let mut o = BTreeMap::new();
        o.insert("lto".to_string(), "\"fat\"".to_string());
        let e = edit_manifest(text, "release", "release", &o).unwrap();
        assert_eq!(
            e.text,
            "[profile.release]\npanic = \"abort\"\nlto = \"fat\"\n"
        );
        assert_eq!(e.notes.len(), 1, "{e:?}");
    }

    #[test]
    fn builtin_and_base_profiles_get_no_inherits() {
        let out = edit_manifest("[package]\nname = \"x\"\n", "release", "release", &max())
            .unwrap()
            .text;
        assert!(
            out.contains("[profile.release]") && !out.contains("inherits"),
            "{out}"
        );
        let out = edit_manifest("", "fast", "fast", &max()).unwrap().text;
        assert!(!out.contains("inherits"), "{out}");
    }

    const HOST: &str = "x86_64-unknown-linux-gnu";

    fn cfg() -> Vec<String> {
        ["unix", "target_os=\"linux\"", "target_arch=\"x86_64\""]
            .map(String::from)
            .to_vec()
    }

    #[test]
    fn the_cpu_goes_into_the_host_s_target_table_never_another_target_s() {
        // Another target's table is not the host's: [build] is what cargo reads here.
        let text = "[target.aarch64-unknown-linux-gnu]\nrustflags = [\"-Ca\"]\n";
        let t: toml::Table = edit_config(text, "native", HOST, &cfg())
            .unwrap()
            .text
            .parse()
            .unwrap();
        let aarch64 = t["target"]["aarch64-unknown-linux-gnu"]["rustflags"].as_array();
        assert_eq!(aarch64.unwrap().len(), 1, "{t}");
        let build = t["build"]["rustflags"].as_array().unwrap();
        assert_eq!(build[0].as_str(), Some("-Ctarget-cpu=native"));
        // The host's own table, after others; else a cfg table that matches the host.
        let text = "[target.'cfg(windows)']\nrustflags = [\"-Cw\"]\n[target.'cfg(unix)']\nrustflags = [\"-Cu\"]\n";
        let t: toml::Table = edit_config(text, "native", HOST, &cfg())
            .unwrap()
            .text
            .parse()
            .unwrap();
        assert_eq!(
            t["target"]["cfg(windows)"]["rustflags"]
                .as_array()
                .unwrap()
                .len(),
            1
        );
        assert_eq!(
            t["target"]["cfg(unix)"]["rustflags"]
                .as_array()
                .unwrap()
                .len(),
            2
        );
        assert!(t.get("build").is_none(), "{t}");
        let text = format!(
            "[target.'cfg(unix)']\nrustflags = [\"-Cu\"]\n[target.{HOST}]\nrustflags = [\"-Ch\"]\n"
        );
        let t: toml::Table = edit_config(&text, "native", HOST, &cfg())
            .unwrap()
            .text
            .parse()
            .unwrap();
        assert_eq!(t["target"][HOST]["rustflags"].as_array().unwrap().len(), 2);
        assert_eq!(
            t["target"]["cfg(unix)"]["rustflags"]
                .as_array()
                .unwrap()
                .len(),
            1
        );
    }

    #[test]
    fn config_gets_target_cpu_once() {
        let e = edit_config("", "x86-64-v3", HOST, &cfg()).unwrap();
        assert!(e.notes.is_empty());
        let out = e.text;
        let t: toml::Table = out.parse().unwrap();
        assert_eq!(
            t["build"]["rustflags"].as_array().unwrap()[0].as_str(),
            Some("-Ctarget-cpu=x86-64-v3")
        );
        assert_eq!(
            edit_config(&out, "x86-64-v3", HOST, &cfg()).unwrap().text,
            out
        );

        // The user's flags stay; an old target-cpu is replaced in its place, and said.
        let text = "# mine\n[build]\nrustflags = [\"--cfg\", \"user_flag\", \"-Ctarget-cpu=native\"] # c\n";
        let e = edit_config(text, "x86-64-v3", HOST, &cfg()).unwrap();
        assert_eq!(
            e.text,
            "# mine\n[build]\nrustflags = [\"--cfg\", \"user_flag\", \"-Ctarget-cpu=x86-64-v3\"] # c\n"
        );
        assert_eq!(
            e.notes,
            vec!["[build] rustflags: replaced your `-Ctarget-cpu=native` with `-Ctarget-cpu=x86-64-v3` (the run's choice)"]
        );

        // A target table with rustflags is the one cargo uses.
        let text = "[build]\nrustflags = [\"-Cb\"]\n[target.x86_64-unknown-linux-gnu]\nrustflags = \"-Ct\"\n";
        let out = edit_config(text, "native", HOST, &cfg()).unwrap().text;
        let t: toml::Table = out.parse().unwrap();
        assert_eq!(
            t["target"]["x86_64-unknown-linux-gnu"]["rustflags"].as_str(),
            Some("-Ct -Ctarget-cpu=native")
        );
        assert_eq!(t["build"]["rustflags"].as_array().unwrap().len(), 1);

        // Two target-cpus: one left, in the first one's place.
        let text = "[build]\nrustflags = [\"-Ctarget-cpu=a\", \"-Cx\", \"-Ctarget-cpu=b\"]\n";
        let e = edit_config(text, "c", HOST, &cfg()).unwrap();
        assert_eq!(
            e.text,
            "[build]\nrustflags = [\"-Ctarget-cpu=c\", \"-Cx\"]\n"
        );
    }
}
