//! Validation: the raw file (`super::raw`) becomes a [`super::Spec`]'s parts, with every
//! problem reported as `file:line:col: what` plus a fix. The [`Validator`] holds the text so
//! byte offsets can become positions; toml's own messages are reworded into spec terms, and
//! typos get a "did you mean" (optimal-string-alignment distance from `strsim`).

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use toml::Spanned;

use super::bounds::{self, Key};
use super::raw::{
    RawBench, RawDuration, RawExpect, RawProfile, RawStages, RawWorkload, StrOrTable,
};
use super::{
    BenchConfig, BoltMode, Expect, ProfileChoice, SpecError, Stages, Workload, WorkloadLimit,
    PROFILE_PRESETS,
};
use crate::stages::{self, Changes, StageName};
use crate::util::indent;

mod toml_message;
mod workload;

pub(super) const STAGE_NAMES: [&str; StageName::TRIED.len()] = {
    let mut names = [""; StageName::TRIED.len()];
    let mut i = 0;
    while i < names.len() {
        names[i] = StageName::TRIED[i].as_str();
        i += 1;
    }
    names
};
const BOLT_MODES: &[&str] = &["auto", "instrument", "perf"];
const USES: &[&str] = &["train", "eval"];
const EXPECT_MODES: &[&str] = &["exact", "exit-code"];

/// The most workloads a spec may have, matrix expansions included: each is run for every
/// candidate, so past this a run cannot end, and a file of 200 000 tables is refused
/// before any is checked.
pub(super) const MAX_WORKLOADS: usize = 10_000;

const EXAMPLE_WORKLOAD: &str =
    "[[workload]]\nname = \"typical\"\nargs = [\"--input\", \"{root}/data/input.txt\"]";

/// Turns the raw file into checked values. Holds the text being parsed, for turning byte
/// offsets into `file:line:col` errors.
pub(super) struct Validator<'a> {
    pub(super) text: &'a str,
    path: &'a Path,
    lines: LineStarts,
}

impl<'a> Validator<'a> {
    pub(super) fn new(text: &'a str, path: &'a Path) -> Self {
        Validator {
            text,
            path,
            lines: LineStarts::new(text),
        }
    }

    pub(super) fn invalid(
        &self,
        offset: usize,
        message: impl Into<String>,
        fix: Option<String>,
    ) -> SpecError {
        let (line, col) = self.lines.line_col(self.text, offset);
        SpecError::Invalid {
            path: self.path.to_path_buf(),
            line,
            col,
            message: message.into(),
            fix,
        }
    }

    pub(super) fn at<T>(
        &self,
        v: &Spanned<T>,
        message: impl Into<String>,
        fix: Option<String>,
    ) -> SpecError {
        self.invalid(v.span().start, message, fix)
    }

    pub(super) fn line(&self, offset: usize) -> usize {
        self.lines.line(offset)
    }

    /// Byte offset of the start of a 1-based line.
    pub(super) fn line_start(&self, line: usize) -> usize {
        self.lines.start(line, self.text.len())
    }

    /// A TOML syntax or type error, reworded where the library's wording is unfriendly.
    pub(super) fn toml_error(&self, e: &toml::de::Error) -> SpecError {
        let offset = e.span().map_or(0, |s| s.start);
        let site = toml_message::Site::of(self.text, e.span());
        let (message, fix) = toml_message::reword(e.message().trim(), &site);
        self.invalid(offset, message, Some(fix))
    }

    pub(super) fn non_empty(&self, v: Spanned<String>, key: &str) -> Result<String, SpecError> {
        if v.get_ref().trim().is_empty() {
            return Err(self.at(
                &v,
                format!("`{key}` is empty"),
                Some(format!("write a name, or remove `{key}`")),
            ));
        }
        self.no_nul(&v)?;
        Ok(v.into_inner())
    }

    /// A string that becomes an argument, an environment value, a path or a name: a NUL
    /// (`\u0000`) can be in none of them.
    pub(super) fn no_nul(&self, v: &Spanned<String>) -> Result<(), SpecError> {
        if !v.get_ref().contains('\0') {
            return Ok(());
        }
        Err(self.at(
            v,
            format!("\"{}\" holds a NUL character, which no argument, environment value, path or name can hold", v.get_ref().escape_debug()),
            Some("remove the \\u0000".into()),
        ))
    }

    pub(super) fn duration(
        &self,
        v: &Spanned<RawDuration>,
        key: &'static str,
    ) -> Result<Duration, SpecError> {
        let k = Key::Spec(key);
        let text = match v.get_ref() {
            RawDuration::Text(t) => t,
            RawDuration::Number(n) => {
                // The number as seconds, when that is a duration the bounds accept.
                let as_secs = crate::util::parse_duration(&format!("{n}s")).ok();
                let fix = match as_secs.map(|d| bounds::duration(d, k)) {
                    Some(Ok(_)) => format!(
                        "write {key} = \"{n}s\" (or \"{n}ms\", \"{n}m\": durations are quoted)"
                    ),
                    _ => format!("{} (durations are quoted)", bounds::duration_fix(k)),
                };
                return Err(self.at(
                    v,
                    format!("`{key}` must be a string with a unit, not the number {n}"),
                    Some(fix),
                ));
            }
        };
        let d = crate::util::parse_duration(text)
            .map_err(|e| self.at(v, format!("`{key}`: {e}"), Some(bounds::duration_fix(k))))?;
        bounds::duration(d, k).map_err(|p| self.at(v, p.message, Some(p.fix)))
    }

    /// One of `choices`, or an error with "did you mean".
    pub(super) fn choice<'c>(
        &self,
        v: &Spanned<String>,
        what: &str,
        choices: &[&'c str],
    ) -> Result<&'c str, SpecError> {
        match choices.iter().find(|c| **c == v.get_ref()) {
            Some(c) => Ok(c),
            None => Err(self.at(
                v,
                format!("unknown {what} \"{}\"", v.get_ref()),
                Some(choices_fix(v.get_ref(), choices, &format!("{what}s"))),
            )),
        }
    }

    pub(super) fn stages(&self, raw: RawStages) -> Result<Stages, SpecError> {
        let mut stages = Stages::default();
        if let Some(list) = raw.try_ {
            stages.try_ = self.try_list(&list)?;
            stages.try_explicit = true;
        }
        if let Some(profile) = raw.profile {
            stages.profile = self.profile(profile, raw.allow_panic_abort.unwrap_or(false))?;
        }
        if let Some(cpu) = raw.cpu {
            if cpu.get_ref().is_empty() {
                return Err(self.at(
                    &cpu,
                    "`cpu` is an empty list",
                    Some("list -Ctarget-cpu candidates such as [\"x86-64-v3\", \"native\"], or remove `cpu` to choose automatically".into()),
                ));
            }
            let mut seen: Vec<&str> = Vec::new();
            for c in cpu.get_ref() {
                if c.get_ref().trim().is_empty() {
                    return Err(self.at(
                        c,
                        "empty cpu name",
                        Some("write a target-cpu name such as \"x86-64-v3\" or \"native\"".into()),
                    ));
                }
                if seen.contains(&c.get_ref().as_str()) {
                    return Err(self.at(
                        c,
                        format!("cpu \"{}\" is listed twice", c.get_ref()),
                        Some("remove the second one".into()),
                    ));
                }
                seen.push(c.get_ref());
            }
            stages.cpu_lines = cpu
                .get_ref()
                .iter()
                .map(|c| self.line(c.span().start))
                .collect();
            stages.cpu = Some(
                cpu.into_inner()
                    .into_iter()
                    .map(Spanned::into_inner)
                    .collect(),
            );
        }
        stages.allow_panic_abort = raw.allow_panic_abort.unwrap_or(false);
        if let Some(fp) = raw.fp {
            self.fp_list(&mut stages, fp)?;
        }
        if let Some(alloc) = raw.alloc {
            self.alloc_list(&mut stages, alloc)?;
        }
        if let Some(mode) = raw.bolt_mode {
            stages.bolt_mode = match self.choice(&mode, "bolt mode", BOLT_MODES)? {
                "instrument" => BoltMode::Instrument,
                "perf" => BoltMode::Perf,
                _ => BoltMode::Auto,
            };
        }
        if let Some(args) = raw.bolt_args {
            stages.bolt_args = Some(self.bolt_args(args)?);
        }
        Ok(stages)
    }

    /// `[stages] bolt-args`: llvm-bolt's options, but none of the files the tool names
    /// itself (its output, profile and instrumentation file, inside `target/optimize`): one
    /// of those would write outside it, or read another profile than the one trained.
    fn bolt_args(&self, args: Spanned<Vec<Spanned<String>>>) -> Result<Vec<String>, SpecError> {
        const NAMED_BY_US: [&str; 5] = ["o", "data", "instrumentation-file", "w", "save-profile"];
        for a in args.get_ref() {
            let name = a.get_ref().trim_start_matches('-');
            let name = name.split_once('=').map_or(name, |(n, _)| n);
            if NAMED_BY_US.contains(&name) {
                return Err(self.at(
                    a,
                    format!("`bolt-args` sets `-{name}`, a file cargo-optimize names itself (inside target/optimize)"),
                    Some(format!("remove `{}` from `bolt-args`: BOLT's output, profile and instrumentation file are the run's own", a.get_ref())),
                ));
            }
        }
        Ok(args
            .into_inner()
            .into_iter()
            .map(Spanned::into_inner)
            .collect())
    }

    /// `[stages] fp = [...]`: LLVM options (`--name` or `--name=value`), each once; listing
    /// them opts in to the fp stage when `try` is left to its default.
    fn fp_list(
        &self,
        stages: &mut Stages,
        fp: Spanned<Vec<Spanned<String>>>,
    ) -> Result<(), SpecError> {
        if fp.get_ref().is_empty() {
            return Err(self.at(
                &fp,
                "`fp` is an empty list",
                Some("list LLVM floating-point options such as [\"--fp-contract=fast\"], or remove `fp`".into()),
            ));
        }
        let mut seen: Vec<&str> = Vec::new();
        for f in fp.get_ref() {
            let flag = f.get_ref().as_str();
            if !flag.starts_with("--")
                || flag.len() < 3
                || flag.contains(|c: char| c.is_whitespace() || c.is_control())
            {
                return Err(self.at(
                    f,
                    format!("fp flag \"{flag}\" is not an LLVM option"),
                    Some("write it as rustc's -Cllvm-args takes it, e.g. \"--fp-contract=fast\" or \"--enable-no-nans-fp-math\"".into()),
                ));
            }
            if seen.contains(&flag) {
                return Err(self.at(
                    f,
                    format!("fp flag \"{flag}\" is listed twice"),
                    Some("remove the second one".into()),
                ));
            }
            seen.push(flag);
        }
        stages.fp_lines = fp
            .get_ref()
            .iter()
            .map(|f| self.line(f.span().start))
            .collect();
        stages.fp = Some(
            fp.into_inner()
                .into_iter()
                .map(Spanned::into_inner)
                .collect(),
        );
        if !stages.try_explicit {
            stages.try_.push(stages::changing(Changes::FpFlags));
            stages.try_.sort();
        }
        Ok(())
    }

    /// `[stages] alloc = [...]`: known allocators, each once; `[]` leaves the stage out of
    /// the default `try`.
    fn alloc_list(
        &self,
        stages: &mut Stages,
        alloc: Spanned<Vec<Spanned<String>>>,
    ) -> Result<(), SpecError> {
        let mut names: Vec<String> = Vec::new();
        for a in alloc.get_ref() {
            let name = self.choice(a, "allocator", &super::ALLOC_NAMES)?;
            if names.iter().any(|n| n == name) {
                let why = format!("allocator \"{name}\" is listed twice");
                return Err(self.at(a, why, Some("remove the second one".into())));
            }
            names.push(name.to_string());
        }
        stages.alloc_lines = (alloc.get_ref().iter())
            .map(|a| self.line(a.span().start))
            .collect();
        if names.is_empty() && !stages.try_explicit {
            stages
                .try_
                .retain(|s| s.row().changes != Changes::Allocator);
        }
        stages.alloc = names;
        Ok(())
    }

    /// `[stages] try`, through the one parser `--stages` uses too.
    pub(super) fn try_list(
        &self,
        list: &Spanned<Vec<Spanned<String>>>,
    ) -> Result<Vec<StageName>, SpecError> {
        let items = list.get_ref();
        let names: Vec<&str> = items.iter().map(|s| s.get_ref().as_str()).collect();
        super::parse_try(&names).map_err(|e| match items.get(e.index) {
            Some(item) => self.at(item, e.message, Some(e.fix)),
            None => self.at(list, e.message, Some(e.fix)),
        })
    }

    pub(super) fn profile(
        &self,
        raw: Spanned<StrOrTable<RawProfile>>,
        allow_panic_abort: bool,
    ) -> Result<ProfileChoice, SpecError> {
        let start = raw.span().start;
        match raw.into_inner() {
            StrOrTable::Str(name) => {
                let name = Spanned::new(start..start, name);
                Ok(ProfileChoice::Preset(
                    self.choice(&name, "profile preset", &PROFILE_PRESETS)?
                        .to_owned(),
                ))
            }
            StrOrTable::Table(t) => {
                let entries = [
                    ("opt-level", t.opt_level),
                    ("lto", t.lto),
                    ("codegen-units", t.codegen_units),
                    ("panic", t.panic),
                    ("debug", t.debug),
                    ("strip", t.strip),
                    ("incremental", t.incremental),
                    ("overflow-checks", t.overflow_checks),
                    ("debug-assertions", t.debug_assertions),
                ];
                let mut out = BTreeMap::new();
                for (key, value) in entries {
                    let Some(value) = value else { continue };
                    self.profile_value(key, &value, allow_panic_abort)?;
                    out.insert(key.to_owned(), value.into_inner());
                }
                Ok(ProfileChoice::Overrides(out))
            }
        }
    }

    /// Checks an override's type and value the way cargo would, so mistakes surface here.
    pub(super) fn profile_value(
        &self,
        key: &str,
        v: &Spanned<toml::Value>,
        allow_panic_abort: bool,
    ) -> Result<(), SpecError> {
        use toml::Value as V;
        let ok = match (key, v.get_ref()) {
            ("opt-level", V::Integer(n)) => (0..=3).contains(n),
            ("opt-level", V::String(s)) => matches!(s.as_str(), "s" | "z"),
            ("lto", V::Boolean(_)) => true,
            ("lto", V::String(s)) => matches!(s.as_str(), "fat" | "thin" | "off"),
            ("codegen-units", V::Integer(n)) => *n >= 1,
            ("panic", V::String(s)) => matches!(s.as_str(), "unwind" | "abort"),
            ("debug", V::Boolean(_)) => true,
            ("debug", V::Integer(n)) => (0..=2).contains(n),
            ("debug", V::String(s)) => {
                matches!(
                    s.as_str(),
                    "none" | "line-directives-only" | "line-tables-only" | "limited" | "full"
                )
            }
            ("strip", V::Boolean(_)) => true,
            ("strip", V::String(s)) => matches!(s.as_str(), "none" | "debuginfo" | "symbols"),
            ("incremental" | "overflow-checks" | "debug-assertions", V::Boolean(_)) => true,
            _ => false,
        };
        if !ok {
            let allowed = match key {
                "opt-level" => "0, 1, 2, 3, \"s\" or \"z\"",
                "lto" => "true, false, \"fat\", \"thin\" or \"off\"",
                "codegen-units" => "a whole number of at least 1",
                "panic" => "\"unwind\" or \"abort\"",
                "debug" => {
                    "true, false, 0, 1, 2, \"none\", \"line-tables-only\", \"limited\" or \"full\""
                }
                "strip" => "true, false, \"none\", \"debuginfo\" or \"symbols\"",
                _ => "true or false",
            };
            return Err(self.at(
                v,
                format!("invalid profile value {key} = {}", v.get_ref()),
                Some(format!("{key} takes {allowed}")),
            ));
        }
        if key == "panic" && v.get_ref().as_str() == Some("abort") && !allow_panic_abort {
            return Err(self.at(
                v,
                "panic = \"abort\" changes behaviour (no unwinding, Drop does not run on panic) and is off unless allowed",
                Some("add allow-panic-abort = true to [stages] if your program does not rely on unwinding".into()),
            ));
        }
        Ok(())
    }

    pub(super) fn bench(&self, raw: RawBench) -> Result<BenchConfig, SpecError> {
        let mut bench = BenchConfig::default();
        if let Some(t) = &raw.max_time {
            bench.max_time = self.duration(t, "max-time")?;
        }
        if let Some(m) = &raw.margin {
            bench.margin = bounds::margin(*m.get_ref(), Key::Spec("margin"))
                .map_err(|p| self.at(m, p.message, Some(p.fix)))?;
        }
        if let Some(w) = raw.warmup {
            bench.warmup = w;
        }
        if let Some(t) = &raw.budget {
            bench.budget = Some(self.duration(t, "budget")?);
        }
        bench.runner_is_native = raw.runner_is_native.unwrap_or(false);
        if let Some(o) = &raw.objective {
            bench.objective_size = match o.get_ref().as_str() {
                "time" => false,
                "size" => true,
                other => {
                    return Err(self.at(
                        o,
                        format!("unknown objective \"{other}\""),
                        Some("objective takes \"time\" (the default: the fastest binary) or \"size\" (among candidates within the margin of each other, the smaller binary)".into()),
                    ))
                }
            };
        }
        if let Some(m) = &raw.max_slowdown_per_workload {
            let v = bounds::max_slowdown(*m.get_ref(), Key::Spec("max-slowdown-per-workload"))
                .map_err(|p| self.at(m, p.message, Some(p.fix)))?;
            bench.max_slowdown_per_workload = Some(v);
        }
        if let Some(n) = &raw.min_runs {
            bounds::min_runs(*n.get_ref(), Key::Spec("min-runs"))
                .map_err(|p| self.at(n, p.message, Some(p.fix)))?;
            bench.min_runs = Some(*n.get_ref());
        }
        Ok(bench)
    }

    pub(super) fn workloads(
        &self,
        raws: Vec<Spanned<RawWorkload>>,
        root: &Path,
        stages: &Stages,
    ) -> Result<(Vec<Workload>, BTreeMap<String, WorkloadLimit>), SpecError> {
        if raws.is_empty() {
            return Err(self.invalid(
                0,
                "no workloads: cargo-optimize needs at least one [[workload]] to train and measure",
                Some(format!(
                    "add one that runs your binary the way it is really used, e.g.\n\n{}",
                    indent(EXAMPLE_WORKLOAD, "      ")
                )),
            ));
        }
        // Refused before any is checked: a file of 200 000 tables is not read further.
        if let Some(past) = raws.get(MAX_WORKLOADS) {
            return Err(self.too_many(past.span().start, raws.len()));
        }
        let mut out = Vec::new();
        // name → line where first defined
        let mut seen: BTreeMap<String, usize> = BTreeMap::new();
        // Expanded workload name → its limit, its `budget` (every expansion of a matrix shares it).
        let mut limits = BTreeMap::new();
        for raw in raws {
            let header = raw.span().start;
            let mut raw = raw.into_inner();
            let has_metric = raw.metric.is_some();
            let limit = (raw.budget.take())
                .map(|b| self.workload_limit(b, has_metric))
                .transpose()?;
            let before = out.len();
            self.workload(raw, header, root, &mut seen, &mut out)?;
            if out.len() > MAX_WORKLOADS {
                return Err(self.too_many(header, out.len()));
            }
            if let Some(b) = limit {
                for w in &out[before..] {
                    limits.insert(w.name.clone(), b.clone());
                }
            }
        }
        self.distinct_file_names(&out)?;
        let first = self.line_start(out[0].line);
        if !out.iter().any(|w| w.eval) {
            return Err(self.invalid(
                first,
                "no workload is used for \"eval\", so nothing would be measured",
                Some("add \"eval\" to `use` in at least one workload (the default is [\"train\", \"eval\"])".into()),
            ));
        }
        if !out.iter().any(|w| w.train) && stages.try_.iter().any(|s| s.row().trains) {
            let trained: Vec<&str> = (StageName::TRIED.iter())
                .filter(|s| s.row().trains)
                .map(|s| s.as_str())
                .collect();
            let names = trained.join(" and ");
            return Err(self.invalid(
                first,
                format!("no workload is used for \"train\", which the {names} stages need"),
                Some(format!("add \"train\" to `use` in at least one workload, or leave {names} out of [stages] try")),
            ));
        }
        Ok((out, limits))
    }

    /// Names become file names (outputs, profiles): two that give the same one would
    /// overwrite each other's files, found only after building.
    fn distinct_file_names(&self, out: &[Workload]) -> Result<(), SpecError> {
        let mut stems: BTreeMap<String, &Workload> = BTreeMap::new();
        for w in out {
            if let Some(other) = stems.insert(w.file_stem(), w) {
                return Err(self.invalid(
                    self.line_start(w.line),
                    format!(
                        "workloads \"{}\" and \"{}\" (line {}) give the same file name `{}` for their outputs",
                        w.name,
                        other.name,
                        other.line,
                        w.file_stem()
                    ),
                    Some("rename one of them: names differing only in characters other than letters, digits and `-_.,=[]+` (or past 80 bytes) give the same file name".into()),
                ));
            }
        }
        Ok(())
    }

    /// More than [`MAX_WORKLOADS`] workloads, found at `offset` (the table past the limit).
    fn too_many(&self, offset: usize, count: usize) -> SpecError {
        self.invalid(
            offset,
            format!("the spec has {count} workloads or more, past the limit of {MAX_WORKLOADS} (a matrix's expansions count one each)"),
            Some(format!("keep at most {MAX_WORKLOADS} workloads: the ones that stand for real use (each is run for every candidate, so thousands already take days); cover more cases with fewer workloads on larger inputs")),
        )
    }

    pub(super) fn uses(
        &self,
        u: &Spanned<Vec<Spanned<String>>>,
    ) -> Result<(bool, bool), SpecError> {
        if u.get_ref().is_empty() {
            return Err(self.at(
                u,
                "`use` is empty, so the workload would never run",
                Some(
                    "write use = [\"train\"], [\"eval\"] or [\"train\", \"eval\"] (the default)"
                        .into(),
                ),
            ));
        }
        let (mut train, mut eval) = (false, false);
        for item in u.get_ref() {
            let flag = match self.choice(item, "`use` value", USES)? {
                "train" => &mut train,
                _ => &mut eval,
            };
            if *flag {
                return Err(self.at(
                    item,
                    format!("\"{}\" is listed twice", item.get_ref()),
                    Some("remove the second one".into()),
                ));
            }
            *flag = true;
        }
        Ok((train, eval))
    }

    pub(super) fn expect(&self, e: Spanned<StrOrTable<RawExpect>>) -> Result<Expect, SpecError> {
        let start = e.span().start;
        let forms = "expect takes \"exact\", \"exit-code\", { numeric = 0.01 }, { numeric-abs = 1e-9 } or { ignore = \"regex\" }";
        match e.into_inner() {
            StrOrTable::Str(s) => match s.as_str() {
                "exact" => Ok(Expect::Exact),
                "exit-code" => Ok(Expect::ExitCode),
                "numeric" | "numeric-abs" => Err(self.invalid(
                    start,
                    format!("expect = \"{s}\" needs a tolerance"),
                    Some(format!(
                        "write expect = {{ {s} = {} }}",
                        if s == "numeric" { "0.01" } else { "1e-9" }
                    )),
                )),
                "ignore" => Err(self.invalid(
                    start,
                    "expect = \"ignore\" needs a regex",
                    Some("write expect = { ignore = \"regex\" }".into()),
                )),
                _ => {
                    let fix = match did_you_mean(&s, EXPECT_MODES) {
                        Some(m) => format!("did you mean \"{m}\"? {forms}"),
                        None => forms.to_owned(),
                    };
                    Err(self.invalid(start, format!("unknown expect mode \"{s}\""), Some(fix)))
                }
            },
            StrOrTable::Table(t) => {
                let given = [
                    t.numeric.is_some(),
                    t.numeric_abs.is_some(),
                    t.ignore.is_some(),
                ];
                if given.iter().filter(|g| **g).count() != 1 {
                    let message = if given.contains(&true) {
                        "expect takes exactly one mode, found several"
                    } else {
                        "expect table is empty"
                    };
                    return Err(self.invalid(start, message, Some(forms.to_owned())));
                }
                if let Some(tol) = t.numeric.as_ref().or(t.numeric_abs.as_ref()) {
                    let v = *tol.get_ref();
                    if !(v.is_finite() && v >= 0.0) {
                        return Err(self.at(
                            tol,
                            format!("tolerance must be a finite number of at least 0, not {v}"),
                            Some("e.g. { numeric = 0.01 } for 1 %".into()),
                        ));
                    }
                }
                Ok(match (t.numeric, t.numeric_abs, t.ignore) {
                    (Some(n), _, _) => Expect::Numeric(n.into_inner()),
                    (_, Some(n), _) => Expect::NumericAbs(n.into_inner()),
                    (_, _, Some(re)) => {
                        if let Err(err) = regex::Regex::new(re.get_ref()) {
                            return Err(self.at(
                                &re,
                                format!("`ignore` is not a valid regular expression:\n{}", indent(&err.to_string(), "    ")),
                                Some("see https://docs.rs/regex/#syntax; in TOML, '…' strings need no backslash escaping".into()),
                            ));
                        }
                        self.masks_something(&re)?;
                        Expect::Ignore(re.into_inner())
                    }
                    (None, None, None) => unreachable!("exactly one mode was checked above"),
                })
            }
        }
    }
}

impl Validator<'_> {
    /// `expect = { ignore = "…" }` masks the lines it matches: a regex that matches every
    /// line (empty, `.*`) would turn checking off without saying so.
    fn masks_something(&self, re: &Spanned<String>) -> Result<(), SpecError> {
        let Ok(r) = regex::Regex::new(re.get_ref()) else {
            return Ok(());
        };
        // A regex that matches the empty line and a line it has no reason to match
        // matches every line.
        if !(r.is_match("") && r.is_match("\u{1}no workload prints this line\u{1}")) {
            return Ok(());
        }
        Err(self.at(
            re,
            format!("`ignore = {}` matches every line, so nothing of the output would be compared", crate::util::toml_string(re.get_ref())),
            Some("write a regex for the lines that differ from run to run, e.g. { ignore = '^took \\d+ms$' }; to compare only the exit status, write expect = \"exit-code\"".into()),
        ))
    }
}

/// Where each line of a text starts, found once: a byte offset becomes its line by a
/// binary search, so the positions of all of a spec's workloads cost linear time, not a
/// scan from the file's start each (20 000 workloads took seconds that way).
pub(super) struct LineStarts {
    /// Byte offset of each line's first byte; `starts[0] == 0`.
    starts: Vec<usize>,
}

impl LineStarts {
    pub(super) fn new(text: &str) -> Self {
        let breaks = text.match_indices('\n').map(|(i, _)| i + 1);
        LineStarts {
            starts: std::iter::once(0).chain(breaks).collect(),
        }
    }

    /// The 1-based line of a byte offset (past the end: the last line).
    pub(super) fn line(&self, offset: usize) -> usize {
        self.starts.partition_point(|&s| s <= offset)
    }

    /// 1-based line and column (in characters) of a byte offset in `text`, the text the
    /// index was made of.
    pub(super) fn line_col(&self, text: &str, offset: usize) -> (usize, usize) {
        let mut offset = offset.min(text.len());
        while !text.is_char_boundary(offset) {
            offset -= 1;
        }
        let line = self.line(offset);
        (
            line,
            text[self.starts[line - 1]..offset].chars().count() + 1,
        )
    }

    /// Byte offset of the start of a 1-based line (past the last line: `len`).
    fn start(&self, line: usize, len: usize) -> usize {
        match line {
            0 | 1 => 0,
            n => self.starts.get(n - 1).copied().unwrap_or(len),
        }
    }
}

/// 1-based line and column (in characters) of a byte offset.
pub(super) fn line_col(text: &str, offset: usize) -> (usize, usize) {
    LineStarts::new(text).line_col(text, offset)
}

/// The closest of `candidates` to `word`, when close enough to be a likely typo.
pub(super) fn did_you_mean<'c>(word: &str, candidates: &[&'c str]) -> Option<&'c str> {
    let word = word.to_ascii_lowercase().replace('_', "-");
    candidates
        .iter()
        .map(|c| (strsim::osa_distance(&word, c), *c))
        .filter(|(d, c)| *d <= (c.chars().count() / 3).max(1))
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c)
}

pub(super) fn choices_fix(word: &str, choices: &[&str], what: &str) -> String {
    let listed = choices
        .iter()
        .map(|c| format!("\"{c}\""))
        .collect::<Vec<_>>()
        .join(", ");
    match did_you_mean(word, choices) {
        Some(c) => format!("did you mean \"{c}\"? {what}: {listed}"),
        None => format!("{what}: {listed}"),
    }
}

#[cfg(test)]
mod tests {
    use super::super::fixture::{Fixture, ONE};
    use super::*;

    #[test]
    fn every_expect_form() {
        let f = Fixture::new();
        let cases: [(&str, Expect); 6] = [
            (r#""exact""#, Expect::Exact),
            (r#""exit-code""#, Expect::ExitCode),
            ("{ numeric = 0.01 }", Expect::Numeric(0.01)),
            ("{ numeric = 0 }", Expect::Numeric(0.0)),
            ("{ numeric-abs = 1e-9 }", Expect::NumericAbs(1e-9)),
            (
                r#"{ ignore = '^took \d+ms$' }"#,
                Expect::Ignore(r"^took \d+ms$".into()),
            ),
        ];
        for (text, want) in cases {
            let spec = f.ok(&format!("{ONE}expect = {text}\n"));
            assert_eq!(spec.workloads[0].expect, want, "expect = {text}");
        }
        // A table header works as well as an inline table.
        let spec = f.ok(&format!("{ONE}[workload.expect]\nnumeric = 0.5\n"));
        assert_eq!(spec.workloads[0].expect, Expect::Numeric(0.5));
    }

    #[test]
    fn bad_expect_forms() {
        let f = Fixture::new();
        let (line, col, msg, fix) = f.err(&format!("{ONE}expect = \"exakt\"\n"));
        assert_eq!((line, col), (3, 10));
        assert_eq!(msg, "unknown expect mode \"exakt\"");
        assert!(fix.starts_with("did you mean \"exact\"?"), "{fix}");
        let (line, col, msg, fix) = f.err(&format!("{ONE}expect = \"numeric\"\n"));
        assert_eq!((line, col), (3, 10));
        assert!(msg.contains("needs a tolerance"), "{msg}");
        assert_eq!(fix, "write expect = { numeric = 0.01 }");
        let (line, col, msg, _) = f.err(&format!(
            "{ONE}expect = {{ numeric = 0.1, ignore = \"x\" }}\n"
        ));
        assert_eq!((line, col), (3, 10));
        assert_eq!(msg, "expect takes exactly one mode, found several");
        let (line, col, msg, fix) = f.err(&format!("{ONE}expect = {{ numerik = 0.1 }}\n"));
        assert_eq!((line, col), (3, 12));
        assert_eq!(msg, "unknown key `numerik` in the expect table");
        assert!(fix.starts_with("did you mean `numeric`?"), "{fix}");
        let (line, col, msg, _) = f.err(&format!("{ONE}expect = {{ numeric = -1 }}\n"));
        assert_eq!((line, col), (3, 22));
        assert!(msg.starts_with("tolerance must be"), "{msg}");
        let (line, col, msg, _) = f.err(&format!("{ONE}expect = 3\n"));
        assert_eq!((line, col), (3, 10));
        assert!(
            msg.starts_with("invalid type: integer `3`, expected \"exact\""),
            "{msg}"
        );
    }

    #[test]
    fn unknown_top_level_key() {
        let f = Fixture::new();
        let (line, col, msg, fix) = f.err(&format!("bin = \"x\"\nbni = \"y\"\n{ONE}"));
        assert_eq!((line, col), (2, 1));
        assert_eq!(msg, "unknown key `bni` at the top level");
        assert_eq!(
            fix,
            "did you mean `bin`? valid keys at the top level: bin, bench-target, test-target, package, stages, bench, verify, cache, check, release, workload"
        );
        let e = f
            .parse(&format!("bin = \"x\"\nbni = \"y\"\n{ONE}"))
            .unwrap_err();
        let shown = e.to_string();
        assert!(shown.ends_with("optimize.toml:2:1: unknown key `bni` at the top level\n  fix: did you mean `bin`? valid keys at the top level: bin, bench-target, test-target, package, stages, bench, verify, cache, check, release, workload"), "{shown}");
        // A key from another table says where it belongs.
        let (line, col, _, fix) = f.err(&format!("margin = 0.1\n{ONE}"));
        assert_eq!((line, col), (1, 1));
        assert!(fix.starts_with("`margin` belongs in [bench];"), "{fix}");
    }

    #[test]
    fn unknown_key_in_workload() {
        let f = Fixture::new();
        let (line, col, msg, fix) =
            f.err("bin = \"x\"\n\n[[workload]]\nname = \"a\"\n  argz = [\"1\"]\n");
        assert_eq!((line, col), (5, 3));
        assert_eq!(msg, "unknown key `argz` in [[workload]]");
        assert!(
            fix.starts_with("did you mean `args`? valid keys in [[workload]]: name, args, stdin,"),
            "{fix}"
        );
        // snake_case instead of kebab-case
        let (line, col, _, fix) = f.err(&format!("{ONE}sort_lines = true\n"));
        assert_eq!((line, col), (3, 1));
        assert!(fix.starts_with("did you mean `sort-lines`?"), "{fix}");
        // Unknown keys in other tables.
        let (line, col, msg, fix) = f.err(&format!("[bench]\nmax_time = \"1s\"\n{ONE}"));
        assert_eq!((line, col), (2, 1));
        assert_eq!(msg, "unknown key `max_time` in [bench]");
        assert!(fix.starts_with("did you mean `max-time`?"), "{fix}");
        let (line, col, msg, _) = f.err(&format!(
            "[stages]\nprofile = {{ lto = true, opt = 3 }}\n{ONE}"
        ));
        assert_eq!((line, col), (2, 25));
        assert_eq!(msg, "unknown key `opt` in a profile table");
    }

    #[test]
    fn malformed_toml() {
        let f = Fixture::new();
        let (line, col, msg, _) = f.err("bin = \"x\"\n[[workload]]\nname = \"a\nargs = []\n");
        assert_eq!((line, col), (3, 10), "{msg}");
        let (line, col, msg, _) = f.err("bin = \"x\"\nbin = \"y\"\n");
        assert_eq!((line, col), (2, 1));
        assert!(msg.contains("duplicate key"), "{msg}");
        let (line, col, msg, _) = f.err("bin = 3\n[[workload]]\nname = \"a\"\n");
        assert_eq!((line, col), (1, 7));
        assert_eq!(msg, "invalid type: integer `3`, expected a string");
        let (line, col, msg, fix) = f.err(&format!("{ONE}args = \"--help\"\n"));
        assert_eq!((line, col), (3, 8));
        assert_eq!(msg, "invalid type: string \"--help\", expected an array");
        assert_eq!(fix, "write a list: [\"--help\"]");
        // [workload] instead of [[workload]]
        let (line, col, msg, fix) = f.err("bin = \"x\"\n[workload]\nname = \"a\"\n");
        assert_eq!((line, col), (2, 1));
        assert_eq!(msg, "`workload` must be an array of tables");
        assert_eq!(
            fix,
            "write [[workload]] (double brackets) before each entry"
        );
        let (line, col, msg, fix) = f.err("[[workload]]\nargs = []\n");
        assert_eq!((line, col), (1, 1));
        assert_eq!(msg, "missing required key `name`");
        assert_eq!(fix, "add name = \"my-workload\" to this table");
    }

    #[test]
    fn names_that_give_the_same_file_name_are_refused_at_the_second() {
        let f = Fixture::new();
        let (line, _, msg, fix) =
            f.err("[[workload]]\nname = \"a*b\"\n\n[[workload]]\nname = \"a b\"\n");
        assert_eq!(
            (line, msg.as_str()),
            (4, "workloads \"a b\" and \"a*b\" (line 1) give the same file name `a_b` for their outputs")
        );
        assert!(fix.starts_with("rename one of them"), "{fix}");
        let long = "x".repeat(300);
        let spec = f.ok(&format!(
            "[[workload]]\nname = \"{long}1\"\n\n[[workload]]\nname = \"{long}2\"\n"
        ));
        let (a, b) = (spec.workloads[0].file_stem(), spec.workloads[1].file_stem());
        assert!(a.len() <= 100 && b.len() <= 100 && a != b, "{a} {b}");
        assert!(a.starts_with(&"x".repeat(80)), "{a}");
    }

    #[test]
    fn no_workloads() {
        let f = Fixture::new();
        let (line, col, msg, fix) = f.err("bin = \"x\"\n");
        assert_eq!((line, col), (1, 1));
        assert!(msg.starts_with("no workloads"), "{msg}");
        assert!(
            fix.contains("[[workload]]\n      name = \"typical\""),
            "{fix}"
        );
    }

    #[test]
    fn duplicate_workload_name() {
        let f = Fixture::new();
        let (line, col, msg, _) =
            f.err("[[workload]]\nname = \"a\"\n\n[[workload]]\nname = \"a\"\n");
        assert_eq!((line, col), (5, 8));
        assert_eq!(
            msg,
            "duplicate workload name \"a\" (first defined on line 1)"
        );
        let (line, col, msg, _) = f.err(&format!("{ONE}[[workload]]\nname = \"  \"\n"));
        assert_eq!((line, col), (4, 8));
        assert_eq!(msg, "workload `name` is empty");
    }

    #[test]
    fn bad_duration() {
        let f = Fixture::new();
        let (line, col, msg, fix) = f.err(&format!("{ONE}timeout = \"10 parsecs\"\n"));
        assert_eq!((line, col), (3, 11));
        assert!(
            msg.starts_with("`timeout`: `10 parsecs` is not a duration ("),
            "{msg}"
        );
        assert!(fix.contains("\"30s\""), "{fix}");
        let (line, col, msg, _) = f.err(&format!("[bench]\nmax-time = \"0s\"\n{ONE}"));
        assert_eq!((line, col), (2, 12));
        assert_eq!(msg, "`max-time` must be longer than zero");
        let (line, col, _, _) = f.err(&format!("[bench]\nmax-time = 30\n{ONE}"));
        assert_eq!((line, col), (2, 12));
        // Plain seconds, as on the command line.
        let spec = f.ok(&format!(
            "[bench]\nmax-time = \"20\"\n{ONE}timeout = \"2.5\"\n"
        ));
        assert_eq!(spec.bench.max_time, Duration::from_secs(20));
        assert_eq!(spec.workloads[0].timeout, Duration::from_millis(2500));
        let (line, col, msg, _) = f.err(&format!("{ONE}timeout = \"0\"\n"));
        assert_eq!((line, col), (3, 11));
        assert_eq!(msg, "`timeout` must be longer than zero");
    }

    #[test]
    fn durations_need_quotes_and_a_sane_size() {
        let f = Fixture::new();
        for (text, key, at) in [
            (format!("[bench]\nmax-time = 2\n{ONE}"), "max-time", (2, 12)),
            (format!("{ONE}timeout = 2.5\n"), "timeout", (3, 11)),
        ] {
            let (line, col, msg, fix) = f.err(&text);
            assert_eq!((line, col), at);
            assert!(
                msg.starts_with(&format!(
                    "`{key}` must be a string with a unit, not the number 2"
                )),
                "{msg}"
            );
            assert!(fix.starts_with(&format!("write {key} = \"2")), "{fix}");
        }
        let (line, col, msg, fix) = f.err(&format!("[bench]\nmax-time = \"1000000h\"\n{ONE}"));
        assert_eq!((line, col), (2, 12));
        assert_eq!(msg, "`max-time` is 1000000h, more than the limit of 24h");
        assert!(fix.starts_with("write at most max-time = \"24h\""), "{fix}");
        let (_, _, msg, _) = f.err(&format!("{ONE}timeout = \"25h\"\n"));
        assert_eq!(msg, "`timeout` is 25h, more than the limit of 24h");
        f.ok(&format!(
            "[bench]\nmax-time = \"24h\"\n{ONE}timeout = \"24h\"\n"
        ));
    }

    #[test]
    fn output_files_stay_inside_the_cwd() {
        let f = Fixture::new();
        let (line, col, msg, fix) =
            f.err(&format!("{ONE}files = [\"ok.txt\", \"/tmp/out.txt\"]\n"));
        assert_eq!((line, col), (3, 20));
        assert!(
            msg.starts_with("output file /tmp/out.txt is an absolute path"),
            "{msg}"
        );
        assert!(fix.contains("relative to the workload's cwd"), "{fix}");
        let (line, col, msg, _) = f.err(&format!("{ONE}files = [\"a/../../out.txt\"]\n"));
        assert_eq!((line, col), (3, 10));
        assert!(msg.contains("is outside the workload's cwd"), "{msg}");
        f.ok(&format!(
            "{ONE}files = [\"a/../out.txt\", \"out/r.json\"]\n"
        ));
    }

    #[test]
    fn bad_regex() {
        let f = Fixture::new();
        let (line, col, msg, _) = f.err(&format!("{ONE}expect = {{ ignore = \"a(b\" }}\n"));
        assert_eq!((line, col), (3, 21));
        assert!(
            msg.starts_with("`ignore` is not a valid regular expression"),
            "{msg}"
        );
    }

    #[test]
    fn bolt_args_naming_a_file_the_tool_names_are_refused_at_their_place() {
        let f = Fixture::new();
        let spec = f.ok(&format!(
            "[stages]\nbolt-args = [\"-reorder-blocks=ext-tsp\"]\n{ONE}"
        ));
        assert_eq!(spec.stages.bolt_args.unwrap(), ["-reorder-blocks=ext-tsp"]);
        for (arg, name) in [("-o", "o"), ("--o=/tmp/x", "o"), ("-data=p.fdata", "data")] {
            let (line, col, msg, fix) = f.err(&format!(
                "[stages]\nbolt-args = [\"-v=1\", \"{arg}\"]\n{ONE}"
            ));
            assert_eq!((line, col), (2, 22), "{msg}");
            assert!(msg.contains(&format!("sets `-{name}`")), "{msg}");
            assert!(fix.contains(&format!("remove `{arg}`")), "{fix}");
        }
    }

    #[test]
    fn alloc_lists_known_allocators_an_empty_one_leaves_the_stage_out() {
        use crate::stages::StageName::Alloc;
        let f = Fixture::new();
        let spec = f.ok(ONE);
        assert!(spec.stages.tries(Alloc));
        assert_eq!(spec.stages.alloc, ["mimalloc"]);
        let spec = f.ok(&format!(
            "[stages]\nalloc = [\"jemalloc\", \"mimalloc\"]\n{ONE}"
        ));
        assert_eq!(spec.stages.alloc, ["jemalloc", "mimalloc"]);
        assert_eq!(spec.stages.alloc_lines, [2, 2]);
        let spec = f.ok(&format!("[stages]\nalloc = []\n{ONE}"));
        assert!(!spec.stages.tries(Alloc) && spec.stages.alloc.is_empty());
        let (line, col, msg, fix) = f.err(&format!("[stages]\nalloc = [\"tcmalloc\"]\n{ONE}"));
        assert_eq!(
            (line, col, msg.as_str()),
            (2, 10, "unknown allocator \"tcmalloc\"")
        );
        assert!(
            fix.contains("mimalloc") && fix.contains("jemalloc"),
            "{fix}"
        );
        let (line, _, msg, _) = f.err(&format!(
            "[stages]\nalloc = [\"mimalloc\",\n  \"mimalloc\"]\n{ONE}"
        ));
        assert_eq!(
            (line, msg.as_str()),
            (3, "allocator \"mimalloc\" is listed twice")
        );
    }

    #[test]
    fn fp_flags_opt_in_and_bad_ones_name_their_place() {
        use crate::stages::StageName::{Alloc, Bolt, CCompiler, Cpu, Fp, Pgo, Profile};
        let f = Fixture::new();
        // Not tried by default; listing flags opts in, in the stages' order.
        assert!(!f.ok(ONE).stages.tries(Fp));
        let spec = f.ok(&format!("[stages]\nfp = [\"--fp-contract=fast\"]\n{ONE}"));
        assert_eq!(
            spec.stages.try_,
            [Profile, Cpu, Fp, CCompiler, Pgo, Alloc, Bolt]
        );
        assert_eq!(
            spec.stages.fp.as_deref(),
            Some(&["--fp-contract=fast".to_string()][..])
        );
        assert_eq!(spec.stages.fp_lines, [2]);
        // An explicit `try` decides.
        let spec = f.ok(&format!(
            "[stages]\ntry = [\"pgo\"]\nfp = [\"--enable-no-nans-fp-math\"]\n{ONE}"
        ));
        assert_eq!(spec.stages.try_, [Pgo]);
        let spec = f.ok(&format!("[stages]\ntry = [\"cpu\", \"fp\"]\n{ONE}"));
        assert_eq!(
            (spec.stages.try_.clone(), spec.stages.fp),
            (vec![Cpu, Fp], None)
        );
        let (line, col, msg, fix) = f.err(&format!("[stages]\nfp = [\"fast\"]\n{ONE}"));
        assert_eq!(
            (line, col, msg.as_str()),
            (2, 7, "fp flag \"fast\" is not an LLVM option")
        );
        assert!(fix.contains("\"--fp-contract=fast\""), "{fix}");
        let (line, _, msg, _) = f.err(&format!("[stages]\nfp = []\n{ONE}"));
        assert_eq!((line, msg.as_str()), (2, "`fp` is an empty list"));
        let (_, col, msg, _) = f.err(&format!(
            "[stages]\nfp = [\"--fp-contract=fast\", \"--fp-contract=fast\"]\n{ONE}"
        ));
        assert_eq!(
            (col, msg.as_str()),
            (29, "fp flag \"--fp-contract=fast\" is listed twice")
        );
        let (_, _, msg, _) = f.err(&format!("[stages]\ntry = [\"pgo\", \"fp\"]\n{ONE}"));
        assert!(
            msg.starts_with("stage \"fp\" must come before \"pgo\""),
            "{msg}"
        );
    }

    #[test]
    fn bench_and_stage_values() {
        let f = Fixture::new();
        let (line, col, msg, _) = f.err(&format!("[bench]\nmargin = 0.5\n{ONE}"));
        assert_eq!((line, col), (2, 10));
        assert!(
            msg.starts_with("`margin` must be between 0 and 0.5"),
            "{msg}"
        );
        let (line, col, _, _) = f.err(&format!("[bench]\nmargin = 0\n{ONE}"));
        assert_eq!((line, col), (2, 10));
        let spec = format!("[bench]\nmax-slowdown-per-workload = -0.1\n{ONE}");
        let (line, col, msg, fix) = f.err(&spec);
        assert_eq!((line, col), (2, 29));
        assert!(
            msg.contains("`max-slowdown-per-workload` must be a fraction"),
            "{msg}"
        );
        assert!(fix.contains("max-slowdown-per-workload = 0.05"), "{fix}");
        let spec = format!("[bench]\nmax-slowdown-per-workload = \"5%\"\n{ONE}");
        let (line, col, _, _) = f.err(&spec);
        assert_eq!((line, col), (2, 29));
        let ok = f.ok(&format!("[bench]\nmax-slowdown-per-workload = 0.05\n{ONE}"));
        assert_eq!(ok.bench.max_slowdown_per_workload, Some(0.05));
        let (line, col, msg, _) = f.err(&format!("[bench]\nwarmup = -1\n{ONE}"));
        assert_eq!((line, col), (2, 10));
        assert!(msg.contains("expected a whole number"), "{msg}");
        let (line, col, msg, _) = f.err(&format!(
            "[stages]\ntry = [\"profile\", \"baseline\"]\n{ONE}"
        ));
        assert_eq!((line, col), (2, 19));
        assert!(msg.starts_with("`baseline` cannot be listed"), "{msg}");
        let (line, col, msg, _) = f.err(&format!("[stages]\ntry = [\"pgo\", \"pgo\"]\n{ONE}"));
        assert_eq!((line, col), (2, 15));
        assert_eq!(msg, "stage \"pgo\" is listed twice");
        let (line, col, msg, fix) = f.err(&format!("[stages]\ntry = [\"pgo\", \"cpus\"]\n{ONE}"));
        assert_eq!((line, col), (2, 15));
        assert_eq!(msg, "unknown stage \"cpus\"");
        assert_eq!(
            fix,
            "did you mean \"cpu\"? stages: \"profile\", \"cpu\", \"fp\", \"c-compiler\", \"pgo\", \"alloc\", \"bolt\""
        );
        let (_, _, msg, fix) = f.err(&format!("[stages]\ntry = [\"bolt\", \"pgo\"]\n{ONE}"));
        assert!(
            msg.starts_with("stage \"pgo\" must come before \"bolt\""),
            "{msg}"
        );
        assert!(fix.ends_with("in that order: pgo, bolt"), "{fix}");
        // A list that tries nothing is a mistake here as on the command line.
        let (line, _, msg, fix) = f.err(&format!("[stages]\ntry = []\n{ONE}"));
        assert_eq!(line, 2);
        assert!(msg.starts_with("no stage to try"), "{msg}");
        assert!(fix.contains("the baseline always runs first"), "{fix}");
        let (line, col, msg, _) = f.err(&format!("[stages]\nprofile = \"fast\"\n{ONE}"));
        assert_eq!((line, col), (2, 11));
        assert_eq!(msg, "unknown profile preset \"fast\"");
        for p in PROFILE_PRESETS {
            let spec = f.ok(&format!("[stages]\nprofile = \"{p}\"\n{ONE}"));
            assert_eq!(spec.stages.profile, ProfileChoice::Preset(p.into()));
        }
        let (line, col, msg, _) = f.err(&format!("[stages]\nprofile = {{ opt-level = 4 }}\n{ONE}"));
        assert_eq!((line, col), (2, 25));
        assert_eq!(msg, "invalid profile value opt-level = 4");
        let (line, col, _, fix) = f.err(&format!(
            "[stages]\nprofile = {{ panic = \"abort\" }}\n{ONE}"
        ));
        assert_eq!((line, col), (2, 21));
        assert!(fix.contains("allow-panic-abort = true"), "{fix}");
        let (line, col, msg, _) = f.err(&format!("[stages]\nbolt-mode = \"lbr\"\n{ONE}"));
        assert_eq!((line, col), (2, 13));
        assert_eq!(msg, "unknown bolt mode \"lbr\"");
        let (line, col, _, _) = f.err(&format!("[stages]\ncpu = []\n{ONE}"));
        assert_eq!((line, col), (2, 7));
    }

    #[test]
    fn use_values() {
        let f = Fixture::new();
        let (line, col, msg, _) = f.err(&format!("{ONE}use = []\n"));
        assert_eq!((line, col), (3, 7));
        assert!(msg.starts_with("`use` is empty"), "{msg}");
        let (line, col, msg, fix) = f.err(&format!("{ONE}use = [\"eval\", \"trian\"]\n"));
        assert_eq!((line, col), (3, 16));
        assert_eq!(msg, "unknown `use` value \"trian\"");
        assert!(fix.starts_with("did you mean \"train\"?"), "{fix}");
        // Nothing to measure.
        let (line, col, msg, _) = f.err(&format!("{ONE}use = [\"train\"]\n"));
        assert_eq!((line, col), (1, 1));
        assert!(msg.starts_with("no workload is used for \"eval\""), "{msg}");
        // Nothing to train pgo/bolt on, unless they are not tried.
        let (_, _, msg, _) = f.err(&format!("{ONE}use = [\"eval\"]\n"));
        assert!(
            msg.starts_with("no workload is used for \"train\""),
            "{msg}"
        );
        f.ok(&format!(
            "[stages]\ntry = [\"profile\", \"cpu\"]\n{ONE}use = [\"eval\"]\n"
        ));
    }

    #[test]
    fn missing_stdin_and_cwd() {
        let f = Fixture::new();
        let root = f.root();
        let (line, col, msg, fix) = f.err(&format!("{ONE}stdin = \"data/missing.txt\"\n"));
        assert_eq!((line, col), (3, 9));
        assert_eq!(
            msg,
            format!(
                "stdin file {} does not exist",
                root.join("data/missing.txt").display()
            )
        );
        assert!(fix.contains(&root.display().to_string()), "{fix}");
        let (line, col, msg, _) = f.err(&format!("{ONE}cwd = \"nowhere\"\n"));
        assert_eq!((line, col), (3, 7));
        assert_eq!(
            msg,
            format!("cwd {} does not exist", root.join("nowhere").display())
        );
        f.file("plain");
        let (_, _, msg, _) = f.err(&format!("{ONE}cwd = \"plain\"\n"));
        assert!(msg.ends_with("plain is not a directory"), "{msg}");
    }

    #[test]
    fn line_col_counts_characters() {
        assert_eq!(line_col("ab\ncd", 0), (1, 1));
        assert_eq!(line_col("ab\ncd", 4), (2, 2));
        assert_eq!(line_col("é = 1\nx", 3), (1, 3));
        assert_eq!(line_col("ab", 99), (1, 3));
    }

    #[test]
    fn did_you_mean_allows_about_one_typo_in_three_characters() {
        assert_eq!(did_you_mean("bni", &["bin", "package"]), Some("bin"));
        assert_eq!(
            did_you_mean("max_time", &["max-time", "margin"]),
            Some("max-time")
        );
        assert_eq!(
            did_you_mean("Margn", &["max-time", "margin"]),
            Some("margin")
        );
        assert_eq!(did_you_mean("zzz", &["bin", "package"]), None);
        assert_eq!(
            choices_fix("instrumnt", BOLT_MODES, "bolt modes"),
            "did you mean \"instrument\"? bolt modes: \"auto\", \"instrument\", \"perf\""
        );
    }

    #[test]
    fn start_is_warm_by_default_or_cold() {
        let f = Fixture::new();
        assert_eq!(f.ok(ONE).workloads[0].start, super::super::Start::Warm);
        let spec = f.ok(&format!("{ONE}start = \"cold\"\n"));
        assert_eq!(spec.workloads[0].start, super::super::Start::Cold);
        let cmd = spec.workloads[0].command(
            Path::new("/bin/true"),
            &crate::process::Jail::new(Path::new("/nonexistent")),
        );
        assert_eq!(
            cmd.evict,
            [Path::new("/bin/true")],
            "the binary is evicted before each run"
        );
        let (line, col, msg, fix) = f.err(&format!("{ONE}start = \"hot\"\n"));
        assert_eq!((line, col), (3, 9));
        assert_eq!(msg, "`start` is \"warm\" or \"cold\", not \"hot\"");
        assert!(fix.contains("page cache"), "{fix}");
    }

    /// Every bad value says where (line and column) and how to fix it (FAULTS.md rule 1),
    /// and a fix that suggests a value suggests one the validator accepts.
    #[test]
    fn every_bad_value_names_its_place_and_a_fix() {
        let f = Fixture::new();
        // (spec, line, col, in the message, in the fix)
        let cases: &[(String, usize, usize, &str, &str)] = &[
            (
                format!("{ONE}writes = [\"no/such/folder\"]\n"),
                3,
                11,
                "does not exist",
                "create the folder first",
            ),
            (
                format!("{ONE}env-pass = [\"A=B\"]\n"),
                3,
                13,
                "invalid environment variable name",
                "no '=' or NUL",
            ),
            (
                format!("[bench]\nmax-time = true\n{ONE}"),
                2,
                12,
                "expected a duration",
                "write max-time = \"30s\"",
            ),
            (
                format!("[bench]\nmax-time = -1\n{ONE}"),
                2,
                12,
                "not the number -1",
                "max-time = \"500ms\"",
            ),
            (
                format!("[bench]\nmax-time = 100000\n{ONE}"),
                2,
                12,
                "not the number 100000",
                "max-time = \"500ms\"",
            ),
            (
                format!("[bench]\nwarmup = -1\n{ONE}"),
                2,
                10,
                "a whole number from 0 to 4294967295",
                "write warmup = 1",
            ),
            (
                format!("[bench]\nmin-runs = -3\n{ONE}"),
                2,
                12,
                "a whole number",
                "write min-runs = 6",
            ),
            (
                format!("[bench]\nwarmup = 99999999999999\n{ONE}"),
                2,
                10,
                "a whole number from 0 to 4294967295",
                "write warmup = 1",
            ),
            (
                format!("[bench]\nwarmup = 99999999999999999999999\n{ONE}"),
                2,
                10,
                "a whole number from 0 to 4294967295",
                "write warmup = 1",
            ),
            (
                format!("[bench]\nmargin = true\n{ONE}"),
                2,
                10,
                "expected a number",
                "write margin = 0.01",
            ),
            (
                format!("[bench]\nmargin = 1e999\n{ONE}"),
                2,
                10,
                "overflowed",
                "margin = 0.01",
            ),
            (
                format!("[stages]\nallow-panic-abort = \"yes\"\n{ONE}"),
                2,
                21,
                "expected a boolean",
                "write allow-panic-abort = true",
            ),
            (
                format!("{ONE}sort-lines = 1\n"),
                3,
                14,
                "expected a boolean",
                "write sort-lines = true",
            ),
            (
                format!("bin = 3\n{ONE}"),
                1,
                7,
                "expected a string",
                "write bin = \"3\"",
            ),
            (
                format!("{ONE}args = [1]\n"),
                3,
                9,
                "expected a string",
                "\"1\"",
            ),
            (
                format!("{ONE}budget = 3\n"),
                3,
                10,
                "expected a table",
                "budget = { time = \"10ms\" }",
            ),
            (
                format!("[bench]\nmax-time = \"1s\"\nmax-time = \"2s\"\n{ONE}"),
                3,
                1,
                "duplicate key `max-time`",
                "remove one of the two `max-time`",
            ),
            (
                format!("[bench]\n[bench]\n{ONE}"),
                2,
                2,
                "[bench] is written twice",
                "merge the two [bench] tables",
            ),
            (
                format!("{ONE}args = [\"a\0b\"]\n"),
                3,
                11,
                "U+0000",
                "remove it",
            ),
            (
                format!("{ONE}args = [\"a\\u0000b\"]\n"),
                3,
                9,
                "NUL",
                "remove the \\u0000",
            ),
            (
                format!("{ONE}env = {{ A = \"\\u0000\" }}\n"),
                3,
                13,
                "NUL",
                "remove the \\u0000",
            ),
            (
                format!("bin = \"a\\u0000\"\n{ONE}"),
                1,
                7,
                "NUL",
                "remove the \\u0000",
            ),
            (
                "bin = \"x\"\n[[workload]]\nname = \"a\nargs = []\n".to_string(),
                3,
                10,
                "invalid basic string",
                "close the string",
            ),
            (
                format!("[bench\n{ONE}"),
                1,
                7,
                "unclosed table",
                "close the table header with `]`",
            ),
            (
                format!("[release]\ntargets = [\"not-a-triple\"]\n{ONE}"),
                2,
                12,
                "`not` is no architecture",
                "rustc --print target-list",
            ),
            (
                format!("{ONE}files = [\"\"]\n"),
                3,
                10,
                "names no file",
                "name the file",
            ),
            (
                format!("{ONE}files = [\"out/..\"]\n"),
                3,
                10,
                "names no file",
                "name the file",
            ),
            (
                format!("{ONE}expect = {{ ignore = \"\" }}\n"),
                3,
                21,
                "matches every line",
                "expect = \"exit-code\"",
            ),
            (
                format!("{ONE}expect = {{ ignore = \".*\" }}\n"),
                3,
                21,
                "matches every line",
                "expect = \"exit-code\"",
            ),
        ];
        let mut wrong = Vec::new();
        for (text, line, col, message, fix) in cases {
            match f.parse(text) {
                Err(SpecError::Invalid {
                    line: l,
                    col: c,
                    message: m,
                    fix: x,
                    ..
                }) if (l, c) == (*line, *col)
                    && m.contains(message)
                    && x.as_deref().is_some_and(|x| x.contains(fix)) => {}
                other => wrong.push(format!(
                    "{text:?}\n  want {line}:{col} `{message}` fix `{fix}`\n  got {other:?}"
                )),
            }
        }
        assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    }

    #[test]
    fn a_suggested_duration_is_one_the_validator_accepts() {
        let f = Fixture::new();
        for bad in ["-1", "0", "100000", "1.5", "-0.5"] {
            let (_, _, _, fix) = f.err(&format!("[bench]\nmax-time = {bad}\n{ONE}"));
            let start = fix.find("max-time = \"").expect(&fix);
            let end = start + fix[start + 12..].find('"').unwrap() + 13;
            f.ok(&format!("[bench]\n{}\n{ONE}", &fix[start..end]));
        }
    }

    #[test]
    fn the_line_index_gives_the_positions_a_scan_from_the_start_gives() {
        let text = "a = 1\n\nécrit = \"ü\"\r\n[[workload]]\nname = \"w\"";
        let lines = LineStarts::new(text);
        for offset in 0..=text.len() + 3 {
            let mut at = offset.min(text.len());
            while !text.is_char_boundary(at) {
                at -= 1;
            }
            let before = &text[..at];
            let start = before.rfind('\n').map_or(0, |i| i + 1);
            let naive = (
                before.matches('\n').count() + 1,
                before[start..].chars().count() + 1,
            );
            assert_eq!(lines.line_col(text, offset), naive, "offset {offset}");
            assert_eq!(lines.line(at), naive.0, "offset {offset}");
        }
        assert_eq!(lines.start(1, text.len()), 0);
        assert_eq!(lines.start(3, text.len()), 7);
        assert_eq!(lines.start(99, text.len()), text.len());
    }

    /// Every table is checked with its position found from the line index; the limit is
    /// said with the table past it, before any table is checked.
    #[test]
    fn workloads_past_the_limit_are_refused_at_the_first_one_too_many() {
        let f = Fixture::new();
        let tables = |n: usize| -> String {
            (0..n)
                .map(|i| format!("[[workload]]\nname = \"w{i}\"\n\n"))
                .collect()
        };
        let spec = f.ok(&tables(MAX_WORKLOADS));
        assert_eq!(spec.workloads.len(), MAX_WORKLOADS);
        assert_eq!(
            spec.workloads[MAX_WORKLOADS - 1].line,
            3 * MAX_WORKLOADS - 2
        );
        let (line, col, msg, fix) = f.err(&tables(2 * MAX_WORKLOADS));
        assert_eq!((line, col), (3 * MAX_WORKLOADS + 1, 1));
        assert!(msg.contains("past the limit of 10000"), "{msg}");
        assert!(fix.starts_with("keep at most 10000 workloads"), "{fix}");
        // Matrix expansions count one each.
        let values: Vec<String> = (0..1000).map(|i| format!("\"{i}\"")).collect();
        let matrix: String = (0..11)
            .map(|i| {
                format!(
                    "[[workload]]\nname = \"m{i}\"\nargs = [\"{{n}}\"]\nmatrix = {{ n = [{}] }}\n",
                    values.join(", ")
                )
            })
            .collect();
        let (line, _, msg, _) = f.err(&matrix);
        assert_eq!(line, 41);
        assert!(
            msg.contains("11000 workloads or more, past the limit of 10000"),
            "{msg}"
        );
    }
}
