//! Sessions' instances kept warm between cells: the fast path of a session
//! ([`crate::durable`]'s `run_cell`).
//!
//! A session's cell normally runs on a fresh instance that first runs the
//! session's earlier cells again (their calls answered from the journal).
//! The instance that ran a cell to its end holds exactly the state the next
//! cell needs, so it is parked here under its session, and the session's
//! next cell on this engine continues it (`RunRequest::continued`): nothing
//! runs again. Any other node, and this one when the instance is gone,
//! rebuilds the session by replay as before: parking is an optimisation
//! that never changes an answer.
//!
//! An instance is only continued by the state it was parked for, named by
//! a [`WarmKey`]: a digest of the session, its seed, the guest, the tools
//! and guest limits, and every kept cell's source and base in order. A
//! cell the store holds but this instance did not run (another node ran
//! it), another tool set or memory limit: another key, and the parked
//! instance is dropped for a replay.
//!
//! Bounded: at most `max_warm_sessions` instances (the pools have that
//! many slots more than chains), and `max_warm_session_bytes` of linear
//! memory between them; the least recently parked go first.

use std::sync::{Arc, Mutex, MutexGuard};

use sha2::{Digest, Sha256};
use wasmtime::{Memory, Store, TypedFunc};

use super::{Core, CpythonGuest, Instance, MontyInstance, RunExport};
use crate::sandbox::{self, ChainSetup, ChainState};

/// The state a parked instance holds: see the module's doc.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct WarmKey([u8; 32]);

impl WarmKey {
    /// The key of a session's state after its kept `cells` (source and
    /// base, oldest first), on `interpreter`, with `tools` (the guest's
    /// declarations, encoded) and the guest limits of `max_memory_bytes`.
    pub(crate) fn new<'a>(
        session: &str,
        seed: Option<u64>,
        interpreter: crate::python_choice::Interpreter,
        tools: &[u8],
        max_memory_bytes: u64,
        cells: impl IntoIterator<Item = (&'a str, u32)>,
    ) -> Self {
        let mut digest = Sha256::new();
        let mut field = |bytes: &[u8]| {
            digest.update((bytes.len() as u64).to_le_bytes());
            digest.update(bytes);
        };
        field(session.as_bytes());
        field(&seed.map_or([0xff; 9], |s| {
            let mut b = [0; 9];
            b[1..].copy_from_slice(&s.to_le_bytes());
            b
        }));
        field(interpreter.as_str().as_bytes());
        field(tools);
        field(&max_memory_bytes.to_le_bytes());
        for (source, base) in cells {
            field(source.as_bytes());
            field(&base.to_le_bytes());
        }
        WarmKey(digest.finalize().into())
    }
}

/// What a later run of a parked instance calls.
pub(crate) enum Entry {
    /// The monty guest's `chainbox_next`.
    Monty(TypedFunc<(), ()>),
    /// The CPython guest's `run`, called again, and its guest.
    Cpython(RunExport, Arc<CpythonGuest>),
}

/// An instance whose last run was a session's cell, kept for the next.
pub(crate) struct Parked {
    pub(crate) store: Store<ChainState>,
    /// The monty guest's memory (the CPython guest's is the store's).
    pub(crate) memory: Option<Memory>,
    pub(crate) entry: Entry,
    /// The cell's workspace directory (the CPython guest's `/workspace`
    /// preopen is this directory): the next cell's, with what the earlier
    /// cells wrote in it, as a replay would have written it again.
    pub(crate) workspace: Option<tempfile::TempDir>,
}

struct Slot {
    session: String,
    key: WarmKey,
    bytes: usize,
    parked: Parked,
}

/// The parked instances of an engine, least recently parked first.
pub(crate) struct ParkedSessions {
    slots: Mutex<Vec<Slot>>,
    max: usize,
    max_bytes: usize,
}

impl ParkedSessions {
    /// At most `max` instances, `max_bytes` of linear memory between them.
    pub(crate) fn new(max: u32, max_bytes: u64) -> Self {
        ParkedSessions {
            slots: Mutex::new(Vec::new()),
            max: max as usize,
            max_bytes: usize::try_from(max_bytes).unwrap_or(usize::MAX),
        }
    }

    fn slots(&self) -> MutexGuard<'_, Vec<Slot>> {
        self.slots.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl Core {
    /// Parks `parked`, the instance of `session`'s cell that has just
    /// ended, as its state `key`; drops what that pushes past the bounds
    /// (and the session's instance parked before, if any).
    pub(crate) fn park(&self, session: &str, key: WarmKey, mut parked: Parked) {
        parked.store.data_mut().cancel_running_calls();
        let bytes = parked.store.data().memory_size();
        let parks = &self.parked;
        if parks.max == 0 || bytes > parks.max_bytes {
            self.drop_parked(parked);
            return;
        }
        let mut evicted = Vec::new();
        {
            let mut slots = parks.slots();
            if let Some(at) = slots.iter().position(|s| s.session == session) {
                evicted.push(slots.remove(at).parked);
            }
            let mut total: usize = slots.iter().map(|s| s.bytes).sum::<usize>() + bytes;
            while !slots.is_empty() && (slots.len() >= parks.max || total > parks.max_bytes) {
                let oldest = slots.remove(0);
                total -= oldest.bytes;
                evicted.push(oldest.parked);
            }
            slots.push(Slot {
                session: session.to_owned(),
                key,
                bytes,
                parked,
            });
        }
        evicted.into_iter().for_each(|p| self.drop_parked(p));
    }

    /// The instance parked for `session` if it holds state `key` and fits
    /// `setup`'s chain (its memory within the limit, a workspace it can
    /// adopt), bound to that chain to continue it; else `None`, and
    /// whatever was parked for the session is dropped (it is stale, or it
    /// could not be used), and `setup` comes back.
    pub(crate) fn unpark<'a>(
        &self,
        session: &str,
        key: WarmKey,
        setup: ChainSetup<'a>,
    ) -> Result<Instance, ChainSetup<'a>> {
        let parked = {
            let mut slots = self.parked.slots();
            let Some(at) = slots.iter().position(|s| s.session == session) else {
                return Err(setup);
            };
            slots.remove(at)
        };
        let adoptable = setup.workspace.lock().unwrap_or_else(|p| p.into_inner()).can_adopt();
        if parked.key != key || !sandbox::fits(&parked.parked.store, setup.policy) || !adoptable {
            self.drop_parked(parked.parked);
            return Err(setup);
        }
        let Parked {
            store,
            memory,
            entry,
            workspace,
        } = parked.parked;
        if let Some(dir) = workspace {
            setup.workspace.lock().unwrap_or_else(|p| p.into_inner()).adopt(dir);
        }
        // Its randomness goes on where the last cell left it, as a replay's
        // would: the generator is not restarted.
        let setup = ChainSetup {
            continued: true,
            ..setup
        };
        let store = sandbox::bind(store, setup);
        Ok(match entry {
            Entry::Monty(next) => Instance::Monty(MontyInstance {
                store,
                memory,
                start: next.clone(),
                next: Some(next),
            }),
            Entry::Cpython(run, guest) => Instance::Cpython { store, run, guest },
        })
    }

    /// Drops the instance parked for `session`, if any (the session ended).
    pub(crate) fn forget_session(&self, session: &str) {
        let parked = {
            let mut slots = self.parked.slots();
            let at = slots.iter().position(|s| s.session == session);
            at.map(|at| slots.remove(at).parked)
        };
        if let Some(parked) = parked {
            self.drop_parked(parked);
        }
    }

    /// Lets a parked instance go, as a finished chain's store goes: on its
    /// guest's housekeeper, its slot free again.
    fn drop_parked(&self, parked: Parked) {
        match &parked.entry {
            Entry::Monty(_) => {
                self.warm.freed(parked.store.data().slot, None);
                self.housekeeper.retire(Box::new(parked));
            }
            Entry::Cpython(_, guest) => {
                let guest = guest.clone();
                let state = parked.store.data();
                guest.warm.freed(state.slot, state.cpython_memory());
                guest.housekeeper.retire(Box::new(parked));
            }
        }
    }
}
