//! What a row says beyond its verdict: the notes and facts the ladder adds to rows beside or
//! after their decision — an offer not worth building (on its stage's first row), how far
//! an fp row's outputs moved, a cheaper alternative to the profile stage's winner, what an
//! allocator trades besides time, why an equivalent candidate was kept for its size — the
//! comparison as a reason states it, and `--explain`'s figures in the profile row's facts.
//! Nothing here keeps or drops a candidate: that is `Ladder::decide`'s, in `mod.rs`.

use super::Ladder;
use crate::bench::{Comparison, Estimate, Verdict};
use crate::context::Candidate;
use crate::pipeline::budget::Decides;
use crate::pipeline::measure;
use crate::report::Status;
use crate::stage;
use crate::stages::{label_of, Changes, StageName};

impl Ladder<'_> {
    /// An offer not worth building: its reason, once, on the stage's first row.
    pub(super) fn note_pruned(&mut self, name: StageName, why: String) {
        let Some(row) = self.rows.iter_mut().find(|r| r.name == name.as_str()) else {
            return;
        };
        if !row.notes.contains(&why) {
            self.ctx.ui().info(&format!("{name}: {why}"));
            row.notes.push(why);
        }
    }

    /// An fp row's outputs: how far they moved from the baseline's, in its facts and a
    /// note (whatever the verdict: a rejected row says by how much it missed).
    pub(super) fn note_deviation(&mut self, cand: &Candidate) {
        let deviation = match self.verifier.deviation(cand) {
            Ok(d) => d,
            Err(e) => {
                self.ctx.ui().warn(&format!(
                    "{}: cannot compare its outputs: {e:#}",
                    cand.label()
                ));
                return;
            }
        };
        // verify_and_measure ends every path with the candidate's row.
        let Some(row) = self.rows.last_mut() else {
            return;
        };
        let note = deviation.describe();
        self.ctx.ui().info(&format!("{}: {note}", cand.label()));
        row.notes.push(note);
        row.facts.output_deviation = Some(deviation);
    }

    /// The profile stage's winner (its last kept row), when a candidate measured against it
    /// afterwards came out within the margin and builds in under 90 % of its time: a note
    /// naming the cheapest such one, and `cheaper_alternative` in its facts.
    pub(super) fn note_cheaper_profile(&mut self) {
        let Some(w) = (self.rows.iter()).rposition(|r| {
            r.name == label_of(Changes::ProfileSettings) && r.status == Status::Kept
        }) else {
            return;
        };
        let winner_build = self.rows[w].build_seconds.unwrap_or(0.0);
        let within = |v: Verdict| {
            matches!(
                v,
                Verdict::Equivalent | Verdict::SlightlyFaster | Verdict::SlightlySlower
            )
        };
        let cheaper = (self.rows[w + 1..].iter())
            .filter(|r| r.name == label_of(Changes::ProfileSettings) && r.status == Status::Dropped)
            .filter_map(|r| Some((r, r.vs_best?, r.build_seconds?)))
            .filter(|(_, e, b)| within(e.verdict) && *b < 0.9 * winner_build)
            .min_by(|x, y| x.2.total_cmp(&y.2))
            .map(|(r, e, b)| {
                (
                    crate::context::label(
                        label_of(Changes::ProfileSettings),
                        r.facts.variant.as_deref(),
                    ),
                    e.ratio,
                    b,
                )
            });
        let Some((label, ratio, secs)) = cheaper else {
            return;
        };
        let note = stage::profile::cheaper_note((&label, ratio, secs), winner_build);
        self.ctx.ui().info(&format!(
            "{}: {note}",
            crate::context::label(
                label_of(Changes::ProfileSettings),
                self.rows[w].facts.variant.as_deref()
            )
        ));
        self.rows[w].notes.push(note);
        self.rows[w].facts.cheaper_alternative = Some(label);
    }

    /// `--explain`: each profile setting alone against the baseline, into the profile
    /// row's facts.
    pub(super) fn explain_profile(&mut self) {
        let ctx = self.ctx;
        let baseline = &self.baseline;
        let verifier = &self.verifier;
        let cache = self.cache;
        let share = self.share(Decides::Keep);
        let explained = stage::profile::explain(ctx, baseline, &mut |c| {
            let terms = measure::Terms {
                only_faster: false,
                share,
            };
            Ok(measure::measure(ctx, baseline, c, verifier, terms, cache, None)?.estimate)
        });
        if let Some(r) = self
            .rows
            .iter_mut()
            .rev()
            .find(|r| r.name == label_of(Changes::ProfileSettings))
        {
            r.facts.explain = Some(explained);
        }
    }
}

pub(super) fn describe(e: &Estimate) -> String {
    format!(
        "time ratio {:.3} [{:.3}, {:.3}] → {}",
        e.ratio, e.ci_low, e.ci_high, e.verdict
    )
}

/// Why an equivalent candidate was kept under `objective = "size"`.
pub(super) fn size_note(cand: &Candidate, rival: &Candidate) -> String {
    format!(
        "kept for its size (objective = \"size\"): {} against {}",
        crate::util::human_bytes(cand.size_bytes),
        crate::util::human_bytes(rival.size_bytes)
    )
}

/// What a candidate trades against its rival besides time (an allocator: memory for
/// time): `resources: peak RSS 23.3 MiB → 32.0 MiB (1.373), user time …`.
pub(super) fn resources_note(per_workload: &[(String, Comparison)]) -> Option<String> {
    let named: Vec<(&str, &Comparison)> = (per_workload.iter())
        .map(|(w, c)| (w.as_str(), c))
        .collect();
    let said: Vec<String> = crate::report::shipped::resources(&named)
        .into_iter()
        .filter(|r| ["peak RSS", "user time", "system time"].contains(&r.name.as_str()))
        .map(|r| format!("{} {} → {} ({:.3})", r.name, r.old, r.new, r.ratio))
        .collect();
    let lead = crate::report::shipped::RESOURCES_NOTE;
    (!said.is_empty()).then(|| format!("{lead}{}", said.join(", ")))
}
