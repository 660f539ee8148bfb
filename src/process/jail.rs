//! Where runs of the user's code may write, and what they see of the environment: a
//! [`Jail`] is one folder (a run's folder, or a command's temporary one) holding a private
//! home and temporary folder. Every workload command is made confined to it
//! ([`Jail::confine`]): the kernel refuses writes anywhere but beneath the folder, the
//! places the workload declares (`writes`) and the device files programs write
//! ([`DEVICES`]); its environment is built from nothing ([`Jail::environment`]); and what it
//! leaves running is killed when it ends (its step's `sys::confine::STEP_VAR`).

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use crate::sys::confine::{self, Confinement};

/// The device files a confined program may write (besides its folder): the sinks, the
/// sources of zeros and randomness, and its terminal.
pub(crate) const DEVICES: &[&str] = &[
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
    "/dev/tty",
    "/dev/ptmx",
    "/dev/pts",
];

/// The variables of the caller's environment every workload sees, as they are: where
/// programs and their shared libraries are found, the locale, the time zone and the terminal. Any other only when its
/// workload names it (`env-pass`). Their values are keyed ([`passed`]).
pub(crate) const PASS_THROUGH: &[&str] = &[
    "PATH",
    "LD_LIBRARY_PATH",
    "LANG",
    "LANGUAGE",
    "TZ",
    "TERM",
    "COLORTERM",
    "NO_COLOR",
    "USER",
    "LOGNAME",
    "SHELL",
];

/// The values a workload sees of the caller's environment: [`PASS_THROUGH`], every `LC_*`,
/// and the names given, each as it is now (unset ones left out), sorted by name.
pub(crate) fn passed(names: &[String]) -> Vec<(String, OsString)> {
    let wanted =
        |k: &str| PASS_THROUGH.contains(&k) || k.starts_with("LC_") || names.iter().any(|n| n == k);
    let mut seen: Vec<(String, OsString)> = std::env::vars_os()
        .filter_map(|(k, v)| Some((k.into_string().ok()?, v)))
        .filter(|(k, _)| wanted(k))
        .collect();
    seen.sort();
    seen
}

/// A folder runs of the user's code may write beneath.
#[derive(Debug)]
pub(crate) struct Jail {
    folder: PathBuf,
    home: PathBuf,
    tmp: PathBuf,
    /// The confinement of each set of extra places asked for (none: the folder's alone).
    made: Mutex<BTreeMap<Vec<PathBuf>, Option<Confinement>>>,
}

impl Jail {
    /// The jail of `folder`, with its `home/` and `tmp/` (made when first asked for).
    pub(crate) fn new(folder: &Path) -> Jail {
        Jail {
            folder: folder.to_path_buf(),
            home: folder.join("home"),
            tmp: folder.join("tmp"),
            made: Mutex::new(BTreeMap::new()),
        }
    }

    /// The confinement letting a process write beneath the folder, `extra` and the
    /// [`DEVICES`]; `None` where the kernel offers none. Made once per `extra`; a place that
    /// cannot be opened leaves the process without it (stricter, never looser).
    pub(crate) fn confinement(&self, extra: &[PathBuf]) -> Option<Confinement> {
        let mut made = self.made.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(c) = made.get(extra) {
            return c.clone();
        }
        // Failing, the run's own writes fail next, naming the folder.
        let _ = std::fs::create_dir_all(&self.home);
        let _ = std::fs::create_dir_all(&self.tmp);
        let mut places = vec![self.folder.clone()];
        places.extend(DEVICES.iter().map(PathBuf::from));
        let base = places.clone();
        places.extend(extra.iter().cloned());
        let c = Confinement::new(&places)
            .or_else(|_| Confinement::new(&base))
            .ok()
            .flatten();
        made.insert(extra.to_vec(), c.clone());
        c
    }

    /// The environment a workload in `cwd` sees: what [`passed`] gives, a private `HOME`
    /// and `TMPDIR`, `PWD` its cwd (never the caller's, nor `OLDPWD`), and git stopped at
    /// the folder (`GIT_CEILING_DIRECTORIES`: a copy of the project never finds its `.git`).
    pub(crate) fn environment(&self, cwd: &Path, pass: &[String]) -> Vec<(OsString, OsString)> {
        let mut env: Vec<(OsString, OsString)> = passed(pass)
            .into_iter()
            .map(|(k, v)| (k.into(), v))
            .collect();
        let own = [
            ("HOME", self.home.as_os_str()),
            ("TMPDIR", self.tmp.as_os_str()),
            ("PWD", cwd.as_os_str()),
            ("GIT_CEILING_DIRECTORIES", self.folder.as_os_str()),
        ];
        for (k, v) in own {
            env.retain(|(name, _)| name != k);
            env.push((k.into(), v.to_owned()));
        }
        env
    }

    /// Make `cmd` (a run of the user's code in `cwd`, its own variables already in `env`)
    /// run in this jail: its environment built from nothing, confined, its step named.
    pub(crate) fn confine(
        &self,
        mut cmd: super::Command,
        cwd: &Path,
        pass: &[String],
        extra: &[PathBuf],
    ) -> super::Command {
        let own = std::mem::take(&mut cmd.env);
        cmd.env = self.environment(cwd, pass);
        cmd.env.extend(own);
        cmd.env_clear = true;
        cmd.confine = self.confinement(extra);
        cmd.step = Some(confine::step_value());
        cmd
    }
}

/// What to add to a failed confined run's message when its stderr says a write was refused
/// (`Permission denied`, `Operation not permitted`, EACCES): the kernel's confinement, and
/// the fix. `None` without Landlock, or when nothing was refused.
pub(crate) fn refused_hint(stderr: &[u8]) -> Option<&'static str> {
    let landlock = matches!(confine::protection(), confine::Protection::Landlock { .. });
    let text = String::from_utf8_lossy(stderr);
    let refused = [
        "Permission denied",
        "Operation not permitted",
        "os error 13",
        "EACCES",
    ]
    .iter()
    .any(|s| text.contains(s));
    (landlock && refused).then_some(
        "  a write may have been refused by the confinement (Landlock): a workload may write only beneath the run folder (its private copy with `files`, its private $HOME and $TMPDIR), /dev/null and the like, and the places it declares\n  fix: declare what it writes outside: `files = [\"out.txt\"]` for outputs in its cwd, `writes = [\"/path/to/folder\"]` for any other place",
    )
}
