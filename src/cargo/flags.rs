//! The command line's cargo flags (`-j`, `--locked`, `--frozen`, `--offline`, `--config`),
//! set once per process and carried by every cargo command line `cargo` builds.

/// The flags every cargo command line of this process carries, set once from the command
/// line (`set_flags`): `--config` in the command line itself, so it is part of what a
/// build's reuse key and printed command hold; `-j`, `--locked`, `--frozen`, `--offline`
/// added when cargo is started (`command`) and given to `cargo metadata`, since they do
/// not change what is built.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Flags {
    pub jobs: Option<usize>,
    pub locked: bool,
    pub frozen: bool,
    pub offline: bool,
    pub config: Vec<String>,
}

static FLAGS: std::sync::RwLock<Option<Flags>> = std::sync::RwLock::new(None);

/// Set the flags every later cargo command carries (the command line's).
pub(crate) fn set_flags(flags: Flags) {
    *FLAGS.write().unwrap_or_else(|e| e.into_inner()) = Some(flags);
}

/// The command line's `--config` values (cargo's own config layer above every file).
pub(crate) fn cli_config() -> Vec<String> {
    flags().config
}

pub(super) fn flags() -> Flags {
    FLAGS
        .read()
        .unwrap_or_else(|e| e.into_inner())
        .clone()
        .unwrap_or_default()
}

impl Flags {
    /// `--config` for each value, in order.
    pub(super) fn config_args(&self) -> Vec<String> {
        (self.config.iter())
            .flat_map(|c| ["--config".to_string(), c.clone()])
            .collect()
    }

    /// `--locked`, `--frozen`, `--offline` as given.
    pub(super) fn network_args(&self) -> Vec<String> {
        [
            (self.locked, "--locked"),
            (self.frozen, "--frozen"),
            (self.offline, "--offline"),
        ]
        .iter()
        .filter(|(on, _)| *on)
        .map(|(_, f)| f.to_string())
        .collect()
    }

    /// What `command` adds after cargo's subcommand: the network flags, and `-j N` unless
    /// cargo joins a jobserver (which then decides; cargo would warn about `-j`).
    /// `nextest` spells cargo's `-j` `--build-jobs`.
    pub(super) fn spawn_args(&self, nextest: bool, in_jobserver: bool) -> Vec<String> {
        let mut v = self.network_args();
        if let Some(n) = self.jobs.filter(|_| !in_jobserver) {
            v.push(if nextest { "--build-jobs" } else { "--jobs" }.into());
            v.push(n.to_string());
        }
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jobs_follow_the_subcommand_unless_a_jobserver_decides() {
        let f = Flags {
            jobs: Some(3),
            locked: true,
            offline: true,
            config: vec!["net.retry=5".into()],
            ..Flags::default()
        };
        assert_eq!(
            f.spawn_args(false, false),
            ["--locked", "--offline", "--jobs", "3"]
        );
        assert_eq!(
            f.spawn_args(true, false),
            ["--locked", "--offline", "--build-jobs", "3"]
        );
        assert_eq!(f.spawn_args(false, true), ["--locked", "--offline"]);
        assert_eq!(f.config_args(), ["--config", "net.retry=5"]);
    }
}
