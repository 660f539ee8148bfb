//! What the renderings say about each row's workloads and about what ships: how many
//! workloads a measured row was faster or slower on, the noise warnings of its comparisons,
//! and for the shipped candidate against the baseline the median time of each workload and
//! the resources it used (user and system time, peak RSS, hardware counters), old → new.

use super::{FinalChoice, Report, StageReport};
use crate::bench::{Comparison, Verdict};
use crate::util::{format_secs, human_bytes};

/// The comparisons of a row against its rival, per workload.
pub(crate) fn of_row<'r>(report: &'r Report, row: &StageReport) -> Vec<(&'r str, &'r Comparison)> {
    let Some(tag) = row.tag() else {
        return Vec::new();
    };
    keyed(report, &tag)
}

fn keyed<'r>(report: &'r Report, key: &str) -> Vec<(&'r str, &'r Comparison)> {
    report
        .workloads
        .iter()
        .filter_map(|w| Some((w.name.as_str(), w.per_stage.get(key)?)))
        .collect()
}

/// The shipped candidate's comparisons against the baseline: measured at the end
/// (`<tag> vs baseline`), or its own row's when its rival was the baseline.
pub(crate) fn against_baseline<'r>(
    report: &'r Report,
    f: &FinalChoice,
) -> Vec<(&'r str, &'r Comparison)> {
    let Some(tag) = super::binary_tag(&f.binary) else {
        return Vec::new();
    };
    let last = keyed(report, &format!("{tag} vs baseline"));
    if !last.is_empty() {
        return last;
    }
    let row = report
        .stages
        .iter()
        .rev()
        .find(|r| r.binary.as_deref() == Some(f.binary.as_str()));
    match row {
        Some(r) if r.rival().as_deref() == Some("baseline") => keyed(report, &tag),
        _ => Vec::new(),
    }
}

/// Why the shipped candidate's interval is as wide as it is when its confirmation's ratio
/// drifted while it was measured (`bench::drift`): the workload whose consecutive batches
/// spread the most, their ratios in time order (`infer 0.567 → 0.567 → 0.515 → 0.414`), and
/// how many others drifted; `None` when none did.
pub(crate) fn drift_line(comps: &[(&str, &Comparison)]) -> Option<String> {
    let drifted: Vec<(&str, &[f64])> = comps
        .iter()
        .filter_map(|(name, c)| Some((*name, c.drift.as_deref()?)))
        .collect();
    let spread = |b: &[f64]| {
        let logs = b.iter().map(|r| r.ln());
        logs.clone().fold(f64::MIN, f64::max) - logs.fold(f64::MAX, f64::min)
    };
    let (name, batches) = drifted
        .iter()
        .max_by(|x, y| spread(x.1).total_cmp(&spread(y.1)))?;
    let path: Vec<String> = batches.iter().map(|r| format!("{r:.3}")).collect();
    let others = match drifted.len() - 1 {
        0 => String::new(),
        n => format!(", and {n} other workload(s) drifted too"),
    };
    Some(format!(
        "the interval counts how the ratio drifted while it was measured: {name} {} over consecutive quarters of its pairs{others} (a quieter machine narrows it)",
        path.join(" → ")
    ))
}

/// `surely slower on 1 of 2 workloads: decode time ratio 2.160 [2.101, 2.220] (the
/// geometric mean is faster; [bench] max-slowdown-per-workload refuses such a candidate)`:
/// the workloads whose whole interval lies above 1 in what ships' comparisons with the
/// baseline, the slowest first; `None` when none is.
pub(crate) fn slower_line(comps: &[(&str, &Comparison)]) -> Option<String> {
    let mut slower: Vec<&(&str, &Comparison)> = (comps.iter())
        .filter(|(_, c)| c.estimate.ci_low > 1.0)
        .collect();
    if slower.is_empty() {
        return None;
    }
    slower.sort_by(|x, y| y.1.estimate.ratio.total_cmp(&x.1.estimate.ratio));
    let named: Vec<String> = (slower.iter())
        .map(|(w, c)| {
            let e = &c.estimate;
            format!(
                "{w} time ratio {:.3} [{:.3}, {:.3}]",
                e.ratio, e.ci_low, e.ci_high
            )
        })
        .collect();
    Some(format!(
        "surely slower on {} of {} workload{}: {} (the geometric mean is faster; [bench] max-slowdown-per-workload refuses such a candidate)",
        slower.len(),
        comps.len(),
        if comps.len() == 1 { "" } else { "s" },
        named.join(", ")
    ))
}

/// `faster on 1 of 4 workloads (infer), none slower`; `None` without comparisons.
pub(crate) fn tally(comps: &[(&str, &Comparison)]) -> Option<String> {
    if comps.is_empty() {
        return None;
    }
    let named = |v: Verdict| -> Vec<&str> {
        comps
            .iter()
            .filter(|(_, c)| c.estimate.verdict == v)
            .map(|(w, _)| *w)
            .collect()
    };
    let (faster, slower) = (named(Verdict::Faster), named(Verdict::Slower));
    let n = comps.len();
    let which = |names: &[&str]| {
        if names.is_empty() || names.len() == n {
            String::new()
        } else {
            format!(" ({})", names.join(", "))
        }
    };
    let slower = if slower.is_empty() {
        "none slower".to_string()
    } else {
        format!("slower on {}{}", slower.len(), which(&slower))
    };
    Some(format!(
        "faster on {} of {n} workload{}{}, {slower}",
        faster.len(),
        if n == 1 { "" } else { "s" },
        which(&faster)
    ))
}

/// `too noisy to decide on 2 of 4 workloads (tokenize, infer): run-to-run variation up to
/// 40.7 %, up to 25 % of the pairs outliers`: the comparisons with a noise warning, in one
/// line; `None` when none has one.
pub(crate) fn noise(comps: &[(&str, &Comparison)]) -> Option<String> {
    let noisy: Vec<_> = comps
        .iter()
        .filter(|(_, c)| c.noise_warning.is_some())
        .collect();
    if noisy.is_empty() {
        return None;
    }
    let names: Vec<&str> = noisy.iter().map(|(w, _)| *w).collect();
    let cv = noisy
        .iter()
        .flat_map(|(_, c)| [c.cv_a, c.cv_b])
        .filter(|v| v.is_finite())
        .fold(0.0f64, f64::max);
    let outliers = noisy
        .iter()
        .map(|(_, c)| f64::from(c.outliers.pairs) / f64::from(c.n.max(1)))
        .fold(0.0f64, f64::max);
    let mut line = format!(
        "too noisy to decide on {} of {} workload{} ({}): run-to-run variation up to {:.1} %",
        noisy.len(),
        comps.len(),
        if comps.len() == 1 { "" } else { "s" },
        names.join(", "),
        cv * 100.0
    );
    if outliers > 0.0 {
        line.push_str(&format!(
            ", up to {:.0} % of the pairs outliers",
            outliers * 100.0
        ));
    }
    Some(line)
}

/// One resource of the shipped candidate against the baseline, over its workloads.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Resource {
    pub name: String,
    pub old: String,
    pub new: String,
    /// new / old.
    pub ratio: f64,
}

/// How a row's note about its resources begins (the alloc stage's trade: memory for time).
pub(crate) const RESOURCES_NOTE: &str = "resources: ";

/// How a row's notes about its C and C++ begin (the c-compiler and whole-program PGO rows,
/// a pgo row whose C got no profile): shown under the row in the terminal.
pub(crate) const C_NOTE: &str = "C/C++";

/// User and system time (the sum of each workload's median), peak RSS (the largest
/// median), and each hardware counter (the sum of medians) measured on every workload.
pub(crate) fn resources(comps: &[(&str, &Comparison)]) -> Vec<Resource> {
    if comps.is_empty() {
        return Vec::new();
    }
    let sum = |f: &dyn Fn(&Comparison) -> (f64, f64)| {
        comps.iter().fold((0.0, 0.0), |(a, b), (_, c)| {
            let (x, y) = f(c);
            (a + x, b + y)
        })
    };
    let mut out = Vec::new();
    let mut push = |name: &str, (old, new): (f64, f64), fmt: &dyn Fn(f64) -> String| {
        if old.is_finite() && new.is_finite() && old > 0.0 {
            out.push(Resource {
                name: name.to_string(),
                old: fmt(old),
                new: fmt(new),
                ratio: new / old,
            });
        }
    };
    push(
        "user time",
        sum(&|c| (c.user.a.median, c.user.b.median)),
        &format_secs,
    );
    push(
        "system time",
        sum(&|c| (c.sys.a.median, c.sys.b.median)),
        &format_secs,
    );
    let rss = comps.iter().fold((0.0f64, 0.0f64), |(a, b), (_, c)| {
        (a.max(c.rss.a.median), b.max(c.rss.b.median))
    });
    push("peak RSS", rss, &|v| human_bytes(v as u64));
    let names: Vec<String> = comps[0]
        .1
        .counters
        .as_ref()
        .map(|s| s.counters.iter().map(|c| c.name.clone()).collect())
        .unwrap_or_default();
    for name in names {
        let all: Option<Vec<(f64, f64)>> = comps
            .iter()
            .map(|(_, c)| {
                let k = c
                    .counters
                    .as_ref()?
                    .counters
                    .iter()
                    .find(|k| k.name == name)?;
                Some((k.median_a, k.median_b))
            })
            .collect();
        if let Some(all) = all {
            let total = all.iter().fold((0.0, 0.0), |(a, b), (x, y)| (a + x, b + y));
            push(&name, total, &count);
        }
    }
    out
}

/// `1.23 G`, `456.7 M`, `12.3 k`.
fn count(v: f64) -> String {
    match v {
        v if v >= 1e9 => format!("{:.2} G", v / 1e9),
        v if v >= 1e6 => format!("{:.1} M", v / 1e6),
        v if v >= 1e3 => format!("{:.1} k", v / 1e3),
        v => format!("{v:.0}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The frozen demo report the renderings' tests read.
    fn demo_report() -> Report {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let text =
            std::fs::read_to_string(dir.join("tests/fixtures/reports/demo/report.json")).unwrap();
        serde_json::from_str(&text).unwrap()
    }

    /// Tally, noise and resources of the frozen demo report's shipped candidate, with
    /// counters added to its two comparisons: sums of medians, the largest RSS.
    #[test]
    fn the_shipped_candidate_against_the_baseline() {
        let mut r = demo_report();
        for (i, w) in r.workloads.iter_mut().enumerate() {
            if let Some(c) = w.per_stage.get_mut("pgo vs baseline") {
                c.counters = Some(crate::bench::counters::CounterSummary {
                    counters: vec![crate::bench::counters::CounterComparison {
                        name: "instructions".into(),
                        median_a: 1e9 * (i as f64 + 1.0),
                        median_b: 0.5e9 * (i as f64 + 1.0),
                        ratio: 0.5,
                    }],
                });
            }
        }
        let f = r.final_.clone().unwrap();
        let comps = against_baseline(&r, &f);
        assert_eq!(comps.len(), 2);
        assert_eq!(
            tally(&comps).as_deref(),
            Some("faster on 2 of 2 workloads, none slower")
        );
        assert_eq!(noise(&comps), None);
        let res = resources(&comps);
        let names: Vec<&str> = res.iter().map(|x| x.name.as_str()).collect();
        assert_eq!(
            names,
            ["user time", "system time", "peak RSS", "instructions"]
        );
        let ins = &res[3];
        // Workloads 2 and 3 of the report (indices 1, 2): 2e9 + 3e9 → 1e9 + 1.5e9.
        assert_eq!((ins.old.as_str(), ins.new.as_str()), ("5.00 G", "2.50 G"));
        assert!((ins.ratio - 0.5).abs() < 1e-12);
        assert_eq!(drift_line(&comps), None, "no batches: no drift said");
    }

    /// The workload whose batches spread the most is named, with the others counted.
    #[test]
    fn a_drifted_confirmation_names_the_workload_that_moved_most() {
        let mut r = demo_report();
        let drifts = [
            vec![0.95, 0.96, 0.94, 0.95],
            vec![0.567, 0.567, 0.515, 0.414],
        ];
        let keyed = r
            .workloads
            .iter_mut()
            .filter_map(|w| w.per_stage.get_mut("pgo vs baseline"));
        for (c, d) in keyed.zip(drifts) {
            c.drift = Some(d);
        }
        let f = r.final_.clone().unwrap();
        let comps = against_baseline(&r, &f);
        let line = drift_line(&comps).unwrap();
        let moved = comps[1].0;
        assert!(
            line.contains(&format!("{moved} 0.567 → 0.567 → 0.515 → 0.414 over")),
            "{line}"
        );
        assert!(
            line.contains("and 1 other workload(s) drifted too"),
            "{line}"
        );
    }

    /// Issue 61: a workload surely slower in what ships is named on the ship line with its
    /// ratio, even while the geometric mean is faster; none is, no line.
    #[test]
    fn a_workload_surely_slower_in_what_ships_is_named_with_its_ratio() {
        let mut r = demo_report();
        let f = r.final_.clone().unwrap();
        assert_eq!(slower_line(&against_baseline(&r, &f)), None);
        let c = (r.workloads.iter_mut())
            .filter_map(|w| w.per_stage.get_mut("pgo vs baseline"))
            .nth(1)
            .unwrap();
        c.estimate = crate::bench::Estimate {
            ratio: 2.16,
            ci_low: 2.1,
            ci_high: 2.22,
            verdict: Verdict::Slower,
            confidence: 0.95,
        };
        let comps = against_baseline(&r, &f);
        let line = slower_line(&comps).unwrap();
        let name = comps[1].0;
        assert!(
            line.starts_with(&format!(
                "surely slower on 1 of 2 workloads: {name} time ratio 2.160 [2.100, 2.220]"
            )),
            "{line}"
        );
        assert!(line.contains("max-slowdown-per-workload"), "{line}");
        let text = crate::report::terminal::ladder(&r, &crate::ui::Ui::plain(), 400);
        assert!(text.contains(&line), "{text}");
    }

    #[test]
    fn counts_are_short() {
        assert_eq!(count(1_234_000_000.0), "1.23 G");
        assert_eq!(count(4_560_000.0), "4.6 M");
        assert_eq!(count(999.0), "999");
    }
}
