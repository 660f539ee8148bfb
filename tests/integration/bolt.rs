//! The bolt stage end to end with the real llvm-bolt, merge-fdata and rustc: profile
//! collection (instrumentation on machines without LBR), the optimized binary, dyno-stats
//! in report.json, the stripped-profile override, the reuse of a binary that already has
//! relocations, a failing llvm-bolt that must not lose the PGO result, and symbol names
//! too long for BOLT's instrumentation runtime (skipped without shortening, optimized with).
//!
//! Runs that share a fixture's target dir (and so its cargo builds) may run concurrently,
//! so each test reads the report of its own run folder (printed by the tool), never
//! `latest`.

use std::path::{Path, PathBuf};

use cargo_optimize::testing::report::{Report, StageReport, Status};

use crate::common::*;

/// The run folder the tool announced: `→ optimizing `x` (package …) → <folder>`.
fn run_dir(r: &Run) -> PathBuf {
    let line = r
        .stderr
        .lines()
        .find(|l| l.contains("optimizing `"))
        .unwrap_or_else(|| panic!("no run folder announced:\n{}", r.all()));
    PathBuf::from(line.rsplit("→ ").next().unwrap().trim())
}

/// The report of the run `r` (checked like every report: see `common::read_report`).
fn report_of(r: &Run) -> Report {
    let path = run_dir(r).join("report.json");
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}\n{}", path.display(), r.all()));
    parse_report(&path, &text)
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

/// The section names of an ELF file are in its .shstrtab. BOLT keeps the original code as
/// `.bolt.org.text` (and adds `.note.bolt_info`, which stripping removes).
fn has_section(binary: &Path, name: &str) -> bool {
    contains(&std::fs::read(binary).unwrap(), name.as_bytes())
}

/// The stage the bolt stage started from: pgo when it was kept, else the baseline.
fn best_before_bolt(report: &Report) -> &StageReport {
    let pgo = report.stages.iter().find(|s| s.name == "pgo");
    match pgo {
        Some(p) if p.status == Status::Kept => p,
        _ => stage(report, "baseline"),
    }
}

#[test]
fn bolt_after_pgo_profiles_optimizes_verifies_and_reports_dyno_stats() {
    let _guard = shared();
    let r = optimize("bolt-basic", &["--stages", "pgo,bolt"], &[]);
    assert_eq!(r.code, Some(0), "{}", r.all());
    assert!(
        r.stderr.contains("bolt: trained on 1/1 workloads"),
        "{}",
        r.stderr
    );
    let dir = run_dir(&r);
    let report = report_of(&r);
    assert!(
        report
            .toolchain
            .llvm_bolt
            .as_deref()
            .is_some_and(|p| p.contains("llvm-bolt")),
        "{:#?}",
        report.toolchain
    );

    let bolt = stage(&report, "bolt");
    assert_eq!(bolt.verified, Some(true), "{bolt:#?}");
    assert!(
        matches!(bolt.status, Status::Kept | Status::Dropped),
        "{bolt:#?}"
    );
    // Measured against the best candidate before it, with an interval.
    let vs = bolt
        .vs_best
        .as_ref()
        .unwrap_or_else(|| panic!("not measured: {bolt:#?}"));
    assert!(vs.ci_low <= vs.ratio, "{vs:#?}");
    let from = best_before_bolt(&report);
    assert!(
        bolt.reason.starts_with(&format!("bolt vs {}", from.name)),
        "{bolt:#?}"
    );

    // The instrumented binary wrote profiles into the run folder.
    let facts = bolt
        .facts
        .bolt
        .as_ref()
        .unwrap_or_else(|| panic!("no bolt facts: {bolt:#?}"));
    let profiles = dir.join("profiles/bolt");
    if facts.mode == "instrument" {
        let fdata: Vec<PathBuf> = std::fs::read_dir(&profiles)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| {
                let name = p.file_name().unwrap().to_string_lossy().into_owned();
                name.starts_with("prof.") && name.ends_with(".fdata")
            })
            .collect();
        assert!(
            !fdata.is_empty(),
            "no prof.*.fdata in {}",
            profiles.display()
        );
        for f in &fdata {
            assert!(std::fs::metadata(f).unwrap().len() > 0, "{}", f.display());
        }
    }
    assert!(
        std::fs::metadata(profiles.join("merged.fdata"))
            .unwrap()
            .len()
            > 0
    );
    assert!(facts.fdata_files >= 1, "{facts:#?}");
    assert!(
        facts.functions_with_profile.is_some_and(|n| n > 0),
        "{facts:#?}"
    );

    // BOLT's dyno-stats, before and after.
    let dyno = bolt.facts.dyno_stats.as_ref().expect("dyno_stats");
    assert!(!dyno.is_empty(), "{bolt:#?}");
    let taken = dyno
        .get("taken branches")
        .unwrap_or_else(|| panic!("no `taken branches` in {dyno:#?}"));
    assert!(taken.before > 0, "{taken:#?}");
    // `after` is a count by type: the report would not parse without it.
    let _after: u64 = taken.after;

    // Sizes before (the best so far) and after, and the time BOLT took.
    assert_eq!(Some(facts.size_before_bytes), from.size_bytes, "{facts:#?}");
    assert_eq!(Some(facts.output_size_bytes), bolt.size_bytes, "{facts:#?}");
    assert!(facts.seconds > 0.0, "{facts:#?}");

    // The BOLT input has the best candidate's exact settings plus -Wl,-q. What the pgo
    // stage measured (and ships unless BOLT does) carries no relocations: BOLT's input from
    // a kept PGO build is built ahead, beside it, when the budget expects BOLT next.
    let pgo = stage(&report, "pgo");
    assert!(
        !settings(pgo)
            .rustflags
            .contains(&"-Clink-args=-Wl,-q".to_string()),
        "{pgo:#?}"
    );
    let mut want = settings(from).rustflags.clone();
    want.push("-Clink-args=-Wl,-q".into());
    assert_eq!(settings(bolt).rustflags, want, "{bolt:#?}");
    assert_eq!(settings(bolt).target, settings(from).target);
    assert!(facts.input_rebuilt, "{facts:#?}");
    if from.name == "pgo" {
        assert!(
            r.stderr.contains("bolt: input (-Wl,-q) built ahead"),
            "{}",
            r.stderr
        );
    }

    // The optimized binary is BOLT's, a new file, and its outputs equal the baseline's.
    let binary = PathBuf::from(bolt.binary.as_deref().expect("a bolt binary"));
    assert_eq!(binary, dir.join("bin/bolt/bolt-basic"));
    assert!(has_section(&binary, ".bolt.org.text"));
    assert!(!has_section(
        &dir.join("bin/bolt-input/bolt-basic"),
        ".bolt.org.text"
    ));
    for w in ["train", "eval"] {
        let a = std::fs::read(dir.join(format!("outputs/baseline/{w}.stdout"))).unwrap();
        let b = std::fs::read(dir.join(format!("outputs/bolt/{w}.stdout"))).unwrap();
        assert_eq!(a, b, "workload {w}");
    }
    // The final choice is consistent with the verdicts (unless the final gate fell back).
    let final_stage = &final_choice(&report).stage;
    let want = match bolt.status {
        Status::Kept => "bolt",
        _ => from.name.as_str(),
    };
    assert!(final_stage == want || fell_back(&report), "{report:#?}");
}

/// Whether what was kept last did not ship: measured directly against the baseline at the
/// end, it was not faster, so an earlier kept candidate or the baseline ships instead.
fn fell_back(report: &Report) -> bool {
    (report.stages.iter()).any(|s| s.notes.iter().any(|n| n.starts_with("not shipped")))
}

#[test]
fn stripped_profile_is_overridden_for_the_bolt_input_and_explained() {
    let _guard = shared();
    let r = optimize("bolt-stripped", &["--stages", "bolt"], &[]);
    assert_eq!(r.code, Some(0), "{}", r.all());
    let dir = run_dir(&r);
    let report = report_of(&r);
    let base = stage(&report, "baseline");
    assert!(!has_section(
        Path::new(base.binary.as_deref().expect("a baseline binary")),
        ".symtab"
    ));

    let bolt = stage(&report, "bolt");
    assert_eq!(bolt.verified, Some(true), "{bolt:#?}");
    let notes = bolt.notes.join("\n");
    assert!(notes.contains("no symbol table"), "{notes}");
    assert!(notes.contains("strips symbols"), "{notes}");
    assert!(notes.contains("strip = \"debuginfo\""), "{notes}");
    assert!(r.stderr.contains("strips symbols"), "{}", r.stderr);
    assert_eq!(
        settings(bolt)
            .profile_overrides
            .get("strip")
            .map(String::as_str),
        Some("\"debuginfo\""),
        "{bolt:#?}"
    );
    // The input kept its symbols; the shipped result is stripped again, like the baseline.
    assert!(has_section(
        &dir.join("bin/bolt-input/bolt-stripped"),
        ".symtab"
    ));
    let binary = Path::new(bolt.binary.as_deref().expect("a bolt binary"));
    assert!(has_section(binary, ".bolt.org.text"));
    assert!(
        bolt.facts.bolt.as_ref().is_some_and(|b| b.stripped_after),
        "{bolt:#?}"
    );
    assert!(!has_section(binary, ".symtab"));
    assert!(
        !bolt
            .facts
            .dyno_stats
            .as_ref()
            .expect("dyno_stats")
            .is_empty(),
        "{bolt:#?}"
    );
}

#[test]
fn a_binary_already_linked_with_relocations_is_reused_not_rebuilt() {
    let _guard = shared();
    let td = target_dir("bolt-basic-relocs");
    let optimize = || {
        run(
            &fixture("bolt-basic"),
            &[
                "optimize",
                "--target-dir",
                td.to_str().unwrap(),
                "--stages",
                "bolt",
            ],
            &[("RUSTFLAGS", "-Clink-args=-Wl,-q")],
        )
    };
    let r = optimize();
    assert_eq!(r.code, Some(0), "{}", r.all());
    let report = report_of(&r);
    let bolt = stage(&report, "bolt");
    assert_eq!(
        bolt.facts.bolt.as_ref().map(|b| b.input_rebuilt),
        Some(false),
        "{bolt:#?}"
    );
    assert!(
        bolt.notes
            .join("\n")
            .contains("already has relocations and symbols"),
        "{bolt:#?}"
    );
    // The user's flag is kept, once: nothing was added.
    assert_eq!(settings(bolt).rustflags, vec!["-Clink-args=-Wl,-q"]);
    assert!(
        !r.stderr.contains("bolt: input (-Wl,-q) built"),
        "{}",
        r.stderr
    );
    assert_eq!(bolt.verified, Some(true), "{bolt:#?}");

    // Without the kept verdicts, the BOLTed binary comes from the cache's copy and is timed:
    // it must start (a kept copy once lost its execute bit, and measuring it failed).
    std::fs::remove_dir_all(td.join("optimize/cache/verdicts")).unwrap();
    let again = optimize();
    assert_eq!(again.code, Some(0), "{}", again.all());
    assert!(
        again
            .stderr
            .contains("reused the BOLTed binary of an earlier run"),
        "{}",
        again.stderr
    );
    let report = report_of(&again);
    let bolt = stage(&report, "bolt");
    assert!(bolt.vs_best.is_some(), "measured: {bolt:#?}");
    assert_ne!(bolt.status, Status::Failed, "{bolt:#?}");
}

#[test]
fn a_failing_llvm_bolt_is_reported_and_keeps_the_pgo_result() {
    let _guard = shared();
    // The fixture's spec with invalid BOLT flags, next to it in a temp dir (its workloads
    // use no relative paths, so they run the same from there).
    let tmp = tempfile::tempdir().unwrap();
    let spec = tmp.path().join("optimize.toml");
    let text = std::fs::read_to_string(fixture("bolt-basic").join("optimize.toml")).unwrap();
    std::fs::write(
        &spec,
        format!("[stages]\nbolt-args = [\"--definitely-not-an-option\"]\n\n{text}"),
    )
    .unwrap();
    let td = target_dir("bolt-basic");
    let r = run(
        &fixture("bolt-basic"),
        &[
            "optimize",
            "--target-dir",
            td.to_str().unwrap(),
            "--spec",
            spec.to_str().unwrap(),
            "--stages",
            "pgo,bolt",
        ],
        &[],
    );
    // A failed stage makes the run fail, but the run completes with a report.
    assert_eq!(r.code, Some(1), "{}", r.all());
    let report = report_of(&r);
    let bolt = stage(&report, "bolt");
    assert_eq!(bolt.status, Status::Failed, "{bolt:#?}");
    let reason = &bolt.reason;
    assert!(reason.contains("llvm-bolt"), "{reason}");
    // BOLT's own message, and the fix.
    assert!(reason.contains("--definitely-not-an-option"), "{reason}");
    assert!(reason.contains("bolt-args"), "{reason}");

    let pgo = stage(&report, "pgo");
    assert_eq!(pgo.verified, Some(true), "{pgo:#?}");
    assert!(
        matches!(pgo.status, Status::Kept | Status::Dropped),
        "{pgo:#?}"
    );
    let want = if pgo.status == Status::Kept {
        "pgo"
    } else {
        "baseline"
    };
    let fin = final_choice(&report);
    assert!(fin.stage == want || fell_back(&report), "{fin:#?}");
    let final_bin = &fin.binary;
    assert!(Path::new(final_bin).exists(), "{final_bin}");
    assert!(!run_dir(&r).join("bin/bolt").exists());
}

#[test]
fn a_crashing_llvm_bolt_is_a_failed_stage_with_the_signal_and_the_log() {
    let _guard = shared();
    // A stand-in llvm-bolt of rustc's LLVM major that crashes on real work.
    let vv = std::process::Command::new("rustc")
        .arg("-vV")
        .output()
        .unwrap();
    let vv = String::from_utf8(vv.stdout).unwrap();
    let llvm = vv
        .lines()
        .find_map(|l| l.strip_prefix("LLVM version: "))
        .expect("rustc -vV names its LLVM")
        .trim()
        .to_string();
    let tmp = tempfile::tempdir().unwrap();
    let fake = tmp.path().join("llvm-bolt");
    std::fs::write(
        &fake,
        format!(
            "#!/bin/sh\nif [ \"$1\" = --version ]; then echo 'LLVM version {llvm}'; exit 0; fi\necho 'BOLT-INFO: working' \nkill -SEGV $$\n"
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    // The real merge-fdata beside the fake, so the stage runs (and the fake crashes) on
    // every machine that has BOLT, instead of being skipped for want of merge-fdata.
    let major = llvm.split('.').next().unwrap();
    let merge = Path::new("/usr/lib")
        .join(format!("llvm-{major}"))
        .join("bin/merge-fdata");
    if !merge.exists() {
        return missing_tool(
            "merge-fdata",
            "scripts/setup installs it: apt-get install bolt-N",
        );
    }
    std::os::unix::fs::symlink(&merge, tmp.path().join("merge-fdata")).unwrap();
    let r = optimize(
        "bolt-basic",
        &["--stages", "bolt"],
        &[("CARGO_OPTIMIZE_LLVM_BOLT", fake.to_str().unwrap())],
    );
    let report = report_of(&r);
    let bolt = stage(&report, "bolt");
    assert_eq!(r.code, Some(1), "{}", r.all());
    assert_eq!(bolt.status, Status::Failed, "{bolt:#?}");
    let reason = &bolt.reason;
    assert!(reason.contains("crashed (killed by signal 11)"), "{reason}");
    assert!(reason.contains("instrument.log"), "{reason}");
    assert_eq!(final_choice(&report).stage, "baseline");
}

/// The length of the longest name in an ELF file's symbol table.
fn longest_symbol_name(binary: &Path) -> usize {
    use object::{Object, ObjectSymbol};
    let data = std::fs::read(binary).unwrap();
    let file = object::File::parse(&*data).unwrap();
    file.symbols()
        .filter_map(|s| s.name_bytes().ok().map(<[u8]>::len))
        .max()
        .unwrap_or(0)
}

#[test]
fn enormous_symbol_names_stop_the_instrumented_binary_unless_shortened() {
    let _guard = shared();
    // Without shortening (the knob keeps the names): BOLT's runtime stops the instrumented
    // program with its assertion, and the stage is skipped with the reason and what would
    // enable BOLT: a limitation of BOLT on this machine, not a failed run.
    let r = optimize(
        "bolt-long-names",
        &["--stages", "bolt"],
        &[("CARGO_OPTIMIZE_BOLT_KEEP_NAMES", "1")],
    );
    // Asked for by name (`--stages bolt`) and not run: exit 1, with the skipped row.
    assert_eq!(r.code, Some(1), "{}", r.all());
    assert!(
        r.stderr
            .contains("stage `bolt` was asked for by name but was skipped"),
        "{}",
        r.stderr
    );
    let report = report_of(&r);
    let bolt = stage(&report, "bolt");
    assert_eq!(bolt.status, Status::Skipped, "{bolt:#?}");
    let reason = &bolt.reason;
    assert!(
        reason.contains("Assertion failed: buffer overflow, function name too large"),
        "{reason}"
    );
    assert!(reason.contains("what would enable it"), "{reason}");
    assert!(reason.contains("bolt-mode = \"perf\""), "{reason}");
    let input = run_dir(&r).join("bin/bolt-input/bolt-long-names");
    assert!(
        longest_symbol_name(&input) > 10240,
        "the fixture's longest name must not fit BOLT's 10 KiB line buffer"
    );

    // With shortening (the default): the instrumented binary writes its profile, and the
    // BOLTed binary is verified and measured.
    let r = optimize("bolt-long-names", &["--stages", "bolt"], &[]);
    assert_eq!(r.code, Some(0), "{}", r.all());
    assert!(!r.all().contains("function name too large"), "{}", r.all());
    let report = report_of(&r);
    let bolt = stage(&report, "bolt");
    assert!(
        matches!(bolt.status, Status::Kept | Status::Dropped),
        "{bolt:#?}"
    );
    assert_eq!(bolt.verified, Some(true), "{bolt:#?}");
    let shortened = &bolt
        .facts
        .bolt
        .as_ref()
        .unwrap_or_else(|| panic!("no bolt facts: {bolt:#?}"))
        .long_names_shortened;
    assert!(shortened.names >= 1, "{shortened:#?}");
    assert!(shortened.longest_before > 10240, "{shortened:#?}");
    assert!(shortened.longest_after <= 4000, "{shortened:#?}");
    assert!(
        bolt.notes.join("\n").contains("were shortened"),
        "{bolt:#?}"
    );
    let dir = run_dir(&r);
    assert!(longest_symbol_name(&dir.join("bin/bolt-input/bolt-long-names")) <= 4000);
    assert!(
        longest_symbol_name(&dir.join("bin/bolt/bolt-long-names")) <= 4000,
        "the BOLTed binary carries the short names"
    );
    // The profile names the shortened drop glue (it ran).
    let merged =
        std::fs::read_to_string(dir.join("profiles/bolt/merged.fdata")).unwrap_or_default();
    assert!(
        merged.contains("long_name_"),
        "profile without the long-named functions"
    );
}

/// On the fixture made for it, both stages win several-fold (planted far beyond any noise:
/// an indirect call PGO makes direct, and 256 functions on 4 KiB boundaries that BOLT
/// packs), so both are kept, each measured surely faster than its rival, and BOLT ships.
#[test]
fn pgo_and_bolt_are_kept_and_faster_where_each_wins_several_fold() {
    let _guard = lock_target_dir("pgo-bolt-wins");
    let r = optimize("pgo-bolt-wins", &["--stages", "pgo,bolt"], &[]);
    assert_eq!(r.code, Some(0), "{}", r.all());
    let report = report_of(&r);
    for (name, rival) in [("pgo", "baseline"), ("bolt", "pgo")] {
        let row = stage(&report, name);
        assert_eq!(row.status, Status::Kept, "{row:#?}");
        assert_eq!(row.verified, Some(true), "{row:#?}");
        assert!(
            row.reason.starts_with(&format!("{name} vs {rival}")),
            "{row:#?}"
        );
        // Kept, and surely faster (the whole interval below 1): the tool's own rule, not a
        // threshold of ours (under a concurrent build pgo came out 0.705 [0.551, 0.904]).
        let vs = row.vs_best.as_ref().expect("measured against its rival");
        assert!(vs.ci_high < 1.0, "{name}: {vs:#?}");
    }
    let fin = final_choice(&report);
    assert_eq!(fin.stage, "bolt", "{fin:#?}");
}

/// The records of the builds kept under `target_dir` (`cache/builds/<key>.json`): each
/// build's command and what cargo printed.
fn build_records(target_dir: &Path) -> Vec<serde_json::Value> {
    let dir = target_dir.join("optimize/cache/builds");
    let mut records = Vec::new();
    for e in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let text = std::fs::read_to_string(e.unwrap().path()).unwrap();
        let entry: serde_json::Value = serde_json::from_str(&text).unwrap();
        records.extend(entry["value"].as_array().cloned().unwrap_or_default());
    }
    records
}

/// Every file below `dir` whose name ends with `suffix`.
fn files_ending(dir: &Path, suffix: &str) -> Vec<PathBuf> {
    let mut found = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = e.path();
        if path.is_dir() {
            found.extend(files_ending(&path, suffix));
        } else if path.to_string_lossy().ends_with(suffix) {
            found.push(path);
        }
    }
    found
}

/// The variable that names the host's linker: set, the PGO build cannot link BOLT's input
/// beside itself (`cargo::twin` runs rustc's own linker only).
fn linker_var() -> String {
    let host = host().to_uppercase().replace(['-', '.'], "_");
    format!("CARGO_TARGET_{host}_LINKER")
}

#[test]
fn bolt_s_input_is_linked_by_the_pgo_build_itself_the_same_binary_as_its_relink() {
    let _guard = shared();
    // PGO is kept here by far (planted), so BOLT reads the PGO build's input.
    let tmp = copy_fixture("pgo-bolt-wins");
    let dir = tmp.path().to_path_buf();
    let td = dir.join("target");
    let args = ["--stages", "pgo,bolt"];
    let r = optimize_into(&dir, &td, &args);
    assert_eq!(r.code, Some(0), "{}", r.all());
    let bolt_dir = dir.join(run_dir(&r));
    let report = latest_report(&td);
    assert_eq!(stage(&report, "pgo").status, Status::Kept, "{}", r.all());
    let bolt = stage(&report, "bolt").clone();
    assert_eq!(bolt.verified, Some(true), "{bolt:#?}");
    assert!(has_section(
        &bolt_dir.join("bin/bolt/pgo-bolt-wins"),
        ".bolt.org.text"
    ));

    // One build record with -Wl,-q, for which cargo never ran: nothing compiled, nothing said.
    let records = build_records(&td);
    let command = |r: &serde_json::Value| r["command"].as_str().unwrap_or("").to_string();
    let inputs: Vec<&serde_json::Value> = (records.iter())
        .filter(|r| command(r).contains("-Wl,-q"))
        .collect();
    assert_eq!(inputs.len(), 1, "{records:#?}");
    assert_eq!(inputs[0]["stderr"].as_str(), Some(""), "{:#?}", inputs[0]);
    let input = PathBuf::from(inputs[0]["binary"].as_str().unwrap());
    assert!(has_section(&input, ".rela.text"), "{}", input.display());
    assert!(!has_section(
        &bolt_dir.join("bin/pgo/pgo-bolt-wins"),
        ".rela.text"
    ));

    // Unchanged, a run builds nothing.
    let again = optimize_into(&dir, &td, &args);
    assert_eq!(again.code, Some(0), "{}", again.all());
    let cache = latest_report(&td).build_cache.expect("build cache stats");
    assert_eq!(cache.misses, 0, "{cache:?}\n{}", again.all());

    // Byte for byte what its printed command builds, run as a shell would (every crate
    // compiled, in a target dir of its own: `cargo rustc … -- -Clink-args=-Wl,-q`).
    let own = td.join("by-its-command");
    let mut words = shell_words::split(&command(inputs[0])).unwrap();
    let assignment = words.remove(0);
    let (var, flags) = assignment.split_once('=').unwrap();
    assert_eq!(
        (var, words.remove(0).as_str()),
        ("RUSTFLAGS", "cargo"),
        "{words:?}"
    );
    let at = words.iter().position(|w| w == "--target-dir").unwrap();
    words[at + 1] = own.display().to_string();
    if let Some(at) = words.iter().position(|w| w.starts_with("build.build-dir=")) {
        words.drain(at - 1..=at);
    }
    assert_eq!(words.last().map(String::as_str), Some("-Clink-args=-Wl,-q"));
    let out = std::process::Command::new("cargo")
        .args(&words)
        .env(var, flags)
        .env_remove("CARGO_ENCODED_RUSTFLAGS")
        .current_dir(&dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{words:?}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let built = own.join(host()).join("release/pgo-bolt-wins");
    assert_eq!(
        std::fs::read(&built).unwrap(),
        std::fs::read(&input).unwrap(),
        "{words:?}"
    );
}

#[test]
fn without_a_twin_bolt_s_input_links_alone_beside_its_base_or_relinks_it() {
    let _guard = shared();
    // This fixture's target dir is this test's alone: start with nothing built, so what
    // cargo compiled for each build is in its record.
    let td = target_dir("bolt-relink");
    let _ = std::fs::remove_dir_all(&td);
    // Under fat LTO, where a relink redoes the link-time optimization, the input starts
    // beside the PGO build. A linker of the user's own (here rustc's default, named) leaves
    // no twin to take.
    let args = ["--stages", "pgo,bolt", "--profile", "fat"];
    let var = linker_var();
    let env = [(var.as_str(), "cc")];
    let r = optimize("bolt-relink", &args, &env);
    assert_eq!(r.code, Some(0), "{}", r.all());
    let dir = run_dir(&r);
    let report = report_of(&r);
    let bolt = stage(&report, "bolt");
    assert_eq!(bolt.verified, Some(true), "{bolt:#?}");
    assert!(
        matches!(bolt.status, Status::Kept | Status::Dropped),
        "{bolt:#?}"
    );
    let facts = bolt.facts.bolt.as_ref().expect("bolt facts");
    assert!(facts.input_rebuilt, "{facts:#?}");
    // What apply writes still names -Wl,-q (a full build with it makes the same binary).
    let from = best_before_bolt(&report);
    let mut want = settings(from).rustflags.clone();
    want.push("-Clink-args=-Wl,-q".into());
    assert_eq!(settings(bolt).rustflags, want, "{bolt:#?}");

    // Each input (the one built ahead beside the pgo build, the one the stage built from
    // its best): `cargo rustc … -- -Clink-args=-Wl,-q`, the flag for the final link alone.
    // One whose base was built relinks it in the base's build dir, compiling the package
    // alone; one started beside its base compiles its crates in its own dir.
    let records = build_records(&td);
    let command = |r: &serde_json::Value| r["command"].as_str().unwrap_or("").to_string();
    let inputs: Vec<&serde_json::Value> = (records.iter())
        .filter(|r| command(r).contains("-Wl,-q"))
        .collect();
    assert!(!inputs.is_empty(), "{records:#?}");
    let mut beside = Vec::new();
    for input in inputs {
        match command(input).contains("build.build-dir=") {
            true => assert_is_a_relink(input, &command(input)),
            false => beside.push(assert_is_built_beside(input, &command(input))),
        }
    }
    // The one built ahead started beside the pgo build, before that was built. When PGO
    // is kept, BOLT waits for it, so its record is there; when PGO is dropped, nobody asks
    // for it and the run's end may kill it unfinished (a loaded machine), so only its start
    // is certain.
    assert!(
        r.stderr
            .lines()
            .any(|l| l.contains("building ahead, beside the run")
                && l.contains("bolt: input (-Wl,-q)")),
        "{}",
        r.all()
    );
    if stage(&report, "pgo").status == Status::Kept {
        assert!(!beside.is_empty(), "{records:#?}");
    }
    // The input BOLT read has relocations, and BOLT optimized it; the pgo build it may
    // relink kept its own binary without them (not overwritten).
    assert!(has_section(
        &dir.join("bin/bolt-input/bolt-relink"),
        ".rela.text"
    ));
    assert!(!has_section(&dir.join("bin/pgo/bolt-relink"), ".rela.text"));
    assert!(has_section(
        &dir.join("bin/bolt/bolt-relink"),
        ".bolt.org.text"
    ));

    // Unchanged, a run builds nothing: the input is the same build whether its crates were
    // compiled in its own dir or its base's.
    let again = [
        &["optimize", "--target-dir", td.to_str().unwrap()],
        &args[..],
    ]
    .concat();
    let r = run(&fixture("bolt-relink"), &again, &env);
    assert_eq!(r.code, Some(0), "{}", r.all());
    let cache = report_of(&r).build_cache.expect("build cache stats");
    assert_eq!(cache.misses, 0, "{cache:?}\n{}", r.all());

    // Built again (its own dir gone) once the pgo build is there, the same input relinks it
    // (when PGO was dropped, the input built beside it may have been killed unfinished:
    // then there is no own dir of it to remove).
    if beside.is_empty() {
        return;
    }
    for own in &beside {
        std::fs::remove_dir_all(own).unwrap();
    }
    let r = optimize("bolt-relink", &[&args[..], &["--fresh"]].concat(), &env);
    assert_eq!(r.code, Some(0), "{}", r.all());
    // Measured again, PGO may be dropped this time: then BOLT's input is the baseline's,
    // and the one for the pgo build, started ahead, is nobody's (and may be killed).
    if stage(&report_of(&r), "pgo").status != Status::Kept {
        return;
    }
    let records = build_records(&td);
    let in_beside = |r: &serde_json::Value| {
        let binary = PathBuf::from(r["binary"].as_str().unwrap_or(""));
        beside.iter().any(|own| binary.starts_with(own))
    };
    let relinks: Vec<&serde_json::Value> = (records.iter())
        .filter(|r| in_beside(r) && command(r).contains("build.build-dir="))
        .collect();
    assert!(!relinks.is_empty(), "{records:#?}");
    for relink in relinks {
        assert_is_a_relink(relink, &command(relink));
    }
}

/// `input` links with relocations through `cargo rustc … -- <flag>`, not as a rustflag of
/// every crate.
fn assert_links_alone_with_relocations(input: &str) {
    let words = shell_words::split(input).unwrap();
    // The rustflags' assignment, when the build has rustflags, then `cargo rustc`.
    let at = words.iter().position(|w| w == "cargo").unwrap();
    assert!(at <= 1 && words[at + 1] == "rustc", "{input}");
    assert!(input.ends_with(" -- -Clink-args=-Wl,-q"), "{input}");
    assert!(
        !words[..at].iter().any(|w| w.contains("-Wl,-q")),
        "a rustflag of every crate: {input}"
    );
}

/// `record` (of a build with `input` as its command, started beside the build it would
/// relink) compiled its crates, the dependency included, in its own target dir.
fn assert_is_built_beside(record: &serde_json::Value, input: &str) -> PathBuf {
    assert_links_alone_with_relocations(input);
    let said = record["stderr"].as_str().unwrap();
    assert!(said.contains("Compiling relink-dep"), "{said}");
    let binary = PathBuf::from(record["binary"].as_str().unwrap());
    let own = binary
        .ancestors()
        .find(|a| a.parent().is_some_and(|p| p.ends_with("optimize/build")))
        .unwrap();
    assert_eq!(files_ending(own, ".rlib").len(), 1, "{}", own.display());
    assert!(has_section(&binary, ".rela.text"), "{}", binary.display());
    own.to_path_buf()
}

/// `record` (of a build with `input` as its command) compiled the package alone, in the
/// build dir of the build it relinks, whose binary it left without relocations.
fn assert_is_a_relink(record: &serde_json::Value, input: &str) {
    let said = record["stderr"].as_str().unwrap();
    assert_links_alone_with_relocations(input);
    assert!(said.contains("Compiling bolt-relink"), "{said}");
    assert!(!said.contains("Compiling relink-dep"), "{said}");
    // The dependency was compiled once, into the relinked build's dir; the input's own
    // target dir holds its binary and nothing compiled.
    let words = shell_words::split(input).unwrap();
    let build_dir = (words.iter())
        .find_map(|w| w.strip_prefix("build.build-dir="))
        .map(|d| d.trim_matches('\''))
        .unwrap_or_else(|| panic!("no build dir in {input}"));
    let rlibs = files_ending(Path::new(build_dir), ".rlib");
    assert_eq!(rlibs.len(), 1, "{build_dir}: {rlibs:?}");
    let binary = PathBuf::from(record["binary"].as_str().unwrap());
    let own = binary
        .ancestors()
        .find(|a| a.parent().is_some_and(|p| p.ends_with("optimize/build")))
        .unwrap();
    assert_ne!(own, Path::new(build_dir));
    assert!(files_ending(own, ".rlib").is_empty(), "{}", own.display());
    assert!(has_section(&binary, ".rela.text"), "{}", binary.display());
    let relinked = Path::new(build_dir).join(binary.strip_prefix(own).unwrap());
    assert!(
        !has_section(&relinked, ".rela.text"),
        "{}",
        relinked.display()
    );
}
