//! What the report's renderings share: the text of an estimate, of the shipped choice's
//! speedup and settings, the portable alternative's hint, long names shortened. The
//! terminal ladder, the Markdown and the HTML page all take them from here.

use super::{FinalChoice, Report, Settings, Status};
use crate::bench::Estimate;
use crate::stages::{label_of, Changes};

/// Stages kept on top of a cpu candidate are missing from the portable alternative: say
/// which, and how to get a portable build with them.
pub(crate) fn portable_hint(report: &Report) -> Option<String> {
    let cpu = label_of(Changes::TargetCpu);
    let on_cpu: Vec<&str> = report
        .stages
        .iter()
        .filter(|st| st.status == Status::Kept && st.name != cpu)
        .filter(|st| {
            st.settings
                .as_ref()
                .is_some_and(|v| v.target_cpu().is_some())
        })
        .map(|st| st.name.as_str())
        // A stage whose own portable variant was kept needs no hint (pgo (portable)).
        .filter(|n| {
            report
                .final_
                .as_ref()
                .and_then(|f| f.portable.as_ref())
                .is_none_or(|p| p.stage != *n)
        })
        .collect();
    if on_cpu.is_empty() {
        return None;
    }
    let mut without_cpu: Vec<&str> = Vec::new();
    for st in &report.stages {
        let n = st.name.as_str();
        if n != label_of(Changes::Nothing) && n != cpu && !without_cpu.contains(&n) {
            without_cpu.push(n);
        }
    }
    Some(format!(
        "({} built on the cpu candidate; for a portable build with {}: cargo optimize --stages {})",
        on_cpu.join(" and "),
        if on_cpu.len() == 1 { "it" } else { "them" },
        without_cpu.join(",")
    ))
}

/// `time ratio 0.750 [0.726, 0.774] vs the baseline, measured directly on fresh pairs at
/// the final gate (when chosen: 0.731 [0.700, 0.763])`: the one wording of a ratio (below 1
/// is faster), as the rows and the workloads say it, and the comparison it rests on: the
/// final gate's direct one with the baseline, on pairs that did not choose it (a report of
/// an earlier version without `at_selection`: `measured directly` alone).
pub(crate) fn speedup_line(f: &FinalChoice) -> String {
    match (f.speedup_vs_baseline, f.speedup_ci) {
        (Some(x), Some((lo, hi))) => {
            let line = format!(
                "time ratio {:.3} [{:.3}, {:.3}] vs the baseline, measured directly",
                1.0 / x,
                1.0 / hi,
                1.0 / lo
            );
            match &f.at_selection {
                Some(e) => format!(
                    "{line} on fresh pairs at the final gate (when chosen: {:.3} [{:.3}, {:.3}])",
                    e.ratio, e.ci_low, e.ci_high
                ),
                None => line,
            }
        }
        _ if f.stage == "baseline" => {
            "no stage was measurably faster than the baseline: keep building as you do".into()
        }
        _ => "not measured against the baseline".into(),
    }
}

/// `--profile release + lto = "fat", codegen-units = 1; rustflags: -Ctarget-cpu=native`.
pub(crate) fn settings_line(v: &Settings) -> String {
    let mut out = format!("--profile {}", v.profile);
    if !v.profile_overrides.is_empty() {
        let list: Vec<String> = v
            .profile_overrides
            .iter()
            .map(|(k, v)| format!("{k} = {v}"))
            .collect();
        out.push_str(&format!(" + {}", list.join(", ")));
    }
    if !v.stage_rustflags.is_empty() {
        out.push_str(&format!("; rustflags: {}", v.stage_rustflags.join(" ")));
    }
    if let Some(a) = &v.allocator {
        out.push_str(&format!("; global allocator: {a}"));
    }
    if let Some(c) = &v.c {
        out.push_str(&format!("; C/C++ compiled by {}", c.cc.display()));
        if !c.flags.is_empty() {
            out.push_str(&format!(" with {}", c.flags.join(" ")));
        }
    }
    out
}

/// `name` cut to at most `max` characters, the middle replaced by `…`.
pub(crate) fn short_name(name: &str, max: usize) -> String {
    let n = name.chars().count();
    if n <= max {
        return name.to_string();
    }
    let keep = max.saturating_sub(1);
    let head: String = name.chars().take(keep / 2).collect();
    let tail: String = name.chars().skip(n - (keep - keep / 2)).collect();
    format!("{head}…{tail}")
}

/// `0.902 [0.855, 0.953] faster`, or `-`.
pub(crate) fn estimate_cell(e: Option<&Estimate>) -> String {
    match e {
        Some(e) => format!(
            "{:.3} [{:.3}, {:.3}] {}",
            e.ratio, e.ci_low, e.ci_high, e.verdict
        ),
        None => "-".into(),
    }
}

pub(crate) use crate::util::wrap;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrap_keeps_short_lines_and_indents_continuations() {
        assert_eq!(wrap("  short", 80), "  short");
        assert_eq!(
            wrap("  settings: --profile release; rustflags: -Ca -Cb -Cc", 30),
            "  settings: --profile release;\n    rustflags: -Ca -Cb -Cc"
        );
        assert_eq!(
            wrap("      └ vs baseline: faster on 1 of 4 workloads", 30),
            "      └ vs baseline: faster on\n        1 of 4 workloads"
        );
        assert_eq!(wrap("x an-overly-long-word", 5), "x\n  an-overly-long-word");
    }

    /// A confirmed ratio says so, with the ratio at the choice beside it.
    #[test]
    fn the_ship_line_shows_the_ratio_at_the_choice_beside_the_confirmed_one() {
        let mut f = FinalChoice {
            stage: "pgo".into(),
            binary: "bin/pgo".into(),
            speedup_vs_baseline: Some(1.0 / 0.8),
            speedup_ci: Some((1.0 / 0.82, 1.0 / 0.78)),
            at_selection: None,
            variant: None,
            settings: None,
            portable: None,
        };
        assert_eq!(
            speedup_line(&f),
            "time ratio 0.800 [0.780, 0.820] vs the baseline, measured directly"
        );
        f.at_selection = Some(crate::bench::Estimate {
            ratio: 0.76,
            ci_low: 0.7,
            ci_high: 0.83,
            verdict: crate::bench::Verdict::Faster,
            confidence: 0.95,
        });
        assert_eq!(
            speedup_line(&f),
            "time ratio 0.800 [0.780, 0.820] vs the baseline, measured directly on fresh pairs at the final gate (when chosen: 0.760 [0.700, 0.830])"
        );
    }
}
