//! Collecting BOLT's perf data (`.fdata`): instrumentation (`llvm-bolt -instrument`, the train
//! workloads on the instrumented binary) or perf + LBR sampling (`perf record -j any,u`,
//! `perf2bolt`), then `merge-fdata`. Workloads run through `ctx` and `crate::process` only.

use std::path::{Path, PathBuf};
use std::time::Instant;

use super::failure::{self, bolt_failure, save_log};
use super::{Context, StageError};
use crate::process::{self, Outcome};
use crate::spec::{Expect, Workload};
use crate::toolchain::{self, BoltTools};
use crate::util::indent;

/// `llvm-bolt -instrument`, then every train workload on the instrumented binary; returns
/// the `.fdata` files written, the training time and the instrumentation time.
pub(crate) fn instrument_and_train(
    ctx: &Context,
    tools: &BoltTools,
    input: &Path,
    dir: &Path,
) -> Result<(Vec<PathBuf>, f64, f64), StageError> {
    let instrumented = super::beside(input, "bolt-instrumented")?;
    let prefix = dir.join("prof");
    let cmd = process::Command::new(&tools.llvm_bolt.path)
        .arg(input)
        .arg("-instrument")
        .arg(format!("--instrumentation-file={}", prefix.display()))
        .arg("--instrumentation-file-append-pid")
        .arg("-o")
        .arg(&instrumented)
        .timeout(super::TOOL_TIMEOUT);
    let start = Instant::now();
    let spinner = ctx.ui().spinner("bolt: llvm-bolt -instrument");
    let out = process::run(&cmd);
    spinner.finish_and_clear();
    let out = out?;
    let instrument_seconds = start.elapsed().as_secs_f64();
    let log = dir.join("instrument.log");
    save_log(&log, &cmd, &out)?;
    if !out.status.success() {
        return Err(bolt_failure("instrumenting", &cmd, &out, &log, ctx));
    }
    ctx.ui().done("bolt: instrumented", instrument_seconds);
    ctx.record(
        "bolt: instrument",
        instrument_seconds,
        Some(out.max_rss_bytes),
    );

    let train = train_workloads(ctx);
    let start = Instant::now();
    for (i, w) in train.iter().enumerate() {
        ctx.ui().progress(&format!(
            "bolt: training [{}/{}] {}",
            i + 1,
            train.len(),
            w.name
        ));
        let out = ctx.run_workload(&instrumented, w, &[])?;
        if !out.status.success() && !out.timed_out {
            if let Some(refused) = failure::instrumented_run_refused(&w.name, &out, ctx) {
                return Err(refused);
            }
        }
        check_training_run(w, &out, "the BOLT-instrumented binary")?;
    }
    let train_seconds = start.elapsed().as_secs_f64();
    ctx.record("bolt: training", train_seconds, None);
    ctx.ui().done(
        &format!("bolt: trained on {n}/{n} workloads", n = train.len()),
        train_seconds,
    );

    let files = fdata_files(dir)?;
    if files.is_empty() {
        return Err(StageError::Failed(format!(
            "the train workloads ran on the BOLT-instrumented binary but wrote no profile (prof.*.fdata) in {}\n  usual causes: the program exits through `std::process::abort`, `_exit` or a signal (BOLT writes the profile from the exit-time DT_FINI hook), it is killed by its timeout, or it never runs its own code\n  fix: let the program return from main (or call std::process::exit) in the train workloads",
            dir.display()
        )));
    }
    // Only the profile is needed from here on; the instrumented binary is large (BOLT's
    // runtime and counters), and it is kept only when training failed, for inspection.
    let _ = std::fs::remove_file(&instrumented);
    Ok((files, train_seconds, instrument_seconds))
}

/// `perf record -e cycles:u -j any,u` around every train workload on the input binary,
/// then `perf2bolt` for each recording.
pub(crate) fn perf_record(
    ctx: &Context,
    tools: &BoltTools,
    input: &Path,
    dir: &Path,
) -> Result<(Vec<PathBuf>, f64, f64), StageError> {
    let perf = toolchain::find_on_path("perf").ok_or_else(|| {
        StageError::NotAvailable(format!(
            "perf is not on PATH\n  fix: {}",
            toolchain::PerfFacts::install_fix()
        ))
    })?;
    let perf2bolt = tools.perf2bolt.as_ref().ok_or_else(|| {
        StageError::NotAvailable(format!(
            "perf2bolt of LLVM {} is not installed\n  fix: {}",
            ctx.plan.rustc.llvm_major,
            toolchain::bolt_fix(ctx.plan.rustc.llvm_major)
        ))
    })?;
    let train = train_workloads(ctx);
    let start = Instant::now();
    let mut files = Vec::new();
    for (i, w) in train.iter().enumerate() {
        ctx.ui().progress(&format!(
            "bolt: recording [{}/{}] {}",
            i + 1,
            train.len(),
            w.name
        ));
        let data = dir.join(format!("perf.{i}.data"));
        let (w_iso, _sandbox) = ctx.sandboxed(w, "perf")?;
        let out = process::run(&perf_wrapped(&perf, &data, input, &w_iso, &ctx.jail))?;
        check_training_run(w, &out, "the program under `perf record`")?;
        let fdata = dir.join(format!("perf.{i}.fdata"));
        let cmd = process::Command::new(&perf2bolt.path)
            .arg("-p")
            .arg(&data)
            .arg("-o")
            .arg(&fdata)
            .arg(input)
            .timeout(super::TOOL_TIMEOUT);
        let conv = process::run(&cmd)?;
        let log = dir.join(format!("perf2bolt.{i}.log"));
        save_log(&log, &cmd, &conv)?;
        if !conv.status.success() {
            return Err(bolt_failure(
                "converting the perf profile of",
                &cmd,
                &conv,
                &log,
                ctx,
            ));
        }
        files.push(fdata);
    }
    let seconds = start.elapsed().as_secs_f64();
    ctx.record("bolt: perf record + perf2bolt", seconds, None);
    Ok((files, seconds, 0.0))
}

/// The workload's own command (args, stdin, env, cwd, timeout) run under `perf record`.
fn perf_wrapped(
    perf: &Path,
    data: &Path,
    binary: &Path,
    w: &Workload,
    jail: &process::Jail,
) -> process::Command {
    let mut cmd = w.command(binary, jail);
    let inner = std::mem::take(&mut cmd.args);
    cmd.program = perf.to_path_buf();
    cmd.args = ["record", "-q", "-e", "cycles:u", "-j", "any,u", "-o"]
        .iter()
        .map(Into::into)
        .collect();
    cmd.args.push(data.into());
    cmd.args.push("--".into());
    cmd.args.push(binary.into());
    cmd.args.extend(inner);
    cmd
}

fn train_workloads<'a>(ctx: &Context<'a>) -> Vec<&'a Workload> {
    ctx.spec.workloads.iter().filter(|w| w.train).collect()
}

/// A training run must end the way it does on the baseline (which was checked to succeed).
fn check_training_run(w: &Workload, out: &Outcome, what: &str) -> Result<(), StageError> {
    if out.timed_out {
        return Err(StageError::Failed(format!(
            "train workload `{}` timed out after {} on {what} (BOLT instrumentation slows a program down, typically 2-5×)\n  fix: raise the workload's `timeout`, or give it a smaller input",
            w.name,
            humantime::format_duration(w.timeout)
        )));
    }
    if !out.status.success() && w.expect != Expect::ExitCode {
        return Err(StageError::Failed(format!(
            "train workload `{}` failed on {what} ({}) although it succeeds on the baseline; its stderr ends with:\n{}\n  fix: this is a BOLT problem with this binary: try `bolt-mode = \"perf\"` where LBR is available, or leave bolt out of [stages] try",
            w.name,
            out.status,
            indent(&out.stderr_tail(15), "    ")
        )));
    }
    Ok(())
}

/// Non-empty `*.fdata` files of the folder, sorted.
fn fdata_files(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.extension().is_some_and(|x| x == "fdata")
                && std::fs::metadata(p).is_ok_and(|m| m.len() > 0)
        })
        .collect();
    files.sort();
    Ok(files)
}

pub(crate) fn merge_fdata(merge: &Path, files: &[PathBuf], out: &Path) -> Result<(), StageError> {
    let cmd = process::Command::new(merge)
        .arg("-o")
        .arg(out)
        .args(files.iter().map(|f| f.as_os_str().to_owned()))
        .timeout(super::TOOL_TIMEOUT);
    let res = process::run(&cmd)?;
    if !res.status.success() {
        return Err(StageError::Failed(format!(
            "`{}` failed ({}):\n{}",
            cmd.display(),
            res.status,
            indent(&res.stderr_tail(15), "    ")
        )));
    }
    if std::fs::metadata(out).map(|m| m.len()).unwrap_or(0) == 0 {
        return Err(StageError::Failed(format!(
            "merge-fdata wrote an empty profile {} from {} file(s)",
            out.display(),
            files.len()
        )));
    }
    Ok(())
}
