//! The threads CPython guests run on: one per running CPython chain, at
//! most as many as the engine has chain slots, kept a while between chains.
//!
//! Why not tokio's blocking pool: a CPython guest has no epoch checks, so
//! it never yields, and it holds its thread for its chain's whole life,
//! parked tool calls included. The tools it awaits (`read_file`, a terminal
//! approval) run on the blocking pool too: with every pool thread held by
//! a parked chain (512 by default), their calls would wait for a thread
//! that only those calls' ending frees. Threads of their own, one per chain
//! slot, keep the two apart.

use std::collections::VecDeque;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::Duration;

/// How long an idle thread waits for its next chain before it ends.
const IDLE: Duration = Duration::from_secs(10);

/// A guest's run, from start to its answer.
type Job = Box<dyn FnOnce() + Send>;

/// The CPython guests' threads of one engine.
pub(crate) struct GuestThreads {
    state: Mutex<State>,
    ready: Condvar,
    /// The most threads at once: the engine's chain slots.
    max: usize,
}

/// Runs waiting for a thread, and the threads: idle (waiting for a run)
/// and all.
#[derive(Default)]
struct State {
    jobs: VecDeque<Job>,
    idle: usize,
    threads: usize,
}

/// No thread could be started for a guest.
#[derive(Debug, thiserror::Error)]
#[error("no thread could be started for the CPython guest: {0}")]
pub(crate) struct NoThread(std::io::Error);

impl GuestThreads {
    /// Threads for an engine of `slots` chain slots; none started yet.
    pub(crate) fn new(slots: u32) -> Arc<Self> {
        Arc::new(GuestThreads {
            state: Mutex::new(State::default()),
            ready: Condvar::new(),
            max: (slots as usize).max(1),
        })
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Runs `job` on an idle thread, or a new one while there are fewer
    /// than the slots; else it waits for one (a finished chain's thread is
    /// back in a moment: its slot was given up with its answer).
    pub(crate) fn run(self: &Arc<Self>, job: impl FnOnce() + Send + 'static) -> Result<(), NoThread> {
        let mut state = self.state();
        state.jobs.push_back(Box::new(job));
        if state.jobs.len() <= state.idle {
            self.ready.notify_one();
            return Ok(());
        }
        if state.threads >= self.max {
            return Ok(());
        }
        state.threads += 1;
        let threads = self.clone();
        let spawned = std::thread::Builder::new()
            .name("chainbox-cpython".into())
            .spawn(move || threads.work());
        if let Err(e) = spawned {
            state.threads -= 1;
            drop(state.jobs.pop_back());
            return Err(NoThread(e));
        }
        Ok(())
    }

    /// A thread's life: runs jobs until none comes for [`IDLE`].
    fn work(&self) {
        let mut state = self.state();
        loop {
            if let Some(job) = state.jobs.pop_front() {
                drop(state);
                // A run that panics (its runtime shut down under it) ends
                // alone: the thread, and its count, carry on.
                if std::panic::catch_unwind(std::panic::AssertUnwindSafe(job)).is_err() {
                    tracing::error!("a CPython guest's run panicked");
                }
                state = self.state();
                continue;
            }
            state.idle += 1;
            let (next, waited) = self.ready.wait_timeout(state, IDLE).unwrap_or_else(|p| p.into_inner());
            state = next;
            state.idle -= 1;
            if waited.timed_out() && state.jobs.is_empty() {
                state.threads -= 1;
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Barrier;
    use std::sync::mpsc::channel;

    #[test]
    fn runs_as_many_jobs_at_once_as_it_has_slots() {
        let threads = GuestThreads::new(4);
        let together = Arc::new(Barrier::new(4));
        let (done, finished) = channel();
        for _ in 0..4 {
            let (together, done) = (together.clone(), done.clone());
            threads
                .run(move || {
                    together.wait();
                    done.send(()).expect("the test waits");
                })
                .expect("a thread");
        }
        for _ in 0..4 {
            finished
                .recv_timeout(Duration::from_secs(10))
                .expect("four jobs ran at once");
        }
    }

    #[test]
    fn a_finished_jobs_thread_runs_the_next() {
        let threads = GuestThreads::new(1);
        let (done, finished) = channel();
        for i in 0..3 {
            let done = done.clone();
            threads
                .run(move || done.send((i, std::thread::current().id())).expect("the test waits"))
                .expect("a thread");
        }
        let ran: Vec<_> = (0..3)
            .map(|_| finished.recv_timeout(Duration::from_secs(10)).expect("ran"))
            .collect();
        assert_eq!(ran.iter().map(|r| r.0).collect::<Vec<_>>(), [0, 1, 2]);
        assert!(ran.iter().all(|r| r.1 == ran[0].1), "one slot, one thread: {ran:?}");
    }
}
