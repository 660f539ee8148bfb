//! A workload's `metric`: the figure a program prints, compared pair by pair instead of
//! its wall time. `metric-steps` prints its per-step time after a random 0–200 ms start-up
//! sleep planted on purpose, so its wall time varies by tens of percent and (on a quiet
//! machine) its steps by a few: both are shown, the metric is what is compared. And what a bad
//! `metric` or an output it does not match says.

use cargo_optimize::testing::report::Status;

use crate::common::*;

#[test]
fn a_printed_per_step_time_is_compared_instead_of_the_wall_time_both_shown() {
    let _guard = shared();
    let tmp = copy_fixture("metric-steps");
    let dir = tmp.path();
    let td = dir.join("target");
    let td_s = td.to_str().unwrap();
    let r = run(
        dir,
        &["optimize", "--stages", "pgo", "--target-dir", td_s],
        &[],
    );
    assert_eq!(r.code, Some(0), "{}", r.all());
    let report = latest_report(&td);
    let steps = report.workloads.iter().find(|w| w.name == "steps").unwrap();
    let pgo = steps.per_stage.get("pgo").expect("pgo measured on `steps`");
    let m = pgo.metric.as_ref().expect("a metric comparison");
    assert_eq!(m.unit, "ms");
    // Every timed run's figure was read from its output, and its wall time kept too.
    assert!(
        pgo.samples
            .iter()
            .all(|s| s.metric.is_some() && s.wall_secs > 0.0),
        "{:?}",
        pgo.samples
    );
    // The pairs' ratio is the metric's: the step medians are milliseconds, not the
    // runs of tens to hundreds of ms.
    assert!(m.median_a < 50.0 && m.median_b < 50.0, "{m:?}");
    // The comparison's pairs are the metric's: its medians are the printed figures', and the
    // wall time's ratio on the same pairs is kept beside it. (How much narrower the metric's
    // interval is depends on the machine's load, so it is a figure for the notes, not an
    // assertion.)
    assert_eq!(pgo.median_a_secs, m.median_a, "{pgo:?}");
    assert_eq!(pgo.median_b_secs, m.median_b, "{pgo:?}");
    assert!(
        m.wall_ratio > 0.0 && m.wall_interval[0] <= m.wall_ratio,
        "{m:?}"
    );
    // What ships, whichever it is, shows the metric beside the wall time; `bench` of the
    // two binaries says both on one line.
    if stage(&report, "pgo").status == Status::Kept {
        let shown = "the metric (ms, lower is better); wall time ";
        assert!(r.stdout.contains(shown), "{}", r.stdout);
    }
    // Each candidate's binary, as the report names it (`bin/<tag>/<name>`).
    let bin = |tag: &str| {
        let path = stage(&report, tag).binary.clone();
        std::path::PathBuf::from(path.unwrap_or_else(|| panic!("no {tag} binary")))
    };
    let (a, b) = (bin("baseline"), bin("pgo"));
    let args = [
        "optimize",
        "bench",
        a.to_str().unwrap(),
        b.to_str().unwrap(),
    ];
    let bench = run(dir, &[&args[..], &["--max-time", "3s"]].concat(), &[]);
    assert_eq!(bench.code, Some(0), "{}", bench.all());
    let line = bench
        .stdout
        .lines()
        .find(|l| l.starts_with("steps"))
        .unwrap_or("");
    assert!(
        line.contains("metric ratio") && line.contains("; wall "),
        "{}",
        bench.stdout
    );
    assert!(line.contains(" ms · B "), "{line}");
}

#[test]
fn a_bad_metric_is_exit_2_at_its_line_and_an_output_it_does_not_match_names_what_was_printed() {
    let tmp = copy_fixture("metric-steps");
    let dir = tmp.path();
    let spec = std::fs::read_to_string(dir.join("optimize.toml")).unwrap();
    let line = spec
        .lines()
        .position(|l| l.starts_with("metric = "))
        .unwrap()
        + 1;
    let with = |metric: &str| {
        let text = spec
            .lines()
            .map(|l| {
                if l.starts_with("metric = ") {
                    metric
                } else {
                    l
                }
            })
            .collect::<Vec<_>>()
            .join("\n");
        std::fs::write(dir.join("optimize.toml"), text).unwrap();
        run(dir, &["optimize", "--dry-run"], &[])
    };
    let cases = [
        (
            "metric = { regex = 'step ([0-9', better = \"lower\" }",
            "the metric's regex does not compile",
        ),
        (
            "metric = { regex = 'step [0-9.]+ ms', better = \"lower\" }",
            "has 0 capture groups; it needs exactly one",
        ),
        (
            "metric = { regex = '(a)(b)', better = \"lower\" }",
            "has 2 capture groups",
        ),
        (
            "metric = { regex = '([0-9]+)', better = \"faster\" }",
            "`better` is \"higher\" or \"lower\", not \"faster\"",
        ),
        (
            "metric = { regex = '([0-9]+)', better = \"lower\", combine = \"max\" }",
            "`combine` is \"median\"",
        ),
    ];
    for (metric, says) in cases {
        let r = with(metric);
        assert_eq!(r.code, Some(2), "{metric}: {}", r.all());
        assert!(
            r.stderr.contains(&format!("optimize.toml:{line}:")),
            "{metric}: {}",
            r.stderr
        );
        assert!(r.stderr.contains(says), "{metric}: {}", r.stderr);
        assert!(r.stderr.contains("fix: "), "{metric}: {}", r.stderr);
    }

    // A program whose output has no figure: the run fails naming the workload, the regex
    // and the first lines it printed.
    with("metric = { regex = 'pace ([0-9.]+) ms', unit = \"ms\", better = \"lower\" }");
    let r = run(dir, &["optimize", "bench", "/bin/echo", "/bin/echo"], &[]);
    assert_eq!(r.code, Some(2), "{}", r.all());
    assert!(r.stderr.contains("workload `steps`"), "{}", r.stderr);
    assert!(
        r.stderr
            .contains("does not match the metric's regex `pace ([0-9.]+) ms`"),
        "{}",
        r.stderr
    );
    assert!(r.stderr.contains("  | 6 40000"), "{}", r.stderr);
}

#[test]
fn check_holds_a_metric_to_its_budget() {
    let _guard = shared();
    let tmp = copy_fixture("metric-steps");
    let dir = tmp.path();
    // A step takes milliseconds: a bound of 0.001 ms is missed, whatever the machine.
    let spec = std::fs::read_to_string(dir.join("optimize.toml")).unwrap();
    let spec = spec.replace(
        "better = \"lower\" }\n",
        "better = \"lower\" }\nbudget = { metric = 0.001 }\n",
    );
    std::fs::write(dir.join("optimize.toml"), &spec).unwrap();
    let line = spec.lines().position(|l| l.starts_with("budget")).unwrap() + 1;
    commit_all(dir);
    let env = [("GIT_CONFIG_GLOBAL", "/dev/null")];
    let r = run(dir, &["optimize", "check", "--max-time", "1s"], &env);
    assert_eq!(r.code, Some(1), "{}", r.all());
    let fail = (r.stdout.lines())
        .find(|l| l.contains("metric budget exceeded"))
        .unwrap_or_else(|| panic!("{}", r.stdout));
    assert!(
        fail.contains("workload `steps`") && fail.contains(" ms ["),
        "{fail}"
    );
    assert!(
        fail.ends_with(&format!("> budget 0.00100 ms (optimize.toml:{line})")),
        "{fail}"
    );

    // A budget on a workload without a metric is exit 2 at its line.
    let bad = spec.replace(
        "metric = { regex = 'step \\d+: ([0-9.]+) ms', unit = \"ms\", better = \"lower\" }\n",
        "",
    );
    std::fs::write(dir.join("optimize.toml"), &bad).unwrap();
    let r = run(dir, &["optimize", "--dry-run"], &[]);
    assert_eq!(r.code, Some(2), "{}", r.all());
    assert!(r.stderr.contains("this workload has none"), "{}", r.stderr);
}

/// Issue 61: two `1e308` figures in a run overflowed the median to infinity and the
/// interval code panicked on the NaN that followed (exit 101); a baseline printing an
/// unusable figure (here `checksum 0`: zero) was blamed on the first candidate. Now huge
/// figures are combined within range, and the baseline is named as the culprit (exit 2).
#[test]
fn huge_figures_never_panic_and_a_baseline_printing_an_unusable_figure_is_named() {
    let tmp = copy_fixture("metric-steps");
    let dir = tmp.path();
    let spec = std::fs::read_to_string(dir.join("optimize.toml")).unwrap();
    let huge = spec.replace(r"([0-9.]+) ms'", r"(\S+) ms'");
    std::fs::write(dir.join("optimize.toml"), &huge).unwrap();
    let script = dir.join("huge.sh");
    std::fs::write(
        &script,
        "#!/bin/sh\necho 'step 1: 1e308 ms'\necho 'step 2: 1e308 ms'\n",
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let s = script.to_str().unwrap();
    let r = run(dir, &["optimize", "bench", s, s, "--max-time", "2s"], &[]);
    assert_eq!(r.code, Some(0), "{}", r.all());
    assert!(r.stdout.contains("metric ratio 1.000"), "{}", r.stdout);

    // The baseline itself prints `checksum 0`: exit 2 naming it, before any candidate.
    let zero = spec
        .replace(r#"args = ["6", "40000"]"#, r#"args = ["0", "40000"]"#)
        .replace(r"step \d+: ([0-9.]+) ms", r"checksum (\S+)");
    assert_ne!(zero, spec);
    std::fs::write(dir.join("optimize.toml"), &zero).unwrap();
    let r = run(dir, &["optimize", "--stages", "pgo"], &[]);
    assert_eq!(r.code, Some(2), "{}", r.all());
    assert!(
        r.stderr.contains(
            "workload `steps`: the baseline's own output gives no figure its metric can compare"
        ),
        "{}",
        r.stderr
    );
    assert!(
        r.stderr
            .contains("captured \"0\", which is no positive number"),
        "{}",
        r.stderr
    );
    assert!(
        !r.stderr.contains("pgo"),
        "no candidate is blamed or built: {}",
        r.stderr
    );
}
