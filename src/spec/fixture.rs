//! Test support shared by the spec modules' tests: a temporary spec folder and a minimal
//! workload.

use std::path::PathBuf;

use super::{parse, Spec, SpecError, SPEC_FILE};

/// A spec folder with `optimize.toml` parsed from `text`.
pub(super) struct Fixture {
    pub(super) dir: tempfile::TempDir,
}

impl Fixture {
    pub(super) fn new() -> Self {
        Fixture {
            dir: tempfile::tempdir().expect("tempdir"),
        }
    }
    pub(super) fn root(&self) -> PathBuf {
        self.dir.path().canonicalize().expect("canonical tempdir")
    }
    pub(super) fn file(&self, rel: &str) -> PathBuf {
        let p = self.dir.path().join(rel);
        std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
        std::fs::write(&p, "input\n").expect("write");
        p
    }
    pub(super) fn parse(&self, text: &str) -> Result<Spec, SpecError> {
        parse(text, &self.dir.path().join(SPEC_FILE))
    }
    pub(super) fn ok(&self, text: &str) -> Spec {
        match self.parse(text) {
            Ok(s) => s,
            Err(e) => panic!("expected a valid spec, got:\n{e}"),
        }
    }
    /// (line, col, message, fix) of the error `text` must produce.
    pub(super) fn err(&self, text: &str) -> (usize, usize, String, String) {
        match self.parse(text) {
            Ok(_) => panic!("expected an error for:\n{text}"),
            Err(SpecError::Invalid {
                line,
                col,
                message,
                fix,
                ..
            }) => (line, col, message, fix.unwrap_or_default()),
            Err(e) => panic!("expected SpecError::Invalid, got {e:?}"),
        }
    }
}

pub(super) const ONE: &str = "[[workload]]\nname = \"w\"\n";
