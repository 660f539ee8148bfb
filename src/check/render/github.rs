//! GitHub Actions workflow commands: `::error` for each failure (with the spec file and
//! line for a budget or the size limit), `::warning` for what could not be decided or a
//! weaker comparison, `::notice` for the outcome. Printed to stdout, GitHub turns them into
//! annotations on the run and the PR.

use super::{ratio_text, Render};
use crate::check::gate::Judgement;
use crate::check::report::CheckReport;

pub(crate) struct Github;

impl Render<CheckReport> for Github {
    fn render(&self, r: &CheckReport) -> String {
        let mut out = String::new();
        let mut line = |level: &str, props: String, msg: &str| {
            out.push_str(&format!("::{level}{props}::{}\n", escape_data(msg)));
        };
        let title = |t: &str| format!(" title={}", escape_property(t));
        for w in &r.workloads {
            if let Some(what) = &w.output_changed {
                line(
                    "error",
                    title("output changed"),
                    &format!(
                        "workload `{}`: the new build's output differs from the old one's: {what}",
                        w.name
                    ),
                );
            }
            match (w.judgement, &w.ratio) {
                (Some(Judgement::Regression), Some(rt)) => line(
                    "error",
                    title("performance regression"),
                    &format!(
                        "workload `{}`: new/old = {} — slower than the {:.0} % allowed",
                        w.name,
                        ratio_text(Some(rt)),
                        r.max_regression * 100.0
                    ),
                ),
                (Some(Judgement::Inconclusive), Some(rt)) => line(
                    "warning",
                    title("inconclusive"),
                    &format!(
                        "workload `{}`: new/old = {} — the interval reaches past the {:.0} % allowed; not a regression as measured, but not ruled out (raise [bench] max-time to narrow it)",
                        w.name,
                        ratio_text(Some(rt)),
                        r.max_regression * 100.0
                    ),
                ),
                _ => {}
            }
            for b in w.limits.iter().filter(|b| b.over) {
                line(
                    "error",
                    format!(
                        " file={},line={},title={}",
                        escape_property(&r.spec),
                        b.line,
                        escape_property("budget exceeded")
                    ),
                    &format!("workload `{}`: {} {}", w.name, b.kind, b.describe()),
                );
            }
        }
        if let (true, Some(_)) = (r.binary_size.over, r.binary_size.limit) {
            let msg = super::terminal::size_line(r);
            line(
                "error",
                format!(
                    " file={},line={},title={}",
                    escape_property(&r.spec),
                    r.binary_size.line,
                    escape_property("binary too large")
                ),
                &msg,
            );
        }
        for n in &r.against.notes {
            line("warning", title("cargo optimize check"), n);
        }
        let outcome = if r.failures.is_empty() {
            format!("passed: {}", super::against_text(r))
        } else {
            format!("failed ({}): {}", r.failures.len(), super::against_text(r))
        };
        line("notice", title("cargo optimize check"), &outcome);
        out
    }
}

/// A message: `%`, CR and LF escaped as GitHub's runner expects.
fn escape_data(s: &str) -> String {
    s.replace('%', "%25")
        .replace('\r', "%0D")
        .replace('\n', "%0A")
}

/// A property value: also `:` and `,`.
fn escape_property(s: &str) -> String {
    escape_data(s).replace(':', "%3A").replace(',', "%2C")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_annotation_per_failure_escaped() {
        let text = Github.render(&crate::check::render::fixture::report());
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 4, "{text}");
        assert!(lines[0].starts_with("::error title=performance regression::workload `hot`: new/old = 2.500× [2.450, 2.550] slower — slower than the 5 %25 allowed"), "{}", lines[0]);
        assert!(lines[1].starts_with("::error file=optimize.toml,line=9,title=budget exceeded::workload `hot`: time mean 30.0 ms"), "{}", lines[1]);
        assert!(lines[2].starts_with("::error title=output changed::workload `text`: the new build's output differs from the old one's: stdout differs at line 1:%0A    baseline:  42"), "{}", lines[2]);
        assert!(
            lines[3].starts_with("::notice title=cargo optimize check::failed (3): "),
            "{}",
            lines[3]
        );
        assert_eq!(escape_property("a:b,c%"), "a%3Ab%2Cc%25");
    }
}
