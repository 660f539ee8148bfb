//! Spawning child processes: workloads (with stdin, env, cwd, timeout, rusage) and the
//! external tools (rustc, llvm-profdata, llvm-bolt, perf …).
//!
//! This is the ONLY module that spawns processes; cargo's are prepared by the `cargo` module
//! (its jobserver, its priority) and run here through [`run_streaming`].
//! It knows nothing about stages, specs or statistics: it runs one command and reports
//! exactly what happened (status, outputs, wall/user/sys time, peak RSS).

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command as StdCommand, Stdio};
use std::time::{Duration, Instant};

use crate::sys;

mod jail;
mod output;
mod page_cache;
pub(crate) use page_cache::{evict, named_files, prime};
mod status;
pub(crate) use jail::{passed, refused_hint, Jail};
use output::{Buf, Keep, SpoolFiles};
pub(crate) use output::{Spool, Spooled, SPOOL_KEPT};
pub(crate) use status::signal_name;
pub(crate) use status::ExitStatus;

/// A fully described command: nothing about it is inherited implicitly except the
/// parent's environment (to which `env` is added and from which `env_remove` is taken).
#[derive(Debug, Clone)]
pub struct Command {
    pub program: PathBuf,
    pub args: Vec<OsString>,
    pub env: Vec<(OsString, OsString)>,
    pub env_remove: Vec<OsString>,
    pub cwd: Option<PathBuf>,
    /// File fed to stdin; `None` gives the child an empty stdin (never the terminal).
    pub stdin: Option<PathBuf>,
    /// Kill the child and all its descendants (its process group) after this long. It also
    /// bounds the wait for the output pipes to close.
    pub timeout: Option<Duration>,
    /// What the command is for ("workload `parse`"), named in error messages.
    pub label: Option<String>,
    /// Files dropped from the page cache before each run (a cold start).
    pub evict: Vec<PathBuf>,
    /// Keep at most this many bytes of each stream — stdout's first, stderr's last —, the
    /// rest read and dropped: for timed runs, whose output nobody reads (a workload that
    /// prints 300 MB would otherwise be held in memory once per run).
    pub keep: Option<usize>,
    /// Write stdout and stderr whole into these files as they arrive, keeping at most
    /// [`SPOOL_KEPT`] bytes of each in memory (as `keep` does): verification runs, whose
    /// outputs are compared from the files, so a workload printing gigabytes costs no
    /// memory.
    pub spool: Option<Spool>,
    /// A run of the user's program (a workload): it may write into the files it names, so
    /// [`workload_runs`] counts it.
    pub workload: bool,
    /// Run it on this CPU alone (`sys::pin_to_cpu`, one of `sys::allowed_cpus`): `bench`
    /// pins the timed runs of a workload that keeps one core busy at a time.
    pub cpu: Option<usize>,
    /// Whether `bench` may pin it (a workload's `pin = false`: never).
    pub pinnable: bool,
    /// Start it with none of this process's environment: only `env` (a workload sees what
    /// is keyed: `spec::Workload::command`).
    pub(crate) env_clear: bool,
    /// The kernel's confinement it runs under (the user's code: `sys::confine`).
    pub(crate) confine: Option<sys::confine::Confinement>,
    /// Its step's value of `sys::confine::STEP_VAR` (set in its environment): what it leaves
    /// running after it exits is killed when it ends ([`Outcome::swept`]).
    pub(crate) step: Option<String>,
}

/// Runs of [`Command::workload`] commands this process has started and finished.
static WORKLOAD_RUNS: [std::sync::atomic::AtomicU64; 2] = [
    std::sync::atomic::AtomicU64::new(0),
    std::sync::atomic::AtomicU64::new(0),
];

/// How many workload runs this process has made, when none is running now (`None` while
/// one is): what a workload may have written since, a figure taken earlier tells
/// (`cache`'s folder digests are remembered while it stays the same).
pub(crate) fn workload_runs() -> Option<u64> {
    use std::sync::atomic::Ordering::SeqCst;
    let finished = WORKLOAD_RUNS[1].load(SeqCst);
    (WORKLOAD_RUNS[0].load(SeqCst) == finished).then_some(finished)
}

/// Counts one workload run from its start to its end, whichever way it ends.
struct WorkloadRun;

impl WorkloadRun {
    fn start() -> Self {
        WORKLOAD_RUNS[0].fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        WorkloadRun
    }
}

impl Drop for WorkloadRun {
    fn drop(&mut self) {
        WORKLOAD_RUNS[1].fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    }
}

impl Command {
    pub fn new(program: impl Into<PathBuf>) -> Self {
        Command {
            program: program.into(),
            args: Vec::new(),
            env: Vec::new(),
            env_remove: Vec::new(),
            cwd: None,
            stdin: None,
            timeout: None,
            label: None,
            evict: Vec::new(),
            keep: None,
            spool: None,
            workload: false,
            cpu: None,
            pinnable: true,
            env_clear: false,
            confine: None,
            step: None,
        }
    }
    /// Whether `bench` may pin its timed runs to one CPU ([`Command::pinnable`]).
    pub fn pinnable(mut self, yes: bool) -> Self {
        self.pinnable = yes;
        self
    }
    /// Mark it a run of the user's program ([`Command::workload`]).
    pub fn workload(mut self) -> Self {
        self.workload = true;
        self
    }
    pub fn arg(mut self, a: impl Into<OsString>) -> Self {
        self.args.push(a.into());
        self
    }
    pub fn args<I, S>(mut self, it: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<OsString>,
    {
        self.args.extend(it.into_iter().map(Into::into));
        self
    }
    pub fn env(mut self, k: impl Into<OsString>, v: impl Into<OsString>) -> Self {
        self.env.push((k.into(), v.into()));
        self
    }
    pub fn cwd(mut self, dir: impl Into<PathBuf>) -> Self {
        self.cwd = Some(dir.into());
        self
    }
    pub fn timeout(mut self, t: Duration) -> Self {
        self.timeout = Some(t);
        self
    }
    /// Name what the command is for in error messages ("workload `parse`").
    pub fn label(mut self, label: impl Into<String>) -> Self {
        self.label = Some(label.into());
        self
    }
    /// Drop these files from the page cache before each run, so it starts cold.
    pub fn evict_before(mut self, files: Vec<PathBuf>) -> Self {
        self.evict = files;
        self
    }
    /// The same command started through a runner (cargo's `target.<triple>.runner`, e.g.
    /// `qemu-aarch64 -L /usr/aarch64-linux-gnu`): `program args… <this program> <its
    /// args>`; label, environment, cwd, stdin, timeout and eviction kept.
    pub fn through(mut self, program: &Path, runner_args: &[String]) -> Self {
        let binary = std::mem::replace(&mut self.program, program.to_path_buf());
        let mut args: Vec<OsString> = runner_args.iter().map(OsString::from).collect();
        args.push(binary.into_os_string());
        args.append(&mut self.args);
        self.args = args;
        self
    }
    /// Feed this file to the program's stdin (default: no stdin).
    pub fn stdin_file(mut self, path: Option<PathBuf>) -> Self {
        self.stdin = path;
        self
    }

    /// Read the program and the files it names into the page cache, unless it starts cold
    /// (see [`prime`]): what a warm-up run did for the first timed run, without the run.
    pub fn prime(&self) {
        if !self.evict.is_empty() {
            return;
        }
        let cwd = self.cwd.clone().unwrap_or_default();
        let args = self.args.iter().map(Path::new);
        for f in std::iter::once(self.program.clone()).chain(named_files(
            &cwd,
            args,
            self.stdin.as_deref(),
        )) {
            prime(&f);
        }
    }

    /// The command as a shell-like line, for messages.
    pub fn display(&self) -> String {
        let mut s = self.program.display().to_string();
        for a in &self.args {
            s.push(' ');
            let a = a.to_string_lossy();
            if a.contains(' ') || a.is_empty() {
                s.push_str(&format!("'{a}'"));
            } else {
                s.push_str(&a);
            }
        }
        s
    }
}

/// Everything observed about one run.
#[derive(Debug, Clone)]
pub struct Outcome {
    pub status: ExitStatus,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    pub wall: Duration,
    /// User and system CPU time of this child and its waited-for descendants (rusage).
    pub user: Duration,
    pub sys: Duration,
    /// Peak resident set size in bytes (ru_maxrss of this child).
    pub max_rss_bytes: u64,
    pub timed_out: bool,
    /// Processes the child left behind that kept its stdout/stderr open after it exited.
    pub lingering: Lingering,
    /// With [`Command::spool`]: where the streams went whole (`stdout` and `stderr` then
    /// hold a part only when longer than [`SPOOL_KEPT`]).
    pub spooled: Option<Spooled>,
    /// Its process id (gone: it was reaped).
    pub pid: u32,
    /// Processes of its step still running after it exited (daemons, `setsid` or
    /// double-forked children), found by their `sys::confine::STEP_VAR` and killed.
    pub swept: usize,
}

/// What became of processes that outlived the child while holding its output pipes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Lingering {
    /// None did (the pipes closed when the child exited, or within [`PIPE_GRACE`]).
    #[default]
    None,
    /// Some were still holding the pipes [`PIPE_GRACE`] after the child exited; they were
    /// in the child's process group and were killed with it, and the output read to its end.
    Killed,
    /// Some escaped the process group (`setsid`, a daemon) and still held the pipes after
    /// the group was killed: they are still running, and reading stopped, so the output
    /// may lack what they write later.
    Escaped,
    /// Some were still running after it exited, outside its process group (a daemon, a
    /// `setsid` or double-forked child), found by their step's variable and killed
    /// ([`Outcome::swept`]); whatever they held, reading stopped.
    Swept,
}

impl Lingering {
    /// Nothing outlived the child (the usual case, left out of report.json).
    pub fn is_none(&self) -> bool {
        *self == Lingering::None
    }
}

impl Lingering {
    /// "left processes behind that kept its output open; they were killed", for a
    /// warning the caller prefixes with what ran ("workload `x` …"); `None` for none.
    pub fn warning(&self) -> Option<&'static str> {
        match self {
            Lingering::None => None,
            Lingering::Killed => Some(
                "left processes behind that kept its output open; they were killed (a program measured or verified must wait for its children)",
            ),
            Lingering::Escaped => Some(
                "left processes behind that kept its output open and escaped its process group (setsid or a daemon); they are still running and their later output was not read",
            ),
            Lingering::Swept => Some(
                "left processes running after it exited, outside its process group (a daemon, a `setsid` or double-forked child); they were killed: nothing a workload starts outlives its run (a program measured or verified must wait for its children)",
            ),
        }
    }
}

impl Outcome {
    /// The last `n` lines of stderr, for error messages.
    pub fn stderr_tail(&self, n: usize) -> String {
        tail_lines(&self.stderr, n)
    }
}

/// The last `n` lines of a byte buffer, lossily decoded.
pub(crate) fn tail_lines(bytes: &[u8], n: usize) -> String {
    let text = String::from_utf8_lossy(bytes);
    let lines: Vec<&str> = text.lines().collect();
    let start = lines.len().saturating_sub(n);
    lines[start..].join("\n")
}

#[derive(Debug, thiserror::Error)]
pub enum ProcessError {
    #[error("cannot start `{program}`{}: {error}{}", for_label(.label), spawn_hint(.error, *.args, *.arg_bytes))]
    Spawn {
        program: String,
        /// What the command was for ("workload `parse`").
        label: Option<String>,
        error: std::io::Error,
        /// Number of arguments, and bytes of arguments and environment (for E2BIG).
        args: usize,
        arg_bytes: usize,
    },
    #[error("cannot open stdin file {path}{}: {error}", for_label(.label))]
    Stdin {
        path: PathBuf,
        label: Option<String>,
        error: std::io::Error,
    },
    #[error("cannot write the output of `{program}`{} to {path}: {error}", for_label(.label))]
    Spool {
        program: String,
        label: Option<String>,
        path: PathBuf,
        error: std::io::Error,
    },
    #[error("waiting for `{program}`{} failed: {error}", for_label(.label))]
    Wait {
        program: String,
        label: Option<String>,
        error: std::io::Error,
    },
}

fn for_label(label: &Option<String>) -> String {
    label
        .as_ref()
        .map(|l| format!(" for {l}"))
        .unwrap_or_default()
}

fn spawn_hint(error: &std::io::Error, args: usize, arg_bytes: usize) -> String {
    if sys::arg_list_too_long(error) {
        format!(
            "; {args} argument{}, {} of arguments and environment (one argument may hold at most 128 KiB, all of them together about a quarter of the stack limit)\n  fix: pass large inputs in a file (read through stdin or a path argument) instead of on the command line",
            if args == 1 { "" } else { "s" },
            crate::util::human_bytes(arg_bytes as u64)
        )
    } else {
        String::new()
    }
}

/// How long the output pipes may stay open after the child has exited before the
/// processes holding them (the child's own descendants) are killed. Everything the child
/// itself wrote is already in the pipe when it exits, so this only waits for descendants
/// that are finishing up (a background job writing its last lines); a quarter second is
/// ample for that and short enough not to matter when a workload runs a hundred times.
pub(crate) const PIPE_GRACE: Duration = Duration::from_millis(250);

/// After the group kill, how long to wait for the pipes to close before giving up on
/// reading them (a holder that escaped the group keeps them open indefinitely).
const KILL_GRACE: Duration = Duration::from_millis(250);

/// Start a program that hands work to something meant to outlive us (a desktop opener
/// launching a browser): no pipes, not in a group we would kill, and waited for at most
/// `bound`. `Ok(None)` when it is still running then (left alone, as intended).
pub(crate) fn launch(
    program: &Path,
    args: &[&std::ffi::OsStr],
    bound: Duration,
) -> Result<Option<std::process::ExitStatus>, ProcessError> {
    let mut child = std::process::Command::new(program)
        .args(args)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .map_err(|error| ProcessError::Spawn {
            program: program.display().to_string(),
            label: None,
            error,
            args: args.len(),
            arg_bytes: args.iter().map(|a| a.len()).sum(),
        })?;
    let start = Instant::now();
    loop {
        match child.try_wait() {
            Ok(Some(status)) => return Ok(Some(status)),
            Ok(None) if start.elapsed() < bound => std::thread::sleep(Duration::from_millis(50)),
            Ok(None) => return Ok(None),
            Err(error) => {
                return Err(ProcessError::Wait {
                    program: program.display().to_string(),
                    label: None,
                    error,
                })
            }
        }
    }
}

/// Run a command to completion, capturing stdout and stderr through pipes (never
/// /dev/null: some programs shortcut writes to it).
///
/// The child runs in its own process group so that a timeout kills it *and* its children.
/// Resource usage comes from `wait4` on exactly this child. The wait never hangs on the
/// pipes: once the child has exited, descendants that keep them open get [`PIPE_GRACE`],
/// then the group is killed, and after a short wait for the pipes to close (a holder
/// outside the group keeps them open) reading stops; [`Outcome::lingering`] says which.
/// The `timeout` bounds the drain too.
pub fn run(cmd: &Command) -> Result<Outcome, ProcessError> {
    let _counted = cmd.workload.then(WorkloadRun::start);
    for f in &cmd.evict {
        evict(f);
    }
    let mut std_cmd = std_command(cmd)?;
    if let Some(cpu) = cmd.cpu {
        sys::pin_to_cpu(&mut std_cmd, cpu);
    }
    let mut spool = match &cmd.spool {
        Some(to) => {
            Some(SpoolFiles::create(to).map_err(|(path, error)| spool_error(cmd, path, error))?)
        }
        None => None,
    };
    let keep = match spool {
        Some(_) => Some(cmd.keep.unwrap_or(SPOOL_KEPT).min(SPOOL_KEPT)),
        None => cmd.keep,
    };
    let mut bufs = [Buf::new(keep, Keep::Head), Buf::new(keep, Keep::Tail)];
    let mut sink = |stream: usize, bytes: &[u8]| {
        bufs[stream].keep(bytes);
        if let Some(s) = &mut spool {
            s.write(stream, bytes);
        }
    };
    let what = What {
        program: cmd.program.display().to_string(),
        label: cmd.label.clone(),
        args: cmd.args.len(),
        arg_bytes: arg_bytes(cmd),
    };
    let mut outcome = run_tree(&mut std_cmd, &what, cmd.timeout, &mut sink)?;
    if let Some(step) = &cmd.step {
        // Nothing started since the child itself: nothing of its step can be left.
        if sys::confine::started_after(outcome.pid) {
            outcome.swept = sys::confine::sweep(step).len();
            if outcome.swept > 0 {
                outcome.lingering = Lingering::Swept;
            }
        }
    }
    [outcome.stdout, outcome.stderr] = bufs.map(Buf::into_bytes);
    if let Some(s) = spool {
        outcome.spooled = Some(s.finish().map_err(|(p, e)| spool_error(cmd, p, e))?);
    }
    Ok(outcome)
}

fn spool_error(cmd: &Command, path: PathBuf, error: std::io::Error) -> ProcessError {
    ProcessError::Spool {
        program: cmd.program.display().to_string(),
        label: cmd.label.clone(),
        path,
        error,
    }
}

/// [`run`] for a command the caller prepared itself (a jobserver's fds, a lower priority:
/// cargo's), its stdout and stderr set to piped: in a process tree of its own, killed whole
/// after `timeout`, each piece of output handed to `sink(stream, bytes)` (0: stdout, 1:
/// stderr) as it arrives instead of kept — the outcome's `stdout` and `stderr` are empty.
/// `label` names what it is for in errors. What it leaves running when it ends (a build
/// script's background child, a daemon) is killed ([`Outcome::swept`]), but for what
/// `sys::confine::spare` names (a compiler cache's server, meant to outlive builds).
pub(crate) fn run_streaming(
    std_cmd: &mut StdCommand,
    label: &str,
    timeout: Option<Duration>,
    sink: &mut dyn FnMut(usize, &[u8]),
) -> Result<Outcome, ProcessError> {
    let args: Vec<&std::ffi::OsStr> = std_cmd.get_args().collect();
    let what = What {
        program: std_cmd.get_program().to_string_lossy().into_owned(),
        label: Some(label.to_string()),
        args: args.len(),
        arg_bytes: args.iter().map(|a| a.len() + 1).sum(),
    };
    let step = sys::confine::step_value();
    std_cmd.env(sys::confine::STEP_VAR, &step);
    let mut outcome = run_tree(std_cmd, &what, timeout, sink)?;
    if sys::confine::started_after(outcome.pid) {
        outcome.swept = sys::confine::sweep(&step).len();
        if outcome.swept > 0 {
            outcome.lingering = Lingering::Swept;
        }
    }
    Ok(outcome)
}

/// What ran, for errors.
struct What {
    program: String,
    label: Option<String>,
    args: usize,
    arg_bytes: usize,
}

/// Spawn `std_cmd` in a tree of its own and drain it into `sink` (see [`run`]).
fn run_tree(
    std_cmd: &mut StdCommand,
    what: &What,
    timeout: Option<Duration>,
    sink: &mut dyn FnMut(usize, &[u8]),
) -> Result<Outcome, ProcessError> {
    let start = Instant::now();
    let mut tree = sys::Tree::spawn(std_cmd).map_err(|error| ProcessError::Spawn {
        program: what.program.clone(),
        label: what.label.clone(),
        args: what.args,
        arg_bytes: what.arg_bytes,
        error,
    })?;
    let wait_error = |error| ProcessError::Wait {
        program: what.program.clone(),
        label: what.label.clone(),
        error,
    };
    let pid = tree.id();
    let deadline = timeout.map(|t| start + t);
    let drained = match tree.watch().and_then(|()| drain(&mut tree, deadline, sink)) {
        Ok(d) => d,
        Err(e) => {
            tree.abort();
            return Err(wait_error(e));
        }
    };
    let wall = drained.exited.saturating_duration_since(start);
    // Reap (the child has exited, so this returns at once) for the status and usage;
    // reading stops there (a holder that escaped the group gets EPIPE from then on).
    let (status, usage) = tree.finish(sink).map_err(wait_error)?;
    Ok(Outcome {
        status: ExitStatus::from_std(status),
        stdout: Vec::new(),
        stderr: Vec::new(),
        wall,
        user: usage.user,
        sys: usage.sys,
        max_rss_bytes: usage.max_rss_bytes,
        timed_out: drained.timed_out,
        lingering: drained.lingering,
        spooled: None,
        pid,
        swept: 0,
    })
}

/// The std command of `cmd`: its program, arguments, environment, cwd and stdin, and
/// stdout and stderr piped.
fn std_command(cmd: &Command) -> Result<StdCommand, ProcessError> {
    let mut std_cmd = StdCommand::new(&cmd.program);
    std_cmd.args(&cmd.args);
    if cmd.env_clear {
        std_cmd.env_clear();
    }
    if let Some(c) = &cmd.confine {
        c.apply(&mut std_cmd);
    }
    if let Some(step) = &cmd.step {
        std_cmd.env(sys::confine::STEP_VAR, step);
    }
    for k in &cmd.env_remove {
        std_cmd.env_remove(k);
    }
    for (k, v) in &cmd.env {
        std_cmd.env(k, v);
    }
    if let Some(dir) = &cmd.cwd {
        std_cmd.current_dir(dir);
    }
    match &cmd.stdin {
        Some(path) => {
            let f = std::fs::File::open(path).map_err(|error| ProcessError::Stdin {
                path: path.clone(),
                label: cmd.label.clone(),
                error,
            })?;
            std_cmd.stdin(Stdio::from(f));
        }
        None => {
            std_cmd.stdin(Stdio::null());
        }
    }
    std_cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
    Ok(std_cmd)
}

/// How a child's run ended, as [`drain`] saw it.
struct Drained {
    /// When the child exited (when reading stopped, if that was never seen).
    exited: Instant,
    timed_out: bool,
    lingering: Lingering,
}

/// Read the child's output until it has exited and its pipes are closed: the timeout kills
/// its group; after the exit, holders of the pipes get [`PIPE_GRACE`], then the group is
/// killed, and after [`KILL_GRACE`] reading stops.
fn drain(
    tree: &mut sys::Tree,
    deadline: Option<Instant>,
    sink: &mut dyn FnMut(usize, &[u8]),
) -> std::io::Result<Drained> {
    let mut timed_out = false;
    let mut exited: Option<Instant> = None;
    let mut group_killed_at: Option<Instant> = None;
    let mut lingering = Lingering::None;
    loop {
        let now = Instant::now();
        match exited {
            None => {
                if let Some(d) = deadline {
                    if now >= d && !timed_out {
                        timed_out = true;
                        tree.kill();
                    }
                }
            }
            Some(_) if !tree.pipes_open() => break,
            Some(at) => {
                // The grace after the exit, never past the timeout.
                let grace_end = match deadline {
                    Some(d) => (at + PIPE_GRACE).min(d.max(at)),
                    None => at + PIPE_GRACE,
                };
                match group_killed_at {
                    None if now >= grace_end => {
                        tree.kill();
                        group_killed_at = Some(now);
                        if !timed_out {
                            lingering = Lingering::Killed;
                        }
                    }
                    Some(k) if now >= k + KILL_GRACE => {
                        lingering = Lingering::Escaped;
                        break;
                    }
                    _ => {}
                }
            }
        }
        // Sleep until a pipe has data, the child exits, or the next deadline.
        let next = match exited {
            None => deadline.filter(|_| !timed_out),
            Some(at) => Some(match group_killed_at {
                Some(k) => k + KILL_GRACE,
                None => match deadline {
                    Some(d) => (at + PIPE_GRACE).min(d.max(at)),
                    None => at + PIPE_GRACE,
                },
            }),
        };
        if let Some(at) = tree.pump(next, sink)? {
            exited = Some(at);
        }
    }
    Ok(Drained {
        exited: exited.unwrap_or_else(Instant::now),
        timed_out,
        lingering,
    })
}

/// Bytes the kernel counts against the argument limit: every argument and environment
/// string with its NUL and pointer (the program's environment, as the child gets it).
fn arg_bytes(cmd: &Command) -> usize {
    let ptr = std::mem::size_of::<usize>();
    let word = |s: &std::ffi::OsStr| s.len() + 1 + ptr;
    let mut n = word(cmd.program.as_os_str()) + cmd.args.iter().map(|a| word(a)).sum::<usize>();
    let mut env: std::collections::BTreeMap<OsString, OsString> = match cmd.env_clear {
        true => Default::default(),
        false => std::env::vars_os().collect(),
    };
    for k in &cmd.env_remove {
        env.remove(k);
    }
    for (k, v) in &cmd.env {
        env.insert(k.clone(), v.clone());
    }
    n += env
        .iter()
        .map(|(k, v)| k.len() + v.len() + 2 + ptr)
        .sum::<usize>();
    n
}

/// Run a tool and return its outcome; a spawn failure (tool missing) is an error, a
/// non-zero exit is not (the caller decides what it means).
pub(crate) fn run_tool<I, S>(program: impl AsRef<Path>, args: I) -> Result<Outcome, ProcessError>
where
    I: IntoIterator<Item = S>,
    S: Into<OsString>,
{
    run(&Command::new(program.as_ref())
        .args(args)
        .timeout(TOOL_TIMEOUT))
}

/// The bound of [`run_tool`]'s quick questions to a tool (`rustc --print cfg`): minutes
/// even on a loaded machine, never a hang.
const TOOL_TIMEOUT: Duration = Duration::from_secs(120);

/// Stdout of a tool that must succeed, trimmed; `None` when it is missing or fails.
pub(crate) fn tool_stdout<I, S>(program: impl AsRef<Path>, args: I) -> Option<String>
where
    I: IntoIterator<Item = S>,
    S: Into<OsString>,
{
    let out = run_tool(program, args).ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;

    /// A pinned run may use its CPU alone (the kernel's own account of the child), and
    /// one not pinned every CPU the parent may.
    #[cfg(target_os = "linux")]
    #[test]
    fn a_pinned_run_is_allowed_its_cpu_alone() {
        let allowed = |cpu: Option<usize>| {
            let mut cmd = Command::new("grep").args(["Cpus_allowed_list", "/proc/self/status"]);
            cmd.cpu = cpu;
            let out = run(&cmd).unwrap();
            let text = String::from_utf8(out.stdout).unwrap();
            text.split(':').nth(1).unwrap().trim().to_string()
        };
        let cpus = sys::allowed_cpus();
        let last = *cpus.last().unwrap();
        assert_eq!(allowed(Some(last)), last.to_string());
        let all = allowed(None);
        let first = cpus[0].to_string();
        assert!(
            all.starts_with(&first) && (cpus.len() == 1 || all != first),
            "{all}"
        );
    }

    /// The files a command names are found relative to its cwd; priming reads regular files
    /// only, so a device argument (`/dev/zero`, endless), a named pipe (opening it waits for a
    /// writer) or a directory never holds it up.
    #[test]
    fn named_files_resolve_under_cwd_and_priming_skips_what_is_not_a_file() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("in.json"), "[1]").unwrap();
        std::fs::write(dir.path().join("stdin.txt"), "x").unwrap();
        std::fs::create_dir(dir.path().join("data")).unwrap();
        let files = named_files(
            dir.path(),
            [
                "-c",
                "in.json",
                "missing.json",
                "/dev/zero",
                "--input=in.json",
                "if=/dev/zero",
                "--out=missing.json",
                "--dir=data",
                "-iin.json",
            ]
            .map(Path::new),
            Some(Path::new("stdin.txt")),
        );
        assert_eq!(
            files,
            [
                dir.path().join("in.json"),
                PathBuf::from("/dev/zero"),
                dir.path().join("in.json"),
                PathBuf::from("/dev/zero"),
                dir.path().join("data"),
                dir.path().join("stdin.txt")
            ]
        );
        let fifo = dir.path().join("pipe");
        sys::testing::mkfifo(&fifo).unwrap();
        let cmd = Command::new("/bin/sh")
            .args(["in.json", "/dev/zero", ".", "pipe"])
            .cwd(dir.path());
        // In a thread with a bound, so a priming that blocks fails the test, not hangs it.
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            cmd.prime();
            prime(Path::new("/nonexistent/missing.json"));
            let _ = tx.send(());
        });
        assert!(
            rx.recv_timeout(Duration::from_secs(5)).is_ok(),
            "priming blocked"
        );
    }

    #[test]
    fn captures_outputs_and_status() {
        let out = run(&Command::new("sh").args(["-c", "echo hi; echo err >&2; exit 3"])).unwrap();
        assert_eq!(out.stdout, b"hi\n");
        assert_eq!(out.stderr, b"err\n");
        assert_eq!(out.status.code, Some(3));
        assert!(!out.timed_out);
    }

    /// A workload's run is counted from its start to its end, even when it fails to start
    /// (other tests' runs only ever add to the counts).
    #[test]
    fn a_workload_run_is_counted_whichever_way_it_ends() {
        use std::sync::atomic::Ordering::SeqCst;
        let finished = || WORKLOAD_RUNS[1].load(SeqCst);
        let before = finished();
        run(&Command::new("sh").args(["-c", "exit 3"]).workload()).unwrap();
        assert!(run(&Command::new("/nonexistent/program").workload()).is_err());
        assert!(finished() >= before + 2);
    }

    #[test]
    fn feeds_stdin_from_file_and_sets_env_and_cwd() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("in.txt"), "abc").unwrap();
        let mut cmd = Command::new("sh")
            .args(["-c", "cat; printf \" $FOO \"; pwd"])
            .env("FOO", "bar")
            .cwd(dir.path());
        cmd.stdin = Some(dir.path().join("in.txt"));
        let out = run(&cmd).unwrap();
        let text = String::from_utf8(out.stdout).unwrap();
        assert!(text.starts_with("abc bar "), "{text}");
        assert!(text
            .trim_end()
            .ends_with(&dir.path().canonicalize().unwrap().display().to_string()));
    }

    #[test]
    fn timeout_kills_the_whole_group() {
        // The grandchild holds stdout open; without the group kill this would hang.
        let start = Instant::now();
        let out = run(&Command::new("sh")
            .args(["-c", "sleep 30 & sleep 30"])
            .timeout(Duration::from_millis(300)))
        .unwrap();
        assert!(out.timed_out);
        assert_eq!(out.status.signal, Some(sys::testing::SIGKILL));
        assert!(start.elapsed() < Duration::from_secs(10));
    }

    #[test]
    fn a_child_holding_the_pipes_after_exit_is_killed_after_the_grace() {
        // `sleep` inherits stdout and stderr and outlives `sh`: reading to EOF would
        // wait 30 s; the grace ends it, the group kill takes the sleep with it.
        let start = Instant::now();
        let out = run(&Command::new("sh").args(["-c", "sleep 30 & echo hi"])).unwrap();
        let took = start.elapsed();
        assert_eq!(out.stdout, b"hi\n");
        assert!(out.status.success() && !out.timed_out);
        assert_eq!(out.lingering, Lingering::Killed);
        assert!(out.lingering.warning().unwrap().contains("were killed"));
        assert!(
            took >= PIPE_GRACE && took < Duration::from_secs(5),
            "{took:?}"
        );
        // The wall time is the child's, not the grace's.
        assert!(out.wall < PIPE_GRACE, "{:?}", out.wall);
    }

    #[test]
    fn a_bounded_run_keeps_the_head_of_stdout_and_the_tail_of_stderr() {
        let mut cmd = Command::new("sh").args([
            "-c",
            "seq 1 2000000; seq 1 300000 >&2; echo last >&2; exit 3",
        ]);
        cmd.keep = Some(1000);
        let out = run(&cmd).unwrap();
        assert_eq!(out.stdout.len(), 1000);
        assert!(out.stdout.starts_with(b"1\n2\n3\n"));
        assert_eq!(out.stderr.len(), 1000);
        assert!(out.stderr.ends_with(b"300000\nlast\n"));
        assert_eq!(out.status.code, Some(3), "the child was drained to its end");
    }

    #[test]
    fn a_spooled_run_writes_its_streams_whole_and_keeps_a_bounded_part() {
        let dir = tempfile::tempdir().unwrap();
        let to = Spool {
            stdout: dir.path().join("new/w.stdout"),
            stderr: dir.path().join("new/w.stderr"),
        };
        let mut cmd =
            Command::new("sh").args(["-c", "head -c 3000000 /dev/zero; echo err >&2; exit 2"]);
        cmd.spool = Some(to.clone());
        let out = run(&cmd).unwrap();
        assert_eq!(out.stdout.len(), SPOOL_KEPT);
        assert_eq!(out.stderr, b"err\n");
        let spooled = out.spooled.unwrap();
        assert_eq!((spooled.to, spooled.bytes), (to.clone(), [3_000_000, 4]));
        assert_eq!(std::fs::metadata(&to.stdout).unwrap().len(), 3_000_000);
        assert_eq!(std::fs::read(&to.stderr).unwrap(), b"err\n");
        assert_eq!(out.status.code, Some(2));
        // A file that cannot be written is an error naming it.
        cmd.spool = Some(Spool {
            stdout: to.stdout.join("not-a-folder"),
            stderr: to.stderr.clone(),
        });
        let e = run(&cmd).unwrap_err().to_string();
        assert!(e.contains("w.stdout"), "{e}");
    }

    #[test]
    fn outputs_larger_than_a_pipe_are_read_whole() {
        let out = run(&Command::new("sh").args([
            "-c",
            "head -c 1000000 /dev/zero; head -c 300000 /dev/zero >&2; exit 4",
        ]))
        .unwrap();
        assert_eq!((out.stdout.len(), out.stderr.len()), (1_000_000, 300_000));
        assert_eq!(out.status.code, Some(4));
        assert_eq!(out.lingering, Lingering::None);
    }

    #[test]
    fn output_written_during_the_grace_is_kept() {
        let out =
            run(&Command::new("sh").args(["-c", "(sleep 0.05; echo late) & echo early"])).unwrap();
        assert_eq!(out.stdout, b"early\nlate\n");
        assert_eq!(out.lingering, Lingering::None);
    }

    #[test]
    fn a_holder_that_escaped_the_group_is_given_up_on() {
        // setsid puts the sleep in a session of its own: the group kill misses it, so
        // reading stops after the grace and the kill grace instead of waiting for it.
        if process_exists("setsid").is_none() {
            eprintln!("skipped: no setsid");
            return;
        }
        let start = Instant::now();
        let out = run(&Command::new("sh").args(["-c", "setsid sleep 30 & echo hi"])).unwrap();
        assert!(
            start.elapsed() < Duration::from_secs(5),
            "{:?}",
            start.elapsed()
        );
        assert_eq!(out.stdout, b"hi\n");
        assert_eq!(out.lingering, Lingering::Escaped);
        assert!(out.lingering.warning().unwrap().contains("escaped"));
    }

    #[test]
    fn the_timeout_bounds_the_drain() {
        // Exits at once, but a grandchild holds the pipe; the timeout is shorter than the
        // grace, so it cuts the grace.
        let start = Instant::now();
        let out = run(&Command::new("sh")
            .args(["-c", "sleep 30 & echo hi"])
            .timeout(Duration::from_millis(50)))
        .unwrap();
        assert_eq!(out.stdout, b"hi\n");
        assert!(start.elapsed() < PIPE_GRACE + Duration::from_secs(2));
    }

    fn process_exists(name: &str) -> Option<PathBuf> {
        std::env::var_os("PATH")?
            .to_str()?
            .split(':')
            .map(|d| Path::new(d).join(name))
            .find(|p| p.is_file())
    }

    #[test]
    fn e2big_names_the_label_and_the_size() {
        let e = run(&Command::new("true")
            .arg("x".repeat(200 * 1024))
            .label("workload `big`"))
        .unwrap_err();
        let msg = e.to_string();
        assert!(
            msg.starts_with("cannot start `true` for workload `big`: ")
                && msg.contains("; 1 argument, 20")
                && msg.contains("fix: pass large inputs in a file"),
            "{msg}"
        );
    }

    #[test]
    fn missing_program_is_a_spawn_error() {
        let e = run(&Command::new("/nonexistent/tool")).unwrap_err();
        assert!(matches!(e, ProcessError::Spawn { .. }));
    }

    #[test]
    fn launch_is_bounded_and_reports_the_status() {
        let sh = Path::new("/bin/sh");
        let quick = launch(
            sh,
            &["-c".as_ref(), "exit 3".as_ref()],
            Duration::from_secs(5),
        );
        assert_eq!(quick.unwrap().and_then(|s| s.code()), Some(3));
        let start = Instant::now();
        let slow = launch(
            sh,
            &["-c".as_ref(), "sleep 5".as_ref()],
            Duration::from_millis(200),
        );
        assert!(slow.unwrap().is_none());
        assert!(start.elapsed() < Duration::from_secs(3));
    }

    #[test]
    fn tail_keeps_last_lines() {
        assert_eq!(tail_lines(b"a\nb\nc\n", 2), "b\nc");
        assert_eq!(tail_lines(b"a", 5), "a");
    }
}

#[cfg(all(test, target_os = "linux"))]
mod evict_tests {
    use super::*;

    fn resident_pages(path: &Path) -> usize {
        sys::testing::resident_pages(path)
    }

    #[test]
    fn a_cold_run_starts_with_its_files_out_of_the_page_cache() {
        let base = Path::new(env!("CARGO_MANIFEST_DIR")).join("target");
        std::fs::create_dir_all(&base).unwrap();
        let dir = tempfile::tempdir_in(&base).unwrap();
        if sys::testing::on_tmpfs(dir.path()) {
            eprintln!(
                "skipped: {} is on tmpfs, whose pages are the file itself",
                dir.path().display()
            );
            return;
        }
        let file = dir.path().join("input");
        std::fs::write(&file, vec![7u8; 1 << 20]).unwrap();
        std::fs::read(&file).unwrap();
        assert!(
            resident_pages(&file) > 200,
            "the file was not cached after reading it"
        );
        let out = run(&Command::new("cat")
            .arg(&file)
            .evict_before(vec![file.clone()]))
        .unwrap();
        assert_eq!(out.stdout.len(), 1 << 20);
        // cat read it back in; evicting alone leaves it out.
        evict(&file);
        assert!(
            resident_pages(&file) < 16,
            "{} pages still cached",
            resident_pages(&file)
        );
    }
}
