//! `cargo = "bench" | "test"` workloads and the top-level `bench-target` / `test-target`: a spec whose
//! workloads run the package's bench or test harness instead of a binary (library crates,
//! and crates whose real use is best seen through their benchmarks). One spec times one
//! executable, so every workload runs the same one.
//!
//! A harness prints its own timings, so its output is not compared (`Expect::Success`,
//! unless the workload says `expect`); but it must succeed: a bench that panics (exit 101)
//! on the baseline is exit 2 naming the workload with its stderr, and on a candidate a
//! failed run, as for any workload — never a status to reproduce as `expect = "exit-code"`.

use toml::Spanned;

use super::validate::Validator;
use super::{Harness, HarnessKind, SpecError, Workload};

impl Validator<'_> {
    /// A workload's `cargo` value.
    pub(super) fn cargo_kind(
        &self,
        v: &Option<Spanned<String>>,
    ) -> Result<Option<HarnessKind>, SpecError> {
        let Some(v) = v else { return Ok(None) };
        match v.get_ref().as_str() {
            "bench" => Ok(Some(HarnessKind::Bench)),
            "test" => Ok(Some(HarnessKind::Test)),
            other => Err(self.at(
                v,
                format!("`cargo` is \"bench\" or \"test\", not \"{other}\""),
                Some("cargo = \"bench\" runs the package's bench harness (`cargo bench`'s executable, with --bench and your `args` as filters); cargo = \"test\" its test harness; leave `cargo` out to run the binary".into()),
            )),
        }
    }

    /// The harness every workload runs, when they run one; `bench-target` / `test-target`
    /// name its target.
    pub(super) fn harness(
        &self,
        bench: Option<Spanned<String>>,
        test: Option<Spanned<String>>,
        has_bin: bool,
        workloads: &[Workload],
    ) -> Result<Option<Harness>, SpecError> {
        let first = &workloads[0];
        if let Some(w) = workloads.iter().find(|w| w.cargo != first.cargo) {
            return Err(self.invalid(
                self.line_start(w.line),
                format!(
                    "workload `{}` runs {} but workload `{}` runs {}: one spec times one executable",
                    w.name,
                    runs(w.cargo),
                    first.name,
                    runs(first.cargo)
                ),
                Some("give every workload the same `cargo` (or none), or put them in two specs and pick one with --spec".into()),
            ));
        }
        let (named, other) = match first.cargo {
            None => {
                for (kind, v) in [("bench", &bench), ("test", &test)] {
                    if let Some(v) = v {
                        return Err(self.unused(v, kind));
                    }
                }
                return Ok(None);
            }
            Some(HarnessKind::Bench) => (bench, test.map(|t| (t, "test"))),
            Some(HarnessKind::Test) => (test, bench.map(|b| (b, "bench"))),
        };
        if let Some((v, key)) = other {
            return Err(self.unused(&v, key));
        }
        if has_bin {
            return Err(self.invalid(
                0,
                format!("`bin` is set, but the workloads run {}", runs(first.cargo)),
                Some("remove `bin` (the workloads name what they run with `cargo`), or remove `cargo` from the workloads".into()),
            ));
        }
        let target = named
            .map(|v| self.non_empty(v, "bench-target or test-target"))
            .transpose()?;
        Ok(first.cargo.map(|kind| Harness { kind, target }))
    }

    fn unused(&self, v: &Spanned<String>, kind: &str) -> SpecError {
        self.at(
            v,
            format!("`{kind}-target` names the target of `cargo = \"{kind}\"` workloads, and no workload has `cargo = \"{kind}\"`"),
            Some(format!("add cargo = \"{kind}\" to the workloads that run it, or remove `{kind}-target`")),
        )
    }
}

fn runs(kind: Option<HarnessKind>) -> &'static str {
    match kind {
        None => "the binary",
        Some(HarnessKind::Bench) => "the bench harness (cargo = \"bench\")",
        Some(HarnessKind::Test) => "the test harness (cargo = \"test\")",
    }
}

#[cfg(test)]
mod tests {
    use super::super::fixture::Fixture;
    use super::*;

    const BENCH: &str = "[[workload]]\nname = \"b\"\ncargo = \"bench\"\nargs = [\"small\"]\n";

    #[test]
    fn bench_workloads_run_the_harness_with_bench_first_and_check_exit_codes() {
        let f = Fixture::new();
        let spec = f.ok(&format!("bench-target = \"hot\"\n{BENCH}"));
        assert_eq!(
            spec.harness,
            Some(Harness {
                kind: HarnessKind::Bench,
                target: Some("hot".into())
            })
        );
        let w = &spec.workloads[0];
        assert_eq!(
            w.expect,
            super::super::Expect::Success,
            "harness output has timings, and a harness must succeed"
        );
        let jail = crate::process::Jail::new(std::path::Path::new("/nonexistent"));
        let cmd = w.command(std::path::Path::new("/x/hot-123"), &jail);
        assert_eq!(cmd.args, ["--bench", "small"]);
        let spec = f.ok("[[workload]]\nname = \"t\"\ncargo = \"test\"\n");
        assert_eq!(
            spec.harness,
            Some(Harness {
                kind: HarnessKind::Test,
                target: None
            })
        );
        assert!(spec.workloads[0]
            .command(std::path::Path::new("/t"), &jail)
            .args
            .is_empty());
    }

    #[test]
    fn one_executable_per_spec_and_keys_that_name_nothing_are_errors() {
        let f = Fixture::new();
        let (line, _, msg, fix) = f.err(&format!("{BENCH}[[workload]]\nname = \"plain\"\n"));
        assert_eq!(line, 5);
        assert!(
            msg.contains("`plain` runs the binary but workload `b` runs the bench harness"),
            "{msg}"
        );
        assert!(fix.contains("--spec"), "{fix}");
        let (line, col, msg, _) = f.err("bench-target = \"hot\"\n[[workload]]\nname = \"a\"\n");
        assert_eq!((line, col), (1, 16));
        assert!(msg.contains("no workload has `cargo = \"bench\"`"), "{msg}");
        let (_, _, msg, _) = f.err(&format!("bin = \"x\"\n{BENCH}"));
        assert!(msg.contains("`bin` is set"), "{msg}");
        let (_, _, msg, fix) = f.err("[[workload]]\nname = \"a\"\ncargo = \"run\"\n");
        assert_eq!(msg, "`cargo` is \"bench\" or \"test\", not \"run\"");
        assert!(fix.contains("leave `cargo` out"), "{fix}");
    }

    #[test]
    fn the_bench_skeletons_parse_and_run_the_harness() {
        let f = Fixture::new();
        let one = f.ok(&super::super::skeleton_for_bench("hot", false));
        assert_eq!(
            one.harness,
            Some(Harness {
                kind: HarnessKind::Bench,
                target: None
            })
        );
        assert!(one
            .workloads
            .iter()
            .all(|w| w.cargo == Some(HarnessKind::Bench)));
        let several = f.ok(&super::super::skeleton_for_bench("hot", true));
        assert_eq!(
            several.harness.and_then(|h| h.target).as_deref(),
            Some("hot")
        );
        // A binary's skeleton with its benches proposed (commented out) still parses.
        let text = super::super::skeleton("tool") + &super::super::bench_proposals(&["hot".into()]);
        assert!(text.contains("#   cargo = \"bench\""), "{text}");
        assert!(f.ok(&text).harness.is_none());
    }
}
