//! What `apply` prints to build the winner when it is a library a host program loads (the
//! spec's workloads give `command`): a Python extension module's wheel, `maturin build`
//! with the profile (`--release`, or `--profile P`) and the interpreter the workloads run;
//! a plain `cdylib`, `cargo build --lib`. A binary's command is cargo's `build`.
//!
//! Must not: write anything (the profile, the PGO profile and the allocator are written as
//! for a binary).

use crate::cargo::{Project, Workspace};
use crate::cli::GlobalArgs;

/// What the winner is built as.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Builds {
    Binary,
    /// A plain `cdylib`: its file name (`lib<name>.so`).
    Cdylib(String),
    /// A Python extension module: the interpreter the workloads run, and the module.
    Wheel {
        interpreter: String,
        module: String,
    },
}

/// The project `win`'s run optimized: its binary's package, else (no such binary) the
/// library the spec's host program loads; the error of the binary's lookup otherwise.
pub(super) fn project_of(
    g: &GlobalArgs,
    ws: &Workspace,
    package: &str,
    bin: &str,
) -> anyhow::Result<(Project, Builds)> {
    let err = match ws.project(&g.selection, Some(package), Some(bin)) {
        Ok(p) => return Ok((p, Builds::Binary)),
        Err(e) => e,
    };
    let Ok((spec, project)) = crate::pipeline::plan::locate(g) else {
        return Err(err.into());
    };
    let Some(library) = project.library.clone() else {
        return Err(err.into());
    };
    let host = spec.workloads.iter().find_map(|w| w.host.as_ref());
    let builds = match (library.python_module, host) {
        (Some(module), Some(h)) => Builds::Wheel {
            interpreter: h[0].clone(),
            module,
        },
        _ => Builds::Cdylib(library.file),
    };
    Ok((project, builds))
}

impl Builds {
    /// The build command after its environment: `<builder> <args>` with `manifest`,
    /// `profile`, and the target and features arguments as given (each with its space).
    pub(super) fn command(&self, manifest: &str, profile: &str, rest: &str) -> String {
        match self {
            Builds::Binary => {
                format!("cargo build --manifest-path {manifest} --profile {profile}{rest}")
            }
            Builds::Cdylib(_) => {
                format!("cargo build --lib --manifest-path {manifest} --profile {profile}{rest}")
            }
            Builds::Wheel { interpreter, .. } => format!(
                "maturin build {} --manifest-path {manifest} --interpreter {}{rest}",
                crate::cargo::wheel::profile_args(profile).join(" "),
                super::shell_quote(interpreter)
            ),
        }
    }

    /// Where the build puts what ships (`target`: its `--target`).
    pub(super) fn output(&self, target: &str, profile: &str, bin: &str) -> String {
        match self {
            Builds::Binary => format!(
                "the binary: target/{target}/{profile}/{bin} (in cargo's target directory)"
            ),
            Builds::Cdylib(file) => format!(
                "the library: target/{target}/{profile}/{file} (in cargo's target directory)"
            ),
            Builds::Wheel { module, .. } => format!(
                "the wheel: in target/wheels/ (`--out DIR` to choose), with the module `{module}` inside"
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wheel_is_built_by_maturin_and_a_cdylib_by_cargo_build_lib() {
        let wheel = Builds::Wheel {
            interpreter: "python3".into(),
            module: "hotpath".into(),
        };
        assert_eq!(
            wheel.command("/p/Cargo.toml", "release", " --target t"),
            "maturin build --release --manifest-path /p/Cargo.toml --interpreter python3 --target t"
        );
        assert!(wheel
            .command("/p/Cargo.toml", "optimized", "")
            .starts_with("maturin build --profile optimized "));
        assert!(wheel.output("t", "release", "x").contains("target/wheels/"));
        let lib = Builds::Cdylib("libfast.so".into());
        assert_eq!(
            lib.command("/p/Cargo.toml", "optimized", ""),
            "cargo build --lib --manifest-path /p/Cargo.toml --profile optimized"
        );
        assert!(lib
            .output("t", "optimized", "fast")
            .starts_with("the library: target/t/optimized/libfast.so "));
    }
}
