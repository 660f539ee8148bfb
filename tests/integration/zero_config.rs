//! Zero-config: `cargo optimize -- ARGS` in a crate without optimize.toml runs the binary
//! with ARGS as its one train + eval workload, and `init -- ARGS` saves it.

use crate::common::*;

#[test]
fn arguments_after_dashes_are_the_workload_and_init_saves_them() {
    let _g = shared();
    let tmp = copy_fixture("pgo-basic");
    std::fs::remove_file(tmp.path().join("optimize.toml")).unwrap();
    let r = run(tmp.path(), &["optimize"], &[]);
    assert_eq!(r.code, Some(2), "{}", r.all());
    assert!(r.stderr.contains("cargo optimize -- ARGS"), "{}", r.stderr);

    // An argument with braces is passed as it is, not read as a placeholder.
    let r = run(
        tmp.path(),
        &[
            "optimize",
            "--stages",
            "pgo",
            "--max-time",
            "1s",
            "--",
            "20000",
            "{x}",
        ],
        &[],
    );
    assert_eq!(r.code, Some(0), "{}", r.all());
    assert!(
        r.stderr.contains("cargo optimize init -- 20000 {x}"),
        "{}",
        r.stderr
    );
    let report = latest_report(&tmp.path().join("target"));
    let names: Vec<_> = report.workloads.iter().map(|w| w.name.as_str()).collect();
    assert_eq!(names, ["command-line"]);
    assert_ne!(stage(&report, "pgo").status.as_str(), "failed");
    assert!(
        !tmp.path().join("optimize.toml").exists(),
        "a run wrote a spec"
    );

    let r = run(tmp.path(), &["optimize", "init", "--", "20000", "{x}"], &[]);
    assert_eq!(r.code, Some(0), "{}", r.all());
    let spec = std::fs::read_to_string(tmp.path().join("optimize.toml")).unwrap();
    assert_eq!(
        spec.matches("args = ['20000', '{{x}}']").count(),
        2,
        "{spec}"
    );
    // The saved spec runs as it is.
    let r = run(tmp.path(), &["optimize", "--stages", "none"], &[]);
    assert_eq!(r.code, Some(0), "{}", r.all());
    let report = latest_report(&tmp.path().join("target"));
    let names: Vec<_> = report.workloads.iter().map(|w| w.name.as_str()).collect();
    assert_eq!(names, ["train-example", "eval-example"]);
}
