//! A flamegraph of the run's shipped binary on one workload: `perf record -e cpu-clock -g`
//! (a software clock event: it samples in VMs without a hardware PMU), `perf script`, then
//! `inferno` folds the stacks and draws `<run folder>/hotspots/<workload>.svg` (the
//! `perf.data` stays beside it for `perf report -i`).
//!
//! When perf cannot record here it says exactly why and how to fix it ([`FlameError`]);
//! every process runs through `process` with a timeout. Stacks are walked by frame
//! pointers: without them (Rust's default) a sample shows its leaf function and little of
//! its callers.

use std::path::{Path, PathBuf};
use std::time::Duration;

use inferno::collapse::Collapse;

use crate::context::sandbox;
use crate::process::{self, ProcessError};
use crate::report::Report;
use crate::spec::{Spec, Workload};
use crate::toolchain::{self, PerfFacts};

/// Why no flamegraph was drawn, with the fix.
#[derive(Debug, thiserror::Error)]
pub(crate) enum FlameError {
    #[error(
        "perf is not installed, so no flamegraph can be sampled\n  fix: {}",
        PerfFacts::install_fix()
    )]
    NoPerf,
    #[error("flamegraphs are sampled with Linux perf, which {0} does not have: skipped here (`cargo optimize hotspots` without --flamegraph ranks the functions from the PGO profile)\n  fix: draw the flamegraph on Linux")]
    NotLinux(&'static str),
    #[error("this kernel has no perf events (/proc/sys/kernel/perf_event_paranoid is missing), so perf cannot sample\n  fix: run on a Linux kernel built with perf events (CONFIG_PERF_EVENTS)")]
    NoPerfEvents,
    #[error("perf may not sample here: kernel.perf_event_paranoid is {0}, which forbids it to users other than root\n  fix: `sudo sysctl kernel.perf_event_paranoid=2` (sampling your own processes in user space), or run as root")]
    Paranoid(i32),
    #[error("the run's shipped binary is gone: {0}\n  fix: run `cargo optimize` again")]
    NoBinary(PathBuf),
    #[error("{}/report.json names {} as the shipped binary, which is not in its run folder: not run\n  fix: sample a run's own binary (`cargo optimize hotspots RUN --flamegraph` on a run folder `cargo optimize` wrote, or run `cargo optimize` again)", run_dir.display(), binary.display())]
    Outside { binary: PathBuf, run_dir: PathBuf },
    #[error(
        "`perf record` could not sample workload `{workload}` ({status}): {reason}\n  fix: {fix}"
    )]
    Record {
        workload: String,
        status: String,
        reason: String,
        fix: String,
    },
    #[error("workload `{workload}` timed out under perf: it was stopped after {limit} (twice its `timeout` of {timeout}, {at}; perf's sampling slows a program down), so there is nothing to draw\n  fix: raise the workload's `timeout` at {at} (e.g. `timeout = \"{suggest}\"`), or sample a shorter workload with --flamegraph=WORKLOAD")]
    WorkloadTimedOut {
        workload: String,
        limit: String,
        timeout: String,
        /// `<spec>:<line>`: where the workload is.
        at: String,
        suggest: String,
    },
    #[error("`perf script` failed ({status}): {reason}")]
    Script { status: String, reason: String },
    #[error("perf took no sample of workload `{0}`: it ran too briefly (one sample every 250 µs)\n  fix: give the workload more work, or pick a longer one with --flamegraph=WORKLOAD")]
    NoSamples(String),
    #[error("no workload `{name}` in {spec}{}\n  fix: --flamegraph=NAME with one of them, or --flamegraph for the first eval workload", if known.is_empty() { String::new() } else { format!(" (its workloads: {known})") })]
    UnknownWorkload {
        name: String,
        spec: String,
        known: String,
    },
    #[error("{0} has no workload to sample\n  fix: add a [[workload]] (`cargo optimize init` writes a commented spec)")]
    NoWorkload(String),
    #[error(transparent)]
    Process(#[from] ProcessError),
    #[error("{0}")]
    Io(#[from] std::io::Error),
}

/// The perf event this process may sample with: the whole `cpu-clock` as root or with
/// `perf_event_paranoid` ≤ 1, its user-space part (`cpu-clock:u`) at 2, nothing above.
pub(crate) fn event_for(root: bool, paranoid: Option<i32>) -> Result<&'static str, FlameError> {
    match paranoid {
        None => Err(FlameError::NoPerfEvents),
        _ if root => Ok("cpu-clock"),
        Some(p) if p <= 1 => Ok("cpu-clock"),
        Some(2) => Ok("cpu-clock:u"),
        Some(p) => Err(FlameError::Paranoid(p)),
    }
}

/// The workload named `name`, or (`None`) the spec's first eval workload, else its first.
pub(crate) fn workload<'s>(spec: &'s Spec, name: Option<&str>) -> Result<&'s Workload, FlameError> {
    let all = &spec.workloads;
    let found = match name {
        Some(n) => all.iter().find(|w| w.name == n),
        None => all.iter().find(|w| w.eval).or_else(|| all.first()),
    };
    found.ok_or_else(|| match name {
        Some(n) => FlameError::UnknownWorkload {
            name: n.to_string(),
            spec: spec.path.display().to_string(),
            known: all
                .iter()
                .map(|w| w.name.as_str())
                .collect::<Vec<_>>()
                .join(", "),
        },
        None => FlameError::NoWorkload(spec.path.display().to_string()),
    })
}

/// The binary a run ships: `final.binary`, or the file of that name under the run
/// folder's `bin/` (a run folder that was moved: `bin/<tag>/<file>`, or an older run
/// folder's `bin/<tag>`); with no `final`, the baseline's. Only a file inside the run folder
/// is ever run (symlinks resolved): a report naming one elsewhere is refused.
pub(crate) fn shipped_binary(report: &Report, run_dir: &Path) -> Result<PathBuf, FlameError> {
    let baseline = || {
        let at = run_dir.join("bin").join("baseline");
        let exe = format!("{}.exe", report.bin);
        [at.join(&report.bin), at.join(exe)]
            .into_iter()
            .find(|p| p.is_file())
            .unwrap_or(at)
    };
    let named = (report.final_.as_ref())
        .map(|f| PathBuf::from(&f.binary))
        .unwrap_or_else(baseline);
    let inside = |p: &PathBuf| p.is_file() && crate::util::lies_inside(p, run_dir);
    if inside(&named) {
        return Ok(named);
    }
    let bin = run_dir.join("bin");
    let moved = named
        .file_name()
        .map(|n| match named.parent().and_then(Path::file_name) {
            Some(tag) if tag != "bin" => bin.join(tag).join(n),
            _ => bin.join(n),
        });
    match moved.filter(inside) {
        Some(p) => Ok(p),
        None if named.is_file() => Err(FlameError::Outside {
            binary: named,
            run_dir: run_dir.to_path_buf(),
        }),
        None => Err(FlameError::NoBinary(named)),
    }
}

/// Sample `workload` (of the spec at `spec`) on the run's shipped binary and draw
/// `<run_dir>/hotspots/<workload>.svg`. A workload that writes files runs in a private copy
/// of its cwd (without `exclude`).
pub(crate) fn draw(
    report: &Report,
    run_dir: &Path,
    workload: &Workload,
    spec: &Path,
    exclude: &[PathBuf],
) -> Result<PathBuf, FlameError> {
    if std::env::consts::OS != "linux" {
        return Err(FlameError::NotLinux(std::env::consts::OS));
    }
    let binary = shipped_binary(report, run_dir)?;
    let perf = toolchain::find_on_path("perf").ok_or(FlameError::NoPerf)?;
    let root = crate::sys::is_root();
    let event = event_for(root, toolchain::perf_paranoid())?;
    let dir = run_dir.join("hotspots");
    std::fs::create_dir_all(&dir)
        .map_err(|e| crate::util::io_error(e, "cannot create the flamegraph's folder", &dir))?;
    let stem = workload.file_stem();
    let data = dir.join(format!("{stem}.perf.data"));
    // Else perf keeps the earlier record as `.old`.
    let _ = std::fs::remove_file(&data);
    let copy = dir.join(format!("sandbox-{stem}"));
    let copied = sandbox::for_files(workload, spec, &copy, exclude)
        .map_err(|e| crate::util::io_error(e, "cannot copy the workload's cwd to", &copy))?;
    let (w, _sandbox) = match copied {
        Some((w, sb)) => (w, Some(sb)),
        None => (workload.clone(), None),
    };
    let jail = crate::process::Jail::new(run_dir);
    record(&perf, event, &binary, &w, &data, spec, &jail)?;
    let folded = fold(&script(&perf, &data)?)?;
    if folded.trim().is_empty() {
        return Err(FlameError::NoSamples(workload.name.clone()));
    }
    let svg = dir.join(format!("{stem}.svg"));
    let title = format!("{}: workload `{}` ({event})", report.bin, workload.name);
    plot(&folded, &title, &svg)?;
    Ok(svg)
}

/// `perf record -e EVENT -g -o DATA -- BINARY ARGS…` as workload `w` runs, bounded by twice
/// its `timeout` (a timeout is the workload's, said with its line in `spec`, not perf's).
fn record(
    perf: &Path,
    event: &str,
    binary: &Path,
    w: &Workload,
    data: &Path,
    spec: &Path,
    jail: &crate::process::Jail,
) -> Result<(), FlameError> {
    let mut cmd = w.command(binary, jail);
    let mut args: Vec<std::ffi::OsString> = ["record", "-q", "-e", event, "-g", "-o"]
        .iter()
        .map(Into::into)
        .collect();
    args.push(data.into());
    args.push("--".into());
    args.push(binary.into());
    args.append(&mut cmd.args);
    cmd.args = args;
    cmd.program = perf.to_path_buf();
    cmd.timeout = Some(w.timeout.saturating_mul(2));
    let out = process::run(&cmd)?;
    if out.status.success() && data.is_file() {
        return Ok(());
    }
    if out.timed_out {
        return Err(timed_out(w, spec));
    }
    let text = String::from_utf8_lossy(&out.stderr);
    Err(FlameError::Record {
        workload: w.name.clone(),
        status: out.status.to_string(),
        reason: last_words(&text),
        fix: record_fix(&text).into(),
    })
}

/// Workload `w` ran past twice its `timeout` under perf: its own limit, with a larger one.
fn timed_out(w: &Workload, spec: &Path) -> FlameError {
    let span = |d: Duration| crate::util::format_span(d.as_secs_f64());
    let suggest = (w.timeout.as_secs_f64() * 4.0).ceil().max(1.0);
    FlameError::WorkloadTimedOut {
        workload: w.name.clone(),
        limit: span(w.timeout.saturating_mul(2)),
        timeout: span(w.timeout),
        at: format!("{}:{}", spec.display(), w.line),
        suggest: format!("{}s", suggest as u64),
    }
}

/// The last line that says something (perf ends with a bare `Error:` line at times).
fn last_words(text: &str) -> String {
    text.lines()
        .map(str::trim)
        .rfind(|l| !l.is_empty() && !l.eq_ignore_ascii_case("error:"))
        .unwrap_or("no error message")
        .to_string()
}

/// What to do about a failed `perf record`, from what it said.
fn record_fix(stderr: &str) -> &'static str {
    let s = stderr.to_ascii_lowercase();
    if s.contains("paranoid") || s.contains("permission") || s.contains("not permitted") {
        "`sudo sysctl kernel.perf_event_paranoid=2`, or run as root; in a container, allow the perf_event_open system call (e.g. docker --cap-add PERFMON, or a seccomp profile that permits it)"
    } else if s.contains("not found for kernel") || s.contains("not supported") {
        "install the perf that matches this kernel (Debian: linux-perf; Ubuntu: linux-tools-$(uname -r))"
    } else {
        "check that the workload runs on its own (`cargo optimize bench`), then run `perf record -e cpu-clock -g -- true` to see what perf says"
    }
}

/// `perf script` of `data`: the samples as text stacks.
fn script(perf: &Path, data: &Path) -> Result<String, FlameError> {
    let cmd = process::Command::new(perf)
        .args(["script", "--no-inline", "-i"])
        .arg(data)
        .timeout(Duration::from_secs(600))
        .label("the flamegraph's samples");
    let out = process::run(&cmd)?;
    if !out.status.success() {
        return Err(FlameError::Script {
            status: out.status.to_string(),
            reason: last_words(&String::from_utf8_lossy(&out.stderr)),
        });
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// `perf script` output folded into one line per distinct stack (`a;b;c 12`).
pub(crate) fn fold(perf_script: &str) -> std::io::Result<String> {
    let mut folded = Vec::new();
    inferno::collapse::perf::Folder::default().collapse(perf_script.as_bytes(), &mut folded)?;
    Ok(String::from_utf8_lossy(&folded).into_owned())
}

/// Draw folded stacks into `svg` (atomically). The colours are a function of the names,
/// so the same samples give the same picture.
pub(crate) fn plot(folded: &str, title: &str, svg: &Path) -> Result<(), FlameError> {
    let mut opts = inferno::flamegraph::Options::default();
    opts.title = title.to_string();
    opts.count_name = "ns".into(); // cpu-clock samples carry their period in ns
    opts.deterministic = true;
    let mut out = Vec::new();
    inferno::flamegraph::from_lines(&mut opts, folded.lines(), &mut out)?;
    crate::util::atomic::write(svg, &out)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_event_follows_root_and_paranoid() {
        assert_eq!(event_for(true, Some(4)).unwrap(), "cpu-clock");
        assert_eq!(event_for(false, Some(-1)).unwrap(), "cpu-clock");
        assert_eq!(event_for(false, Some(1)).unwrap(), "cpu-clock");
        assert_eq!(event_for(false, Some(2)).unwrap(), "cpu-clock:u");
        let e = event_for(false, Some(3)).unwrap_err().to_string();
        assert!(
            e.contains("perf_event_paranoid is 3") && e.contains("fix: `sudo sysctl"),
            "{e}"
        );
        assert!(matches!(
            event_for(true, None),
            Err(FlameError::NoPerfEvents)
        ));
    }

    #[test]
    fn a_failed_record_says_why_and_what_to_do() {
        let err = "Error:\nAccess to performance monitoring and observability operations is limited.\nperf_event_paranoid setting is 4\nError:\n";
        assert_eq!(last_words(err), "perf_event_paranoid setting is 4");
        assert!(record_fix(err).contains("sysctl"));
        assert!(record_fix("WARNING: perf not found for kernel 6.1").contains("linux-perf"));
        assert_eq!(last_words(""), "no error message");
    }

    #[test]
    fn samples_are_folded_and_drawn_with_their_function_names() {
        let script = "demo 12 1.0: 250000 cpu-clock:\n\t    1000 demo::hot_loop+0x10 (/bin/demo)\n\t    2000 main+0x20 (/bin/demo)\n\ndemo 12 1.1: 250000 cpu-clock:\n\t    1000 demo::hot_loop+0x10 (/bin/demo)\n\t    2000 main+0x20 (/bin/demo)\n\n";
        let dir = tempfile::tempdir().unwrap();
        let svg = dir.path().join("w.svg");
        let folded = fold(script).unwrap();
        assert_eq!(folded, "demo;main;demo::hot_loop 500000\n");
        plot(&folded, "demo: workload `w`", &svg).unwrap();
        let text = std::fs::read_to_string(&svg).unwrap();
        assert!(text.starts_with("<?xml"), "{text}");
        assert!(
            text.contains("demo::hot_loop") && text.contains("500,000 ns"),
            "{text}"
        );
        let again = dir.path().join("again.svg");
        plot(&folded, "demo: workload `w`", &again).unwrap();
        assert_eq!(std::fs::read(&again).unwrap(), text.into_bytes());
        assert_eq!(fold("").unwrap(), "");
        assert!(plot("", "t", &dir.path().join("e.svg")).is_err());
        assert!(!dir.path().join("e.svg").exists());
    }

    #[test]
    fn only_a_binary_inside_the_run_folder_is_run() {
        let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
        let text =
            std::fs::read_to_string(manifest.join("tests/fixtures/reports/demo/report.json"))
                .unwrap();
        let mut report: Report = serde_json::from_str(&text).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let run_dir = dir.path().join("runs/1");
        std::fs::create_dir_all(run_dir.join("bin/pgo")).unwrap();
        let own = run_dir.join("bin/pgo/demo");
        std::fs::write(&own, "ELF").unwrap();
        let evil = dir.path().join("evil.sh");
        std::fs::write(&evil, "#!/bin/sh\n").unwrap();
        let mut names = |binary: &Path| {
            report.final_.as_mut().unwrap().binary = binary.display().to_string();
            shipped_binary(&report, &run_dir)
        };
        assert_eq!(names(&own).unwrap(), own);
        for outside in [evil.clone(), run_dir.join("bin/../../../evil.sh")] {
            let e = names(&outside).unwrap_err();
            assert!(matches!(e, FlameError::Outside { .. }), "{e}");
            assert!(e.to_string().contains("fix: "), "{e}");
        }
        // A moved run folder: its own `bin/<tag>/<name>` stands in.
        assert_eq!(
            names(&dir.path().join("elsewhere/bin/pgo/demo")).unwrap(),
            own
        );
        // An older run folder held each candidate as `bin/<tag>`.
        let old = run_dir.join("bin/profile");
        std::fs::write(&old, "ELF").unwrap();
        assert_eq!(names(&old).unwrap(), old);
        assert_eq!(names(&dir.path().join("moved/bin/profile")).unwrap(), old);
        // A program named as its tag (`bin/pgo/pgo`) is no older run's `bin/pgo`.
        let same = run_dir.join("bin/cpu/cpu");
        std::fs::create_dir_all(same.parent().unwrap()).unwrap();
        std::fs::write(&same, "ELF").unwrap();
        assert_eq!(names(&dir.path().join("moved/bin/cpu/cpu")).unwrap(), same);
    }
}
