//! Which `-Cllvm-args` options this rustc's LLVM accepts: `rustc -Cllvm-args=--help-hidden`
//! lists every option LLVM registered (`--fp-contract=<value>`, `--enable-no-nans-fp-math`,
//! …) with the values an enumerated option takes. Asked once per toolchain and kept in
//! `cache/toolchain/` under rustc's version, its LLVM's and its sysroot; the fp stage and
//! the plan (a spec's `[stages] fp` entry checked before anything is built) read it.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::Duration;

use super::Rustc;
use crate::process;
use crate::store::Store;

/// LLVM's options: name (without the dashes) → the values an enumerated option takes
/// (empty for a flag or a free-form value).
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub(crate) struct LlvmOptions {
    pub options: BTreeMap<String, BTreeSet<String>>,
}

impl LlvmOptions {
    /// Whether `flag` (`--name` or `--name=value`) is an option this LLVM accepts, with an
    /// allowed value when the option lists its values. `Err`: why not, for messages.
    pub(crate) fn accepts(&self, flag: &str) -> Result<(), String> {
        let body = flag.trim_start_matches('-');
        let (name, value) = match body.split_once('=') {
            Some((n, v)) => (n, Some(v)),
            None => (body, None),
        };
        let Some(values) = self.options.get(name) else {
            return Err(format!("this rustc's LLVM has no option `--{name}` (`rustc -Cllvm-args=--help-hidden` does not list it)"));
        };
        match value {
            Some(v) if !values.is_empty() && !values.contains(v) => Err(format!(
                "LLVM's `--{name}` takes {}, not `{v}`",
                values.iter().cloned().collect::<Vec<_>>().join(", ")
            )),
            _ => Ok(()),
        }
    }
}

/// Parse `--help-hidden`: option lines are `  --name=<value> - text` or `  --name - text`;
/// the values of an enumerated option follow as `    =value - text`.
pub(crate) fn parse_help(text: &str) -> LlvmOptions {
    let mut options: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut current: Option<String> = None;
    for line in text.lines() {
        let t = line.trim_start();
        let indent = line.len() - t.len();
        if let Some(rest) = t.strip_prefix("--") {
            let name: String = rest
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
                .collect();
            if !name.is_empty() {
                options.entry(name.clone()).or_default();
                current = Some(name);
                continue;
            }
        }
        match (t.strip_prefix('='), &current) {
            (Some(v), Some(name)) if indent > 2 => {
                let value: String = v.chars().take_while(|c| !c.is_whitespace()).collect();
                if !value.is_empty() {
                    options.entry(name.clone()).or_default().insert(value);
                }
            }
            _ if !t.is_empty() && indent <= 2 => current = None,
            _ => {}
        }
    }
    LlvmOptions { options }
}

/// This toolchain's LLVM options, from `cache/toolchain/` or asked now (bounded: 60 s).
pub(crate) fn llvm_options(rustc: &Rustc, optimize_dir: &Path) -> Result<LlvmOptions, String> {
    let store = Store::new(optimize_dir, "toolchain");
    let key = crate::store::sha256_hex(
        format!(
            "llvm-options\n{}\n{}\n{}",
            rustc.version,
            rustc.llvm_version,
            rustc.sysroot.display()
        )
        .as_bytes(),
    );
    if let Some(kept) = store.get::<LlvmOptions>(&key) {
        return Ok(kept);
    }
    let cmd = process::Command::new(super::rustc_program())
        .args(["-Cllvm-args=--help-hidden"])
        .timeout(Duration::from_secs(60));
    let out = process::run(&cmd).map_err(|e| e.to_string())?;
    if !out.status.success() {
        return Err(format!(
            "`rustc -Cllvm-args=--help-hidden` failed ({}): {}",
            out.status,
            out.stderr_tail(5)
        ));
    }
    let parsed = parse_help(&String::from_utf8_lossy(&out.stdout));
    if parsed.options.is_empty() {
        return Err("`rustc -Cllvm-args=--help-hidden` listed no option".into());
    }
    store.put(&key, &parsed);
    Ok(parsed)
}

#[cfg(test)]
mod tests {
    use super::*;

    const HELP: &str = "USAGE: rustc [options]\n\nOPTIONS:\n\nGeneral options:\n\n  --denormal-fp-math=<value>        - Select which denormal numbers\n    =ieee                           -   IEEE 754 denormal numbers\n    =positive-zero                  -   denormals are flushed to positive zero\n  --enable-no-nans-fp-math          - Enable FP math optimizations that assume no NaNs\n  --fp-contract=<value>             - Enable aggressive formation of fused FP ops\n    =fast                           -   Fuse FP ops whenever profitable\n    =on                             -   Only fuse 'blessed' FP ops.\n  --x86-asm-syntax=<value>          - asm syntax\n";

    #[test]
    fn options_and_their_values_from_help_hidden() {
        let o = parse_help(HELP);
        assert!(o.accepts("--enable-no-nans-fp-math").is_ok());
        assert!(o.accepts("--fp-contract=fast").is_ok());
        assert!(o.accepts("--denormal-fp-math=positive-zero").is_ok());
        let e = o.accepts("--fp-contract=sometimes").unwrap_err();
        assert_eq!(e, "LLVM's `--fp-contract` takes fast, on, not `sometimes`");
        let e = o.accepts("--enable-unsafe-fp-math").unwrap_err();
        assert!(e.contains("no option `--enable-unsafe-fp-math`"), "{e}");
        // A free-form value is not checked.
        assert!(o.accepts("--x86-asm-syntax=intel").is_ok());
    }

    #[test]
    fn this_rustc_has_the_fp_options() {
        let Ok(rustc) = crate::toolchain::rustc() else {
            return;
        };
        let dir = tempfile::tempdir().unwrap();
        let o = llvm_options(&rustc, dir.path()).unwrap();
        // The fp stage's defaults (stage::fp::DEFAULT_FLAGS; a lower layer cannot name it).
        for f in [
            "--fp-contract=fast",
            "--enable-no-nans-fp-math",
            "--enable-no-infs-fp-math",
            "--enable-no-signed-zeros-fp-math",
            "--denormal-fp-math=positive-zero",
        ] {
            assert!(o.accepts(f).is_ok(), "{f}: {:?}", o.accepts(f));
        }
        // Kept: the second ask reads the cache.
        assert!(
            dir.path()
                .join("cache/toolchain")
                .read_dir()
                .unwrap()
                .count()
                == 1
        );
        assert_eq!(llvm_options(&rustc, dir.path()).unwrap(), o);
    }
}
