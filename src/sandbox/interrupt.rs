//! How a CPU-bound CPython chain is stopped: by making one page of its
//! linear memory unreadable.
//!
//! The CPython guest runs without wasmtime's epoch checks, which cost a
//! CPU-bound script a quarter of its time (BENCHMARKS.md). Instead the
//! build put a load of the guard page (`guest/build/src/interrupt`) at every
//! loop header and at the entry of every function that calls, and this
//! module's [`Watchdog`] thread looks at each running chain every
//! [`crate::guests::EPOCH_TICK`]: over its CPU limit or past its total
//! timeout, the chain's page (the host page holding the guard page, of the
//! host's size: [`guard_page_len`]) is made unreadable (`mprotect`), and
//! the guest's next check traps. The chain's [`Interrupt`] records why
//! first, so the trap is classified from that fact.
//!
//! Host code must never touch guest memory while the page is unreadable:
//! a fault there is not wasm's, and would take the process down. So the
//! page is only protected while the guest runs wasm, as the store's call
//! hook tracks: every host function, and every libcall that returns a
//! result, passes it; a chain found in host code is marked, and its return
//! to wasm traps instead; a protected chain's entry into host code traps
//! before the host runs. `memory.copy` and `memory.fill` are libcalls that
//! bypass the hook: the build routes each through a wasm function that
//! copies byte by byte when it touches the guard span, so there the fault
//! is wasm's trap. The page is made readable again when the guest has
//! returned, before the store (and its memory slot) is reused.
//!
//! A stop that does not take (the guest still running [`STOP_GRACE`] after
//! its page was protected, or `mprotect` failing) is logged, and the
//! chain is answered without its guest ([`Interrupt::abandoned`]).

use std::sync::atomic::{AtomicU8, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use chainbox_guest_build::interrupt::page;
use wasmtime::CallHook;
use wasmtime::component::__internal::{CanonicalAbiInfo, InstanceType, InterfaceType, LiftContext};
use wasmtime::component::{ComponentType, Lift, WasmList};

use super::meters::CpuClock;

/// Where the guard page sits in the CPython guest's linear memory.
pub(crate) const GUARD_PAGE_OFFSET: usize = page::GUARD_PAGE as usize;

/// How long a stopped guest may keep running before its stop is taken not
/// to have worked: far above the watchdog's tick and a check's distance.
pub(crate) const STOP_GRACE: Duration = Duration::from_secs(5);

/// Why the guard page cannot be used on this host.
#[derive(Debug, thiserror::Error)]
pub enum PageSizeError {
    /// The host's page size could not be read.
    #[error("the host's page size could not be read")]
    Unknown,
    /// Protecting a page of this size would cover more than the guest's
    /// guard span (or less than its checks read).
    #[error(
        "the host's memory pages are {0} bytes; the CPython guest can only be stopped on hosts with pages of 4 KiB \
         to 64 KiB (its guard page's span)"
    )]
    Unsupported(usize),
}

/// Why a chain's guard page could not be armed: its chains could not be
/// stopped, so the chain ends (a protocol failure of the guest).
#[derive(Debug, thiserror::Error)]
pub(crate) enum ArmError {
    /// This host's pages do not fit the guest's guard span.
    #[error(transparent)]
    PageSize(#[from] PageSizeError),
    /// The page the guest named is not a whole host page of its memory.
    #[error("the guard page at {offset:#x} is not a whole page of the guest's memory")]
    NotAPage {
        /// Its offset in the guest's memory.
        offset: usize,
    },
    /// `mprotect` refused to make it readable.
    #[error("the guard page could not be made readable: {0}")]
    Unprotect(std::io::Error),
}

/// The length to protect for a host with pages of `page_size` bytes: one
/// host page, which must hold every byte the checks read and lie inside
/// the span the bulk-memory rerouting covers.
pub(crate) fn guard_len_for(page_size: usize) -> Result<usize, PageSizeError> {
    let fits = page_size.is_power_of_two()
        && page_size >= page::CHECKED_BYTES as usize
        && page_size <= page::GUARD_SPAN as usize
        && GUARD_PAGE_OFFSET.is_multiple_of(page_size);
    if fits {
        Ok(page_size)
    } else {
        Err(PageSizeError::Unsupported(page_size))
    }
}

/// The length a stop protects on this host (see [`guard_len_for`]).
pub(crate) fn guard_page_len() -> Result<usize, PageSizeError> {
    guard_len_for(host_page_size().ok_or(PageSizeError::Unknown)?)
}

#[cfg(unix)]
fn host_page_size() -> Option<usize> {
    // SAFETY: sysconf reads a constant of the system; no memory is involved.
    let size = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    usize::try_from(size).ok().filter(|&s| s > 0)
}

#[cfg(not(unix))]
fn host_page_size() -> Option<usize> {
    None
}

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
    /// Wakes the chain when its stop did not take (see
    /// [`Interrupt::abandoned`]).
    abandoned: tokio::sync::Notify,
    clock: Arc<CpuClock>,
    deadline: Instant,
}

/// The guard page's host address (0 when not armed) and length, when it
/// was protected (or the stop found no page to protect), whether that
/// failed, whether the chain was answered without its guest, and whether
/// the guest has returned (nothing is stopped after that).
#[derive(Debug, Default)]
struct Page {
    address: usize,
    len: usize,
    protected: bool,
    stopped_at: Option<Instant>,
    failed: bool,
    abandoned: bool,
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
            abandoned: tokio::sync::Notify::new(),
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
    pub(crate) fn arm(&self, memory: GuestMemory) -> Result<usize, ArmError> {
        let len = guard_page_len()?;
        let offset = GUARD_PAGE_OFFSET;
        let address = memory.base.wrapping_add(offset);
        if memory.len < offset + page::GUARD_SPAN as usize || !address.is_multiple_of(len) {
            return Err(ArmError::NotAPage { offset });
        }
        protect(address, len, false).map_err(ArmError::Unprotect)?;
        self.rearm(address);
        Ok(address)
    }

    /// Arms with the page an earlier chain of the same instance found
    /// (readable again since that chain's [`Interrupt::disarm`]).
    pub(crate) fn rearm(&self, address: usize) {
        if address != 0
            && let Ok(len) = guard_page_len()
        {
            let mut page = self.page();
            page.address = address;
            page.len = len;
        }
    }

    /// The guest has returned: the page is made readable again and never
    /// protected after this.
    pub(crate) fn disarm(&self) {
        let mut page = self.page();
        if page.protected
            && let Err(e) = protect(page.address, page.len, false)
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

    /// Completes once the chain's stop has not taken (see [`STOP_GRACE`]):
    /// what the chain waits for beside its guest's thread, so it is
    /// answered even if its guest runs on.
    pub(crate) async fn abandoned(&self) {
        self.abandoned.notified().await;
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
                        page.stopped_at = Some(Instant::now());
                        if page.address != 0 {
                            match protect(page.address, page.len, true) {
                                Ok(()) => page.protected = true,
                                Err(e) => {
                                    tracing::error!("the guard page could not be protected: {e}");
                                    page.failed = true;
                                }
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
        if let Some(reason) = self.reason() {
            self.abandon_if_overdue(now, reason);
            return entries;
        }
        if self.page().finished {
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

impl Interrupt {
    /// A stopped chain whose guest still runs [`STOP_GRACE`] after its
    /// page was protected, or whose page could not be protected: logged,
    /// and the chain is let go ([`Interrupt::abandoned`]). Its thread runs
    /// on until the guest returns, if it ever does.
    fn abandon_if_overdue(&self, now: Instant, reason: Reason) {
        let mut page = self.page();
        if page.finished || page.abandoned {
            return;
        }
        let overdue = page.failed || page.stopped_at.is_some_and(|at| now >= at + STOP_GRACE);
        if overdue {
            page.abandoned = true;
            tracing::error!(
                "a CPython chain stopped ({reason:?}) is still running {}; it is answered without its guest, \
                 whose thread and pool slot stay taken until it returns",
                if page.failed {
                    "(its guard page could not be protected)".to_owned()
                } else {
                    format!("{}s after its guard page was protected", STOP_GRACE.as_secs())
                }
            );
            self.abandoned.notify_one();
        }
    }
}

impl Drop for Interrupt {
    fn drop(&mut self) {
        self.disarm();
    }
}

/// Makes the `len` bytes at `address` unreadable (`protect`) or readable
/// and writable again.
#[cfg(unix)]
fn protect(address: usize, len: usize, protect: bool) -> std::io::Result<()> {
    let flags = if protect {
        libc::PROT_NONE
    } else {
        libc::PROT_READ | libc::PROT_WRITE
    };
    // SAFETY: `address` is the host-page-aligned guard page inside the
    // guest's linear memory mapping and `len` one host page (checked in
    // `arm`), which lives as long as its store, and the store outlives its
    // `Interrupt`'s armed state (disarmed before the store is dropped or
    // reused). Only wasm reads it while it is protected (see the module's
    // doc).
    if unsafe { libc::mprotect(address as *mut libc::c_void, len, flags) } == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

#[cfg(not(unix))]
fn protect(_address: usize, _len: usize, _protect: bool) -> std::io::Result<()> {
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
/// exposes none (a public `WasmList<u8>` gives a slice of its contents,
/// but not where the list lies). It uses wasmtime's lifting internals
/// (`__internal`, what its derive macros use), which follow no semver:
/// Cargo.toml pins wasmtime's exact version, so an upgrade is a deliberate
/// change that reviews this, and one that changes them fails to compile
/// here.
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_guard_page_is_one_host_page_of_4_16_or_64_kib() {
        for size in [4096, 16 * 1024, 64 * 1024] {
            assert_eq!(guard_len_for(size).expect("supported"), size);
        }
    }

    #[test]
    fn a_host_page_larger_than_the_guard_span_is_refused() {
        for size in [128 * 1024, 2 * 1024 * 1024, 2048, 12 * 1024] {
            let refused = guard_len_for(size).expect_err("refused").to_string();
            assert!(refused.contains(&size.to_string()), "{refused}");
        }
    }

    #[test]
    fn this_hosts_page_size_is_supported() {
        guard_page_len().expect("the test host's pages");
    }

    /// A chain's interruption state, stopped in wasm (as the watchdog finds
    /// it past its deadline), its guard page at `address`.
    fn stopped_at(address: usize) -> Arc<Interrupt> {
        let meters = crate::sandbox::Meters::new(&crate::policy::ChainPolicy::default(), None);
        let interrupt = Interrupt::new(meters.clock.clone(), Instant::now());
        interrupt.rearm(address);
        interrupt.hook(CallHook::ReturningFromHost).expect("into wasm");
        let now = Instant::now();
        interrupt.look(now, 0);
        assert_eq!(interrupt.reason(), Some(Reason::Timeout));
        interrupt
    }

    /// Whether `interrupt`'s chain has been let go.
    fn abandoned(interrupt: &Interrupt) -> bool {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        runtime.block_on(async {
            tokio::time::timeout(Duration::from_millis(10), interrupt.abandoned())
                .await
                .is_ok()
        })
    }

    /// `len` bytes of fresh anonymous memory (page-aligned), unmapped if
    /// `unmap`.
    #[cfg(unix)]
    fn mapping(len: usize, unmap: bool) -> usize {
        // SAFETY: a fresh anonymous mapping, touched by nobody else.
        let address = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        assert_ne!(address, libc::MAP_FAILED);
        if unmap {
            // SAFETY: the mapping just made, which nothing uses.
            assert_eq!(unsafe { libc::munmap(address, len) }, 0);
        }
        address as usize
    }

    #[cfg(unix)]
    #[test]
    fn a_stop_whose_page_cannot_be_protected_lets_the_chain_go_at_once() {
        let len = guard_page_len().expect("page size");
        let interrupt = stopped_at(mapping(len, true));
        assert!(!abandoned(&interrupt), "let go before the watchdog's next look");
        interrupt.look(Instant::now(), 0);
        assert!(
            abandoned(&interrupt),
            "a chain whose stop failed is kept waiting for its guest"
        );
    }

    #[cfg(unix)]
    #[test]
    fn a_guest_still_running_past_the_grace_after_its_stop_is_let_go() {
        let len = guard_page_len().expect("page size");
        let page = mapping(len, false);
        let interrupt = stopped_at(page);
        interrupt.look(Instant::now(), 0);
        assert!(!abandoned(&interrupt), "let go within the grace");
        interrupt.look(Instant::now() + STOP_GRACE, 0);
        assert!(
            abandoned(&interrupt),
            "a guest that outlived its stop keeps its chain waiting"
        );
        interrupt.disarm();
        // SAFETY: readable again (disarmed); nothing else uses the mapping.
        assert_eq!(unsafe { libc::munmap(page as *mut libc::c_void, len) }, 0);
    }
}
