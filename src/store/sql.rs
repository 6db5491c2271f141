//! [`SqlStore`]: a [`ChainStore`] in SQLite (one machine) or PostgreSQL
//! (many), through sqlx: one code path, the same SQL text on both engines
//! but for the schema's column types.
//!
//! Invariants: every method is one short transaction (or one statement);
//! a claim is one conditional `UPDATE`, so two processes claiming one chain
//! at once cannot both win; JSON is kept as TEXT written by serde_json
//! (portable, and exact for big numbers), and a row that does not parse is
//! a [`StoreError::Backend`] naming its table and chain, never a panic.

use std::str::FromStr;
use std::time::Duration;

use async_trait::async_trait;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use sqlx::error::ErrorKind as DbErrorKind;
#[cfg(feature = "postgres")]
use sqlx::postgres::{PgConnectOptions, PgPool, PgPoolOptions};
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions};

use super::{
    ChainStore, Claim, Decision, FinishedChain, IdleChain, Lock, PendingChain, STATE_KEY_BYTES, StoreCounts,
    StoreError, StoredChain, StoredSession, StoredTask, entry_artifacts, epoch_ms_after, random_state_key,
};
use crate::artifacts::ArtifactRef;
use crate::journal::JournalEntry;
use crate::principal::Owner;
use crate::result::{Interpreter, PendingCall};

/// How long an SQLite statement waits for another connection's write (one
/// process's or another's) before it fails: generous, since every write is
/// one short transaction, and a store busy for this long is broken.
const SQLITE_BUSY_TIMEOUT: Duration = Duration::from_secs(30);

/// How many times a claim re-reads a chain that was released between its
/// `UPDATE` and its read (each retry means another claimant made progress).
const CLAIM_ATTEMPTS: usize = 16;

/// The schema on SQLite, created on connect.
const SQLITE_SCHEMA: &[&str] = &[
    "CREATE TABLE IF NOT EXISTS chainbox_chains (
        chain_id TEXT PRIMARY KEY,
        script TEXT NOT NULL,
        policy TEXT NOT NULL,
        seed TEXT NOT NULL,
        created_at TEXT NOT NULL,
        claimed_by TEXT,
        claimed_until BIGINT,
        finished TEXT,
        pending TEXT,
        pending_seq INTEGER,
        owner_issuer TEXT,
        owner_subject TEXT
    )",
    "CREATE TABLE IF NOT EXISTS chainbox_journal (
        chain_id TEXT NOT NULL REFERENCES chainbox_chains (chain_id),
        seq INTEGER NOT NULL,
        entry TEXT NOT NULL,
        PRIMARY KEY (chain_id, seq)
    )",
    "CREATE TABLE IF NOT EXISTS chainbox_decisions (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        chain_id TEXT NOT NULL REFERENCES chainbox_chains (chain_id),
        seq INTEGER NOT NULL,
        decision TEXT NOT NULL,
        decided_by TEXT NOT NULL,
        decided_at TEXT NOT NULL
    )",
    "CREATE INDEX IF NOT EXISTS chainbox_decisions_by_chain ON chainbox_decisions (chain_id, id)",
    "CREATE INDEX IF NOT EXISTS chainbox_chains_pending ON chainbox_chains (chain_id) WHERE pending IS NOT NULL",
    "CREATE TABLE IF NOT EXISTS chainbox_sessions (
        session_id TEXT PRIMARY KEY REFERENCES chainbox_chains (chain_id),
        interpreter TEXT NOT NULL,
        created_at TEXT NOT NULL,
        last_used_at TEXT NOT NULL,
        expires_at TEXT NOT NULL,
        ended TEXT,
        cells TEXT NOT NULL
    )",
    "CREATE TABLE IF NOT EXISTS chainbox_tasks (
        task_id TEXT PRIMARY KEY,
        chain_id TEXT NOT NULL REFERENCES chainbox_chains (chain_id),
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        ttl_ms BIGINT NOT NULL,
        cancel_requested BOOLEAN NOT NULL DEFAULT FALSE,
        outcome TEXT
    )",
    "CREATE TABLE IF NOT EXISTS chainbox_secrets (
        name TEXT PRIMARY KEY,
        value TEXT NOT NULL
    )",
];

/// The schema on PostgreSQL: SQLite's, with PostgreSQL's integer types.
const POSTGRES_SCHEMA: &[&str] = &[
    "CREATE TABLE IF NOT EXISTS chainbox_chains (
        chain_id TEXT PRIMARY KEY,
        script TEXT NOT NULL,
        policy TEXT NOT NULL,
        seed TEXT NOT NULL,
        created_at TEXT NOT NULL,
        claimed_by TEXT,
        claimed_until BIGINT,
        finished TEXT,
        pending TEXT,
        pending_seq BIGINT,
        owner_issuer TEXT,
        owner_subject TEXT
    )",
    "CREATE TABLE IF NOT EXISTS chainbox_journal (
        chain_id TEXT NOT NULL REFERENCES chainbox_chains (chain_id),
        seq BIGINT NOT NULL,
        entry TEXT NOT NULL,
        PRIMARY KEY (chain_id, seq)
    )",
    "CREATE TABLE IF NOT EXISTS chainbox_decisions (
        id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        chain_id TEXT NOT NULL REFERENCES chainbox_chains (chain_id),
        seq BIGINT NOT NULL,
        decision TEXT NOT NULL,
        decided_by TEXT NOT NULL,
        decided_at TEXT NOT NULL
    )",
    "CREATE INDEX IF NOT EXISTS chainbox_decisions_by_chain ON chainbox_decisions (chain_id, id)",
    "CREATE INDEX IF NOT EXISTS chainbox_chains_pending ON chainbox_chains (chain_id) WHERE pending IS NOT NULL",
    "CREATE TABLE IF NOT EXISTS chainbox_sessions (
        session_id TEXT PRIMARY KEY REFERENCES chainbox_chains (chain_id),
        interpreter TEXT NOT NULL,
        created_at TEXT NOT NULL,
        last_used_at TEXT NOT NULL,
        expires_at TEXT NOT NULL,
        ended TEXT,
        cells TEXT NOT NULL
    )",
    "CREATE TABLE IF NOT EXISTS chainbox_tasks (
        task_id TEXT PRIMARY KEY,
        chain_id TEXT NOT NULL REFERENCES chainbox_chains (chain_id),
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        ttl_ms BIGINT NOT NULL,
        cancel_requested BOOLEAN NOT NULL DEFAULT FALSE,
        outcome TEXT
    )",
    "CREATE TABLE IF NOT EXISTS chainbox_secrets (
        name TEXT PRIMARY KEY,
        value TEXT NOT NULL
    )",
];

/// The schema's version: what a database's `chainbox_schema` records once
/// [`SqlStore::connect`] has brought it there. 1: the tables prefixed
/// `chainbox_` ([`SQLITE_SCHEMA`], [`POSTGRES_SCHEMA`]); 2: sweeps (a
/// chain's finish time, named locks). A later change to the tables bumps
/// it and adds its step to [`MIGRATIONS`]; a chainbox that finds a higher
/// version refuses the database.
pub const SCHEMA_VERSION: i64 = 2;

/// The steps from version 1 on, each with the version it brings a
/// database to, in order; the same SQL on both engines. A database of
/// version N runs every step above N, in the transaction of the connect.
const MIGRATIONS: &[(i64, &[&str])] = &[(
    2,
    &[
        // When a chain finished (ms since the Unix epoch): a sweep deletes
        // it `retention_s` after. Null in chains finished before: the first
        // sweep stamps them.
        "ALTER TABLE chainbox_chains ADD COLUMN finished_at BIGINT",
        // Named locks with a lease (the sweep's: one node at a time).
        "CREATE TABLE IF NOT EXISTS chainbox_locks (
            name TEXT PRIMARY KEY,
            held_by TEXT NOT NULL,
            held_until BIGINT NOT NULL
        )",
    ],
)];

/// The table recording the schema's version (one row per migration).
const SCHEMA_TABLE: &str = "CREATE TABLE IF NOT EXISTS chainbox_schema (version BIGINT NOT NULL)";

/// The tables chainbox made before they were prefixed.
const LEGACY_TABLES: [&str; 6] = ["chains", "journal", "decisions", "sessions", "tasks", "secrets"];

/// The columns of `chains` added after its first schema: a database made
/// before them gets them as it is migrated, null in its old rows.
/// Nullable TEXT on both engines.
const ADDED_CHAINS_COLUMNS: &[&str] = &["owner_issuer", "owner_subject"];

/// A `tasks` table made before a session's cell could be a task (its
/// `task_id` was its chain's id, and a key into `chains`) gets `chain_id`,
/// each old task's own id; these run once the tables are renamed. SQLite
/// cannot drop the old key: the table is set aside, the schema's
/// statements make it anew, and its rows are copied over
/// ([`SQLITE_TASKS_CHAIN_ID_AFTER`]).
const SQLITE_TASKS_CHAIN_ID: &[&str] = &["ALTER TABLE chainbox_tasks RENAME TO chainbox_tasks_before_chain_id"];
const SQLITE_TASKS_CHAIN_ID_AFTER: &[&str] = &[
    "INSERT INTO chainbox_tasks (task_id, chain_id, created_at, updated_at, ttl_ms, cancel_requested, outcome) \
     SELECT task_id, task_id, created_at, updated_at, ttl_ms, cancel_requested, outcome \
     FROM chainbox_tasks_before_chain_id",
    "DROP TABLE chainbox_tasks_before_chain_id",
];
const POSTGRES_TASKS_CHAIN_ID: &[&str] = &[
    "ALTER TABLE chainbox_tasks DROP CONSTRAINT IF EXISTS tasks_task_id_fkey",
    "ALTER TABLE chainbox_tasks ADD COLUMN IF NOT EXISTS chain_id TEXT REFERENCES chainbox_chains (chain_id)",
    "UPDATE chainbox_tasks SET chain_id = task_id WHERE chain_id IS NULL",
    "ALTER TABLE chainbox_tasks ALTER COLUMN chain_id SET NOT NULL",
];

/// The engine of a store's database, for the SQL that differs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Engine {
    Sqlite,
    Postgres,
}

impl Engine {
    /// The statements that create the current schema's tables.
    fn schema(self) -> &'static [&'static str] {
        match self {
            Engine::Sqlite => SQLITE_SCHEMA,
            Engine::Postgres => POSTGRES_SCHEMA,
        }
    }

    /// Which of [`LEGACY_TABLES`] the database has (PostgreSQL: in the
    /// schema the connection's search path finds, as the statements do).
    fn legacy_tables(self) -> String {
        let names = LEGACY_TABLES.map(|t| format!("'{t}'")).join(", ");
        match self {
            Engine::Sqlite => format!("SELECT name FROM sqlite_master WHERE type = 'table' AND name IN ({names})"),
            Engine::Postgres => format!(
                "SELECT table_name::TEXT FROM information_schema.tables \
                 WHERE table_schema = current_schema() AND table_name IN ({names})"
            ),
        }
    }

    /// The columns `table` (a constant of this file) has.
    fn columns_of(self, table: &str) -> String {
        match self {
            Engine::Sqlite => format!("SELECT name FROM pragma_table_info('{table}')"),
            Engine::Postgres => format!(
                "SELECT column_name::TEXT FROM information_schema.columns \
                 WHERE table_schema = current_schema() AND table_name = '{table}'"
            ),
        }
    }

    /// What brings a database chainbox made before its tables were
    /// prefixed (its `tables`, the columns of its `chains` and `tasks`) to
    /// the current schema: the statements to run before the schema's own
    /// (the columns added since, each table renamed, the foreign keys
    /// following, its old indexes dropped) and after them.
    fn legacy_migration(self, tables: &[String], chains: &[String], tasks: &[String]) -> [Vec<String>; 2] {
        let mut before = Vec::new();
        for column in ADDED_CHAINS_COLUMNS {
            if !chains.iter().any(|c| c == column) {
                before.push(format!("ALTER TABLE chains ADD COLUMN {column} TEXT"));
            }
        }
        before.push("DROP INDEX IF EXISTS decisions_by_chain".to_owned());
        before.push("DROP INDEX IF EXISTS chains_pending".to_owned());
        for table in tables {
            before.push(format!("ALTER TABLE {table} RENAME TO chainbox_{table}"));
        }
        let mut after = Vec::new();
        if tables.iter().any(|t| t == "tasks") && !tasks.iter().any(|c| c == "chain_id") {
            let (first, then) = match self {
                Engine::Sqlite => (SQLITE_TASKS_CHAIN_ID, SQLITE_TASKS_CHAIN_ID_AFTER),
                Engine::Postgres => (POSTGRES_TASKS_CHAIN_ID, &[][..]),
            };
            before.extend(first.iter().map(|s| (*s).to_owned()));
            after.extend(then.iter().map(|s| (*s).to_owned()));
        }
        [before, after]
    }
}

/// PostgreSQL runs `CREATE TABLE IF NOT EXISTS` of two processes at once
/// into a unique violation of its catalog: the schema is created under
/// this advisory lock (an arbitrary constant, "chainbox" in ASCII).
const POSTGRES_SCHEMA_LOCK: i64 = 0x0063_6861_696e_626f;

/// A [`ChainStore`] in a SQL database: SQLite for one machine (a file any
/// process on it opens), PostgreSQL for many nodes. Made by
/// [`SqlStore::connect`], which creates the schema if it is missing.
#[derive(Debug, Clone)]
pub struct SqlStore {
    pool: Pool,
}

/// The connection pool of one engine. An enum rather than sqlx's `Any`:
/// each engine keeps its own options (SQLite's WAL and busy timeout) and
/// types, and [`on_pool!`] runs the same code on either.
#[derive(Debug, Clone)]
enum Pool {
    Sqlite(SqlitePool),
    #[cfg(feature = "postgres")]
    Postgres(PgPool),
}

/// Runs `$body` with `$pool` bound to the store's pool, whichever engine,
/// and `$begin` to the statement that opens a writing transaction there:
/// SQLite's `BEGIN IMMEDIATE` takes the write lock first (a deferred
/// transaction that reads before it writes fails, busy timeout or not, when
/// another connection committed in between).
macro_rules! on_pool {
    ($store:expr, |$pool:ident, $begin:ident| $body:expr) => {
        match &$store.pool {
            Pool::Sqlite($pool) => {
                let $begin = "BEGIN IMMEDIATE";
                let _ = $begin;
                $body
            }
            #[cfg(feature = "postgres")]
            Pool::Postgres($pool) => {
                let $begin = "BEGIN";
                let _ = $begin;
                $body
            }
        }
    };
}

impl SqlStore {
    /// Inserts a new chain's row, claimed by `claim`'s claimant for its
    /// lease when given ([`ChainStore::create`], [`ChainStore::create_claimed`]).
    async fn insert_chain(&self, chain: &StoredChain, claim: Option<(&str, Duration)>) -> Result<(), StoreError> {
        const SQL: &str = "INSERT INTO chainbox_chains \
                           (chain_id, script, policy, seed, created_at, owner_issuer, owner_subject, claimed_by, claimed_until) \
                           VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)";
        let policy = to_json(&chain.policy, "the policy")?;
        // The seed as decimal text: a u64 has no SQL integer type, and the
        // text reads as the seed it is.
        let seed = chain.seed.to_string();
        let done = on_pool!(self, |pool, _begin| sqlx::query(SQL)
            .bind(&chain.chain_id)
            .bind(&chain.script)
            .bind(&policy)
            .bind(&seed)
            .bind(&chain.created_at)
            .bind(chain.owner.as_ref().map(|o| o.issuer.as_str()))
            .bind(chain.owner.as_ref().map(|o| o.subject.as_str()))
            .bind(claim.map(|(claimant, _)| claimant))
            .bind(claim.map(|(_, lease)| epoch_ms_after(lease)))
            .execute(pool)
            .await
            .map(drop));
        match done {
            Ok(()) => Ok(()),
            Err(e) if is_unique_violation(&e) => Err(StoreError::Exists(format!("chain {:?}", chain.chain_id))),
            Err(e) => Err(backend("creating the chain", &e)),
        }
    }

    /// Connects to `url` and creates the schema if it is missing:
    /// `sqlite:PATH` (the file is created if missing; write-ahead log, so
    /// readers never wait on a writer) or `postgres://…`
    /// (`postgresql://…`; a Unix socket's directory as `?host=/dir`).
    ///
    /// # Errors
    /// [`StoreError::UnknownScheme`] for another URL, and
    /// [`StoreError::Backend`] if the database cannot be reached or the
    /// schema created.
    pub async fn connect(url: &str) -> Result<Self, StoreError> {
        let pool = match scheme(url) {
            "sqlite" => {
                let options = SqliteConnectOptions::from_str(url)
                    .map_err(|e| backend("the SQLite URL", &e))?
                    .create_if_missing(true)
                    .journal_mode(SqliteJournalMode::Wal)
                    .busy_timeout(SQLITE_BUSY_TIMEOUT)
                    .foreign_keys(true);
                let pool = SqlitePoolOptions::new()
                    .connect_with(options)
                    .await
                    .map_err(|e| backend("opening the SQLite database", &e))?;
                Pool::Sqlite(pool)
            }
            #[cfg(feature = "postgres")]
            "postgres" | "postgresql" => {
                let options = PgConnectOptions::from_str(url).map_err(|e| backend("the PostgreSQL URL", &e))?;
                let pool = PgPoolOptions::new()
                    .connect_with(options)
                    .await
                    .map_err(|e| backend("connecting to PostgreSQL", &e))?;
                Pool::Postgres(pool)
            }
            #[cfg(not(feature = "postgres"))]
            scheme @ ("postgres" | "postgresql") => return Err(StoreError::NotBuiltIn(scheme.to_owned(), "postgres")),
            other => return Err(StoreError::UnknownScheme(other.to_owned())),
        };
        let store = Self { pool };
        store.create_schema().await?;
        Ok(store)
    }

    /// Closes the pool's connections (what dropping the store does too,
    /// but waiting until they are closed).
    pub async fn close(&self) {
        on_pool!(self, |pool, _begin| pool.close().await);
    }

    /// Brings the database's schema to [`SCHEMA_VERSION`], in one
    /// transaction (SQLite's write lock; on PostgreSQL under
    /// [`POSTGRES_SCHEMA_LOCK`]), so processes connecting at once neither
    /// race nor migrate twice: a database without chainbox's tables gets
    /// version 1's; one that chainbox made before its tables were prefixed
    /// (no `chainbox_schema`, and a `chains` table with chainbox's columns)
    /// gets the columns its tables lacked, then its tables renamed; then
    /// each gets the [`MIGRATIONS`] above its version. One of a newer
    /// chainbox is refused ([`StoreError::SchemaTooNew`]), untouched.
    async fn create_schema(&self) -> Result<(), StoreError> {
        let fail = |e: sqlx::Error| backend("creating the schema", &e);
        on_pool!(self, |pool, begin| {
            let mut tx = pool.begin_with(begin).await.map_err(fail)?;
            let engine = match &self.pool {
                Pool::Sqlite(_) => Engine::Sqlite,
                #[cfg(feature = "postgres")]
                Pool::Postgres(_) => Engine::Postgres,
            };
            if engine == Engine::Postgres {
                sqlx::query("SELECT pg_advisory_xact_lock($1)")
                    .bind(POSTGRES_SCHEMA_LOCK)
                    .execute(&mut *tx)
                    .await
                    .map_err(fail)?;
            }
            sqlx::query(SCHEMA_TABLE).execute(&mut *tx).await.map_err(fail)?;
            let version: Option<i64> = sqlx::query_scalar("SELECT MAX(version) FROM chainbox_schema")
                .fetch_one(&mut *tx)
                .await
                .map_err(fail)?;
            let from = match version {
                Some(found) if found > SCHEMA_VERSION => {
                    return Err(StoreError::SchemaTooNew {
                        found,
                        supported: SCHEMA_VERSION,
                    });
                }
                Some(found) => found,
                None => {
                    let tables: Vec<String> = sqlx::query_scalar(&engine.legacy_tables())
                        .fetch_all(&mut *tx)
                        .await
                        .map_err(fail)?;
                    let chains: Vec<String> = sqlx::query_scalar(&engine.columns_of("chains"))
                        .fetch_all(&mut *tx)
                        .await
                        .map_err(fail)?;
                    let tasks: Vec<String> = sqlx::query_scalar(&engine.columns_of("tasks"))
                        .fetch_all(&mut *tx)
                        .await
                        .map_err(fail)?;
                    // chainbox's, not another application's table of that name.
                    let legacy = ["chain_id", "script", "policy", "seed", "claimed_by"]
                        .iter()
                        .all(|c| chains.iter().any(|n| n == c));
                    let [before, after] = match legacy {
                        true => engine.legacy_migration(&tables, &chains, &tasks),
                        false => Default::default(),
                    };
                    let statements = before.iter().map(String::as_str);
                    let statements = statements.chain(engine.schema().iter().copied());
                    for statement in statements.chain(after.iter().map(String::as_str)) {
                        sqlx::query(statement).execute(&mut *tx).await.map_err(fail)?;
                    }
                    sqlx::query("INSERT INTO chainbox_schema (version) VALUES (1)")
                        .execute(&mut *tx)
                        .await
                        .map_err(fail)?;
                    1
                }
            };
            for (version, statements) in MIGRATIONS.iter().filter(|(version, _)| *version > from) {
                for statement in *statements {
                    sqlx::query(statement).execute(&mut *tx).await.map_err(fail)?;
                }
                sqlx::query("INSERT INTO chainbox_schema (version) VALUES ($1)")
                    .bind(version)
                    .execute(&mut *tx)
                    .await
                    .map_err(fail)?;
            }
            tx.commit().await.map_err(fail)
        })
    }

    /// Whether a chain with this id exists.
    async fn exists(&self, chain_id: &str) -> Result<bool, StoreError> {
        const SQL: &str = "SELECT 1 FROM chainbox_chains WHERE chain_id = $1";
        let row = on_pool!(self, |pool, _begin| sqlx::query(SQL)
            .bind(chain_id)
            .fetch_optional(pool)
            .await
            .map(|row| row.is_some()));
        row.map_err(|e| backend("reading chains", &e))
    }

    /// [`StoreError::NoChain`] unless the chain exists.
    async fn must_exist(&self, chain_id: &str) -> Result<(), StoreError> {
        if self.exists(chain_id).await? {
            Ok(())
        } else {
            Err(StoreError::NoChain(chain_id.to_owned()))
        }
    }
}

/// The scheme of a store URL: what comes before its first `:` (the whole
/// text if it has none; never the rest, which may hold a password).
pub(super) fn scheme(url: &str) -> &str {
    url.split_once(':').map_or(url, |(scheme, _)| scheme)
}

/// A database failure as a [`StoreError::Backend`], saying what failed.
fn backend(what: &str, error: &dyn std::fmt::Display) -> StoreError {
    StoreError::Backend(format!("{what}: {error}"))
}

/// Whether the database refused a write as a duplicate key.
fn is_unique_violation(error: &sqlx::Error) -> bool {
    error
        .as_database_error()
        .is_some_and(|e| matches!(e.kind(), DbErrorKind::UniqueViolation))
}

/// Whether the database refused a row naming a chain that does not exist.
fn is_foreign_key_violation(error: &sqlx::Error) -> bool {
    error
        .as_database_error()
        .is_some_and(|e| matches!(e.kind(), DbErrorKind::ForeignKeyViolation))
}

/// A value as the JSON text its column keeps.
fn to_json<T: Serialize>(value: &T, what: &str) -> Result<String, StoreError> {
    serde_json::to_string(value).map_err(|e| backend(&format!("writing {what} as JSON"), &e))
}

/// A JSON column read back; a row that does not parse names its table,
/// column and chain.
fn from_json<T: DeserializeOwned>(text: &str, table: &str, column: &str, chain_id: &str) -> Result<T, StoreError> {
    serde_json::from_str(text).map_err(|e| {
        StoreError::Backend(format!(
            "{table} row of chain {chain_id:?}: column {column} does not parse: {e}"
        ))
    })
}

/// The `secrets` row of [`ChainStore::state_key`].
const STATE_KEY_NAME: &str = "state_key";

/// A key read back from its hex text.
fn key_from_hex(text: &str) -> Result<[u8; STATE_KEY_BYTES], StoreError> {
    let bad = || {
        StoreError::Backend(format!(
            "chainbox_secrets row {STATE_KEY_NAME:?}: not {STATE_KEY_BYTES} bytes of hex"
        ))
    };
    if text.len() != 2 * STATE_KEY_BYTES || !text.is_ascii() {
        return Err(bad());
    }
    let mut key = [0; STATE_KEY_BYTES];
    for (byte, pair) in key.iter_mut().zip(text.as_bytes().chunks(2)) {
        let pair = std::str::from_utf8(pair).map_err(|_| bad())?;
        *byte = u8::from_str_radix(pair, 16).map_err(|_| bad())?;
    }
    Ok(key)
}

/// A chain's owner read back from its two columns: both set, or neither
/// (the local user's chain, or one stored before chains had owners).
fn owner_from_sql(
    issuer: Option<String>,
    subject: Option<String>,
    chain_id: &str,
) -> Result<Option<Owner>, StoreError> {
    match (issuer, subject) {
        (Some(issuer), Some(subject)) => Ok(Some(Owner { issuer, subject })),
        (None, None) => Ok(None),
        _ => Err(StoreError::Backend(format!(
            "chainbox_chains row of chain {chain_id:?}: owner_issuer and owner_subject are not both set or both null"
        ))),
    }
}

/// How a chain is created ([`ChainStore::create`], and a session's).
const INSERT_CHAIN: &str = "INSERT INTO chainbox_chains (chain_id, script, policy, seed, created_at, owner_issuer, owner_subject) \
                            VALUES ($1, $2, $3, $4, $5, $6, $7)";

/// The columns a session is read back from, its chain's owner with them.
const SELECT_SESSIONS: &str = "SELECT s.session_id, s.interpreter, s.created_at, s.last_used_at, s.expires_at, \
                               s.ended, s.cells, c.owner_issuer, c.owner_subject \
                               FROM chainbox_sessions s JOIN chainbox_chains c ON c.chain_id = s.session_id";

/// A row of [`SELECT_SESSIONS`].
type SessionRow = (
    String,
    String,
    String,
    String,
    String,
    Option<String>,
    String,
    Option<String>,
    Option<String>,
);

/// A session read back from its row.
fn session_from_sql(row: SessionRow) -> Result<StoredSession, StoreError> {
    let (session_id, interpreter, created_at, last_used_at, expires_at, ended, cells, issuer, subject) = row;
    Ok(StoredSession {
        owner: owner_from_sql(issuer, subject, &session_id)?,
        interpreter: interpreter_from_sql(&interpreter, &session_id)?,
        cells: from_json(&cells, "chainbox_sessions", "cells", &session_id)?,
        created_at,
        last_used_at,
        expires_at,
        ended,
        session_id,
    })
}

/// An interpreter as the `sessions` table keeps it.
fn interpreter_to_sql(interpreter: Interpreter) -> &'static str {
    interpreter.as_str()
}

/// An interpreter read back.
fn interpreter_from_sql(text: &str, session_id: &str) -> Result<Interpreter, StoreError> {
    match text {
        "monty" => Ok(Interpreter::Monty),
        "cpython" => Ok(Interpreter::Cpython),
        _ => Err(StoreError::Backend(format!(
            "chainbox_sessions row of session {session_id:?}: interpreter {text:?} is neither monty nor cpython"
        ))),
    }
}

/// A call's number as the store keeps it (SQL has no unsigned integers).
fn seq_to_sql(seq: u32) -> i64 {
    i64::from(seq)
}

/// A call's number read back.
fn seq_from_sql(seq: i64, table: &str, chain_id: &str) -> Result<u32, StoreError> {
    u32::try_from(seq)
        .map_err(|_| StoreError::Backend(format!("{table} row of chain {chain_id:?}: seq {seq} is out of range")))
}

#[async_trait]
impl ChainStore for SqlStore {
    async fn create(&self, chain: &StoredChain) -> Result<(), StoreError> {
        self.insert_chain(chain, None).await
    }

    async fn create_claimed(&self, chain: &StoredChain, claimant: &str, lease: Duration) -> Result<(), StoreError> {
        self.insert_chain(chain, Some((claimant, lease))).await
    }

    async fn chain(&self, chain_id: &str) -> Result<Option<StoredChain>, StoreError> {
        const SQL: &str = "SELECT script, policy, seed, created_at, owner_issuer, owner_subject FROM chainbox_chains WHERE chain_id = $1";
        type Row = (String, String, String, String, Option<String>, Option<String>);
        let row: Option<Row> = on_pool!(self, |pool, _begin| sqlx::query_as(SQL)
            .bind(chain_id)
            .fetch_optional(pool)
            .await)
        .map_err(|e| backend("reading chains", &e))?;
        let Some((script, policy, seed, created_at, owner_issuer, owner_subject)) = row else {
            return Ok(None);
        };
        let seed = seed.parse::<u64>().map_err(|e| {
            StoreError::Backend(format!(
                "chainbox_chains row of chain {chain_id:?}: seed {seed:?} is not a u64: {e}"
            ))
        })?;
        Ok(Some(StoredChain {
            chain_id: chain_id.to_owned(),
            script,
            policy: from_json(&policy, "chainbox_chains", "policy", chain_id)?,
            seed,
            created_at,
            owner: owner_from_sql(owner_issuer, owner_subject, chain_id)?,
        }))
    }

    async fn append(&self, chain_id: &str, entry: &JournalEntry) -> Result<(), StoreError> {
        self.append_many(chain_id, std::slice::from_ref(entry)).await
    }

    async fn append_many(&self, chain_id: &str, entries: &[JournalEntry]) -> Result<(), StoreError> {
        const SQL: &str = "INSERT INTO chainbox_journal (chain_id, seq, entry) VALUES ($1, $2, $3)";
        let texts = entries
            .iter()
            .map(|entry| to_json(entry, "the journal entry"))
            .collect::<Result<Vec<_>, _>>()?;
        let done = match (entries, texts.as_slice()) {
            // One entry: one statement, its own transaction.
            ([entry], [text]) => on_pool!(self, |pool, _begin| sqlx::query(SQL)
                .bind(chain_id)
                .bind(seq_to_sql(entry.seq))
                .bind(text)
                .execute(pool)
                .await
                .map(drop)),
            _ => on_pool!(self, |pool, begin| async {
                let mut tx = pool.begin_with(begin).await?;
                for (entry, text) in entries.iter().zip(&texts) {
                    sqlx::query(SQL)
                        .bind(chain_id)
                        .bind(seq_to_sql(entry.seq))
                        .bind(text)
                        .execute(&mut *tx)
                        .await?;
                }
                tx.commit().await
            }
            .await),
        };
        match done {
            Ok(()) => Ok(()),
            // The journal's rows name their chain (a foreign key), so a
            // missing chain and a taken number cannot be confused.
            Err(e) if is_foreign_key_violation(&e) => Err(StoreError::NoChain(chain_id.to_owned())),
            Err(e) if is_unique_violation(&e) => {
                let seqs: Vec<String> = entries.iter().map(|e| format!("#{}", e.seq)).collect();
                let what = match seqs.as_slice() {
                    [one] => format!("journal entry {one} of chain {chain_id:?}"),
                    many => format!("one of the journal entries {} of chain {chain_id:?}", many.join(", ")),
                };
                Err(StoreError::Exists(what))
            }
            Err(e) => Err(backend("appending to the journal", &e)),
        }
    }

    async fn journal(&self, chain_id: &str) -> Result<Vec<JournalEntry>, StoreError> {
        const SQL: &str = "SELECT entry FROM chainbox_journal WHERE chain_id = $1 ORDER BY seq";
        self.must_exist(chain_id).await?;
        let texts: Vec<String> = on_pool!(self, |pool, _begin| sqlx::query_scalar(SQL)
            .bind(chain_id)
            .fetch_all(pool)
            .await)
        .map_err(|e| backend("reading the journal", &e))?;
        texts
            .iter()
            .map(|text| from_json(text, "chainbox_journal", "entry", chain_id))
            .collect()
    }

    async fn suspend(&self, chain_id: &str, pending: &PendingCall) -> Result<(), StoreError> {
        const SQL: &str = "UPDATE chainbox_chains SET pending = $1, pending_seq = $2 WHERE chain_id = $3";
        let text = to_json(pending, "the pending call")?;
        let done = on_pool!(self, |pool, _begin| sqlx::query(SQL)
            .bind(&text)
            .bind(seq_to_sql(pending.seq))
            .bind(chain_id)
            .execute(pool)
            .await
            .map(|r| r.rows_affected()))
        .map_err(|e| backend("suspending the chain", &e))?;
        if done == 0 {
            return Err(StoreError::NoChain(chain_id.to_owned()));
        }
        Ok(())
    }

    async fn pending(&self) -> Result<Vec<PendingChain>, StoreError> {
        const SQL: &str =
            "SELECT chain_id, pending, owner_issuer, owner_subject FROM chainbox_chains WHERE pending IS NOT NULL";
        type Row = (String, String, Option<String>, Option<String>);
        let rows: Vec<Row> = on_pool!(self, |pool, _begin| sqlx::query_as(SQL).fetch_all(pool).await)
            .map_err(|e| backend("reading the pending calls", &e))?;
        let mut pending = rows
            .into_iter()
            .map(|(chain_id, text, owner_issuer, owner_subject)| {
                Ok(PendingChain {
                    call: from_json(&text, "chainbox_chains", "pending", &chain_id)?,
                    owner: owner_from_sql(owner_issuer, owner_subject, &chain_id)?,
                    chain_id,
                })
            })
            .collect::<Result<Vec<PendingChain>, StoreError>>()?;
        // Sorted here, not by ORDER BY: a database's text order follows its
        // collation; this is byte order, as in MemoryStore.
        pending.sort_by(|a, b| (&a.call.requested_at, &a.chain_id).cmp(&(&b.call.requested_at, &b.chain_id)));
        Ok(pending)
    }

    async fn pending_of(&self, chain_id: &str) -> Result<Option<PendingCall>, StoreError> {
        const SQL: &str = "SELECT pending FROM chainbox_chains WHERE chain_id = $1";
        let row: Option<(Option<String>,)> = on_pool!(self, |pool, _begin| sqlx::query_as(SQL)
            .bind(chain_id)
            .fetch_optional(pool)
            .await)
        .map_err(|e| backend("reading the pending call", &e))?;
        match row {
            None => Err(StoreError::NoChain(chain_id.to_owned())),
            Some((None,)) => Ok(None),
            Some((Some(text),)) => Ok(Some(from_json(&text, "chainbox_chains", "pending", chain_id)?)),
        }
    }

    async fn decide(&self, chain_id: &str, decision: &Decision) -> Result<(), StoreError> {
        // Conditional on the pending call's number: of two decisions on one
        // call, the second finds nothing pending.
        const CLEAR: &str =
            "UPDATE chainbox_chains SET pending = NULL, pending_seq = NULL WHERE chain_id = $1 AND pending_seq = $2";
        const RECORD: &str = "INSERT INTO chainbox_decisions (chain_id, seq, decision, decided_by, decided_at) VALUES ($1, $2, $3, $4, $5)";
        let text = to_json(&decision.decision, "the decision")?;
        let fail = |e: sqlx::Error| backend("recording the decision", &e);
        let cleared = on_pool!(self, |pool, begin| {
            let mut tx = pool.begin_with(begin).await.map_err(fail)?;
            let cleared = sqlx::query(CLEAR)
                .bind(chain_id)
                .bind(seq_to_sql(decision.seq))
                .execute(&mut *tx)
                .await
                .map_err(fail)?
                .rows_affected();
            if cleared == 1 {
                sqlx::query(RECORD)
                    .bind(chain_id)
                    .bind(seq_to_sql(decision.seq))
                    .bind(&text)
                    .bind(&decision.decided_by)
                    .bind(&decision.decided_at)
                    .execute(&mut *tx)
                    .await
                    .map_err(fail)?;
                tx.commit().await.map_err(fail)?;
            }
            cleared
        });
        if cleared == 1 {
            return Ok(());
        }
        self.must_exist(chain_id).await?;
        Err(StoreError::NotPending {
            chain_id: chain_id.to_owned(),
            seq: Some(decision.seq),
        })
    }

    async fn decisions(&self, chain_id: &str) -> Result<Vec<Decision>, StoreError> {
        const SQL: &str =
            "SELECT seq, decision, decided_by, decided_at FROM chainbox_decisions WHERE chain_id = $1 ORDER BY id";
        self.must_exist(chain_id).await?;
        let rows: Vec<(i64, String, String, String)> = on_pool!(self, |pool, _begin| sqlx::query_as(SQL)
            .bind(chain_id)
            .fetch_all(pool)
            .await)
        .map_err(|e| backend("reading the decisions", &e))?;
        rows.into_iter()
            .map(|(seq, decision, decided_by, decided_at)| {
                Ok(Decision {
                    seq: seq_from_sql(seq, "chainbox_decisions", chain_id)?,
                    decision: from_json(&decision, "chainbox_decisions", "decision", chain_id)?,
                    decided_by,
                    decided_at,
                })
            })
            .collect()
    }

    async fn claim(&self, chain_id: &str, claimant: &str, lease: Duration) -> Result<Claim, StoreError> {
        // One conditional write decides who wins; the read after it only
        // says why a loser lost.
        const TAKE: &str = "UPDATE chainbox_chains SET claimed_by = $1, claimed_until = $3 \
                            WHERE chain_id = $2 AND finished IS NULL \
                            AND (claimed_by IS NULL OR claimed_by = $1 OR claimed_until < $4)";
        const READ: &str = "SELECT finished, claimed_by FROM chainbox_chains WHERE chain_id = $1";
        for _ in 0..CLAIM_ATTEMPTS {
            let taken = on_pool!(self, |pool, _begin| sqlx::query(TAKE)
                .bind(claimant)
                .bind(chain_id)
                .bind(epoch_ms_after(lease))
                .bind(epoch_ms_after(Duration::ZERO))
                .execute(pool)
                .await
                .map(|r| r.rows_affected()))
            .map_err(|e| backend("claiming the chain", &e))?;
            if taken == 1 {
                return Ok(Claim::Won);
            }
            let row: Option<(Option<String>, Option<String>)> = on_pool!(self, |pool, _begin| sqlx::query_as(READ)
                .bind(chain_id)
                .fetch_optional(pool)
                .await)
            .map_err(|e| backend("reading the claim", &e))?;
            match row {
                None => return Err(StoreError::NoChain(chain_id.to_owned())),
                Some((Some(finished), _)) => {
                    return Ok(Claim::Finished(from_json::<Value>(
                        &finished,
                        "chainbox_chains",
                        "finished",
                        chain_id,
                    )?));
                }
                Some((None, Some(holder))) if holder != claimant => return Ok(Claim::HeldBy(holder)),
                // Released (or taken by this claimant through another
                // connection) between the two statements: try again.
                Some(_) => {}
            }
        }
        Err(StoreError::Backend(format!(
            "claiming chain {chain_id:?}: its claim changed under {CLAIM_ATTEMPTS} attempts"
        )))
    }

    async fn release(&self, chain_id: &str, claimant: &str) -> Result<(), StoreError> {
        const SQL: &str = "UPDATE chainbox_chains SET claimed_by = NULL WHERE chain_id = $1 AND claimed_by = $2";
        let released = on_pool!(self, |pool, _begin| sqlx::query(SQL)
            .bind(chain_id)
            .bind(claimant)
            .execute(pool)
            .await
            .map(|r| r.rows_affected()))
        .map_err(|e| backend("releasing the claim", &e))?;
        if released == 0 {
            // Not held by this claimant: nothing to do, if the chain exists.
            self.must_exist(chain_id).await?;
        }
        Ok(())
    }

    async fn finish(&self, chain_id: &str, result: &Value) -> Result<(), StoreError> {
        const SQL: &str = "UPDATE chainbox_chains SET finished = $1, finished_at = $3, claimed_by = NULL, \
                           pending = NULL, pending_seq = NULL WHERE chain_id = $2";
        let text = to_json(result, "the result")?;
        let done = on_pool!(self, |pool, _begin| sqlx::query(SQL)
            .bind(&text)
            .bind(chain_id)
            .bind(epoch_ms_after(Duration::ZERO))
            .execute(pool)
            .await
            .map(|r| r.rows_affected()))
        .map_err(|e| backend("finishing the chain", &e))?;
        if done == 0 {
            return Err(StoreError::NoChain(chain_id.to_owned()));
        }
        Ok(())
    }

    async fn create_session(&self, chain: &StoredChain, session: &StoredSession) -> Result<(), StoreError> {
        const SQL: &str = "INSERT INTO chainbox_sessions \
                           (session_id, interpreter, created_at, last_used_at, expires_at, ended, cells) \
                           VALUES ($1, $2, $3, $4, $5, $6, $7)";
        let policy = to_json(&chain.policy, "the policy")?;
        let seed = chain.seed.to_string();
        let cells = to_json(&session.cells, "the cells")?;
        let fail = |e: sqlx::Error| {
            if is_unique_violation(&e) {
                StoreError::Exists(format!("session {:?}", session.session_id))
            } else {
                backend("creating the session", &e)
            }
        };
        on_pool!(self, |pool, begin| {
            let mut tx = pool.begin_with(begin).await.map_err(fail)?;
            sqlx::query(INSERT_CHAIN)
                .bind(&chain.chain_id)
                .bind(&chain.script)
                .bind(&policy)
                .bind(&seed)
                .bind(&chain.created_at)
                .bind(chain.owner.as_ref().map(|o| o.issuer.as_str()))
                .bind(chain.owner.as_ref().map(|o| o.subject.as_str()))
                .execute(&mut *tx)
                .await
                .map_err(fail)?;
            sqlx::query(SQL)
                .bind(&session.session_id)
                .bind(interpreter_to_sql(session.interpreter))
                .bind(&session.created_at)
                .bind(&session.last_used_at)
                .bind(&session.expires_at)
                .bind(session.ended.as_deref())
                .bind(&cells)
                .execute(&mut *tx)
                .await
                .map_err(fail)?;
            tx.commit().await.map_err(fail)
        })
    }

    async fn session(&self, session_id: &str) -> Result<Option<StoredSession>, StoreError> {
        let sql = format!("{SELECT_SESSIONS} WHERE s.session_id = $1");
        let row: Option<SessionRow> = on_pool!(self, |pool, _begin| sqlx::query_as(&sql)
            .bind(session_id)
            .fetch_optional(pool)
            .await)
        .map_err(|e| backend("reading the session", &e))?;
        row.map(session_from_sql).transpose()
    }

    async fn update_session(&self, session: &StoredSession) -> Result<(), StoreError> {
        const SQL: &str = "UPDATE chainbox_sessions SET interpreter = $1, last_used_at = $2, expires_at = $3, \
                           ended = COALESCE(ended, $4), cells = $5 WHERE session_id = $6";
        let cells = to_json(&session.cells, "the cells")?;
        let done = on_pool!(self, |pool, _begin| sqlx::query(SQL)
            .bind(interpreter_to_sql(session.interpreter))
            .bind(&session.last_used_at)
            .bind(&session.expires_at)
            .bind(session.ended.as_deref())
            .bind(&cells)
            .bind(&session.session_id)
            .execute(pool)
            .await
            .map(|r| r.rows_affected()))
        .map_err(|e| backend("updating the session", &e))?;
        if done == 0 {
            return Err(StoreError::NoChain(session.session_id.clone()));
        }
        Ok(())
    }

    async fn sessions(&self) -> Result<Vec<StoredSession>, StoreError> {
        let rows: Vec<SessionRow> = on_pool!(self, |pool, _begin| sqlx::query_as(SELECT_SESSIONS)
            .fetch_all(pool)
            .await)
        .map_err(|e| backend("reading the sessions", &e))?;
        let mut sessions = rows.into_iter().map(session_from_sql).collect::<Result<Vec<_>, _>>()?;
        // Byte order, as in MemoryStore (see `pending`).
        sessions.sort_by(|a, b| (&a.created_at, &a.session_id).cmp(&(&b.created_at, &b.session_id)));
        Ok(sessions)
    }

    async fn create_task(&self, chain: Option<&StoredChain>, task: &StoredTask) -> Result<(), StoreError> {
        const SQL: &str = "INSERT INTO chainbox_tasks (task_id, chain_id, created_at, updated_at, ttl_ms, cancel_requested, outcome) \
                           VALUES ($1, $2, $3, $4, $5, $6, $7)";
        let chain = match chain {
            Some(chain) => Some((chain, to_json(&chain.policy, "the policy")?, chain.seed.to_string())),
            None => None,
        };
        let outcome = task.outcome.as_ref().map(|o| to_json(o, "the outcome")).transpose()?;
        let ttl_ms = i64::try_from(task.ttl_ms).unwrap_or(i64::MAX);
        let fail = |e: sqlx::Error| {
            if is_unique_violation(&e) {
                StoreError::Exists(format!("task {:?}", task.task_id))
            } else {
                backend("creating the task", &e)
            }
        };
        on_pool!(self, |pool, begin| {
            let mut tx = pool.begin_with(begin).await.map_err(fail)?;
            if let Some((chain, policy, seed)) = &chain {
                sqlx::query(INSERT_CHAIN)
                    .bind(&chain.chain_id)
                    .bind(&chain.script)
                    .bind(policy)
                    .bind(seed)
                    .bind(&chain.created_at)
                    .bind(chain.owner.as_ref().map(|o| o.issuer.as_str()))
                    .bind(chain.owner.as_ref().map(|o| o.subject.as_str()))
                    .execute(&mut *tx)
                    .await
                    .map_err(fail)?;
            }
            sqlx::query(SQL)
                .bind(&task.task_id)
                .bind(&task.chain_id)
                .bind(&task.created_at)
                .bind(&task.updated_at)
                .bind(ttl_ms)
                .bind(task.cancel_requested)
                .bind(outcome.as_deref())
                .execute(&mut *tx)
                .await
                .map_err(fail)?;
            tx.commit().await.map_err(fail)
        })
    }

    async fn task(&self, task_id: &str) -> Result<Option<StoredTask>, StoreError> {
        const SQL: &str = "SELECT t.chain_id, t.created_at, t.updated_at, t.ttl_ms, t.cancel_requested, t.outcome, \
                           c.owner_issuer, c.owner_subject \
                           FROM chainbox_tasks t JOIN chainbox_chains c ON c.chain_id = t.chain_id WHERE t.task_id = $1";
        type Row = (
            String,
            String,
            String,
            i64,
            bool,
            Option<String>,
            Option<String>,
            Option<String>,
        );
        let row: Option<Row> = on_pool!(self, |pool, _begin| sqlx::query_as(SQL)
            .bind(task_id)
            .fetch_optional(pool)
            .await)
        .map_err(|e| backend("reading the task", &e))?;
        let Some((chain_id, created_at, updated_at, ttl_ms, cancel_requested, outcome, issuer, subject)) = row else {
            return Ok(None);
        };
        Ok(Some(StoredTask {
            owner: owner_from_sql(issuer, subject, task_id)?,
            task_id: task_id.to_owned(),
            chain_id,
            created_at,
            updated_at,
            ttl_ms: u64::try_from(ttl_ms).unwrap_or(0),
            cancel_requested,
            outcome: outcome
                .map(|text| from_json(&text, "chainbox_tasks", "outcome", task_id))
                .transpose()?,
        }))
    }

    async fn end_task(&self, task_id: &str, outcome: &Value) -> Result<bool, StoreError> {
        const SQL: &str =
            "UPDATE chainbox_tasks SET outcome = $1, updated_at = $2 WHERE task_id = $3 AND outcome IS NULL";
        let text = to_json(outcome, "the outcome")?;
        let done = on_pool!(self, |pool, _begin| sqlx::query(SQL)
            .bind(&text)
            .bind(crate::util::utc_now_rfc3339())
            .bind(task_id)
            .execute(pool)
            .await
            .map(|r| r.rows_affected()))
        .map_err(|e| backend("ending the task", &e))?;
        Ok(done == 1)
    }

    async fn cancel_task(&self, task_id: &str) -> Result<(), StoreError> {
        const SQL: &str = "UPDATE chainbox_tasks SET cancel_requested = TRUE WHERE task_id = $1";
        let done = on_pool!(self, |pool, _begin| sqlx::query(SQL)
            .bind(task_id)
            .execute(pool)
            .await
            .map(|r| r.rows_affected()))
        .map_err(|e| backend("cancelling the task", &e))?;
        if done == 0 {
            return Err(StoreError::NoChain(task_id.to_owned()));
        }
        Ok(())
    }

    async fn state_key(&self) -> Result<[u8; STATE_KEY_BYTES], StoreError> {
        // Insert-if-absent, then read: of two processes creating the key at
        // once, one insert wins and both read the winner's key.
        const INSERT: &str = "INSERT INTO chainbox_secrets (name, value) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING";
        const READ: &str = "SELECT value FROM chainbox_secrets WHERE name = $1";
        let fresh = crate::digest::hex(&random_state_key());
        on_pool!(self, |pool, _begin| sqlx::query(INSERT)
            .bind(STATE_KEY_NAME)
            .bind(&fresh)
            .execute(pool)
            .await
            .map(drop))
        .map_err(|e| backend("creating the state key", &e))?;
        let text: String = on_pool!(self, |pool, _begin| sqlx::query_scalar(READ)
            .bind(STATE_KEY_NAME)
            .fetch_one(pool)
            .await)
        .map_err(|e| backend("reading the state key", &e))?;
        key_from_hex(&text)
    }

    async fn idle_chains(&self, dead_before_ms: i64) -> Result<Vec<IdleChain>, StoreError> {
        const SQL: &str = "SELECT c.chain_id, c.policy, c.created_at, c.pending, \
            (SELECT MAX(d.decided_at) FROM chainbox_decisions d WHERE d.chain_id = c.chain_id), \
            CASE WHEN EXISTS (SELECT 1 FROM chainbox_sessions s WHERE s.session_id = c.chain_id) THEN 1 ELSE 0 END, \
            CASE WHEN EXISTS (SELECT 1 FROM chainbox_tasks t WHERE t.chain_id = c.chain_id AND t.outcome IS NULL) \
            THEN 1 ELSE 0 END \
            FROM chainbox_chains c \
            WHERE c.finished IS NULL AND (c.claimed_by IS NULL OR c.claimed_until < $1)";
        type Row = (String, String, String, Option<String>, Option<String>, i32, i32);
        let rows: Vec<Row> = on_pool!(self, |pool, _begin| sqlx::query_as(SQL)
            .bind(dead_before_ms)
            .fetch_all(pool)
            .await)
        .map_err(|e| backend("reading the idle chains", &e))?;
        rows.into_iter()
            .map(
                |(chain_id, policy, created_at, pending, last_decided_at, session, open_task)| {
                    Ok(IdleChain {
                        policy: from_json(&policy, "chainbox_chains", "policy", &chain_id)?,
                        pending: pending
                            .map(|text| from_json(&text, "chainbox_chains", "pending", &chain_id))
                            .transpose()?,
                        chain_id,
                        created_at,
                        last_decided_at,
                        session: session != 0,
                        open_task: open_task != 0,
                    })
                },
            )
            .collect()
    }

    async fn finish_idle(
        &self,
        chain_id: &str,
        result: &Value,
        pending_seq: Option<u32>,
        dead_before_ms: i64,
    ) -> Result<bool, StoreError> {
        // One conditional write: a claim, a suspension or a decision that
        // came since the sweep read the chain makes it touch nothing.
        const SQL: &str = "UPDATE chainbox_chains SET finished = $1, finished_at = $2, claimed_by = NULL, \
                           pending = NULL, pending_seq = NULL \
                           WHERE chain_id = $3 AND finished IS NULL \
                           AND (claimed_by IS NULL OR claimed_until < $4) AND COALESCE(pending_seq, -1) = $5";
        let text = to_json(result, "the result")?;
        let done = on_pool!(self, |pool, _begin| sqlx::query(SQL)
            .bind(&text)
            .bind(epoch_ms_after(Duration::ZERO))
            .bind(chain_id)
            .bind(dead_before_ms)
            .bind(pending_seq.map_or(-1, seq_to_sql))
            .execute(pool)
            .await
            .map(|r| r.rows_affected()))
        .map_err(|e| backend("finishing an idle chain", &e))?;
        Ok(done == 1)
    }

    async fn finished_chains(&self) -> Result<Vec<FinishedChain>, StoreError> {
        // Chains finished before finish times were recorded count from now.
        const STAMP: &str =
            "UPDATE chainbox_chains SET finished_at = $1 WHERE finished IS NOT NULL AND finished_at IS NULL";
        const SQL: &str = "SELECT chain_id, policy, finished_at FROM chainbox_chains \
                           WHERE finished IS NOT NULL AND finished_at IS NOT NULL";
        on_pool!(self, |pool, _begin| sqlx::query(STAMP)
            .bind(epoch_ms_after(Duration::ZERO))
            .execute(pool)
            .await
            .map(drop))
        .map_err(|e| backend("stamping the finished chains", &e))?;
        let rows: Vec<(String, String, i64)> = on_pool!(self, |pool, _begin| sqlx::query_as(SQL).fetch_all(pool).await)
            .map_err(|e| backend("reading the finished chains", &e))?;
        rows.into_iter()
            .map(|(chain_id, policy, finished_at_ms)| {
                Ok(FinishedChain {
                    policy: from_json(&policy, "chainbox_chains", "policy", &chain_id)?,
                    chain_id,
                    finished_at_ms,
                })
            })
            .collect()
    }

    async fn delete_finished(&self, chain_id: &str) -> Result<bool, StoreError> {
        const FINISHED: &str = "SELECT 1 FROM chainbox_chains WHERE chain_id = $1 AND finished IS NOT NULL";
        // Whatever names the chain first (foreign keys), the chain last.
        const DELETE: [&str; 5] = [
            "DELETE FROM chainbox_tasks WHERE chain_id = $1",
            "DELETE FROM chainbox_journal WHERE chain_id = $1",
            "DELETE FROM chainbox_decisions WHERE chain_id = $1",
            "DELETE FROM chainbox_sessions WHERE session_id = $1",
            "DELETE FROM chainbox_chains WHERE chain_id = $1",
        ];
        let fail = |e: sqlx::Error| backend("deleting a finished chain", &e);
        on_pool!(self, |pool, begin| {
            let mut tx = pool.begin_with(begin).await.map_err(fail)?;
            // A finished chain stays finished: checked once, in the
            // transaction that deletes it.
            let finished = sqlx::query(FINISHED)
                .bind(chain_id)
                .fetch_optional(&mut *tx)
                .await
                .map_err(fail)?
                .is_some();
            if !finished {
                return Ok(false);
            }
            for statement in DELETE {
                sqlx::query(statement)
                    .bind(chain_id)
                    .execute(&mut *tx)
                    .await
                    .map_err(fail)?;
            }
            tx.commit().await.map_err(fail)?;
            Ok(true)
        })
    }

    async fn journaled_artifacts(&self) -> Result<Vec<ArtifactRef>, StoreError> {
        const SQL: &str = "SELECT j.chain_id, j.entry FROM chainbox_journal j \
                           JOIN chainbox_chains c ON c.chain_id = j.chain_id WHERE c.finished IS NULL";
        let rows: Vec<(String, String)> = on_pool!(self, |pool, _begin| sqlx::query_as(SQL).fetch_all(pool).await)
            .map_err(|e| backend("reading the journals", &e))?;
        let mut refs = Vec::new();
        for (chain_id, text) in rows {
            let entry: JournalEntry = from_json(&text, "chainbox_journal", "entry", &chain_id)?;
            refs.extend(entry_artifacts(&entry));
        }
        Ok(refs)
    }

    async fn take_lock(&self, name: &str, holder: &str, lease: Duration) -> Result<Lock, StoreError> {
        // Insert, or take over a lock this holder has or whose lease ran
        // out: one statement, so two takers at once cannot both win.
        const TAKE: &str = "INSERT INTO chainbox_locks (name, held_by, held_until) VALUES ($1, $2, $3) \
                            ON CONFLICT (name) DO UPDATE SET held_by = excluded.held_by, held_until = excluded.held_until \
                            WHERE chainbox_locks.held_by = excluded.held_by OR chainbox_locks.held_until < $4";
        const READ: &str = "SELECT held_by FROM chainbox_locks WHERE name = $1";
        let taken = on_pool!(self, |pool, _begin| sqlx::query(TAKE)
            .bind(name)
            .bind(holder)
            .bind(epoch_ms_after(lease))
            .bind(epoch_ms_after(Duration::ZERO))
            .execute(pool)
            .await
            .map(|r| r.rows_affected()))
        .map_err(|e| backend("taking a lock", &e))?;
        if taken == 1 {
            return Ok(Lock::Taken);
        }
        let holder: Option<String> = on_pool!(self, |pool, _begin| sqlx::query_scalar(READ)
            .bind(name)
            .fetch_optional(pool)
            .await)
        .map_err(|e| backend("reading a lock", &e))?;
        // Released between the two statements: as good as held a moment ago.
        Ok(Lock::HeldBy(holder.unwrap_or_else(|| "(released just now)".to_owned())))
    }

    async fn release_lock(&self, name: &str, holder: &str) -> Result<(), StoreError> {
        const SQL: &str = "DELETE FROM chainbox_locks WHERE name = $1 AND held_by = $2";
        on_pool!(self, |pool, _begin| sqlx::query(SQL)
            .bind(name)
            .bind(holder)
            .execute(pool)
            .await
            .map(drop))
        .map_err(|e| backend("releasing a lock", &e))
    }

    async fn counts(&self) -> Result<StoreCounts, StoreError> {
        const SQL: &str = "SELECT (SELECT COUNT(*) FROM chainbox_chains), \
                           (SELECT COUNT(*) FROM chainbox_chains WHERE finished IS NOT NULL), \
                           (SELECT COUNT(*) FROM chainbox_journal), (SELECT COUNT(*) FROM chainbox_decisions), \
                           (SELECT COUNT(*) FROM chainbox_sessions), (SELECT COUNT(*) FROM chainbox_tasks)";
        let (chains, finished, journal, decisions, sessions, tasks): (i64, i64, i64, i64, i64, i64) =
            on_pool!(self, |pool, _begin| sqlx::query_as(SQL).fetch_one(pool).await)
                .map_err(|e| backend("counting the rows", &e))?;
        let count = |n: i64| u64::try_from(n).unwrap_or(0);
        Ok(StoreCounts {
            chains: count(chains),
            finished: count(finished),
            journal: count(journal),
            decisions: count(decisions),
            sessions: count(sessions),
            tasks: count(tasks),
        })
    }
}
