//! What a run of jobs did: a [`Record`] per job and the [`JobsSummary`] — CPU time and
//! utilization, the critical path, time by kind —, rendered for the terminal and serialised
//! into a release's manifest.

use std::collections::BTreeMap;

use serde::ser::SerializeStruct;
use serde::{Serialize, Serializer};

use super::{JobId, JobOutcome};
use crate::util::format_span;

/// One job of a run, as it ended.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Record {
    pub id: JobId,
    pub kind: &'static str,
    pub name: String,
    /// The job's dependencies (as in the graph), for the critical path.
    pub deps: Vec<JobId>,
    pub outcome: JobOutcome,
    /// When the job started (or was skipped), in seconds since the run began.
    pub start_seconds: f64,
    /// How long it ran (0 for a job skipped because of a dependency).
    pub seconds: f64,
}

/// What a run did and how well it used the machine.
#[derive(Debug, Clone)]
pub(crate) struct JobsSummary {
    /// Every job of the graph, in id order.
    pub records: Vec<Record>,
    pub wall_seconds: f64,
    /// User + system CPU time of this process and every child waited for, over the run.
    pub cpu_seconds: f64,
    pub workers: usize,
    pub tokens: usize,
}

impl JobsSummary {
    /// CPU time over what the CPU slots could have given in the wall time.
    pub(crate) fn utilization(&self) -> f64 {
        let capacity = self.wall_seconds * self.tokens.max(1) as f64;
        if capacity > 0.0 {
            self.cpu_seconds / capacity
        } else {
            0.0
        }
    }

    /// The longest chain of jobs that ran (done or failed) through the dependency edges,
    /// by measured seconds, and its total. Ties go to the lower ids.
    pub(crate) fn critical_path(&self) -> (Vec<JobId>, f64) {
        let mut records: Vec<&Record> = self.records.iter().collect();
        records.sort_by_key(|r| r.id);
        // id → (longest chain ending here, the job before it on that chain)
        let mut best: BTreeMap<JobId, (f64, Option<JobId>)> = BTreeMap::new();
        for r in records {
            if matches!(r.outcome, JobOutcome::Skipped(_)) && r.seconds == 0.0 {
                continue;
            }
            let mut before: Option<(f64, JobId)> = None;
            for d in &r.deps {
                if let Some(&(total, _)) = best.get(d) {
                    if before.is_none_or(|(t, _)| total > t) {
                        before = Some((total, *d));
                    }
                }
            }
            let total = r.seconds + before.map_or(0.0, |(t, _)| t);
            best.insert(r.id, (total, before.map(|(_, d)| d)));
        }
        let mut end: Option<(JobId, f64)> = None;
        for (&id, &(total, _)) in &best {
            if end.is_none_or(|(_, t)| total > t) {
                end = Some((id, total));
            }
        }
        let Some((last, total)) = end else {
            return (Vec::new(), 0.0);
        };
        let mut path = vec![last];
        while let Some(&(_, Some(prev))) = best.get(path.last().unwrap()) {
            path.push(prev);
        }
        path.reverse();
        (path, total)
    }

    pub(crate) fn done(&self) -> usize {
        self.count(|o| matches!(o, JobOutcome::Done))
    }

    pub(crate) fn failed(&self) -> usize {
        self.count(|o| matches!(o, JobOutcome::Failed(_)))
    }

    pub(crate) fn skipped(&self) -> usize {
        self.count(|o| matches!(o, JobOutcome::Skipped(_)))
    }

    fn count(&self, pick: impl Fn(&JobOutcome) -> bool) -> usize {
        self.records.iter().filter(|r| pick(&r.outcome)).count()
    }

    /// The efficiency summary:
    ///
    /// ```text
    /// 22 jobs in 1m 23s with 2 workers on 2 CPU slots: 20 done, 1 failed, 1 skipped
    /// CPU time 2m 31s (user + system, this process and every child) — utilization 91 %
    /// critical path 1m 10s (84 % of the wall time): build fast/portable 8.10 s → …
    /// by kind: build 6 jobs 48.2 s · train 4 jobs 20.1 s · …
    /// ```
    pub(crate) fn render(&self) -> String {
        let mut out = format!(
            "{} in {} with {} on {}: {} done, {} failed, {} skipped\n",
            count(self.records.len(), "job"),
            format_span(self.wall_seconds),
            count(self.workers, "worker"),
            count(self.tokens, "CPU slot"),
            self.done(),
            self.failed(),
            self.skipped(),
        );
        out.push_str(&format!(
            "CPU time {} (user + system, this process and every child) — utilization {:.0} %\n",
            format_span(self.cpu_seconds),
            100.0 * self.utilization()
        ));
        let (path, total) = self.critical_path();
        if !path.is_empty() {
            let steps: Vec<String> = path
                .iter()
                .filter_map(|id| self.records.iter().find(|r| r.id == *id))
                .map(|r| format!("{} {} {}", r.kind, r.name, format_span(r.seconds)))
                .collect();
            let share = if self.wall_seconds > 0.0 {
                100.0 * total / self.wall_seconds
            } else {
                0.0
            };
            out.push_str(&format!(
                "critical path {} ({share:.0} % of the wall time): {}\n",
                format_span(total),
                steps.join(" → ")
            ));
        }
        let kinds: Vec<String> = by_kind(self.records.iter().map(|r| (r.kind, r.seconds)))
            .into_iter()
            .map(|(kind, n, secs)| format!("{kind} {} {}", count(n, "job"), format_span(secs)))
            .collect();
        if !kinds.is_empty() {
            out.push_str(&format!("by kind: {}\n", kinds.join(" · ")));
        }
        out
    }
}

/// Also writes what is derived: `utilization` and `critical_path {jobs, seconds}`.
impl Serialize for JobsSummary {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Path {
            jobs: Vec<JobId>,
            seconds: f64,
        }
        let (jobs, seconds) = self.critical_path();
        let mut st = s.serialize_struct("Summary", 7)?;
        st.serialize_field("wall_seconds", &self.wall_seconds)?;
        st.serialize_field("cpu_seconds", &self.cpu_seconds)?;
        st.serialize_field("workers", &self.workers)?;
        st.serialize_field("tokens", &self.tokens)?;
        st.serialize_field("utilization", &self.utilization())?;
        st.serialize_field("critical_path", &Path { jobs, seconds })?;
        st.serialize_field("records", &self.records)?;
        st.end()
    }
}

/// `1 job`, `3 jobs`.
pub(super) fn count(n: usize, what: &str) -> String {
    if n == 1 {
        format!("1 {what}")
    } else {
        format!("{n} {what}s")
    }
}

/// (kind, jobs, seconds) in the order kinds first appear.
pub(super) fn by_kind(
    items: impl Iterator<Item = (&'static str, f64)>,
) -> Vec<(&'static str, usize, f64)> {
    let mut out: Vec<(&'static str, usize, f64)> = Vec::new();
    for (kind, secs) in items {
        match out.iter_mut().find(|(k, _, _)| *k == kind) {
            Some(e) => {
                e.1 += 1;
                e.2 += secs;
            }
            None => out.push((kind, 1, secs)),
        }
    }
    out
}
