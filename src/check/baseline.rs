//! Saved baselines (`check --save-baseline NAME`, `check --baseline NAME|FILE`): per eval
//! workload the new build's time per run (every run), user+sys time and peak RSS, and the
//! binary's size — in `target/optimize/baselines/<NAME>/baseline.json`, with the binary
//! kept beside it (`bin`) so a later check can still run old and new interleaved. When the
//! binary is gone or its bytes changed, only the statistics can be compared: an unpaired
//! comparison ([`unpaired`]), which the report says is weaker.
//!
//! Must not: measure or decide (it stores and compares numbers).

use std::path::{Path, PathBuf};

use anyhow::{bail, Context as _};
use serde::{Deserialize, Serialize};

use super::gate::Mean;
use super::report::Ratio;
use crate::bench::stats::{mean, std_dev};

/// The file a baseline folder holds.
pub(crate) const FILE: &str = "baseline.json";
/// The kept binary, beside it.
const BIN: &str = "bin";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Saved {
    pub schema: u32,
    pub kind: String,
    pub name: String,
    pub tool_version: String,
    /// When it was saved (RFC 3339, UTC).
    pub created: String,
    /// The commit checked out, and whether the working tree differed from it.
    pub commit: Option<String>,
    pub dirty: bool,
    #[serde(rename = "crate")]
    pub crate_name: String,
    pub bin: String,
    /// CPU model, logical CPUs and kernel of the machine it was measured on.
    pub machine: String,
    pub binary_sha256: String,
    pub binary_size: u64,
    pub workloads: Vec<SavedWorkload>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct SavedWorkload {
    pub name: String,
    /// Wall time of every measured run, in seconds.
    pub wall_secs: Vec<f64>,
    pub cpu_time: Mean,
    pub peak_rss: Mean,
}

impl SavedWorkload {
    pub(crate) fn time(&self) -> Mean {
        Mean::of(&self.wall_secs)
    }
}

/// A baseline read back, and its binary when it is still the one measured.
pub(crate) struct Loaded {
    pub saved: Saved,
    pub path: PathBuf,
    /// The kept binary, or why it cannot be used.
    pub binary: Result<PathBuf, String>,
}

/// `target/optimize/baselines/<name>`.
pub(crate) fn dir(optimize_dir: &Path, name: &str) -> PathBuf {
    optimize_dir.join("baselines").join(name)
}

/// A baseline name: letters, digits, `-`, `_`, `.` (it names a folder).
pub(crate) fn check_name(name: &str) -> anyhow::Result<()> {
    let ok = !name.is_empty()
        && !name.starts_with('.')
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c));
    if !ok {
        bail!("--save-baseline `{name}`: not a usable baseline name\n  fix: use letters, digits, `-`, `_` and `.` (e.g. `main`)");
    }
    Ok(())
}

/// Write `saved` and a copy of `binary` into the baseline's folder (each atomically);
/// returns the file written.
pub(crate) fn save(optimize_dir: &Path, saved: &Saved, binary: &Path) -> anyhow::Result<PathBuf> {
    let d = dir(optimize_dir, &saved.name);
    std::fs::create_dir_all(&d).map_err(|e| crate::util::io_error(e, "cannot create", &d))?;
    if let Err(e) = crate::util::atomic::copy(binary, &d.join(BIN)) {
        return Err(crate::util::io_error(e, "cannot keep the binary in", &d).into());
    }
    let path = d.join(FILE);
    let json = serde_json::to_string_pretty(saved)? + "\n";
    crate::util::atomic::write(&path, json.as_bytes())?;
    Ok(path)
}

/// `--baseline NAME|FILE`: a name saved under `target/optimize/baselines/`, or a path to a
/// baseline.json (a folder holding one works too).
pub(crate) fn load(optimize_dir: &Path, arg: &str) -> anyhow::Result<Loaded> {
    let as_path = Path::new(arg);
    let path = if arg.contains('/') || arg.ends_with(".json") || as_path.is_file() {
        if as_path.is_dir() {
            as_path.join(FILE)
        } else {
            as_path.to_path_buf()
        }
    } else {
        dir(optimize_dir, arg).join(FILE)
    };
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) => bail!(
            "--baseline {arg}: cannot read {}: {e}\n  fix: save one first with `cargo optimize check --save-baseline {arg}` on the build to compare with; saved here: {}",
            path.display(),
            names(optimize_dir)
        ),
    };
    let saved: Saved = serde_json::from_str(&text)
        .with_context(|| format!("--baseline {arg}: {} is not a saved baseline\n  fix: save it again with `cargo optimize check --save-baseline NAME`", path.display()))?;
    let bin = path.parent().unwrap_or(Path::new(".")).join(BIN);
    let binary = match crate::store::file_sha256(&bin) {
        Ok(h) if h == saved.binary_sha256 => Ok(bin),
        Ok(_) => Err(format!(
            "the binary kept with it ({}) is not the one that was measured (its bytes changed)",
            bin.display()
        )),
        Err(e) => Err(format!(
            "the binary kept with it ({}) cannot be read: {e}",
            bin.display()
        )),
    };
    Ok(Loaded {
        saved,
        path,
        binary,
    })
}

/// The baselines saved under `optimize_dir`, for messages.
fn names(optimize_dir: &Path) -> String {
    let mut v: Vec<String> = std::fs::read_dir(optimize_dir.join("baselines"))
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.path().join(FILE).is_file())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    if v.is_empty() {
        "(none)".into()
    } else {
        v.join(", ")
    }
}

/// The ratio of mean times new/old from two independent samples (no pairing): the log of
/// the ratio of means with a delta-method standard error and Welch–Satterthwaite degrees
/// of freedom, a 95 % interval, and the verdict with `margin`.
pub(crate) fn unpaired(new: &[f64], old: &[f64], margin: f64) -> Ratio {
    let (mn, mo) = (mean(new), mean(old));
    let (nn, no) = (new.len() as f64, old.len() as f64);
    // Relative variances of the two means.
    let vn = (std_dev(new) / mn).powi(2) / nn;
    let vo = (std_dev(old) / mo).powi(2) / no;
    let se = (vn + vo).sqrt();
    let df = (vn + vo).powi(2) / (vn.powi(2) / (nn - 1.0) + vo.powi(2) / (no - 1.0));
    let computable = new.len() >= 2 && old.len() >= 2 && se.is_finite();
    let log = crate::bench::stats::LogEstimate {
        mean: (mn / mo).ln(),
        se: if computable { se } else { f64::INFINITY },
        df: df.max(1.0),
        n: new.len(),
    };
    Ratio {
        estimate: crate::bench::Estimate::from_log(&log, 0.95, margin),
        n: new.len() as u32,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::Verdict;

    #[test]
    fn unpaired_ratio_of_means_with_a_welch_interval() {
        let old = [10.0, 10.2, 9.8, 10.1, 9.9];
        let new = [12.0, 12.2, 11.8, 12.1, 11.9];
        let r = unpaired(&new, &old, 0.05);
        assert!((r.ratio - 1.2).abs() < 1e-9, "{r:?}");
        assert!(
            r.ci_low > 1.15 && r.ci_high < 1.25 && r.ci_low < 1.2,
            "{r:?}"
        );
        assert_eq!(r.verdict, Verdict::Slower);
        assert_eq!(r.n, 5);
        let same = unpaired(&old, &old, 0.05);
        assert!((same.ratio - 1.0).abs() < 1e-12);
        assert_eq!(same.verdict, Verdict::Equivalent);
        // One run on a side: no interval.
        assert!(unpaired(&[1.0], &old, 0.05).ci_high.is_infinite());
    }

    #[test]
    fn saved_and_loaded_with_its_binary_checked() {
        let d = tempfile::tempdir().unwrap();
        let bin = d.path().join("prog");
        std::fs::write(&bin, b"binary").unwrap();
        let saved = Saved {
            schema: 1,
            kind: "cargo-optimize-baseline".into(),
            name: "main".into(),
            tool_version: "0".into(),
            created: "2025-01-01T00:00:00Z".into(),
            commit: None,
            dirty: false,
            crate_name: "c".into(),
            bin: "prog".into(),
            machine: "m".into(),
            binary_sha256: crate::store::file_sha256(&bin).unwrap(),
            binary_size: 6,
            workloads: vec![],
        };
        let opt = d.path().join("optimize");
        let path = save(&opt, &saved, &bin).unwrap();
        assert_eq!(path, opt.join("baselines/main/baseline.json"));
        let l = load(&opt, "main").unwrap();
        assert_eq!(l.saved, saved);
        assert_eq!(
            l.binary.as_deref().ok(),
            Some(opt.join("baselines/main/bin").as_path())
        );
        // By path, too; a changed binary is not used for pairing, and says why.
        std::fs::write(opt.join("baselines/main/bin"), b"other").unwrap();
        let l = load(&opt, path.to_str().unwrap()).unwrap();
        assert!(l.binary.unwrap_err().contains("bytes changed"));
        let e = load(&opt, "nope").err().unwrap().to_string();
        assert!(
            e.contains("--save-baseline nope") && e.contains("saved here: main"),
            "{e}"
        );
        assert!(check_name("main-1.2").is_ok());
        assert!(check_name("../x").is_err() && check_name("").is_err());
    }
}
