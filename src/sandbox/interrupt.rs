//! How a CPU-bound CPython chain is stopped: by making one page of its
//! linear memory unreadable.
//!
//! The CPython guest runs without wasmtime's epoch checks, which cost a
//! CPU-bound script a quarter of its time (BENCHMARKS.md). Instead the
//! build put a load of the guard page (`guest/cpython/interrupt`) at every
//! loop header and at the entry of every function that calls, and this
//! module's [`Watchdog`] thread looks at each running chain every
//! [`crate::engine::EPOCH_TICK`]: over its CPU limit or past its total
//! timeout, the chain's page is made unreadable (`mprotect`), and the
//! guest's next check traps. The chain's [`Interrupt`] records why first,
//! so the trap is classified from that fact.
//!
//! Host code must never touch guest memory while the page is unreadable:
//! a fault there is not wasm's, and would take the process down. So the
//! page is only protected while the guest runs wasm, as the store's call
//! hook tracks (every host function and every libcall, `memory.copy`
//! included, passes it): a chain found in host code is marked, and its
//! return to wasm traps instead; a protected chain's entry into host code
//! traps before the host runs. The page is made readable again when the
//! guest has returned, before the store (and its memory slot) is reused.

#[path = "../../guest/cpython/interrupt/page.rs"]
mod page;

use std::sync::atomic::{AtomicU8, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use wasmtime::CallHook;
use wasmtime::component::__internal::{CanonicalAbiInfo, InstanceType, InterfaceType, LiftContext};
use wasmtime::component::{ComponentType, Lift, WasmList};

use super::meters::CpuClock;

const PAGE_SIZE: usize = 4096;

/// Where the guest runs, as the call hook last saw it, or that it is being
/// stopped.
const IN_HOST: u8 = 0;
const IN_WASM: u8 = 1;
/// Stop when back in wasm: the watchdog found the chain in host code.
const PENDING: u8 = 2;
/// Stopped: the page is (being) protected; no host code runs any more.
const STOPPED: u8 = 3;

/// Why a chain was stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Reason {
    /// Over `max_cpu_s` (the watchdog).
    Cpu,
    /// Past `total_timeout_s` (the watchdog).
    Timeout,
    /// Its chain was dropped (see `chain::StopOnDrop`).
    Cancelled,
}

/// The error a stopped guest's host entry or return traps with.
#[derive(Debug, thiserror::Error)]
#[error("the chain was stopped: over its CPU limit, past its total timeout, or dropped by its caller")]
pub(crate) struct Stopped;

/// One chain's interruption state, shared by its store's call hook, its
/// host imports, the chain and the watchdog.
#[derive(Debug)]
pub(crate) struct Interrupt {
    /// `IN_HOST` or `IN_WASM` as the call hook last saw the guest, or
    /// `PENDING`/`STOPPED` once it is being stopped.
    state: AtomicU8,
    /// 0 until stopped, then 1 + the [`Reason`]'s index.
    reason: AtomicU8,
    /// Entries into host code, so the watchdog can tell a guest that ran
    /// since its last look from one parked in a long host call (whose
    /// thread's CPU time is other tasks').
    entries: AtomicU64,
    page: Mutex<Page>,
    /// Wakes the chain's thread when it is stopped while parked in a host
    /// call (see [`Interrupt::stopped`]).
    stopped: tokio::sync::Notify,
    clock: Arc<CpuClock>,
    deadline: Instant,
}

/// The guard page's host address (0 when not armed), whether it is
/// protected now, and whether the guest has returned (nothing is stopped
/// after that).
#[derive(Debug, Default)]
struct Page {
    address: usize,
    protected: bool,
    finished: bool,
}

impl Interrupt {
    /// The state for a chain whose guest CPU time is `clock` and whose total
    /// timeout ends at `deadline`.
    pub(crate) fn new(clock: Arc<CpuClock>, deadline: Instant) -> Arc<Self> {
        Arc::new(Interrupt {
            state: AtomicU8::new(IN_HOST),
            reason: AtomicU8::new(0),
            entries: AtomicU64::new(0),
            page: Mutex::new(Page::default()),
            stopped: tokio::sync::Notify::new(),
            clock,
            deadline,
        })
    }

    fn page(&self) -> std::sync::MutexGuard<'_, Page> {
        self.page.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The store's call hook: tracks whether the guest runs wasm, and traps
    /// a stopped guest at its next crossing.
    pub(crate) fn hook(&self, hook: CallHook) -> wasmtime::Result<()> {
        if hook.entering_host() {
            self.entries.fetch_add(1, Ordering::Relaxed);
            match self
                .state
                .compare_exchange(IN_WASM, IN_HOST, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => Ok(()),
                Err(STOPPED) => Err(Stopped.into()),
                Err(_) => Ok(()),
            }
        } else {
            match self
                .state
                .compare_exchange(IN_HOST, IN_WASM, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => Ok(()),
                Err(PENDING) | Err(STOPPED) => {
                    self.state.store(STOPPED, Ordering::Release);
                    Err(Stopped.into())
                }
                Err(_) => Ok(()),
            }
        }
    }

    /// The guest told where its memory is (see [`GuestMemory`]): the page
    /// can now be protected. Made readable first, whatever an earlier
    /// chain of this instance left. Returns the page's host address, for
    /// the instance's later chains ([`Interrupt::rearm`]).
    pub(crate) fn arm(&self, memory: GuestMemory) -> Result<usize, String> {
        let offset = page::GUARD_PAGE as usize;
        let address = memory.base.wrapping_add(offset);
        if memory.len < offset + PAGE_SIZE || !address.is_multiple_of(PAGE_SIZE) {
            return Err(format!(
                "the guard page at {offset:#x} is not a whole page of the guest's memory"
            ));
        }
        protect(address, false).map_err(|e| format!("the guard page could not be made readable: {e}"))?;
        self.page().address = address;
        Ok(address)
    }

    /// Arms with the page an earlier chain of the same instance found
    /// (readable again since that chain's [`Interrupt::disarm`]).
    pub(crate) fn rearm(&self, address: usize) {
        if address != 0 {
            self.page().address = address;
        }
    }

    /// The guest has returned: the page is made readable again and never
    /// protected after this.
    pub(crate) fn disarm(&self) {
        let mut page = self.page();
        if page.protected
            && let Err(e) = protect(page.address, false)
        {
            tracing::error!("the guard page could not be made readable again: {e}");
        }
        *page = Page {
            finished: true,
            ..Page::default()
        };
    }

    /// Why the chain was stopped, if it was.
    pub(crate) fn reason(&self) -> Option<Reason> {
        match self.reason.load(Ordering::Acquire) {
            1 => Some(Reason::Cpu),
            2 => Some(Reason::Timeout),
            3 => Some(Reason::Cancelled),
            _ => None,
        }
    }

    /// Its chain was dropped: stops the guest.
    pub(crate) fn cancel(&self) {
        self.stop(Reason::Cancelled);
    }

    /// Completes once the chain is stopped (at once if it was already):
    /// what the chain's thread waits for beside its guest, so a guest
    /// parked in a host call is let go without waiting for the call.
    pub(crate) async fn stopped(&self) {
        self.stopped.notified().await;
    }

    /// Stops the chain for `reason` (the first reason stays).
    fn stop(&self, reason: Reason) {
        let code = match reason {
            Reason::Cpu => 1,
            Reason::Timeout => 2,
            Reason::Cancelled => 3,
        };
        let mut page = self.page();
        if page.finished
            || self
                .reason
                .compare_exchange(0, code, Ordering::AcqRel, Ordering::Acquire)
                .is_err()
        {
            return;
        }
        self.stopped.notify_one();
        loop {
            match self.state.load(Ordering::Acquire) {
                IN_WASM => {
                    if self
                        .state
                        .compare_exchange(IN_WASM, STOPPED, Ordering::AcqRel, Ordering::Acquire)
                        .is_ok()
                    {
                        if page.address != 0 {
                            match protect(page.address, true) {
                                Ok(()) => page.protected = true,
                                Err(e) => tracing::error!("the guard page could not be protected: {e}"),
                            }
                        }
                        return;
                    }
                }
                IN_HOST => {
                    if self
                        .state
                        .compare_exchange(IN_HOST, PENDING, Ordering::AcqRel, Ordering::Acquire)
                        .is_ok()
                    {
                        return;
                    }
                }
                _ => return,
            }
        }
    }

    /// The watchdog's look: stops the chain if it is past its deadline or,
    /// having run since the last look (`entries` moved, or in wasm now),
    /// over its CPU limit. Returns the entry count seen.
    fn look(&self, now: Instant, last_entries: u64) -> u64 {
        let entries = self.entries.load(Ordering::Relaxed);
        if self.reason().is_some() || self.page().finished {
            return entries;
        }
        if now >= self.deadline {
            self.stop(Reason::Timeout);
        } else {
            let ran = entries != last_entries || self.state.load(Ordering::Acquire) == IN_WASM;
            if ran && self.clock.over_limit_now() {
                self.stop(Reason::Cpu);
            }
        }
        entries
    }
}

impl Drop for Interrupt {
    fn drop(&mut self) {
        self.disarm();
    }
}

/// Makes the page at `address` unreadable (`protect`) or readable and
/// writable again.
#[cfg(unix)]
fn protect(address: usize, protect: bool) -> std::io::Result<()> {
    let flags = if protect {
        libc::PROT_NONE
    } else {
        libc::PROT_READ | libc::PROT_WRITE
    };
    // SAFETY: `address` is the page-aligned guard page inside the guest's
    // linear memory mapping (checked in `arm`), which lives as long as its
    // store, and the store outlives its `Interrupt`'s armed state (disarmed
    // before the store is dropped or reused). Only wasm reads it while it is
    // protected (see the module's doc).
    if unsafe { libc::mprotect(address as *mut libc::c_void, PAGE_SIZE, flags) } == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

#[cfg(not(unix))]
fn protect(_address: usize, _protect: bool) -> std::io::Result<()> {
    Err(std::io::Error::other("no mprotect on this platform"))
}

/// The running chains of one CPython engine, looked at every tick by one
/// thread.
#[derive(Debug, Default)]
pub(crate) struct Watchdog {
    chains: Mutex<Vec<(Weak<Interrupt>, u64)>>,
}

impl Watchdog {
    /// Starts the watchdog's thread, which ends once `stop` is set.
    pub(crate) fn start(tick: Duration, stop: Arc<std::sync::atomic::AtomicBool>) -> Arc<Self> {
        let watchdog = Arc::new(Watchdog::default());
        let weak = Arc::downgrade(&watchdog);
        let spawned = std::thread::Builder::new()
            .name("chainbox-watchdog".into())
            .spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    std::thread::sleep(tick);
                    match weak.upgrade() {
                        Some(watchdog) => watchdog.look(),
                        None => return,
                    }
                }
            });
        if let Err(e) = spawned {
            tracing::error!("could not start the CPython watchdog: {e}; CPU limits will not fire");
        }
        watchdog
    }

    /// Watches `chain` until it is dropped.
    pub(crate) fn watch(&self, chain: &Arc<Interrupt>) {
        let mut chains = self.chains.lock().unwrap_or_else(|p| p.into_inner());
        chains.push((Arc::downgrade(chain), 0));
    }

    fn look(&self) {
        let now = Instant::now();
        let mut chains = self.chains.lock().unwrap_or_else(|p| p.into_inner());
        chains.retain_mut(|(chain, entries)| match chain.upgrade() {
            Some(chain) => {
                *entries = chain.look(now, *entries);
                true
            }
            None => false,
        });
    }
}

/// The guest's linear memory as the host maps it, lifted from the `arm`
/// import's `list<u8>` argument (whose contents are ignored): the one way
/// to learn where a component's core memory is, since the component API
/// exposes none. It uses wasmtime's lifting internals (`__internal`, what
/// its derive macros use); a wasmtime upgrade that changes them fails to
/// compile here.
pub(crate) struct GuestMemory {
    base: usize,
    len: usize,
}

// SAFETY: the same canonical ABI as `list<u8>` (whose implementation the
// type information delegates to); lifting reads no guest memory.
unsafe impl ComponentType for GuestMemory {
    type Lower = <WasmList<u8> as ComponentType>::Lower;
    const ABI: CanonicalAbiInfo = <WasmList<u8> as ComponentType>::ABI;

    fn typecheck(ty: &InterfaceType, types: &InstanceType<'_>) -> wasmtime::Result<()> {
        <WasmList<u8> as ComponentType>::typecheck(ty, types)
    }
}

// SAFETY: see above.
unsafe impl Lift for GuestMemory {
    fn linear_lift_from_flat(
        cx: &mut LiftContext<'_>,
        _ty: InterfaceType,
        _src: &Self::Lower,
    ) -> wasmtime::Result<Self> {
        Ok(GuestMemory::of(cx))
    }

    fn linear_lift_from_memory(cx: &mut LiftContext<'_>, _ty: InterfaceType, _bytes: &[u8]) -> wasmtime::Result<Self> {
        Ok(GuestMemory::of(cx))
    }
}

impl GuestMemory {
    fn of(cx: &LiftContext<'_>) -> Self {
        let memory = cx.memory();
        GuestMemory {
            base: memory.as_ptr() as usize,
            len: memory.len(),
        }
    }
}
