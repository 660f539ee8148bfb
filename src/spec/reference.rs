//! The spec reference (`docs/src/spec.md`) against the validator: every key the validator
//! accepts has a row in its table's section of the page, and every key a row names is
//! accepted there. The accepted keys come from the validator itself: a spec with an unknown
//! key in each table is parsed, and the error's fix lists that table's valid keys (serde's
//! own field list, which `raw::TABLES` must match to name the table).

use std::collections::BTreeSet;

use super::fixture::{Fixture, ONE};
use super::raw::TABLES;

/// The reference page, relative to the package root.
const PAGE: &str = "docs/src/spec.md";

/// One spec per table with the unknown key `zzz` in it, and the heading of the page's
/// section that documents that table.
fn probes() -> Vec<(String, &'static str)> {
    vec![
        (format!("zzz = 1\n{ONE}"), "Top-level keys"),
        (format!("[stages]\nzzz = 1\n{ONE}"), "`[stages]`"),
        (
            format!("[stages]\nprofile = {{ zzz = 1 }}\n{ONE}"),
            "Profile table",
        ),
        (
            format!("[release]\nprofile = {{ zzz = 1 }}\n{ONE}"),
            "Profile table",
        ),
        (format!("[bench]\nzzz = 1\n{ONE}"), "`[bench]`"),
        (format!("[verify]\nzzz = 1\n{ONE}"), "`[verify]`"),
        (format!("[cache]\nzzz = 1\n{ONE}"), "`[cache]`"),
        (format!("[check]\nzzz = 1\n{ONE}"), "`[check]`"),
        (format!("[release]\nzzz = 1\n{ONE}"), "`[release]`"),
        (
            format!("[release.flavors.a]\nzzz = 1\n{ONE}"),
            "`[release.flavors.<name>]`",
        ),
        (format!("{ONE}zzz = 1\n"), "`[[workload]]`"),
        (format!("{ONE}expect = {{ zzz = 1 }}\n"), "Expect table"),
        (format!("{ONE}budget = {{ zzz = 1 }}\n"), "Budget table"),
        (format!("{ONE}metric = {{ zzz = 1 }}\n"), "Metric table"),
    ]
}

/// The keys the rows of the section under `heading` name (the first cell's code span),
/// with each one's line; `None` when the page has no such heading.
fn documented(page: &str, heading: &str) -> Option<Vec<(String, usize)>> {
    let mut lines = page.lines().enumerate();
    lines.find(|(_, l)| l.starts_with('#') && l.trim_start_matches('#').trim() == heading)?;
    let mut keys = Vec::new();
    for (i, line) in lines.take_while(|(_, l)| !l.starts_with('#')) {
        if let Some(rest) = line.strip_prefix("| `") {
            let key = rest.split('`').next().unwrap_or_default();
            keys.push((key.to_owned(), i + 1));
        }
    }
    Some(keys)
}

#[test]
fn the_reference_lists_exactly_the_accepted_keys() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let page = std::fs::read_to_string(root.join(PAGE)).expect("the spec reference page");
    let f = Fixture::new();
    let mut problems = Vec::new();
    let mut places = BTreeSet::new();
    for (text, heading) in probes() {
        let (_, _, message, fix) = f.err(&text);
        let place = message
            .strip_prefix("unknown key `zzz` ")
            .unwrap_or(&message);
        places.insert(place.to_owned());
        let listed = fix
            .split_once("valid keys ")
            .and_then(|(_, rest)| rest.split_once(": "))
            .map(|(_, keys)| keys)
            .unwrap_or_else(|| panic!("no valid keys in the fix for {place}: {fix}"));
        let accepted: BTreeSet<&str> = listed.split(", ").collect();
        let Some(rows) = documented(&page, heading) else {
            problems.push(format!("{PAGE}: no section {heading} for the keys {place}"));
            continue;
        };
        for key in &accepted {
            if !rows.iter().any(|(k, _)| k == key) {
                problems.push(format!(
                    "{PAGE}: section {heading} has no row for `{key}`, which is accepted {place}"
                ));
            }
        }
        for (key, line) in &rows {
            if !accepted.contains(key.as_str()) {
                problems.push(format!(
                    "{PAGE}:{line}: `{key}` is not accepted {place} (valid: {listed})"
                ));
            }
        }
    }
    // Every table the validator names has a probe above.
    let tables: BTreeSet<String> = TABLES.iter().map(|(p, _)| (*p).to_owned()).collect();
    for missing in tables.difference(&places) {
        problems.push(format!(
            "no probe for the keys {missing}: add one to `probes`"
        ));
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
