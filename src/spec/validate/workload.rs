//! One `[[workload]]` table into its workloads: the name (a file name: no separators), the
//! settings every expansion shares (`start`, `timeout`, `use`, `cargo`, `expect`), then one
//! workload per combination of its `matrix`, each with `{placeholders}` expanded and its
//! paths checked (`stdin` a file, `cwd` a folder, `files` inside the cwd).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use toml::Spanned;

use super::super::matrix::{combinations, Expander, MatrixKey};
use super::super::raw::RawWorkload;
use super::super::{clean_path, Expect, SpecError, Start, Workload, DEFAULT_TIMEOUT};
use super::Validator;

/// What every expansion of one `[[workload]]` shares.
struct Shared {
    line: usize,
    start: Start,
    timeout: std::time::Duration,
    train: bool,
    eval: bool,
    cargo: Option<crate::spec::HarnessKind>,
    expect: Expect,
    metric: Option<crate::spec::Metric>,
}

/// One combination of a workload's matrix: its name, the expander of its values, which of
/// the matrix's keys its templates used (`Expander::expand` marks them), and whether it is
/// the first (where what every combination shares is checked).
struct Combination<'e, 'x> {
    name: String,
    ex: &'e Expander<'x>,
    used: &'e mut Vec<bool>,
    first: bool,
}

impl Validator<'_> {
    pub(in crate::spec) fn workload(
        &self,
        mut w: RawWorkload,
        header: usize,
        root: &Path,
        seen: &mut BTreeMap<String, usize>,
        out: &mut Vec<Workload>,
    ) -> Result<(), SpecError> {
        self.workload_name(&w.name)?;
        let shared = self.shared(&mut w, header)?;
        let root_str = root.to_string_lossy().into_owned();
        let matrix = match &w.matrix {
            Some(m) => self.matrix(m, &root_str)?,
            None => Vec::new(),
        };
        let mut used = vec![false; matrix.len()];
        for (i, combo) in combinations(&matrix).iter().enumerate() {
            let vars: Vec<(&str, &str)> = matrix
                .iter()
                .zip(combo)
                .map(|(k, &j)| (k.key.get_ref().as_str(), k.values[j].1.as_str()))
                .collect();
            let ex = Expander {
                cx: self,
                root: &root_str,
                vars: &vars,
            };
            let name = expanded_name(w.name.get_ref(), &matrix, combo);
            if let Some(first) = seen.get(&name) {
                return Err(self.at(
                    &w.name,
                    format!("duplicate workload name \"{name}\" (first defined on line {first})"),
                    Some("workload names must be unique: rename one of them".into()),
                ));
            }
            seen.insert(name.clone(), shared.line);
            let combination = Combination {
                name,
                ex: &ex,
                used: &mut used,
                first: i == 0,
            };
            out.push(self.expansion(&w, &shared, root, combination)?);
            // Checked once: every combination expands the same templates.
            let unused = matrix.iter().zip(&used).find(|(_, u)| i == 0 && !**u);
            if let Some((k, _)) = unused {
                let key = k.key.get_ref();
                return Err(self.at(
                    &k.key,
                    format!("matrix key `{key}` is not used, so every expanded workload would be the same"),
                    Some(format!("use \"{{{key}}}\" in args, stdin, env, cwd or files, or remove `{key}` from the matrix")),
                ));
            }
        }
        Ok(())
    }

    /// A workload name becomes a file name: not empty, no separators or control characters.
    fn workload_name(&self, name: &Spanned<String>) -> Result<(), SpecError> {
        let text = name.get_ref();
        if text.trim().is_empty() {
            return Err(self.at(
                name,
                "workload `name` is empty",
                Some("give the workload a short unique name such as \"parse-large\"".into()),
            ));
        }
        if let Some(c) = text
            .chars()
            .find(|c| matches!(c, '/' | '\\') || c.is_control())
        {
            return Err(self.at(
                name,
                format!("workload name \"{}\" contains {c:?}", text.escape_debug()),
                Some("names are used in file names: use letters, digits, '-' and '_'".into()),
            ));
        }
        Ok(())
    }

    fn shared(&self, w: &mut RawWorkload, header: usize) -> Result<Shared, SpecError> {
        let start = match &w.start {
            None => Start::Warm,
            Some(v) => match v.get_ref().as_str() {
                "warm" => Start::Warm,
                "cold" => Start::Cold,
                other => {
                    return Err(self.at(
                        v,
                        format!("`start` is \"warm\" or \"cold\", not \"{other}\""),
                        Some("start = \"cold\" drops the binary and the workload's input files from the page cache before every run (a first start); \"warm\" (the default) does not".into()),
                    ))
                }
            },
        };
        let timeout = match &w.timeout {
            Some(t) => self.duration(t, "timeout")?,
            None => DEFAULT_TIMEOUT,
        };
        let (train, eval) = match &w.use_ {
            Some(u) => self.uses(u)?,
            None => (true, true),
        };
        let cargo = self.cargo_kind(&w.cargo)?;
        let expect = match (w.expect.take(), cargo) {
            (Some(e), _) => self.expect(e)?,
            // A harness prints its own timings: its output is not compared, but it must
            // succeed (a bench that panics is a failure, not a status to reproduce).
            (None, Some(_)) => Expect::Success,
            (None, None) => Expect::Exact,
        };
        let metric = w.metric.as_ref().map(|m| self.metric(m)).transpose()?;
        Ok(Shared {
            metric,
            line: self.line(header),
            start,
            timeout,
            train,
            eval,
            cargo,
            expect,
        })
    }

    /// One combination of the matrix as a workload.
    fn expansion(
        &self,
        w: &RawWorkload,
        shared: &Shared,
        root: &Path,
        combination: Combination,
    ) -> Result<Workload, SpecError> {
        let Combination {
            name,
            ex,
            used,
            first,
        } = combination;
        let mut args = Vec::new();
        for a in w.args.iter().flatten() {
            args.push(ex.expand(a, used)?);
        }
        let stdin = match &w.stdin {
            Some(s) => Some(self.existing(s, &root.join(ex.expand(s, used)?), false, root)?),
            None => None,
        };
        let mut env = BTreeMap::new();
        for (k, v) in w.env.iter().flatten() {
            if first && (k.get_ref().is_empty() || k.get_ref().contains(['=', '\0'])) {
                return Err(self.at(
                    k,
                    format!(
                        "invalid environment variable name \"{}\"",
                        k.get_ref().escape_debug()
                    ),
                    Some("names must be non-empty and contain no '=' or NUL".into()),
                ));
            }
            env.insert(k.get_ref().clone(), ex.expand(v, used)?);
        }
        let cwd = match &w.cwd {
            Some(c) => self.existing(c, &root.join(ex.expand(c, used)?), true, root)?,
            None => root.to_path_buf(),
        };
        let mut files = Vec::new();
        for f in w.files.iter().flatten() {
            let p = PathBuf::from(ex.expand(f, used)?);
            self.output_file(f, &p, &cwd)?;
            files.push(p);
        }
        let writes = self.writes(w, ex, used, root)?;
        let env_pass = self.env_pass(w, first)?;
        let host = self.host_command(w.command.as_ref(), w.cargo.as_ref(), &mut |word| {
            ex.expand(word, used)
        })?;
        Ok(Workload {
            host,
            writes,
            env_pass,
            name,
            args,
            stdin,
            env,
            cwd,
            timeout: shared.timeout,
            train: shared.train,
            eval: shared.eval,
            expect: shared.expect.clone(),
            files,
            sort_lines: w.sort_lines.unwrap_or(false),
            stderr: w.stderr.unwrap_or(false),
            pin: w.pin.unwrap_or(true),
            start: shared.start,
            cargo: shared.cargo,
            metric: shared.metric.clone(),
            line: shared.line,
        })
    }

    /// `writes = [...]`: each an existing place (relative to the spec's folder), absolute.
    fn writes(
        &self,
        w: &RawWorkload,
        ex: &Expander,
        used: &mut [bool],
        root: &Path,
    ) -> Result<Vec<PathBuf>, SpecError> {
        let mut writes = Vec::new();
        for entry in w.writes.iter().flatten() {
            let p = clean_path(&root.join(ex.expand(entry, used)?));
            if entry.get_ref().is_empty() || !p.exists() {
                return Err(self.at(
                    entry,
                    format!("`writes` names {}, which does not exist", p.display()),
                    Some("create the folder first (the kernel confines a workload to places that exist), or remove the entry".into()),
                ));
            }
            writes.push(p);
        }
        Ok(writes)
    }

    /// `env-pass = [...]`: names of variables the workload sees from the caller's environment.
    fn env_pass(&self, w: &RawWorkload, first: bool) -> Result<Vec<String>, SpecError> {
        let mut names = Vec::new();
        for name in w.env_pass.iter().flatten() {
            if first && (name.get_ref().is_empty() || name.get_ref().contains(['=', '\0'])) {
                return Err(self.at(
                    name,
                    format!(
                        "invalid environment variable name \"{}\" in `env-pass`",
                        name.get_ref().escape_debug()
                    ),
                    Some("names must be non-empty and contain no '=' or NUL".into()),
                ));
            }
            names.push(name.get_ref().clone());
        }
        Ok(names)
    }

    /// `path` (from the key `at`), cleaned: an existing folder (`dir`) — a `cwd` —, or an
    /// existing file — a `stdin`.
    fn existing(
        &self,
        at: &Spanned<String>,
        path: &Path,
        dir: bool,
        root: &Path,
    ) -> Result<PathBuf, SpecError> {
        let p = clean_path(path);
        let (ok, key, kind, create) = match dir {
            true => (p.is_dir(), "cwd", "a directory", "create the directory"),
            false => (p.is_file(), "stdin file", "a file", "create it"),
        };
        if ok {
            return Ok(p);
        }
        let what = if p.exists() {
            format!("is not {kind}")
        } else {
            "does not exist".to_string()
        };
        Err(self.at(
            at,
            format!("{key} {} {what}", p.display()),
            Some(format!(
                "{create} or correct the path (relative paths are relative to {})",
                root.display()
            )),
        ))
    }

    /// A declared output file must be a relative path inside the workload's cwd: each run
    /// gets a private copy of the cwd, and a path outside it would be written in the
    /// user's tree.
    fn output_file(&self, f: &Spanned<String>, p: &Path, cwd: &Path) -> Result<(), SpecError> {
        if p.is_absolute() {
            let fix = match p.strip_prefix(cwd) {
                Ok(rel) if !rel.as_os_str().is_empty() => format!(
                    "write files = [{}] (paths in `files` are relative to the workload's cwd {})",
                    crate::util::toml_string(&rel.to_string_lossy()),
                    cwd.display()
                ),
                _ => format!(
                    "write the path relative to the workload's cwd {}, or set `cwd` to a folder that holds the file",
                    cwd.display()
                ),
            };
            return Err(self.at(
                f,
                format!(
                    "output file {} is an absolute path; `files` must be relative to the workload's cwd",
                    p.display()
                ),
                Some(fix),
            ));
        }
        let mut depth: i32 = 0;
        for c in p.components() {
            match c {
                std::path::Component::ParentDir => depth -= 1,
                std::path::Component::Normal(_) => depth += 1,
                _ => {}
            }
            if depth < 0 {
                return Err(self.at(
                    f,
                    format!(
                        "output file {} is outside the workload's cwd {}",
                        p.display(),
                        cwd.display()
                    ),
                    Some("each run gets a private copy of the cwd, so `files` must stay inside it: set `cwd` to a folder that holds the file and write the path from there".into()),
                ));
            }
        }
        if depth == 0 {
            return Err(self.at(
                f,
                format!(
                    "output file {} names no file: it is the workload's cwd itself",
                    crate::util::toml_string(&p.to_string_lossy())
                ),
                Some("name the file the workload writes, relative to its cwd (e.g. files = [\"out.txt\"]), or remove the entry".into()),
            ));
        }
        Ok(())
    }
}

/// `{key}` in the name takes the combination's value; keys the name does not mention are
/// appended as `[k=v,…]`, so every expanded name stays unique and readable.
fn expanded_name(name: &str, matrix: &[MatrixKey], combo: &[usize]) -> String {
    let mut expanded = name.to_string();
    let mut parts: Vec<String> = Vec::new();
    for (k, &j) in matrix.iter().zip(combo) {
        let placeholder = format!("{{{}}}", k.key.get_ref());
        if expanded.contains(&placeholder) {
            expanded = expanded.replace(&placeholder, &k.values[j].0);
        } else {
            parts.push(format!("{}={}", k.key.get_ref(), k.values[j].0));
        }
    }
    if parts.is_empty() {
        expanded
    } else {
        format!("{expanded}[{}]", parts.join(","))
    }
}
