//! The BOLT stage: post-link layout optimization of the best candidate so far.
//!
//! 1. **Input**: the best candidate's exact settings plus `-Clink-args=-Wl,-q` (the linker
//!    keeps relocations, which BOLT needs to move code). When the best binary already has
//!    relocations and a symbol table it is used as is (no second build). When it has no
//!    symbol table (the profile strips symbols) the input is built with `strip = false`,
//!    and the BOLTed binary is stripped afterwards so it compares with what the user ships.
//!    The input's ELF section headers are checked before BOLT runs.
//! 2. **Profile**: instrumentation (`llvm-bolt -instrument`, run the `train` workloads,
//!    `merge-fdata`) by default — it needs no hardware support; perf + LBR sampling
//!    (`perf record -j any,u` → `perf2bolt`) when asked for, or in `auto` mode when the
//!    machine can sample branch stacks.
//! 3. **Optimize**: `llvm-bolt <input> -o <new file> -data=<merged.fdata> <flags>`, with
//!    BOLT's dyno-stats (before/after) captured for the report.
//!
//! Never rewrites a file in place: the input, the instrumented binary and BOLT's output are
//! separate files in the run folder (`bin/bolt-input`, `bin/bolt-instrumented`,
//! `bin/bolt`), the profiles and BOLT's log in `profiles/bolt/`.
//!
//! Must not: run cargo (through `ctx.build` only) or spawn processes other than through
//! `crate::process`. Verification and measurement are the pipeline's job.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use super::{Candidate, Context, Offer, StageError, Standing};
use crate::cargo::CargoError;
use crate::context::facts::{BoltFacts, DynoStat, StageFacts};
use crate::process::{self, Outcome};
use crate::spec::{BoltMode, Expect, StageName, Workload};
use crate::toolchain::{self, BoltTools};
use crate::util::{indent, reset_dir};

/// The linker flag that keeps relocations in the output (`--emit-relocs`).
const EMIT_RELOCS_FLAG: &str = "-Clink-args=-Wl,-q";

/// The optimization flags used unless `[stages] bolt-args` replaces them. Close to what
/// rustc's own release pipeline passes (src/tools/opt-dist/src/bolt.rs), adjusted with
/// evidence from llvm-bolt 22:
/// - `-icf=all`, not `-icf=1`: BOLT 22 warns that the numeric value is deprecated.
/// - `-no-huge-pages`: by default BOLT aligns the hot text to 2 MiB and pads the file up to
///   it; a 350 KB program came out at 6.4 MB (0.53 MB with this flag). The alignment only
///   pays off when the text is mapped on huge pages (`-hugify`), which plain programs are not.
const DEFAULT_ARGS: &[&str] = &[
    "-reorder-blocks=ext-tsp",
    "-reorder-functions=cdsort",
    "-split-functions",
    "-split-all-cold",
    "-split-eh",
    "-jump-tables=move",
    "-icf=all",
    "-no-huge-pages",
    "-dyno-stats",
];

/// Three-way hot/warm/cold splitting; rustc uses it on x86-64 (broken on AArch64 there).
const X86_SPLIT_STRATEGY: &str = "-split-strategy=cdsplit";

/// How the profile is collected.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Instrument,
    Perf,
}

impl Mode {
    fn as_str(self) -> &'static str {
        match self {
            Mode::Instrument => "instrument",
            Mode::Perf => "perf",
        }
    }
}

/// BOLT on the best so far.
pub fn offers(ctx: &Context, standing: &Standing) -> Vec<Offer> {
    vec![Offer::against_best(prepare(ctx, standing.best))]
}

fn prepare(ctx: &Context, best: &Candidate) -> Result<Candidate, StageError> {
    let tools = find_tools(ctx)?;
    let mut notes = Vec::new();
    let (mode, mode_reason) = choose_mode(ctx, &tools)?;
    // The full reason (perf's own message) goes to the report; the terminal gets its gist.
    let gist = mode_reason
        .split(": ")
        .take(2)
        .collect::<Vec<_>>()
        .join(": ");
    ctx.ui
        .info(&format!("bolt: {} mode ({gist})", mode.as_str()));

    let input = prepare_input(ctx, best, &mut notes)?;
    let dir = ctx.run.profiles("bolt");
    reset_dir(&dir)?;

    let (fdata_files, train_seconds, instrument_seconds) = match mode {
        Mode::Instrument => instrument_and_train(ctx, &tools, &input.path, &dir)?,
        Mode::Perf => perf_record(ctx, &tools, &input.path, &dir)?,
    };
    let merged = dir.join("merged.fdata");
    ctx.timed("bolt: merge-fdata", || {
        merge_fdata(&tools.merge_fdata.path, &fdata_files, &merged)
    })?;

    let args = optimize_args(ctx, &input);
    let out_path = ctx.run.bin(StageName::Bolt).with_extension("bolt-out");
    let optimized = optimize(ctx, &tools, &input.path, &merged, &out_path, &args, &dir)?;

    let mut final_path = out_path.clone();
    if input.strip_after {
        final_path = strip_symbols(ctx, &out_path, &mut notes)?;
    }
    let (binary, size_bytes) = ctx.install_as(StageName::Bolt.as_str(), &final_path)?;
    let _ = std::fs::remove_file(&out_path);
    if final_path != out_path {
        let _ = std::fs::remove_file(&final_path);
    }

    report_headline(ctx, &optimized, best.size_bytes, size_bytes);
    for w in &optimized.warnings {
        if w.contains("profile") || w.contains("stale") {
            notes.push(format!("llvm-bolt said: {w}"));
        }
    }
    let facts = StageFacts {
        dyno_stats: Some(optimized.dyno_stats.clone()),
        bolt: Some(BoltFacts {
            mode: mode.as_str().to_string(),
            mode_reason,
            llvm_bolt: tools.llvm_bolt.path.display().to_string(),
            llvm_bolt_version: tools.llvm_bolt.version.clone(),
            args,
            seconds: optimized.seconds,
            instrument_seconds,
            train_seconds,
            input: input.path.display().to_string(),
            input_rebuilt: input.rebuilt,
            size_before_bytes: best.size_bytes,
            input_size_bytes: input.size_bytes,
            output_size_bytes: size_bytes,
            stripped_after: input.strip_after,
            fdata_files: fdata_files.len(),
            profile: merged.display().to_string(),
            functions_with_profile: optimized.functions_with_profile,
            functions_total: optimized.functions_total,
            warnings: optimized.warnings.clone(),
            log: optimized.log.display().to_string(),
        }),
        ..Default::default()
    };
    Ok(Candidate {
        stage: StageName::Bolt,
        binary,
        settings: input.settings,
        size_bytes,
        build_seconds: input.build_seconds + optimized.seconds,
        notes,
        facts,
    })
}

// ---------------------------------------------------------------------------------------
// Tools and mode

fn find_tools(ctx: &Context) -> Result<BoltTools, StageError> {
    let found = match &ctx.bolt_tools {
        Some(r) => r.clone(),
        None => toolchain::bolt_tools(ctx.rustc),
    };
    found.map_err(|e| StageError::NotAvailable(e.to_string()))
}

/// The mode and why it was chosen. `perf` asked for explicitly but not usable here is
/// "not available" (with the reason), never a silent switch.
fn choose_mode(ctx: &Context, tools: &BoltTools) -> Result<(Mode, String), StageError> {
    let perf_usable = || -> Result<(), String> {
        if tools.perf2bolt.is_none() {
            return Err(format!(
                "perf2bolt of LLVM {} is not installed next to {}",
                ctx.rustc.llvm_major,
                tools.llvm_bolt.path.display()
            ));
        }
        let perf = toolchain::find_on_path("perf");
        let lbr = toolchain::lbr_usable(perf.as_deref());
        if lbr.available {
            Ok(())
        } else {
            Err(format!(
                "perf cannot sample branch stacks (LBR): {}",
                lbr.detail
            ))
        }
    };
    match ctx.spec.stages.bolt_mode {
        BoltMode::Instrument => Ok((Mode::Instrument, "bolt-mode = \"instrument\"".into())),
        BoltMode::Perf => match perf_usable() {
            Ok(()) => Ok((Mode::Perf, "bolt-mode = \"perf\"".into())),
            Err(why) => Err(StageError::NotAvailable(format!(
                "bolt-mode = \"perf\" but {why}\n  fix: set `bolt-mode = \"instrument\"` (or \"auto\") in [stages] of optimize.toml; instrumentation needs no hardware support"
            ))),
        },
        BoltMode::Auto => match perf_usable() {
            Ok(()) => Ok((Mode::Perf, "auto: perf + LBR sampling works here".into())),
            Err(why) => Ok((Mode::Instrument, format!("auto: {why}"))),
        },
    }
}

// ---------------------------------------------------------------------------------------
// The input binary

/// The binary BOLT reads.
struct Input {
    /// A copy in the run folder (`bin/bolt-input`).
    path: PathBuf,
    settings: crate::cargo::BuildSettings,
    rebuilt: bool,
    build_seconds: f64,
    size_bytes: u64,
    elf: ElfFacts,
    /// The best binary had no symbol table: strip BOLT's output to match it.
    strip_after: bool,
}

fn prepare_input(
    ctx: &Context,
    best: &Candidate,
    notes: &mut Vec<String>,
) -> Result<Input, StageError> {
    let best_elf = elf_facts(&best.binary).map_err(|e| {
        StageError::NotAvailable(format!(
            "BOLT rewrites ELF binaries (Linux) only, and {} is not one it can read: {e}",
            best.binary.display()
        ))
    })?;
    let dest = ctx.run.bin(StageName::Bolt).with_file_name("bolt-input");
    if let Some(dir) = dest.parent() {
        std::fs::create_dir_all(dir)?;
    }
    if best_elf.symtab && best_elf.text_relocs {
        std::fs::copy(&best.binary, &dest)?;
        let msg = format!(
            "the {} binary already has relocations and symbols; BOLT used it as is (no rebuild)",
            best.stage
        );
        ctx.ui.info(&format!("bolt: {msg}"));
        notes.push(msg);
        return Ok(Input {
            size_bytes: std::fs::metadata(&dest)?.len(),
            path: dest,
            settings: best.settings.clone(),
            rebuilt: false,
            build_seconds: 0.0,
            elf: best_elf,
            strip_after: false,
        });
    }

    let mut settings = best.settings.clone();
    if !has_emit_relocs(&settings.all_rustflags()) {
        settings = settings.with_rustflags([EMIT_RELOCS_FLAG]);
    }
    let strip_after = !best_elf.symtab;
    if strip_after {
        // "debuginfo", not false: it keeps the symbols BOLT needs and still drops the
        // debug info the user's `strip = true` drops (std's would otherwise come in).
        settings
            .profile_overrides
            .insert("strip".into(), "\"debuginfo\"".into());
        let msg = format!(
            "the {} binary has no symbol table (profile `{}` strips symbols), and BOLT needs one: the BOLT input was built with strip = \"debuginfo\" (linking with -Wl,-q and --strip-all together fails anyway), and the BOLTed binary was stripped afterwards so its size compares with what you ship",
            best.stage, settings.profile
        );
        ctx.ui.info(&format!("bolt: {msg}"));
        notes.push(msg);
    }
    let built = ctx
        .build("bolt: input (-Wl,-q)", &settings)
        .map_err(|e| explain_input_build_error(e, &settings.all_rustflags()))?;
    std::fs::copy(&built.binary, &dest)?;
    let elf = elf_facts(&dest).map_err(|e| {
        StageError::Failed(format!(
            "cannot read the BOLT input {}: {e}",
            dest.display()
        ))
    })?;
    check_input(&elf, &dest, &settings.all_rustflags())?;
    Ok(Input {
        size_bytes: std::fs::metadata(&dest)?.len(),
        path: dest,
        settings,
        rebuilt: true,
        build_seconds: built.seconds,
        elf,
        strip_after,
    })
}

/// Whether the flags already ask the linker to keep relocations.
fn has_emit_relocs(flags: &[String]) -> bool {
    flags.iter().any(|f| {
        f.contains("--emit-relocs")
            || (f.split([',', ' ', '=']).any(|part| part == "-q")
                && (f.contains("link-arg") || f.starts_with("-Wl")))
    })
}

/// Flags that strip symbols at link time, which no profile override can undo.
fn stripping_flags(flags: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    for (i, f) in flags.iter().enumerate() {
        let joined = if f == "-C" {
            flags
                .get(i + 1)
                .map(|n| format!("-C{n}"))
                .unwrap_or_default()
        } else {
            f.clone()
        };
        let strips = joined.starts_with("-Cstrip=symbols")
            || (joined.contains("link-arg")
                && joined
                    .split([',', ' ', '='])
                    .any(|p| p == "-s" || p == "--strip-all" || p == "-Wl,-s"));
        if strips {
            out.push(joined);
        }
    }
    out
}

fn explain_input_build_error(e: CargoError, flags: &[String]) -> StageError {
    let text = e.to_string();
    let strip = stripping_flags(flags);
    if text.contains("--strip-all and --emit-relocs")
        || (!strip.is_empty() && text.contains("strip"))
    {
        return StageError::Failed(format!(
            "the BOLT input (linked with -Wl,-q to keep relocations) failed to link because symbols are stripped at link time{}: the linker cannot strip and keep relocations at once, and BOLT needs both symbols and relocations\n  fix: strip through the cargo profile instead (`strip = true` in [profile.release], which cargo optimize turns off for the BOLT input and applies after BOLT), or leave bolt out of [stages] try\n{text}",
            if strip.is_empty() {
                String::new()
            } else {
                format!(" by your rustflags ({})", strip.join(" "))
            }
        ));
    }
    StageError::Cargo(e)
}

/// BOLT needs a symbol table (to find functions) and the link-time relocations (to move
/// code); say precisely what is missing and why it usually is.
fn check_input(elf: &ElfFacts, path: &Path, flags: &[String]) -> Result<(), StageError> {
    if !elf.symtab {
        let strip = stripping_flags(flags);
        return Err(StageError::Failed(format!(
            "the BOLT input {} has no symbol table (.symtab), so BOLT cannot find its functions; it was built with strip = false, so {}\n  fix: remove symbol stripping from your rustflags/linker arguments (the cargo profile's `strip` is handled), or leave bolt out of [stages] try",
            path.display(),
            if strip.is_empty() {
                "something in the link stripped it (a linker script or wrapper?)".to_string()
            } else {
                format!("your rustflags strip it: {}", strip.join(" "))
            }
        )));
    }
    if !elf.text_relocs {
        return Err(StageError::Failed(format!(
            "the BOLT input {} has no .rela.text section: the linker did not keep relocations although it was passed -Wl,-q (--emit-relocs); BOLT cannot reorder functions without them\n  fix: use a linker that honours --emit-relocs (GNU ld, gold, lld and mold do; check `-Clinker`/`-Clink-arg` in your rustflags: {})",
            path.display(),
            if flags.is_empty() { "(none)".to_string() } else { flags.join(" ") }
        )));
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------
// Profiles

/// `llvm-bolt -instrument`, then every train workload on the instrumented binary; returns
/// the `.fdata` files written, the training time and the instrumentation time.
fn instrument_and_train(
    ctx: &Context,
    tools: &BoltTools,
    input: &Path,
    dir: &Path,
) -> Result<(Vec<PathBuf>, f64, f64), StageError> {
    let instrumented = input.with_file_name("bolt-instrumented");
    let prefix = dir.join("prof");
    let cmd = process::Command::new(&tools.llvm_bolt.path)
        .arg(input)
        .arg("-instrument")
        .arg(format!("--instrumentation-file={}", prefix.display()))
        .arg("--instrumentation-file-append-pid")
        .arg("-o")
        .arg(&instrumented);
    let start = Instant::now();
    let spinner = ctx.ui.spinner("bolt: llvm-bolt -instrument");
    let out = process::run(&cmd);
    spinner.finish_and_clear();
    let out = out?;
    let instrument_seconds = start.elapsed().as_secs_f64();
    let log = dir.join("instrument.log");
    save_log(&log, &cmd, &out)?;
    if !out.status.success() {
        return Err(bolt_failure("instrumenting", &cmd, &out, &log, ctx));
    }
    ctx.ui.done("bolt: instrumented", instrument_seconds);
    ctx.record(
        "bolt: instrument",
        instrument_seconds,
        Some(out.max_rss_bytes),
    );

    let train = train_workloads(ctx);
    let start = Instant::now();
    for (i, w) in train.iter().enumerate() {
        ctx.ui.step(&format!(
            "bolt: training [{}/{}] {}",
            i + 1,
            train.len(),
            w.name
        ));
        let out = ctx.run_workload(&instrumented, w, &[])?;
        check_training_run(w, &out, "the BOLT-instrumented binary")?;
    }
    let train_seconds = start.elapsed().as_secs_f64();
    ctx.record("bolt: training", train_seconds, None);

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
fn perf_record(
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
            ctx.rustc.llvm_major,
            toolchain::bolt_fix(ctx.rustc.llvm_major)
        ))
    })?;
    let train = train_workloads(ctx);
    let start = Instant::now();
    let mut files = Vec::new();
    for (i, w) in train.iter().enumerate() {
        ctx.ui.step(&format!(
            "bolt: recording [{}/{}] {}",
            i + 1,
            train.len(),
            w.name
        ));
        let data = dir.join(format!("perf.{i}.data"));
        let (w_iso, _sandbox) = ctx.sandboxed(w, "perf")?;
        let out = process::run(&perf_wrapped(&perf, &data, input, &w_iso))?;
        check_training_run(w, &out, "the program under `perf record`")?;
        let fdata = dir.join(format!("perf.{i}.fdata"));
        let cmd = process::Command::new(&perf2bolt.path)
            .arg("-p")
            .arg(&data)
            .arg("-o")
            .arg(&fdata)
            .arg(input);
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
fn perf_wrapped(perf: &Path, data: &Path, binary: &Path, w: &Workload) -> process::Command {
    let mut cmd = w.command(binary);
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

fn merge_fdata(merge: &Path, files: &[PathBuf], out: &Path) -> Result<(), StageError> {
    let cmd = process::Command::new(merge)
        .arg("-o")
        .arg(out)
        .args(files.iter().map(|f| f.as_os_str().to_owned()));
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

// ---------------------------------------------------------------------------------------
// Optimizing

/// The optimization flags: `bolt-args` when given (with `-dyno-stats` added for the
/// report), else [`DEFAULT_ARGS`] (+ cdsplit on x86-64, + keeping debug info when the
/// input has some).
fn optimize_args(ctx: &Context, input: &Input) -> Vec<String> {
    match &ctx.spec.stages.bolt_args {
        Some(user) => {
            let mut args = user.clone();
            if !args
                .iter()
                .any(|a| a.trim_start_matches('-').starts_with("dyno-stats"))
            {
                args.push("-dyno-stats".into());
            }
            args
        }
        None => {
            let mut args: Vec<String> = DEFAULT_ARGS.iter().map(|s| s.to_string()).collect();
            if ctx.host.starts_with("x86_64") {
                args.push(X86_SPLIT_STRATEGY.into());
            }
            if input.elf.debug_info && !input.strip_after {
                // Without it BOLT drops the debug info the user asked for.
                args.push("-update-debug-sections".into());
            }
            args
        }
    }
}

/// What one optimizing run of llvm-bolt produced.
struct Optimized {
    seconds: f64,
    dyno_stats: BTreeMap<String, DynoStat>,
    functions_with_profile: Option<u64>,
    functions_total: Option<u64>,
    warnings: Vec<String>,
    log: PathBuf,
}

fn optimize(
    ctx: &Context,
    tools: &BoltTools,
    input: &Path,
    fdata: &Path,
    out_path: &Path,
    args: &[String],
    dir: &Path,
) -> Result<Optimized, StageError> {
    let _ = std::fs::remove_file(out_path);
    let cmd = process::Command::new(&tools.llvm_bolt.path)
        .arg(input)
        .arg("-o")
        .arg(out_path)
        .arg(format!("-data={}", fdata.display()))
        .args(args);
    let start = Instant::now();
    let spinner = ctx.ui.spinner("bolt: llvm-bolt optimizing");
    let out = process::run(&cmd);
    spinner.finish_and_clear();
    let out = out?;
    let seconds = start.elapsed().as_secs_f64();
    let log = dir.join("llvm-bolt.log");
    save_log(&log, &cmd, &out)?;
    ctx.record("bolt: llvm-bolt optimize", seconds, Some(out.max_rss_bytes));
    if !out.status.success() || !out_path.exists() {
        return Err(bolt_failure("optimizing", &cmd, &out, &log, ctx));
    }
    ctx.ui.done("bolt: optimized", seconds);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let (with, total) = parse_profiled_functions(&stdout).unzip();
    let mut warnings: Vec<String> = Vec::new();
    for line in stdout.lines().chain(stderr.lines()) {
        if let Some(w) = line.trim().strip_prefix("BOLT-WARNING: ") {
            if !warnings.iter().any(|x| x == w) {
                warnings.push(w.to_string());
            }
        }
    }
    Ok(Optimized {
        seconds,
        dyno_stats: parse_dyno_stats(&stdout),
        functions_with_profile: with,
        functions_total: total,
        warnings,
        log,
    })
}

/// llvm-bolt (or perf2bolt) failed or crashed on the input (`bin/bolt-input`): BOLT's own
/// words, and what to do.
fn bolt_failure(
    doing: &str,
    cmd: &process::Command,
    out: &Outcome,
    log: &Path,
    ctx: &Context,
) -> StageError {
    let stdout = String::from_utf8_lossy(&out.stdout);
    // BOLT prints some errors on stdout (BOLT-ERROR) and option errors on stderr.
    let mut said: Vec<String> = stdout
        .lines()
        .filter(|l| l.contains("BOLT-ERROR"))
        .map(str::to_string)
        .collect();
    let tail = out.stderr_tail(15);
    if !tail.trim().is_empty() {
        said.push(tail);
    }
    if said.is_empty() {
        said.push(process::tail_lines(&out.stdout, 10));
    }
    let how = match out.status.signal {
        Some(s) => format!("crashed (killed by signal {s})"),
        None => format!("failed ({})", out.status),
    };
    let fix = if ctx.spec.stages.bolt_args.is_some() && doing == "optimizing" {
        "check `bolt-args` in [stages] of optimize.toml (`llvm-bolt --help-hidden` lists the options), or remove it to use the built-in flags".to_string()
    } else {
        format!(
            "leave bolt out of [stages] try (the best candidate so far is kept), and report the BOLT problem with its log {}",
            log.display()
        )
    };
    let tool = cmd
        .program
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "llvm-bolt".into());
    let input = cmd
        .args
        .iter()
        .find(|a| Path::new(a).file_name().is_some_and(|n| n == "bolt-input"))
        .map(|a| a.to_string_lossy().into_owned())
        .unwrap_or_default();
    StageError::Failed(format!(
        "{tool} {how} {doing} {input}:\n{}\n  command: {}\n  fix: {fix}",
        indent(&said.join("\n"), "    "),
        cmd.display(),
    ))
}

/// Strip the symbols of BOLT's output (the user's profile strips them) with llvm-strip:
/// GNU strip corrupts BOLTed binaries (it cannot place BOLT's new segments and the result
/// crashes). Without an llvm-strip the output keeps its symbols, and a note says so.
fn strip_symbols(
    ctx: &Context,
    bolted: &Path,
    notes: &mut Vec<String>,
) -> Result<PathBuf, StageError> {
    let n = ctx.rustc.llvm_major;
    let rustup = toolchain::rustup_llvm_tool(ctx.rustc, "llvm-strip");
    let versioned_dir = PathBuf::from(format!("/usr/lib/llvm-{n}/bin/llvm-strip"));
    let tool = [Some(rustup), Some(versioned_dir)]
        .into_iter()
        .flatten()
        .find(|p| p.is_file())
        .or_else(|| toolchain::find_on_path(&format!("llvm-strip-{n}")))
        .or_else(|| toolchain::find_on_path("llvm-strip"));
    let Some(tool) = tool else {
        notes.push(format!(
            "the BOLTed binary keeps its symbol table: no llvm-strip found to remove it (GNU strip corrupts BOLT output); fix: {}",
            toolchain::llvm_tools_fix(ctx.rustc)
        ));
        return Ok(bolted.to_path_buf());
    };
    let stripped = bolted.with_extension("stripped");
    let cmd = process::Command::new(&tool)
        .arg("--strip-all")
        .arg("-o")
        .arg(&stripped)
        .arg(bolted);
    let out = ctx.timed("bolt: strip", || process::run(&cmd))?;
    if !out.status.success() {
        notes.push(format!(
            "the BOLTed binary keeps its symbol table: `{}` failed ({}): {}",
            cmd.display(),
            out.status,
            out.stderr_tail(3)
        ));
        return Ok(bolted.to_path_buf());
    }
    Ok(stripped)
}

fn report_headline(ctx: &Context, o: &Optimized, size_before: u64, size_after: u64) {
    let mut parts = Vec::new();
    if let (Some(w), Some(t)) = (o.functions_with_profile, o.functions_total) {
        parts.push(format!("{w} of {t} functions profiled"));
    }
    // Layout shows in taken branches; instruction counts barely move (ARCHITECTURE §6).
    if let Some(s) = o.dyno_stats.get("taken branches") {
        parts.push(format!(
            "taken branches {} → {} ({})",
            s.before,
            s.after,
            percent(s.before, s.after)
        ));
    }
    parts.push(format!(
        "size {} → {}",
        crate::util::human_bytes(size_before),
        crate::util::human_bytes(size_after)
    ));
    ctx.ui.info(&format!("bolt: {}", parts.join(", ")));
}

fn percent(before: u64, after: u64) -> String {
    if before == 0 {
        return "n/a".into();
    }
    format!(
        "{:+.1} %",
        (after as f64 - before as f64) / before as f64 * 100.0
    )
}

fn save_log(path: &Path, cmd: &process::Command, out: &Outcome) -> std::io::Result<()> {
    let mut text = format!("$ {}\n# {}\n", cmd.display(), out.status);
    text.push_str(&String::from_utf8_lossy(&out.stdout));
    text.push_str("\n# stderr\n");
    text.push_str(&String::from_utf8_lossy(&out.stderr));
    std::fs::write(path, text)
}

// ---------------------------------------------------------------------------------------
// BOLT's output

/// Parse BOLT's `-dyno-stats` tables. BOLT prints a header line
/// (`BOLT-INFO: program-wide dynostats …:`), the table before its optimizations, and — when
/// anything changed — the table after them (values with `(+x.y%)`/`(=)`). With several
/// headers (`-dyno-stats-all`) the first table is the input and the last the output.
pub fn parse_dyno_stats(stdout: &str) -> BTreeMap<String, DynoStat> {
    let re = regex::Regex::new(r"^\s*(\d+)\s+:\s+(.+?)(?:\s+\((?:[+-]?[0-9.]+%|=)\))?\s*$")
        .expect("valid regex");
    let mut tables: Vec<Vec<(String, u64)>> = Vec::new();
    let mut in_stats = false;
    let mut current: Vec<(String, u64)> = Vec::new();
    for line in stdout.lines() {
        if line.contains("dynostats") {
            in_stats = true;
            if !current.is_empty() {
                tables.push(std::mem::take(&mut current));
            }
            continue;
        }
        if !in_stats {
            continue;
        }
        match re.captures(line) {
            Some(c) => {
                if let Ok(v) = c[1].parse() {
                    current.push((c[2].to_string(), v));
                }
            }
            None => {
                if !current.is_empty() {
                    tables.push(std::mem::take(&mut current));
                }
                if !line.trim().is_empty() {
                    in_stats = false;
                }
            }
        }
    }
    if !current.is_empty() {
        tables.push(current);
    }
    let (Some(first), Some(last)) = (tables.first(), tables.last()) else {
        return BTreeMap::new();
    };
    let after: BTreeMap<&str, u64> = last.iter().map(|(k, v)| (k.as_str(), *v)).collect();
    first
        .iter()
        .map(|(k, before)| {
            let after = after.get(k.as_str()).copied().unwrap_or(*before);
            (
                k.clone(),
                DynoStat {
                    before: *before,
                    after,
                },
            )
        })
        .collect()
}

/// `BOLT-INFO: 37 out of 546 functions in the binary (6.8%) have non-empty execution profile`
fn parse_profiled_functions(stdout: &str) -> Option<(u64, u64)> {
    let re = regex::Regex::new(
        r"(\d+) out of (\d+) functions in the binary .*have non-empty execution profile",
    )
    .expect("valid regex");
    stdout.lines().find_map(|l| {
        let c = re.captures(l)?;
        Some((c[1].parse().ok()?, c[2].parse().ok()?))
    })
}

// ---------------------------------------------------------------------------------------
// ELF section headers (just enough to check a BOLT input)

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct ElfFacts {
    /// `.symtab`: the static symbol table (gone when stripped).
    symtab: bool,
    /// `.rela.text`: link-time relocations of the code (present only with --emit-relocs).
    text_relocs: bool,
    /// `.debug_info`: DWARF.
    debug_info: bool,
}

const SHT_SYMTAB: u32 = 2;
const SHT_RELA: u32 = 4;

/// Read the section headers of a 64-bit little-endian ELF file.
fn elf_facts(path: &Path) -> Result<ElfFacts, String> {
    use std::io::{Read, Seek, SeekFrom};
    let mut f = std::fs::File::open(path).map_err(|e| e.to_string())?;
    let mut eh = Vec::with_capacity(64);
    (&mut f)
        .take(64)
        .read_to_end(&mut eh)
        .map_err(|e| e.to_string())?;
    if eh.len() < 4 || &eh[..4] != b"\x7fELF" {
        return Err("not an ELF file".into());
    }
    if eh.len() < 64 {
        return Err("truncated ELF header".into());
    }
    let mut read_at = |offset: u64, len: usize| -> Result<Vec<u8>, String> {
        let mut buf = vec![0u8; len];
        f.seek(SeekFrom::Start(offset))
            .and_then(|_| f.read_exact(&mut buf))
            .map_err(|e| format!("truncated ELF file ({e})"))?;
        Ok(buf)
    };
    if eh[4] != 2 || eh[5] != 1 {
        return Err("not a 64-bit little-endian ELF file".into());
    }
    let shoff = u64_at(&eh, 0x28);
    let shentsize = u16_at(&eh, 0x3a) as usize;
    let shnum = u16_at(&eh, 0x3c) as usize;
    let shstrndx = u16_at(&eh, 0x3e) as usize;
    if shnum == 0 || shentsize < 64 || shstrndx >= shnum {
        return Err("no section headers".into());
    }
    let table = read_at(shoff, shnum * shentsize)?;
    let header = |i: usize| &table[i * shentsize..i * shentsize + 64];
    let strtab = header(shstrndx);
    let names_len = u64_at(strtab, 0x20).min(1 << 20) as usize;
    let names = read_at(u64_at(strtab, 0x18), names_len)?;
    let mut facts = ElfFacts::default();
    for i in 0..shnum {
        let h = header(i);
        let name_off = u32_at(h, 0) as usize;
        let name = names
            .get(name_off..)
            .and_then(|s| s.split(|&b| b == 0).next())
            .unwrap_or_default();
        match (u32_at(h, 4), name) {
            (SHT_SYMTAB, _) => facts.symtab = true,
            (SHT_RELA, b".rela.text") => facts.text_relocs = true,
            (_, b".debug_info") => facts.debug_info = true,
            _ => {}
        }
    }
    Ok(facts)
}

fn u16_at(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}
fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().unwrap_or_default())
}
fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;

    const DYNO: &str =
        "BOLT-INFO: 37 out of 546 functions in the binary (6.8%) have non-empty execution profile
BOLT-INFO: program-wide dynostats after all optimizations before SCTC and FOP:

              500437 : executed forward branches
                 136 : taken forward branches
           594086254 : executed instructions
                   2 : taken jump table branches
            58608420 : taken branches

              500465 : executed forward branches (+0.0%)
                  26 : taken forward branches (-80.9%)
           593586150 : executed instructions (-0.1%)
                   2 : taken jump table branches (=)
            58608258 : taken branches (-0.0%)

BOLT-INFO: padding code to 0x600000 to accommodate hot text
";

    #[test]
    fn dyno_stats_before_and_after() {
        let s = parse_dyno_stats(DYNO);
        assert_eq!(s.len(), 5);
        assert_eq!(
            s["taken forward branches"],
            DynoStat {
                before: 136,
                after: 26
            }
        );
        assert_eq!(
            s["taken jump table branches"],
            DynoStat {
                before: 2,
                after: 2
            }
        );
        assert_eq!(s["executed instructions"].after, 593586150);
        assert_eq!(parse_profiled_functions(DYNO), Some((37, 546)));
    }

    #[test]
    fn dyno_stats_without_change_have_equal_before_and_after() {
        let text = "BOLT-INFO: program-wide dynostats after all optimizations before SCTC and FOP (no change):\n\n   10 : taken branches\n    4 : all function calls\n\nBOLT-INFO: done\n";
        let s = parse_dyno_stats(text);
        assert_eq!(
            s["taken branches"],
            DynoStat {
                before: 10,
                after: 10
            }
        );
        assert!(parse_dyno_stats("BOLT-INFO: nothing\n").is_empty());
    }

    #[test]
    fn emit_relocs_detection() {
        let f = |v: &[&str]| has_emit_relocs(&v.iter().map(|s| s.to_string()).collect::<Vec<_>>());
        assert!(f(&["-Clink-args=-Wl,-q"]));
        assert!(f(&["-Clink-arg=-Wl,--emit-relocs"]));
        assert!(f(&["-C", "link-args=-Wl,-q,-znow"]));
        assert!(!f(&["-Ctarget-cpu=native"]));
        assert!(!f(&["-Clink-args=-Wl,-O1"]));
    }

    #[test]
    fn stripping_flag_detection() {
        let f = |v: &[&str]| stripping_flags(&v.iter().map(|s| s.to_string()).collect::<Vec<_>>());
        assert_eq!(f(&["-Cstrip=symbols"]), vec!["-Cstrip=symbols"]);
        assert_eq!(f(&["-C", "strip=symbols"]), vec!["-Cstrip=symbols"]);
        assert_eq!(f(&["-Clink-arg=-s"]), vec!["-Clink-arg=-s"]);
        assert!(f(&["-Cstrip=debuginfo", "-Clink-args=-Wl,-q"]).is_empty());
    }

    #[test]
    fn elf_facts_of_this_test_binary_and_of_a_non_elf() {
        let me = std::env::current_exe().unwrap();
        let facts = elf_facts(&me).unwrap();
        assert!(facts.symtab, "test binaries keep their symbols");
        assert!(!facts.text_relocs, "not linked with --emit-relocs");
        let tmp = tempfile::tempdir().unwrap();
        let not_elf = tmp.path().join("x");
        std::fs::write(&not_elf, b"#!/bin/sh\necho hi\n").unwrap();
        assert_eq!(elf_facts(&not_elf).unwrap_err(), "not an ELF file");
        std::fs::write(&not_elf, b"\x7fELF\x02\x01").unwrap();
        assert_eq!(elf_facts(&not_elf).unwrap_err(), "truncated ELF header");
    }
}
