//! What measuring says on the terminal: the progress line of a comparison under way, the
//! warnings and tally once it is done, and what a race does.

use crate::bench::BenchOptions;
use crate::bench::{Comparison, Phase, Progress, Verdict};
use crate::context::Context;
use crate::spec::Workload;
use crate::ui::{Tone, Ui};

/// What a joint measurement found, said once it is done: warnings per workload, each
/// workload's headline on a terminal, then the tally.
pub(super) fn tell_measured(
    ctx: &Context,
    pair: &str,
    todo: &[&Workload],
    measured: &[Comparison],
    started: std::time::Instant,
) {
    for (w, c) in todo.iter().zip(measured) {
        if let Some(warning) = c.lingering.warning() {
            ctx.warn_once(&format!("workload `{}` {warning}", w.name));
        }
        if let Some(note) = &c.stop_note {
            ctx.ui().warn(&format!("workload `{}`: {note}", w.name));
        }
        if ctx.ui().animate {
            ctx.ui().info(&format!("{}: {}", w.name, c.headline()));
        }
    }
    let named: Vec<(&str, &Comparison)> = todo
        .iter()
        .zip(measured)
        .map(|(w, c)| (w.name.as_str(), c))
        .collect();
    let tally = crate::report::shipped::tally(&named).unwrap_or_default();
    ctx.ui().done(
        &format!("{pair} measured: {tally}"),
        started.elapsed().as_secs_f64(),
    );
}

/// `label: 12/40 pairs [#####···············] ≤ 14 s left, time ratio 0.93 [0.90, 0.96] faster`:
/// the time left is an upper bound (the schedule's last pair, or max-time, whichever is
/// sooner; a decided verdict stops earlier).
pub(super) fn progress_message(label: &str, p: &Progress, ui: &Ui) -> String {
    if let Phase::Warmup { done, total } = p.phase {
        return format!("{label}: warm-up {}/{total}", done + 1);
    }
    let elapsed = p.elapsed.as_secs_f64();
    let by_time = (p.max_time.as_secs_f64() - elapsed).max(0.0);
    let left = match p.planned_pairs {
        Some(n) if p.pairs > 0 && n >= p.pairs => {
            (elapsed / f64::from(p.pairs) * f64::from(n - p.pairs)).min(by_time)
        }
        _ => by_time,
    };
    let done = if elapsed + left > 0.0 {
        elapsed / (elapsed + left)
    } else {
        0.0
    };
    const WIDTH: usize = 20;
    let filled = ((done * WIDTH as f64).round() as usize).min(WIDTH);
    let bar = format!("{}{}", "#".repeat(filled), "·".repeat(WIDTH - filled));
    let pairs = match p.planned_pairs {
        Some(n) => format!("{}/{n}", p.pairs),
        None => p.pairs.to_string(),
    };
    let est = p
        .estimate
        .map(|e| {
            let tone = match e.verdict {
                Verdict::Faster => Tone::Good,
                Verdict::Slower => Tone::Bad,
                _ => Tone::Step,
            };
            format!(", {}", ui.paint(&e.to_string(), tone))
        })
        .unwrap_or_default();
    format!("{label}: {pairs} pairs [{bar}] ≤ {left:.0} s left{est}")
}

/// What a race does, said when it starts: a fixed design (`in_turns`) confirms its entrants.
pub(super) fn what_it_does(opts: &BenchOptions, workloads: usize) -> String {
    match opts.in_turns {
        true => format!(
            "confirming [{workloads} workload(s), {} pairs each, in turns]",
            opts.max_pairs
        ),
        false => format!("racing [{workloads} workload(s)]"),
    }
}

/// What a race did, said when it is done: a fixed design (`in_turns`) confirmed its entrants.
pub(super) fn done_verb(opts: &BenchOptions) -> &'static str {
    match opts.in_turns {
        true => "confirmed",
        false => "raced",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::Estimate;
    use std::time::Duration;

    #[test]
    fn progress_shows_pairs_bar_time_left_and_the_interval() {
        let p = Progress {
            phase: Phase::Measuring,
            pairs: 10,
            planned_pairs: Some(40),
            elapsed: Duration::from_secs(5),
            max_time: Duration::from_secs(10),
            estimate: Some(Estimate {
                ratio: 0.93,
                ci_low: 0.9,
                ci_high: 0.96,
                verdict: Verdict::Faster,
                confidence: 0.95,
            }),
        };
        // 30 more pairs at 0.5 s would take 15 s; max-time leaves 5 s.
        assert_eq!(
            progress_message("pgo vs baseline", &p, &Ui::plain()),
            "pgo vs baseline: 10/40 pairs [##########··········] ≤ 5 s left, time ratio 0.930 [0.900, 0.960] faster"
        );
        let warm = Progress {
            phase: Phase::Warmup { done: 0, total: 2 },
            estimate: None,
            ..p
        };
        assert_eq!(progress_message("x", &warm, &Ui::plain()), "x: warm-up 1/2");
    }
}
