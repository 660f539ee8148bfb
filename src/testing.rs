//! What the integration tests reach besides the binary: the `report.json` types they read
//! back, the measuring engine and the process runner they drive directly, and the command
//! line's definition the docs are checked against. Not an API: it follows the code.
//!
//! Must not: hold logic of its own (re-exports only).

/// `report.json`, as the tests read it back.
pub mod report {
    pub use crate::report::{
        load, pair_ratios, FinalChoice, Format, PgoProfileQuality, Report, Settings, StageReport,
        Status, UntrainedHot,
    };
}

/// The paired-comparison engine, driven directly on the `spin` fixture.
pub mod bench {
    pub use crate::bench::export::format_secs;
    pub use crate::bench::stats::verdict;
    pub use crate::bench::{
        compare, BenchError, BenchOptions, Comparison, Estimate, Side, Verdict,
    };
}

/// The process runner (timeouts, process trees).
pub mod process {
    pub use crate::process::{run, Command};
}

/// The command line's definition (clap), for the docs' checks.
pub use crate::cli::Cli;
