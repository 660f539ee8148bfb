//! A criterion bench harness measured by its own estimates. Criterion runs each benchmark
//! for a fixed time, adapting how many iterations it does, so the harness's run time does
//! not change with the code's speed; what does is the per-iteration time it prints for each
//! benchmark (`name  time:   [lo estimate hi]`). So a `cargo = "bench"` workload of a
//! criterion harness (without a `metric` of its own) gets criterion's metric
//! (`spec::Metric::criterion`: each run's figure is the geometric mean of its benchmarks'
//! estimates, in ns per iteration), short runs (`--warm-up-time 0.1 --measurement-time 0.3
//! --sample-size 10`: the pairs make up the precision), and `--discard-baseline --noplot`:
//! nothing is written (no `target/criterion` of the project's, no saved baseline of yours
//! touched), so the workload runs in your tree as any other.
//!
//! Supported: criterion 0.4 to 0.8 (from Cargo.lock), whose command line has subsecond
//! durations and `--discard-baseline` and whose `time:` lines this reads. Another version
//! keeps timing the whole run, with a warning saying why and what to do.

use crate::cargo::Project;
use crate::spec::{HarnessKind, Metric, Spec};

/// The options a criterion harness run gets: short, as every run is one of many pairs.
const CRITERION_ARGS: [&str; 8] = [
    "--warm-up-time",
    "0.1",
    "--measurement-time",
    "0.3",
    "--sample-size",
    "10",
    "--noplot",
    "--discard-baseline",
];

/// The criterion minor versions (0.x) whose command line and output this reads.
const SUPPORTED: std::ops::RangeInclusive<u64> = 4..=8;

/// What was done for `spec`'s criterion workloads: `Ok(Some(info))` when they are measured
/// by their estimates, `Err(warning)` when this criterion is not supported, `Ok(None)` when
/// there is none.
pub(crate) fn measure_by_estimates(
    project: &Project,
    spec: &mut Spec,
) -> Result<Option<String>, String> {
    let bench = project.harness.as_ref().map(|h| h.kind) == Some(HarnessKind::Bench);
    let criterion = project.bench_framework.as_deref() == Some("criterion");
    let workloads: Vec<usize> = (spec.workloads.iter().enumerate())
        .filter(|(_, w)| w.cargo == Some(HarnessKind::Bench) && w.metric.is_none())
        .map(|(i, _)| i)
        .collect();
    if !(bench && criterion) || workloads.is_empty() {
        return Ok(None);
    }
    let version = criterion_version(project);
    let supported = version
        .as_deref()
        .and_then(minor)
        .is_some_and(|m| SUPPORTED.contains(&m));
    if !supported {
        let which = version.unwrap_or_else(|| "of an unknown version (no Cargo.lock entry)".into());
        return Err(format!(
            "the bench harness `{}` uses criterion {which}: its per-iteration estimates are read from criterion 0.4 to 0.8 only, so its runs are timed whole, and criterion runs each benchmark for a fixed time: the times will be ~equal\n  fix: use criterion 0.4–0.8, or a harness that does a fixed amount of work, or give the workload a `metric`",
            project.bin
        ));
    }
    for &i in &workloads {
        let w = &mut spec.workloads[i];
        w.metric = Some(Metric::criterion(w.line));
        w.args.extend(CRITERION_ARGS.iter().map(|a| a.to_string()));
    }
    Ok(Some(format!(
        "criterion {}: each run of the bench harness `{}` is measured by its benchmarks' own per-iteration estimates (ns/iter), not its run time",
        version.unwrap_or_default(),
        project.bin
    )))
}

/// The criterion version Cargo.lock resolves (the first, when several); without a lock
/// entry (a library that commits no Cargo.lock, before its first build), the version the
/// manifest asks for (`criterion = "0.5"`).
fn criterion_version(project: &Project) -> Option<String> {
    locked_version(project).or_else(|| required_version(project))
}

fn locked_version(project: &Project) -> Option<String> {
    (crate::cargo::lockfile::locked(project).into_iter())
        .find(|p| p.name == "criterion")
        .map(|p| p.version)
}

fn required_version(project: &Project) -> Option<String> {
    let req = project.bench_framework_req.as_deref()?;
    Some(req.trim_start_matches(['^', '~', '=', ' ']).to_string())
}

/// The minor version of a 0.x version (`0.5.1` → 5).
fn minor(version: &str) -> Option<u64> {
    let mut parts = version.split('.');
    (parts.next()? == "0").then_some(())?;
    parts.next()?.parse().ok()
}

#[cfg(test)]
mod tests {
    #[test]
    fn only_zero_x_versions_have_a_minor_here() {
        assert_eq!(super::minor("0.5.1"), Some(5));
        assert_eq!(super::minor("1.0.0"), None);
        assert!(super::SUPPORTED.contains(&super::minor("0.7.0").unwrap()));
        assert!(!super::SUPPORTED.contains(&super::minor("0.3.6").unwrap()));
    }
}
