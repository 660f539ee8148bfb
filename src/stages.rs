//! The ladder's table: every stage, one row. A row says what the rest of the tool needs to
//! know of a stage — its name, its place, what it changes, how the budget counts it, what it
//! refines, who verifies it, whether a release carries it — so that the budget, the
//! verification, the release, the spec's validation and the docs read the table instead of
//! naming stages. What a stage *does* is its module in `stage/`, behind the one contract
//! `stage::Stage`; `stage::contract` is the exhaustive `match` from a name to it.
//!
//! No other module names a stage (`limits::only_the_table_names_a_stage`): beyond this file,
//! the spec parses names here, `stage/mod.rs` holds the contract's `match`, and a stage's own
//! module may name itself. Code that needs one particular stage asks for what it changes
//! ([`Changes`]), the meaning it needs, through [`changing`].
//!
//! Adding a stage: a line of [`each_stage`] and a row of [`TABLE`] (both in ladder order), a
//! module in `stage/` implementing `stage::Stage`, and its section in `docs/src/stages.md`;
//! `stage/mod.rs` declares the module and its arm of `stage::contract` from the line.

/// Every stage in ladder order, as `Variant => module::Contract`: the one list of stages.
/// [`StageName`] is made from it here, and `stage/mod.rs` makes its `mod` lines and
/// `stage::contract`'s exhaustive `match` from it, so that a new stage is a line here and a
/// row of [`TABLE`], its module, and its docs. `$then` is a macro taking the list.
macro_rules! each_stage {
    ($then:ident) => {
        $then! {
            Baseline => baseline::Baseline,
            Profile => profile::Profile,
            Cpu => cpu::Cpu,
            Fp => fp::Fp,
            CCompiler => ccompiler::CCompiler,
            Pgo => pgo::Pgo,
            Alloc => alloc::Alloc,
            Bolt => bolt::Bolt,
        }
    };
}
pub(crate) use each_stage;

/// [`StageName`] of [`each_stage`]'s list.
macro_rules! stage_name {
    ($($variant:ident => $module:ident::$contract:ident,)*) => {
        /// A stage's name; the order of the variants is the order stages run in.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
        #[serde(rename_all = "lowercase")]
        pub(crate) enum StageName {
            $($variant,)*
        }
    };
}
each_stage!(stage_name);

/// What a stage changes in the build it starts from: the meaning code outside the table asks
/// for when it needs one particular stage (the stage that lays out code, the one that swaps
/// the allocator), rather than its name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Changes {
    /// Nothing: the user's own build.
    Nothing,
    /// Cargo profile settings (LTO, codegen units, opt-level, panic).
    ProfileSettings,
    /// The CPU it targets (`-Ctarget-cpu`): what ships no longer runs everywhere.
    TargetCpu,
    /// LLVM's floating-point codegen flags: results may change.
    FpFlags,
    /// The compiler `cc` gives C and C++.
    CCompiler,
    /// A training profile (PGO): instrumented build, training, optimized build.
    TrainingProfile,
    /// The global allocator.
    Allocator,
    /// The layout of the linked binary (a post-link rewrite).
    CodeLayout,
}

/// How a stage's candidates are counted: the budget asks the stage's contract for how many,
/// this says what each one costs besides measuring.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Shape {
    /// Builds beyond one per candidate (PGO's instrumented build).
    pub extra_builds: f64,
    /// Trainings (train workloads on an instrumented binary).
    pub trainings: f64,
    /// Instrumented runs of the eval workloads (the eval coverage pass), each counted twice.
    pub evals: f64,
    /// At least this many candidates are counted (the profile's `max`, PGO's one build).
    pub at_least: usize,
}

/// What a stage's candidate refines: a refinement usually gains a few percent at most and
/// costs size or portability, so it is timed for less and kept only when surely faster.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refines {
    Nothing,
    /// A named variant of the stage (any variant: `None`) on its own stage's kept candidate:
    /// `native` on a kept x86-64 level, the profile search's settings after `max`.
    ItsOwn(Option<&'static str>),
    /// Any of its candidates on a kept candidate of the stage that changes this.
    Kept(Changes),
}

/// One stage.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Row {
    pub name: StageName,
    /// Its name in specs, flags, rows and report.json.
    pub label: &'static str,
    /// Its module: `src/stage/<module>.rs` or `src/stage/<module>/`.
    pub module: &'static str,
    /// One line, for `--help` and the docs' list.
    pub what: &'static str,
    pub changes: Changes,
    /// In the default `[stages] try`.
    pub by_default: bool,
    /// When not all stages fit the budget, higher ones get time first: by the gain they
    /// usually bring.
    pub priority: u8,
    pub shape: Shape,
    pub refines: Refines,
    /// The crate's own tests run on its candidates: it changes code generation in ways the
    /// workloads' outputs may not show.
    pub crate_tests: bool,
    /// `release` carries it (trained and applied per artifact).
    pub release: bool,
    /// It trains on the train workloads, so a spec that tries it needs one.
    pub trains: bool,
    /// The stages after it (by what they change) whose candidates it builds beside its own
    /// when they come next, on its candidate.
    pub beside: &'static [Changes],
}

const fn shape(extra_builds: f64, trainings: f64, evals: f64, at_least: usize) -> Shape {
    Shape {
        extra_builds,
        trainings,
        evals,
        at_least,
    }
}

/// Every stage, in ladder order (the order of [`StageName`]'s variants).
pub(crate) const TABLE: [Row; 8] = [
    Row {
        name: StageName::Baseline,
        label: "baseline",
        module: "baseline",
        what: "your build as it is: built, its outputs recorded, checked deterministic",
        changes: Changes::Nothing,
        by_default: true,
        priority: 0,
        shape: shape(0.0, 0.0, 0.0, 0),
        refines: Refines::Nothing,
        crate_tests: false,
        release: false,
        trains: false,
        beside: &[],
    },
    Row {
        name: StageName::Profile,
        label: "profile",
        module: "profile",
        what:
            "a profile preset (`max`: fat LTO, one codegen unit), then a search of cheaper settings",
        changes: Changes::ProfileSettings,
        by_default: true,
        priority: 1,
        shape: shape(0.0, 0.0, 0.0, 1),
        refines: Refines::ItsOwn(None),
        crate_tests: true,
        release: false,
        trains: false,
        beside: &[],
    },
    Row {
        name: StageName::Cpu,
        label: "cpu",
        module: "cpu",
        what: "x86-64 levels (or `[stages] cpu`), then `native` on a kept level",
        changes: Changes::TargetCpu,
        by_default: true,
        priority: 2,
        shape: shape(0.0, 0.0, 0.0, 1),
        refines: Refines::ItsOwn(Some("native")),
        crate_tests: true,
        release: false,
        trains: false,
        beside: &[],
    },
    Row {
        name: StageName::Fp,
        label: "fp",
        module: "fp",
        what: "LLVM floating-point flags, one on another (opt-in: results may change)",
        changes: Changes::FpFlags,
        by_default: false,
        priority: 0,
        shape: shape(0.0, 0.0, 0.0, 1),
        refines: Refines::Nothing,
        crate_tests: false,
        release: false,
        trains: false,
        beside: &[],
    },
    Row {
        name: StageName::CCompiler,
        label: "c-compiler",
        module: "ccompiler",
        what: "clang of rustc's LLVM for the C and C++ that `cc` builds",
        changes: Changes::CCompiler,
        by_default: true,
        priority: 0,
        shape: shape(0.0, 0.0, 0.0, 0),
        refines: Refines::Nothing,
        crate_tests: false,
        release: false,
        trains: false,
        beside: &[],
    },
    Row {
        name: StageName::Pgo,
        label: "pgo",
        module: "pgo",
        what: "profile-guided optimization trained on the train workloads (with C: whole-program)",
        changes: Changes::TrainingProfile,
        by_default: true,
        priority: 3,
        shape: shape(1.0, 1.0, 2.0, 1),
        refines: Refines::Nothing,
        crate_tests: true,
        release: true,
        trains: true,
        beside: &[Changes::Allocator, Changes::CodeLayout],
    },
    Row {
        name: StageName::Alloc,
        label: "alloc",
        module: "alloc",
        what: "another global allocator (`[stages] alloc`, mimalloc by default)",
        changes: Changes::Allocator,
        by_default: true,
        priority: 0,
        shape: shape(0.0, 0.0, 0.0, 0),
        refines: Refines::Nothing,
        crate_tests: false,
        release: false,
        trains: false,
        beside: &[],
    },
    Row {
        name: StageName::Bolt,
        label: "bolt",
        module: "bolt",
        what: "BOLT's code layout, trained on the train workloads",
        changes: Changes::CodeLayout,
        by_default: true,
        priority: 0,
        shape: shape(0.0, 1.0, 0.0, 1),
        refines: Refines::Kept(Changes::TrainingProfile),
        crate_tests: false,
        release: true,
        trains: true,
        beside: &[],
    },
];

impl StageName {
    /// The stages a run can try, in the order they run (the baseline always runs first).
    pub(crate) const TRIED: [StageName; TABLE.len() - 1] = {
        let mut out = [StageName::Baseline; TABLE.len() - 1];
        let mut i = 1;
        while i < TABLE.len() {
            out[i - 1] = TABLE[i].name;
            i += 1;
        }
        out
    };

    /// The baseline: the user's build, which every run builds first and every candidate is
    /// at last compared with (not a stage one lists).
    pub(crate) const BASELINE: StageName = TABLE[0].name;

    /// Its row of [`TABLE`].
    pub(crate) const fn row(self) -> &'static Row {
        &TABLE[self as usize]
    }

    pub(crate) const fn as_str(&self) -> &'static str {
        self.row().label
    }

    /// The stage named `name` among [`StageName::TRIED`].
    pub(crate) fn tried(name: &str) -> Option<StageName> {
        Self::TRIED.into_iter().find(|s| s.as_str() == name)
    }
}

impl std::fmt::Display for StageName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The stage that changes `what`.
pub(crate) fn changing(what: Changes) -> StageName {
    (TABLE.iter().find(|r| r.changes == what))
        .map(|r| r.name)
        .expect("every change is one stage's")
}

/// The name of the stage that changes `what`, as rows and report.json say it.
pub(crate) fn label_of(what: Changes) -> &'static str {
    changing(what).as_str()
}

/// The default `[stages] try`, in ladder order.
pub(crate) fn by_default() -> Vec<StageName> {
    (StageName::TRIED.into_iter())
        .filter(|s| s.row().by_default)
        .collect()
}

/// The stages `release` carries, in ladder order.
pub(crate) fn released() -> Vec<StageName> {
    (StageName::TRIED.into_iter())
        .filter(|s| s.row().release)
        .collect()
}

/// `--stages`'s long help: the stages in the order they run, from the table.
pub(crate) fn flag_help() -> String {
    let names: Vec<&str> = StageName::TRIED.iter().map(|s| s.as_str()).collect();
    format!(
        "Stages to try, overriding optimize.toml's `[stages] try` (e.g. pgo,bolt; `none`).\n\nComma separated, in the order {}; `none` for the baseline only.",
        names.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rows_are_in_ladder_order_and_each_change_is_one_stage_s() {
        for (i, row) in TABLE.iter().enumerate() {
            assert_eq!(row.name as usize, i, "{row:?}");
            let same = TABLE.iter().filter(|r| r.changes == row.changes).count();
            assert_eq!(same, 1, "{row:?}");
        }
        assert_eq!(StageName::BASELINE.as_str(), "baseline");
        assert_eq!(StageName::tried("baseline"), None);
        let names: Vec<&str> = by_default().iter().map(|s| s.as_str()).collect();
        assert_eq!(
            names,
            ["profile", "cpu", "c-compiler", "pgo", "alloc", "bolt"]
        );
        let released: Vec<&str> = released().iter().map(|s| s.as_str()).collect();
        assert_eq!(released, ["pgo", "bolt"]);
        assert_eq!(label_of(Changes::CodeLayout), "bolt");
    }

    /// The docs' stage list (`docs/src/stages.md`) lists the table's stages, in its order.
    #[test]
    fn the_docs_list_the_table_s_stages_in_order() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let labels: Vec<&str> = StageName::TRIED.iter().map(|s| s.as_str()).collect();
        let docs = std::fs::read_to_string(root.join("docs/src/stages.md")).unwrap();
        let listed: Vec<&str> = (docs.lines())
            .filter_map(|l| l.strip_prefix("| `")?.split('`').next())
            .collect();
        assert_eq!(listed, labels, "docs/src/stages.md's table");
        let order = format!("in the order {};", labels.join(", "));
        assert!(flag_help().contains(&order), "{}", flag_help());
    }
}
