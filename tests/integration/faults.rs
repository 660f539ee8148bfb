//! Faults and misuse (issue 10): each case asserts the exit code, the message (what, where,
//! how to fix it) and that the user's files are byte for byte as they were. FAULTS.md lists
//! the promise each test checks.

use std::path::Path;

use crate::common::*;

/// The pipeline on the pgo-basic fixture with the spec at `spec`, the fixture unchanged.
fn with_spec(spec: &Path, td: &Path) -> Run {
    run_unchanged(
        &fixture("pgo-basic"),
        &[
            "optimize",
            "--spec",
            spec.to_str().unwrap(),
            "--target-dir",
            td.to_str().unwrap(),
        ],
    )
}

/// `cargo-optimize ARGS` in `dir`, with the tree snapshotted around it.
fn run_unchanged(dir: &Path, args: &[&str]) -> Run {
    let before = snapshot(dir);
    let r = run(dir, args, &[]);
    assert_eq!(
        before,
        snapshot(dir),
        "the user's files changed\n{}",
        r.all()
    );
    r
}

#[test]
fn a_workload_writing_undeclared_files_is_refused_before_it_touches_the_tree() {
    let _g = shared();
    let tmp = copy_fixture("verify-files");
    let dir = tmp.path();
    // The same program, without declaring what it writes.
    std::fs::write(
        dir.join("optimize.toml"),
        "bin = \"verify-files\"\n\n[[workload]]\nname = \"write\"\nargs = [\"2000\"]\n",
    )
    .unwrap();
    let td = target_dir("faults-undeclared");
    let pgo = || {
        let args = [
            "optimize",
            "--target-dir",
            td.to_str().unwrap(),
            "--stages",
            "pgo",
        ];
        run_unchanged(dir, &args)
    };
    let r = pgo();
    assert_eq!(r.code, Some(2), "{}", r.all());
    for needle in [
        "optimize.toml:3: workload `write` writes into its working directory",
        "out/result.txt",
        "fix: declare what it writes with `files = ['out/result.txt']`",
    ] {
        assert!(r.stderr.contains(needle), "no `{needle}` in\n{}", r.stderr);
    }
    assert!(!dir.join("out").exists());
    // Beside its cwd (`../`): seen in the private copy's folder, and refused.
    std::fs::create_dir(dir.join("work")).unwrap();
    std::fs::write(
        dir.join("optimize.toml"),
        "bin = \"verify-files\"\n\n[[workload]]\nname = \"beside\"\nargs = [\"2000\", \"../beside.txt\"]\ncwd = \"work\"\n",
    )
    .unwrap();
    let r = pgo();
    assert_eq!(r.code, Some(2), "{}", r.all());
    for needle in [
        "optimize.toml:3: workload `beside` writes outside its working directory",
        "../beside.txt",
    ] {
        assert!(r.stderr.contains(needle), "no `{needle}` in\n{}", r.stderr);
    }
    assert!(!dir.join("beside.txt").exists());
}

/// A workload that changes its cwd without writing a file (issue 36.5): it deletes a file,
/// makes a folder and a link, changes a file's permissions, appends to a file of the user's
/// outside the cwd through an absolute link in it, writes `{root}/results.log` (the spec's
/// folder, its cwd). The check run in a private
/// copy sees each, the run is refused naming them, and the user's tree — modes, folders and
/// links included — is as it was.
#[test]
fn a_workload_changing_its_cwd_is_refused_naming_each_change_and_the_tree_is_unchanged() {
    let _g = shared();
    let tmp = copy_fixture("verify-files");
    let dir = tmp.path();
    std::fs::write(dir.join("data.txt"), "input\n").unwrap();
    let perm = |p: &Path, m: u32| {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(m)).unwrap()
    };
    perm(&dir.join("Cargo.toml"), 0o644);
    // A file of the user's outside the cwd, behind an absolute link in it.
    let elsewhere = tempfile::tempdir().unwrap();
    let shared = elsewhere.path().join("shared.txt");
    std::fs::write(&shared, "the user's\n").unwrap();
    std::os::unix::fs::symlink(&shared, dir.join("linked.txt")).unwrap();
    let script = "rm data.txt; mkdir newdir; ln -s x y; chmod 600 Cargo.toml; \
                  echo more >> linked.txt; echo log >> {root}/results.log";
    std::fs::write(
        dir.join("optimize.toml"),
        format!("bin = \"verify-files\"\n\n[[workload]]\nname = \"hostile\"\nargs = [\"--sh\", '{script}']\n"),
    )
    .unwrap();
    let td = target_dir("faults-undeclared");
    let args = [
        "optimize",
        "--target-dir",
        td.to_str().unwrap(),
        "--stages",
        "pgo",
    ];
    let before = snapshot_entries(dir);
    let r = run(dir, &args, &[]);
    assert_eq!(
        before,
        snapshot_entries(dir),
        "the user's tree changed\n{}",
        r.all()
    );
    assert_eq!(std::fs::read_to_string(&shared).unwrap(), "the user's\n");
    assert_eq!(r.code, Some(2), "{}", r.all());
    for needle in [
        "optimize.toml:3: workload `hostile` changes its working directory",
        "(linked.txt; results.log;",
        "data.txt deleted",
        "newdir: a new folder",
        "y: a new symlink",
        "Cargo.toml: mode 644 -> 600",
        "fix: make it leave its cwd as it is",
    ] {
        assert!(r.stderr.contains(needle), "no `{needle}` in\n{}", r.stderr);
    }
}

/// A `files` workload whose cwd holds a symlink (issue 23, defect 5): one into the cwd
/// (absolute) leads into the private copy, never to the user's folder; a declared output
/// through one that leads out of the cwd is refused; a declared output the run did not write
/// is a mismatch even when an earlier run left one in the tree.
#[test]
fn a_files_workload_never_writes_through_a_link_and_must_write_what_it_declares() {
    let _g = shared();
    let tmp = copy_fixture("verify-files");
    let dir = tmp.path();
    std::fs::create_dir(dir.join("realout")).unwrap();
    std::os::unix::fs::symlink(dir.join("realout"), dir.join("out")).unwrap();
    let td = target_dir("faults-files-links");
    let args = [
        "optimize",
        "--target-dir",
        td.to_str().unwrap(),
        "--stages",
        "pgo",
    ];
    let r = run_unchanged(dir, &args);
    assert!(matches!(r.code, Some(0 | 1)), "{}", r.all());
    assert!(r.stderr.contains("pgo"), "{}", r.all());
    let report = latest_report(&td);
    assert!(report.stages.iter().any(|s| s.name == "pgo"), "{report:?}");

    // An output the program never writes, left in the tree by an earlier run.
    std::fs::write(dir.join("realout/stale.txt"), "left over\n").unwrap();
    let spec = std::fs::read_to_string(dir.join("optimize.toml")).unwrap();
    std::fs::write(
        dir.join("optimize.toml"),
        spec.replace(
            r#"files = ["out/result.txt"]"#,
            r#"files = ["out/result.txt", "out/stale.txt"]"#,
        ),
    )
    .unwrap();
    let r = run_unchanged(dir, &args);
    assert_eq!(r.code, Some(2), "{}", r.all());
    assert!(
        r.stderr
            .contains("declares the output file out/stale.txt but the baseline did not write it"),
        "{}",
        r.stderr
    );

    // A link out of the cwd: refused, naming the link and where it leads.
    let away = tempfile::tempdir().unwrap();
    std::fs::remove_file(dir.join("out")).unwrap();
    std::os::unix::fs::symlink(away.path(), dir.join("out")).unwrap();
    std::fs::write(dir.join("optimize.toml"), &spec).unwrap();
    let r = run_unchanged(dir, &args);
    assert_eq!(r.code, Some(2), "{}", r.all());
    assert!(
        r.stderr.contains("is a symlink to") && r.stderr.contains("outside its cwd"),
        "{}",
        r.stderr
    );
    assert!(
        std::fs::read_dir(away.path()).unwrap().next().is_none(),
        "it wrote through the link"
    );
}

/// What becomes a file name is checked before the first build: a `latest` that is not the
/// tool's link, and a workload name that would be too long for a file name (issue 23).
#[test]
fn a_latest_that_is_a_folder_is_refused_before_building_and_long_names_are_bounded() {
    let _g = shared();
    let td = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(td.path().join("optimize/latest")).unwrap();
    std::fs::write(td.path().join("optimize/latest/mine.txt"), "mine").unwrap();
    let args = [
        "optimize",
        "--target-dir",
        td.path().to_str().unwrap(),
        "--stages",
        "none",
    ];
    let r = run_unchanged(&fixture("pgo-basic"), &args);
    assert_eq!(r.code, Some(2), "{}", r.all());
    assert!(
        r.stderr
            .contains("optimize/latest is a folder, not the link to the newest run")
            && r.stderr.contains("fix: move it away"),
        "{}",
        r.stderr
    );
    assert!(!td.path().join("optimize/build").exists(), "it built first");
    std::fs::remove_dir_all(td.path().join("optimize/latest")).unwrap();

    // A 300-character workload name: its files get a bounded, unique name.
    let tmp = copy_fixture("pgo-basic");
    let spec = std::fs::read_to_string(tmp.path().join("optimize.toml")).unwrap();
    let long = "n".repeat(300);
    let spec = spec.replacen("name = \"", &format!("name = \"{long}"), 1);
    std::fs::write(tmp.path().join("optimize.toml"), spec).unwrap();
    let r = run(tmp.path(), &args, &[]);
    assert_eq!(r.code, Some(0), "{}", r.all());
    let left: Vec<_> = std::fs::read_dir(td.path().join("optimize"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(".latest-"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
    let report = latest_report(td.path());
    assert!(
        report.workloads.iter().any(|w| w.name.starts_with(&long)),
        "{report:?}"
    );
}

#[test]
fn stage_lists_on_the_command_line_are_checked_like_the_spec() {
    let _g = shared();
    let td = target_dir("faults-stages");
    let _ = std::fs::remove_dir_all(&td);
    for (stages, says) in [
        ("pgo,pgo", "stage \"pgo\" is listed twice"),
        ("pgo,profile", "stage \"profile\" must come before \"pgo\""),
        (",", "no stage to try"),
        ("pgp", "unknown stage \"pgp\""),
    ] {
        let r = run_unchanged(
            &fixture("pgo-basic"),
            &[
                "optimize",
                "--target-dir",
                td.to_str().unwrap(),
                "--stages",
                stages,
            ],
        );
        assert_eq!(r.code, Some(2), "--stages {stages}: {}", r.all());
        assert!(
            r.stderr.contains(&format!("--stages {stages}")) && r.stderr.contains(says),
            "--stages {stages}: {}",
            r.stderr
        );
        assert!(r.stderr.contains("\n  fix: "), "{}", r.stderr);
        assert!(
            !td.join("optimize/runs").exists(),
            "--stages {stages} started a run"
        );
    }
    // The spec's own list goes through the same parser.
    let spec = tempfile::tempdir().unwrap();
    let path = spec.path().join("optimize.toml");
    std::fs::write(
        &path,
        "bin = \"pgo-basic\"\n[stages]\ntry = []\n[[workload]]\nname = \"w\"\n",
    )
    .unwrap();
    let r = with_spec(&path, &td);
    assert_eq!(r.code, Some(2), "{}", r.all());
    assert!(
        r.stderr.contains("optimize.toml:3:") && r.stderr.contains("no stage to try"),
        "{}",
        r.stderr
    );
}

#[test]
fn inside_a_workspace_member_that_member_is_selected() {
    let _g = shared();
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    std::fs::write(
        root.join("Cargo.toml"),
        "[workspace]\nmembers = [\"a\", \"b\"]\nresolver = \"2\"\n",
    )
    .unwrap();
    for m in ["a", "b"] {
        std::fs::create_dir_all(root.join(m).join("src")).unwrap();
        std::fs::write(
            root.join(m).join("Cargo.toml"),
            format!("[package]\nname = \"{m}\"\nversion = \"0.1.0\"\nedition = \"2021\"\n"),
        )
        .unwrap();
        std::fs::write(root.join(m).join("src/main.rs"), "fn main() {}\n").unwrap();
    }
    // From b/src, as cargo does: the nearest manifest's package.
    let r = run(&root.join("b/src"), &["optimize", "init"], &[]);
    assert_eq!(r.code, Some(0), "{}", r.all());
    assert!(r.stderr.contains("for binary `b`"), "{}", r.stderr);
    assert!(root.join("b/optimize.toml").is_file());
    assert!(!root.join("a/optimize.toml").exists() && !root.join("optimize.toml").exists());
    // From the virtual root, the choice is still the user's to make.
    let r = run_unchanged(root, &["optimize", "init"]);
    assert_eq!(r.code, Some(2), "{}", r.all());
    assert!(r.stderr.contains("several packages"), "{}", r.stderr);
    assert!(
        r.stderr.contains("packages with binaries: a, b"),
        "{}",
        r.stderr
    );
    // With one binary among the members (jaq's workspace: six libraries and `jaq`), it is
    // the one, as `cargo run` picks it.
    std::fs::remove_file(root.join("a/src/main.rs")).unwrap();
    std::fs::write(root.join("a/src/lib.rs"), "").unwrap();
    std::fs::remove_file(root.join("b/optimize.toml")).unwrap();
    let r = run(root, &["optimize", "init"], &[]);
    assert_eq!(r.code, Some(0), "{}", r.all());
    assert!(r.stderr.contains("for binary `b`"), "{}", r.stderr);
    assert!(root.join("b/optimize.toml").is_file());
    // And a run from the root reads the spec init wrote there.
    let r = run(root, &["optimize", "--dry-run"], &[]);
    assert_eq!(r.code, Some(0), "{}", r.all());
    assert!(r.all().contains("b/optimize.toml"), "{}", r.all());
}

#[test]
fn clean_is_refused_while_a_run_uses_the_folder() {
    let _g = shared();
    let tmp = tempfile::tempdir().unwrap();
    let td = tmp.path().join("target");
    let clean = |dir: &Path| {
        let args = ["optimize", "clean", "--target-dir", dir.to_str().unwrap()];
        run(&fixture("pgo-basic"), &args, &[])
    };
    std::fs::create_dir_all(td.join("optimize/runs/r1")).unwrap();
    std::fs::write(td.join("optimize/runs/r1/report.json"), "{}").unwrap();
    // A run holds its share of the folder for as long as it works.
    let lock = std::fs::File::create(td.join("optimize.lock")).unwrap();
    lock.lock_shared().unwrap();
    let r = clean(&td);
    assert_eq!(r.code, Some(2), "{}", r.all());
    assert!(
        r.stderr.contains("in use by a running `cargo optimize`"),
        "{}",
        r.stderr
    );
    assert!(
        r.stderr.contains("fix: wait for that run to finish"),
        "{}",
        r.stderr
    );
    assert!(
        td.join("optimize/runs/r1/report.json").is_file(),
        "clean removed a running run's files"
    );
    // `cache clear` says what it is, not "clean".
    let r = run(
        &fixture("pgo-basic"),
        &[
            "optimize",
            "cache",
            "clear",
            "--target-dir",
            td.to_str().unwrap(),
        ],
        &[],
    );
    assert_eq!(r.code, Some(2), "{}", r.all());
    assert!(
        r.stderr.contains("`cache clear` would delete") && !r.stderr.contains("`clean`"),
        "{}",
        r.stderr
    );
    // Once the run is over, clean works.
    drop(lock);
    let r = clean(&td);
    assert_eq!(r.code, Some(0), "{}", r.all());
    assert!(!td.join("optimize").exists());

    // A linked `target/optimize` (another disk): emptied, the link kept, and said so.
    let away = tmp.path().join("away");
    std::fs::create_dir_all(away.join("runs/r2")).unwrap();
    std::os::unix::fs::symlink(&away, td.join("optimize")).unwrap();
    let r = clean(&td);
    assert_eq!(r.code, Some(0), "{}", r.all());
    assert!(r.stderr.contains("the link is kept"), "{}", r.stderr);
    assert!(std::fs::symlink_metadata(td.join("optimize"))
        .unwrap()
        .file_type()
        .is_symlink());
    assert_eq!(std::fs::read_dir(&away).unwrap().count(), 0);

    // A --target-dir that is a file: the fix, not a bare "File exists".
    let file = tmp.path().join("a-file");
    std::fs::write(&file, "x").unwrap();
    let r = clean(&file);
    assert_eq!(r.code, Some(2), "{}", r.all());
    assert!(
        r.stderr
            .contains(&format!("fix: {} is a file, not a folder", file.display())),
        "{}",
        r.stderr
    );
}

/// `init` where `optimize.toml` is a link to nothing: said, with the fix.
#[test]
fn init_onto_a_dangling_symlink_says_so() {
    let _g = shared();
    let tmp = copy_fixture("pgo-basic");
    std::fs::remove_file(tmp.path().join("optimize.toml")).unwrap();
    std::os::unix::fs::symlink("gone/spec.toml", tmp.path().join("optimize.toml")).unwrap();
    let r = run(tmp.path(), &["optimize", "init"], &[]);
    assert_eq!(r.code, Some(2), "{}", r.all());
    assert!(!tmp.path().join("gone").exists());
    assert!(
        r.stderr
            .contains("is a symlink to gone/spec.toml, which does not exist")
            && r.stderr.contains("fix: remove the link"),
        "{}",
        r.stderr
    );
}

#[test]
fn a_corrupt_cached_profile_is_detected_and_rewritten_never_used() {
    let _g = shared();
    let td = target_dir("faults-profile-cache");
    let args = [
        "optimize",
        "--target-dir",
        td.to_str().unwrap(),
        "--stages",
        "pgo",
    ];
    let r = run_unchanged(&fixture("pgo-basic"), &args);
    assert_eq!(r.code, Some(0), "{}", r.all());
    let cache = td.join("optimize/cache");
    let entries: Vec<_> = std::fs::read_dir(&cache)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "profdata"))
        .collect();
    assert_eq!(entries.len(), 1, "{entries:?}");
    let good = std::fs::read(&entries[0]).unwrap();
    // A run killed while writing it would have left a partial file.
    std::fs::write(&entries[0], &good[..good.len() / 3]).unwrap();
    let r = run_unchanged(&fixture("pgo-basic"), &args);
    assert_eq!(r.code, Some(0), "{}", r.all());
    assert!(
        r.stderr.contains("did not match its content"),
        "{}",
        r.stderr
    );
    assert_eq!(
        std::fs::read(&entries[0]).unwrap(),
        good,
        "the entry was not rewritten"
    );
    let report = latest_report(&td);
    let pgo = stage(&report, "pgo");
    assert!(
        pgo.notes
            .iter()
            .any(|n| n.contains("did not match its content")),
        "{pgo:#?}"
    );
    assert!(
        !r.stderr.contains("malformed"),
        "rustc saw the corrupt profile:\n{}",
        r.stderr
    );
}

#[test]
fn a_binary_changed_in_the_target_dir_is_built_again_never_reused() {
    let _g = shared();
    // A target dir of its own: a record an older version kept of a truncated binary would
    // be trusted (it was the binary cargo reported then).
    let tmp = tempfile::tempdir().unwrap();
    let td = tmp.path().join("target");
    let args = |fresh: bool| {
        let mut a = vec!["optimize", "--target-dir", td.to_str().unwrap()];
        a.extend(["--stages", "none"]);
        a.extend(fresh.then_some("--fresh"));
        a
    };
    let r = run_unchanged(&fixture("pgo-basic"), &args(false));
    assert_eq!(r.code, Some(0), "{}", r.all());
    let built: Vec<_> = walk(&td.join("optimize/build"))
        .into_iter()
        .filter(|p| p.ends_with("release/pgo-basic"))
        .collect();
    assert_eq!(built.len(), 1, "{built:?}");
    let good = std::fs::read(&built[0]).unwrap();
    // Cargo's freshness looks at file times: it calls a truncated output fresh.
    let f = std::fs::OpenOptions::new().write(true).open(&built[0]);
    f.unwrap().set_len(1000).unwrap();
    let baseline = td.join("optimize/latest/bin/baseline/pgo-basic");
    let mut said = Vec::new();
    for fresh in [true, false] {
        let r = run_unchanged(&fixture("pgo-basic"), &args(fresh));
        assert_eq!(r.code, Some(0), "fresh: {fresh}\n{}", r.all());
        assert_eq!(
            std::fs::read(&baseline).unwrap().len(),
            good.len(),
            "the truncated binary was used (fresh: {fresh})\n{}",
            r.stderr
        );
        said.push(r.stderr);
    }
    assert!(
        said[0].contains("is not the binary cargo built") && said[0].contains("built again"),
        "{}",
        said[0]
    );
    assert!(said[1].contains("build reused"), "{}", said[1]);
    assert_eq!(std::fs::read(&built[0]).unwrap().len(), good.len());

    // With no record of the build (the cache cleared, or a key that changed while cargo's
    // freshness did not), a cut binary cargo calls fresh is still seen: it is no whole
    // executable. It is linked again under --fresh, and what is kept is the whole one.
    let f = std::fs::OpenOptions::new().write(true).open(&built[0]);
    f.unwrap().set_len(1000).unwrap();
    std::fs::remove_dir_all(td.join("optimize/cache/builds")).unwrap();
    for fresh in [true, false] {
        let r = run_unchanged(&fixture("pgo-basic"), &args(fresh));
        assert_eq!(r.code, Some(0), "fresh: {fresh}\n{}", r.all());
        assert_eq!(
            std::fs::read(&baseline).unwrap().len(),
            good.len(),
            "the cut binary was used with no record of it (fresh: {fresh})\n{}",
            r.stderr
        );
        said.push(r.stderr);
    }
    assert!(
        said[2].contains("is not the binary cargo built (it is not a whole executable")
            && said[2].contains("built again"),
        "{}",
        said[2]
    );
    assert!(said[3].contains("build reused"), "{}", said[3]);
}

#[test]
fn a_cpu_name_rustc_does_not_know_is_bad_input_with_its_line() {
    let _g = shared();
    let spec = tempfile::tempdir().unwrap();
    let path = spec.path().join("optimize.toml");
    std::fs::write(
        &path,
        "bin = \"pgo-basic\"\n[stages]\ntry = [\"cpu\"]\ncpu = [\"x86-64-v2\",\n       \"skylakee\"]\n[[workload]]\nname = \"w\"\n",
    )
    .unwrap();
    let td = target_dir("faults-cpu-name");
    let _ = std::fs::remove_dir_all(&td);
    let r = with_spec(&path, &td);
    assert_eq!(r.code, Some(2), "{}", r.all());
    assert!(
        r.stderr
            .contains("optimize.toml:5: [stages] cpu: rustc does not know target-cpu `skylakee`"),
        "{}",
        r.stderr
    );
    assert!(
        r.stderr
            .contains("fix: pick a name from `rustc --print target-cpus`"),
        "{}",
        r.stderr
    );
    assert!(
        !td.join("optimize/runs").exists(),
        "it built before checking"
    );
}

#[test]
fn a_bin_or_package_named_in_the_spec_that_does_not_exist_points_at_its_line() {
    let _g = shared();
    let td = target_dir("faults-spec-names");
    let spec = tempfile::tempdir().unwrap();
    let path = spec.path().join("optimize.toml");
    for (key, text, says) in [
        (
            "bin",
            "# mine\nbin = \"pgo-basik\"\n[[workload]]\nname = \"w\"\n",
            "no binary named `pgo-basik`",
        ),
        (
            "package",
            "\npackage = \"nope\"\n[[workload]]\nname = \"w\"\n",
            "nope",
        ),
    ] {
        std::fs::write(&path, text).unwrap();
        let r = with_spec(&path, &td);
        assert_eq!(r.code, Some(2), "{}", r.all());
        assert!(
            r.stderr.contains(&format!("optimize.toml:2: `{key}`: ")) && r.stderr.contains(says),
            "{}",
            r.stderr
        );
        assert!(r.stderr.contains("fix: "), "{}", r.stderr);
    }
}

/// A tmpfs of `kib` KiB mounted at a fresh folder (root only), unmounted when dropped.
struct TinyDisk {
    dir: tempfile::TempDir,
}

impl TinyDisk {
    fn mount(kib: u32) -> Option<TinyDisk> {
        let dir = tempfile::tempdir().unwrap();
        let ok = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={kib}k"), "tmpfs"])
            .arg(dir.path())
            .output()
            .is_ok_and(|o| o.status.success());
        ok.then_some(TinyDisk { dir })
    }
}

impl Drop for TinyDisk {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount")
            .arg(self.dir.path())
            .status();
    }
}

#[test]
fn a_full_disk_names_the_file_the_step_and_the_fix() {
    let _g = shared();
    let Some(disk) = TinyDisk::mount(64) else {
        return skip("cannot mount a tmpfs here (needs root)");
    };
    // Builds have room; the run folder, where binaries are copied, does not.
    let td = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(td.path().join("optimize")).unwrap();
    std::os::unix::fs::symlink(disk.dir.path(), td.path().join("optimize/runs")).unwrap();
    let r = run_unchanged(
        &fixture("pgo-basic"),
        &[
            "optimize",
            "--target-dir",
            td.path().to_str().unwrap(),
            "--stages",
            "pgo",
        ],
    );
    assert_eq!(r.code, Some(2), "{}", r.all());
    for needle in [
        "cannot copy the baseline binary into the run folder at",
        "bin/baseline/pgo-basic: No space left on device",
        "fix: free space on the disk that holds",
    ] {
        assert!(r.stderr.contains(needle), "no `{needle}` in\n{}", r.stderr);
    }
    let left: Vec<_> = walk(disk.dir.path());
    assert!(
        left.iter()
            .all(|p| p.extension().is_none_or(|x| x != "tmp")),
        "a partial copy was left: {left:?}"
    );
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}
