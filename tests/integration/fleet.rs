//! Profiles from production (`cargo optimize profile collect|merge`, `--pgo-profile`), on a
//! copy of `tests/fixtures/coverage-gap`: the collector's workload `a N` runs path A
//! (`path_a`), `b N` mostly path B (`path_b_hot`) — two hosts with different traffic. The
//! collector writes into its compiled-in folder, one file merged online; two hosts'
//! profiles merge into their union, weights scale counts exactly; a profile in another
//! LLVM version's format refuses the merge with the fix; a run builds, verifies and
//! measures the pgo candidate from a merged profile without training, and reports where the
//! profile came from and how stale it is; a profile it cannot use is refused before any
//! build.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use cargo_optimize::testing::report::Status;

use crate::common::*;

const FIXTURE: &str = "coverage-gap";
const PATH_A: &str = "coverage_gap::path_a";
const PATH_B: &str = "coverage_gap::path_b_hot";

/// The llvm-profdata of rustc's sysroot (rustup's llvm-tools).
fn llvm_profdata() -> PathBuf {
    let out = Command::new("rustc")
        .args(["--print", "sysroot"])
        .output()
        .unwrap();
    let sysroot = PathBuf::from(String::from_utf8(out.stdout).unwrap().trim());
    std::fs::read_dir(sysroot.join("lib/rustlib"))
        .unwrap()
        .map(|e| e.unwrap().path().join("bin/llvm-profdata"))
        .find(|p| p.is_file())
        .expect("llvm-profdata in rustc's sysroot (rustup component add llvm-tools)")
}

/// Each function's counts summed, by its symbol as `llvm-profdata show` lists it.
fn counts(profile: &Path) -> BTreeMap<String, u64> {
    let out = Command::new(llvm_profdata())
        .args(["show", "--all-functions", "--counts"])
        .arg(profile)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8(out.stdout).unwrap();
    let mut map = BTreeMap::new();
    let mut name = None;
    for line in text.lines() {
        let t = line.trim();
        if line.starts_with("  ") && !line.starts_with("   ") && t.ends_with(':') {
            name = Some(t.trim_end_matches(':').to_string());
        } else if let Some(list) = t.strip_prefix("Block counts: [") {
            let n = name.take().expect("a function before its counts");
            let sum = list
                .trim_end_matches(']')
                .split(',')
                .filter_map(|c| c.trim().parse::<u64>().ok())
                .sum();
            map.insert(n, sum);
        }
    }
    map
}

/// The count of the function whose symbol contains `needle` (a demangled path's segments).
fn count_of(map: &BTreeMap<String, u64>, demangled: &str) -> u64 {
    let segs: Vec<String> = demangled
        .split("::")
        .map(|s| format!("{}{s}", s.len()))
        .collect();
    let key = segs.concat();
    let hits: Vec<u64> = map
        .iter()
        .filter(|(k, _)| k.contains(&key))
        .map(|(_, v)| *v)
        .collect();
    assert_eq!(hits.len(), 1, "{demangled} ({key}) in {map:#?}");
    hits[0]
}

/// `cargo optimize profile collect` in `dir`, writing into `into`; the collector's path.
fn collect(dir: &Path, into: &Path) -> (PathBuf, Run) {
    let collector = dir.join("deploy/coverage-gap-instrumented");
    let r = run(
        dir,
        &[
            "profile",
            "collect",
            "--dir",
            into.to_str().unwrap(),
            "-o",
            collector.to_str().unwrap(),
        ],
        &[],
    );
    assert_eq!(r.code, Some(0), "{}", r.all());
    (collector, r)
}

/// Run the collector with `args`, its profile going where it was compiled to (or to
/// `LLVM_PROFILE_FILE` when `file` is given).
fn deploy_run(collector: &Path, args: &[&str], file: Option<&Path>) {
    let mut cmd = Command::new(collector);
    cmd.args(args).env_remove("LLVM_PROFILE_FILE");
    if let Some(f) = file {
        cmd.env("LLVM_PROFILE_FILE", f);
    }
    let out = cmd.output().unwrap();
    assert!(out.status.success(), "{out:?}");
}

/// Two hosts' raw profiles from one collector: host A ran path A, host B path B.
fn two_hosts(dir: &Path) -> (PathBuf, PathBuf) {
    let (collector, _) = collect(dir, &dir.join("unused-default"));
    let mut files = Vec::new();
    for (host, args) in [("host-a", ["a", "300000"]), ("host-b", ["b", "1000000"])] {
        let pattern = dir.join(host).join("default_%m.profraw");
        deploy_run(&collector, &args, Some(&pattern));
        let written = only_file(&dir.join(host));
        let named = dir.join(format!("{host}.profraw"));
        std::fs::rename(written, &named).unwrap();
        files.push(named);
    }
    (files[0].clone(), files[1].clone())
}

/// The one file in `dir`.
fn only_file(dir: &Path) -> PathBuf {
    let files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(files.len(), 1, "{files:#?}");
    files[0].clone()
}

/// `cargo optimize profile merge ARGS` in `dir`.
fn merge(dir: &Path, args: &[&str]) -> Run {
    let mut all = vec!["profile", "merge"];
    all.extend_from_slice(args);
    run(dir, &all, &[])
}

#[test]
fn the_collector_writes_one_profile_per_binary_into_its_folder_merged_online() {
    let _guard = shared();
    let tmp = copy_fixture(FIXTURE);
    let dir = tmp.path();
    let into = dir.join("collected");
    let (collector, r) = collect(dir, &into);
    // Where it writes, and the settings a profile is valid for.
    let file = format!("{}/default_%m.profraw", into.display());
    for want in [
        file.as_str(),
        "a host keeps one profile per binary",
        "a profile is valid only for a binary built with these same settings",
        "cargo profile: release",
        "features: default",
        "target: x86_64-unknown-linux-gnu",
        &format!("rustflags: -Cprofile-generate={}", into.display()),
    ] {
        assert!(r.stdout.contains(want), "{want:?} not in\n{}", r.stdout);
    }
    // Two processes (two workloads): one file, both runs' counts in it.
    deploy_run(&collector, &["a", "300000"], None);
    deploy_run(&collector, &["b", "1000000"], None);
    let written = only_file(&into);
    let name = written.file_name().unwrap().to_str().unwrap();
    assert!(
        name.starts_with("default_") && name.ends_with(".profraw"),
        "{name}"
    );
    let c = counts(&written);
    assert!(
        count_of(&c, PATH_A) > 0 && count_of(&c, PATH_B) > 0,
        "{c:#?}"
    );

    // The folder is compiled in: a relative one is refused.
    let r = run(dir, &["profile", "collect", "--dir", "rel"], &[]);
    assert_eq!(r.code, Some(2), "{}", r.all());
    assert!(
        r.stderr.contains("must be an absolute path"),
        "{}",
        r.stderr
    );
}

#[test]
fn the_collector_s_default_folder_is_private_and_one_another_user_could_plant_in_is_refused() {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let _guard = shared();
    let tmp = copy_fixture(FIXTURE);
    let dir = tmp.path();
    let state = dir.join("state");
    let collector = dir.join("deploy/c");
    let collect = |extra: &[&str]| {
        let mut args = vec!["profile", "collect", "-o", collector.to_str().unwrap()];
        args.extend_from_slice(extra);
        run(dir, &args, &[("XDG_STATE_HOME", state.to_str().unwrap())])
    };
    // The default: a folder of yours, made private, said where.
    let r = collect(&[]);
    assert_eq!(r.code, Some(0), "{}", r.all());
    let private = state.join("cargo-optimize/coverage-gap-pgo");
    let file = format!("{}/default_%m.profraw", private.display());
    assert!(r.stdout.contains(&file), "{file:?} not in\n{}", r.stdout);
    assert!(
        r.stdout.contains("a private one of yours (mode 0700)"),
        "{}",
        r.stdout
    );
    let meta = std::fs::metadata(&private).unwrap();
    assert_eq!(meta.permissions().mode() & 0o777, 0o700);
    deploy_run(&collector, &["a", "1000"], None);
    assert!(only_file(&private).to_string_lossy().ends_with(".profraw"));

    // Another user made the folder first and planted a symlink where the profile goes.
    let victim = dir.join("victim");
    std::fs::write(&victim, "precious").unwrap();
    let planted = dir.join("planted-pgo");
    std::fs::create_dir(&planted).unwrap();
    std::os::unix::fs::symlink(&victim, planted.join("default_1.profraw")).unwrap();
    let chmod = |p: &Path, m: u32| std::fs::set_permissions(p, PermissionsExt::from_mode(m));
    chmod(&planted, 0o777).unwrap();
    let mut refusals = vec![(
        "can be written by everyone (mode 0777, not sticky)",
        &planted,
    )];
    if meta.uid() == 0 {
        // As root: the folder belongs to `nobody`, the owner of the default too.
        std::os::unix::fs::chown(&planted, Some(65534), Some(65534)).unwrap();
        std::fs::remove_dir_all(&private).unwrap();
        std::fs::create_dir(&private).unwrap();
        std::os::unix::fs::chown(&private, Some(65534), Some(65534)).unwrap();
        refusals = vec![
            (
                "belongs to another user (uid 65534; you are uid 0)",
                &planted,
            ),
            (
                "belongs to another user (uid 65534; you are uid 0)",
                &private,
            ),
        ];
    } else {
        eprintln!("not root: a folder of another user is checked by the unit tests only");
    }
    for (why, folder) in refusals {
        let given = folder == &planted;
        let flag = ["--dir", planted.to_str().unwrap()];
        let r = collect(if given { &flag } else { &[] });
        assert_eq!(r.code, Some(2), "{}", r.all());
        let what = match given {
            true => format!("--dir {}: {}", planted.display(), planted.display()),
            false => format!("the collector's default folder: {}", private.display()),
        };
        assert!(r.stderr.contains(&what), "{what:?} not in\n{}", r.stderr);
        assert!(r.stderr.contains(why), "{why:?} not in\n{}", r.stderr);
        assert!(r.stderr.contains("  fix: "), "{}", r.stderr);
        assert!(!r.stderr.contains("building the collector"), "{}", r.stderr);
    }
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
}

#[test]
fn two_hosts_merge_into_their_union_and_a_weight_multiplies_its_counts() {
    let _guard = shared();
    let tmp = copy_fixture(FIXTURE);
    let dir = tmp.path();
    let (a, b) = two_hosts(dir);
    let (ca, cb) = (counts(&a), counts(&b));
    // Each host ran its own path hot (host B runs a little of path A too).
    assert!(count_of(&ca, PATH_B) == 0 && count_of(&cb, PATH_B) > 0);
    assert!(count_of(&ca, PATH_A) > 10 * count_of(&cb, PATH_A));

    let r = merge(
        dir,
        &["-o", "fleet.profdata", "host-a.profraw", "host-b.profraw"],
    );
    assert_eq!(r.code, Some(0), "{}", r.all());
    let union = counts(&dir.join("fleet.profdata"));
    for f in [PATH_A, PATH_B] {
        assert_eq!(
            count_of(&union, f),
            count_of(&ca, f) + count_of(&cb, f),
            "{f}"
        );
    }
    // The summary: both hot functions among the 5 hottest.
    let hottest = r.stdout.split("hottest:").nth(1).unwrap_or_default();
    assert!(
        hottest.contains(PATH_A) && hottest.contains(PATH_B),
        "{}",
        r.stdout
    );
    assert!(
        r.stdout.contains("merged 2 of 2 profile(s)"),
        "{}",
        r.stdout
    );

    // The same merge as JSON: the inputs with their weights, the ranking's figures.
    let r = merge(
        dir,
        &[
            "-o",
            "fleet2.profdata",
            "--format",
            "json",
            "host-a.profraw",
            "host-b.profraw",
        ],
    );
    assert_eq!(r.code, Some(0), "{}", r.all());
    let v: serde_json::Value = serde_json::from_str(&r.stdout).expect("JSON on stdout");
    let inputs = v["inputs"].as_array().expect("inputs");
    assert_eq!(inputs.len(), 2, "{v:#}");
    assert!(
        inputs
            .iter()
            .all(|i| i["weight"] == 1 && i["dropped"].is_null()),
        "{v:#}"
    );
    let hottest: Vec<&str> = (v["ranking"]["functions"].as_array().unwrap().iter())
        .filter_map(|f| f["name"].as_str())
        .collect();
    assert!(
        hottest.iter().any(|n| n.contains(PATH_A)) && hottest.iter().any(|n| n.contains(PATH_B)),
        "{v:#}"
    );

    // Host A weighs 3: its counts triple, host B's stay.
    let r = merge(
        dir,
        &[
            "-o",
            "weighted.profdata",
            "--weight",
            "host-a.profraw=3",
            "host-a.profraw",
            "host-b.profraw",
        ],
    );
    assert_eq!(r.code, Some(0), "{}", r.all());
    assert!(
        r.stdout.contains("host-a.profraw  weight 3"),
        "{}",
        r.stdout
    );
    assert!(
        r.stdout.contains("host-b.profraw  weight 1"),
        "{}",
        r.stdout
    );
    let weighted = counts(&dir.join("weighted.profdata"));
    for f in [PATH_A, PATH_B] {
        assert_eq!(
            count_of(&weighted, f),
            3 * count_of(&ca, f) + count_of(&cb, f),
            "{f}"
        );
    }
    let line = |name: &str, c: u64| format!("{c:>14}  {name}");
    assert!(
        r.stdout
            .contains(&line(PATH_A, count_of(&weighted, PATH_A))),
        "{}",
        r.stdout
    );

    // One file under other names (another spelling, a symlink, a hard link) is merged
    // once, each other name said; a weight given to one name is the file's.
    std::fs::create_dir(dir.join("sub")).unwrap();
    std::os::unix::fs::symlink(&a, dir.join("link.profraw")).unwrap();
    std::fs::hard_link(&a, dir.join("hard.profraw")).unwrap();
    let same = ["sub/../host-a.profraw", "link.profraw", "hard.profraw"];
    let mut args = vec!["-o", "once.profdata", "host-a.profraw", "host-b.profraw"];
    args.extend(same);
    let r = merge(dir, &args);
    assert_eq!(r.code, Some(0), "{}", r.all());
    assert_eq!(counts(&dir.join("once.profdata")), union, "{}", r.all());
    for name in same {
        let said = format!("warning: {name} is the same file as host-a.profraw");
        assert!(r.stderr.contains(&said), "{said:?} not in\n{}", r.stderr);
    }
    assert!(
        r.stdout.contains("merged 2 of 2 profile(s)"),
        "{}",
        r.stdout
    );
    let mut args = vec!["-o", "once-weighted.profdata", "--weight", "link.profraw=3"];
    args.extend(["host-a.profraw", "host-b.profraw", "hard.profraw"]);
    let r = merge(dir, &args);
    assert_eq!(r.code, Some(0), "{}", r.all());
    assert_eq!(counts(&dir.join("once-weighted.profdata")), weighted);

    // A weight that is not an integer ≥ 1 is bad input.
    let r = merge(dir, &["-o", "x.profdata", "--weight", "host-a.profraw=0"]);
    assert_eq!(r.code, Some(2), "{}", r.all());
    assert!(r.stderr.contains("fix: --weight FILE=N"), "{}", r.stderr);
}

#[test]
fn a_profile_from_another_llvm_version_is_refused_with_the_fix() {
    let _guard = shared();
    let tmp = copy_fixture(FIXTURE);
    let dir = tmp.path();
    let (_, b) = two_hosts(dir);
    // The raw header: magic (u64) then version (u64, little endian; variant flags in the
    // high byte). A version this LLVM does not write.
    let mut bytes = std::fs::read(&b).unwrap();
    assert_eq!(&bytes[..8], b"\x81rforpl\xff");
    bytes[8..12].copy_from_slice(&99u32.to_le_bytes());
    std::fs::write(dir.join("host-c.profraw"), bytes).unwrap();

    let r = merge(
        dir,
        &["-o", "fleet.profdata", "host-a.profraw", "host-c.profraw"],
    );
    assert_eq!(r.code, Some(2), "{}", r.all());
    for want in [
        "refused: 1 profile(s) in another LLVM version's format",
        "  host-c.profraw\n    llvm-profdata said: raw profile version mismatch: Profile uses raw profile format version = 99",
        "nothing was written",
        "fix: merge them first with the llvm-profdata of the LLVM that built their collector",
        "or rebuild the collector with this toolchain (`cargo optimize profile collect`)",
    ] {
        assert!(r.stderr.contains(want), "{want:?} not in\n{}", r.stderr);
    }
    assert!(!dir.join("fleet.profdata").exists());
    let left: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with('.') && n.contains("fleet.profdata"))
        .collect();
    assert!(left.is_empty(), "temporary files left: {left:?}");

    // A file it cannot read for another reason is dropped, named, and the rest merged.
    let raw = std::fs::read(dir.join("host-a.profraw")).unwrap();
    std::fs::write(dir.join("host-t.profraw"), &raw[..100]).unwrap();
    let r = merge(
        dir,
        &["-o", "fleet.profdata", "host-a.profraw", "host-t.profraw"],
    );
    assert_eq!(r.code, Some(0), "{}", r.all());
    assert!(
        r.stdout.contains("merged 1 of 2 profile(s)"),
        "{}",
        r.stdout
    );
    assert!(
        r.stdout.contains("host-t.profraw  dropped: "),
        "{}",
        r.stdout
    );
}

#[test]
fn a_run_builds_pgo_from_a_merged_profile_without_training_and_says_how_stale_it_is() {
    let _guard = shared();
    let tmp = copy_fixture(FIXTURE);
    let dir = tmp.path();
    two_hosts(dir);
    let r = merge(
        dir,
        &["-o", "fleet.profdata", "host-a.profraw", "host-b.profraw"],
    );
    assert_eq!(r.code, Some(0), "{}", r.all());
    let given = dir.join("fleet.profdata");
    let td = dir.join("target");
    let args = [
        "--stages",
        "pgo",
        "--pgo-profile",
        "fleet.profdata",
        "--target-dir",
        td.to_str().unwrap(),
    ];

    // Checked before anything is built: exit 2 with the fix.
    let mut foreign = std::fs::read(&given).unwrap();
    foreign[8..12].copy_from_slice(&99u32.to_le_bytes());
    std::fs::write(dir.join("foreign.profdata"), foreign).unwrap();
    for (file, stages, want) in [
        ("missing.profdata", "pgo", "cannot read it"),
        ("host-a.profraw", "pgo", "this is a raw profile (.profraw"),
        (
            "fleet.profdata",
            "none",
            "this run does not try the pgo stage",
        ),
        (
            "foreign.profdata",
            "pgo",
            "the profile is in another LLVM version's format than this toolchain's",
        ),
    ] {
        let r = run(
            dir,
            &[
                "--stages",
                stages,
                "--pgo-profile",
                file,
                "--target-dir",
                td.to_str().unwrap(),
            ],
            &[],
        );
        assert_eq!(r.code, Some(2), "{file}: {}", r.all());
        assert!(
            r.stderr.contains(want),
            "{file}: {want:?} not in\n{}",
            r.stderr
        );
        assert!(r.stderr.contains("\n  fix: "), "{}", r.stderr);
    }
    assert!(!td.join("optimize/runs").exists(), "a run started");

    let r = run(dir, &args, &[]);
    assert_eq!(r.code, Some(0), "{}", r.all());
    assert!(!r.stderr.contains("pgo: training"), "{}", r.stderr);
    assert!(!r.stderr.contains("pgo: instrumented"), "{}", r.stderr);
    assert!(
        r.stderr
            .contains("no instrumented build and no training in this run"),
        "{}",
        r.stderr
    );
    assert!(r.stderr.contains("pgo verified"), "{}", r.stderr);
    let report = latest_report(&td);
    let pgo = stage(&report, "pgo");
    assert!(
        matches!(pgo.status, Status::Kept | Status::Dropped),
        "{pgo:#?}"
    );
    assert!(
        pgo.verified == Some(true) && pgo.vs_best.is_some(),
        "{pgo:#?}"
    );
    assert_eq!(pgo.facts.profile_source.as_deref(), Some(given.as_path()));
    let fit = pgo.facts.profile_fit.as_ref().unwrap();
    assert_eq!(fit.changed_functions, 0, "{fit:#?}");
    // The build names the cached copy: the given bytes, which `apply` copies.
    let used = settings(pgo)
        .stage_rustflags
        .iter()
        .find_map(|f| f.strip_prefix("-Cprofile-use="))
        .map(PathBuf::from)
        .unwrap();
    assert_eq!(std::fs::read(used).unwrap(), std::fs::read(&given).unwrap());
    // The path as the ladder shows it: relative to the workspace.
    let line = "└ profile: fleet.profdata (given, not trained here); it fits this source";
    assert!(unwrapped(&r.stdout).contains(line), "{}", r.stdout);

    // The source changes: the same profile is stale, and the row says how much.
    let main = dir.join("src/main.rs");
    let src = std::fs::read_to_string(&main).unwrap();
    let changed = src.replace(
        "        } else if x % 5 == 1 {",
        "        } else if x % 7 == 2 {\n            acc ^= i.rotate_left(3);\n        } else if x % 5 == 1 {",
    );
    assert_ne!(src, changed);
    std::fs::write(&main, changed).unwrap();
    let r = run(dir, &args, &[]);
    assert_eq!(r.code, Some(0), "{}", r.all());
    let report = latest_report(&td);
    let pgo = stage(&report, "pgo");
    let fit = pgo.facts.profile_fit.as_ref().unwrap();
    assert!(fit.changed_functions >= 1, "{fit:#?}");
    let notes = pgo.notes.join("\n");
    assert!(notes.contains("is stale against this source"), "{notes}");
    assert!(
        r.stderr
            .contains("fix: collect again with a collector built from this source"),
        "{}",
        r.stderr
    );
    assert!(
        unwrapped(&r.stdout).contains("(given, not trained here); stale: "),
        "{}",
        r.stdout
    );
}

#[test]
fn a_profile_of_another_program_is_said_not_to_belong_and_names_no_hotspots() {
    let _guard = shared();
    // Another program's profile: pgo-basic's collector, run once, merged.
    let other = copy_fixture("pgo-basic");
    let o = other.path();
    let collector = o.join("c");
    let into = o.join("profiles");
    let mut args = vec!["profile", "collect", "--dir", into.to_str().unwrap()];
    args.extend(["-o", collector.to_str().unwrap()]);
    let r = run(o, &args, &[]);
    assert_eq!(r.code, Some(0), "{}", r.all());
    deploy_run(&collector, &["20000"], None);
    let r = merge(o, &["-o", "other.profdata", "profiles"]);
    assert_eq!(r.code, Some(0), "{}", r.all());
    let given = o.join("other.profdata");

    let tmp = copy_fixture(FIXTURE);
    let dir = tmp.path();
    let td = dir.join("target");
    let mut args = vec!["--stages", "pgo", "--pgo-profile", given.to_str().unwrap()];
    args.extend(["--target-dir", td.to_str().unwrap()]);
    let r = run(dir, &args, &[]);
    assert_eq!(r.code, Some(0), "{}", r.all());
    let said = "does not belong to this program: 0 of its";
    assert!(r.stderr.contains(said), "{said:?} not in\n{}", r.stderr);
    assert!(r.stderr.contains("  fix: collect again"), "{}", r.stderr);
    let line = format!(
        "└ profile: {} (given, not trained here); it does not belong to this program",
        given.display()
    );
    assert!(
        unwrapped(&r.stdout).contains(&line),
        "{line:?} not in\n{}",
        r.stdout
    );
    assert!(!r.stdout.contains("it fits this source"), "{}", r.stdout);
    let report = latest_report(&td);
    let pgo = stage(&report, "pgo");
    assert!(
        pgo.notes.iter().any(|n| n.contains(said)),
        "{:#?}",
        pgo.notes
    );
    // Its hot functions are the other program's: none are shown as this one's.
    assert!(report.hotspots.is_none(), "{:#?}", report.hotspots);
    let r = run(
        dir,
        &["hotspots", "--target-dir", td.to_str().unwrap()],
        &[],
    );
    assert_eq!(r.code, Some(2), "{}", r.all());
    assert!(
        r.stderr.contains("does not belong to this program"),
        "{}",
        r.stderr
    );
    assert!(r.stderr.contains("  fix: "), "{}", r.stderr);
}
