//! How far a candidate's outputs moved from the baseline's: the numbers of every stream
//! the workload compares (stdout, stderr with `stderr = true`) and of its declared files,
//! read from what the candidate's verification saved under `outputs/<tag>/`. A candidate
//! whose checks an earlier run kept saved nothing in this run: its workloads run once now.
//! The fp stage's rows say it whether they were kept or rejected.

use std::path::Path;

use super::numeric::{self, Deviation};
use super::text::split_lines;
use super::{observe, Reference};
use crate::context::facts::OutputDeviation;
use crate::context::{sandbox, Candidate, Context};
use crate::spec::Workload;

/// The deviation of `cand`'s outputs from the baseline's (`reference`), over every workload
/// with outputs to compare.
pub(crate) fn deviation(
    ctx: &Context,
    reference: &Reference,
    cand: &Candidate,
) -> anyhow::Result<OutputDeviation> {
    let dir = ctx.run.outputs(&cand.tag());
    let compared =
        |w: &&Workload| w.expect.compares_outputs() && reference.observed.contains_key(&w.name);
    let workloads: Vec<&Workload> = ctx.spec.workloads.iter().filter(compared).collect();
    let saved = |w: &Workload| dir.join(format!("{}.stdout", w.file_stem())).is_file();
    if !workloads.iter().any(|w| saved(w)) {
        for w in &workloads {
            observe(ctx, &cand.binary, w, &dir)?;
        }
    }
    let mut total = Deviation::default();
    let mut n = 0;
    for w in workloads.into_iter().filter(|w| saved(w)) {
        total = total.merge(one(w, reference, &dir));
        n += 1;
    }
    Ok(OutputDeviation {
        max_abs: total.max_abs,
        max_rel: total.max_rel,
        numbers_changed: total.changed,
        workloads: n,
    })
}

/// One workload's deviation: its streams, then its files.
fn one(w: &Workload, reference: &Reference, dir: &Path) -> Deviation {
    let Some(base) = reference.observed.get(&w.name) else {
        return Deviation::default();
    };
    let stem = w.file_stem();
    let read = |p: &Path| std::fs::read(p).unwrap_or_default();
    // The baseline's stream whole: in memory, or the file it was written to.
    let whole = |i| match base.source(i) {
        super::text::Source::Bytes(b) => b.to_vec(),
        super::text::Source::File(p) => read(p),
    };
    let mut pairs = vec![(whole(0), read(&dir.join(format!("{stem}.stdout"))))];
    if w.stderr {
        let cand = read(&dir.join(format!("{stem}.stderr")));
        pairs.push((whole(1), cand));
    }
    for f in &base.files {
        let path = dir
            .join(format!("{stem}.files"))
            .join(sandbox::saved_name(&w.cwd, &f.declared));
        if let (Some(a), Ok(b)) = (&f.contents, std::fs::read(&path)) {
            pairs.push((a.clone(), b));
        }
    }
    pairs.iter().fold(Deviation::default(), |d, (a, b)| {
        let (la, _) = split_lines(a);
        let (lb, _) = split_lines(b);
        d.merge(numeric::deviation(&la, &lb))
    })
}
