//! Train↔eval overlap: how much of what the eval workloads (your real use) run the training
//! profile covers, from per-function counts (`toolchain::profdata::function_counts`) of the
//! training profile and of one profile per eval workload. Pure arithmetic: running the
//! workloads is `eval.rs`'s job.
//!
//! Shares. A function's share of a profile is its `total` (the sum of its block counters)
//! over the profile's sum. Each eval workload is normalised to its own total and the eval
//! share of a function is the mean of its per-workload shares, so every eval workload
//! weighs the same: a workload that runs ten times longer than the others does not drown
//! them (the ladder also weighs workloads equally: the geometric mean of their ratios). The
//! training share is taken from the merged training profile as it is, since that is what
//! the compiler sees.

use std::collections::BTreeMap;

use crate::context::facts::{PgoProfileQuality, UntrainedHot};
use crate::toolchain::profdata::FunctionCounts;

/// A function is untrained when its training share is below its eval share over this.
const UNDER_TRAINED: f64 = 20.0;
/// `untrained_hot` keeps at most this many functions,
const LISTED: usize = 10;
/// each with at least this share of eval's counts.
const MIN_LISTED: f64 = 0.005;
/// Warn when less than this share of eval's counts is in trained code,
const WARN_TRAINED_BELOW: f64 = 0.90;
/// or when one untrained function has at least this share.
const WARN_HOT: f64 = 0.05;
/// The warning names at most this many functions.
const NAMED: usize = 3;

/// One eval workload's profile.
pub(crate) struct EvalPgoProfile {
    pub workload: String,
    pub functions: Vec<FunctionCounts>,
}

/// Each symbol's counts summed (a local symbol may be listed once per codegen unit), with
/// its demangled name, and the sum over all of them.
fn totals(functions: &[FunctionCounts]) -> (BTreeMap<&str, (u64, &str)>, u64) {
    let mut out: BTreeMap<&str, (u64, &str)> = BTreeMap::new();
    for f in functions {
        out.entry(f.symbol.as_str())
            .or_insert((0, f.name.as_str()))
            .0 += f.total;
    }
    let sum = out.values().map(|(t, _)| t).sum();
    (out, sum)
}

/// Each eval workload's shares by symbol (workloads without counts left out), and each
/// symbol's name.
struct EvalShares<'a> {
    per_workload: Vec<(&'a str, BTreeMap<&'a str, f64>)>,
    names: BTreeMap<&'a str, &'a str>,
}

fn eval_shares(eval: &[EvalPgoProfile]) -> EvalShares<'_> {
    let mut names = BTreeMap::new();
    let mut per_workload = Vec::new();
    for e in eval {
        let (t, sum) = totals(&e.functions);
        if sum == 0 {
            continue;
        }
        let shares = t
            .iter()
            .filter(|(_, (n, _))| *n > 0)
            .map(|(s, (n, name))| {
                names.insert(*s, *name);
                (*s, *n as f64 / sum as f64)
            })
            .collect();
        per_workload.push((e.workload.as_str(), shares));
    }
    EvalShares {
        per_workload,
        names,
    }
}

/// How well `train` covers `eval`; `None` when no eval workload ran instrumented code.
pub(crate) fn assess(
    train: &[FunctionCounts],
    eval: &[EvalPgoProfile],
) -> Option<PgoProfileQuality> {
    let EvalShares {
        per_workload,
        names,
    } = eval_shares(eval);
    if per_workload.is_empty() {
        return None;
    }
    let n = per_workload.len() as f64;
    let (trained, train_sum) = totals(train);
    let train_share = |s: &str| match trained.get(s) {
        Some((t, _)) if train_sum > 0 => *t as f64 / train_sum as f64,
        _ => 0.0,
    };
    let mut in_trained = 0.0;
    let mut untrained = Vec::new();
    for (symbol, name) in &names {
        let shares = per_workload
            .iter()
            .map(|(w, m)| (*w, m.get(symbol).copied()));
        let eval_share = shares.clone().filter_map(|(_, s)| s).sum::<f64>() / n;
        let train = train_share(symbol);
        if train > 0.0 {
            in_trained += eval_share;
        }
        if train < eval_share / UNDER_TRAINED {
            // The first workload with the largest share (spec order breaks ties).
            let (workload, _) = shares.fold(("", 0.0), |best, (w, s)| match s {
                Some(s) if s > best.1 => (w, s),
                _ => best,
            });
            untrained.push(UntrainedHot {
                function: name.to_string(),
                eval_share,
                train_share: train,
                workload: workload.to_string(),
            });
        }
    }
    untrained.sort_by(|a, b| {
        b.eval_share
            .total_cmp(&a.eval_share)
            .then_with(|| a.function.cmp(&b.function))
    });
    untrained.retain(|u| u.eval_share >= MIN_LISTED);
    untrained.truncate(LISTED);
    Some(PgoProfileQuality {
        functions_with_counts: train.iter().filter(|f| f.total > 0).count() as u64,
        functions_instrumented: train.len() as u64,
        eval_share_in_trained: in_trained.min(1.0),
        untrained_hot: untrained,
    })
}

/// The warning when training misses hot eval code: less than 90 % of eval's counts in
/// trained code, or one untrained function with 5 % of them or more. Names at most three
/// functions, each with the eval workload that runs it hottest.
pub(crate) fn warning(q: &PgoProfileQuality) -> Option<String> {
    let hot = q.untrained_hot.iter().any(|u| u.eval_share >= WARN_HOT);
    if q.eval_share_in_trained >= WARN_TRAINED_BELOW && !hot {
        return None;
    }
    let named: Vec<&UntrainedHot> = q.untrained_hot.iter().take(NAMED).collect();
    if named.is_empty() {
        return Some(format!(
            "your train workloads do not exercise code that makes up {} of eval's counts; add train workloads like your eval workloads",
            percent(1.0 - q.eval_share_in_trained)
        ));
    }
    let list: Vec<String> = named
        .iter()
        .map(|u| {
            let trained = if u.train_share > 0.0 {
                format!(", {} of training's", percent(u.train_share))
            } else {
                String::new()
            };
            format!(
                "{} ({} of eval's counts{trained}, hottest in eval workload `{}`)",
                u.function,
                percent(u.eval_share),
                u.workload
            )
        })
        .collect();
    let mut workloads: Vec<&str> = named.iter().map(|u| u.workload.as_str()).collect();
    workloads.sort_unstable();
    workloads.dedup();
    let like = if workloads.len() == 1 {
        "add a train workload like it"
    } else {
        "add train workloads like them"
    };
    Some(format!(
        "your train workloads do not exercise {}; {like}",
        join_and(&list)
    ))
}

/// `23 %`; below 1 % with one decimal (`0.4 %`).
fn percent(share: f64) -> String {
    let p = share * 100.0;
    if p >= 1.0 || p == 0.0 {
        format!("{p:.0} %")
    } else {
        format!("{p:.1} %")
    }
}

/// `a`, `a and b`, `a, b and c`.
fn join_and(items: &[String]) -> String {
    match items {
        [] => String::new(),
        [one] => one.clone(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(symbol: &str, total: u64) -> FunctionCounts {
        FunctionCounts {
            symbol: symbol.into(),
            name: format!("demo::{symbol}"),
            total,
            entries: total.min(1),
        }
    }

    fn eval(workload: &str, functions: Vec<FunctionCounts>) -> EvalPgoProfile {
        EvalPgoProfile {
            workload: workload.into(),
            functions,
        }
    }

    #[test]
    fn each_eval_workload_weighs_the_same() {
        let train = vec![f("a", 100), f("b", 0), f("c", 0)];
        // Workload `long` has 100× the counts of `short`; without normalising, b's 90 % of
        // `long` would be 89 % of eval's counts.
        let e = [
            eval("long", vec![f("a", 10_000), f("b", 90_000)]),
            eval("short", vec![f("a", 800), f("c", 200)]),
        ];
        let q = assess(&train, &e).unwrap();
        assert_eq!((q.functions_with_counts, q.functions_instrumented), (1, 3));
        // a: (0.1 + 0.8) / 2 = 0.45 in trained code.
        assert!((q.eval_share_in_trained - 0.45).abs() < 1e-12, "{q:?}");
        let hot: Vec<(&str, &str)> = q
            .untrained_hot
            .iter()
            .map(|u| (u.function.as_str(), u.workload.as_str()))
            .collect();
        assert_eq!(hot, [("demo::b", "long"), ("demo::c", "short")]);
        assert!((q.untrained_hot[0].eval_share - 0.45).abs() < 1e-12);
        assert!((q.untrained_hot[1].eval_share - 0.10).abs() < 1e-12);
        assert_eq!(q.untrained_hot[0].train_share, 0.0);
    }

    #[test]
    fn a_function_training_barely_runs_is_untrained_and_one_it_runs_enough_is_not() {
        // Eval: x 50 %, y 50 %. Training: x 99.5 %, y 0.5 % (< 50 % / 20 = 2.5 %).
        let train = vec![f("x", 995), f("y", 5), f("z", 0)];
        let q = assess(&train, &[eval("e", vec![f("x", 50), f("y", 50)])]).unwrap();
        assert!((q.eval_share_in_trained - 1.0).abs() < 1e-12, "{q:?}");
        assert_eq!(q.untrained_hot.len(), 1, "{q:?}");
        assert_eq!(q.untrained_hot[0].function, "demo::y");
        assert!((q.untrained_hot[0].train_share - 0.005).abs() < 1e-12);
        // At 3 % of training (above 2.5 %), y counts as trained.
        let train = vec![f("x", 97), f("y", 3)];
        let q = assess(&train, &[eval("e", vec![f("x", 50), f("y", 50)])]).unwrap();
        assert!(q.untrained_hot.is_empty(), "{q:?}");
        assert!(warning(&q).is_none());
    }

    #[test]
    fn the_list_keeps_ten_functions_of_half_a_percent_or_more_hottest_first() {
        let mut ev = vec![f("big", 1_000_000)];
        for i in 0..20 {
            ev.push(f(&format!("u{i:02}"), 10_000 + i));
        }
        ev.push(f("tiny", 100));
        let q = assess(&[f("big", 1)], &[eval("e", ev)]).unwrap();
        assert_eq!(q.untrained_hot.len(), 10);
        assert_eq!(q.untrained_hot[0].function, "demo::u19");
        assert!(q.untrained_hot.iter().all(|u| u.eval_share >= MIN_LISTED));
    }

    #[test]
    fn the_same_local_symbol_in_two_codegen_units_is_one_function() {
        let q = assess(
            &[f("s", 1), f("s", 0), f("t", 0)],
            &[eval("e", vec![f("s", 3), f("s", 1)])],
        )
        .unwrap();
        assert_eq!(q.eval_share_in_trained, 1.0);
        assert_eq!((q.functions_with_counts, q.functions_instrumented), (1, 3));
    }

    #[test]
    fn no_eval_counts_no_answer() {
        assert!(assess(&[f("a", 1)], &[eval("e", vec![f("a", 0)])]).is_none());
        assert!(assess(&[f("a", 1)], &[]).is_none());
    }

    #[test]
    fn the_warning_names_the_hottest_untrained_functions_and_their_workloads() {
        let train = vec![f("a", 100), f("b", 0), f("c", 0)];
        let e = [
            eval("interp[n=600]", vec![f("a", 76), f("b", 24)]),
            eval("short", vec![f("a", 100)]),
        ];
        let q = assess(&train, &e).unwrap();
        // b: 24 % of one workload, 12 % of eval's counts.
        assert_eq!(
            warning(&q).unwrap(),
            "your train workloads do not exercise demo::b (12 % of eval's counts, hottest in eval workload `interp[n=600]`); add a train workload like it"
        );
        let e = [
            eval("w1", vec![f("a", 10), f("b", 60), f("c", 30)]),
            eval("w2", vec![f("a", 50), f("d", 50)]),
        ];
        let train = vec![f("a", 1000), f("b", 0), f("c", 1), f("d", 0), f("e", 9)];
        let q = assess(&train, &e).unwrap();
        assert_eq!(
            warning(&q).unwrap(),
            "your train workloads do not exercise demo::b (30 % of eval's counts, hottest in eval workload `w1`), demo::d (25 % of eval's counts, hottest in eval workload `w2`) and demo::c (15 % of eval's counts, 0.1 % of training's, hottest in eval workload `w1`); add train workloads like them"
        );
    }

    #[test]
    fn no_warning_when_training_covers_eval_and_one_when_only_many_small_ones_are_missed() {
        let train = vec![f("a", 100)];
        let q = assess(&train, &[eval("e", vec![f("a", 97), f("b", 3)])]).unwrap();
        assert_eq!(q.untrained_hot.len(), 1);
        assert!(warning(&q).is_none(), "{q:?}");
        // 20 untrained functions of 0.4 % each: 8 % of eval, none listed; still a warning.
        let mut ev = vec![f("a", 920)];
        ev.extend((0..20).map(|i| f(&format!("u{i}"), 4)));
        let q = assess(&train, &[eval("e", ev)]).unwrap();
        assert!(q.untrained_hot.is_empty());
        assert!((q.eval_share_in_trained - 0.92).abs() < 1e-12);
        assert!(warning(&q).is_none(), "92 % trained: no warning");
        let mut ev = vec![f("a", 850)];
        ev.extend((0..50).map(|i| f(&format!("u{i}"), 3)));
        let q = assess(&train, &[eval("e", ev)]).unwrap();
        assert_eq!(
            warning(&q).unwrap(),
            "your train workloads do not exercise code that makes up 15 % of eval's counts; add train workloads like your eval workloads"
        );
    }

    #[test]
    fn the_summary_line() {
        let q = PgoProfileQuality {
            functions_with_counts: 301,
            functions_instrumented: 1204,
            eval_share_in_trained: 0.975,
            untrained_hot: vec![],
        };
        assert_eq!(
            q.describe(),
            "301 of 1204 functions ran in training; 97.5 % of eval's counts are in trained code"
        );
    }
}
