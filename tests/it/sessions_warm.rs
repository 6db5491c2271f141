//! A session's warm path, through the library: the engine that ran a
//! session's cell keeps its instance parked, and the session's next cell
//! there continues it instead of replaying the earlier cells; every other
//! engine (here: one that parks nothing, on the same store) replays. Both
//! give the same names, randomness and files; a cell another engine ran
//! meanwhile, or one that was dropped, is never skipped or half-applied.

use std::sync::Arc;

use chainbox::durable::{Durable, NEW_SESSION};
use chainbox::store::{ChainStore, MemoryStore};
use chainbox::{Approval, ChainPolicy, ChainRunResult, Engine, EngineConfig, PythonChoice};
use serde_json::Value;

/// An engine of its own, parking up to `warm` sessions (0: every cell
/// replays), its CPython guest built.
async fn engine(warm: u32) -> Engine {
    let engine = Engine::with_config(EngineConfig {
        max_concurrent_chains: 4,
        max_warm_sessions: warm,
        ..EngineConfig::default()
    })
    .expect("an engine");
    engine.prepare_cpython().await.expect("the CPython guest");
    engine
}

/// One session on one store, and the engines that run its cells.
struct Twin {
    warm: Durable,
    cold: Durable,
    policy: ChainPolicy,
    id: Option<String>,
}

impl Twin {
    async fn new(python: PythonChoice) -> Self {
        Self::parking(python, 4).await
    }

    /// A twin whose warm engine parks at most `parked` sessions.
    async fn parking(python: PythonChoice, parked: u32) -> Self {
        let store: Arc<dyn ChainStore> = Arc::new(MemoryStore::new());
        let policy = ChainPolicy {
            python,
            ..ChainPolicy::default()
        };
        Twin {
            warm: engine(parked).await.durable(store.clone()),
            cold: engine(0).await.durable(store),
            policy,
            id: None,
        }
    }

    /// Another session on the same engines and store.
    fn another(&self) -> Self {
        Twin {
            warm: self.warm.clone(),
            cold: self.cold.clone(),
            policy: self.policy.clone(),
            id: None,
        }
    }

    /// Runs `cell` on the warm engine (`warm`) or the cold one: its result.
    async fn cell(&mut self, warm: bool, cell: &str) -> ChainRunResult {
        let durable = if warm { &self.warm } else { &self.cold };
        let session = self.id.clone().unwrap_or_else(|| NEW_SESSION.to_owned());
        let registry = crate::fixtures::registry();
        let result = durable
            .run_cell(&session, cell, &registry, &self.policy, &Approval::deny_all())
            .await
            .expect("a cell");
        if let Some(cell) = &result.session {
            self.id = Some(cell.session_id.clone());
        }
        result
    }

    /// [`Twin::cell`], which must run to its end: its output.
    async fn output(&mut self, warm: bool, cell: &str) -> Value {
        let result = self.cell(warm, cell).await;
        assert!(result.is_ok(), "{cell:?}: {:?}", result.error);
        result.output
    }
}

async fn the_next_cell_on_the_same_engine_continues_the_instance(python: PythonChoice) {
    let mut twin = Twin::new(python).await;
    let stamp = twin.output(true, "import time\nt = time.time_ns()\nt").await;
    tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    // Continued: `t` was not computed again (a replay reads the clock anew).
    assert_eq!(twin.output(true, "t").await, stamp);
    let replayed = twin.output(false, "t").await;
    assert_ne!(replayed, stamp, "a replay computes `t` again");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_next_cell_on_the_same_engine_continues_the_instance_on_monty() {
    the_next_cell_on_the_same_engine_continues_the_instance(PythonChoice::Monty).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn the_next_cell_on_the_same_engine_continues_the_instance_on_cpython() {
    the_next_cell_on_the_same_engine_continues_the_instance(PythonChoice::Cpython).await;
}

async fn the_least_recently_parked_session_goes_first(python: PythonChoice) {
    let mut first = Twin::parking(python, 1).await;
    let mut second = first.another();
    let clock = "import time\nt = time.time_ns()\nt";
    let first_stamp = first.output(true, clock).await;
    let second_stamp = second.output(true, clock).await;
    tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    // One session parked at most: the second's instance pushed the first's out.
    assert_eq!(second.output(true, "t").await, second_stamp);
    assert_ne!(first.output(true, "t").await, first_stamp, "the first session replays");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_least_recently_parked_session_goes_first_on_monty() {
    the_least_recently_parked_session_goes_first(PythonChoice::Monty).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn the_least_recently_parked_session_goes_first_on_cpython() {
    the_least_recently_parked_session_goes_first(PythonChoice::Cpython).await;
}

async fn a_continued_cell_draws_the_randomness_a_replay_draws(python: PythonChoice) {
    let mut twin = Twin::new(python).await;
    twin.output(true, "import random\na = random.random()").await;
    let warm = twin
        .output(true, "b = random.random()\nc = random.getrandbits(32)\n[a, b, c]")
        .await;
    assert_eq!(twin.output(false, "[a, b, c]").await, warm);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_continued_cell_draws_the_randomness_a_replay_draws_on_monty() {
    a_continued_cell_draws_the_randomness_a_replay_draws(PythonChoice::Monty).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_continued_cell_draws_the_randomness_a_replay_draws_on_cpython() {
    a_continued_cell_draws_the_randomness_a_replay_draws(PythonChoice::Cpython).await;
}

async fn a_cell_another_engine_ran_meanwhile_is_seen_by_the_next(python: PythonChoice) {
    let mut twin = Twin::new(python).await;
    twin.output(true, "x = 1\nitems = [x]").await;
    twin.output(false, "x = x + 1\nitems.append(x)").await;
    // The warm engine's parked instance holds the state before that cell:
    // it is not used.
    assert_eq!(twin.output(true, "[x, items]").await, serde_json::json!([2, [1, 2]]));
    assert_eq!(twin.output(true, "x").await, serde_json::json!(2));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_cell_another_engine_ran_meanwhile_is_seen_by_the_next_on_monty() {
    a_cell_another_engine_ran_meanwhile_is_seen_by_the_next(PythonChoice::Monty).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_cell_another_engine_ran_meanwhile_is_seen_by_the_next_on_cpython() {
    a_cell_another_engine_ran_meanwhile_is_seen_by_the_next(PythonChoice::Cpython).await;
}

async fn a_dropped_cell_leaves_nothing_behind_on_the_warm_engine(python: PythonChoice) {
    let mut twin = Twin::new(python).await;
    twin.output(true, "x = 1").await;
    twin.policy.max_cpu_s = 0.3;
    let stopped = twin.cell(true, "x = 2\nwhile True:\n    pass").await;
    assert_eq!(
        stopped.error.as_ref().map(|e| e.kind),
        Some(chainbox::ErrorKind::Cpu),
        "{stopped:?}"
    );
    twin.policy.max_cpu_s = ChainPolicy::default().max_cpu_s;
    // The stopped cell is dropped: its `x = 2` is no name of the session.
    assert_eq!(twin.output(true, "x").await, serde_json::json!(1));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_dropped_cell_leaves_nothing_behind_on_the_warm_engine_on_monty() {
    a_dropped_cell_leaves_nothing_behind_on_the_warm_engine(PythonChoice::Monty).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_dropped_cell_leaves_nothing_behind_on_the_warm_engine_on_cpython() {
    a_dropped_cell_leaves_nothing_behind_on_the_warm_engine(PythonChoice::Cpython).await;
}

async fn files_an_earlier_cell_wrote_are_in_the_next_cells_workspace(python: PythonChoice) {
    let mut twin = Twin::new(python).await;
    twin.output(true, "with open('notes.txt', 'w') as f:\n    f.write('kept')")
        .await;
    assert_eq!(twin.output(true, "open('notes.txt').read()").await, "kept");
    // A replay writes it again.
    assert_eq!(twin.output(false, "open('notes.txt').read()").await, "kept");
}

#[tokio::test(flavor = "multi_thread")]
async fn files_an_earlier_cell_wrote_are_in_the_next_cells_workspace_on_monty() {
    files_an_earlier_cell_wrote_are_in_the_next_cells_workspace(PythonChoice::Monty).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn files_an_earlier_cell_wrote_are_in_the_next_cells_workspace_on_cpython() {
    files_an_earlier_cell_wrote_are_in_the_next_cells_workspace(PythonChoice::Cpython).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_warm_monty_session_that_needs_cpython_moves_there_and_keeps_every_name() {
    let mut twin = Twin::new(PythonChoice::Auto).await;
    twin.output(true, "x = 1\ndef f():\n    return x + 1").await;
    // `fractions`: CPython only (the router's scan).
    let moved = twin
        .cell(true, "import fractions\ny = str(fractions.Fraction(1, 3))\n[x, f(), y]")
        .await;
    assert!(moved.is_ok(), "{:?}", moved.error);
    assert_eq!(moved.interpreter, chainbox::Interpreter::Cpython);
    assert_eq!(moved.output, serde_json::json!([1, 2, "1/3"]));
    let next = twin.cell(true, "[x, f(), y]").await;
    assert_eq!(
        (next.interpreter, next.output),
        (chainbox::Interpreter::Cpython, serde_json::json!([1, 2, "1/3"]))
    );
}
