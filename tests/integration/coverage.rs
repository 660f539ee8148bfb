//! The PGO stage's eval coverage: whether training ran what the eval workloads run. On
//! `tests/fixtures/coverage-gap` (training runs path A only, eval mostly path B's
//! `path_b_hot`) the run warns, names the function and records `profile_quality`; with
//! `covered.toml` (a train workload on path B too) it does not; a re-run reuses the pass.
//! The renderings of a report with `profile_quality` (the frozen demo report plus one).

use cargo_optimize::testing::report::{self, Format, PgoProfileQuality, Report, UntrainedHot};

use crate::common::*;

const FIXTURE: &str = "coverage-gap";
const HOT: &str = "coverage_gap::path_b_hot";

/// The pgo row's `profile_quality`.
fn quality(report: &Report) -> PgoProfileQuality {
    let pgo = stage(report, "pgo");
    pgo.facts
        .profile_quality
        .clone()
        .unwrap_or_else(|| panic!("no profile_quality: {pgo:#?}"))
}

#[test]
fn training_that_misses_hot_eval_code_is_warned_about_and_reported() {
    let _guard = lock_target_dir(FIXTURE);
    let r = optimize(FIXTURE, &["--stages", "pgo"], &[]);
    assert_eq!(r.code, Some(0), "{}", r.all());
    let warning = format!("warning: your train workloads do not exercise {HOT} (");
    assert!(r.stderr.contains(&warning), "{}", r.stderr);
    assert!(
        r.stderr
            .contains("hottest in eval workload `eval-b`); add a train workload like it"),
        "{}",
        r.stderr
    );
    assert!(r.stderr.contains("pgo: eval coverage 1/1"), "{}", r.stderr);
    assert!(
        r.stderr.contains(" functions ran in training; "),
        "{}",
        r.stderr
    );

    let td = target_dir(FIXTURE);
    let report = latest_report(&td);
    let q = quality(&report);
    assert!(q.eval_share_in_trained < 0.5, "{q:#?}");
    assert!(q.functions_with_counts > 0, "{q:#?}");
    assert!(q.functions_with_counts < q.functions_instrumented, "{q:#?}");
    let first = &q.untrained_hot[0];
    assert_eq!(
        (first.function.as_str(), first.workload.as_str()),
        (HOT, "eval-b")
    );
    assert!(first.eval_share > 0.5 && first.train_share == 0.0, "{q:#?}");
    // The same text in the row's notes, so the report shows it.
    let notes = stage(&report, "pgo").notes.join("\n");
    assert!(notes.contains(&warning["warning: ".len()..]), "{notes}");
    // The pass is a step of its own.
    let step = report
        .pipeline
        .iter()
        .find(|p| p.step == "pgo: eval coverage");
    assert!(
        step.is_some_and(|s| s.seconds > 0.0),
        "{:#?}",
        report.pipeline
    );
    // Every rendering shows it.
    let line = format!("└ profile: {}", q.describe());
    assert!(unwrapped(&r.stdout).contains(&line), "{}", r.stdout);
    let run_dir = td.join("optimize/latest");
    let md = std::fs::read_to_string(run_dir.join("report.md")).unwrap();
    assert!(md.contains("**Profile coverage** (pgo)"), "{md}");
    assert!(md.contains(&format!("| `{HOT}` |")), "{md}");
    let html = std::fs::read_to_string(run_dir.join("report.html")).unwrap();
    assert!(html.contains("<h2 id=\"coverage\">Profile coverage</h2>"));
    assert!(html.contains(&format!("<td><code>{HOT}</code></td>")));

    // A re-run that reuses the training reuses the pass: nothing extra runs, same answer.
    let args = [
        "optimize",
        "--target-dir",
        td.to_str().unwrap(),
        "--stages",
        "pgo",
    ];
    let again = run(&fixture(FIXTURE), &args, &[]);
    assert_eq!(again.code, Some(0), "{}", again.all());
    assert!(
        again.stderr.contains("eval coverage reused"),
        "{}",
        again.stderr
    );
    assert!(
        !again.stderr.contains("eval coverage 1/"),
        "{}",
        again.stderr
    );
    assert!(again.stderr.contains(&warning), "{}", again.stderr);
    let reused = latest_report(&td);
    assert_eq!(quality(&reused), q);
    assert!(!reused.pipeline.iter().any(|p| p.step.contains("coverage")));
}

#[test]
fn training_that_covers_eval_gives_no_warning() {
    let _guard = lock_target_dir(FIXTURE);
    let r = optimize(FIXTURE, &["--stages", "pgo", "--spec", "covered.toml"], &[]);
    assert_eq!(r.code, Some(0), "{}", r.all());
    assert!(!r.stderr.contains("do not exercise"), "{}", r.stderr);
    let report = latest_report(&target_dir(FIXTURE));
    let q = quality(&report);
    assert!(q.eval_share_in_trained > 0.9, "{q:#?}");
    assert!(!q.untrained_hot.iter().any(|u| u.function == HOT), "{q:#?}");
    assert!(stage(&report, "pgo")
        .notes
        .iter()
        .all(|n| !n.contains("do not exercise")));
}

#[test]
fn a_report_with_profile_coverage_renders_it_everywhere_and_deterministically() {
    let _g = shared();
    let path = fixture("reports/demo/report.json");
    let mut r = report::load(&path).unwrap();
    let q = PgoProfileQuality {
        functions_with_counts: 301,
        functions_instrumented: 1204,
        eval_share_in_trained: 0.8125,
        untrained_hot: vec![UntrainedHot {
            function: "demo::x::f<a|b>".into(),
            eval_share: 0.23,
            train_share: 0.001,
            workload: "interp[n=600]".into(),
        }],
    };
    let pgo = r.stages.iter_mut().find(|s| s.name == "pgo").unwrap();
    pgo.facts.profile_quality = Some(q);
    // report.json keeps it, and reads back to the same JSON.
    let json = Format::Json.renderer().render(&r);
    assert!(json.contains("\"eval_share_in_trained\": 0.8125"), "{json}");
    parse_report(&path, &json);

    let summary =
        "301 of 1204 functions ran in training; 81.2 % of eval's counts are in trained code";
    let term = Format::Term.renderer().render(&r);
    assert!(
        unwrapped(&term).contains(&format!("└ profile: {summary}")),
        "{term}"
    );
    assert_eq!(term.matches("└ profile: ").count(), 1, "{term}");
    let md = Format::Markdown.renderer().render(&r);
    assert!(
        md.contains(&format!("**Profile coverage** (pgo)\n\n{summary}.\n")),
        "{md}"
    );
    assert!(
        md.contains("| `demo::x::f<a\\|b>` | 23.0 % | 0.10 % | interp[n=600] |"),
        "{md}"
    );
    let html = Format::Html.renderer().render(&r);
    assert!(
        html.contains("<td><code>demo::x::f&lt;a|b&gt;</code></td><td class=\"num\">23.0 %</td>")
    );
    for f in [Format::Term, Format::Markdown, Format::Html] {
        assert!(f.renderer().render(&r) == f.renderer().render(&r));
    }
}
