//! The ladder's races: a stage's consecutive [`Build::Raced`] offers (independent of each
//! other, one rival) built on the best so far, each checked as any offer is, then measured
//! together in one race (`measure::race`) and decided one by one: of those the keep rule
//! would keep, the one with the best estimate is kept, the others dropped naming it.

use super::Ladder;
use crate::context::Candidate;
use crate::pipeline::budget::Decides;
use crate::pipeline::measure::{self, Measured};
use crate::stage::{Build, Offer, Rival};
use crate::stages::StageName;
use crate::verify::{TimedVerification, Untimed};

/// A raced offer checked and ready to measure: its row's label, the candidate, and the
/// check its timed runs make (none when an earlier run checked every workload already).
struct Entrant {
    /// Its offer's place in the group.
    k: usize,
    row: String,
    cand: Candidate,
    verification: Option<TimedVerification>,
}

impl Entrant {
    fn new(
        k: usize,
        row: String,
        cand: Candidate,
        verification: Option<TimedVerification>,
    ) -> Self {
        Entrant {
            k,
            row,
            cand,
            verification,
        }
    }
}

impl Ladder<'_> {
    /// Build, check, race and decide a group of raced offers (see the module's doc), their
    /// rows in the offers' order. Under `objective = "size"` (a smaller candidate's
    /// comparison runs on past *faster*) each is measured alone as any offer is.
    pub(super) fn race(&mut self, name: StageName, offers: Vec<Offer>) -> anyhow::Result<()> {
        let rival = offers[0].rival;
        // The offer each row pushed since `base` is of: the rows are put in the offers'
        // order at the end.
        let (base, mut owner) = (self.rows.len(), Vec::new());
        let mut built = Vec::new();
        for (k, offer) in offers.into_iter().enumerate() {
            let row = crate::context::label(name.as_str(), offer.variant.as_deref());
            let Build::Raced(build) = offer.candidate else {
                unreachable!("a race has raced offers only");
            };
            let latest = self.rows.last().and_then(|r| r.vs_best.as_ref());
            let candidate = build(&self.best.candidate, latest);
            if let Some(cand) = self.built(name, offer.variant, candidate, offer.rival) {
                built.push((k, row, cand));
            }
            owner.resize(self.rows.len() - base, k);
        }
        let mut entrants = Vec::new();
        for (k, row, cand) in built {
            if self.ctx.spec.bench.objective_size {
                self.verify_and_measure(&row, cand, rival)?;
            } else {
                match self.verify_untimed(&row, &cand)? {
                    Untimed::Rejected(_) => {}
                    Untimed::AllChecked => entrants.push(Entrant::new(k, row, cand, None)),
                    Untimed::Passed(c) => entrants.push(Entrant::new(k, row, cand, Some(c))),
                }
            }
            owner.resize(self.rows.len() - base, k);
        }
        if entrants.len() > 1 {
            self.ctx.ui().info(&format!(
                "{name}: racing {} setting(s) against `{}`",
                entrants.len(),
                self.rival(rival).label()
            ));
        }
        self.run_race(entrants, rival, base, &mut owner)?;
        let mut rows: Vec<_> = self.rows.drain(base..).zip(owner).collect();
        rows.sort_by_key(|(_, k)| *k);
        self.rows.extend(rows.into_iter().map(|(r, _)| r));
        Ok(())
    }

    /// Measure the entrants in one race (one alone: a duel's), then conclude and decide
    /// each, noting in `owner` which offer each row pushed since `base` is of.
    fn run_race(
        &mut self,
        mut entrants: Vec<Entrant>,
        which: Rival,
        base: usize,
        owner: &mut Vec<usize>,
    ) -> anyhow::Result<()> {
        if entrants.is_empty() {
            return Ok(());
        }
        let rival = self.rival(which);
        let share = self.share(match rival.binary == self.baseline.binary {
            true if which == Rival::Best => Decides::Ship,
            _ => Decides::Keep,
        });
        let cands: Vec<&Candidate> = entrants.iter().map(|e| &e.cand).collect();
        let verifications: Vec<Option<&TimedVerification>> =
            entrants.iter().map(|e| e.verification.as_ref()).collect();
        let ctx = self.ctx;
        let raced = measure::race(
            ctx,
            rival,
            &cands,
            &self.verifier,
            share,
            self.cache,
            &verifications,
        );
        let results: Vec<anyhow::Result<Measured>> = match raced {
            Ok(r) => r,
            Err(e) => {
                let why = format!("{e:#}");
                (0..entrants.len())
                    .map(|_| Err(anyhow::anyhow!("{why}")))
                    .collect()
            }
        };
        let mut measured = Vec::new();
        for (j, (e, m)) in entrants.iter_mut().zip(results).enumerate() {
            if let Some(m) = self.conclude(&e.row, &e.cand, e.verification.take(), m)? {
                measured.push((j, m));
            }
            owner.resize(self.rows.len() - base, e.k);
        }
        let winner = (measured.iter())
            .filter(|(j, m)| self.keeps(&entrants[*j].cand, which, m).0)
            .min_by(|a, b| a.1.estimate.ratio.total_cmp(&b.1.estimate.ratio))
            .map(|(j, _)| *j);
        let label = winner.map(|w| format!("`{}`", entrants[w].cand.label()));
        // The winner last: deciding it makes it the best, which the others were not
        // measured against.
        measured.sort_by_key(|(j, _)| Some(*j) == winner);
        let ks: Vec<usize> = entrants.iter().map(|e| e.k).collect();
        let mut cands: Vec<Option<Candidate>> =
            entrants.into_iter().map(|e| Some(e.cand)).collect();
        for (j, m) in measured {
            let beaten = (Some(j) != winner).then_some(label.as_deref()).flatten();
            let cand = cands[j].take().expect("decided once");
            self.decide(cand, which, m, beaten);
            owner.resize(self.rows.len() - base, ks[j]);
        }
        Ok(())
    }
}
