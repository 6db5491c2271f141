//! What happens between chains: each guest (monty, CPython) has a
//! housekeeper, one thread at a lower priority than the chains, that drops
//! finished chains' stores after they have answered and then makes the next
//! **spare**, an instance made before its chain is known, which the next
//! chain takes instead of instantiating its own.
//!
//! Why: an agent's chains start on an idle engine (its model thinks in
//! between), and on an idle machine every step of a chain's start runs on
//! cold caches: instantiating monty's guest and mapping its hot pages took
//! ~200 µs of a ~660 µs trivial chain after 20 ms idle (~36 µs back to
//! back); a fresh CPython instance ~1.5 ms plus ~6 ms of first-run page
//! faults. Made ahead of time, that work is off the chain's path; so is
//! unmapping a finished store. On a busy machine the chains win the CPU; a
//! chain that finds no spare makes its own instance, as without one.
//!
//! A spare is made when a chain has finished (or on request), not while one
//! runs: made meanwhile, it slowed that chain (the two contend for the
//! process's address space) by more than it saved.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, Sender};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::thread::JoinHandle;

/// A finished chain's store (and its pool slot), or a spare no chain could
/// use, for the housekeeper to drop.
pub(crate) type Retired = Box<dyn Send>;

/// Niceness of housekeeper threads (0 is the chains' own).
const NICE: i32 = 10;

/// A guest whose chains a [`Housekeeper`] serves: how it makes a spare.
pub(crate) trait Guest: Send + Sync + 'static {
    /// An instance made ahead of its chain.
    type Spare: Send + 'static;

    /// Why a spare could not be made (logged; the chain makes its own).
    type Error: std::fmt::Display;

    /// Makes a spare (on the housekeeper's thread, inside `runtime`).
    fn make_spare(&self, runtime: &tokio::runtime::Runtime) -> Result<Self::Spare, Self::Error>;

    /// This guest's housekeeper.
    fn housekeeper(&self) -> &Housekeeper<Self::Spare>;

    /// Gives back memory its pool keeps past what it needs (after the
    /// housekeeper has dropped stores; see `guests::warm`).
    fn trim(&self) {}
}

/// One guest's spare and the queue of its housekeeper thread.
pub(crate) struct Housekeeper<S> {
    spare: Mutex<Option<S>>,
    /// The thread's queue: what to drop (`None`: only refill). `None` before
    /// [`Housekeeper::start`] and after [`Housekeeper::shut_down`], when
    /// retired stores are dropped in place; dropping it ends the thread.
    queue: Mutex<Option<Sender<Option<Retired>>>>,
    /// The thread, joined when the guest shuts down.
    thread: Mutex<Option<JoinHandle<()>>>,
    /// Set when the engine is dropped: no more spares.
    stopping: AtomicBool,
    /// Retired stores queued and not yet dropped by the thread.
    behind: AtomicUsize,
}

fn locked<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|p| p.into_inner())
}

impl<S: Send + 'static> Housekeeper<S> {
    /// A housekeeper with no thread yet: [`Housekeeper::start`] it once its
    /// guest is shared. Until then, retired stores are dropped in place and
    /// no spare is made.
    pub(crate) fn new() -> Self {
        Housekeeper {
            spare: Mutex::new(None),
            queue: Mutex::new(None),
            thread: Mutex::new(None),
            stopping: AtomicBool::new(false),
            behind: AtomicUsize::new(0),
        }
    }

    /// Starts the thread of `guest`'s housekeeper (named `name`). It holds
    /// the guest weakly: it ends when the guest is dropped.
    pub(crate) fn start<G: Guest<Spare = S>>(guest: &Arc<G>, name: &str) -> std::io::Result<()> {
        let keeper = guest.housekeeper();
        let (queue, jobs) = std::sync::mpsc::channel();
        let weak = Arc::downgrade(guest);
        let thread = std::thread::Builder::new()
            .name(name.into())
            .spawn(move || housekeep(weak, jobs))?;
        *locked(&keeper.queue) = Some(queue);
        *locked(&keeper.thread) = Some(thread);
        Ok(())
    }

    /// The spare, if one is ready. The next one is made when a chain has
    /// finished ([`Housekeeper::retire`]).
    pub(crate) fn take_spare(&self) -> Option<S> {
        locked(&self.spare).take()
    }

    /// What `look` makes of the spare, if any, left in place.
    #[cfg(test)]
    pub(crate) fn peek_spare<R>(&self, look: impl FnOnce(Option<&S>) -> R) -> R {
        look(locked(&self.spare).as_ref())
    }

    /// Asks for a spare now (not only after a chain): for engines prepared
    /// ahead of their first chain.
    pub(crate) fn request_spare(&self) {
        if let Some(queue) = locked(&self.queue).as_ref() {
            let _ = queue.send(None);
        }
    }

    /// Hands a finished chain's store to the housekeeper (dropped there,
    /// then the next spare made); dropped here if there is no housekeeper,
    /// or if it has not yet dropped the last one handed to it.
    ///
    /// Why not always queue: a store holds its pool slot until it is
    /// dropped, and a chain that finds no freed slot that a chain wrote
    /// before gets one never written, whose pages it faults in one by one
    /// (~8 µs each in a VM, ~6 ms for a CPython chain). Under load the
    /// housekeeper, one thread at a lower priority, fell behind: 8 callers
    /// of trivial CPython chains on 2 cores cost ~10 ms of CPU a chain
    /// instead of ~2.3 ms (BENCHMARKS.md, issue 48). Dropped by its own
    /// chain, a store frees its slot at once; that chain has answered
    /// already.
    pub(crate) fn retire(&self, retired: Retired) {
        if self.behind.load(Ordering::Acquire) > 0 {
            drop(retired);
            return;
        }
        let queue = locked(&self.queue);
        let unsent = match queue.as_ref() {
            Some(queue) => {
                self.behind.fetch_add(1, Ordering::AcqRel);
                queue.send(Some(retired)).err().inspect(|_| {
                    self.behind.fetch_sub(1, Ordering::AcqRel);
                })
            }
            None => Some(std::sync::mpsc::SendError(Some(retired))),
        };
        // Dropped outside the lock: a store's drop takes a while.
        drop(queue);
        drop(unsent);
    }

    /// The engine is being dropped: the housekeeper drops what chains left
    /// (their stores, their workspace directories) and ends, and the spare
    /// goes too. Done before the engine's drop returns: a process that
    /// exits next would otherwise leave temporary directories behind.
    pub(crate) fn shut_down(&self) {
        self.stopping.store(true, Ordering::Relaxed);
        // The thread drops what is queued and ends once its queue is closed.
        drop(locked(&self.queue).take());
        let thread = locked(&self.thread).take();
        if let Some(thread) = thread
            && thread.thread().id() != std::thread::current().id()
        {
            let _ = thread.join();
        }
        drop(self.take_spare());
    }

    /// Makes the next spare unless one is ready.
    fn refill<G: Guest<Spare = S>>(&self, guest: &G, runtime: &tokio::runtime::Runtime) {
        if locked(&self.spare).is_some() {
            return;
        }
        match guest.make_spare(runtime) {
            Ok(spare) => *locked(&self.spare) = Some(spare),
            Err(e) => tracing::debug!("no spare instance: {e}"),
        }
    }
}

/// The housekeeper's loop: drops what chains left, then refills the spare
/// once its queue is empty. Ends when its queue is closed, or the guest is
/// dropped or stopping.
fn housekeep<G: Guest>(guest: Weak<G>, queue: Receiver<Option<Retired>>) {
    // SAFETY: setpriority on the calling thread (who = 0) only changes its
    // scheduling niceness; failure leaves it at the default, harmlessly.
    #[cfg(target_os = "linux")]
    unsafe {
        libc::setpriority(libc::PRIO_PROCESS, 0, NICE);
    }
    // Instantiating is async (the pool, the component's glue), and a
    // spare's warm-up may call a tool through the invoker, whose timeouts
    // are tokio's.
    let Ok(runtime) = tokio::runtime::Builder::new_current_thread().enable_all().build() else {
        tracing::debug!("no runtime for a housekeeper: no spare instances");
        while let Ok(job) = queue.recv() {
            drop(job);
        }
        return;
    };
    let dropped = |job: Option<Retired>| {
        if let Some(retired) = job {
            drop(retired);
            if let Some(guest) = guest.upgrade() {
                guest.housekeeper().behind.fetch_sub(1, Ordering::AcqRel);
            }
        }
    };
    while let Ok(job) = queue.recv() {
        dropped(job);
        while let Ok(job) = queue.try_recv() {
            dropped(job);
        }
        match guest.upgrade() {
            Some(guest) if !guest.housekeeper().stopping.load(Ordering::Relaxed) => {
                guest.housekeeper().refill(&*guest, &runtime);
                guest.trim();
            }
            _ => return,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::thread::ThreadId;

    /// A guest whose spares take until its gate opens: its housekeeper is
    /// busy meanwhile.
    struct Gated {
        keeper: Housekeeper<()>,
        gate: Mutex<Receiver<()>>,
    }

    impl Guest for Gated {
        type Spare = ();
        type Error = String;
        fn make_spare(&self, _runtime: &tokio::runtime::Runtime) -> Result<(), String> {
            let _ = locked(&self.gate).recv();
            Ok(())
        }
        fn housekeeper(&self) -> &Housekeeper<()> {
            &self.keeper
        }
    }

    /// A retired store that records the thread it was dropped on.
    struct Marks(Arc<Mutex<Option<ThreadId>>>);

    impl Drop for Marks {
        fn drop(&mut self) {
            *locked(&self.0) = Some(std::thread::current().id());
        }
    }

    fn dropped_on(mark: &Arc<Mutex<Option<ThreadId>>>) -> ThreadId {
        loop {
            if let Some(thread) = *locked(mark) {
                return thread;
            }
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
    }

    #[test]
    fn a_store_retired_while_the_housekeeper_is_behind_is_dropped_by_its_own_chain() {
        let (open, gate) = std::sync::mpsc::channel();
        let guest = Arc::new(Gated {
            keeper: Housekeeper::new(),
            gate: Mutex::new(gate),
        });
        Housekeeper::start(&guest, "test-housekeeper").expect("thread");
        let here = std::thread::current().id();
        let marks: Vec<_> = (0..3).map(|_| Arc::new(Mutex::new(None))).collect();
        // The first is dropped by the housekeeper, which then waits making
        // a spare; the second waits in its queue; the third finds it behind.
        guest.keeper.retire(Box::new(Marks(marks[0].clone())));
        assert_ne!(dropped_on(&marks[0]), here);
        while guest.keeper.behind.load(Ordering::Acquire) > 0 {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        guest.keeper.retire(Box::new(Marks(marks[1].clone())));
        guest.keeper.retire(Box::new(Marks(marks[2].clone())));
        assert_eq!(dropped_on(&marks[2]), here);
        assert!(locked(&marks[1]).is_none());
        open.send(()).expect("gate");
        open.send(()).expect("gate");
        assert_ne!(dropped_on(&marks[1]), here);
        guest.keeper.shut_down();
    }
}
