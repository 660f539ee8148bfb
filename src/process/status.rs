//! How a process ended: its exit code, or the signal that killed it, named for messages.

use crate::sys;

/// How a process ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ExitStatus {
    /// Exit code when it exited normally.
    pub code: Option<i32>,
    /// Signal number when it was killed by a signal.
    pub signal: Option<i32>,
}

impl ExitStatus {
    pub fn success(&self) -> bool {
        self.code == Some(0)
    }
    pub(super) fn from_std(s: std::process::ExitStatus) -> Self {
        ExitStatus {
            code: s.code(),
            signal: sys::exit_signal(&s),
        }
    }
}

impl std::fmt::Display for ExitStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match (self.code, self.signal) {
            (Some(c), _) => write!(f, "exit code {c}"),
            (None, Some(s)) => match signal_name(s) {
                Some(name) => write!(f, "killed by signal {s} ({name})"),
                None => write!(f, "killed by signal {s}"),
            },
            _ => write!(f, "unknown status"),
        }
    }
}

/// The name of a signal a crash or a kill is made of, for messages.
pub(crate) fn signal_name(signal: i32) -> Option<&'static str> {
    sys::signal_name(signal)
}
