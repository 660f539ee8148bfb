//! Spawning child processes: workloads (with stdin, env, cwd, timeout, rusage) and the
//! external tools (rustc, llvm-profdata, llvm-bolt, perf …).
//!
//! This is the ONLY module that spawns processes other than cargo (which `cargo.rs` owns).
//! It knows nothing about stages, specs or statistics: it runs one command and reports
//! exactly what happened (status, outputs, wall/user/sys time, peak RSS).

use std::ffi::OsString;
use std::io::Read;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Command as StdCommand, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

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
    /// Kill the child and all its descendants (its process group) after this long.
    pub timeout: Option<Duration>,
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
        }
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
    /// Feed this file to the program's stdin (default: no stdin).
    pub fn stdin_file(mut self, path: Option<PathBuf>) -> Self {
        self.stdin = path;
        self
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

/// How a process ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Status {
    /// Exit code when it exited normally.
    pub code: Option<i32>,
    /// Signal number when it was killed by a signal.
    pub signal: Option<i32>,
}

impl Status {
    pub fn success(&self) -> bool {
        self.code == Some(0)
    }
    fn from_std(s: ExitStatus) -> Self {
        Status {
            code: s.code(),
            signal: s.signal(),
        }
    }
}

impl std::fmt::Display for Status {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match (self.code, self.signal) {
            (Some(c), _) => write!(f, "exit code {c}"),
            (None, Some(s)) => write!(f, "killed by signal {s}"),
            _ => write!(f, "unknown status"),
        }
    }
}

/// Everything observed about one run.
#[derive(Debug, Clone)]
pub struct Outcome {
    pub status: Status,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    pub wall: Duration,
    /// User and system CPU time of this child and its waited-for descendants (rusage).
    pub user: Duration,
    pub sys: Duration,
    /// Peak resident set size in bytes (ru_maxrss of this child).
    pub max_rss_bytes: u64,
    pub timed_out: bool,
}

impl Outcome {
    /// The last `n` lines of stderr, for error messages.
    pub fn stderr_tail(&self, n: usize) -> String {
        tail_lines(&self.stderr, n)
    }
}

/// The last `n` lines of a byte buffer, lossily decoded.
pub fn tail_lines(bytes: &[u8], n: usize) -> String {
    let text = String::from_utf8_lossy(bytes);
    let lines: Vec<&str> = text.lines().collect();
    let start = lines.len().saturating_sub(n);
    lines[start..].join("\n")
}

#[derive(Debug, thiserror::Error)]
pub enum ProcessError {
    #[error("cannot start `{program}`: {error}")]
    Spawn {
        program: String,
        error: std::io::Error,
    },
    #[error("cannot open stdin file {path}: {error}")]
    Stdin {
        path: PathBuf,
        error: std::io::Error,
    },
    #[error("waiting for `{program}` failed: {error}")]
    Wait {
        program: String,
        error: std::io::Error,
    },
}

/// Run a command to completion, capturing stdout and stderr through pipes that are
/// drained concurrently (never /dev/null: some programs shortcut writes to it).
///
/// The child runs in its own process group so that a timeout kills it *and* its children.
/// Resource usage comes from `wait4` on exactly this child.
pub fn run(cmd: &Command) -> Result<Outcome, ProcessError> {
    let program = cmd.program.display().to_string();
    let mut std_cmd = StdCommand::new(&cmd.program);
    std_cmd.args(&cmd.args);
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
                error,
            })?;
            std_cmd.stdin(Stdio::from(f));
        }
        None => {
            std_cmd.stdin(Stdio::null());
        }
    }
    std_cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
    std_cmd.process_group(0);

    let start = Instant::now();
    let mut child = std_cmd.spawn().map_err(|error| ProcessError::Spawn {
        program: program.clone(),
        error,
    })?;
    let pid = child.id() as libc::pid_t;
    let out_reader = drain(child.stdout.take());
    let err_reader = drain(child.stderr.take());

    // A thread blocks in wait4 on exactly this pid; the caller waits on the channel with
    // the timeout. `child` is never waited on by std, so there is no double reap.
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(wait4(pid));
    });
    let mut timed_out = false;
    let waited = match cmd.timeout {
        Some(t) => match rx.recv_timeout(t) {
            Ok(r) => r,
            Err(_) => {
                timed_out = true;
                kill_group(pid);
                rx.recv()
                    .unwrap_or_else(|_| Err(std::io::Error::other("wait thread died")))
            }
        },
        None => rx
            .recv()
            .unwrap_or_else(|_| Err(std::io::Error::other("wait thread died"))),
    };
    let wall = start.elapsed();
    if timed_out {
        // Descendants that escaped the first kill (or were spawned in between) go too.
        kill_group(pid);
    }
    let (raw_status, usage) = waited.map_err(|error| ProcessError::Wait {
        program: program.clone(),
        error,
    })?;
    // The pipes close when every holder of them exits. A grandchild that keeps them open
    // after a timeout was killed with the group above.
    let stdout = out_reader.join().unwrap_or_default();
    let stderr = err_reader.join().unwrap_or_default();
    drop(child);
    Ok(Outcome {
        status: Status::from_std(ExitStatus::from_raw(raw_status)),
        stdout,
        stderr,
        wall,
        user: timeval(usage.ru_utime),
        sys: timeval(usage.ru_stime),
        // Linux reports ru_maxrss in KiB.
        max_rss_bytes: (usage.ru_maxrss.max(0) as u64) * 1024,
        timed_out,
    })
}

/// Run a tool and return its outcome; a spawn failure (tool missing) is an error, a
/// non-zero exit is not (the caller decides what it means).
pub fn run_tool<I, S>(program: impl AsRef<Path>, args: I) -> Result<Outcome, ProcessError>
where
    I: IntoIterator<Item = S>,
    S: Into<OsString>,
{
    run(&Command::new(program.as_ref()).args(args))
}

/// Stdout of a tool that must succeed, trimmed; `None` when it is missing or fails.
pub fn tool_stdout<I, S>(program: impl AsRef<Path>, args: I) -> Option<String>
where
    I: IntoIterator<Item = S>,
    S: Into<OsString>,
{
    let out = run_tool(program, args).ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

fn drain<R: Read + Send + 'static>(r: Option<R>) -> std::thread::JoinHandle<Vec<u8>> {
    std::thread::spawn(move || {
        let mut buf = Vec::new();
        if let Some(mut r) = r {
            let _ = r.read_to_end(&mut buf);
        }
        buf
    })
}

fn wait4(pid: libc::pid_t) -> std::io::Result<(i32, libc::rusage)> {
    let mut status: libc::c_int = 0;
    // SAFETY: rusage is plain old data; zeroed is a valid value for it.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    loop {
        // SAFETY: pid is our own child; status and usage are valid for writes.
        let r = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
        if r == pid {
            return Ok((status, usage));
        }
        let err = std::io::Error::last_os_error();
        if err.kind() != std::io::ErrorKind::Interrupted {
            return Err(err);
        }
    }
}

fn kill_group(pid: libc::pid_t) {
    // SAFETY: signalling a process group we created; failure (already gone) is harmless.
    unsafe {
        libc::kill(-pid, libc::SIGKILL);
    }
}

fn timeval(t: libc::timeval) -> Duration {
    Duration::from_secs(t.tv_sec.max(0) as u64) + Duration::from_micros(t.tv_usec.max(0) as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn captures_outputs_and_status() {
        let out = run(&Command::new("sh").args(["-c", "echo hi; echo err >&2; exit 3"])).unwrap();
        assert_eq!(out.stdout, b"hi\n");
        assert_eq!(out.stderr, b"err\n");
        assert_eq!(out.status.code, Some(3));
        assert!(!out.timed_out);
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
        assert_eq!(out.status.signal, Some(libc::SIGKILL));
        assert!(start.elapsed() < Duration::from_secs(10));
    }

    #[test]
    fn missing_program_is_a_spawn_error() {
        let e = run(&Command::new("/nonexistent/tool")).unwrap_err();
        assert!(matches!(e, ProcessError::Spawn { .. }));
    }

    #[test]
    fn tail_keeps_last_lines() {
        assert_eq!(tail_lines(b"a\nb\nc\n", 2), "b\nc");
        assert_eq!(tail_lines(b"a", 5), "a");
    }
}
