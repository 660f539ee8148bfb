//! Renderings of a [`CheckReport`], one module per format behind the one render trait
//! ([`crate::render::Render`], [`Format`]): `terminal`
//! (the default), `markdown` (a PR comment or `$GITHUB_STEP_SUMMARY`), `github` (workflow
//! command annotations: `::error`, `::warning`, `::notice`) and JSON (`check.json`).
//!
//! Must not: measure, decide or read anything but the report; the same report renders to
//! the same text every time.

mod github;
mod markdown;
mod terminal;

use super::gate::Judgement;
use super::report::{format_ratio, CheckReport, Ratio};
use crate::render::Render;

/// `check --format`, and what renders each.
pub(crate) use crate::render::CheckFormat as Format;

impl Format {
    pub fn renderer(self) -> Box<dyn Render<CheckReport>> {
        match self {
            Format::Term => Box::new(terminal::Terminal),
            Format::Json => Box::new(crate::render::Json),
            Format::Markdown => Box::new(markdown::Markdown),
            Format::Github => Box::new(github::Github),
        }
    }
}

/// `1.243× [1.201, 1.287] slower`, or why there is no ratio.
fn ratio_text(r: Option<&Ratio>) -> String {
    match r {
        Some(r) => format!(
            "{} [{:.3}, {:.3}] {}",
            format_ratio(r.ratio),
            r.ci_low,
            r.ci_high,
            r.verdict
        ),
        None => "not compared".into(),
    }
}

/// What the comparison was, in one sentence.
/// `31.7 ms [30.3 ms, 33.1 ms]`: the new build's mean time with its interval, or `–`.
fn time_text(t: Option<&super::gate::Mean>) -> String {
    use crate::bench::export::format_secs;
    t.map(|t| {
        format!(
            "{} [{}, {}]",
            format_secs(t.mean),
            format_secs(t.ci_low),
            format_secs(t.ci_high)
        )
    })
    .unwrap_or_else(|| "–".into())
}

fn against_text(r: &CheckReport) -> String {
    let a = &r.against;
    let commit = a
        .commit
        .as_deref()
        .map(|c| format!(" ({})", crate::util::clip(c, 12)))
        .unwrap_or_default();
    match a.kind.as_str() {
        "none" => "the working tree alone (budgets only: nothing to compare with)".into(),
        _ if a.byte_identical => format!(
            "the working tree vs {} `{}`{commit}: byte-identical binaries, so no regression is possible and nothing was compared",
            a.kind, a.name
        ),
        _ if a.paired => format!(
            "the working tree vs {} `{}`{commit}, old and new binaries run interleaved here",
            a.kind, a.name
        ),
        _ => format!(
            "the working tree vs the saved statistics of {} `{}`{commit} (unpaired: weaker than an interleaved comparison)",
            a.kind, a.name
        ),
    }
}

/// A workload's judgement for a table cell.
fn judgement_text(w: &super::report::WorkloadCheck) -> String {
    if w.judgement == Some(Judgement::ByteIdentical) {
        let how = if w.time.is_some() {
            "timed alone"
        } else {
            "not measured"
        };
        return format!("byte-identical: {how}");
    }
    if w.output_changed.is_some() && !w.timed_anyway {
        return "output changed".into();
    }
    let j = w.judgement.map(Judgement::as_str).unwrap_or("–");
    if w.output_changed.is_some() {
        format!("{j} (output changed)")
    } else {
        j.to_string()
    }
}

#[cfg(test)]
pub(crate) mod fixture {
    use super::super::gate::{Judgement, LimitOutcome, Mean};
    use super::super::report::*;
    use crate::bench::Verdict;

    fn mean(m: f64) -> Mean {
        Mean {
            mean: m,
            ci_low: m * 0.98,
            ci_high: m * 1.02,
            n: 20,
        }
    }

    /// A check with one regression, one budget miss, one changed output and one pass.
    pub(crate) fn report() -> CheckReport {
        let w = |name: &str| WorkloadCheck {
            name: name.into(),
            ratio: None,
            judgement: None,
            time: None,
            runs_secs: vec![],
            old_time: None,
            cpu_time: None,
            peak_rss: None,
            limits: vec![],
            output_changed: None,
            timed_anyway: false,
        };
        let ratio = |r: f64, v| Ratio {
            estimate: crate::bench::Estimate {
                ratio: r,
                ci_low: r - 0.05,
                ci_high: r + 0.05,
                verdict: v,
                confidence: 0.95,
            },
            n: 20,
        };
        let mut hot = w("hot");
        hot.ratio = Some(ratio(2.5, Verdict::Slower));
        hot.judgement = Some(Judgement::Regression);
        hot.time = Some(mean(0.030));
        hot.old_time = Some(mean(0.012));
        hot.limits = vec![LimitOutcome::new("time", 0.010, &[0.030, 0.031, 0.029], 9)];
        let mut cold = w("cold");
        cold.ratio = Some(ratio(1.0, Verdict::Equivalent));
        cold.judgement = Some(Judgement::NoRegression);
        cold.time = Some(mean(0.002));
        cold.old_time = Some(mean(0.002));
        let mut text = w("text");
        text.output_changed =
            Some("stdout differs at line 1:\n    baseline:  42\n    candidate: 43".into());
        let mut r = CheckReport {
            schema: SCHEMA,
            tool_version: "0.1.0".into(),
            crate_name: "demo".into(),
            bin: "demo".into(),
            spec: "optimize.toml".into(),
            against: Against {
                kind: "revision".into(),
                name: "HEAD~1".into(),
                commit: Some("0123456789abcdef0123456789abcdef01234567".into()),
                paired: true,
                byte_identical: false,
                notes: vec![],
            },
            max_regression: 0.05,
            workloads: vec![hot, cold, text],
            binary_size: SizeCheck {
                new_bytes: 400 << 10,
                old_bytes: Some(390 << 10),
                limit: Some(1 << 20),
                line: 3,
                over: false,
            },
            overall: Some(ratio(1.58, Verdict::Slower)),
            failures: vec![],
            exit_code: 1,
            saved_baseline: None,
            seconds: 12.0,
        };
        r.failures = r.list_failures();
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The fixture's revision with the same bytes: every workload `byte-identical`, the
    /// first timed alone (a budget), the rest not measured.
    pub(crate) fn identical() -> CheckReport {
        let mut r = fixture::report();
        r.against.byte_identical = true;
        r.overall = None;
        for w in &mut r.workloads {
            w.ratio = None;
            w.judgement = Some(Judgement::ByteIdentical);
            w.old_time = None;
            w.output_changed = None;
            if w.name != "hot" {
                w.time = None;
                w.limits.clear();
            }
        }
        r.workloads[0].limits[0].limit = 1.0;
        r.workloads[0].limits[0].over = false;
        r.failures = r.list_failures();
        r.exit_code = super::super::gate::exit_code(r.failures.len());
        r
    }

    #[test]
    fn byte_identical_binaries_say_so_in_every_format() {
        let r = identical();
        assert!(r.failures.is_empty(), "{:?}", r.failures);
        let json = Format::Json.renderer().render(&r);
        assert!(json.contains("\"byte_identical\": true"), "{json}");
        assert!(json.contains("\"judgement\": \"byte-identical\""), "{json}");
        let back: CheckReport = serde_json::from_str(&json).unwrap();
        assert_eq!(back, r);
        let term = Format::Term.renderer().render(&r);
        let line = |text: &str, start: &str| {
            text.lines()
                .find(|l| l.starts_with(start))
                .unwrap_or_else(|| panic!("{text}"))
                .to_string()
        };
        assert!(
            line(&term, "cold ").contains("byte-identical: not measured"),
            "{term}"
        );
        assert!(
            line(&term, "hot ").contains("byte-identical: timed alone"),
            "{term}"
        );
        assert!(
            term.contains("byte-identical binaries, so no regression is possible"),
            "{term}"
        );
        assert!(
            term.ends_with("PASS\n") && !term.contains("geometric mean"),
            "{term}"
        );
        let md = Format::Markdown.renderer().render(&r);
        assert!(md.starts_with("## cargo optimize check: ✅ passed"), "{md}");
        assert!(
            line(&md, "| `cold`").contains("| byte-identical: not measured |"),
            "{md}"
        );
        let gh = Format::Github.renderer().render(&r);
        assert_eq!(gh.lines().count(), 1, "{gh}");
        assert!(
            gh.starts_with("::notice title=cargo optimize check::passed: ")
                && gh.contains("byte-identical binaries"),
            "{gh}"
        );
    }

    #[test]
    fn a_baseline_commit_with_a_multibyte_character_at_the_cut_does_not_panic() {
        let mut r = fixture::report();
        r.against.commit = Some("0123456789aé-and-more".into());
        assert!(
            against_text(&r).contains("(0123456789a)"),
            "{}",
            against_text(&r)
        );
    }

    #[test]
    fn json_round_trips() {
        let r = fixture::report();
        let text = Format::Json.renderer().render(&r);
        let back: CheckReport = serde_json::from_str(&text).unwrap();
        assert_eq!(back, r);
    }

    #[test]
    fn failures_name_each_workload_and_what_failed() {
        let f = fixture::report().failures;
        assert_eq!(f.len(), 3, "{f:#?}");
        assert!(
            f[0].starts_with("workload `hot`: regression: new/old = 2.500× [2.450, 2.550]"),
            "{}",
            f[0]
        );
        assert!(f[0].ends_with("above the 5 % allowed"), "{}", f[0]);
        assert!(
            f[1].starts_with("workload `hot`: time budget exceeded: mean 30.0 ms"),
            "{}",
            f[1]
        );
        assert!(
            f[1].ends_with("> budget 10.0 ms (optimize.toml:9)"),
            "{}",
            f[1]
        );
        assert!(
            f[2].starts_with("workload `text`: output changed: stdout differs"),
            "{}",
            f[2]
        );
    }
}
