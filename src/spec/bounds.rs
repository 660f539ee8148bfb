//! Bounds on the values `optimize.toml` and the command line both set (`margin`,
//! `max-time`, `timeout`, `min-runs`): one check and one wording for both, so a value the spec refuses
//! is not accepted as a flag.

use std::time::Duration;

/// The longest `max-time` or `timeout`: a day. A comparison stops as soon as it is
/// decided, so a long `max-time` costs nothing when the difference is clear; beyond a day
/// it is a typo (`"1000000h"`), and a run longer than a day cannot be repeated enough
/// times to be measured. A hard bound, not an opt-in: nothing useful lies above it.
pub(crate) const MAX_DURATION: Duration = Duration::from_secs(24 * 3600);

/// Where a value was written: a spec key (`margin`) or a flag (`--margin`).
#[derive(Debug, Clone, Copy)]
pub(crate) enum Key {
    Spec(&'static str),
    Flag(&'static str),
}

impl Key {
    fn name(&self) -> &'static str {
        match self {
            Key::Spec(k) | Key::Flag(k) => k,
        }
    }

    /// How the user writes `value` for this key: `margin = 0.01`, `--margin 0.01`.
    pub(crate) fn written(&self, value: &str) -> String {
        match self {
            Key::Spec(k) => format!("{k} = {value}"),
            Key::Flag(k) => format!("{k} {value}"),
        }
    }

    /// A duration as the user writes it: quoted in the spec, bare on the command line.
    fn duration(&self, d: &str) -> String {
        match self {
            Key::Spec(_) => self.written(&format!("\"{d}\"")),
            Key::Flag(_) => self.written(d),
        }
    }
}

/// What is wrong and how to fix it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Problem {
    pub message: String,
    pub fix: String,
}

impl std::fmt::Display for Problem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}\n  fix: {}", self.message, self.fix)
    }
}

impl std::error::Error for Problem {}

/// The equivalence margin: a fraction in (0, 0.5).
pub(crate) fn margin(v: f64, key: Key) -> Result<f64, Problem> {
    if v > 0.0 && v < 0.5 {
        return Ok(v);
    }
    Err(Problem {
        message: format!(
            "`{}` must be between 0 and 0.5 (exclusive), not {v}",
            key.name()
        ),
        fix: format!(
            "{} means differences within 1 % count as equivalent",
            key.written("0.01")
        ),
    })
}

/// `max-slowdown-per-workload`: a fraction, 0 or more and below 10 (a workload ten times
/// slower is no bound at all).
pub(crate) fn max_slowdown(v: f64, key: Key) -> Result<f64, Problem> {
    if (0.0..10.0).contains(&v) {
        return Ok(v);
    }
    Err(Problem {
        message: format!(
            "`{}` must be a fraction from 0 up to (not including) 10, not {v}",
            key.name()
        ),
        fix: format!(
            "{} refuses to ship a candidate that is surely more than 5 % slower on any workload",
            key.written("0.05")
        ),
    })
}

/// `min-runs`: pairs of runs before the first look, at least 2.
pub(crate) fn min_runs(n: u32, key: Key) -> Result<u32, Problem> {
    if n >= 2 {
        return Ok(n);
    }
    Err(Problem {
        message: format!("`{}` must be at least 2, not {n}", key.name()),
        fix: format!(
            "write {} (a confidence interval needs at least 2 pairs of runs; without `{}` a ladder comparison first looks at 4 pairs per workload, `bench` and `check` at 6)",
            key.written("6"),
            key.name()
        ),
    })
}

/// `max-time` or `timeout`: longer than zero, at most [`MAX_DURATION`].
pub(crate) fn duration(d: Duration, key: Key) -> Result<Duration, Problem> {
    if d.is_zero() {
        return Err(Problem {
            message: format!("`{}` must be longer than zero", key.name()),
            fix: duration_fix(key),
        });
    }
    if d > MAX_DURATION {
        return Err(Problem {
            message: format!(
                "`{}` is {}, more than the limit of 24h",
                key.name(),
                hours(d)
            ),
            fix: format!(
                "write at most {} (a comparison stops as soon as it is decided; a run longer than a day cannot be measured)",
                key.duration("24h")
            ),
        });
    }
    Ok(d)
}

/// A long duration in hours, as users write it: `1000000h`, `25.5h`.
fn hours(d: Duration) -> String {
    let h = d.as_secs_f64() / 3600.0;
    if h.fract() == 0.0 {
        format!("{h:.0}h")
    } else {
        format!("{h:.1}h")
    }
}

/// "write a duration such as max-time = "500ms", "30s" or "2m"".
pub(crate) fn duration_fix(key: Key) -> String {
    match key {
        Key::Spec(k) => format!("write a duration such as {k} = \"500ms\", \"30s\" or \"2m\""),
        Key::Flag(k) => format!("write a duration such as {k} 500ms, 30s or 2m"),
    }
}

/// A duration as written on the command line for `key`, checked like the spec's.
pub(crate) fn parse_flag_duration(text: &str, key: &'static str) -> Result<Duration, Problem> {
    let key = Key::Flag(key);
    let d = crate::util::parse_duration(text).map_err(|e| Problem {
        message: format!("`{}`: {e}", key.name()),
        fix: duration_fix(key),
    })?;
    duration(d, key)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_bounds_and_wording_for_spec_and_flag() {
        let spec = margin(0.0, Key::Spec("margin")).unwrap_err();
        let flag = margin(0.0, Key::Flag("--margin")).unwrap_err();
        assert_eq!(
            spec.message,
            "`margin` must be between 0 and 0.5 (exclusive), not 0"
        );
        assert_eq!(
            flag.message,
            "`--margin` must be between 0 and 0.5 (exclusive), not 0"
        );
        assert_eq!(
            flag.fix,
            "--margin 0.01 means differences within 1 % count as equivalent"
        );
        assert!(margin(0.5, Key::Spec("margin")).is_err());
        assert_eq!(margin(0.01, Key::Flag("--margin")), Ok(0.01));
        let e = parse_flag_duration("1000000h", "--max-time").unwrap_err();
        assert!(
            e.message
                .contains("is 1000000h, more than the limit of 24h"),
            "{e}"
        );
        assert!(e.fix.starts_with("write at most --max-time 24h"), "{e}");
        assert_eq!(parse_flag_duration("24h", "--max-time"), Ok(MAX_DURATION));
        assert!(parse_flag_duration("0", "--max-time").is_err());
        let e = duration(MAX_DURATION * 2, Key::Spec("timeout")).unwrap_err();
        assert!(e.fix.starts_with("write at most timeout = \"24h\""), "{e}");
    }
}
