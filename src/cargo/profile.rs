//! What cargo will use for a key of a named profile, when the workspace manifest and cargo's
//! built-in defaults alone decide it: `[profile.<name>]` of the root `Cargo.toml`, its
//! `inherits` chain, then the defaults of `release`/`dev`. Anything else that can set
//! profile keys (a `[profile]` table in a cargo config file, `CARGO_PROFILE_*` variables)
//! makes the answer unknown: callers then build and compare instead of assuming.

use std::collections::BTreeMap;
use std::path::Path;

/// Keys whose built-in defaults are certain for `release` and `dev` (and the profiles that
/// inherit from them).
const DEFAULTS: &[(&str, &str, &str)] = &[
    // (key, release, dev) as TOML literals.
    ("opt-level", "3", "0"),
    ("lto", "false", "false"),
    ("codegen-units", "16", "256"),
    ("incremental", "false", "true"),
    ("panic", "\"unwind\"", "\"unwind\""),
    // Cargo strips debug info itself when `debug` is off, but keeps the symbols.
    ("strip", "\"none\"", "\"none\""),
];

/// The values `keys` of profile `name` will have, when the manifest and the defaults decide
/// them alone; `None` when a config file or the environment could set profile keys, the
/// manifest cannot be read, or a key has no known default.
pub(crate) fn known_values(
    workspace_root: &Path,
    config_dirs: &[&Path],
    env_has_profile: bool,
    name: &str,
    keys: &[&str],
) -> Option<BTreeMap<String, String>> {
    if env_has_profile || config_dirs.iter().any(|d| config_sets_profiles(d)) {
        return None;
    }
    let manifest: toml::Table = std::fs::read_to_string(workspace_root.join("Cargo.toml"))
        .ok()?
        .parse()
        .ok()?;
    let profiles = manifest.get("profile").and_then(|p| p.as_table());
    keys.iter()
        .map(|k| Some((k.to_string(), value_of(profiles, name, k, 0)?)))
        .collect()
}

/// The normal form of a profile value given as a TOML literal, so that equal settings
/// compare equal (`lto = true` is `"fat"`, `strip = true` is `"symbols"`).
pub(crate) fn normalize(key: &str, literal: &str) -> String {
    let v: Option<toml::Value> = format!("v = {literal}")
        .parse::<toml::Table>()
        .ok()
        .and_then(|mut t| t.remove("v"));
    match (key, v) {
        ("lto", Some(toml::Value::Boolean(true))) => "\"fat\"".into(),
        ("strip", Some(toml::Value::Boolean(true))) => "\"symbols\"".into(),
        ("strip", Some(toml::Value::Boolean(false))) => "\"none\"".into(),
        (_, Some(v)) => v.to_string(),
        (_, None) => literal.to_string(),
    }
}

fn value_of(profiles: Option<&toml::Table>, name: &str, key: &str, depth: usize) -> Option<String> {
    let table = profiles
        .and_then(|p| p.get(name))
        .and_then(|t| t.as_table());
    if let Some(v) = table.and_then(|t| t.get(key)) {
        return Some(normalize(key, &v.to_string()));
    }
    let parent = table
        .and_then(|t| t.get("inherits"))
        .and_then(|v| v.as_str());
    match (name, parent) {
        (_, Some(p)) if depth < 16 => value_of(profiles, p, key, depth + 1),
        ("release" | "bench", _) => default_of(key, true),
        ("dev" | "test", _) => default_of(key, false),
        _ => None,
    }
}

fn default_of(key: &str, release: bool) -> Option<String> {
    DEFAULTS
        .iter()
        .find(|(k, _, _)| *k == key)
        .map(|(k, r, d)| normalize(k, if release { r } else { d }))
}

/// Whether a `.cargo/config(.toml)` in `dir` has a `[profile]` table.
fn config_sets_profiles(dir: &Path) -> bool {
    std::fs::read_to_string(super::config_file(dir))
        .ok()
        .and_then(|t| t.parse::<toml::Table>().ok())
        .is_some_and(|t| t.contains_key("profile"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn root(manifest: &str) -> tempfile::TempDir {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("Cargo.toml"), manifest).unwrap();
        d
    }

    const MAX: [&str; 4] = ["lto", "codegen-units", "opt-level", "incremental"];

    #[test]
    fn defaults_manifest_and_inherits() {
        let d = root("[package]\nname = \"x\"\n");
        let v = known_values(d.path(), &[], false, "release", &MAX).unwrap();
        assert_eq!(v["opt-level"], "3");
        assert_eq!(v["codegen-units"], "16");
        assert_eq!(v["lto"], "false");
        let d = root("[profile.release]\nlto = true\ncodegen-units = 1\n[profile.dist]\ninherits = \"release\"\nincremental = false\n");
        let v = known_values(d.path(), &[], false, "dist", &MAX).unwrap();
        assert_eq!(v["lto"], "\"fat\"", "lto = true is fat");
        assert_eq!(v["codegen-units"], "1");
        assert_eq!(v["opt-level"], "3");
        assert_eq!(normalize("lto", "\"fat\""), v["lto"]);
    }

    #[test]
    fn unknown_when_something_else_can_set_profiles() {
        let d = root("[package]\nname = \"x\"\n");
        assert!(known_values(d.path(), &[], true, "release", &MAX).is_none());
        let cfg = tempfile::tempdir().unwrap();
        std::fs::write(
            cfg.path().join("config.toml"),
            "[profile.release]\nlto = \"thin\"\n",
        )
        .unwrap();
        assert!(known_values(d.path(), &[cfg.path()], false, "release", &MAX).is_none());
        // A key without a certain default, a profile without a known base.
        assert!(known_values(d.path(), &[], false, "release", &["debug"]).is_none());
        assert_eq!(
            known_values(d.path(), &[], false, "release", &["strip"]).unwrap()["strip"],
            "\"none\""
        );
        assert!(known_values(d.path(), &[], false, "custom", &MAX).is_none());
    }
}
