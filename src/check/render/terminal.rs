//! The terminal rendering: one line per workload (ratio, judgement, new time, budgets),
//! the binary size, then PASS or FAIL with each failure.

use super::{against_text, judgement_text, ratio_text, time_text, Render};
use crate::check::report::CheckReport;
use crate::util::human_bytes;

pub(crate) struct Terminal;

impl Render<CheckReport> for Terminal {
    fn render(&self, r: &CheckReport) -> String {
        let mut out = format!(
            "check `{}` ({}): {}; max regression {:.0} %\n",
            r.bin,
            r.crate_name,
            against_text(r),
            r.max_regression * 100.0
        );
        for n in &r.against.notes {
            out.push_str(&format!("note: {n}\n"));
        }
        let width = r
            .workloads
            .iter()
            .map(|w| w.name.chars().count())
            .max()
            .unwrap_or(8)
            .max(8);
        let jw = r
            .workloads
            .iter()
            .map(|w| judgement_text(w).chars().count())
            .max()
            .unwrap_or(16)
            .max(16);
        out.push_str(&format!(
            "{:width$}  {:38}  {:jw$}  {}\n",
            "workload", "new/old [95% CI]", "judgement", "new time [95% CI]"
        ));
        for w in &r.workloads {
            let time = time_text(w.time.as_ref());
            out.push_str(&format!(
                "{:width$}  {:38}  {:jw$}  {}\n",
                w.name,
                ratio_text(w.ratio.as_ref()),
                judgement_text(w),
                time
            ));
            for b in &w.limits {
                out.push_str(&format!(
                    "{:width$}    budget {}: {}\n",
                    "",
                    b.kind,
                    b.describe()
                ));
            }
            if let Some(what) = &w.output_changed {
                out.push_str(&format!("{:width$}    output changed: {what}\n", ""));
            }
        }
        out.push_str(&size_line(r));
        out.push('\n');
        if let Some(o) = &r.overall {
            out.push_str(&format!("geometric mean: {}\n", ratio_text(Some(o))));
        }
        if let Some(name) = &r.saved_baseline {
            out.push_str(&format!("saved as baseline `{name}`\n"));
        }
        if r.failures.is_empty() {
            out.push_str("PASS\n");
        } else {
            out.push_str(&format!("FAIL ({}):\n", r.failures.len()));
            for f in &r.failures {
                out.push_str(&format!("  - {f}\n"));
            }
        }
        out
    }
}

/// `binary size 400.0 KiB (old 390.0 KiB, +2.6 %; limit 1.0 MiB)`.
pub(super) fn size_line(r: &CheckReport) -> String {
    let s = &r.binary_size;
    let mut parts = Vec::new();
    if let Some(old) = s.old_bytes {
        let pct = (s.new_bytes as f64 / old.max(1) as f64 - 1.0) * 100.0;
        parts.push(format!("old {}, {pct:+.1} %", human_bytes(old)));
    }
    if let Some(limit) = s.limit {
        parts.push(format!(
            "limit {}{}",
            human_bytes(limit),
            if s.over { ": OVER" } else { "" }
        ));
    }
    let extra = if parts.is_empty() {
        String::new()
    } else {
        format!(" ({})", parts.join("; "))
    };
    format!("binary size {}{extra}", human_bytes(s.new_bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_each_workload_its_judgement_and_the_failures() {
        let text = Terminal.render(&crate::check::render::fixture::report());
        assert!(text.starts_with("check `demo` (demo): the working tree vs revision `HEAD~1` (0123456789ab), old and new binaries run interleaved here; max regression 5 %\n"), "{text}");
        let hot = text.lines().find(|l| l.starts_with("hot ")).unwrap();
        assert!(
            hot.contains("2.500× [2.450, 2.550] slower") && hot.contains("regression"),
            "{hot}"
        );
        assert!(text.contains("budget time: mean 30.0 ms"), "{text}");
        let t = text.lines().find(|l| l.starts_with("text ")).unwrap();
        assert!(
            t.contains("not compared") && t.contains("output changed"),
            "{t}"
        );
        assert!(
            text.contains("binary size 400.0 KiB (old 390.0 KiB, +2.6 %; limit 1.0 MiB)"),
            "{text}"
        );
        assert!(
            text.contains("FAIL (3):\n  - workload `hot`: regression"),
            "{text}"
        );
    }
}
