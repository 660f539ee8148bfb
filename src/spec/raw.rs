//! The file as written: serde types mirroring `optimize.toml` table by table, and the key
//! lists that name each table in "unknown key" messages. Every table denies unknown keys;
//! values that need a position in an error message are `Spanned`. No checks beyond types.

use std::collections::BTreeMap;

use toml::Spanned;

pub(super) const TOP_KEYS: &[&str] = &[
    "bin",
    "bench-target",
    "test-target",
    "package",
    "stages",
    "bench",
    "verify",
    "cache",
    "check",
    "release",
    "workload",
];
pub(super) const STAGES_KEYS: &[&str] = &[
    "try",
    "profile",
    "cpu",
    "allow-panic-abort",
    "fp",
    "alloc",
    "bolt-mode",
    "bolt-args",
];
pub(super) const BENCH_KEYS: &[&str] = &[
    "max-time",
    "margin",
    "warmup",
    "min-runs",
    "budget",
    "runner-is-native",
    "objective",
    "max-slowdown-per-workload",
];
pub(super) const VERIFY_KEYS: &[&str] = &["tests"];
pub(super) const CACHE_KEYS: &[&str] = &["max-size"];
pub(super) const CHECK_KEYS: &[&str] = &["max-regression", "max-binary-size"];
pub(super) const BUDGET_KEYS: &[&str] = &["time", "max-rss", "metric"];
pub(super) const RELEASE_KEYS: &[&str] =
    &["targets", "cpu", "stages", "profile", "out-dir", "flavors"];
pub(super) const FLAVOR_KEYS: &[&str] = &["features", "no-default-features", "run", "workloads"];
pub(super) const WORKLOAD_KEYS: &[&str] = &[
    "name",
    "args",
    "stdin",
    "env",
    "cwd",
    "timeout",
    "use",
    "expect",
    "files",
    "sort-lines",
    "stderr",
    "matrix",
    "budget",
    "start",
    "cargo",
    "metric",
    "pin",
    "writes",
    "env-pass",
    "command",
];
pub(super) const METRIC_KEYS: &[&str] = &["regex", "unit", "better", "combine"];
/// Cargo profile keys a spec may override (and `apply` manages).
pub(crate) const PROFILE_KEYS: &[&str] = &[
    "opt-level",
    "lto",
    "codegen-units",
    "panic",
    "debug",
    "strip",
    "incremental",
    "overflow-checks",
    "debug-assertions",
];
pub(super) const EXPECT_KEYS: &[&str] = &["numeric", "numeric-abs", "ignore"];

/// Every table with its keys, to name the table in "unknown key" messages.
pub(super) const TABLES: &[(&str, &[&str])] = &[
    ("at the top level", TOP_KEYS),
    ("in [stages]", STAGES_KEYS),
    ("in [bench]", BENCH_KEYS),
    ("in [verify]", VERIFY_KEYS),
    ("in [cache]", CACHE_KEYS),
    ("in [check]", CHECK_KEYS),
    ("in [release]", RELEASE_KEYS),
    ("in a [release.flavors.<name>] table", FLAVOR_KEYS),
    ("in [[workload]]", WORKLOAD_KEYS),
    // `[stages] profile` and `[release] profile` share the keys: the position tells which.
    ("in a profile table", PROFILE_KEYS),
    ("in the expect table", EXPECT_KEYS),
    ("in the budget table", BUDGET_KEYS),
    ("in the metric table", METRIC_KEYS),
];

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub(super) struct RawSpec {
    pub(super) bin: Option<Spanned<String>>,
    pub(super) bench_target: Option<Spanned<String>>,
    pub(super) test_target: Option<Spanned<String>>,
    pub(super) package: Option<Spanned<String>>,
    pub(super) stages: Option<RawStages>,
    pub(super) bench: Option<RawBench>,
    pub(super) verify: Option<RawVerify>,
    pub(super) cache: Option<RawCache>,
    pub(super) check: Option<RawCheck>,
    pub(super) release: Option<RawRelease>,
    pub(super) workload: Option<Vec<Spanned<RawWorkload>>>,
}

#[derive(serde::Deserialize, Default)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub(super) struct RawCache {
    pub(super) max_size: Option<Spanned<String>>,
}

/// `[check]`: what `cargo optimize check` fails on.
#[derive(serde::Deserialize, Default)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub(super) struct RawCheck {
    pub(super) max_regression: Option<Spanned<f64>>,
    pub(super) max_binary_size: Option<Spanned<String>>,
}

/// `[release]`: the matrix `cargo optimize release` builds (targets × flavors × CPU levels).
#[derive(serde::Deserialize, Default)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub(super) struct RawRelease {
    pub(super) targets: Option<Vec<Spanned<String>>>,
    pub(super) cpu: Option<Vec<Spanned<String>>>,
    pub(super) stages: Option<Vec<Spanned<String>>>,
    pub(super) profile: Option<Spanned<StrOrTable<RawProfile>>>,
    pub(super) out_dir: Option<Spanned<String>>,
    /// Flavor name → its table; the names' spans give the order written.
    pub(super) flavors: Option<BTreeMap<Spanned<String>, RawFlavor>>,
}

/// `[release.flavors.<name>]`: one feature set of the release.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub(super) struct RawFlavor {
    pub(super) features: Option<Vec<Spanned<String>>>,
    pub(super) no_default_features: Option<bool>,
    pub(super) run: Option<bool>,
    pub(super) workloads: Option<Spanned<Vec<Spanned<String>>>>,
}

/// A workload's `budget = { time = "10ms", max-rss = "500MB" }`.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub(super) struct RawBudget {
    pub(super) time: Option<Spanned<RawDuration>>,
    pub(super) max_rss: Option<Spanned<String>>,
    pub(super) metric: Option<Spanned<f64>>,
}

#[derive(serde::Deserialize, Default)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub(super) struct RawStages {
    #[serde(rename = "try")]
    pub(super) try_: Option<Spanned<Vec<Spanned<String>>>>,
    pub(super) profile: Option<Spanned<StrOrTable<RawProfile>>>,
    pub(super) cpu: Option<Spanned<Vec<Spanned<String>>>>,
    pub(super) allow_panic_abort: Option<bool>,
    pub(super) fp: Option<Spanned<Vec<Spanned<String>>>>,
    pub(super) alloc: Option<Spanned<Vec<Spanned<String>>>>,
    pub(super) bolt_mode: Option<Spanned<String>>,
    pub(super) bolt_args: Option<Spanned<Vec<Spanned<String>>>>,
}

pub(super) type ProfileValue = Option<Spanned<toml::Value>>;

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub(super) struct RawProfile {
    pub(super) opt_level: ProfileValue,
    pub(super) lto: ProfileValue,
    pub(super) codegen_units: ProfileValue,
    pub(super) panic: ProfileValue,
    pub(super) debug: ProfileValue,
    pub(super) strip: ProfileValue,
    pub(super) incremental: ProfileValue,
    pub(super) overflow_checks: ProfileValue,
    pub(super) debug_assertions: ProfileValue,
}

impl Expecting for RawProfile {
    const EXPECTING: &'static str =
        "a preset name (\"max\", \"balanced\" or \"size\") or a table of cargo profile overrides";
}

#[derive(serde::Deserialize, Default)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub(super) struct RawBench {
    pub(super) max_time: Option<Spanned<RawDuration>>,
    pub(super) margin: Option<Spanned<f64>>,
    pub(super) warmup: Option<u32>,
    pub(super) min_runs: Option<Spanned<u32>>,
    pub(super) budget: Option<Spanned<RawDuration>>,
    pub(super) runner_is_native: Option<bool>,
    pub(super) objective: Option<Spanned<String>>,
    pub(super) max_slowdown_per_workload: Option<Spanned<f64>>,
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub(super) struct RawVerify {
    pub(super) tests: Option<bool>,
}

pub(super) type RawMatrix = BTreeMap<Spanned<String>, Spanned<Vec<Spanned<MatrixValue>>>>;

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub(super) struct RawWorkload {
    pub(super) name: Spanned<String>,
    pub(super) args: Option<Vec<Spanned<String>>>,
    pub(super) stdin: Option<Spanned<String>>,
    pub(super) env: Option<BTreeMap<Spanned<String>, Spanned<String>>>,
    pub(super) cwd: Option<Spanned<String>>,
    pub(super) timeout: Option<Spanned<RawDuration>>,
    #[serde(rename = "use")]
    pub(super) use_: Option<Spanned<Vec<Spanned<String>>>>,
    pub(super) expect: Option<Spanned<StrOrTable<RawExpect>>>,
    pub(super) files: Option<Vec<Spanned<String>>>,
    pub(super) sort_lines: Option<bool>,
    pub(super) stderr: Option<bool>,
    pub(super) matrix: Option<Spanned<RawMatrix>>,
    pub(super) budget: Option<Spanned<RawBudget>>,
    pub(super) start: Option<Spanned<String>>,
    pub(super) cargo: Option<Spanned<String>>,
    pub(super) metric: Option<Spanned<RawMetric>>,
    pub(super) pin: Option<bool>,
    pub(super) writes: Option<Vec<Spanned<String>>>,
    pub(super) env_pass: Option<Vec<Spanned<String>>>,
    pub(super) command: Option<Spanned<Vec<Spanned<String>>>>,
}

/// A workload's `metric` table (`spec::metric`).
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub(super) struct RawMetric {
    pub(super) regex: Spanned<String>,
    pub(super) unit: Option<String>,
    pub(super) better: Spanned<String>,
    pub(super) combine: Option<Spanned<String>>,
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub(super) struct RawExpect {
    pub(super) numeric: Option<Spanned<f64>>,
    pub(super) numeric_abs: Option<Spanned<f64>>,
    pub(super) ignore: Option<Spanned<String>>,
}

impl Expecting for RawExpect {
    const EXPECTING: &'static str =
        "\"exact\", \"exit-code\" or a table such as { numeric = 0.01 } or { ignore = \"regex\" }";
}

/// What a [`StrOrTable`] says it expected, in type errors.
pub(super) trait Expecting {
    const EXPECTING: &'static str;
}

/// A value that is either a string or a table deserialized as `T` (keeping `T`'s own checks,
/// such as unknown keys, and their positions).
pub(super) enum StrOrTable<T> {
    Str(String),
    Table(T),
}

impl<'de, T: serde::Deserialize<'de> + Expecting> serde::Deserialize<'de> for StrOrTable<T> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<T>(std::marker::PhantomData<T>);
        impl<'de, T: serde::Deserialize<'de> + Expecting> serde::de::Visitor<'de> for V<T> {
            type Value = StrOrTable<T>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str(T::EXPECTING)
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(StrOrTable::Str(v.to_owned()))
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                map: A,
            ) -> Result<Self::Value, A::Error> {
                T::deserialize(serde::de::value::MapAccessDeserializer::new(map))
                    .map(StrOrTable::Table)
            }
        }
        d.deserialize_any(V(std::marker::PhantomData))
    }
}

/// A duration as written: a string such as "30s", or a bare number, which the validator
/// refuses with the quoted form as the fix (a number has no unit to read).
pub(super) enum RawDuration {
    Text(String),
    Number(String),
}

impl<'de> serde::Deserialize<'de> for RawDuration {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = RawDuration;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a duration such as \"30s\"")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<RawDuration, E> {
                Ok(RawDuration::Text(v.to_owned()))
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<RawDuration, E> {
                Ok(RawDuration::Number(v.to_string()))
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<RawDuration, E> {
                Ok(RawDuration::Number(v.to_string()))
            }
            fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<RawDuration, E> {
                Ok(RawDuration::Number(v.to_string()))
            }
        }
        d.deserialize_any(V)
    }
}

/// A matrix value: a string, or a number or boolean written without quotes (taken as text).
pub(super) struct MatrixValue(pub(super) String);

impl<'de> serde::Deserialize<'de> for MatrixValue {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = MatrixValue;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a string")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<MatrixValue, E> {
                Ok(MatrixValue(v.to_owned()))
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<MatrixValue, E> {
                Ok(MatrixValue(v.to_string()))
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<MatrixValue, E> {
                Ok(MatrixValue(v.to_string()))
            }
            fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<MatrixValue, E> {
                Ok(MatrixValue(v.to_string()))
            }
            fn visit_bool<E: serde::de::Error>(self, v: bool) -> Result<MatrixValue, E> {
                Ok(MatrixValue(v.to_string()))
            }
        }
        d.deserialize_any(V)
    }
}

#[cfg(test)]
mod tests {
    use super::super::fixture::{Fixture, ONE};

    #[test]
    fn key_lists_match_the_structs() {
        // Each table's "unknown key" message must list exactly the keys of its constant.
        let f = Fixture::new();
        for (text, place) in [
            (format!("zzz = 1\n{ONE}"), "at the top level"),
            (format!("[stages]\nzzz = 1\n{ONE}"), "in [stages]"),
            (format!("[bench]\nzzz = 1\n{ONE}"), "in [bench]"),
            (format!("[verify]\nzzz = 1\n{ONE}"), "in [verify]"),
            (format!("[check]\nzzz = 1\n{ONE}"), "in [check]"),
            (format!("[release]\nzzz = 1\n{ONE}"), "in [release]"),
            (
                format!("[release.flavors.a]\nzzz = 1\n{ONE}"),
                "in a [release.flavors.<name>] table",
            ),
            (
                format!("[release]\nprofile = {{ zzz = 1 }}\n{ONE}"),
                "in a profile table",
            ),
            (
                format!("{ONE}budget = {{ zzz = 1 }}\n"),
                "in the budget table",
            ),
            (format!("{ONE}zzz = 1\n"), "in [[workload]]"),
            (
                format!("[stages]\nprofile = {{ zzz = 1 }}\n{ONE}"),
                "in a profile table",
            ),
            (
                format!("{ONE}expect = {{ zzz = 1 }}\n"),
                "in the expect table",
            ),
        ] {
            let (_, _, msg, _) = f.err(&text);
            assert_eq!(msg, format!("unknown key `zzz` {place}"));
        }
    }
}
