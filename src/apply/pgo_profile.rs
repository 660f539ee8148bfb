//! Which PGO profile `apply` may copy into the project. A report is input like any other
//! (a report.json can be passed by path, downloaded, edited), and its `-Cprofile-use=FILE`
//! must not make `apply` copy any file it names into `pgo/<bin>.profdata`. Copied is only a
//! profile the run made:
//! - inside the run's own `profiles/` folder, with the SHA-256 the run recorded
//!   (`facts.profile_sha256` of a row built with that flag), or
//! - in the tool's content-addressed profile cache (`<optimize dir>/cache/<digest
//!   prefix>.profdata`, the project's or the run's own), whose content matches its name —
//!   and the recorded digest when the report has one (older reports do not).
//!
//! Symlinks are resolved first (a link in the run folder to `/etc/passwd` is outside it),
//! and the bytes checked are the bytes copied.

use std::path::{Path, PathBuf};

use crate::report::Report;
use crate::store::sha256_hex;

/// Hex digits of a cache entry's name (`store::file_hash`: the first 12 bytes).
const CACHE_NAME_DIGITS: usize = 24;

/// The bytes of the profile `src` that the run in `run_dir` (the folder of its report.json)
/// built with, after the checks of the module doc; `caches` are the profile caches it may
/// be in. An error says why the file is refused and the fix.
pub(crate) fn checked(
    report: &Report,
    run_dir: &Path,
    caches: &[PathBuf],
    src: &Path,
) -> anyhow::Result<Vec<u8>> {
    let refuse = |why: String| {
        anyhow::anyhow!(
            "refusing to copy the PGO profile {} that the report names: {why}\n  fix: apply a report.json that `cargo optimize` wrote for this project (its profile is under target/optimize), or run `cargo optimize` again",
            src.display()
        )
    };
    let real = src.canonicalize().map_err(|e| {
        anyhow::anyhow!(
            "cannot read the run's PGO profile {}: {e}\n  fix: rerun `cargo optimize` (target/optimize/cache was removed?)",
            src.display()
        )
    })?;
    let shown = if real == src {
        String::new()
    } else {
        format!(" (it is {})", real.display())
    };
    let run_profiles = run_dir.join("profiles").canonicalize().ok();
    let in_run = run_profiles.as_ref().is_some_and(|d| real.starts_with(d));
    let in_cache = caches
        .iter()
        .filter_map(|c| c.canonicalize().ok())
        .any(|c| real.parent() == Some(c.as_path()));
    if !in_run && !in_cache {
        let mut places = vec![run_dir.join("profiles").display().to_string()];
        places.extend(caches.iter().map(|c| c.display().to_string()));
        return Err(refuse(format!(
            "it is not a profile the run made{shown}: apply copies a profile only from the run's folder or the profile cache ({})",
            places.join(", ")
        )));
    }
    if !std::fs::metadata(&real).is_ok_and(|m| m.is_file()) {
        return Err(refuse(format!("it is not a regular file{shown}")));
    }
    let bytes = std::fs::read(&real).map_err(|e| refuse(format!("cannot read it{shown}: {e}")))?;
    let digest = sha256_hex(&bytes);
    if in_cache && !in_run {
        let name = real.file_name().map(|n| n.to_string_lossy().into_owned());
        if name.as_deref() != Some(&format!("{}.profdata", &digest[..CACHE_NAME_DIGITS])) {
            return Err(refuse(format!(
                "its content (SHA-256 {digest}) is not the one its name in the profile cache says: damaged, or not written by cargo-optimize"
            )));
        }
    }
    match recorded_digest(report, src).map_err(refuse)? {
        Some(want) if want != digest => Err(refuse(format!(
            "its content (SHA-256 {digest}) is not the one the run recorded ({want}): it changed since the run"
        ))),
        Some(_) => Ok(bytes),
        None if in_cache && !in_run => Ok(bytes),
        None => Err(refuse(
            "the run did not record its SHA-256 (`facts.profile_sha256`, written since this version), so its content cannot be checked".into(),
        )),
    }
}

/// The SHA-256 the report records for the profile its rows name with `-Cprofile-use=src`
/// (`None`: none does); two different ones are an error.
fn recorded_digest(report: &Report, src: &Path) -> Result<Option<String>, String> {
    let mut found: Option<&str> = None;
    for row in &report.stages {
        let names_it = row.settings.as_ref().is_some_and(|s| {
            crate::cargo::codegen_option(&s.stage_rustflags, "profile-use")
                .is_some_and(|p| Path::new(&p) == src)
        });
        let Some(d) = row.facts.profile_sha256.as_deref().filter(|_| names_it) else {
            continue;
        };
        match found {
            Some(f) if f != d => {
                return Err(format!(
                    "the report records two different SHA-256 for it ({f}, {d})"
                ))
            }
            _ => found = Some(d),
        }
    }
    Ok(found.map(str::to_string))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A report whose `pgo` row was built with `-Cprofile-use=src` and records `digest`.
    fn report(src: &Path, digest: Option<&str>) -> Report {
        let flag = format!("-Cprofile-use={}", src.display());
        serde_json::from_value(serde_json::json!({
            "schema": 1, "run_id": "r", "crate": "c", "bin": "c",
            "toolchain": {"host": "h"},
            "stages": [{
                "name": "pgo", "status": "kept", "reason": "", "notes": [],
                "settings": {"profile": "release", "stage_rustflags": [flag], "target": null},
                "facts": {"profile_sha256": digest},
            }],
            "final": null,
        }))
        .unwrap()
    }

    struct Dirs {
        _tmp: tempfile::TempDir,
        run: PathBuf,
        cache: PathBuf,
    }

    fn dirs() -> Dirs {
        let tmp = tempfile::tempdir().unwrap();
        let run = tmp.path().join("optimize/runs/r");
        let cache = tmp.path().join("optimize/cache");
        std::fs::create_dir_all(run.join("profiles/pgo")).unwrap();
        std::fs::create_dir_all(&cache).unwrap();
        Dirs {
            _tmp: tmp,
            run,
            cache,
        }
    }

    fn check(d: &Dirs, report: &Report, src: &Path) -> Result<Vec<u8>, String> {
        checked(report, &d.run, std::slice::from_ref(&d.cache), src).map_err(|e| e.to_string())
    }

    #[test]
    fn a_profile_of_the_run_with_its_recorded_digest_is_copied() {
        let d = dirs();
        let src = d.run.join("profiles/pgo/merged.profdata");
        std::fs::write(&src, b"profile").unwrap();
        let ok = report(&src, Some(&sha256_hex(b"profile")));
        assert_eq!(check(&d, &ok, &src).unwrap(), b"profile");
        let e = check(&d, &report(&src, Some(&sha256_hex(b"other"))), &src).unwrap_err();
        assert!(e.contains("not the one the run recorded"), "{e}");
        let e = check(&d, &report(&src, None), &src).unwrap_err();
        assert!(
            e.contains("did not record its SHA-256") && e.contains("fix:"),
            "{e}"
        );
    }

    #[test]
    fn a_cache_entry_must_have_the_content_its_name_says() {
        let d = dirs();
        let digest = sha256_hex(b"profile");
        let good = d.cache.join(format!("{}.profdata", &digest[..24]));
        std::fs::write(&good, b"profile").unwrap();
        // An older report records no digest: the name is the check.
        assert_eq!(check(&d, &report(&good, None), &good).unwrap(), b"profile");
        assert!(check(&d, &report(&good, Some(&digest)), &good).is_ok());
        let bad = d
            .cache
            .join(format!("{}.profdata", &sha256_hex(b"x")[..24]));
        std::fs::write(&bad, b"profile").unwrap();
        let e = check(&d, &report(&bad, None), &bad).unwrap_err();
        assert!(
            e.contains("not the one its name in the profile cache says"),
            "{e}"
        );
    }

    #[test]
    fn a_file_outside_the_run_and_the_cache_is_refused_even_through_a_symlink() {
        let d = dirs();
        let secret = d.run.parent().unwrap().join("secret");
        std::fs::write(&secret, b"secret").unwrap();
        let digest = sha256_hex(b"secret");
        // Named directly, beside the report, or through a link inside the run's folder.
        let beside = d.run.join("secret.profdata");
        std::fs::write(&beside, b"secret").unwrap();
        let link = d.run.join("profiles/pgo/merged.profdata");
        crate::sys::symlink(&secret, &link).unwrap();
        let cache_link = d.cache.join(format!("{}.profdata", &digest[..24]));
        crate::sys::symlink(&secret, &cache_link).unwrap();
        for src in [&secret, &beside, &link, &cache_link] {
            let e = check(&d, &report(src, Some(&digest)), src).unwrap_err();
            assert!(
                e.contains("refusing to copy") && e.contains("not a profile the run made"),
                "{e}"
            );
        }
        let e = check(&d, &report(&secret, None), Path::new("/etc/passwd")).unwrap_err();
        assert!(e.contains("/etc/passwd") && e.contains("fix:"), "{e}");
    }
}
