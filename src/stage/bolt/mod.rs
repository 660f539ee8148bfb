//! The BOLT stage: post-link layout optimization of the best candidate so far.
//!
//! 1. **Input**: the best candidate's exact settings plus `-Clink-args=-Wl,-q` (the linker
//!    keeps relocations, which BOLT needs to move code). When the best binary already has
//!    relocations and a symbol table it is used as is (no second build). When it has no
//!    symbol table (the profile strips symbols) the input is built with `strip = "debuginfo"`,
//!    and the BOLTed binary is stripped afterwards so it compares with what the user ships.
//!    The input's ELF section headers are checked before BOLT runs. For instrumentation,
//!    symbol names too long for BOLT's runtime are shortened in the copy BOLT reads
//!    (`elf.rs` says why and how).
//! 2. **Profile** (`profile.rs`): instrumentation (`llvm-bolt -instrument`, run the `train` workloads,
//!    `merge-fdata`) by default — it needs no hardware support; perf + LBR sampling
//!    (`perf record -j any,u` → `perf2bolt`) when asked for, or in `auto` mode when the
//!    machine can sample branch stacks.
//! 3. **Optimize**: `llvm-bolt <input> -o <new file> -data=<merged.fdata> <flags>`, with
//!    BOLT's dyno-stats (before/after) captured for the report.
//!
//! A library a host program loads (`cargo::library`) is skipped, saying so. When BOLT
//! cannot run on this binary here the stage is skipped (`NotAvailable`), when
//! something is really wrong it fails: `failure.rs` holds the rule. `stats.rs` reads
//! BOLT's dyno-stats.
//!
//! Never rewrites a file in place: the input, the instrumented binary and BOLT's output are
//! separate files in the run folder, each under the program's own file name in a folder of
//! its own (`bin/bolt-input/<name>`, `bin/bolt-instrumented/<name>`, `bin/bolt-out/<name>`,
//! `bin/bolt/<name>`: a program that reads its `argv[0]` trains as it runs), the profiles
//! and BOLT's log in `profiles/bolt/`.
//!
//! Must not: run cargo (through `ctx.build` only) or spawn processes other than through
//! `crate::process`. Verification and measurement are the pipeline's job.

pub(crate) mod elf;
mod failure;
mod fdata;
mod stats;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use super::{Candidate, Context, Offer, StageError, Standing};
use crate::cargo::{CargoError, EMIT_RELOCS_FLAG};
use crate::context::facts::{BoltFacts, StageFacts};
use crate::process;
use crate::spec::BoltMode;
use crate::stages::StageName;
use crate::store::{Blobs, Store};
use crate::toolchain::{self, BoltTools};

/// The label of the build of BOLT's input (the best so far linked with relocations); the
/// pgo stage starts it ahead under the same label when BOLT comes next.
pub(crate) const INPUT_LABEL: &str = "bolt: input (-Wl,-q)";
use crate::util::reset_dir;
use elf::ElfFacts;
use failure::{bolt_failure, save_log};
use stats::{parse_dyno_stats, parse_profiled_functions, percent, DynoStat};

/// The bound of each BOLT tool run (llvm-bolt, perf2bolt, merge-fdata, strip): an hour,
/// as a profile merge's; a tool that hangs fails the stage instead of the run.
pub(crate) const TOOL_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(3600);

/// The optimization flags used unless `[stages] bolt-args` replaces them. Close to what
/// rustc's own release pipeline passes (src/tools/opt-dist/src/bolt.rs), adjusted with
/// evidence from llvm-bolt 22:
/// - `-icf=all`, not `-icf=1`: BOLT 22 warns that the numeric value is deprecated.
/// - `-no-huge-pages`: by default BOLT aligns the hot text to 2 MiB and pads the file up to
///   it, so a small program grows many times over. The alignment only pays off when the
///   text is mapped on huge pages (`-hugify`), which plain programs are not.
///
/// Compared under fat LTO + PGO: opt-dist's exact set, the BOLT docs' set, these +
/// `-hugify`, and these without function splitting were none measurably faster than these,
/// so these stay.
/// Figures: docs/src/bolt.md; docs/src/decisions.md, "BOLT's default flags".
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

/// Why a library a host loads gets no BOLT row: llvm-bolt rewrites a shared object only
/// with options and an instrumentation runtime of its own, not wired here.
pub(crate) const SHARED_LIBRARY: &str = "BOLT on a shared library is not supported yet";

/// Set (to anything) to give BOLT the names as they are: for the tests that show what
/// happens without shortening, and for checking a BOLT that lifts the limit.
const KEEP_NAMES_ENV: &str = "CARGO_OPTIMIZE_BOLT_KEEP_NAMES";

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

/// The bolt stage's contract: one candidate.
pub(crate) struct Bolt;

impl super::Stage for Bolt {
    fn offers<'c>(&self, ctx: &'c Context, standing: &Standing) -> Vec<Offer<'c>> {
        offers(ctx, standing)
    }
}

/// BOLT on the best so far.
pub(crate) fn offers<'c>(ctx: &'c Context, standing: &Standing) -> Vec<Offer<'c>> {
    vec![Offer::against_best(prepare(ctx, standing.best))]
}

pub(crate) fn prepare(ctx: &Context, best: &Candidate) -> Result<Candidate, StageError> {
    if ctx.plan.project.library.is_some() {
        return Err(StageError::NotAvailable(SHARED_LIBRARY.into()));
    }
    let tools = find_tools(ctx)?;
    let mut notes = Vec::new();
    let chosen = choose_mode(ctx, &tools)?;
    let mode = chosen.mode;
    // The full reason (perf's own message) goes to the report; the terminal gets its gist.
    let gist = (chosen.reason)
        .split(": ")
        .take(2)
        .collect::<Vec<_>>()
        .join(": ");
    ctx.ui()
        .info(&format!("bolt: {} mode ({gist})", mode.as_str()));

    let input = prepare_input(ctx, best, mode, &mut notes)?;
    let args = optimize_args(ctx, &input);
    let kept = Store::new(&ctx.plan.optimize_dir, "bolted");
    let key = kept_key(&tools, &input, mode, &args, ctx);
    let lookup = key.as_deref().filter(|_| !ctx.plan.fresh);
    if let Some(c) = lookup.and_then(|k| reuse(ctx, &kept, k, &input)) {
        return Ok(c);
    }
    let cand = bolt_anew(ctx, &tools, best, input, chosen, args, notes)?;
    if let Some(k) = key {
        keep(ctx, &kept, &k, &cand);
    }
    Ok(cand)
}

/// What an earlier run's BOLT produced from the same input, training and flags.
#[derive(serde::Serialize, serde::Deserialize)]
struct KeptBolt {
    /// The output's digest in `cache/blobs/`.
    blob: String,
    size_bytes: u64,
    build_seconds: f64,
    notes: Vec<String>,
    facts: StageFacts,
}

/// The key of BOLTing `input` this way: the input's bytes, the train workloads, the mode,
/// the flags and llvm-bolt's version.
fn kept_key(
    tools: &BoltTools,
    input: &BoltInput,
    mode: Mode,
    args: &[String],
    ctx: &Context,
) -> Option<String> {
    let train: Vec<_> = ctx.spec.workloads.iter().filter(|w| w.train).collect();
    let how = format!(
        "bolt {} {args:?} {} strip={}",
        mode.as_str(),
        tools.llvm_bolt.version,
        input.strip_after
    );
    crate::cache::key_of(&[&input.path], &train, &how).ok()
}

/// The BOLTed binary an earlier run made under `key`, when its copy is intact.
fn reuse(ctx: &Context, kept: &Store, key: &str, input: &BoltInput) -> Option<Candidate> {
    let k: KeptBolt = kept.get(key)?;
    let blob = Blobs::new(&ctx.plan.optimize_dir, "blobs").get(&k.blob)?;
    let (binary, size_bytes) = ctx.install_as(StageName::Bolt.as_str(), &blob).ok()?;
    ctx.ui().info(
        "bolt: reused the BOLTed binary of an earlier run (the same input, train workloads and flags; --fresh trains again)",
    );
    Some(Candidate {
        stage: StageName::Bolt,
        binary,
        settings: input.settings.clone(),
        size_bytes,
        build_seconds: k.build_seconds,
        notes: k.notes,
        facts: k.facts,
    })
}

/// Keep the BOLTed candidate for later runs (best effort).
fn keep(ctx: &Context, kept: &Store, key: &str, cand: &Candidate) {
    let Ok(blob) = Blobs::new(&ctx.plan.optimize_dir, "blobs").put(&cand.binary) else {
        return;
    };
    let k = KeptBolt {
        blob,
        size_bytes: cand.size_bytes,
        build_seconds: cand.build_seconds,
        notes: cand.notes.clone(),
        facts: cand.facts.clone(),
    };
    kept.put(key, &k);
}

/// Instrument or sample, train, merge and optimize `input`.
fn bolt_anew(
    ctx: &Context,
    tools: &BoltTools,
    best: &Candidate,
    input: BoltInput,
    chosen: ModeChoice,
    args: Vec<String>,
    mut notes: Vec<String>,
) -> Result<Candidate, StageError> {
    let dir = ctx.run.profiles("bolt");
    reset_dir(&dir)?;

    let mode = chosen.mode;
    let (fdata_files, train_seconds, instrument_seconds) = match mode {
        Mode::Instrument => fdata::instrument_and_train(ctx, tools, &input.path, &dir)?,
        Mode::Perf => fdata::perf_record(ctx, tools, &input.path, &dir)?,
    };
    let merged = dir.join("merged.fdata");
    ctx.timed("bolt: merge-fdata", || {
        fdata::merge_fdata(&tools.merge_fdata.path, &fdata_files, &merged)
    })?;

    let out_path = beside(&input.path, "bolt-out")?;
    let optimized = optimize(ctx, tools, &input.path, &merged, &out_path, &args, &dir)?;

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
            mode_reason: chosen.reason,
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
            long_names_shortened: input.shortened.clone(),
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
    let found = match &ctx.plan.bolt_tools {
        Some(r) => r.clone(),
        None => toolchain::bolt_tools(&ctx.plan.rustc),
    };
    found.map_err(|e| StageError::NotAvailable(e.to_string()))
}

/// How the profile is collected, and why (the report keeps the reason whole).
struct ModeChoice {
    mode: Mode,
    reason: String,
}

impl ModeChoice {
    fn new(mode: Mode, reason: impl Into<String>) -> Self {
        ModeChoice {
            mode,
            reason: reason.into(),
        }
    }
}

/// The mode and why it was chosen. `perf` asked for explicitly but not usable here is
/// "not available" (with the reason), never a silent switch.
fn choose_mode(ctx: &Context, tools: &BoltTools) -> Result<ModeChoice, StageError> {
    let perf_usable = || -> Result<(), String> {
        if tools.perf2bolt.is_none() {
            return Err(format!(
                "perf2bolt of LLVM {} is not installed next to {}",
                ctx.plan.rustc.llvm_major,
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
        BoltMode::Instrument => Ok(ModeChoice::new(Mode::Instrument, "bolt-mode = \"instrument\"")),
        BoltMode::Perf => match perf_usable() {
            Ok(()) => Ok(ModeChoice::new(Mode::Perf, "bolt-mode = \"perf\"")),
            Err(why) => Err(StageError::NotAvailable(format!(
                "bolt-mode = \"perf\" but {why}\n  fix: set `bolt-mode = \"instrument\"` (or \"auto\") in [stages] of optimize.toml; instrumentation needs no hardware support"
            ))),
        },
        BoltMode::Auto => match perf_usable() {
            Ok(()) => Ok(ModeChoice::new(Mode::Perf, "auto: perf + LBR sampling works here")),
            Err(why) => Ok(ModeChoice::new(Mode::Instrument, format!("auto: {why}"))),
        },
    }
}

// ---------------------------------------------------------------------------------------
// The input binary

/// The binary BOLT reads.
struct BoltInput {
    /// A copy in the run folder (`bin/bolt-input/<name>`).
    path: PathBuf,
    settings: crate::cargo::BuildSettings,
    rebuilt: bool,
    build_seconds: f64,
    size_bytes: u64,
    elf: ElfFacts,
    /// The best binary had no symbol table: strip BOLT's output to match it.
    strip_after: bool,
    /// Symbol names shortened for BOLT's instrumentation runtime (elf.rs).
    shortened: elf::Shortened,
}

fn prepare_input(
    ctx: &Context,
    best: &Candidate,
    mode: Mode,
    notes: &mut Vec<String>,
) -> Result<BoltInput, StageError> {
    let best_elf = elf::facts(&best.binary).map_err(|e| {
        StageError::NotAvailable(format!(
            "BOLT rewrites ELF binaries (Linux) only, and {} is not one it can read: {e}",
            best.binary.display()
        ))
    })?;
    let dest = (ctx.run).candidate("bolt-input", &ctx.exe_file_name(&best.binary));
    if let Some(dir) = dest.parent() {
        std::fs::create_dir_all(dir)?;
    }
    if best_elf.symtab && best_elf.text_relocs {
        let shortened = place_input(ctx, &best.binary, &dest, mode, notes)?;
        let msg = format!(
            "the {} binary already has relocations and symbols; BOLT used it as is (no rebuild)",
            best.stage
        );
        ctx.ui().info(&format!("bolt: {msg}"));
        notes.push(msg);
        return Ok(BoltInput {
            size_bytes: std::fs::metadata(&dest)?.len(),
            path: dest,
            settings: best.settings.clone(),
            rebuilt: false,
            build_seconds: 0.0,
            elf: best_elf,
            strip_after: false,
            shortened,
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
        ctx.ui().info(&format!("bolt: {msg}"));
        notes.push(msg);
    }
    let built = ctx
        .build(INPUT_LABEL, &settings)
        .map_err(|e| explain_input_build_error(e, &settings.all_rustflags()))?;
    let shortened = place_input(ctx, &built.binary, &dest, mode, notes)?;
    let elf = elf::facts(&dest).map_err(|e| {
        StageError::Failed(format!(
            "cannot read the BOLT input {}: {e}",
            dest.display()
        ))
    })?;
    check_input(&elf, &dest, &settings.all_rustflags())?;
    Ok(BoltInput {
        size_bytes: std::fs::metadata(&dest)?.len(),
        path: dest,
        settings,
        rebuilt: true,
        build_seconds: built.seconds,
        elf,
        strip_after,
        shortened,
    })
}

/// Copy the binary BOLT will read into the run folder. For instrumentation, symbol names
/// too long for BOLT's runtime are shortened in the copy (elf.rs says why and how).
fn place_input(
    ctx: &Context,
    src: &Path,
    dest: &Path,
    mode: Mode,
    notes: &mut Vec<String>,
) -> Result<elf::Shortened, StageError> {
    if mode != Mode::Instrument || std::env::var_os(KEEP_NAMES_ENV).is_some() {
        std::fs::copy(src, dest)?;
        return Ok(elf::Shortened::default());
    }
    let shortened = elf::copy_with_short_names(src, dest).map_err(|e| {
        StageError::Failed(format!(
            "cannot copy {} to the BOLT input {}: {e}",
            src.display(),
            dest.display()
        ))
    })?;
    if shortened.names > 0 {
        let msg = format!(
            "{} symbol name(s) longer than {} bytes (the longest {} bytes: Rust's legacy mangling spells out deeply generic types) were shortened in the BOLT input, so the longest name is now {} bytes: BOLT's instrumentation runtime stops the program when a profile line (two names) overflows its {} bytes; the code is unchanged, and the BOLTed binary carries the short names",
            shortened.names,
            elf::MAX_NAME,
            shortened.longest_before,
            shortened.longest_after,
            elf::BOLT_RT_LINE_BUFFER
        );
        ctx.ui().info(&format!("bolt: {msg}"));
        notes.push(msg);
    }
    if shortened.left_shared > 0 {
        notes.push(format!(
            "{} over-long symbol name(s) share their bytes with other names in .strtab and were left as they are; if the instrumented binary stops with \"function name too large\", the stage is skipped",
            shortened.left_shared
        ));
    }
    Ok(shortened)
}

/// `path`'s file in the sibling folder `tag` (`bin/bolt-input/demo` → `bin/<tag>/demo`),
/// the folder made: every file BOLT makes keeps the program's name.
pub(super) fn beside(path: &Path, tag: &str) -> std::io::Result<PathBuf> {
    let dir = path
        .parent()
        .map(|d| d.with_file_name(tag))
        .unwrap_or_default();
    std::fs::create_dir_all(&dir)?;
    Ok(dir.join(path.file_name().unwrap_or_default()))
}

/// Whether the flags already ask the linker to keep relocations.
pub(super) fn has_emit_relocs(flags: &[String]) -> bool {
    flags.iter().any(|f| {
        f.contains("--emit-relocs")
            || (f.split([',', ' ', '=']).any(|part| part == "-q")
                && (f.contains("link-arg") || f.starts_with("-Wl")))
    })
}

/// Flags that strip symbols at link time, which no profile override can undo.
pub(super) fn stripping_flags(flags: &[String]) -> Vec<String> {
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
// Optimizing

/// The optimization flags: `bolt-args` when given (with `-dyno-stats` added for the
/// report), else [`DEFAULT_ARGS`] (+ cdsplit on x86-64, + keeping debug info when the
/// input has some).
fn optimize_args(ctx: &Context, input: &BoltInput) -> Vec<String> {
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
            if ctx.plan.rustc.host.starts_with("x86_64") {
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
        .args(args)
        .timeout(TOOL_TIMEOUT);
    let start = Instant::now();
    let spinner = ctx.ui().spinner("bolt: llvm-bolt optimizing");
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
    ctx.ui().done("bolt: optimized", seconds);
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
/// crashes). Without an llvm-strip the output keeps its symbols, and a note says so.
fn strip_symbols(
    ctx: &Context,
    bolted: &Path,
    notes: &mut Vec<String>,
) -> Result<PathBuf, StageError> {
    let n = ctx.plan.rustc.llvm_major;
    let rustup = toolchain::rustup_llvm_tool(&ctx.plan.rustc, "llvm-strip");
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
            toolchain::llvm_tools_fix(&ctx.plan.rustc)
        ));
        return Ok(bolted.to_path_buf());
    };
    let stripped = bolted.with_extension("stripped");
    let cmd = process::Command::new(&tool)
        .arg("--strip-all")
        .arg("-o")
        .arg(&stripped)
        .arg(bolted)
        .timeout(TOOL_TIMEOUT);
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
    // Layout shows in taken branches; instruction counts barely move (docs/src/bolt.md, "Flags").
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
    ctx.ui().info(&format!("bolt: {}", parts.join(", ")));
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
