//! cargo as a child process: every cargo the tool starts runs in a process tree of its own
//! through `process::run_streaming`, bounded (a build or test run: [`build_timeout`],
//! `cargo metadata`: [`METADATA_TIMEOUT`], a probe: [`PROBE_TIMEOUT`]) and killed whole —
//! cargo, rustc, build scripts — when the bound passes, with a message naming what timed
//! out, the bound and the fix. Its output comes back line by line as it arrives. Every build
//! (cargo's, maturin's) gets one environment and priority: [`for_build`].

use std::process::Command;
use std::time::Duration;

use super::CargoError;

thread_local! {
    /// The nice value of the builds this thread starts, when they are background work
    /// ([`build_in_background`]).
    static IN_BACKGROUND: std::cell::Cell<Option<i32>> = const { std::cell::Cell::new(None) };
}

/// From now on, the builds this thread starts run at the CPU priority `nice` (19: the
/// lowest; `sys::lower_priority`): `context::ahead`'s builders call it.
pub(crate) fn build_in_background(nice: i32) {
    IN_BACKGROUND.with(|b| b.set(Some(nice)));
}

/// What every build this module starts gets, cargo's or maturin's: `flags` as
/// `CARGO_ENCODED_RUSTFLAGS` (no `RUSTFLAGS` beside it), no colour or progress bar, piped
/// output, the jobserver when one is shared, and the background priority when set.
pub(crate) fn for_build(cmd: &mut Command, flags: &[String]) {
    cmd.env("CARGO_ENCODED_RUSTFLAGS", flags.join("\x1f"))
        .env_remove("RUSTFLAGS")
        .env("CARGO_TERM_COLOR", "never")
        .env("CARGO_TERM_PROGRESS_WHEN", "never")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    if let Some(client) = crate::jobs::current_jobserver() {
        client.configure_make(cmd);
    }
    if let Some(nice) = IN_BACKGROUND.with(std::cell::Cell::get) {
        crate::sys::lower_priority(cmd, nice);
    }
}

/// The variable that bounds every cargo build and test run (a duration: `90m`, `4h`).
pub(crate) const BUILD_TIMEOUT_ENV: &str = "CARGO_OPTIMIZE_BUILD_TIMEOUT";

/// A build's or test run's bound when [`BUILD_TIMEOUT_ENV`] is not set: far past any
/// honest release build (a large workspace's fat-LTO build takes tens of minutes), so only
/// a build that waits for something that never comes (a build script, a proc macro)
/// reaches it.
const BUILD_TIMEOUT: Duration = Duration::from_secs(2 * 3600);

/// `cargo metadata`'s bound: it reads manifests (and may fetch the index once).
pub(crate) const METADATA_TIMEOUT: Duration = Duration::from_secs(5 * 60);

/// A quick question to cargo (`cargo nextest --version`).
pub(crate) const PROBE_TIMEOUT: Duration = Duration::from_secs(60);

/// The bound of every cargo build and test run: [`BUILD_TIMEOUT_ENV`] when set (more than
/// zero, at most a day), else two hours. A bad value is an error naming the variable and
/// the fix.
pub(crate) fn build_timeout() -> Result<Duration, CargoError> {
    let raw = std::env::var_os(BUILD_TIMEOUT_ENV);
    build_timeout_of(raw.map(|v| v.to_string_lossy().into_owned()))
}

/// [`build_timeout`] of the variable's value.
fn build_timeout_of(value: Option<String>) -> Result<Duration, CargoError> {
    let Some(value) = value else {
        return Ok(BUILD_TIMEOUT);
    };
    let problem = match crate::util::parse_duration(&value) {
        Ok(d) if d.is_zero() => "it is zero".to_string(),
        Ok(d) if d > crate::spec::bounds::MAX_DURATION => {
            "it is more than the limit of 24h".to_string()
        }
        Ok(d) => return Ok(d),
        Err(e) => e,
    };
    Err(CargoError::BadTimeout {
        var: BUILD_TIMEOUT_ENV,
        value,
        problem,
    })
}

/// A duration as the messages say it (`2h`, `20s`).
pub(crate) fn bound_text(d: Duration) -> String {
    humantime::format_duration(Duration::from_secs(d.as_secs().max(1))).to_string()
}

/// Which stream a line came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Pipe {
    Stdout,
    Stderr,
}

/// Run `cmd` (cargo, prepared by the caller) with its stdout and stderr piped, bounded by
/// `bound`: each line to `on_line` with the stream it came from, in the order they arrive. On expiry cargo and everything it started are killed and the error
/// says that `what` did not finish within the bound, with `fix`. A non-zero exit is not an
/// error here (the caller decides).
pub(crate) fn run(
    cmd: &mut Command,
    what: &str,
    bound: Duration,
    fix: &str,
    on_line: &mut dyn FnMut(Pipe, &str),
) -> Result<crate::process::Outcome, CargoError> {
    let mut lines = [LineBuffer::default(), LineBuffer::default()];
    let stream = |i: usize| [Pipe::Stdout, Pipe::Stderr][i.min(1)];
    let mut sink = |i: usize, bytes: &[u8]| {
        lines[i.min(1)].push(bytes, &mut |l| on_line(stream(i), l));
    };
    // A compiler cache's server (the user's `RUSTC_WRAPPER`) is meant to outlive builds.
    if let Some(name) = super::wrapper::name() {
        crate::sys::confine::spare(&name);
    }
    let outcome = crate::process::run_streaming(cmd, what, Some(bound), &mut sink)
        .map_err(|e| CargoError::Spawn(std::io::Error::other(e.to_string())))?;
    for (i, l) in lines.iter_mut().enumerate() {
        l.finish(&mut |line| on_line(stream(i), line));
    }
    if outcome.timed_out {
        return Err(CargoError::TimedOut {
            what: what.to_string(),
            bound: bound_text(bound),
            fix: fix.to_string(),
        });
    }
    Ok(outcome)
}

/// `cargo ARGS` (lock-file and metadata chores: no jobserver, no rustflags) run through
/// [`run`] within [`METADATA_TIMEOUT`]; its outcome and what it printed on stderr.
pub(crate) fn run_quiet(
    args: &[String],
    what: &str,
    fix: &str,
) -> Result<(crate::process::Outcome, String), CargoError> {
    let mut cmd = std::process::Command::new(super::cargo_program());
    cmd.args(args)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut said = String::new();
    let outcome = run(
        &mut cmd,
        what,
        METADATA_TIMEOUT,
        fix,
        &mut |stream, line| {
            if stream == Pipe::Stderr {
                said.push_str(line);
                said.push('\n');
            }
        },
    )?;
    Ok((outcome, said))
}

/// The fix of a build or test run that timed out.
pub(crate) fn build_fix() -> String {
    format!(
        "a build script or proc macro that waits for something never finishes: run the \
         printed cargo command yourself to see where it stops; if the build only needs \
         longer, raise the bound: {BUILD_TIMEOUT_ENV}=4h"
    )
}

/// A stream's bytes cut into lines (without `\n` or `\r\n`); the last, unterminated one
/// handed over by [`LineBuffer::finish`].
#[derive(Default)]
struct LineBuffer(Vec<u8>);

impl LineBuffer {
    fn push(&mut self, bytes: &[u8], each: &mut dyn FnMut(&str)) {
        self.0.extend_from_slice(bytes);
        let mut start = 0;
        while let Some(i) = self.0[start..].iter().position(|&b| b == b'\n') {
            let line = String::from_utf8_lossy(&self.0[start..start + i]);
            each(line.strip_suffix('\r').unwrap_or(&line));
            start += i + 1;
        }
        self.0.drain(..start);
    }

    fn finish(&mut self, each: &mut dyn FnMut(&str)) {
        if !self.0.is_empty() {
            each(&String::from_utf8_lossy(&self.0));
            self.0.clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn output_comes_back_as_lines_whatever_the_pieces() {
        let mut lines = LineBuffer::default();
        let mut seen = Vec::new();
        let mut each = |l: &str| seen.push(l.to_string());
        lines.push(b"one\r\ntw", &mut each);
        lines.push(b"o\n\nthr", &mut each);
        lines.finish(&mut each);
        assert_eq!(seen, ["one", "two", "", "thr"]);
    }

    #[test]
    fn the_build_bound_comes_from_its_variable_and_a_bad_one_names_it() {
        let of = |v: Option<&str>| build_timeout_of(v.map(String::from));
        assert_eq!(of(None).unwrap(), Duration::from_secs(7200));
        assert_eq!(of(Some("90m")).unwrap(), Duration::from_secs(5400));
        for bad in ["0s", "soon", "48h"] {
            let e = of(Some(bad)).unwrap_err().to_string();
            assert!(e.contains(BUILD_TIMEOUT_ENV) && e.contains("fix:"), "{e}");
        }
    }

    #[cfg(unix)]
    #[test]
    fn a_command_past_its_bound_is_killed_and_named() {
        let mut cmd = Command::new("sh");
        cmd.args(["-c", "echo started; sleep 30"])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        let mut out = Vec::new();
        let e = run(
            &mut cmd,
            "the test's `sh`",
            Duration::from_millis(300),
            "wait less",
            &mut |s, l| out.push(format!("{s:?} {l}")),
        )
        .unwrap_err()
        .to_string();
        assert_eq!(out, ["Stdout started"]);
        assert!(
            e.contains("the test's `sh` did not finish within 1s"),
            "{e}"
        );
        assert!(e.contains("fix: wait less"), "{e}");
    }
}
