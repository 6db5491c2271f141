//! The type checker: Astral's ty, as pydantic's `monty-type-checking`
//! embeds it (ty's engine on the `ty_python_semantic` our ruff crates are,
//! monty's trimmed typeshed), kept warm.
//!
//! A fresh checker spends ~20 ms loading typeshed's builtins (more for each
//! module a script imports first); a warm one checks a short script in
//! well under a millisecond, because ty's database (salsa) keeps what it
//! inferred of the stubs and the modules until their text changes. So
//! checkers are reused: [`Pool`] keeps a few idle ones, each with the stubs
//! it last checked against, and a check takes one that saw the same stubs.

use std::sync::Mutex;

use monty_type_checking::{SourceFile, TypeChecker};
use monty_types::{TypeCheckingConfig, TypeCheckingFormat};
use serde::Deserialize;

/// Idle checkers kept; a busier engine makes more and drops the extra.
const IDLE_CHECKERS: usize = 4;

/// What the stubs are called in the checker's virtual project (the script
/// star-imports them).
const STUBS_PATH: &str = "chainbox_tools.pyi";

/// The script's name there.
const SCRIPT_PATH: &str = "chain.py";

/// One diagnostic as ty reports it, 1-based line and column (characters).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct TyDiagnostic {
    /// The rule (`invalid-argument-type`).
    pub rule: String,
    /// What it says.
    pub message: String,
    /// Where it starts.
    pub start: (u32, u32),
}

/// Why a check could not be made (the chain then runs unchecked, with a
/// warning saying so).
#[derive(Debug, thiserror::Error)]
pub(super) enum TyError {
    /// ty failed (an internal error, or a panic caught).
    #[error("the type checker failed: {0}")]
    Failed(String),
    /// Its report was not the JSON expected.
    #[error("the type checker's report could not be read: {0}")]
    Report(#[from] serde_json::Error),
}

/// Warm checkers, shared by an engine's chains.
#[derive(Default)]
pub(super) struct Pool {
    /// Idle checkers, each with the digest of the stubs it last read; the
    /// most recently used last.
    idle: Mutex<Vec<([u8; 32], TypeChecker)>>,
}

impl Pool {
    /// ty's diagnostics of `script` with `stubs` star-imported
    /// (`stubs_digest` names them).
    pub(super) fn check(
        &self,
        stubs: &str,
        stubs_digest: [u8; 32],
        script: &str,
    ) -> Result<Vec<TyDiagnostic>, TyError> {
        let mut checker = self.take(stubs_digest);
        let config = TypeCheckingConfig {
            format: TypeCheckingFormat::Json,
            color: false,
        };
        // ty is hostile input's first reader here: a panic in it loses
        // the checker (its database may be half-updated), never the chain.
        let report = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            checker
                .run(
                    &SourceFile::new(script, SCRIPT_PATH),
                    Some(&SourceFile::new(stubs, STUBS_PATH)),
                    config,
                )
                .map(|found| found.map(|diagnostics| diagnostics.to_string()))
        }));
        let report = match report {
            Ok(Ok(report)) => report,
            Ok(Err(e)) => return Err(TyError::Failed(e)),
            Err(panic) => return Err(TyError::Failed(panic_message(&*panic))),
        };
        self.put_back(stubs_digest, checker);
        match report {
            None => Ok(Vec::new()),
            Some(json) => parse_report(&json),
        }
    }

    /// An idle checker that read these stubs last, else the least recently
    /// used one, else a new one.
    fn take(&self, stubs_digest: [u8; 32]) -> TypeChecker {
        let mut idle = self.idle.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let found = idle
            .iter()
            .rposition(|(digest, _)| *digest == stubs_digest)
            .or_else(|| (!idle.is_empty()).then_some(0));
        match found {
            Some(at) => idle.remove(at).1,
            None => TypeChecker::default(),
        }
    }

    fn put_back(&self, stubs_digest: [u8; 32], checker: TypeChecker) {
        let mut idle = self.idle.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        idle.push((stubs_digest, checker));
        if idle.len() > IDLE_CHECKERS {
            idle.remove(0);
        }
    }
}

/// ty's JSON report (ruff's `--output-format json`): an array of these.
#[derive(Deserialize)]
struct Reported {
    code: Option<String>,
    message: String,
    location: Option<Location>,
}

#[derive(Deserialize)]
struct Location {
    row: u32,
    column: u32,
}

fn parse_report(json: &str) -> Result<Vec<TyDiagnostic>, TyError> {
    let reported: Vec<Reported> = serde_json::from_str(json)?;
    Ok(reported
        .into_iter()
        .map(|d| TyDiagnostic {
            rule: d.code.unwrap_or_else(|| "syntax".to_owned()),
            message: d.message,
            start: d.location.map_or((1, 1), |l| (l.row, l.column)),
        })
        .collect())
}

fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic".to_owned())
}
