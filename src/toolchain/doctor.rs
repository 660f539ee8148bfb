//! `Facts` — everything the toolchain module knows about this machine, gathered once — and
//! the `doctor` command that prints them (text or JSON) and, with `--fix`, installs what it
//! can. The pipeline records `Facts::summary()` in report.json.
//!
//! Must not: decide anything about stages beyond "is the tool there"; the pipeline does.

use super::{
    bolt_fix, bolt_tools, llvm_profdata, llvm_tools_rustup_args, rustc, BoltTools, CpuFacts,
    PerfFacts, Rustc, Tool, ToolError,
};
use crate::process;
use serde::Serialize;

/// The command that installs Rust (when rustc itself is missing).
const RUSTUP_INSTALL: &str = "curl --proto '=https' --tlsv1.2 -sSf https://sh.rustup.rs | sh";

/// All toolchain and machine facts. Missing tools are `Err` with the fix, never a panic.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Facts {
    #[serde(serialize_with = "ser_result")]
    pub rustc: Result<Rustc, ToolError>,
    #[serde(serialize_with = "ser_result")]
    pub llvm_profdata: Result<Tool, ToolError>,
    #[serde(serialize_with = "ser_result")]
    pub bolt: Result<BoltTools, ToolError>,
    pub perf: PerfFacts,
    pub cpu: CpuFacts,
    /// What works on this platform, and what is skipped with the reason.
    pub platform: Vec<super::platform::Row>,
    /// The host's C compiler, which the alloc stage's allocators need (`None`: none found).
    pub c_compiler: Option<String>,
    /// mimalloc's shared build, which the alloc stage preloads to preview it (`None`: not
    /// found, or not Linux).
    pub mimalloc_shared: Option<std::path::PathBuf>,
    /// The clang of rustc's LLVM (the c-compiler stage, whole-program PGO).
    #[serde(serialize_with = "ser_result")]
    pub clang: Result<super::clang::Clang, ToolError>,
    /// What keeps workloads from the user's files: `landlock` or `copy-check`, and why.
    pub confinement: Confinement,
    /// The host program a library's workloads run, when doctor runs in such a package.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host: Option<super::python::HostFacts>,
}

/// `doctor`'s line on the confinement of workloads (`sys::confine::protection`).
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Confinement {
    pub kind: &'static str,
    pub detail: String,
}

impl Facts {
    /// Ask rustc, look for the LLVM tools, probe perf and the CPU. Takes well under a second
    /// (perf and CPU probes run while the tools are being looked for).
    pub(crate) fn gather() -> Facts {
        std::thread::scope(|s| {
            let perf = s.spawn(PerfFacts::gather);
            let cpu = s.spawn(CpuFacts::gather);
            let rustc = rustc().map_err(|e| ToolError {
                problem: format!("rustc not usable: {e:#}"),
                fix: RUSTUP_INSTALL.to_string(),
            });
            let (llvm_profdata, bolt) = match &rustc {
                Ok(r) => (llvm_profdata(r), bolt_tools(r)),
                Err(e) => {
                    let needs = ToolError {
                        problem: "cannot look for LLVM tools without rustc's LLVM version".into(),
                        fix: e.fix.clone(),
                    };
                    (Err(needs.clone()), Err(needs))
                }
            };
            let host = rustc.as_ref().map(|r| r.host.clone()).unwrap_or_default();
            let clang = match &rustc {
                Ok(r) => super::clang::find(r),
                Err(e) => Err(e.clone()),
            };
            Facts {
                clang,
                c_compiler: super::platform::c_compiler(&host),
                mimalloc_shared: std::env::current_exe().ok().and_then(|me| {
                    super::platform::shared_library(&super::platform::MIMALLOC_SHARED, &host, &me)
                }),
                rustc,
                llvm_profdata,
                bolt,
                perf: perf.join().expect("perf probe does not panic"),
                cpu: cpu.join().expect("cpu probe does not panic"),
                platform: super::platform::here(),
                host: None,
                confinement: {
                    let p = crate::sys::confine::protection();
                    Confinement {
                        kind: p.kind(),
                        detail: p.describe(),
                    }
                },
            }
        })
    }

    /// Everything the default pipeline (stages profile, cpu, pgo, bolt) needs: rustc, an
    /// llvm-profdata of rustc's LLVM major, and llvm-bolt + merge-fdata of that major.
    pub(crate) fn ready(&self) -> bool {
        self.problems().is_empty()
    }

    /// The missing required pieces, each with its fix.
    pub(crate) fn problems(&self) -> Vec<&ToolError> {
        let mut v: Vec<&ToolError> = (self.host.iter()).flat_map(|h| &h.problems).collect();
        if let Err(e) = &self.rustc {
            v.push(e);
            return v; // the tool errors only repeat it
        }
        if let Err(e) = &self.llvm_profdata {
            v.push(e);
        }
        // Off Linux BOLT cannot run at all: a platform line, not a missing piece.
        if let (Err(e), None) = (&self.bolt, super::bolt_unsupported_here()) {
            v.push(e);
        }
        v
    }

    /// BOLT can profile with perf + LBR instead of instrumenting the binary.
    pub(crate) fn bolt_perf_mode_usable(&self) -> bool {
        self.perf.lbr.available && matches!(&self.bolt, Ok(b) if b.perf2bolt.is_some())
    }
}

/// `Ok(T)` as T's object plus `"ok": true`; `Err` as `{"ok": false, "problem", "fix"}`.
fn ser_result<T: Serialize, S: serde::Serializer>(
    r: &Result<T, ToolError>,
    s: S,
) -> Result<S::Ok, S::Error> {
    use serde::ser::Error as _;
    let mut v = match r {
        Ok(t) => serde_json::to_value(t),
        Err(e) => serde_json::to_value(e),
    }
    .map_err(S::Error::custom)?;
    if let serde_json::Value::Object(m) = &mut v {
        m.insert("ok".into(), r.is_ok().into());
    }
    v.serialize(s)
}

/// `--json` output: the facts plus the verdict.
#[derive(Serialize)]
struct DoctorJson<'a> {
    ready: bool,
    problems: Vec<&'a ToolError>,
    #[serde(flatten)]
    facts: &'a Facts,
}

/// `cargo optimize doctor`: the facts as text (coloured marks when `color`) or JSON, and
/// the exit code; fixes what `--fix` can first.
///
/// Exit code rule: 0 when everything the default stage list needs is present — rustc, an
/// llvm-profdata of rustc's LLVM major (pgo), and llvm-bolt + merge-fdata of that major
/// (bolt, which is in the default stage list) — otherwise 1. perf, hardware counters, LBR
/// and perf2bolt are reported (with fixes where there are any) but never fail it: without
/// them benchmarks report time only and BOLT uses instrumentation mode.
///
/// In a package whose `cdylib` a host program loads (`host`), the interpreter the workloads
/// run and, for a pyo3 module, whether the module built matches it: a mismatch fails it too.
pub(crate) fn doctor_command(
    fix_it: bool,
    json: bool,
    color: bool,
    host: Option<&super::python::HostQuery>,
) -> anyhow::Result<(String, i32)> {
    let gather = || Facts {
        host: host.map(super::python::gather),
        ..Facts::gather()
    };
    let mut facts = gather();
    if fix_it && !facts.ready() {
        fix(&facts);
        eprintln!("re-checking …");
        facts = gather();
    }
    let text = if json {
        let out = DoctorJson {
            ready: facts.ready(),
            problems: facts.problems(),
            facts: &facts,
        };
        format!("{}\n", serde_json::to_string_pretty(&out)?)
    } else {
        let tty = std::io::IsTerminal::is_terminal(&std::io::stdout());
        render(&facts, tty, color)
    };
    Ok((text, if facts.ready() { 0 } else { 1 }))
}

// ---------------------------------------------------------------------------------------
// --fix

fn fix(facts: &Facts) {
    let Ok(rustc) = &facts.rustc else {
        eprintln!("cannot fix: rustc is missing; install Rust: {RUSTUP_INSTALL}");
        return;
    };
    let overridden = |var: &str| std::env::var_os(var).is_some_and(|v| !v.is_empty());
    if facts.llvm_profdata.is_err() && overridden(super::LLVM_PROFDATA_ENV) {
        eprintln!(
            "not installing llvm-tools: {} is set and is the only llvm-profdata considered; \
             correct or unset it",
            super::LLVM_PROFDATA_ENV
        );
    } else if facts.llvm_profdata.is_err() {
        match super::find_on_path("rustup") {
            Some(rustup) => {
                run_shown(
                    &process::Command::new(rustup)
                        .args(llvm_tools_rustup_args(rustc))
                        .timeout(INSTALL_TIMEOUT),
                );
            }
            None => eprintln!(
                "cannot fix llvm-profdata: rustup is not on PATH (install an llvm-profdata of \
                 LLVM {} yourself, e.g. apt-get install -y llvm-{})",
                rustc.llvm_major, rustc.llvm_major
            ),
        }
    }
    if facts.bolt.is_err() && overridden(super::LLVM_BOLT_ENV) {
        eprintln!(
            "not installing BOLT: {} is set and is the only llvm-bolt considered; correct or \
             unset it",
            super::LLVM_BOLT_ENV
        );
    } else if facts.bolt.is_err() && super::bolt_unsupported_here().is_none() {
        let n = rustc.llvm_major;
        apt_install(
            &format!("bolt-{n}"),
            &bolt_fix(n),
            &format!("LLVM {n}'s BOLT"),
        );
    }
    if facts.clang.is_err() && !overridden(super::clang::CLANG_ENV) {
        let n = rustc.llvm_major;
        let fix = super::clang::clang_fix(n);
        apt_install(&format!("clang-{n}"), &fix, &format!("clang {n}"));
    }
}

/// `apt-get update && apt-get install -y <package>` as root, each bounded; otherwise why not
/// and the command (`fix`) to run.
fn apt_install(package: &str, fix: &str, what: &str) {
    let root = crate::sys::is_root();
    match super::find_on_path("apt-get") {
        _ if !root => eprintln!("not installing {package}: needs root. Run as root: {fix}"),
        None => {
            eprintln!("not installing {package}: apt-get is not on PATH (install {what} yourself)")
        }
        Some(apt) => {
            let update = process::Command::new(&apt)
                .arg("update")
                .env("DEBIAN_FRONTEND", "noninteractive")
                .timeout(INSTALL_TIMEOUT);
            if run_shown(&update) {
                run_shown(
                    &process::Command::new(&apt)
                        .args(["install", "-y", package])
                        .env("DEBIAN_FRONTEND", "noninteractive")
                        .timeout(INSTALL_TIMEOUT),
                );
            }
        }
    }
}

/// The bound of each command `--fix` runs (a download and an install: minutes, never a
/// hang on a lock or a prompt).
const INSTALL_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30 * 60);

/// Show a command, run it, show the end of its output; true when it succeeded.
fn run_shown(cmd: &process::Command) -> bool {
    eprintln!("running: {}", cmd.display());
    match process::run(cmd) {
        Ok(out) if out.timed_out => {
            eprintln!(
                "  failed: `{}` did not finish within {} and was stopped, with everything it \
                 started\n  fix: run it yourself to see where it waits (a lock held by \
                 another package manager, a prompt, the network)",
                cmd.display(),
                humantime::format_duration(cmd.timeout.unwrap_or_default())
            );
            false
        }
        Ok(out) => {
            let tail = process::tail_lines(&out.stdout, 3);
            let err_tail = out.stderr_tail(5);
            for line in tail.lines().chain(err_tail.lines()) {
                eprintln!("  | {line}");
            }
            if out.status.success() {
                eprintln!("  ok");
                true
            } else {
                eprintln!("  failed: {}", out.status);
                false
            }
        }
        Err(e) => {
            eprintln!("  failed: {e}");
            false
        }
    }
}

// ---------------------------------------------------------------------------------------
// Text output

#[derive(Clone, Copy)]
enum Mark {
    Ok,
    Missing,
    Warn,
    Info,
}

struct Out {
    tty: bool,
    color: bool,
    text: String,
}

impl Out {
    fn section(&mut self, title: &str) {
        if !self.text.is_empty() {
            self.text.push('\n');
        }
        self.text.push_str(title);
        self.text.push('\n');
    }

    fn line(&mut self, mark: Mark, label: &str, value: impl AsRef<str>) {
        let m = match (mark, self.tty) {
            (Mark::Ok, true) => "✓",
            (Mark::Missing, true) => "✗",
            (Mark::Warn, true) => "!",
            (Mark::Info, true) => "·",
            (Mark::Ok, false) => "ok     ",
            (Mark::Missing, false) => "MISSING",
            (Mark::Warn, false) => "warn   ",
            (Mark::Info, false) => "       ",
        };
        let colour = match mark {
            Mark::Ok => Some(anstyle::AnsiColor::Green),
            Mark::Missing => Some(anstyle::AnsiColor::Red),
            Mark::Warn => Some(anstyle::AnsiColor::Yellow),
            Mark::Info => None,
        };
        let style = anstyle::Style::new().fg_color(colour.filter(|_| self.color).map(Into::into));
        self.text.push_str(&format!(
            "  {style}{m}{style:#} {label:<20} {}\n",
            value.as_ref()
        ));
    }

    fn fix(&mut self, fix: &str) {
        let pad = if self.tty { 4 } else { 10 };
        self.text.push_str(&format!("{:pad$}fix: {fix}\n", ""));
    }

    /// An explanation where there is no fix command.
    fn note(&mut self, note: &str) {
        let pad = if self.tty { 4 } else { 10 };
        self.text.push_str(&format!("{:pad$}note: {note}\n", ""));
    }

    fn error(&mut self, label: &str, e: &ToolError) {
        self.line(Mark::Missing, label, &e.problem);
        self.fix(&e.fix);
    }
}

fn tool_line(t: &Tool) -> String {
    format!("{}  ({})", t.path.display(), t.version)
}

fn render(facts: &Facts, tty: bool, color: bool) -> String {
    let mut o = Out {
        tty,
        color,
        text: String::new(),
    };
    let major = rust_section(&mut o, facts);
    pgo_section(&mut o, facts, major);
    bolt_section(&mut o, facts, major);
    alloc_section(&mut o, facts);
    clang_section(&mut o, facts);
    perf_section(&mut o, &facts.perf);
    cpu_section(&mut o, &facts.cpu);
    platform_section(&mut o, &facts.platform);
    if let Some(h) = &facts.host {
        host_section(&mut o, h);
    }
    o.section("Workloads");
    let mark = match facts.confinement.kind {
        "landlock" => Mark::Ok,
        _ => Mark::Warn,
    };
    o.line(mark, "confinement", &facts.confinement.detail);
    o.text.push('\n');
    let problems = facts.problems();
    if problems.is_empty() {
        o.text.push_str(
            "ready: everything the default pipeline (profile, cpu, pgo, bolt) needs is here\n",
        );
    } else {
        o.text.push_str(&format!(
            "NOT ready: {} missing piece(s) — run the fix commands above, or `cargo optimize doctor --fix`\n",
            problems.len()
        ));
    }
    o.text
}

/// rustc and its LLVM; the LLVM major, when rustc was found.
fn rust_section(o: &mut Out, facts: &Facts) -> Option<u32> {
    o.section("Rust toolchain");
    match &facts.rustc {
        Ok(r) => {
            o.line(
                Mark::Ok,
                "rustc",
                format!("{}  (host {})", r.version, r.host),
            );
            o.line(Mark::Ok, "LLVM", &r.llvm_version);
            Some(r.llvm_major)
        }
        Err(e) => {
            o.error("rustc", e);
            None
        }
    }
}

fn pgo_section(o: &mut Out, facts: &Facts, major: Option<u32>) {
    o.section("PGO");
    match &facts.llvm_profdata {
        Ok(t) => {
            o.line(Mark::Ok, "llvm-profdata", t.path.display().to_string());
            o.line(
                Mark::Ok,
                "version",
                format!(
                    "{} — matches rustc's LLVM {}",
                    t.version,
                    major.unwrap_or(0)
                ),
            );
        }
        Err(e) => o.error("llvm-profdata", e),
    }
}

fn bolt_section(o: &mut Out, facts: &Facts, major: Option<u32>) {
    o.section("BOLT");
    let b = match &facts.bolt {
        Ok(b) => b,
        Err(e) if super::bolt_unsupported_here().is_some() => {
            o.line(Mark::Info, "llvm-bolt", &e.problem);
            return o.fix(&e.fix);
        }
        Err(e) => return o.error("llvm-bolt", e),
    };
    o.line(Mark::Ok, "llvm-bolt", tool_line(&b.llvm_bolt));
    o.line(Mark::Ok, "merge-fdata", tool_line(&b.merge_fdata));
    match &b.perf2bolt {
        Some(t) => o.line(Mark::Ok, "perf2bolt", tool_line(t)),
        None => {
            o.line(
                Mark::Warn,
                "perf2bolt",
                "not found (only BOLT's perf mode needs it)",
            );
            o.fix(&bolt_fix(major.unwrap_or(0)));
        }
    }
    let mode = if facts.bolt_perf_mode_usable() {
        "perf + LBR sampling available (instrumentation is the default)"
    } else {
        "instrumentation (perf + LBR not usable here)"
    };
    o.line(Mark::Info, "mode", mode);
}

/// The alloc stage: a C compiler (mimalloc and jemalloc compile C); without one the stage
/// is skipped, so it is a warning, not a missing piece.
fn alloc_section(o: &mut Out, facts: &Facts) {
    o.section("Global allocator (alloc stage)");
    match &facts.c_compiler {
        Some(cc) => o.line(Mark::Ok, "C compiler", cc),
        None => {
            o.line(
                Mark::Warn,
                "C compiler",
                "not found: the alloc stage is skipped (mimalloc and jemalloc compile C)",
            );
            o.fix("install one (Debian/Ubuntu: `apt install gcc`; Fedora: `dnf install gcc`; macOS: `xcode-select --install`), or set CC");
        }
    }
    if crate::sys::PRELOAD_VAR.is_none() {
        return;
    }
    match &facts.mimalloc_shared {
        Some(lib) => o.line(
            Mark::Ok,
            "preview",
            format!(
                "{} (preloaded into the best build to preview mimalloc before building it)",
                lib.display()
            ),
        ),
        None => {
            o.line(
                Mark::Warn,
                "preview",
                "mimalloc's shared build not found: the alloc stage builds its candidate without a preview (a whole build even when it cannot pay)",
            );
            o.fix("Debian/Ubuntu: `apt install libmimalloc2.0`; Fedora: `dnf install mimalloc`");
        }
    }
}

/// C and C++ built by `cc`: the clang of rustc's LLVM, which compiles them for the
/// c-compiler stage and trains them with the Rust code; without it both are left out (a
/// program without C never needs it), so it is a warning.
fn clang_section(o: &mut Out, facts: &Facts) {
    o.section("C and C++ built by cc (c-compiler stage, whole-program PGO)");
    match &facts.clang {
        Ok(c) => {
            let cxx = c.cxx.as_ref().map(|p| p.display().to_string());
            o.line(
                Mark::Ok,
                "clang",
                format!("{} ({})", c.cc.display(), c.version),
            );
            o.line(
                Mark::Info,
                "clang++",
                cxx.unwrap_or_else(|| "not beside it: C++ keeps cc's default compiler".into()),
            );
        }
        Err(e) => {
            o.line(
                Mark::Warn,
                "clang",
                format!(
                    "{}: C and C++ keep cc's default compiler and PGO stays Rust-only",
                    e.problem
                ),
            );
            o.fix(&e.fix);
        }
    }
}

/// The host program a library's workloads run: the interpreter, pyo3's range, the ABI.
fn host_section(o: &mut Out, h: &super::python::HostFacts) {
    use super::python::HostMark;
    o.section(&format!(
        "Host program of the library's workloads (`{}`)",
        h.host
    ));
    for l in &h.lines {
        let mark = match l.mark {
            HostMark::Ok => Mark::Ok,
            HostMark::Problem => Mark::Missing,
            HostMark::Info => Mark::Info,
        };
        o.line(mark, l.label, &l.detail);
        if let Some(fix) = &l.fix {
            o.fix(fix);
        }
    }
}

/// "Platform": each feature, working or skipped here with the reason.
fn platform_section(o: &mut Out, rows: &[super::platform::Row]) {
    o.section(&format!(
        "Platform ({} {})",
        std::env::consts::OS,
        std::env::consts::ARCH
    ));
    for r in rows {
        let mark = if r.works { Mark::Ok } else { Mark::Info };
        o.line(mark, r.feature, &r.detail);
    }
}

fn perf_section(o: &mut Out, p: &PerfFacts) {
    o.section("perf");
    match (&p.perf_path, p.perf.available) {
        (Some(path), true) => o.line(
            Mark::Ok,
            "perf",
            format!("{}  ({})", path.display(), p.perf.detail),
        ),
        (Some(_), false) => {
            o.line(Mark::Warn, "perf", &p.perf.detail);
            o.fix(PerfFacts::install_fix());
        }
        (None, _) => {
            o.line(
                Mark::Warn,
                "perf",
                "not found (optional: flamegraphs, BOLT perf mode)",
            );
            o.fix(PerfFacts::install_fix());
        }
    }
    paranoid_line(o, p);
    counters_lines(o, p);
}

fn paranoid_line(o: &mut Out, p: &PerfFacts) {
    match p.paranoid {
        Some(v) if p.root => o.line(
            Mark::Ok,
            "perf_event_paranoid",
            format!("{v} (running as root: not limited)"),
        ),
        Some(v) if v <= 2 => o.line(
            Mark::Ok,
            "perf_event_paranoid",
            format!("{v} (user-space profiling allowed)"),
        ),
        Some(v) => {
            o.line(
                Mark::Warn,
                "perf_event_paranoid",
                format!("{v} (unprivileged profiling not allowed)"),
            );
            o.fix("sysctl -w kernel.perf_event_paranoid=2   # as root");
        }
        None => o.line(
            Mark::Warn,
            "perf_event_paranoid",
            "unknown (no /proc/sys/kernel/perf_event_paranoid)",
        ),
    }
}

/// Hardware counters and LBR: what the machine offers, and why it is fine without.
fn counters_lines(o: &mut Out, p: &PerfFacts) {
    let yes_no =
        |c: &super::Capability| format!("{}: {}", if c.available { "yes" } else { "no" }, c.detail);
    let mark = |c: &super::Capability| if c.available { Mark::Ok } else { Mark::Warn };
    o.line(
        mark(&p.hw_counters),
        "hardware counters",
        yes_no(&p.hw_counters),
    );
    if !p.hw_counters.available {
        if p.hw_counters.detail.starts_with("not permitted") {
            o.fix("sysctl -w kernel.perf_event_paranoid=2   # as root");
        } else {
            o.note("no command fixes a machine/VM without a usable PMU; benchmarks use time only");
        }
    }
    o.line(mark(&p.lbr), "LBR", yes_no(&p.lbr));
    if !p.lbr.available {
        o.note("not needed: BOLT uses instrumentation mode");
    }
}

fn cpu_section(o: &mut Out, c: &CpuFacts) {
    o.section("CPU");
    o.line(
        if c.model.is_some() {
            Mark::Ok
        } else {
            Mark::Warn
        },
        "model",
        c.model
            .as_deref()
            .unwrap_or("unknown (no /proc/cpuinfo model name)"),
    );
    match c.x86_64_level {
        Some(l) => {
            let next = match &c.next_level {
                Some(n) => format!("; {} needs {}", n.level, n.missing.join(" ")),
                None => String::new(),
            };
            o.line(
                Mark::Ok,
                "level",
                format!("{l}  (-Ctarget-cpu={}{next})", l.target_cpu()),
            );
        }
        None => o.line(Mark::Info, "level", format!("no x86-64 level ({})", c.arch)),
    }
    let features: Vec<String> = c
        .features
        .iter()
        .map(|f| format!("{}{}", if f.present { '+' } else { '-' }, f.name))
        .collect();
    o.line(Mark::Info, "features", features.join(" "));
    if let Some(n) = &c.native_cpu {
        o.line(
            Mark::Info,
            "native",
            format!("{n}  (what -Ctarget-cpu=native selects)"),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gathers_and_renders_without_panicking() {
        let facts = Facts::gather();
        let text = render(&facts, false, false);
        for section in ["Rust toolchain", "PGO", "BOLT", "perf", "CPU"] {
            assert!(text.contains(section), "{text}");
        }
        let json = serde_json::to_value(DoctorJson {
            ready: facts.ready(),
            problems: facts.problems(),
            facts: &facts,
        })
        .unwrap();
        assert_eq!(json["rustc"]["ok"], true, "{json}");
        assert!(json["llvm_profdata"]["ok"].is_boolean());
        assert!(
            json["rustc"]["version"]
                .as_str()
                .is_some_and(|v| v.starts_with("rustc ")),
            "{json}"
        );
    }

    #[test]
    fn errors_serialize_with_problem_and_fix() {
        let r: Result<Tool, ToolError> = Err(ToolError {
            problem: "p".into(),
            fix: "f".into(),
        });
        let mut buf = Vec::new();
        ser_result(&r, &mut serde_json::Serializer::new(&mut buf)).unwrap();
        let v: serde_json::Value = serde_json::from_slice(&buf).unwrap();
        assert_eq!(
            v,
            serde_json::json!({"ok": false, "problem": "p", "fix": "f"})
        );
    }
}
