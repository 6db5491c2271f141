//! The kept threads the check runs on: ty recurses deeply (and so may the
//! scan of a deeply nested script), so a check needs a deep stack. On the
//! caller's (a tokio worker's 2 MiB, a main thread's 8 MiB) it ran on a
//! stack grown for it (`stacker`): mapped, faulted in page by page and
//! unmapped for each check, ~90 µs of a warm check. A kept thread's stack
//! is mapped once and its pages stay. The threads are the process's,
//! shared by every engine.
//!
//! Not for the `auto` scan of a chain's script: it is short, and the hop
//! to a kept thread (a channel's send and a sleeping thread's wake-up)
//! costs more than the stack `stacker` grows for it on a worker. Measured
//! side by side on an idle machine: 59 µs through a kept thread vs 37 µs
//! on a grown stack for a 531-byte corpus script (BENCHMARKS.md).

use std::{
    panic::{AssertUnwindSafe, catch_unwind, resume_unwind},
    sync::{
        LazyLock, Mutex, PoisonError,
        mpsc::{Receiver, SyncSender, sync_channel},
    },
};

/// The stack of a kept thread: the scan of a script of up to ~7 KB
/// (`python_choice`'s 8 KiB per byte) and ty's 8 MiB red zone fit without
/// growing it. Reserved, not committed: a thread pays for the pages its
/// deepest work touched.
pub(crate) const STACK_BYTES: usize = 64 * 1024 * 1024;

/// Idle threads kept; a busier engine starts more and ends the extra.
const IDLE_THREADS: usize = 4;

type Job = Box<dyn FnOnce() + Send>;

/// The process's kept threads.
static THREADS: LazyLock<Threads> = LazyLock::new(Threads::default);

/// `work`'s result, computed on a kept thread with a stack of
/// [`STACK_BYTES`] (on the caller's if no thread can be started). A panic
/// in `work` is the caller's.
pub(crate) fn run<R: Send + 'static>(work: impl FnOnce() -> R + Send + 'static) -> R {
    THREADS.run(work)
}

/// Idle threads, each waiting for a job on its channel.
#[derive(Default)]
struct Threads {
    idle: Mutex<Vec<SyncSender<Job>>>,
}

impl Threads {
    /// `work`'s result, computed on a kept thread (on the caller's if no
    /// thread can be started). A panic in `work` is the caller's.
    fn run<R: Send + 'static>(&self, work: impl FnOnce() -> R + Send + 'static) -> R {
        let (done, result) = sync_channel(1);
        let job: Job = Box::new(move || {
            let _ = done.send(catch_unwind(AssertUnwindSafe(work)));
        });
        let (thread, job) = match self.send(job) {
            Ok(thread) => (Some(thread), None),
            Err(job) => (None, Some(job)),
        };
        if let Some(job) = job {
            job();
        }
        let outcome = match result.recv() {
            Ok(outcome) => outcome,
            // The job was dropped unrun: its thread is gone (it cannot be,
            // the job catches what unwinds) or the caller's ran it. Neither
            // leaves the result unsent; say so rather than hang.
            Err(_) => panic!("a kept thread ended without its result"),
        };
        if let Some(thread) = thread {
            let mut idle = self.idle.lock().unwrap_or_else(PoisonError::into_inner);
            if idle.len() < IDLE_THREADS {
                idle.push(thread);
            }
        }
        outcome.unwrap_or_else(|panic| resume_unwind(panic))
    }

    /// Gives `job` to an idle thread or a new one, and returns its
    /// channel; the job back if no thread would take it.
    fn send(&self, mut job: Job) -> Result<SyncSender<Job>, Job> {
        loop {
            let idle = self.idle.lock().unwrap_or_else(PoisonError::into_inner).pop();
            let Some(thread) = idle else { break };
            match thread.send(job) {
                Ok(()) => return Ok(thread),
                // Its thread has ended: try the next.
                Err(returned) => job = returned.0,
            }
        }
        let (jobs, waiting) = sync_channel::<Job>(1);
        let started = std::thread::Builder::new()
            .name("chainbox-deep".to_owned())
            .stack_size(STACK_BYTES)
            .spawn(move || serve(&waiting));
        match started {
            Ok(_) => match jobs.send(job) {
                Ok(()) => Ok(jobs),
                Err(returned) => Err(returned.0),
            },
            Err(_) => Err(job),
        }
    }
}

/// A kept thread's life: its jobs, until its channel is dropped.
fn serve(jobs: &Receiver<Job>) {
    while let Ok(job) = jobs.recv() {
        job();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn work_runs_on_a_kept_thread_and_its_panic_is_the_callers() {
        let threads = Threads::default();
        let name = || std::thread::current().name().map(str::to_owned);
        assert_eq!(threads.run(name).as_deref(), Some("chainbox-deep"));
        let first = threads.run(|| std::thread::current().id());
        assert_eq!(threads.run(|| std::thread::current().id()), first);
        let panicked = catch_unwind(AssertUnwindSafe(|| threads.run(|| panic!("in the check"))));
        assert_eq!(
            panicked.err().and_then(|p| p.downcast_ref::<&str>().copied()),
            Some("in the check")
        );
        assert_eq!(threads.run(|| 2 + 2), 4);
    }
}
