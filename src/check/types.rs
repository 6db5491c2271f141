//! The type checker: Astral's ty (`ty_python_semantic` 0.0.14, the engine
//! pydantic's `monty-type-checking` 1.4.0 embeds, with monty's trimmed
//! typeshed, a few of its generic definitions made simpler: [`super::typeshed`]),
//! kept warm, and **bounded in time**.
//!
//! A fresh checker spends ~20 ms loading typeshed's builtins (more for each
//! module a script imports first); a warm one checks a short script in well
//! under a millisecond, because ty's database (salsa) keeps what it inferred
//! of the stubs and the modules until their text changes. So checkers are
//! reused: [`Pool`] keeps a few idle ones, each with the stubs it last
//! checked against, and a check takes one that saw the same stubs.
//!
//! ty can run for minutes (perhaps for ever) on some plain Python (monty's
//! `test_cases/functools__partial.py` with ty 0.0.14), so every check has a
//! deadline. At the deadline a single shared watchdog thread cancels the
//! check: it sets salsa's per-handle [`salsa::CancellationToken`] *and* a
//! flag of ours that the database's salsa event hook reads. The checking
//! thread then unwinds with a [`salsa::Cancelled`] payload at its next salsa
//! query call (or interning), which [`Pool::check`] catches and reports as
//! [`TyError::TimedOut`]. Nothing keeps running after that: the check ran on
//! the caller's own thread and has unwound, and the watchdog sleeps on a
//! condition variable until the next armed deadline (for ever when none is
//! armed).
//!
//! Why the token alone is not enough: salsa 0.28.2 *ignores* a handle's
//! token while it executes a query with cycle recovery (`execute.rs`,
//! `DisableLocalCancellationGuard`), and nearly all of ty's inference queries
//! have one; the functools.partial blow-up happens inside such a query, so
//! with the token alone the check never stopped (10 minutes, then killed).
//! Our hook unwinds regardless, like a panic in a query, which salsa
//! survives (and the checker is dropped anyway). Latency is not bounded by
//! anything but how often ty calls into salsa: 0.15 to 0.65 s past a 1 s
//! deadline on the two test cases that need it.
//!
//! A cancelled checker is dropped, not reused: salsa 0.28.2 has no public
//! way to clear a handle's token (`ZalsaLocal::uncancel` is `pub(crate)` and
//! never called), so every later query on that handle would unwind at once.
//!
//! Why we do not use `monty_type_checking::TypeChecker`: it owns its salsa
//! database privately, so nobody can take its cancellation token.

use std::{
    collections::BTreeMap,
    panic::{AssertUnwindSafe, catch_unwind},
    sync::{
        Arc, Condvar, Mutex, MutexGuard, OnceLock, PoisonError,
        atomic::{AtomicBool, Ordering},
    },
    time::{Duration, Instant},
};

use ruff_db::{
    Db as _,
    diagnostic::{Diagnostic, DiagnosticId, UnifiedFile},
    file_revision::FileRevision,
    files::{File, system_path_to_file},
    system::{DbWithWritableSystem as _, SystemPath, SystemPathBuf},
};
use salsa::{CancellationToken, Database as _, Setter as _};
use ty_python_semantic::{Db as _, check_file_unwrap};

use self::db::{MemoryDb, SRC_ROOT};

/// Idle checkers kept; a busier engine makes more and drops the extra.
const IDLE_CHECKERS: usize = 4;

/// What the stubs are called in the checker's virtual project (the script
/// star-imports them).
const STUBS_PATH: &str = "chainbox_tools.pyi";

/// The script's name there.
const SCRIPT_PATH: &str = "chain.py";

/// Put before the script, on a line of its own (see [`Checker::run`] for why
/// a line of its own rather than on the script's first line).
const PREFIX: &str = "from chainbox_tools import *\n";

/// One diagnostic as ty reports it, 1-based line and column (characters),
/// both counted in the script as given (not the file ty saw).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct TyDiagnostic {
    /// The rule (`invalid-argument-type`; `invalid-syntax` for syntax errors).
    pub rule: String,
    /// What it says (ty's concise message: headline and primary annotation).
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
    /// The check ran past its deadline and was cancelled.
    #[error("the type checker did not finish within {0:?}")]
    TimedOut(Duration),
}

/// Warm checkers, shared by an engine's chains.
#[derive(Default)]
pub(super) struct Pool {
    /// Idle checkers, the most recently used last.
    idle: Mutex<Vec<Checker>>,
}

impl Pool {
    /// ty's diagnostics of `script` with `stubs` star-imported
    /// (`stubs_digest` names them), or [`TyError::TimedOut`] if ty has not
    /// finished `deadline` after the check starts.
    pub(super) fn check(
        &self,
        stubs: &str,
        stubs_digest: [u8; 32],
        script: &str,
        deadline: Duration,
    ) -> Result<Vec<TyDiagnostic>, TyError> {
        let mut checker = self.take(stubs_digest);
        // The token belongs to this handle (`Storage`'s `ZalsaLocal`), which
        // is the one that will run the queries, on this thread: a token from
        // another handle (a clone of the storage) would cancel nothing here.
        let token = checker.db.cancellation_token();
        let stop = Stop {
            token: token.clone(),
            expired: Arc::clone(&checker.expired),
        };
        let outcome = {
            let _armed = Watchdog::arm(deadline, stop)?;
            // ty is hostile input's first reader here: a panic in it loses the
            // checker (its database may be half-updated), never the caller.
            catch_unwind(AssertUnwindSafe(|| checker.run(stubs, stubs_digest, script)))
            // `_armed` is dropped here: the watchdog forgets the deadline.
        };
        // The watchdog may have fired just after ty finished (then the result
        // stands), but the token stays set for good, so the checker goes.
        let reusable = !token.is_cancelled() && !checker.expired.load(Ordering::Relaxed);
        let result = match outcome {
            Ok(Ok(diagnostics)) => Ok(diagnostics),
            Ok(Err(error)) => return Err(TyError::Failed(error)),
            Err(payload) => {
                return Err(match payload.downcast::<salsa::Cancelled>() {
                    // Only our watchdog cancels this handle (a single handle:
                    // no pending write from another one can cancel it).
                    Ok(_) => TyError::TimedOut(deadline),
                    Err(panic) => TyError::Failed(panic_message(&*panic)),
                });
            }
        };
        if reusable {
            self.put_back(checker);
        }
        result
    }

    /// An idle checker that read these stubs last, else the least recently
    /// used one, else a new one.
    fn take(&self, stubs_digest: [u8; 32]) -> Checker {
        let mut idle = lock(&self.idle);
        let found = idle
            .iter()
            .rposition(|checker| checker.stubs_digest == Some(stubs_digest))
            .or_else(|| (!idle.is_empty()).then_some(0));
        match found {
            Some(at) => idle.remove(at),
            None => Checker::default(),
        }
    }

    fn put_back(&self, checker: Checker) {
        let mut idle = lock(&self.idle);
        idle.push(checker);
        if idle.len() > IDLE_CHECKERS {
            idle.remove(0);
        }
    }
}

/// One ty database with the stubs it holds.
struct Checker {
    db: MemoryDb,
    /// Set by the watchdog with the token; read by `db`'s event hook.
    expired: Arc<AtomicBool>,
    /// The digest of the stubs written in `db` (none yet: `None`).
    stubs_digest: Option<[u8; 32]>,
    /// The last file revision given out (see [`Checker::write`]).
    next_revision: u128,
}

impl Default for Checker {
    fn default() -> Self {
        let expired = Arc::new(AtomicBool::new(false));
        Self {
            db: MemoryDb::new(Arc::clone(&expired)),
            expired,
            stubs_digest: None,
            next_revision: 0,
        }
    }
}

impl Checker {
    /// ty's diagnostics of `script`, with the stubs star-imported.
    ///
    /// The import goes on a line of its own before the script, and spans are
    /// shifted back by its length (as monty does). Putting it on the script's
    /// first line instead (`from chainbox_tools import *; <line 1>`) would
    /// keep line numbers without any arithmetic, but shifts line 1's columns
    /// anyway, and breaks a script whose first line is indented, a
    /// continuation, or a compound statement (`if x: ...` after `;` is a
    /// syntax error). Since we compute line and column ourselves from the
    /// primary span's byte offset, the shift is one subtraction.
    ///
    /// A diagnostic that starts inside the prefix (an error caused by our
    /// import) is dropped; it has no place in the script.
    fn run(&mut self, stubs: &str, stubs_digest: [u8; 32], script: &str) -> Result<Vec<TyDiagnostic>, String> {
        let root = SystemPathBuf::from(SRC_ROOT);
        if self.stubs_digest != Some(stubs_digest) {
            // Forget the old digest first: if this write fails half-way the
            // checker must not claim the new stubs.
            self.stubs_digest = None;
            self.write(&root.join(STUBS_PATH), stubs)?;
            self.stubs_digest = Some(stubs_digest);
        }
        let mut source = String::with_capacity(PREFIX.len() + script.len());
        source.push_str(PREFIX);
        source.push_str(script);
        let file = self.write(&root.join(SCRIPT_PATH), &source)?;

        // `check_file_unwrap` (not `check_types` alone) so that parse errors
        // and unsupported-syntax errors are reported too.
        let diagnostics = check_file_unwrap(&self.db, self.db.program_file(file));

        let prefix_len = PREFIX.len();
        let mut found: Vec<TyDiagnostic> = diagnostics
            .iter()
            .filter(|d| !is_top_level_await(d))
            .filter_map(|d| {
                let start = match d.primary_span() {
                    Some(span) => match (span.file(), span.range()) {
                        (UnifiedFile::Ty(in_file), Some(range)) if *in_file == file => {
                            let at = range.start().to_usize();
                            // In our prefix: not the script's.
                            let in_script = at.checked_sub(prefix_len)?;
                            line_column(script, in_script)
                        }
                        // Elsewhere (the stubs), or no range: the script's start.
                        _ => (1, 1),
                    },
                    None => (1, 1),
                };
                Some(TyDiagnostic {
                    rule: d.secondary_code_or_id().to_owned(),
                    message: d.concise_message().to_string(),
                    start,
                })
            })
            .collect();
        found.sort_by_key(|d| d.start);
        Ok(found)
    }

    /// Write a file and give it (and its directories) a fresh revision.
    ///
    /// `write_file` derives the revision from the memory file system's
    /// mtime, which can repeat for two quick writes (monty met it on wasm,
    /// whose clock ticks once a millisecond): the second would go unseen.
    ///
    /// Its directories get one only when the file is new (module resolution
    /// must see it appear): a directory's new revision invalidates every
    /// module resolved under it, which made each warm check re-resolve the
    /// standard library (2.1 ms a check instead of ~0.2).
    fn write(&mut self, path: &SystemPath, source: &str) -> Result<File, String> {
        let known = self.db.files().try_system(&self.db, path).is_some();
        self.db.write_file(path, source).map_err(|e| e.to_string())?;
        let mut files = Vec::new();
        let mut current = Some(path);
        while let Some(at) = current {
            if let Some(file) = self.db.files().try_system(&self.db, at) {
                files.push(file);
            }
            current = if known { None } else { at.parent() };
        }
        self.next_revision = self.next_revision.wrapping_add(1);
        for file in files {
            file.set_revision(&mut self.db)
                .to(FileRevision::new(self.next_revision));
        }
        system_path_to_file(&self.db, path).map_err(|e| e.to_string())
    }
}

/// The 1-based line and column (in characters) of byte `offset` of `text`,
/// counting lines as ruff does (`\n`, `\r\n` and a lone `\r` each end one).
/// An offset past the end, or inside a character, is taken back to the
/// nearest character boundary before it.
fn line_column(text: &str, offset: usize) -> (u32, u32) {
    let mut end = offset.min(text.len());
    while !text.is_char_boundary(end) {
        end -= 1; // 0 is always a boundary, so this stops
    }
    let (mut line, mut column) = (1u32, 1u32);
    let mut chars = text[..end].chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\n' => (line, column) = (line.saturating_add(1), 1),
            '\r' => {
                if chars.peek() == Some(&'\n') {
                    chars.next();
                }
                (line, column) = (line.saturating_add(1), 1);
            }
            _ => column = column.saturating_add(1),
        }
    }
    (line, column)
}

/// Whether this is the syntax error ty reports for a top-level `await`,
/// which our scripts may use (they run in an async context). As monty does,
/// until <https://github.com/astral-sh/ty/issues/2599> is fixed.
fn is_top_level_await(d: &Diagnostic) -> bool {
    matches!(d.id(), DiagnosticId::InvalidSyntax)
        && matches!(
            d.headline_message(),
            "`await` statement outside of a function" | "`await` outside of an asynchronous function"
        )
}

fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic".to_owned())
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The one thread that cancels checks at their deadlines, for all pools.
///
/// Armed deadlines sit in a map ordered by time; the thread sleeps on a
/// condition variable until the earliest (indefinitely when there is none),
/// cancels whatever is due, and sleeps again. Arming wakes it so it can
/// shorten its sleep; disarming does not (it then wakes once for nothing).
struct Watchdog {
    armed: Mutex<Armed>,
    wake: Condvar,
}

struct Armed {
    /// Deadline and a serial (two checks may share an `Instant`) → what to stop.
    due: BTreeMap<(Instant, u64), Stop>,
    next_serial: u64,
}

static WATCHDOG: Watchdog = Watchdog {
    armed: Mutex::new(Armed {
        due: BTreeMap::new(),
        next_serial: 0,
    }),
    wake: Condvar::new(),
};

/// How to stop one check: salsa's token (seen at every query call) and our
/// flag (seen by the database's event hook, see [`MemoryDb::new`]).
struct Stop {
    token: CancellationToken,
    expired: Arc<AtomicBool>,
}

impl Stop {
    fn fire(&self) {
        self.expired.store(true, Ordering::Relaxed);
        self.token.cancel();
    }
}

/// Disarms its deadline when dropped.
struct ArmedGuard {
    key: (Instant, u64),
}

impl Drop for ArmedGuard {
    fn drop(&mut self) {
        lock(&WATCHDOG.armed).due.remove(&self.key);
    }
}

impl Watchdog {
    /// Cancel `token` `after` from now, unless the guard is dropped first.
    fn arm(after: Duration, stop: Stop) -> Result<ArmedGuard, TyError> {
        static STARTED: OnceLock<Result<(), String>> = OnceLock::new();
        STARTED
            .get_or_init(|| {
                std::thread::Builder::new()
                    .name("ty-watchdog".to_owned())
                    .spawn(|| WATCHDOG.watch())
                    .map(drop)
                    .map_err(|e| e.to_string())
            })
            .clone()
            // Without the watchdog nothing would bound the check: refuse it.
            .map_err(|e| TyError::Failed(format!("no watchdog thread: {e}")))?;
        // A deadline too far to represent is no deadline; a century will do.
        let when = Instant::now()
            .checked_add(after)
            .or_else(|| Instant::now().checked_add(Duration::from_secs(100 * 365 * 86_400)))
            .ok_or_else(|| TyError::Failed("deadline out of range".to_owned()))?;
        let mut armed = lock(&WATCHDOG.armed);
        let key = (when, armed.next_serial);
        armed.next_serial = armed.next_serial.wrapping_add(1);
        armed.due.insert(key, stop);
        drop(armed);
        WATCHDOG.wake.notify_one();
        Ok(ArmedGuard { key })
    }

    fn watch(&self) -> ! {
        let mut armed = lock(&self.armed);
        loop {
            let now = Instant::now();
            while let Some(entry) = armed.due.first_entry() {
                if entry.key().0 > now {
                    break;
                }
                entry.remove().fire();
            }
            armed = match armed.due.first_key_value() {
                None => self.wake.wait(armed).unwrap_or_else(PoisonError::into_inner),
                Some(((when, _), _)) => {
                    let sleep = when.saturating_duration_since(now);
                    self.wake
                        .wait_timeout(armed, sleep)
                        .unwrap_or_else(PoisonError::into_inner)
                        .0
                }
            };
        }
    }
}

/// An in-memory salsa/ty database.
///
/// Adapted from pydantic's `monty-type-checking` 1.4.0 (`src/db.rs`,
/// <https://github.com/pydantic/monty>, MIT licence, © Samuel Colvin and
/// contributors), itself mostly taken from ruff's `ty_python_semantic` test
/// database (MIT). Changes: no monty memory accounting
/// (`allocate_into_baseline`), our patched typeshed ([`super::typeshed`]),
/// the lint registry taken straight from its static.
mod db {
    use std::{
        fmt,
        sync::{
            Arc,
            atomic::{AtomicBool, Ordering},
        },
    };

    use salsa::{Cancelled, Event, EventKind};

    use ruff_db::{
        Db as SourceDb,
        diagnostic::Diagnostic,
        files::{File, FileRootKind, Files},
        system::{DbWithTestSystem, System, SystemPathBuf, TestSystem},
        vendored::VendoredFileSystem,
    };
    use ruff_python_ast::PythonVersion;
    use ty_module_resolver::{Db as ModuleResolverDb, FallibleStrategy, SearchPathSettings};
    use ty_python_core::{
        Db as PythonCoreDb, ProgramFile,
        platform::PythonPlatform,
        program::{Program, ProgramSettings},
    };
    use ty_python_semantic::{
        AnalysisSettings, Db, PythonVersionSource, PythonVersionWithSource, check_file_unwrap, default_lint_registry,
        dependency::DependencyMetadata,
        lint::{LintRegistry, RuleSelection},
    };

    /// The virtual root all files live under.
    pub(super) const SRC_ROOT: &str = "/";

    /// One salsa storage, one handle: never cloned (salsa's setters need the
    /// only handle, and the cancellation token is per handle).
    #[salsa::db]
    pub(super) struct MemoryDb {
        storage: salsa::Storage<Self>,
        files: Files,
        system: TestSystem,
        vendored: VendoredFileSystem,
        rule_selection: Arc<RuleSelection>,
        analysis_settings: Arc<AnalysisSettings>,
        program_settings: ProgramSettings,
    }

    impl fmt::Debug for MemoryDb {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.debug_struct("MemoryDb").finish_non_exhaustive()
        }
    }

    impl MemoryDb {
        /// A database whose checks unwind (as salsa cancellation) once
        /// `expired` is set.
        ///
        /// Why more than salsa's cancellation token: salsa disregards the
        /// token while a query with cycle recovery runs (most of ty's), and
        /// ty 0.0.14 spends minutes inside one on `functools__partial.py`,
        /// recursing in `Type::recursive_type_normalized_impl` through ever
        /// bigger unions of `functools.partial` instances. The hook sees
        /// `WillCheckCancellation` (emitted on every query call, before the
        /// token is read) and the interning events; interning emits its
        /// event after the value is fully inserted, so unwinding there leaves
        /// the interner consistent (the shard lock guard unlocks as it
        /// unwinds). In practice it is `WillCheckCancellation` that fires.
        /// The checker is dropped after any cancellation anyway.
        ///
        /// The payload is salsa's own `Cancelled::Local`, thrown with
        /// `resume_unwind` as salsa throws it (no panic hook, no backtrace),
        /// so every catcher treats it as the cancellation it is.
        pub(super) fn new(expired: Arc<AtomicBool>) -> Self {
            let hook = move |event: Event| {
                if matches!(
                    event.kind,
                    EventKind::DidInternValue { .. }
                        | EventKind::DidReuseInternedValue { .. }
                        | EventKind::DidValidateInternedValue { .. }
                        | EventKind::WillCheckCancellation
                ) && expired.load(Ordering::Relaxed)
                {
                    std::panic::resume_unwind(Box::new(Cancelled::Local));
                }
            };
            let src_root = SystemPathBuf::from(SRC_ROOT);
            let vendored = super::super::typeshed::file_system().clone();
            let mut db = Self {
                storage: salsa::Storage::new(Some(Box::new(hook))),
                system: TestSystem::default(),
                program_settings: ProgramSettings::empty(&vendored),
                vendored,
                files: Files::default(),
                rule_selection: Arc::new(RuleSelection::from_registry(default_lint_registry())),
                analysis_settings: AnalysisSettings::default().into(),
            };
            db.files().try_add_root(&db, &src_root, FileRootKind::Project);
            // Not script-derived: the root and the vendored zip are ours, so
            // this only fails if the build is broken (monty expects too).
            let search_paths = SearchPathSettings::new(vec![src_root])
                .to_search_paths(db.system(), db.vendored(), &FallibleStrategy)
                .expect("vendored typeshed search paths always resolve");
            search_paths.try_register_static_roots(&db);
            db.program_settings = ProgramSettings {
                python_version: PythonVersionWithSource {
                    version: PythonVersion::PY314,
                    source: PythonVersionSource::default(),
                },
                python_platform: PythonPlatform::default(),
                search_paths,
            };
            db
        }
    }

    /// Database access needed to intern the configured program once.
    #[salsa::db]
    trait ProgramDb: Db {
        fn program_settings(&self) -> &ProgramSettings;
    }

    #[salsa::tracked(returns(copy))]
    fn program(db: &dyn ProgramDb) -> Program<'_> {
        Program::from_settings(db, db.program_settings())
    }

    impl DbWithTestSystem for MemoryDb {
        fn test_system(&self) -> &TestSystem {
            &self.system
        }

        fn test_system_mut(&mut self) -> &mut TestSystem {
            &mut self.system
        }
    }

    #[salsa::db]
    impl SourceDb for MemoryDb {
        fn vendored(&self) -> &VendoredFileSystem {
            &self.vendored
        }

        fn system(&self) -> &dyn System {
            &self.system
        }

        fn files(&self) -> &Files {
            &self.files
        }
    }

    #[salsa::db]
    impl PythonCoreDb for MemoryDb {
        fn should_check_file(&self, file: File) -> bool {
            !file.path(self).is_vendored_path()
        }
    }

    #[salsa::db]
    impl Db for MemoryDb {
        fn check_file(&self, file: File) -> Vec<Diagnostic> {
            if self.should_check_file(file) {
                check_file_unwrap(self, self.program_file(file))
            } else {
                Vec::new()
            }
        }

        fn program_file(&self, file: File) -> ProgramFile<'_> {
            program(self).program_file(self, file)
        }

        fn python_version_with_source(&self, _file: File) -> &PythonVersionWithSource {
            &self.program_settings.python_version
        }

        fn rule_selection(&self, _file: File) -> &RuleSelection {
            &self.rule_selection
        }

        fn lint_registry(&self) -> &LintRegistry {
            default_lint_registry()
        }

        fn analysis_settings(&self, _file: File) -> &AnalysisSettings {
            &self.analysis_settings
        }

        fn dependency_metadata(&self, _file: File) -> Option<&DependencyMetadata> {
            None
        }

        fn verbose(&self) -> bool {
            false
        }

        fn is_open_file(&self, _file: File) -> bool {
            false
        }

        fn dyn_clone(&self) -> Box<dyn Db> {
            // Only ty's autofix pipeline calls this, which we never drive. A
            // panic here is caught by `Pool::check` and loses the checker.
            panic!("MemoryDb::dyn_clone: ty's autofix pipeline is not supported");
        }
    }

    #[salsa::db]
    impl ModuleResolverDb for MemoryDb {}

    #[salsa::db]
    impl ProgramDb for MemoryDb {
        fn program_settings(&self) -> &ProgramSettings {
            &self.program_settings
        }
    }

    #[salsa::db]
    impl salsa::Database for MemoryDb {}
}

#[cfg(test)]
mod tests {
    use super::line_column;

    #[test]
    fn columns_are_characters_and_lines_end_like_ruff() {
        assert_eq!(line_column("ab\ncd", 4), (2, 2));
        assert_eq!(line_column("é = x", 2), (1, 2));
        assert_eq!(line_column("é = x", 3), (1, 3));
        assert_eq!(line_column("a\r\nb\rc", 5), (3, 1));
        assert_eq!(line_column("é", 1), (1, 1));
        assert_eq!(line_column("ab", 99), (1, 3));
    }
}
