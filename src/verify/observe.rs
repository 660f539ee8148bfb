//! Running workloads for verification (through `context::Context`, so through
//! `process`), keeping what they produced under `runs/<id>/outputs/`, the reference the
//! baseline sets, and the determinism check of the baseline against itself.

use std::cell::{OnceCell, RefCell};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::Instant;

use super::crate_tests::BaselineTests;
use super::numeric::{self, Tolerance};
use super::{check_observed, text, Mismatch, Observed, OutputFile, VerifyError};
use crate::cargo::{BuildSettings, TestRunner};
use crate::context::sandbox;
use crate::context::{Candidate, Context};
use crate::process::{Outcome, Spool};
use crate::spec::{Expect, Workload};
use crate::util::toml_string;

/// Run `workload` on `binary` and save what it produced under `outputs`
/// (`runs/<id>/outputs/<stage>/`). A workload that declares `files` runs in a fresh copy
/// of its cwd (under `runs/<id>/sandbox/`, removed afterwards) and its files are read
/// from there.
pub(crate) fn observe(
    ctx: &Context,
    binary: &Path,
    workload: &Workload,
    outputs: &Path,
) -> Result<Observed, VerifyError> {
    let spool = Some(spool_for(outputs, workload));
    if workload.files.is_empty() {
        let outcome = ctx.run_in_place(binary, workload, &[], spool)?;
        return observed_from(workload, outcome, None, outputs);
    }
    let tag = outputs
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let (w, sb) = ctx
        .sandboxed(workload, &tag)
        .map_err(|e| VerifyError::io("copy the working directory of", &workload.cwd, e))?;
    let outcome = ctx.run_in_place(binary, &w, &[], spool)?;
    observed_from(workload, outcome, sb.as_ref(), outputs)
}

/// Where a run of `w` whose outputs are saved under `outputs` writes its stdout and stderr
/// as they arrive: their saved copies, so nothing is held in memory or written twice.
pub(crate) fn spool_for(outputs: &Path, w: &Workload) -> Spool {
    let stem = w.file_stem();
    Spool {
        stdout: outputs.join(format!("{stem}.stdout")),
        stderr: outputs.join(format!("{stem}.stderr")),
    }
}

/// What a run of `workload` produced — its outcome, and the declared files in `sandbox`
/// (the private copy it ran in) —, saved under `outputs`. The ladder's timed runs are
/// checked through it too: a candidate's first timed run of an eval workload is its
/// verification.
pub(crate) fn observed_from(
    workload: &Workload,
    outcome: Outcome,
    sandbox: Option<&sandbox::Sandbox>,
    outputs: &Path,
) -> Result<Observed, VerifyError> {
    let mut files: Vec<OutputFile> = workload
        .files
        .iter()
        .map(|f| OutputFile {
            declared: f.clone(),
            contents: sandbox.and_then(|sb| std::fs::read(sb.locate(&workload.cwd, f)).ok()),
            saved: None,
        })
        .collect();
    save_outputs(outputs, workload, &outcome, &mut files)?;
    Ok(Observed {
        outcome,
        files,
        saved: Some((outputs.to_path_buf(), workload.file_stem())),
    })
}

/// Write `<stem>.stdout`, `.stderr`, `.status` and the produced files under
/// `<stem>.files/` into `dir`; records where each file went.
pub(crate) fn save_outputs(
    dir: &Path,
    w: &Workload,
    out: &Outcome,
    files: &mut [OutputFile],
) -> Result<(), VerifyError> {
    let write = |path: PathBuf, bytes: &[u8]| {
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(|e| VerifyError::io("create", parent, e))?;
        }
        std::fs::write(&path, bytes).map_err(|e| VerifyError::io("write", &path, e))
    };
    let stem = w.file_stem();
    let to = spool_for(dir, w);
    match &out.spooled {
        // Written as it arrived, where it belongs.
        Some(s) if s.to == to => {}
        Some(s) => {
            std::fs::create_dir_all(dir).map_err(|e| VerifyError::io("create", dir, e))?;
            for (from, to) in [(&s.to.stdout, &to.stdout), (&s.to.stderr, &to.stderr)] {
                std::fs::copy(from, to).map_err(|e| VerifyError::io("write", to, e))?;
            }
        }
        None => {
            write(to.stdout, &out.stdout)?;
            write(to.stderr, &out.stderr)?;
        }
    }
    write(
        dir.join(format!("{stem}.status")),
        format!("{}\n", out.status).as_bytes(),
    )?;
    for f in files {
        if let Some(c) = &f.contents {
            let path = dir
                .join(format!("{stem}.files"))
                .join(sandbox::saved_name(&w.cwd, &f.declared));
            write(path.clone(), c)?;
            f.saved = Some(path);
        }
    }
    Ok(())
}

/// A workload whose baseline disagrees with itself.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Nondeterminism {
    /// The first difference between the two runs.
    pub mismatch: Mismatch,
    /// What to write in optimize.toml.
    pub suggestion: String,
    /// Both runs exited alike: candidates are still held to the exit status.
    pub status_stable: bool,
}

/// A candidate's run of one workload against the baseline's ([`Reference::check_settled`]).
#[must_use]
#[derive(Debug)]
#[allow(clippy::large_enum_variant)] // one per workload checked: boxing buys nothing
pub(crate) enum Compared {
    /// Its outputs agree with the baseline's (as far as the workload's `expect` asks).
    Same,
    /// They differ: the first difference.
    Differs(Mismatch),
}

impl From<Result<(), Mismatch>> for Compared {
    fn from(r: Result<(), Mismatch>) -> Self {
        match r {
            Ok(()) => Compared::Same,
            Err(m) => Compared::Differs(m),
        }
    }
}

/// What every candidate is compared with: the baseline's observations, the workloads
/// that cannot be verified, and what the crate-tests verifier needs.
pub(crate) struct Reference {
    pub observed: BTreeMap<String, Observed>,
    /// The workloads whose baseline disagreed with itself: found by the determinism check,
    /// or for a deferred one when a candidate first differed on it.
    nondeterministic: RefCell<BTreeMap<String, Nondeterminism>>,
    /// Workloads whose first run took [`DEFER`] or more: not run twice up front; one more
    /// baseline run settles them the first time a candidate's outputs differ (a candidate
    /// that agrees with the baseline needs no second opinion of the baseline's).
    deferred: RefCell<BTreeSet<String>>,
    /// Each workload's shorter run of the two the determinism check made: the first one
    /// pays for cold caches and writing the outputs down, so the budget learns from this.
    pub warm_secs: BTreeMap<String, f64>,
    baseline: PathBuf,
    pub(super) baseline_settings: BuildSettings,
    pub(super) baseline_tests: RefCell<Option<BaselineTests>>,
    pub(super) test_runner: OnceCell<TestRunner>,
}

/// A workload this slow is not run a second time up front: the determinism check of a
/// slow workload costs a real share of the run's budget, and its runs are timed again and
/// again once candidates are measured. Shorter ones are: it costs little, names a workload
/// that varies before anything is built, and gives the budget a warm run time.
/// Figures: docs/src/decisions.md, "A slow workload is not run twice up front".
pub(crate) const DEFER: std::time::Duration = std::time::Duration::from_millis(500);

impl Reference {
    pub(crate) fn new(baseline: &Candidate) -> Self {
        Reference {
            observed: BTreeMap::new(),
            nondeterministic: RefCell::default(),
            deferred: RefCell::default(),
            warm_secs: BTreeMap::new(),
            baseline: baseline.binary.clone(),
            baseline_settings: baseline.settings.clone(),
            baseline_tests: RefCell::new(None),
            test_runner: OnceCell::new(),
        }
    }

    /// The workloads found to disagree with themselves so far.
    pub(crate) fn nondeterministic(&self) -> BTreeMap<String, Nondeterminism> {
        self.nondeterministic.borrow().clone()
    }

    /// Whether `w`'s baseline was found to disagree with itself, and how.
    pub(crate) fn nondeterminism(&self, w: &str) -> Option<Nondeterminism> {
        self.nondeterministic.borrow().get(w).cloned()
    }

    /// Compare a candidate's observation with the baseline's. A nondeterministic
    /// workload is held to its exit status only (when that was stable), never to its
    /// outputs.
    #[allow(clippy::result_large_err)] // built once per rejection: boxing buys nothing
    pub(crate) fn check(
        &self,
        w: &Workload,
        candidate: &str,
        obs: &Observed,
    ) -> Result<(), Mismatch> {
        let Some(base) = self.observed.get(&w.name) else {
            return Ok(());
        };
        let result = match self.nondeterministic.borrow().get(&w.name) {
            None => check_observed(w, base, obs),
            Some(n) if n.status_stable => {
                let mut status_only = w.clone();
                status_only.expect = Expect::ExitCode;
                check_observed(&status_only, base, obs)
            }
            Some(_) => Ok(()),
        };
        result.map_err(|m| m.in_stage(candidate))
    }

    /// [`Reference::check`], and when a candidate differs on a deferred workload, the
    /// baseline runs it once more first: a baseline that disagrees with itself names the
    /// workload (as the up-front check would have) and holds the candidate to less. The
    /// error is a fault (the baseline's run could not be made), never a difference.
    pub(crate) fn check_settled(
        &self,
        ctx: &Context,
        w: &Workload,
        candidate: &str,
        obs: &Observed,
    ) -> Result<Compared, VerifyError> {
        let first = self.check(w, candidate, obs);
        if first.is_err() && self.deferred.borrow_mut().remove(&w.name) {
            ctx.ui().info(&format!(
                "{candidate}: outputs differ on `{}`; the baseline runs it once more to see whether it agrees with itself",
                w.name
            ));
            let outputs = ctx.run.root.join("outputs").join("baseline-rerun");
            let second = observe(ctx, &self.baseline, w, &outputs)?;
            self.judge(ctx, w, &second);
            return Ok(Compared::from(self.check(w, candidate, obs)));
        }
        Ok(Compared::from(first))
    }

    /// Compare the baseline's `second` run of `w` with its first; one that differs is
    /// named with a fix and marked nondeterministic.
    fn judge(&self, ctx: &Context, w: &Workload, second: &Observed) {
        let Some(first) = self.observed.get(&w.name) else {
            return;
        };
        let Err(m) = check_observed(w, first, second) else {
            return;
        };
        let status_stable = first.outcome.status == second.outcome.status;
        let suggestion = suggest(w, first, second, &m);
        ctx.ui().warn(&format!(
            "workload `{}` is not deterministic: two runs of the baseline differ\n{}\n  fix: {suggestion}\n  until then, candidates are checked on {}",
            w.name,
            describe_runs(&m),
            if status_stable {
                "its exit status only"
            } else {
                "nothing of it (even the exit status varies)"
            }
        ));
        self.nondeterministic.borrow_mut().insert(
            w.name.clone(),
            Nondeterminism {
                mismatch: m,
                suggestion,
                status_stable,
            },
        );
    }
}

/// Run every workload shorter than [`DEFER`] a second time on the baseline (outputs under
/// `outputs/baseline-rerun/`); a workload whose two runs disagree is named with a fix and
/// marked nondeterministic, so candidates are not rejected on it. Longer ones are deferred
/// ([`Reference::check_settled`]).
pub(crate) fn check_determinism(
    ctx: &Context,
    baseline: &Candidate,
    reference: &mut Reference,
) -> Result<(), VerifyError> {
    let start = Instant::now();
    let outputs = ctx.run.root.join("outputs").join("baseline-rerun");
    let n = ctx.spec.workloads.len();
    let mut peak = 0;
    for (i, w) in ctx.spec.workloads.iter().enumerate() {
        let Some(first) = reference.observed.get(&w.name) else {
            continue;
        };
        if first.outcome.wall >= DEFER {
            reference.deferred.get_mut().insert(w.name.clone());
            continue;
        }
        ctx.ui().progress(&format!(
            "baseline: determinism check [{}/{n}] {}",
            i + 1,
            w.name
        ));
        let second = observe(ctx, &baseline.binary, w, &outputs)?;
        peak = peak.max(second.outcome.max_rss_bytes);
        let warm = first.outcome.wall.min(second.outcome.wall).as_secs_f64();
        reference.warm_secs.insert(w.name.clone(), warm);
        reference.judge(ctx, w, &second);
    }
    let deferred = reference.deferred.get_mut().len();
    if deferred == n && n > 0 {
        ctx.ui().info(&format!(
            "baseline determinism check: every workload takes {} or more a run, so each is run again only if a candidate's outputs differ",
            crate::util::format_span(DEFER.as_secs_f64())
        ));
        return Ok(());
    }
    ctx.record(
        "baseline: determinism check",
        start.elapsed().as_secs_f64(),
        Some(peak),
    );
    let later = match deferred {
        0 => String::new(),
        k => format!(
            "; {k} workload(s) of {} or more a run checked only if a candidate differs",
            crate::util::format_span(DEFER.as_secs_f64())
        ),
    };
    ctx.ui().done(
        &format!(
            "baseline determinism check {}/{} agree{later}",
            n - deferred - reference.nondeterministic.get_mut().len(),
            n - deferred
        ),
        start.elapsed().as_secs_f64(),
    );
    Ok(())
}

/// A mismatch between two baseline runs, worded as such.
fn describe_runs(m: &Mismatch) -> String {
    if m.stream == "status" || m.line == 0 {
        return format!(
            "  {}: first run {}, second run {}",
            m.stream, m.expected, m.actual
        );
    }
    format!(
        "  {} at {}:\n    first run:  {}\n    second run: {}",
        m.stream,
        m.place(),
        m.expected,
        m.actual
    )
}

/// The general suggestion.
const MASK: &str = "mask the lines that vary with `expect = { ignore = \"regex\" }`, or use `sort-lines = true` / `expect = { numeric = 0.01 }`";

/// The fix most likely to make a workload verifiable: `sort-lines` when only the order
/// changes, `numeric` when only numbers move a little, else an `ignore` regex for the
/// differing line.
fn suggest(w: &Workload, a: &Observed, b: &Observed, m: &Mismatch) -> String {
    if m.stream == "status" {
        return "the exit status itself varies between runs: make the workload deterministic (fixed seeds, inputs), or drop it".into();
    }
    let (Some(x), Some(y)) = (stream_bytes(a, &m.stream), stream_bytes(b, &m.stream)) else {
        if m.stream.starts_with("std") {
            return MASK.into(); // too long to read whole
        }
        return "make the workload deterministic, or stop declaring the output that varies".into();
    };
    let (x, y) = (&x[..], &y[..]);
    fn sorted(t: &[u8]) -> Vec<&[u8]> {
        let mut l = text::split_lines(t).0;
        l.sort();
        l
    }
    if !w.sort_lines && sorted(x) == sorted(y) {
        return "only the order of lines changes: set `sort-lines = true`".into();
    }
    let (lx, ly) = (text::split_lines(x).0, text::split_lines(y).0);
    if let Some(e) = numeric::max_error(&lx, &ly, Tolerance::Relative(0.0)) {
        if e > 0.0 && e <= 1e-3 {
            let tol = 10f64.powf(e.log10().ceil() + 1.0);
            return format!(
                "only numbers differ, by at most {e:.1e} (relative): set `expect = {{ numeric = {tol:e} }}`"
            );
        }
    }
    let (Some(lx_line), Some(ly_line)) = (
        lx.get(m.line.wrapping_sub(1)),
        ly.get(m.line.wrapping_sub(1)),
    ) else {
        return MASK.into();
    };
    let (lx_line, ly_line) = (
        String::from_utf8_lossy(lx_line),
        String::from_utf8_lossy(ly_line),
    );
    let re = line_regex(&lx_line);
    let matches_both = regex::Regex::new(&re)
        .map(|r| r.is_match(&lx_line) && r.is_match(&ly_line))
        .unwrap_or(false);
    if m.sorted || !matches_both {
        return MASK.into();
    }
    format!(
        "mask the line that varies: `expect = {{ ignore = {} }}`",
        toml_string(&re)
    )
}

/// The most of one output [`suggest`] reads to look at its lines in every order: past it
/// (a workload printing gigabytes), the suggestion is the general one.
const SUGGEST_MAX: u64 = 16 << 20;

fn stream_bytes<'a>(o: &'a Observed, stream: &str) -> Option<std::borrow::Cow<'a, [u8]>> {
    let i = match stream {
        "stdout" => 0,
        "stderr" => 1,
        _ => {
            let path = stream.strip_prefix("file ")?;
            let f = o
                .files
                .iter()
                .find(|f| f.declared.display().to_string() == path)?;
            return f.contents.as_deref().map(Into::into);
        }
    };
    match o.source(i) {
        text::Source::Bytes(b) => Some(b.into()),
        text::Source::File(p) => {
            let small = std::fs::metadata(p).is_ok_and(|m| m.len() <= SUGGEST_MAX);
            small
                .then(|| std::fs::read(p).ok())
                .flatten()
                .map(Into::into)
        }
    }
}

/// An anchored regex matching `line` with every run of digits generalized: the line
/// `pid 4242 at 17.5s` gives `^pid \d+ at \d+\.\d+s$`.
fn line_regex(line: &str) -> String {
    let escaped = regex::escape(line);
    let mut out = String::from("^");
    let mut in_digits = false;
    for c in escaped.chars() {
        if c.is_ascii_digit() {
            if !in_digits {
                out.push_str(r"\d+");
            }
            in_digits = true;
        } else {
            in_digits = false;
            out.push(c);
        }
    }
    out.push('$');
    out
}

#[cfg(test)]
mod tests {
    use super::super::tests::workload;
    use super::*;
    use crate::process::ExitStatus;
    use std::time::Duration;

    fn obs(stdout: &str) -> Observed {
        Observed::of(Outcome {
            status: ExitStatus {
                code: Some(0),
                signal: None,
            },
            stdout: stdout.as_bytes().to_vec(),
            stderr: Vec::new(),
            wall: Duration::ZERO,
            user: Duration::ZERO,
            sys: Duration::ZERO,
            max_rss_bytes: 0,
            timed_out: false,
            lingering: Default::default(),
            spooled: None,
            pid: 0,
            swept: 0,
        })
    }

    fn suggestion(a: &str, b: &str) -> String {
        let w = workload(Expect::Exact);
        let (a, b) = (obs(a), obs(b));
        let m = check_observed(&w, &a, &b).unwrap_err();
        suggest(&w, &a, &b, &m)
    }

    #[test]
    fn suggestions_fit_the_difference() {
        assert!(suggestion("a\nb\n", "b\na\n").contains("sort-lines = true"));
        let s = suggestion("x 1.00000001\n", "x 1.00000002\n");
        assert!(s.contains("numeric = 1e-7"), "{s}");
        // Close integers (pids, clocks) get a mask, not a tolerance.
        let s = suggestion("pid 24000\n", "pid 24001\n");
        assert!(s.contains(r"ignore = '^pid \d+$'"), "{s}");
        let s = suggestion(
            "result 42\npid 4242 at 17.5s\n",
            "result 42\npid 977 at 3.25s\n",
        );
        assert!(s.contains(r"ignore = '^pid \d+ at \d+\.\d+s$'"), "{s}");
        // The suggested regex masks exactly that line.
        let re = regex::Regex::new(r"^pid \d+ at \d+\.\d+s$").unwrap();
        assert!(re.is_match("pid 1 at 0.5s") && !re.is_match("result 42"));
    }

    #[test]
    fn nondeterministic_workloads_are_held_to_their_status_only() {
        let base = Candidate {
            stage: crate::stages::StageName::BASELINE,
            binary: "/b".into(),
            settings: BuildSettings {
                profile: "release".into(),
                profile_overrides: Default::default(),
                user_rustflags: vec![],
                stage_rustflags: vec![],
                target: None,
                features: Default::default(),
                allocator: None,
                c: None,
                relocs_twin: false,
            },
            size_bytes: 0,
            build_seconds: 0.0,
            notes: vec![],
            facts: Default::default(),
        };
        let w = workload(Expect::Exact);
        let mut r = Reference::new(&base);
        r.observed.insert("w".into(), obs("t=1\n"));
        let m = r.check(&w, "pgo", &obs("t=2\n")).unwrap_err();
        assert_eq!(m.stage, "pgo");
        let first = check_observed(&w, &obs("t=1\n"), &obs("t=3\n")).unwrap_err();
        let nd = |status_stable| Nondeterminism {
            mismatch: first.clone(),
            suggestion: String::new(),
            status_stable,
        };
        r.nondeterministic.get_mut().insert("w".into(), nd(true));
        assert!(r.nondeterminism("w").is_some());
        assert!(r.check(&w, "pgo", &obs("t=2\n")).is_ok());
        let mut failed = obs("t=2\n");
        failed.outcome.status.code = Some(1);
        assert_eq!(r.check(&w, "pgo", &failed).unwrap_err().stream, "status");
        r.nondeterministic.get_mut().insert("w".into(), nd(false));
        assert!(r.check(&w, "pgo", &failed).is_ok());
    }

    #[test]
    fn regex_and_toml_quoting() {
        assert_eq!(line_regex("t=3.5 (ms)"), r"^t=\d+\.\d+ \(ms\)$");
        assert_eq!(toml_string(r"^a\d$"), r"'^a\d$'");
        for s in [r"it's\d", r"^a\d$", "tab\there"] {
            let t: toml::Table = format!("x = {}", toml_string(s)).parse().unwrap();
            assert_eq!(t["x"].as_str(), Some(s));
        }
    }
}
