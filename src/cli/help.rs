//! The end of each command's `--help` (not `-h`): examples, then what the exit code means.

/// The run (`cargo optimize`, `cargo optimize run`).
pub(crate) const RUN: &str = "\
Examples:
  cargo optimize                               climb every stage of optimize.toml's [stages]
  cargo optimize -- --input data.txt           no optimize.toml: one workload, these arguments
  cargo optimize --stages pgo,bolt --budget 10m
  cargo optimize --dry-run                     the plan and what it cost last time; build nothing
  cargo optimize --message-format json | jq -c 'select(.event == \"verdict\")'

Exit codes:
  0  the run finished; what ships is in the ladder and target/optimize/latest/report.*
  1  a stage failed, or a stage asked for by name could not run here (its row says why)
  2  error: bad input (a flag, optimize.toml, a project without a binary) or the baseline
     could not be built or run; the message says what and how to fix it";

pub(crate) const INIT: &str = "\
Examples:
  cargo optimize init
  cargo optimize init -- --input data.txt      the binary's arguments for the workloads
  cargo optimize init -p server --bin api

Exit codes:
  0  optimize.toml written
  2  error: it already exists, or no binary or bench target to run";

pub(crate) const DOCTOR: &str = "\
Examples:
  cargo optimize doctor
  cargo optimize doctor --fix                  install rustup's llvm-tools (as root: bolt-N)
  cargo optimize doctor --format json | jq .ready

Exit codes:
  0  ready: everything the default stages need is here
  1  not ready: something is missing (each missing piece is named with its fix)
  2  error: bad input";

pub(crate) const BENCH: &str = "\
Examples:
  cargo optimize bench target/release/old target/release/new
  cargo optimize bench --cmd 'grep -r foo .' --cmd 'rg foo'
  cargo optimize bench a b --workloads parse --min-runs 20 --export-json bench.json

Exit codes:
  0  every comparison finished (whatever its verdict)
  2  error: bad input, or a run failed or exited with another status than expected";

pub(crate) const APPLY: &str = "\
Examples:
  cargo optimize apply --dry-run               the diff, nothing written
  cargo optimize apply                         the latest run's winner as [profile.optimized]
  cargo optimize apply 20250101-120000-4242 --cpu

Exit codes:
  0  written (or nothing to change)
  2  error: no run, a file that cannot be edited, another apply running; nothing is written";

pub(crate) const REPORT: &str = "\
Examples:
  cargo optimize report
  cargo optimize report --format md -o summary.md
  cargo optimize report --format md >> \"$GITHUB_STEP_SUMMARY\"
  cargo optimize report --format json | jq '.stages[].status'
  cargo optimize report --open

Exit codes:
  0  rendered
  2  error: no such run, or a report.json this version cannot read";

pub(crate) const HOTSPOTS: &str = "\
Examples:
  cargo optimize hotspots --top 10
  cargo optimize hotspots --format json -o hot.json
  cargo optimize hotspots --flamegraph=parse

Exit codes:
  0  listed (and drawn, with --flamegraph)
  2  error: the run has no PGO profile, llvm-profdata is missing, or the flamegraph could
     not be drawn (the ranking is still printed)";

pub(crate) const CHECK: &str = "\
Examples:
  cargo optimize check --against origin/main
  cargo optimize check --save-baseline main
  cargo optimize check --baseline main --format md -o check.md
  cargo optimize check --against HEAD~1 --format github

Exit codes:
  0  pass: no workload slower beyond max-regression (judged on its whole 95 % interval), no
     changed output, every budget and max-binary-size met
  1  fail: a regression, a changed output, a budget or max-binary-size exceeded (each is named)
  2  error: bad input (a REV that does not exist, a bad optimize.toml, …) or a failed build;
     the message says what and how to fix it";

pub(crate) const CI: &str = "\
Examples:
  cargo optimize ci --dry-run
  cargo optimize ci --emit-ci github --force

Exit codes:
  0  written, or already up to date (or shown, with --dry-run)
  2  error: a different workflow exists (fix: --force), or bad input";

pub(crate) const RELEASE: &str = "\
Examples:
  cargo optimize release --dry-run
  cargo optimize release --targets x86_64-unknown-linux-gnu --cpu x86-64-v3 -j 4
  cargo optimize release --emit-ci github
  cargo optimize release --gather cells/* --out-dir dist

Exit codes:
  0  every artifact of the matrix was built and packaged (those this machine cannot run are
     built without PGO and unverified, and the manifest says so)
  1  partial release: a target is not installed or cannot link here, or a job failed (each
     is named with its fix); the artifacts that were built are in the output folder
  2  error: bad input (optimize.toml, a flag), or nothing could be built; with --gather, a
     file whose checksum differs from its SHA256SUMS, or folders of different commits";

pub(crate) const PROFILE: &str = "\
Examples:
  cargo optimize profile collect --dir /var/lib/myapp/pgo
  cargo optimize profile merge --weight eu-1.profraw=3 profiles/ -o merged.profdata
  cargo optimize --stages pgo --pgo-profile merged.profdata

Exit codes:
  0  built (collect) or merged (merge)
  2  error: bad input, a failed build, or profiles from another LLVM version";

pub(crate) const CLEAN: &str = "\
Examples:
  cargo optimize clean
  cargo optimize clean --target-dir /tmp/target

Exit codes:
  0  removed (or nothing to remove)
  2  error: a run is using the folder, or a file cannot be removed";

pub(crate) const CACHE: &str = "\
Examples:
  cargo optimize cache stats
  cargo optimize cache gc --max-size 2G
  cargo optimize cache clear

Exit codes:
  0  done
  2  error: a run is using the folder, or a bad --max-size";

pub(crate) const COMPLETIONS: &str = "\
Examples:
  cargo optimize completions bash > ~/.local/share/bash-completion/completions/cargo-optimize
  cargo optimize completions zsh > ~/.zfunc/_cargo-optimize
  cargo optimize completions fish > ~/.config/fish/completions/cargo-optimize.fish

Exit codes:
  0  printed";
