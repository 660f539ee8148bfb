//! Faults in `cargo optimize apply` (issue 10, items 3–7, and the class "any file the tool
//! writes into the user's project"): each test hand-writes a report.json (no pipeline run),
//! runs `apply` on a tiny crate, and checks the exit code, the message (what, where, fix)
//! and the user's tree byte for byte, symlinks included ([`tree`]).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::common::*;

const PGO_WARN: &str = "-Cllvm-args=-pgo-warn-missing-function";

/// One entry of the user's tree: a file's bytes, or where a symlink points.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Entry {
    File(Vec<u8>),
    Link(PathBuf),
}

/// Every file and symlink under `dir` (but `target/`), not following links: what
/// [`snapshot`] does, and it also sees a link replaced by a regular file.
fn tree(dir: &Path) -> BTreeMap<PathBuf, Entry> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.file_name().is_some_and(|n| n == "target") {
                continue;
            }
            let meta = std::fs::symlink_metadata(&p).unwrap();
            if meta.file_type().is_symlink() {
                out.insert(p.clone(), Entry::Link(std::fs::read_link(&p).unwrap()));
            } else if meta.is_dir() {
                stack.push(p);
            } else {
                out.insert(p.clone(), Entry::File(std::fs::read(&p).unwrap()));
            }
        }
    }
    out
}

fn file(bytes: impl AsRef<[u8]>) -> Entry {
    Entry::File(bytes.as_ref().to_vec())
}

/// Assert two trees are equal, naming the first path that differs.
fn assert_tree(expected: &BTreeMap<PathBuf, Entry>, actual: &BTreeMap<PathBuf, Entry>) {
    let show = |e: Option<&Entry>| match e {
        None => "(absent)".to_string(),
        Some(Entry::Link(t)) => format!("symlink to {}", t.display()),
        Some(Entry::File(b)) => format!("{:?}", String::from_utf8_lossy(b)),
    };
    for p in expected.keys().chain(actual.keys()) {
        assert!(
            expected.get(p) == actual.get(p),
            "{}:\n  expected {}\n  found    {}",
            p.display(),
            show(expected.get(p)),
            show(actual.get(p))
        );
    }
}

const MANIFEST: &str =
    "[package]\nname = \"tiny\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[workspace]\n";

/// A crate `tiny` in a fresh temp dir, with `manifest` as its Cargo.toml.
fn tiny(manifest: &[u8]) -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(tmp.path().join("src")).unwrap();
    std::fs::write(tmp.path().join("Cargo.toml"), manifest).unwrap();
    std::fs::write(tmp.path().join("src/main.rs"), "fn main() {}\n").unwrap();
    tmp
}

/// A report whose winner is `stage` with these overrides and stage flags, written to
/// `<dir>/target/report.json` (outside the tree [`tree`] compares); returns its path.
fn report(
    dir: &Path,
    stage: &str,
    overrides: serde_json::Value,
    stage_rustflags: &[&str],
) -> String {
    let r = serde_json::json!({
        "schema": 1, "run_id": "r1", "crate": "tiny", "bin": "tiny",
        "toolchain": { "host": "x86_64-unknown-linux-gnu" },
        "stages": [],
        "final": {
            "stage": stage, "binary": "/nowhere", "speedup_vs_baseline": 1.2,
            "settings": {
                "profile": "release", "profile_overrides": overrides,
                "stage_rustflags": stage_rustflags, "user_rustflags": [], "target": null,
                "features": { "features": [], "all_features": false, "no_default_features": false }
            }
        }
    });
    std::fs::create_dir_all(dir.join("target")).unwrap();
    let path = dir.join("target/report.json");
    std::fs::write(&path, r.to_string()).unwrap();
    path.to_str().unwrap().to_string()
}

/// A PGO winner: a "profile" (any bytes: apply only copies it) in the run folder's
/// `profiles/` (the report's folder is `target/`), its SHA-256 recorded as a run records it.
fn pgo_report(dir: &Path, profile: &[u8]) -> String {
    let src = dir.join("target/profiles/pgo/merged.profdata");
    std::fs::create_dir_all(src.parent().unwrap()).unwrap();
    std::fs::write(&src, profile).unwrap();
    pgo_report_naming(dir, &src, &sha256(profile))
}

/// A PGO winner built with `-Cprofile-use=src`, its pgo row recording `digest`.
fn pgo_report_naming(dir: &Path, src: &Path, digest: &str) -> String {
    let flag = format!("-Cprofile-use={}", src.display());
    let path = report(
        dir,
        "pgo",
        serde_json::json!({ "lto": "\"fat\"" }),
        &[&flag, PGO_WARN],
    );
    let mut r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    r["stages"] = serde_json::json!([{
        "name": "pgo", "status": "kept", "reason": "", "notes": [],
        "settings": r["final"]["settings"].clone(),
        "facts": { "profile_sha256": digest },
    }]);
    std::fs::write(&path, r.to_string()).unwrap();
    path
}

/// SHA-256 as `sha256sum` prints it.
fn sha256(bytes: &[u8]) -> String {
    use sha2::Digest as _;
    sha2::Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn lto_fat() -> serde_json::Value {
    serde_json::json!({ "lto": "\"fat\"", "codegen-units": "1" })
}

fn assert_ok(r: &Run) {
    assert_eq!(r.code, Some(0), "{}", r.all());
}

fn assert_says(text: &str, needles: &[&str]) {
    for n in needles {
        assert!(text.contains(n), "no {n:?} in:\n{text}");
    }
}

/// Item 3: the user's own `Cargo.toml.bak` is never overwritten; the backup takes the next
/// free name.
#[test]
fn apply_never_overwrites_an_existing_backup() {
    let _g = shared();
    let tmp = tiny(MANIFEST.as_bytes());
    let dir = tmp.path();
    std::fs::write(dir.join("Cargo.toml.bak"), "my own backup\n").unwrap();
    let rep = report(dir, "profile", lto_fat(), &[]);
    let mut expected = tree(dir);

    let r = run(dir, &["optimize", "apply", &rep], &[]);
    assert_ok(&r);
    let bak1 = dir.join("Cargo.toml.bak.1");
    assert_says(
        &r.stderr,
        &[
            &format!("previous version in {}", bak1.display()),
            &format!("{} already exists", dir.join("Cargo.toml.bak").display()),
        ],
    );
    let after = tree(dir);
    let Some(Entry::File(new)) = after.get(&dir.join("Cargo.toml")) else {
        panic!("no Cargo.toml")
    };
    assert!(
        String::from_utf8_lossy(new).contains("[profile.optimized]"),
        "{}",
        r.all()
    );
    expected.insert(dir.join("Cargo.toml"), file(new));
    expected.insert(bak1, file(MANIFEST));
    assert_tree(&expected, &after);

    // A second backup of a changed file takes the next name again.
    let rep = report(
        dir,
        "profile",
        serde_json::json!({ "lto": "\"thin\"" }),
        &[],
    );
    let r = run(dir, &["optimize", "apply", &rep], &[]);
    assert_ok(&r);
    assert_says(&r.stderr, &["Cargo.toml.bak.2"]);
    assert_eq!(
        std::fs::read(dir.join("Cargo.toml.bak.2")).unwrap(),
        *new,
        "{}",
        r.all()
    );
    assert_eq!(
        std::fs::read_to_string(dir.join("Cargo.toml.bak")).unwrap(),
        "my own backup\n"
    );
}

/// Item 3: a write that fails (here: `pgo` is a file, so `pgo/tiny.profdata` cannot be
/// created, which fails as root too) leaves every file as it was: the manifest is not
/// written before it and no backup is left behind.
#[test]
fn apply_that_cannot_write_changes_nothing_and_leaves_no_backup() {
    let _g = shared();
    let tmp = tiny(MANIFEST.as_bytes());
    let dir = tmp.path();
    std::fs::write(dir.join("pgo"), "a file of the user's, not a folder\n").unwrap();
    let rep = pgo_report(dir, b"new profile");
    let before = tree(dir);

    let r = run(dir, &["optimize", "apply", &rep], &[]);
    assert_eq!(r.code, Some(2), "{}", r.all());
    assert_says(
        &r.stderr,
        &[
            &format!("cannot write {}", dir.join("pgo/tiny.profdata").display()),
            &format!("{} is not a folder", dir.join("pgo").display()),
            "fix:",
            "nothing was written",
        ],
    );
    assert_tree(&before, &tree(dir));
}

/// Item 4: a PGO profile already at `pgo/<bin>.profdata` is backed up like any other file
/// apply changes, under the same rule (never over an existing backup).
#[test]
fn apply_backs_up_a_replaced_pgo_profile() {
    let _g = shared();
    let tmp = tiny(MANIFEST.as_bytes());
    let dir = tmp.path();
    std::fs::create_dir_all(dir.join("pgo")).unwrap();
    std::fs::write(dir.join("pgo/tiny.profdata"), b"old profile").unwrap();
    std::fs::write(dir.join("pgo/tiny.profdata.bak"), b"older, the user's").unwrap();
    let rep = pgo_report(dir, b"new profile");
    let mut expected = tree(dir);

    let r = run(dir, &["optimize", "apply", &rep], &[]);
    assert_ok(&r);
    let bak = dir.join("pgo/tiny.profdata.bak.1");
    assert_says(
        &r.stdout,
        &[&format!(
            "replace {}",
            dir.join("pgo/tiny.profdata").display()
        )],
    );
    assert_says(
        &r.stderr,
        &[&format!("previous version in {}", bak.display())],
    );
    let after = tree(dir);
    expected.insert(dir.join("pgo/tiny.profdata"), file(b"new profile"));
    expected.insert(bak, file(b"old profile"));
    expected.insert(dir.join("Cargo.toml.bak"), file(MANIFEST));
    expected.insert(
        dir.join("Cargo.toml"),
        after[&dir.join("Cargo.toml")].clone(),
    );
    assert_tree(&expected, &after);
}

/// Item 5: a symlinked Cargo.toml stays a link; its target gets the new text.
#[test]
fn apply_writes_through_a_symlinked_manifest() {
    let _g = shared();
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    let dir = root.join("proj");
    std::fs::create_dir_all(dir.join("src")).unwrap();
    std::fs::create_dir_all(root.join("shared")).unwrap();
    std::fs::write(root.join("shared/Cargo.toml"), MANIFEST).unwrap();
    std::os::unix::fs::symlink("../shared/Cargo.toml", dir.join("Cargo.toml")).unwrap();
    std::fs::write(dir.join("src/main.rs"), "fn main() {}\n").unwrap();
    let rep = report(&dir, "profile", lto_fat(), &[]);
    let mut expected = tree(root);

    let r = run(&dir, &["optimize", "apply", &rep], &[]);
    assert_ok(&r);
    let real = root.join("shared/Cargo.toml").canonicalize().unwrap();
    assert_says(
        &r.stderr,
        &[&format!(
            "wrote {} through the symlink {}",
            real.display(),
            dir.join("Cargo.toml").display()
        )],
    );
    let after = tree(root);
    let new = std::fs::read_to_string(&real).unwrap();
    assert!(
        new.starts_with(MANIFEST) && new.contains("[profile.optimized]"),
        "{new}"
    );
    // The link is untouched, the target changed, the backup sits next to the link.
    expected.insert(root.join("shared/Cargo.toml"), file(&new));
    expected.insert(dir.join("Cargo.toml.bak"), file(MANIFEST));
    assert_tree(&expected, &after);
}

/// Item 6: CRLF line endings stay CRLF, and the diff shows the real change with context.
#[test]
fn apply_keeps_crlf_line_endings_and_shows_the_real_diff() {
    let _g = shared();
    let crlf = "# mine\r\n[package]\r\nname = \"tiny\"\r\nversion = \"0.1.0\"\r\nedition = \"2021\"\r\n\r\n[profile.release]\r\ndebug = false\r\n\r\n[workspace]\r\n";
    let tmp = tiny(crlf.as_bytes());
    let dir = tmp.path();
    let rep = report(dir, "profile", lto_fat(), &[]);
    let mut expected = tree(dir);

    let r = run(dir, &["optimize", "apply", &rep], &[]);
    assert_ok(&r);
    let new = std::fs::read_to_string(dir.join("Cargo.toml")).unwrap();
    // toml_edit puts the new profile after the other profiles; every line ends in CRLF.
    let want = "# mine\r\n[package]\r\nname = \"tiny\"\r\nversion = \"0.1.0\"\r\nedition = \"2021\"\r\n\r\n[profile.release]\r\ndebug = false\r\n\r\n# Written by `cargo optimize apply`: the settings it measured as fastest.\r\n# Build with `cargo build --profile optimized`.\r\n[profile.optimized]\r\ninherits = \"release\"\r\ncodegen-units = 1\r\nlto = \"fat\"\r\n\r\n[workspace]\r\n";
    assert_eq!(new, want, "{}", r.all());
    // The diff: the added lines between their context lines, nothing removed.
    assert_says(
        &r.stdout,
        &[
            "--- a/Cargo.toml\n+++ b/Cargo.toml\n@@ -",
            "\n [profile.release]\n debug = false\n",
            "\n+[profile.optimized]\n+inherits = \"release\"\n+codegen-units = 1\n+lto = \"fat\"\n",
            "\n [workspace]\n",
        ],
    );
    assert!(
        !r.stdout
            .lines()
            .any(|l| l.starts_with('-') && !l.starts_with("---")),
        "{}",
        r.stdout
    );
    assert_says(&r.stderr, &["CRLF line endings kept"]);
    expected.insert(dir.join("Cargo.toml"), file(&new));
    expected.insert(dir.join("Cargo.toml.bak"), file(crlf));
    assert_tree(&expected, &tree(dir));
}

/// Item 7: a hand-written `[profile.optimized]` keeps the user's keys and comments; a key
/// the run sets replaces the user's value and says so; a managed key the run does not set
/// is kept, with a note that the build then differs from the measured one.
#[test]
fn apply_keeps_the_users_keys_in_a_hand_written_profile() {
    let _g = shared();
    let manual = format!(
        "{MANIFEST}\n# my own profile\n[profile.optimized]\ninherits = \"release\"\n# symbols for perf\ndebug = true\nsplit-debuginfo = \"packed\"   # keep\nlto = \"thin\"   # I thought thin was enough\n"
    );
    let tmp = tiny(manual.as_bytes());
    let dir = tmp.path();
    let rep = report(dir, "profile", lto_fat(), &[]);
    let mut expected = tree(dir);

    let r = run(dir, &["optimize", "apply", &rep], &[]);
    assert_ok(&r);
    let new = std::fs::read_to_string(dir.join("Cargo.toml")).unwrap();
    let want = format!(
        "{MANIFEST}\n# my own profile\n[profile.optimized]\ninherits = \"release\"\n# symbols for perf\ndebug = true\nsplit-debuginfo = \"packed\"   # keep\nlto = \"fat\"   # I thought thin was enough\ncodegen-units = 1\n"
    );
    assert_eq!(new, want, "{}", r.all());
    assert_says(
        &r.stderr,
        &[
            "[profile.optimized]",
            "replaced your `lto = \"thin\"` with `lto = \"fat\"`",
            "kept your `debug = true`",
            "fix:",
        ],
    );
    expected.insert(dir.join("Cargo.toml"), file(&new));
    expected.insert(dir.join("Cargo.toml.bak"), file(&manual));
    assert_tree(&expected, &tree(dir));

    // Again: nothing to change, nothing written.
    let before = tree(dir);
    let r = run(dir, &["optimize", "apply", &rep], &[]);
    assert_ok(&r);
    assert_says(&r.stdout, &["already applied"]);
    assert_tree(&before, &tree(dir));
}

/// The general class: `.cargo/config.toml` (with `--cpu`) follows the same rules: written
/// through its symlink, CRLF kept, the user's backup not overwritten, the user's
/// target-cpu replaced and said so.
#[test]
fn apply_cpu_config_follows_the_same_rules() {
    let _g = shared();
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    let dir = root.join("proj");
    std::fs::create_dir_all(dir.join("src")).unwrap();
    std::fs::create_dir_all(dir.join(".cargo")).unwrap();
    std::fs::create_dir_all(root.join("dotfiles")).unwrap();
    std::fs::write(dir.join("Cargo.toml"), MANIFEST).unwrap();
    std::fs::write(dir.join("src/main.rs"), "fn main() {}\n").unwrap();
    let config =
        "# shared\r\n[build]\r\nrustflags = [\"--cfg\", \"mine\", \"-Ctarget-cpu=native\"]\r\n";
    std::fs::write(root.join("dotfiles/config.toml"), config).unwrap();
    std::os::unix::fs::symlink("../../dotfiles/config.toml", dir.join(".cargo/config.toml"))
        .unwrap();
    std::fs::write(dir.join(".cargo/config.toml.bak"), "the user's\n").unwrap();
    let rep = report(dir.as_path(), "cpu", lto_fat(), &["-Ctarget-cpu=x86-64-v2"]);
    let mut expected = tree(root);

    let r = run(&dir, &["optimize", "apply", &rep, "--cpu"], &[]);
    assert_ok(&r);
    let real = root.join("dotfiles/config.toml").canonicalize().unwrap();
    let new = std::fs::read_to_string(&real).unwrap();
    assert_eq!(
        new,
        "# shared\r\n[build]\r\nrustflags = [\"--cfg\", \"mine\", \"-Ctarget-cpu=x86-64-v2\"]\r\n"
    );
    assert_says(
        &r.stderr,
        &[
            &format!(
                "wrote {} through the symlink {}",
                real.display(),
                dir.join(".cargo/config.toml").display()
            ),
            &format!(
                "previous version in {}",
                dir.join(".cargo/config.toml.bak.1").display()
            ),
            "replaced your `-Ctarget-cpu=native`",
            "CRLF line endings kept",
        ],
    );
    let after = tree(root);
    expected.insert(root.join("dotfiles/config.toml"), file(&new));
    expected.insert(dir.join(".cargo/config.toml.bak.1"), file(config));
    expected.insert(dir.join("Cargo.toml.bak"), file(MANIFEST));
    expected.insert(
        dir.join("Cargo.toml"),
        after[&dir.join("Cargo.toml")].clone(),
    );
    assert_tree(&expected, &after);
}

/// The general class, a failing write: `.cargo/config.toml` is a symlink into a folder
/// that does not exist. Refused before anything is written: no file changed (the
/// manifest neither), no backup, the link still a link.
#[test]
fn apply_refuses_a_symlink_into_a_missing_folder_and_changes_nothing() {
    let _g = shared();
    let tmp = tiny(MANIFEST.as_bytes());
    let dir = tmp.path();
    std::fs::create_dir_all(dir.join(".cargo")).unwrap();
    std::os::unix::fs::symlink("../gone/config.toml", dir.join(".cargo/config.toml")).unwrap();
    let rep = report(dir, "cpu", lto_fat(), &["-Ctarget-cpu=x86-64-v2"]);
    let before = tree(dir);

    let r = run(dir, &["optimize", "apply", &rep, "--cpu"], &[]);
    assert_eq!(r.code, Some(2), "{}", r.all());
    assert_says(
        &r.stderr,
        &[
            &format!("cannot write {}", dir.join(".cargo/config.toml").display()),
            "is a symlink to",
            &format!("{} does not exist", dir.join("gone").display()),
            "fix:",
            "nothing was written",
        ],
    );
    assert_tree(&before, &tree(dir));
}

/// `n` `cargo-optimize ARGS` started at once in `cwd`, each waited for at most two minutes
/// (then killed); their output goes to files outside the project.
fn run_at_once(cwd: &Path, args: &[&str], n: usize) -> Vec<Run> {
    let out = tempfile::tempdir().unwrap();
    let mut children = Vec::new();
    for i in 0..n {
        let (o, e) = (
            out.path().join(format!("{i}.out")),
            out.path().join(format!("{i}.err")),
        );
        let child = std::process::Command::new(tool())
            .args(args)
            .current_dir(cwd)
            .env_remove("RUSTFLAGS")
            .env_remove("CARGO_ENCODED_RUSTFLAGS")
            .env_remove("CARGO_BUILD_RUSTFLAGS")
            .env("NO_COLOR", "1")
            .stdout(std::fs::File::create(&o).unwrap())
            .stderr(std::fs::File::create(&e).unwrap())
            .spawn()
            .unwrap();
        children.push((child, o, e));
    }
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    children
        .into_iter()
        .map(|(mut child, o, e)| {
            let status = loop {
                if let Some(s) = child.try_wait().unwrap() {
                    break s;
                }
                if std::time::Instant::now() > deadline {
                    let _ = child.kill();
                    break child.wait().unwrap();
                }
                std::thread::sleep(std::time::Duration::from_millis(20));
            };
            Run {
                code: status.code(),
                stdout: std::fs::read_to_string(o).unwrap(),
                stderr: std::fs::read_to_string(e).unwrap(),
            }
        })
        .collect()
}

/// Issue 23, item 4: applies started at once on one project serialise on the apply lock.
/// Each one either writes (and the files then hold the change) or finds nothing to do and
/// says so; none fails with "File exists" or "changed while apply was running", none puts
/// the original back over another's write, and backups never overwrite each other: the one
/// backup of each file holds what the user had.
#[test]
fn applies_at_once_serialise_each_writes_or_finds_nothing_to_do() {
    let _g = shared();
    const PROCESSES: usize = 4;
    for round in 0..8 {
        let tmp = tiny(MANIFEST.as_bytes());
        let dir = tmp.path();
        std::fs::create_dir_all(dir.join("pgo")).unwrap();
        std::fs::write(dir.join("pgo/tiny.profdata"), b"old profile").unwrap();
        let rep = pgo_report(dir, b"new profile");
        let runs = run_at_once(dir, &["optimize", "apply", &rep], PROCESSES);
        let wrote_manifest = format!("wrote {}", dir.join("Cargo.toml").display());
        let mut writers = 0;
        for r in &runs {
            let all = r.all();
            assert_eq!(r.code, Some(0), "round {round}: {all}");
            assert!(!all.contains("File exists"), "round {round}: {all}");
            let wrote = r.stderr.contains(&wrote_manifest);
            let nothing = r.stdout.contains("already applied: nothing to change");
            assert!(
                wrote != nothing,
                "round {round}: wrote or nothing to do:\n{all}"
            );
            writers += usize::from(wrote);
        }
        let all: Vec<String> = runs.iter().map(Run::all).collect();
        assert_eq!(writers, 1, "round {round}:\n{}", all.join("\n----\n"));
        let manifest = std::fs::read_to_string(dir.join("Cargo.toml")).unwrap();
        assert!(
            manifest.starts_with(MANIFEST)
                && manifest
                    .contains("[profile.optimized]\ninherits = \"release\"\nlto = \"fat\"\n"),
            "round {round}: {manifest}"
        );
        assert_eq!(
            std::fs::read(dir.join("pgo/tiny.profdata")).unwrap(),
            b"new profile"
        );
        let mut expected = BTreeMap::new();
        expected.insert(dir.join("Cargo.toml"), file(&manifest));
        expected.insert(dir.join("Cargo.toml.bak"), file(MANIFEST));
        expected.insert(dir.join("src/main.rs"), file("fn main() {}\n"));
        expected.insert(dir.join("pgo/tiny.profdata"), file(b"new profile"));
        expected.insert(dir.join("pgo/tiny.profdata.bak"), file(b"old profile"));
        assert_tree(&expected, &tree(dir));
    }
}

/// Issue 23, item 8: a report is input, and its `-Cprofile-use` must not make `apply` copy
/// any file into the project: only a profile inside the run's folder (or the profile
/// cache) with the SHA-256 the run recorded. `/etc/passwd`, a symlink in the run's
/// `profiles/` to it (its digest recorded), and a run's profile whose content is not the
/// recorded one are refused: exit 2, the file, why, a fix; nothing written, dry run or not.
#[test]
fn apply_copies_only_a_profile_the_run_made() {
    let _g = shared();
    let tmp = tiny(MANIFEST.as_bytes());
    let dir = tmp.path();
    let passwd = Path::new("/etc/passwd");
    let passwd_digest = sha256(&std::fs::read(passwd).unwrap());
    let run_profile = dir.join("target/profiles/pgo/merged.profdata");
    let link = dir.join("target/profiles/pgo/link.profdata");
    let cases: Vec<(&Path, String, &str)> = vec![
        (passwd, passwd_digest.clone(), "not a profile the run made"),
        (&link, passwd_digest, "not a profile the run made"),
        (
            &run_profile,
            sha256(b"what the run made"),
            "not the one the run recorded",
        ),
    ];
    std::fs::create_dir_all(run_profile.parent().unwrap()).unwrap();
    std::fs::write(&run_profile, b"changed since").unwrap();
    std::os::unix::fs::symlink(passwd, &link).unwrap();
    let before = tree(dir);
    for (src, digest, why) in cases {
        let rep = pgo_report_naming(dir, src, &digest);
        for dry in [true, false] {
            let mut args = vec!["optimize", "apply", &rep];
            if dry {
                args.push("--dry-run");
            }
            let r = run(dir, &args, &[]);
            assert_eq!(r.code, Some(2), "{}", r.all());
            assert_says(
                &r.stderr,
                &[
                    &format!("refusing to copy the PGO profile {}", src.display()),
                    why,
                    "fix:",
                ],
            );
            assert!(!r.stdout.contains("profdata"), "{}", r.all());
            assert_tree(&before, &tree(dir));
        }
    }
    // The run's own profile with its recorded digest is copied.
    std::fs::write(&run_profile, b"what the run made").unwrap();
    let rep = pgo_report_naming(dir, &run_profile, &sha256(b"what the run made"));
    let r = run(dir, &["optimize", "apply", &rep], &[]);
    assert_ok(&r);
    assert_eq!(
        std::fs::read(dir.join("pgo/tiny.profdata")).unwrap(),
        b"what the run made"
    );
}

/// Issue 23: a report.json of random bytes, or of a newer schema, is refused (exit 2)
/// naming the file, what it is, and the fix; nothing is written.
#[test]
fn apply_of_a_damaged_or_newer_report_names_the_file_and_the_fix() {
    let _g = shared();
    let tmp = tiny(MANIFEST.as_bytes());
    let dir = tmp.path();
    let path = dir.join("target/report.json");
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let before = tree(dir);
    let random: Vec<u8> = (0u32..4096)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    let mut newer: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(report(dir, "profile", lto_fat(), &[])).unwrap(),
    )
    .unwrap();
    newer["schema"] = 99.into();
    newer["tool_version"] = "7.0.0".into();
    for (bytes, says) in [
        (
            random,
            vec![
                "is not a report.json that cargo-optimize wrote (or it is damaged)",
                "not UTF-8",
                "fix: run `cargo optimize` again, or pass another run",
            ],
        ),
        (
            newer.to_string().into_bytes(),
            vec![
                "has report schema 99, newer than this cargo-optimize",
                "written by cargo-optimize 7.0.0",
                "fix: upgrade cargo-optimize to 7.0.0 or later",
            ],
        ),
    ] {
        std::fs::write(&path, bytes).unwrap();
        let r = run(dir, &["optimize", "apply", path.to_str().unwrap()], &[]);
        assert_eq!(r.code, Some(2), "{}", r.all());
        assert_says(&r.stderr, &[&path.display().to_string()]);
        assert_says(&r.stderr, &says);
        assert_tree(&before, &tree(dir));
    }
}
