//! toml's own errors in spec terms, each with a fix: an unknown or missing key, a key or
//! table written twice (named), a value of the wrong type or out of range (with an example
//! of the key's form that the validator accepts), and syntax errors (a control character,
//! an unclosed string or table header).

use super::super::raw::TABLES;
use super::did_you_mean;

/// Where toml's error points: the text its span covers, the key whose value starts there
/// (`max-time` in `max-time = true`; `None` inside an array), whether the line is a table
/// header, and the character at the error.
pub(super) struct Site<'a> {
    at_text: &'a str,
    key: Option<&'a str>,
    header: bool,
    here: Option<char>,
}

impl<'a> Site<'a> {
    pub(super) fn of(text: &'a str, span: Option<std::ops::Range<usize>>) -> Self {
        let at_text = span.clone().and_then(|s| text.get(s)).unwrap_or("");
        let offset = span.map_or(0, |s| s.start).min(text.len());
        let before = text.get(..offset).unwrap_or("");
        let line = &before[before.rfind('\n').map_or(0, |i| i + 1)..];
        let key = line.trim_end().strip_suffix('=').and_then(|k| {
            let k = k.trim_end();
            let start = k
                .rfind(|c: char| !(c.is_ascii_alphanumeric() || c == '-' || c == '_'))
                .map_or(0, |i| i + 1);
            Some(&k[start..]).filter(|k| !k.is_empty())
        });
        Site {
            at_text,
            key,
            header: line.trim_start().starts_with('['),
            here: text.get(offset..).and_then(|t| t.chars().next()),
        }
    }
}

/// toml's message `msg` reworded, and its fix.
pub(super) fn reword(msg: &str, site: &Site) -> (String, String) {
    let at_text = site.at_text;
    if let Some(rest) = msg.strip_prefix("unknown field `") {
        return unknown_key(rest);
    }
    if let Some(rest) = msg.strip_prefix("missing field `") {
        let key = rest.split('`').next().unwrap_or(rest);
        let example = if key == "name" {
            "name = \"my-workload\""
        } else {
            key
        };
        return (
            format!("missing required key `{key}`"),
            format!("add {example} to this table"),
        );
    }
    if msg == "invalid type: map, expected a sequence"
        && at_text.starts_with('[')
        && !at_text.starts_with("[[")
    {
        let name = at_text.trim_matches(['[', ']', ' ']);
        return (
            format!("`{name}` must be an array of tables"),
            format!("write [[{name}]] (double brackets) before each entry"),
        );
    }
    if msg.starts_with("invalid type: string") && msg.ends_with("expected a sequence") {
        return (
            msg.replace("a sequence", "an array"),
            format!("write a list: [{at_text}]"),
        );
    }
    if msg.starts_with("duplicate key") {
        return duplicate(site);
    }
    if let Some(found) = wrong_value(msg, site) {
        return found;
    }
    syntax(msg, site)
}

/// `rest`: what follows "unknown field `" — the key, then the valid ones between backticks.
fn unknown_key(rest: &str) -> (String, String) {
    let (key, tail) = rest.split_once('`').unwrap_or((rest, ""));
    // serde lists the valid keys between backticks after the unknown one.
    let listed: Vec<&str> = tail.split('`').skip(1).step_by(2).collect();
    let table = TABLES.iter().find(|(_, keys)| {
        let mut a = keys.to_vec();
        let mut b = listed.clone();
        a.sort_unstable();
        b.sort_unstable();
        a == b
    });
    let (place, valid): (&str, Vec<&str>) = match table {
        Some((place, keys)) => (place, keys.to_vec()),
        None => ("here", listed),
    };
    let mut fix = match did_you_mean(key, &valid) {
        Some(k) => format!("did you mean `{k}`? "),
        None => String::new(),
    };
    // A key of other tables says where it belongs (`cpu`: in [stages] or in [release]).
    let homes: Vec<&str> = TABLES
        .iter()
        .filter(|(p, keys)| *p != place && keys.contains(&key))
        .map(|(p, _)| *p)
        .collect();
    if !homes.is_empty() {
        fix.push_str(&format!("`{key}` belongs {}; ", homes.join(" or ")));
    }
    fix.push_str(&format!("valid keys {place}: {}", valid.join(", ")));
    (format!("unknown key `{key}` {place}"), fix)
}

/// A key set twice in one table, or a table header written twice.
fn duplicate(site: &Site) -> (String, String) {
    let name = site.at_text.trim().trim_matches(['[', ']', ' ']);
    if site.header {
        return (
            format!("table [{name}] is written twice"),
            format!("merge the two [{name}] tables into one: a table is written once ([[{name}]] starts each entry of an array of tables)"),
        );
    }
    (
        format!("duplicate key `{name}`: it is already set in this table"),
        format!("remove one of the two `{name}` lines: a key is set once per table"),
    )
}

/// "invalid type: integer `3`, expected a string", "invalid value: integer `-1`, expected
/// u32": the expected form in spec terms, and a fix with an example of it.
fn wrong_value(msg: &str, site: &Site) -> Option<(String, String)> {
    let (head, expected) = msg.split_once(", expected ")?;
    if !(head.starts_with("invalid type: ") || head.starts_with("invalid value: ")) {
        return None;
    }
    // An integer past i64 comes as "invalid type: integer `…` as i128".
    let head = match head.strip_suffix(" as i128") {
        Some(h) => h.replacen("invalid type", "invalid value", 1),
        None => head.to_owned(),
    };
    let expected = match expected {
        "u32" => "a whole number from 0 to 4294967295",
        "f64" => "a number",
        "a sequence" => "an array",
        "a map" => "a table",
        e if e.starts_with("struct ") => "a table",
        e => e,
    };
    let fix = match (example(expected, site), site.key) {
        (Some(ex), Some(key)) => format!("write {key} = {ex}"),
        (Some(ex), None) => format!("write {ex} here"),
        (None, Some(key)) => {
            format!("`{key}` takes {expected} (docs/src/spec.md lists every key's form)")
        }
        (None, None) => format!("write {expected} here (docs/src/spec.md lists every key's form)"),
    };
    Some((format!("{head}, expected {expected}"), fix))
}

/// A value of the `expected` form for the site's key, one the validator accepts.
fn example(expected: &str, site: &Site) -> Option<String> {
    let key = site.key.unwrap_or("");
    let scalar = !site.at_text.starts_with(['[', '{']) && !site.at_text.contains('\n');
    Some(match expected {
        e if e.starts_with("a duration") => "\"30s\"".into(),
        "a boolean" => "true".into(),
        e if e.starts_with("a whole number") => match key {
            "min-runs" => "6",
            _ => "1",
        }
        .into(),
        "a number" => match key {
            "numeric-abs" => "1e-9",
            "max-regression" => "0.05",
            _ => "0.01",
        }
        .into(),
        "a string" if scalar => {
            let t = site.at_text.trim_matches(['"', '\'']);
            match t.contains(['"', '\\']) {
                true => crate::util::toml_string(t),
                false => format!("\"{t}\""),
            }
        }
        "an array" if scalar => format!("[{}]", site.at_text),
        "a table" => match key {
            "budget" => "{ time = \"10ms\" }",
            "expect" => "{ numeric = 0.01 }",
            "env" => "{ NAME = \"value\" }",
            "matrix" => "{ n = [\"1\", \"2\"] }",
            _ => return None,
        }
        .into(),
        _ => return None,
    })
}

/// An error in the TOML syntax itself.
fn syntax(msg: &str, site: &Site) -> (String, String) {
    if let Some(c) = site
        .here
        .filter(|c| c.is_control() && !matches!(c, '\t' | '\n' | '\r'))
    {
        return (
            format!("{msg}: the control character U+{:04X} cannot be written in a TOML file", c as u32),
            "remove it (in a \"…\" string a control character is written as an escape such as \\u001b; a NUL can be in no argument, environment value or path)".into(),
        );
    }
    let fix = if msg.starts_with("invalid basic string")
        || msg.starts_with("invalid literal string")
    {
        "close the string on the same line with the quote it opened with (a string over several lines is written \"\"\"…\"\"\")".into()
    } else if msg.starts_with("unclosed table") || msg.starts_with("unclosed array of tables") {
        "close the table header with `]` (`]]` for [[workload]])".into()
    } else if msg.contains("overflowed") || msg.contains("out of range") {
        match site.key {
            Some(key) => format!(
                "write a smaller number, e.g. {key} = {}",
                example("a number", site).unwrap_or_default()
            ),
            None => "write a smaller number".into(),
        }
    } else {
        "correct the TOML syntax here (https://toml.io/en/v1.0.0 describes it)".into()
    };
    (msg.to_owned(), fix)
}
