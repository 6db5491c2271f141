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

use std::sync::atomic::{AtomicBool, Ordering};
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
    /// then the next spare made); dropped here if there is no housekeeper.
    pub(crate) fn retire(&self, retired: Retired) {
        let queue = locked(&self.queue);
        let unsent = match queue.as_ref() {
            Some(queue) => queue.send(Some(retired)).err(),
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
    while let Ok(job) = queue.recv() {
        drop(job);
        while let Ok(job) = queue.try_recv() {
            drop(job);
        }
        match guest.upgrade() {
            Some(guest) if !guest.housekeeper().stopping.load(Ordering::Relaxed) => {
                guest.housekeeper().refill(&*guest, &runtime);
            }
            _ => return,
        }
    }
}
