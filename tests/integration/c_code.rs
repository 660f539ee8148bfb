//! C and C++ built by `cc` on a real program whose hot loops are C (`c-hot`: a bytecode VM
//! and a tokenizer in `csrc/vm.c`), with the real clang of rustc's LLVM: the c-compiler
//! stage's candidate, and whole-program PGO — the C functions in the merged profile, the
//! whole-program candidate verified and measured, and the profile used by clang (the
//! optimized object's hot sections, `-fprofile-use` in the build script's record). Without
//! that clang, a skipped row and a Rust-only PGO row naming the fix; a program without C
//! builds as before.

use std::path::{Path, PathBuf};
use std::process::Command;

use cargo_optimize::testing::report::Status;
use object::{Object, ObjectSection};

use crate::common::*;

/// rustc's LLVM major.
fn llvm_major() -> u32 {
    let out = Command::new("rustc").arg("-vV").output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let line = text
        .lines()
        .find(|l| l.starts_with("LLVM version: "))
        .unwrap();
    let version = line.trim_start_matches("LLVM version: ");
    version.split('.').next().unwrap().parse().unwrap()
}

/// The clang of rustc's LLVM, as the tool looks for it; `None` (a skip, or a failure under
/// CI) without one.
fn clang() -> Option<PathBuf> {
    let n = llvm_major();
    let on_path = std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
        .map(|d| d.join(format!("clang-{n}")))
        .find(|p| p.is_file());
    let found = on_path.or_else(|| {
        let p = PathBuf::from(format!("/usr/lib/llvm-{n}/bin/clang"));
        p.is_file().then_some(p)
    });
    if found.is_none() {
        missing_tool(
            &format!("clang-{n}"),
            &format!("scripts/setup installs it (apt-get install clang-{n})"),
        );
    }
    found
}

/// The C objects' section names of every build of `c-hot` under `td`, with the `CFLAGS`
/// line `cc` recorded for it.
fn c_builds(td: &Path) -> Vec<(String, Vec<String>)> {
    let mut out = Vec::new();
    for archive in files_named(td, "libvm.a") {
        let record = archive.parent().unwrap().parent().unwrap().join("output");
        let Ok(record) = std::fs::read_to_string(&record) else {
            continue;
        };
        let cflags: String = (record.lines())
            .filter(|l| l.starts_with("CFLAGS") && l.contains(" = "))
            .collect();
        let data = std::fs::read(&archive).unwrap();
        let ar = object::read::archive::ArchiveFile::parse(&*data).unwrap();
        let mut sections = Vec::new();
        for member in ar.members() {
            let bytes = member.unwrap().data(&*data).unwrap();
            let obj = object::File::parse(bytes).unwrap();
            sections.extend(
                obj.sections()
                    .filter_map(|s| s.name().ok().map(str::to_string)),
            );
        }
        out.push((cflags, sections));
    }
    out
}

#[test]
fn the_c_is_compiled_by_clang_then_trained_and_optimized_with_the_rust_on_one_profile() {
    let _guard = shared();
    let Some(_) = clang() else { return };
    let tmp = copy_fixture("c-hot");
    let dir = tmp.path();
    let td = dir.join("target");
    let td_s = td.to_str().unwrap();
    let (_, report) = optimize_in_place(dir);

    // The compiler switch is a candidate of its own, measured against the baseline.
    let cc = stage(&report, "c-compiler");
    assert_eq!(cc.facts.variant.as_deref(), Some("clang"), "{cc:#?}");
    assert!(
        matches!(cc.status, Status::Kept | Status::Dropped),
        "{cc:#?}"
    );
    assert!(cc.vs_best.is_some() && cc.verified == Some(true), "{cc:#?}");
    let code = cc.facts.c_code.as_ref().expect("c-compiler row's C facts");
    assert_eq!(code.defined.get("c-hot"), Some(&2), "{code:?}");
    assert!(code.compiler.contains("clang version"), "{code:?}");

    // Whole-program PGO: verified, measured against the best so far, and its profile
    // holds the C functions.
    let whole = rows(&report, "pgo")
        .into_iter()
        .find(|r| r.facts.variant.as_deref() == Some("whole-program"))
        .unwrap_or_else(|| panic!("no whole-program row: {:#?}", report.stages));
    assert_eq!(whole.verified, Some(true), "{whole:#?}");
    assert!(whole.vs_best.is_some(), "{whole:#?}");
    let code = whole
        .facts
        .c_code
        .as_ref()
        .expect("whole-program row's C facts");
    assert_eq!(
        code.profiled.as_ref().and_then(|p| p.get("c-hot")),
        Some(&2),
        "{code:?}"
    );
    assert_eq!(
        code.hottest.first().map(String::as_str),
        Some("vm_run"),
        "{code:?}"
    );
    let c = settings(whole)
        .c
        .as_ref()
        .expect("whole-program settings' C");
    assert!(
        c.flags.iter().any(|f| f.starts_with("-fprofile-use=")),
        "{c:?}"
    );
    assert!(
        whole
            .notes
            .iter()
            .any(|n| n.contains("the profile has counts for 2 of them")),
        "{:?}",
        whole.notes
    );

    // clang used the profile: the optimized C object puts the hot functions in `.text.hot.`,
    // where the builds without it (the c-compiler candidate, the instrumented one) do not.
    let builds = c_builds(&td);
    let with_profile: Vec<_> = builds
        .iter()
        .filter(|(f, _)| f.contains("-fprofile-use="))
        .collect();
    assert!(!with_profile.is_empty(), "{builds:#?}");
    for (_, sections) in &with_profile {
        assert!(
            sections.iter().any(|s| s == ".text.hot.vm_run"),
            "{sections:?}"
        );
    }
    assert!(
        builds.iter().any(|(f, s)| f.contains("-fprofile-generate=")
            && !s.iter().any(|s| s.starts_with(".text.hot."))),
        "{builds:#?}"
    );

    // The merged profile is one for both languages: hotspots lists the C beside the Rust.
    let h = run(
        dir,
        &[
            "optimize",
            "hotspots",
            "--target-dir",
            td_s,
            "--format",
            "json",
        ],
        &[],
    );
    assert_eq!(h.code, Some(0), "{}", h.all());
    let v: serde_json::Value = serde_json::from_str(&h.stdout).unwrap();
    assert!(v["c_counts"].as_u64().unwrap() > 0, "{v:#}");
    let fns = v["functions"].as_array().unwrap();
    assert!(
        fns.iter()
            .any(|f| f["name"] == "vm_run" && f["crate"] == "C/C++"),
        "{v:#}"
    );
    assert!(fns.iter().any(|f| f["crate"] == "c_hot"), "{v:#}");

    // apply prints what a plain build needs, for whichever candidate won.
    let a = run(
        dir,
        &["optimize", "apply", "--dry-run", "--target-dir", td_s],
        &[],
    );
    assert_eq!(a.code, Some(0), "{}", a.all());
    let winner = final_choice(&report);
    let cc_var = "CC_x86_64_unknown_linux_gnu=";
    match (winner.stage.as_str(), winner.variant.as_deref()) {
        ("pgo", Some("whole-program")) => {
            assert!(a.stdout.contains(cc_var), "{}", a.stdout);
            assert!(
                a.stdout
                    .contains("CFLAGS_x86_64_unknown_linux_gnu=-fprofile-use="),
                "{}",
                a.stdout
            );
        }
        ("baseline", _) => assert!(!a.all().contains(cc_var), "{}", a.all()),
        _ => {
            // The Rust-only pgo build or the compiler switch: clang when it was kept.
            let clang_kept = cc.status == Status::Kept;
            assert_eq!(a.stdout.contains(cc_var), clang_kept, "{}", a.stdout);
            assert!(!a.stdout.contains("CFLAGS_"), "{}", a.stdout);
        }
    }
    if winner.stage != "baseline" {
        plain_build_is_the_measured_binary(dir, td_s, Path::new(&winner.binary));
    }
}

/// `apply`, then the build command it printed, run as printed by a shell: the binary is the
/// measured one, byte for byte (the C compiler and its profile come from the command line's
/// variables alone).
fn plain_build_is_the_measured_binary(dir: &Path, td_s: &str, measured: &Path) {
    let a = run(dir, &["optimize", "apply", "--target-dir", td_s], &[]);
    assert_eq!(a.code, Some(0), "{}", a.all());
    let line = (a.stdout.lines())
        .find(|l| l.contains("cargo build --manifest-path"))
        .unwrap_or_else(|| panic!("no build command in {}", a.stdout))
        .trim();
    assert!(line.contains("--profile release"), "{line}");
    let out = Command::new("sh")
        .args(["-c", line])
        .current_dir(dir)
        .env_remove("RUSTFLAGS")
        .env_remove("CARGO_ENCODED_RUSTFLAGS")
        .env_remove("CARGO_TARGET_DIR")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{line}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let built = match line.contains("--target ") {
        true => dir.join("target/x86_64-unknown-linux-gnu/release/c-hot"),
        false => dir.join("target/release/c-hot"),
    };
    let same = std::fs::read(&built).unwrap() == std::fs::read(measured).unwrap();
    assert!(
        same,
        "{} is not {}: {line}",
        built.display(),
        measured.display()
    );
}

#[test]
fn without_the_clang_of_rustc_s_llvm_the_stage_is_skipped_and_pgo_stays_rust_only() {
    let _guard = shared();
    let tmp = copy_fixture("c-hot");
    let dir = tmp.path();
    let td = dir.join("target");
    let td_s = td.to_str().unwrap();
    // A clang of another LLVM major: its profile format differs, so it is refused.
    let fake = dir.join("clang-old");
    std::fs::write(&fake, "#!/bin/sh\necho 'Debian clang version 19.1.7 (3)'\n").unwrap();
    let mut perm = std::fs::metadata(&fake).unwrap().permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut perm, 0o755);
    std::fs::set_permissions(&fake, perm).unwrap();
    let env = [("CARGO_OPTIMIZE_CLANG", fake.to_str().unwrap())];
    let r = run(
        dir,
        &[
            "optimize",
            "--target-dir",
            td_s,
            "--stages",
            "c-compiler,pgo",
        ],
        &env,
    );
    // A stage asked for by name that is skipped makes the run exit 1, saying so.
    assert_eq!(r.code, Some(1), "{}", r.all());
    assert!(
        r.all()
            .contains("stage `c-compiler` was asked for by name but was skipped"),
        "{}",
        r.all()
    );
    let report = latest_report(&td);
    let cc = stage(&report, "c-compiler");
    assert_eq!(cc.status, Status::Skipped, "{cc:#?}");
    let n = llvm_major();
    assert!(
        cc.reason.contains("c-hot") && cc.reason.contains("LLVM 19"),
        "{}",
        cc.reason
    );
    assert!(cc.reason.contains(&format!("LLVM {n}")), "{}", cc.reason);
    assert!(
        cc.reason.contains(&format!("apt-get install -y clang-{n}")),
        "{}",
        cc.reason
    );
    let pgo = stage(&report, "pgo");
    assert!(
        pgo.notes
            .iter()
            .any(|n| n.starts_with("C/C++ of c-hot got no profile, PGO is Rust-only: ")),
        "{:?}",
        pgo.notes
    );
    assert!(settings(pgo).c.is_none(), "{pgo:#?}");
    assert!(rows(&report, "pgo")
        .iter()
        .all(|r| r.facts.variant.as_deref() != Some("whole-program")));
}

#[test]
fn a_program_without_c_has_no_c_compiler_row_and_no_cc_variables() {
    let _guard = shared();
    let tmp = copy_fixture("pgo-basic");
    let dir = tmp.path();
    let td = dir.join("target");
    let td_s = td.to_str().unwrap();
    let r = run(
        dir,
        &["optimize", "--target-dir", td_s, "--stages", "c-compiler"],
        &[],
    );
    assert_eq!(r.code, Some(0), "{}", r.all());
    let report = latest_report(&td);
    assert!(
        rows(&report, "c-compiler").is_empty(),
        "{:#?}",
        report.stages
    );
    assert!(!r.all().contains("CC_"), "{}", r.all());
}

#[test]
fn the_fleet_collector_counts_the_c_and_its_profile_builds_the_whole_program() {
    let _guard = shared();
    let Some(_) = clang() else { return };
    let tmp = copy_fixture("c-hot");
    let dir = tmp.path();
    let td = dir.join("target");
    let td_s = td.to_str().unwrap();
    let gen = dir.join("profiles");
    let gen_s = gen.to_str().unwrap();
    let c = run(
        dir,
        &[
            "optimize",
            "profile",
            "collect",
            "--target-dir",
            td_s,
            "--dir",
            gen_s,
        ],
        &[],
    );
    assert_eq!(c.code, Some(0), "{}", c.all());
    assert!(
        c.all()
            .contains("C/C++ (built by cc, counted with the Rust): "),
        "{}",
        c.all()
    );
    let collector = td.join("optimize/collect/c-hot-instrumented");
    let out = Command::new(&collector).arg("3").output().unwrap();
    assert!(out.status.success(), "{out:?}");
    let merged = dir.join("merged.profdata");
    let m = run(
        dir,
        &[
            "optimize",
            "profile",
            "merge",
            "-o",
            merged.to_str().unwrap(),
            gen_s,
        ],
        &[],
    );
    assert_eq!(m.code, Some(0), "{}", m.all());
    assert!(m.all().contains("vm_run"), "{}", m.all());
    let args = [
        "optimize",
        "--target-dir",
        td_s,
        "--stages",
        "pgo",
        "--pgo-profile",
    ];
    let r = run(dir, &[&args[..], &[merged.to_str().unwrap()]].concat(), &[]);
    assert_eq!(r.code, Some(0), "{}", r.all());
    let report = latest_report(&td);
    let whole = rows(&report, "pgo")
        .into_iter()
        .find(|r| r.facts.variant.as_deref() == Some("whole-program"))
        .unwrap_or_else(|| panic!("no whole-program row: {:#?}", report.stages));
    assert_eq!(whole.verified, Some(true), "{whole:#?}");
    let code = whole.facts.c_code.as_ref().expect("C facts");
    assert_eq!(
        code.profiled.as_ref().and_then(|p| p.get("c-hot")),
        Some(&2),
        "{code:?}"
    );
}

/// Issue 61: a "clang" that answers `--version` as the clang of rustc's LLVM but is gcc
/// underneath made the whole PGO stage fail with a raw link error. It is refused by what it
/// is (a probe compile), so PGO falls back to Rust-only with the reason.
#[test]
fn a_fake_clang_that_is_gcc_underneath_leaves_pgo_rust_only_with_the_reason() {
    let _guard = shared();
    if Command::new("gcc").arg("--version").output().is_err() {
        return skip("no gcc to disguise as clang");
    }
    let tmp = copy_fixture("c-hot");
    let dir = tmp.path();
    let td = dir.join("target");
    let n = llvm_major();
    let fake = dir.join("clang");
    let script = format!(
        "#!/bin/sh\nif [ \"$1\" = --version ]; then echo 'clang version {n}.1.2'; exit 0; fi\nexec gcc \"$@\"\n"
    );
    std::fs::write(&fake, script).unwrap();
    let mut perm = std::fs::metadata(&fake).unwrap().permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut perm, 0o755);
    std::fs::set_permissions(&fake, perm).unwrap();
    let env = [("CARGO_OPTIMIZE_CLANG", fake.to_str().unwrap())];
    let args = [
        "optimize",
        "--target-dir",
        td.to_str().unwrap(),
        "--stages",
        "pgo",
    ];
    let r = run(dir, &args, &env);
    assert_eq!(r.code, Some(0), "{}", r.all());
    let report = latest_report(&td);
    let pgo = stage(&report, "pgo");
    assert_ne!(pgo.status, Status::Failed, "{pgo:#?}");
    let said = "answers `--version` as a clang of LLVM";
    assert!(
        pgo.notes.iter().any(|note| {
            note.starts_with("C/C++ of c-hot got no profile, PGO is Rust-only: ")
                && note.contains(said)
                && note.contains("but is not clang")
        }),
        "{:?}",
        pgo.notes
    );
    assert!(settings(pgo).c.is_none(), "{pgo:#?}");
}
