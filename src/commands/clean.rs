//! `cargo optimize clean`: remove `target/optimize` — refused while a run uses it.

use anyhow::Context as _;

use crate::cli::GlobalArgs;

pub(crate) fn run(g: &GlobalArgs) -> anyhow::Result<i32> {
    let dir = crate::pipeline::plan::optimize_dir(g)?;
    let _lock = crate::context::DirLock::for_clean(&dir)?;
    let fix = |e: std::io::Error, what: &std::path::Path| {
        let hint = match e.kind() {
            std::io::ErrorKind::PermissionDenied => format!(
                "\n  fix: make {} writable (its permissions, or an immutable attribute: `lsattr -d {}`, `chattr -i`), then clean again",
                what.display(),
                what.display()
            ),
            _ => String::new(),
        };
        anyhow::anyhow!("cannot remove {}: {e}{hint}", what.display())
    };
    match std::fs::read_link(&dir) {
        // A link the user made (e.g. to another disk): what it points to is emptied, the
        // link kept, and the message says so.
        Ok(to) => {
            let target = dir.parent().unwrap_or(&dir).join(&to);
            for e in std::fs::read_dir(&target)
                .with_context(|| format!("cannot read {}", target.display()))?
            {
                let p = e?.path();
                let is_dir = std::fs::symlink_metadata(&p).is_ok_and(|m| m.is_dir());
                let removed = if is_dir {
                    std::fs::remove_dir_all(&p)
                } else {
                    std::fs::remove_file(&p)
                };
                removed.map_err(|e| fix(e, &p))?;
            }
            eprintln!(
                "removed everything in {} ({} links there; the link is kept)",
                target.display(),
                dir.display()
            );
        }
        Err(_) if dir.exists() => {
            std::fs::remove_dir_all(&dir).map_err(|e| fix(e, &dir))?;
            eprintln!("removed {}", dir.display());
        }
        Err(_) => eprintln!("nothing to remove ({} does not exist)", dir.display()),
    }
    Ok(0)
}
