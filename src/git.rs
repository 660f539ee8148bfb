//! Git, the one module that runs it: the repository of the project (`ci`, `release` ask
//! where its root is and which commit is checked out), how many commits changed a folder
//! since a file last changed (`ci --github`: is the committed PGO profile stale), and for
//! `check --against REV` a revision resolved to a commit (an error with the fix when it is
//! not one) and a temporary worktree of that commit under
//! `target/optimize/check/worktrees/<pid>` that is removed when dropped (and, when a killed
//! check left one behind, by the next check: [`sweep`]).
//!
//! Every git command goes through `process` with a timeout. Must not: build or measure.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{bail, Context as _};

use crate::process::{self, Command, Outcome};

/// Bound on one git command (a worktree checkout of a large repository included).
const GIT_TIMEOUT: Duration = Duration::from_secs(600);

/// Bound on a question about history (`log`, `rev-list`).
const QUERY_TIMEOUT: Duration = Duration::from_secs(60);

/// Run `git args` in `dir`.
fn git(dir: &Path, args: &[&str]) -> anyhow::Result<Outcome> {
    git_within(dir, args, GIT_TIMEOUT)
}

/// Run `git args` in `dir`, stopped after `timeout`.
fn git_within(dir: &Path, args: &[&str], timeout: Duration) -> anyhow::Result<Outcome> {
    let cmd = Command::new("git")
        .args(args)
        .cwd(dir)
        .env("GIT_TERMINAL_PROMPT", "0")
        .timeout(timeout)
        .label(format!("git {}", args.first().unwrap_or(&"")));
    let out = process::run(&cmd).context("cannot run git\n  fix: install git (`apt-get install git`); `check --against` builds a revision from your repository")?;
    if out.timed_out {
        bail!(
            "`git {}` in {} took longer than {} and was stopped",
            args.join(" "),
            dir.display(),
            humantime::format_duration(timeout)
        );
    }
    Ok(out)
}

/// Stdout of a git command that must succeed.
fn git_ok(dir: &Path, args: &[&str]) -> anyhow::Result<String> {
    let out = git(dir, args)?;
    if !out.status.success() {
        bail!(
            "`git {}` in {} failed ({}): {}",
            args.join(" "),
            dir.display(),
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// The git repository holding the project.
pub(crate) struct Repo {
    /// Its top-level folder (canonical).
    pub root: PathBuf,
}

impl Repo {
    /// The repository `dir` is in, or an error saying `--against` needs one.
    pub(crate) fn of(dir: &Path) -> anyhow::Result<Repo> {
        let out = git(dir, &["rev-parse", "--show-toplevel"])?;
        if !out.status.success() {
            bail!(
                "{} is not in a git repository, so there is no revision to compare with\n  fix: run `check` inside the project's git checkout, or compare with a saved baseline (`check --save-baseline NAME` on the old build, then `check --baseline NAME`)",
                dir.display()
            );
        }
        let root = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
        Ok(Repo {
            root: root.canonicalize().unwrap_or(root),
        })
    }

    /// The commit `rev` names (a branch, tag, `HEAD~1`, a hash), or an error with the fix.
    pub(crate) fn resolve(&self, rev: &str) -> anyhow::Result<String> {
        let spec = format!("{rev}^{{commit}}");
        let out = git(
            &self.root,
            &[
                "rev-parse",
                "--verify",
                "--quiet",
                "--end-of-options",
                &spec,
            ],
        )?;
        if out.status.success() && !rev.starts_with('-') {
            return Ok(String::from_utf8_lossy(&out.stdout).trim().to_string());
        }
        let shallow = git_ok(&self.root, &["rev-parse", "--is-shallow-repository"])
            .is_ok_and(|s| s == "true");
        let hint = if shallow {
            " This clone is shallow: in GitHub Actions give actions/checkout `fetch-depth: 0`, or `git fetch --deepen=50 origin main` first."
        } else if rev.contains('/') {
            " For a remote branch, fetch it first (`git fetch origin main`)."
        } else {
            ""
        };
        bail!(
            "--against {rev}: no such revision in the git repository at {}\n  fix: give a branch, tag or commit that exists here (`git log --oneline`, `git tag`).{hint}",
            self.root.display()
        )
    }

    /// An error with the fix when the package's manifest (`manifest`, a path in the
    /// working tree) is not in `commit` (`rev` as the user named it): the crate did not
    /// exist there, or was elsewhere. Asked of git's objects, before any worktree is made.
    pub(crate) fn require_manifest(
        &self,
        rev: &str,
        commit: &str,
        manifest: &Path,
    ) -> anyhow::Result<()> {
        let rel = self.relative(manifest)?;
        let rel = rel.to_string_lossy();
        let out = git(&self.root, &["cat-file", "-e", &format!("{commit}:{rel}")])?;
        if out.status.success() {
            return Ok(());
        }
        let short = crate::util::clip(commit, 12);
        bail!(
            "--against {rev}: the package's manifest {rel} does not exist at {short}: the crate is not there (yet) at that revision, so there is nothing to build and compare with\n  fix: compare with a later revision that has it (`git log --oneline -- {}` lists the commits that touched it), or save a baseline of a build you have (`cargo optimize check --save-baseline NAME`) and compare with `--baseline NAME`",
            shell_words::quote(&rel)
        )
    }

    /// The commit checked out now, and whether the working tree differs from it.
    pub(crate) fn head(&self) -> Option<(String, bool)> {
        let commit = git_ok(&self.root, &["rev-parse", "HEAD"]).ok()?;
        let dirty = git_ok(
            &self.root,
            &["status", "--porcelain", "--untracked-files=no"],
        )
        .map(|s| !s.is_empty())
        .unwrap_or(true);
        Some((commit, dirty))
    }

    /// How many commits changed `dir` (apart from `file`, relative to the root) since the
    /// last commit that changed `file`; `None` when git cannot say (no git, `file` never
    /// committed). Literal pathspecs: a folder's name is not a glob.
    pub(crate) fn changes_since(&self, file: &str, dir: &Path) -> Option<u32> {
        let git = |args: &[&str]| {
            git_within(&self.root, args, QUERY_TIMEOUT)
                .ok()
                .filter(|o| o.status.success())
                .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        };
        let literal = format!(":(literal){file}");
        let since = git(&["log", "-1", "--format=%H", "--", &literal]).filter(|c| !c.is_empty())?;
        let exclude = format!(":(exclude,literal){file}");
        let dir = format!(":(literal){}", dir.display());
        let range = format!("{since}..HEAD");
        git(&["rev-list", "--count", &range, "--", &dir, &exclude])?
            .parse()
            .ok()
    }

    /// `path` relative to the repository root (both canonical), to find it in a worktree.
    pub(crate) fn relative(&self, path: &Path) -> anyhow::Result<PathBuf> {
        let abs = path.canonicalize().unwrap_or_else(|_| path.to_path_buf());
        abs.strip_prefix(&self.root)
            .map(Path::to_path_buf)
            .with_context(|| {
                format!(
                    "{} is outside the git repository at {}",
                    abs.display(),
                    self.root.display()
                )
            })
    }
}

/// A temporary checkout of one commit; removed (its folder and its entry in the
/// repository's list, no other) when dropped.
pub(crate) struct Worktree {
    repo: PathBuf,
    pub path: PathBuf,
}

impl Worktree {
    /// Check out `commit` (detached) into a new folder `dir/<pid>[-<random>]`
    /// (`util::create_fresh_dir`: never one that exists, which may be another check's of the
    /// same pid in another PID namespace).
    pub(crate) fn add(repo: &Repo, dir: &Path, commit: &str) -> anyhow::Result<Worktree> {
        sweep(repo, dir);
        let stem = std::process::id().to_string();
        let (_, path) = crate::util::create_fresh_dir(dir, &stem)
            .map_err(|e| crate::util::io_error(e, "cannot create", &dir.join(&stem)))?;
        let p = path.to_string_lossy().into_owned();
        let out = git(
            &repo.root,
            &["worktree", "add", "--detach", "--force", &p, commit],
        )?;
        if !out.status.success() {
            remove(&repo.root, &path);
            bail!(
                "cannot check out {commit} into {p}: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            );
        }
        Ok(Worktree {
            repo: repo.root.clone(),
            path,
        })
    }
}

impl Worktree {
    /// Check out the commit's submodules in the worktree (`git submodule update --init
    /// --recursive`, bounded like every git command), when it has any: a path dependency
    /// may be in one. `None` when there are none or they are checked out, else what git
    /// said (the build may not need them: the caller says it only when the build fails).
    pub(crate) fn init_submodules(&self) -> Option<String> {
        if !self.path.join(".gitmodules").is_file() {
            return None;
        }
        let args = ["submodule", "update", "--init", "--recursive"];
        match git(&self.path, &args) {
            Ok(out) if out.status.success() => None,
            Ok(out) => {
                let said = String::from_utf8_lossy(&out.stderr);
                let fatal = said.lines().find(|l| l.starts_with("fatal:"));
                Some(fatal.unwrap_or(said.trim()).to_string())
            }
            Err(e) => Some(format!("{e:#}")),
        }
    }
}

impl Drop for Worktree {
    fn drop(&mut self) {
        remove(&self.repo, &self.path);
    }
}

/// Remove one worktree of ours, its folder and its entry in the repository (best effort).
/// Only this one: `git worktree remove --force --force PATH` also forgets an entry whose
/// folder is gone, where `git worktree prune` would forget every such entry — a user's own
/// worktree moved away for a while included.
fn remove(repo: &Path, path: &Path) {
    let p = path.to_string_lossy().into_owned();
    let _ = git(repo, &["worktree", "remove", "--force", "--force", &p]);
    let _ = std::fs::remove_dir_all(path);
}

/// Remove the worktrees a killed check left in `dir` (named by a process id that is no
/// longer running): the folders there, and the repository's entries of folders in `dir`
/// that are gone.
pub(crate) fn sweep(repo: &Repo, dir: &Path) {
    let mut left: Vec<PathBuf> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .collect();
    let real = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
    let listed = git_ok(&repo.root, &["worktree", "list", "--porcelain", "-z"]);
    for entry in listed.iter().flat_map(|l| l.split('\0')) {
        let Some(path) = entry.strip_prefix("worktree ").map(PathBuf::from) else {
            continue;
        };
        let ours = path.parent().is_some_and(|p| p == dir || p == real);
        if ours && !left.iter().any(|l| l.file_name() == path.file_name()) {
            left.push(path);
        }
    }
    for path in left {
        let name = path.file_name().and_then(|n| n.to_str());
        let pid = name.and_then(crate::util::pid_of_fresh_name);
        if pid.is_some_and(|p| p != std::process::id() && !crate::sys::pid_alive(p)) {
            remove(&repo.root, &path);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_checks_of_the_same_pid_get_two_worktrees() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("repo");
        std::fs::create_dir(&root).unwrap();
        for args in [
            &["init", "-q"][..],
            &[
                "-c",
                "user.name=t",
                "-c",
                "user.email=t@t",
                "commit",
                "-q",
                "--allow-empty",
                "-m",
                "x",
            ],
        ] {
            assert!(git(&root, args).unwrap().status.success(), "git {args:?}");
        }
        let repo = Repo::of(&root).unwrap();
        let dir = tmp.path().join("worktrees");
        let a = Worktree::add(&repo, &dir, "HEAD").unwrap();
        let b = Worktree::add(&repo, &dir, "HEAD").unwrap();
        assert_ne!(a.path, b.path);
        assert!(
            a.path.join(".git").exists(),
            "the first worktree was removed"
        );
        assert!(b.path.join(".git").exists());
        let (pa, pb) = (a.path.clone(), b.path.clone());
        drop((a, b));
        assert!(!pa.exists() && !pb.exists());
    }
}
