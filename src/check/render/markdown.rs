//! GitHub-flavoured Markdown for a PR comment or `$GITHUB_STEP_SUMMARY`: a headline (pass or
//! what failed), what was compared, a table of workloads, the binary size, the failures.

use super::{against_text, judgement_text, ratio_text, time_text, Render};
use crate::check::gate::Judgement;
use crate::check::report::CheckReport;
use crate::render::{markdown_cell as cell, markdown_code as code};

pub(crate) struct Markdown;

impl Render<CheckReport> for Markdown {
    fn render(&self, r: &CheckReport) -> String {
        let headline = if r.failures.is_empty() {
            "✅ passed".to_string()
        } else {
            format!(
                "❌ failed ({} problem{})",
                r.failures.len(),
                if r.failures.len() == 1 { "" } else { "s" }
            )
        };
        let mut out = format!("## cargo optimize check: {headline}\n\n");
        out.push_str(&format!(
            "`{}` ({}): {}. A workload fails when its whole 95 % interval of new/old time lies above {:.2} (max regression {:.0} %).\n\n",
            code(&r.bin),
            cell(&r.crate_name),
            cell(&against_text(r)),
            1.0 + r.max_regression,
            r.max_regression * 100.0
        ));
        for n in &r.against.notes {
            out.push_str(&format!("> **Note:** {}\n\n", cell(n)));
        }
        table(&mut out, r);
        out.push_str(&format!(
            "{}\n\n",
            super::terminal::size_line(r).replacen("binary size", "Binary size:", 1)
        ));
        if let Some(o) = &r.overall {
            out.push_str(&format!(
                "Geometric mean over the compared workloads: {}\n\n",
                ratio_text(Some(o))
            ));
        }
        if !r.failures.is_empty() {
            out.push_str("**Failures**\n\n");
            for f in &r.failures {
                out.push_str(&format!("- {}\n", cell(f)));
            }
            out.push('\n');
        }
        out.push_str(&format!(
            "<sub>cargo-optimize {} · {:.0} s · exit code {}</sub>\n",
            r.tool_version, r.seconds, r.exit_code
        ));
        out
    }
}

/// The workloads' table, a row each, then a blank line.
fn table(out: &mut String, r: &CheckReport) {
    out.push_str("| workload | new / old [95 % CI] | judgement | new time [95 % CI] | budgets |\n");
    out.push_str("|---|---|---|---|---|\n");
    for w in &r.workloads {
        let mark = if w.fails() {
            "❌ "
        } else if w.judgement == Some(Judgement::Inconclusive) {
            "⚠️ "
        } else {
            ""
        };
        let budgets: Vec<String> = w
            .limits
            .iter()
            .map(|b| {
                let over = if b.over { "❌ " } else { "" };
                format!("{over}{}: {}", b.kind, b.describe())
            })
            .collect();
        out.push_str(&format!(
            "| `{}` | {} | {mark}{} | {} | {} |\n",
            code(&w.name),
            ratio_text(w.ratio.as_ref()),
            judgement_text(w),
            time_text(w.time.as_ref()),
            if budgets.is_empty() {
                "–".into()
            } else {
                cell(&budgets.join("; "))
            }
        ));
    }
    out.push('\n');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_table_row_per_workload_and_the_failures() {
        let r = crate::check::render::fixture::report();
        let md = Markdown.render(&r);
        assert!(
            md.starts_with("## cargo optimize check: ❌ failed (3 problems)\n"),
            "{md}"
        );
        assert!(md.contains("above 1.05 (max regression 5 %)"), "{md}");
        let hot = md.lines().find(|l| l.starts_with("| `hot`")).unwrap();
        assert!(
            hot.contains("| 2.500× [2.450, 2.550] slower | ❌ regression | 30.0 ms"),
            "{hot}"
        );
        assert!(hot.contains("❌ time: mean 30.0 ms"), "{hot}");
        let cold = md.lines().find(|l| l.starts_with("| `cold`")).unwrap();
        assert!(cold.contains("| no regression |"), "{cold}");
        let text = md.lines().find(|l| l.starts_with("| `text`")).unwrap();
        assert!(text.contains("not compared | ❌ output changed"), "{text}");
        // Every row has the header's five cells (no stray `|` or line break).
        for row in md.lines().filter(|l| l.starts_with("| `")) {
            assert_eq!(row.matches(" | ").count(), 4, "{row}");
        }
        assert!(
            md.contains("Binary size: 400.0 KiB (old 390.0 KiB, +2.6 %; limit 1.0 MiB)"),
            "{md}"
        );
        assert!(md.contains("- workload `text`: output changed: stdout differs at line 1: baseline:  42 candidate: 43"), "{md}");
        assert_eq!(
            md,
            Markdown.render(&r),
            "the same report renders the same text"
        );
        let mut ok = r.clone();
        ok.workloads.retain(|w| w.name == "cold");
        ok.failures = ok.list_failures();
        assert!(Markdown
            .render(&ok)
            .starts_with("## cargo optimize check: ✅ passed\n"));
    }

    #[test]
    fn a_revision_name_with_a_backtick_cannot_let_html_into_the_headline() {
        let mut r = crate::check::render::fixture::report();
        r.against.name = "x`<img src=y>".into();
        r.crate_name = "<b>".into();
        let md = Markdown.render(&r);
        assert!(!md.contains("<img") && !md.contains("<b>"), "{md}");
        assert!(
            md.contains("revision `x`&lt;img src=y&gt;\\` (0123"),
            "{md}"
        );
    }

    #[test]
    fn html_in_a_cell_is_shown_not_rendered_and_a_name_stays_a_code_span() {
        let mut r = crate::check::render::fixture::report();
        r.workloads[2].name = "a<b>|c".into();
        r.workloads[2].output_changed = Some("stdout differs:\n  <script> & more".into());
        r.failures = r.list_failures();
        let md = Markdown.render(&r);
        assert!(md.contains("| `a<b>\\|c` | not compared |"), "{md}");
        assert!(
            md.contains(
                "- workload `a<b>\\|c`: output changed: stdout differs: &lt;script&gt; &amp; more\n"
            ),
            "{md}"
        );
        assert!(!md.contains("<script>"), "{md}");
    }
}
