//! How many freed pool slots keep the pages their chain wrote: a bound on
//! the memory an engine holds between chains.
//!
//! Where the kernel can say which pages a chain wrote (`PAGEMAP_SCAN`), a
//! freed slot copies the snapshot back into them and keeps them mapped
//! (see `keep_written_pages_resident`), so the next chain on that slot
//! writes them without a fault. wasmtime keeps them in *every* freed slot,
//! for good: after 1,000 CPython chains parked at once, ~3.5 GiB PSS stayed
//! when they had all finished (~3 MiB a slot), where decommitted slots had
//! left ~0.5 GiB. So each guest keeps at most [`IDLE_WARM_SLOTS`] idle slots
//! warm, the ones freed last (wasmtime hands out a module's most recently
//! freed slot first); its housekeeper gives the pages of older idle slots
//! back ([`WarmSlots::trim`], an `madvise(MADV_DONTNEED)`: what wasmtime's
//! own decommit does, so the slot reads as the snapshot again).
//!
//! Giving back a slot nobody holds is only safe while no instance can be
//! made in it, and if every slot in use is known: instances are made under
//! [`WarmSlots::making`]'s read lock (the trim takes it for writing), and a
//! slot in use is known by the host address of its linear memory from the
//! moment its instance exists. A CPython instance tells that address only
//! when its guest first runs: until then it is *unplaced*, and no trim runs
//! while any instance is.

use std::collections::{HashSet, VecDeque};
use std::sync::{Mutex, MutexGuard};

use crate::sandbox::Slot;

/// Idle slots a guest keeps warm at most: enough for a few callers' chains
/// back to back (each chain's slot, and the spare's) to find one.
pub(crate) const IDLE_WARM_SLOTS: usize = 8;

/// How often a trim tries for the lock while instances are being made,
/// [`TRIM_RETRY`] apart, before leaving the trim to the next call.
const TRIM_TRIES: u32 = 20;
const TRIM_RETRY: std::time::Duration = std::time::Duration::from_millis(1);

/// The warm slots of one guest's pool.
pub(crate) struct WarmSlots {
    state: Mutex<State>,
    /// Held (read) while an instance is made, until its slot is recorded;
    /// held (write) by a trim.
    making: tokio::sync::RwLock<()>,
    /// Whether the pool keeps freed slots' pages at all.
    enabled: bool,
    /// Bytes from a slot's memory address that are its own (its whole
    /// reservation bound), given back by a trim.
    span: usize,
}

#[derive(Default)]
struct State {
    /// Slots in use, by memory address.
    used: HashSet<usize>,
    /// Instances made whose slot is not known yet.
    unplaced: usize,
    /// Freed slots that may still hold pages, least recently freed first.
    idle: VecDeque<usize>,
}

impl State {
    /// The slot at `memory` is in use (idle no more).
    fn take(&mut self, memory: usize) -> Slot {
        self.idle.retain(|&m| m != memory);
        self.used.insert(memory);
        Slot::At(memory)
    }
}

impl WarmSlots {
    /// For a pool that keeps freed slots' pages (`enabled`), each slot's
    /// memory owning `span` bytes from its address.
    pub(crate) fn new(enabled: bool, span: usize) -> Self {
        WarmSlots {
            state: Mutex::new(State::default()),
            making: tokio::sync::RwLock::new(()),
            enabled,
            span,
        }
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// To hold while an instance is made, until [`WarmSlots::placed`] or
    /// [`WarmSlots::unplaced`] has recorded it.
    pub(crate) async fn making(&self) -> tokio::sync::RwLockReadGuard<'_, ()> {
        self.making.read().await
    }

    /// An instance was made in the slot whose memory is at `memory`.
    pub(crate) fn placed(&self, memory: usize) -> Slot {
        if !self.enabled {
            return Slot::Untracked;
        }
        self.state().take(memory)
    }

    /// An instance was made whose memory's address is not known yet.
    pub(crate) fn unplaced(&self) -> Slot {
        if !self.enabled {
            return Slot::Untracked;
        }
        self.state().unplaced += 1;
        Slot::Unplaced
    }

    /// The unplaced instance `slot` has told its memory's address.
    pub(crate) fn place(&self, slot: Slot, memory: usize) -> Slot {
        if slot != Slot::Unplaced {
            return slot;
        }
        let mut state = self.state();
        state.unplaced = state.unplaced.saturating_sub(1);
        state.take(memory)
    }

    /// The store in `slot` is being dropped (its chain is done, its guest
    /// does not run): its slot is idle from now on. `memory`: its memory's
    /// address if it is known by now (an unplaced CPython instance whose
    /// guest did run).
    pub(crate) fn freed(&self, slot: Slot, memory: Option<usize>) {
        let mut state = self.state();
        let memory = match slot {
            Slot::Untracked => return,
            Slot::Unplaced => {
                state.unplaced = state.unplaced.saturating_sub(1);
                match memory {
                    Some(memory) => memory,
                    None => return,
                }
            }
            Slot::At(memory) => memory,
        };
        state.used.remove(&memory);
        state.idle.retain(|&m| m != memory);
        state.idle.push_back(memory);
    }

    /// Gives back the pages of the idle slots freed before the last
    /// [`IDLE_WARM_SLOTS`], if no instance is being made or unplaced.
    /// While instances are being made it retries for a while
    /// ([`TRIM_TRIES`]), then leaves the trim to the next call: call it
    /// off the chains' path (the housekeeper does).
    ///
    /// It never *waits* for the lock: a waiting writer holds back every
    /// instance asked for after it, and the housekeeper runs at a low
    /// priority, so on a loaded host, once woken with the lock, it may not
    /// run for seconds. A chain waiting behind it timed out before it
    /// started (CI, 2 cores, a full test run).
    pub(crate) fn trim(&self) {
        if !self.enabled || self.state().idle.len() <= IDLE_WARM_SLOTS {
            return;
        }
        let mut tries = 0;
        let _no_instance_made = loop {
            match self.making.try_write() {
                Ok(guard) => break guard,
                Err(_) if tries < TRIM_TRIES => {
                    tries += 1;
                    std::thread::sleep(TRIM_RETRY);
                }
                Err(_) => return,
            }
        };
        let mut state = self.state();
        if state.unplaced > 0 {
            return;
        }
        while state.idle.len() > IDLE_WARM_SLOTS {
            let Some(memory) = state.idle.pop_front() else {
                break;
            };
            if state.used.contains(&memory) {
                continue;
            }
            // SAFETY: the slot is in no store's use (every slot in use is
            // in `used`: none is unplaced) and none can be taken while the
            // write lock is held; its range is its own (`span`).
            unsafe { decommit(memory, self.span) };
        }
    }

    /// Freed slots that may still hold pages.
    #[cfg(test)]
    fn idle(&self) -> Vec<usize> {
        self.state().idle.iter().copied().collect()
    }
}

/// Gives back the pages of the linear memory at `base` (`len` bytes), as
/// wasmtime's decommit does: the image shows through again where the
/// memory maps it, zeros elsewhere, which is what a reset slot holds.
///
/// # Safety
///
/// `base..base + len` must be one pool slot's linear memory reservation,
/// which no store uses and no instance can take meanwhile.
unsafe fn decommit(base: usize, len: usize) {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: per this function's contract nothing reads or writes the
        // range meanwhile; dropping its pages only resets it to what a
        // freed slot holds.
        let r = unsafe { libc::madvise(base as *mut libc::c_void, len, libc::MADV_DONTNEED) };
        if r != 0 {
            tracing::warn!(
                "could not give back an idle pool slot's pages: {}",
                std::io::Error::last_os_error()
            );
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (base, len);
}

#[cfg(test)]
mod tests {
    use super::*;

    const PAGE: usize = 4096;

    /// Slots of real memory (anonymous, one page each), so a trim's
    /// `madvise` has something to give back.
    struct Memory {
        base: *mut u8,
        slots: usize,
    }

    impl Memory {
        fn new(slots: usize) -> Memory {
            // SAFETY: an anonymous private mapping, unmapped on drop.
            let base = unsafe {
                libc::mmap(
                    std::ptr::null_mut(),
                    slots * PAGE,
                    libc::PROT_READ | libc::PROT_WRITE,
                    libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                    -1,
                    0,
                )
            };
            assert_ne!(base, libc::MAP_FAILED);
            Memory {
                base: base.cast(),
                slots,
            }
        }
        fn slot(&self, i: usize) -> usize {
            self.base as usize + i * PAGE
        }
        fn write(&self, i: usize) {
            // SAFETY: inside the mapping.
            unsafe { *self.base.add(i * PAGE) = 1 };
        }
        fn written(&self, i: usize) -> bool {
            // SAFETY: inside the mapping.
            unsafe { *self.base.add(i * PAGE) == 1 }
        }
    }

    impl Drop for Memory {
        fn drop(&mut self) {
            // SAFETY: the mapping made in `new`.
            unsafe { libc::munmap(self.base.cast(), self.slots * PAGE) };
        }
    }

    fn slots() -> WarmSlots {
        WarmSlots::new(true, PAGE)
    }

    /// A chain's whole life on slot `i`: placed, writes, freed.
    fn chain(warm: &WarmSlots, memory: &Memory, i: usize) {
        let slot = warm.placed(memory.slot(i));
        memory.write(i);
        warm.freed(slot, None);
    }

    #[test]
    fn a_trim_keeps_the_slots_freed_last_and_gives_back_the_rest() {
        let (warm, memory) = (slots(), Memory::new(20));
        for i in 0..20 {
            chain(&warm, &memory, i);
        }
        warm.trim();
        let kept: Vec<usize> = (20 - IDLE_WARM_SLOTS..20).map(|i| memory.slot(i)).collect();
        assert_eq!(warm.idle(), kept);
        for i in 0..20 {
            assert_eq!(memory.written(i), i >= 20 - IDLE_WARM_SLOTS, "slot {i}");
        }
    }

    #[test]
    fn a_slot_in_use_again_is_not_idle() {
        let (warm, memory) = (slots(), Memory::new(20));
        for i in 0..20 {
            chain(&warm, &memory, i);
        }
        // Slot 0, freed first, is in use again: no trim touches it.
        let slot = warm.placed(memory.slot(0));
        memory.write(0);
        warm.trim();
        assert!(memory.written(0));
        assert!(!warm.idle().contains(&memory.slot(0)));
        warm.freed(slot, None);
        assert_eq!(warm.idle().last(), Some(&memory.slot(0)));
    }

    #[test]
    fn no_trim_runs_while_an_instance_is_unplaced() {
        let (warm, memory) = (slots(), Memory::new(20));
        for i in 0..20 {
            chain(&warm, &memory, i);
        }
        let unplaced = warm.unplaced();
        warm.trim();
        assert!(memory.written(0));
        // Its guest ran in slot 0: placed, then freed.
        let slot = warm.place(unplaced, memory.slot(0));
        warm.freed(slot, None);
        warm.trim();
        assert!(!memory.written(1));
        assert!(memory.written(0));
    }

    #[test]
    fn a_trim_while_an_instance_is_being_made_leaves_the_pages_to_the_next() {
        let (warm, memory) = (slots(), Memory::new(20));
        for i in 0..20 {
            chain(&warm, &memory, i);
        }
        let making = warm.making.try_read().expect("no trim holds the lock");
        warm.trim();
        assert!(memory.written(0), "a trim ran while an instance was made");
        drop(making);
        warm.trim();
        assert!(!memory.written(0));
    }

    #[test]
    fn a_trim_trying_for_the_lock_holds_no_instance_back() {
        let warm = std::sync::Arc::new(slots());
        let memory = Memory::new(20);
        for i in 0..20 {
            chain(&warm, &memory, i);
        }
        let making = warm.making.try_read().expect("no trim holds the lock");
        let trimming = std::thread::spawn({
            let warm = warm.clone();
            move || warm.trim()
        });
        // While the trim tries (and sleeps), another instance can be made:
        // a writer waiting in the lock's queue would refuse this read.
        for _ in 0..5 {
            assert!(warm.making.try_read().is_ok(), "a trim held an instance back");
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
        drop(making);
        trimming.join().expect("the trim ended");
    }

    #[test]
    fn an_unplaced_instance_freed_unplaced_lets_trims_run_again() {
        let (warm, memory) = (slots(), Memory::new(20));
        for i in 0..20 {
            chain(&warm, &memory, i);
        }
        let unplaced = warm.unplaced();
        warm.freed(unplaced, None);
        warm.trim();
        assert!(!memory.written(0));
        assert_eq!(warm.idle().len(), IDLE_WARM_SLOTS);
    }

    #[test]
    fn a_pool_that_keeps_no_pages_is_not_tracked() {
        let warm = WarmSlots::new(false, PAGE);
        assert_eq!(warm.placed(PAGE), Slot::Untracked);
        assert_eq!(warm.unplaced(), Slot::Untracked);
        warm.freed(Slot::Untracked, Some(PAGE));
        assert!(warm.idle().is_empty());
    }
}
