//! A chain as it runs: what it prints and the tool calls it makes, handed
//! to an [`Observer`] the moment they happen, while the whole of them still
//! arrives in the result at the end. For a CLI that shows a script's output
//! as it comes, a server that streams it to its client, an embedder's
//! progress view.
//!
//! Invariants: the observer sees exactly the stdout the result keeps (the
//! text within `max_stdout_bytes`, in order; nothing past the cap), and a
//! call's events in order (started, then finished) with the record the
//! trace will hold. The observer is called on the chain's own threads,
//! never under a lock of the chain's: it must return quickly (hand the
//! event to a channel, as [`Observer::channel`] does).

use std::fmt;
use std::sync::Arc;

use tokio::sync::mpsc;

use crate::result::ChainCallRecord;

/// Something that happened in a running chain.
#[derive(Debug, Clone, PartialEq)]
pub enum ChainEvent {
    /// The script printed this text (a `print`, a `sys.stdout.write`).
    Stdout(String),
    /// A tool call passed its gates and its tool starts (a call answered
    /// from a durable chain's journal has no start, only its finish).
    CallStarted {
        /// The call's id, as in its trace record.
        call_id: String,
        /// The tool.
        tool: String,
    },
    /// A tool call ended: its trace record.
    CallFinished(ChainCallRecord),
}

/// Where a chain's [`ChainEvent`]s go ([`crate::RunOptions::observer`]).
/// Cheap to clone.
#[derive(Clone)]
pub struct Observer(Arc<dyn Fn(ChainEvent) + Send + Sync>);

impl Observer {
    /// Calls `f` with each event. `f` runs on the chain's threads: keep it
    /// short and never block in it.
    pub fn new(f: impl Fn(ChainEvent) + Send + Sync + 'static) -> Self {
        Observer(Arc::new(f))
    }

    /// An observer that sends each event to the returned receiver
    /// (unbounded: the stdout it carries is bounded by the policy's
    /// `max_stdout_bytes`, the calls by its `max_tool_calls`).
    pub fn channel() -> (Self, mpsc::UnboundedReceiver<ChainEvent>) {
        let (tx, rx) = mpsc::unbounded_channel();
        (
            Observer::new(move |event| {
                // A receiver that went away wants no more events.
                let _ = tx.send(event);
            }),
            rx,
        )
    }

    /// Hands `event` over.
    pub fn send(&self, event: ChainEvent) {
        (self.0)(event);
    }
}

impl fmt::Debug for Observer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Observer")
    }
}
