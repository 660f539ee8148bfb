//! `cargo optimize hotspots` as text, behind the one render trait ([`Format`]): a terminal
//! table, GitHub-flavoured Markdown, or the [`View`] as JSON. Deterministic: the same view
//! gives the same bytes.

use std::fmt::Write as _;

use super::{FunctionGroup, View};
use crate::render::{markdown_cell as cell, markdown_code as code, Json, Render};
use crate::report::hotspots::{calls_cell, CALLS_UNKNOWN};

/// `hotspots --format`, and what renders each.
pub(crate) use crate::render::HotspotsFormat as Format;

impl Format {
    pub fn renderer(self) -> Box<dyn Render<View>> {
        match self {
            Format::Term => Box::new(Term),
            Format::Json => Box::new(Json),
            Format::Markdown => Box::new(HotspotsMarkdown),
        }
    }
}

struct Term;

impl Render<View> for Term {
    fn render(&self, v: &View) -> String {
        term(v)
    }
}

struct HotspotsMarkdown;

impl Render<View> for HotspotsMarkdown {
    fn render(&self, v: &View) -> String {
        markdown(v)
    }
}

/// `41.3 %`.
pub(crate) fn percent(share: f64) -> String {
    format!("{:.1} %", share * 100.0)
}

fn summary(v: &View) -> String {
    let r = &v.ranking;
    let c = match r.c_counts {
        0 => String::new(),
        n => format!(
            " C/C++ (trained with the Rust code) holds {} of the counts.",
            percent(super::share(n, r.total_counts))
        ),
    };
    format!(
        "{} counts in all; {} of {} functions ran.{c} A share is of the profile's counters summed (work done in the train workloads, not time).",
        r.total_counts, r.functions_with_counts, r.functions_in_profile
    )
}

/// The terminal table: the hottest functions, then by crate and by module.
fn term(v: &View) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "hotspots of run {} ({} profile {})\n{}\n",
        v.run_id,
        v.row,
        v.profile.display(),
        summary(v)
    );
    functions_term(&mut s, v);
    groups_term(&mut s, "crate", &v.ranking.crates);
    groups_term(&mut s, "module", &v.ranking.modules);
    if let Some(svg) = &v.flamegraph {
        let _ = writeln!(s, "\nflamegraph: {}", svg.display());
    }
    s
}

/// The ranked functions, a row each (the calls column only when some are known).
fn functions_term(s: &mut String, v: &View) {
    let functions = &v.ranking.functions;
    if functions.is_empty() {
        let _ = writeln!(s, "no function has counts: the train workloads did no work");
        return;
    }
    let crate_w = functions
        .iter()
        .map(|f| f.crate_name.chars().count())
        .max()
        .unwrap_or(0)
        .max(5);
    let calls = |c: String| {
        if any_calls(v) {
            format!("{c:>12}  ")
        } else {
            String::new()
        }
    };
    let _ = writeln!(
        s,
        "{:>3}  {:>7}  {:>7}  {}{:<crate_w$}  function",
        "#",
        "share",
        "cumul.",
        calls("calls".into()),
        "crate"
    );
    for f in functions {
        let _ = writeln!(
            s,
            "{:>3}  {:>7}  {:>7}  {}{:<crate_w$}  {}",
            f.rank,
            percent(f.share),
            percent(f.cumulative),
            calls(calls_cell(f.entries)),
            f.crate_name,
            f.name
        );
    }
    if calls_unknown(v) {
        let _ = writeln!(s, "({CALLS_UNKNOWN})");
    }
}

fn calls_unknown(v: &View) -> bool {
    v.ranking.functions.iter().any(|f| f.entries.is_none())
}

/// Whether any listed function's calls are known (else the column is left out).
fn any_calls(v: &View) -> bool {
    v.ranking.functions.iter().any(|f| f.entries.is_some())
}

fn groups_term(s: &mut String, what: &str, groups: &[FunctionGroup]) {
    let _ = writeln!(s, "\nby {what}:");
    for g in groups {
        let _ = writeln!(
            s,
            "  {:>7}  {:>5} function{}  {}",
            percent(g.share),
            g.functions,
            if g.functions == 1 { " " } else { "s" },
            g.name
        );
    }
}

/// GitHub-flavoured Markdown: the tables of [`term`].
fn markdown(v: &View) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "### Hotspots of run `{}`\n\nFrom the {} profile `{}`: {}\n",
        code(&v.run_id),
        cell(&v.row),
        code(&v.profile.display().to_string()),
        cell(&summary(v))
    );
    let r = &v.ranking;
    if !r.functions.is_empty() {
        let (head, rule) = if any_calls(v) {
            (" calls |", "---:|")
        } else {
            ("", "")
        };
        let _ = writeln!(
            s,
            "| # | function | crate | share | cumulative |{head}\n|---:|---|---|---:|---:|{rule}"
        );
        for f in &r.functions {
            let calls = if any_calls(v) {
                format!(" {} |", calls_cell(f.entries))
            } else {
                String::new()
            };
            let _ = writeln!(
                s,
                "| {} | `{}` | {} | {} | {} |{calls}",
                f.rank,
                code(&f.name),
                cell(&f.crate_name),
                percent(f.share),
                percent(f.cumulative),
            );
        }
        if calls_unknown(v) {
            let _ = writeln!(s, "\n{}", cell(&format!("({CALLS_UNKNOWN})")));
        }
    }
    groups_md(&mut s, "crate", &r.crates);
    groups_md(&mut s, "module", &r.modules);
    if let Some(svg) = &v.flamegraph {
        let _ = writeln!(s, "\nFlamegraph: `{}`", code(&svg.display().to_string()));
    }
    s
}

fn groups_md(s: &mut String, what: &str, groups: &[FunctionGroup]) {
    if groups.is_empty() {
        return;
    }
    let _ = writeln!(
        s,
        "\n**By {what}**\n\n| {what} | share | functions |\n|---|---:|---:|"
    );
    for g in groups {
        let _ = writeln!(
            s,
            "| `{}` | {} | {} |",
            code(&g.name),
            percent(g.share),
            g.functions
        );
    }
}

#[cfg(test)]
mod tests {
    use super::super::{rank, tests::sample, View};
    use super::*;

    fn view() -> View {
        View {
            run_id: "r1".into(),
            row: "pgo".into(),
            profile: "/c/p.profdata".into(),
            ranking: rank(&sample(), 2, 2),
            flamegraph: None,
        }
    }

    #[test]
    fn the_terminal_table() {
        assert_eq!(
            term(&view()),
            "hotspots of run r1 (pgo profile /c/p.profdata)
1000 counts in all; 5 of 7 functions ran. A share is of the profile's counters summed (work done in the train workloads, not time).

  #    share   cumul.         calls  crate  function
  1   60.0 %   60.0 %             1  hot    hot::Vm::run
  2   25.0 %   85.0 %             3  hot    hot::parse

by crate:
   90.0 %      3 functions  hot
   10.0 %      1 function   core

by module:
   85.0 %      2 functions  hot
   10.0 %      1 function   core::fmt
"
        );
    }

    #[test]
    fn the_markdown_tables() {
        let mut v = view();
        v.flamegraph = Some("/run/hotspots/eval.svg".into());
        assert_eq!(
            markdown(&v),
            "### Hotspots of run `r1`

From the pgo profile `/c/p.profdata`: 1000 counts in all; 5 of 7 functions ran. A share is of the profile's counters summed (work done in the train workloads, not time).

| # | function | crate | share | cumulative | calls |
|---:|---|---|---:|---:|---:|
| 1 | `hot::Vm::run` | hot | 60.0 % | 60.0 % | 1 |
| 2 | `hot::parse` | hot | 25.0 % | 85.0 % | 3 |

**By crate**

| crate | share | functions |
|---|---:|---:|
| `hot` | 90.0 % | 3 |
| `core` | 10.0 % | 1 |

**By module**

| module | share | functions |
|---|---:|---:|
| `hot` | 85.0 % | 2 |
| `core::fmt` | 10.0 % | 1 |

Flamegraph: `/run/hotspots/eval.svg`
"
        );
    }

    #[test]
    fn without_counted_calls_the_column_is_left_out_and_said_why() {
        let mut v = view();
        for f in &mut v.ranking.functions {
            f.entries = None;
        }
        let t = term(&v);
        assert!(t.contains("\n  #    share   cumul.  crate  function\n  1   60.0 %   60.0 %  hot    hot::Vm::run\n"), "{t}");
        assert!(
            t.contains("(calls are not shown where the profile does not count them"),
            "{t}"
        );
        let md = markdown(&v);
        assert!(md.contains("| # | function | crate | share | cumulative |\n|---:|---|---|---:|---:|\n| 1 | `hot::Vm::run` | hot | 60.0 % | 60.0 % |\n"), "{md}");
    }

    #[test]
    fn json_reads_back_as_the_view() {
        let v = view();
        let back: View = serde_json::from_str(&Json.render(&v)).unwrap();
        assert_eq!(back, v);
        let value: serde_json::Value = serde_json::from_str(&Json.render(&v)).unwrap();
        assert_eq!(value["functions"][0]["name"], "hot::Vm::run");
        assert_eq!(value["functions"][0]["crate"], "hot");
    }
}
