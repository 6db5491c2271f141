//! Hot pages: the guest memory pages every chain touches, learned once per
//! engine and mapped in before each chain's guest starts.
//!
//! Why: the pooling allocator hands each chain a slot whose memory was reset
//! with `madvise(MADV_DONTNEED)`, so every page the guest touches costs a
//! page fault: a zero-filled page for the stack and the heap, a copy of the
//! image for written statics, a page-cache mapping for read-only data. A
//! trivial chain takes ~20 of them, and in a VM each fault is an exception
//! round trip; they were ~40 % of a chain's start. One
//! `madvise(MADV_POPULATE_WRITE)` per span maps the written pages in a few
//! system calls instead. Read-only pages are left to the fault handler: its
//! fault-around already maps 16 of them per fault, and populating them too
//! measured slower (see BENCHMARKS.md, session 4).
//!
//! The set is learned from the engine's own warm-up chain (`1 + 1`): after it
//! ran, `/proc/self/pagemap` says which pages of its linear memory are mapped
//! and whether they are private (written) or still the image's page cache
//! (only read). Written pages are the common prefix of every chain, so parked
//! chains hold no more memory than they would have touched anyway.
//!
//! Prefaulting never changes memory contents (populating is what the first
//! access would have done), so it is only a hint: where it is unsupported
//! (not Linux, kernels before 5.14, no pagemap) it does nothing.

use std::ops::Range;

/// Page spans (byte offsets into linear memory) the warm-up chain wrote;
/// mapped in writable (private copies) before each chain.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct HotPages {
    write: Vec<Range<usize>>,
}

/// Spans closer than this are merged: each extra page is a zeroed or copied
/// page, so the gap is small, but a system call costs about as much.
const WRITE_GAP_PAGES: usize = 2;
/// More spans than this and the system calls would cost what they save.
const MAX_SPANS: usize = 16;
/// A learned set larger than this (4 MiB) did not come from a trivial
/// chain; prefaulting it would cost more than it saves.
const MAX_PAGES: usize = 1024;

impl HotPages {
    /// Learns the hot pages from the guest memory at `base..base + len` as
    /// the warm-up chain left it (call before its store is dropped).
    pub(crate) fn learn(base: *const u8, len: usize) -> HotPages {
        let Some(flags) = sys::page_flags(base, len) else {
            return HotPages::default();
        };
        let page = sys::page_size();
        let mut write: Vec<Range<usize>> = Vec::new();
        let written = flags.iter().enumerate().filter(|(_, s)| **s == sys::PageState::Private);
        for (i, _) in written {
            match write.last_mut() {
                Some(last) if i * page <= last.end + WRITE_GAP_PAGES * page => last.end = (i + 1) * page,
                _ => write.push(i * page..(i + 1) * page),
            }
        }
        let hot = HotPages { write };
        if hot.write.len() > MAX_SPANS || hot.pages() > MAX_PAGES {
            return HotPages::default();
        }
        hot
    }

    /// Maps the hot pages of the memory at `base..base + len` in.
    ///
    /// # Safety
    /// `base..base + len` must be one live, accessible mapping (a chain's
    /// linear memory) that nothing else is resizing meanwhile.
    pub(crate) unsafe fn apply(&self, base: *mut u8, len: usize) {
        for span in &self.write {
            let end = span.end.min(len);
            if span.start < end {
                // SAFETY: within the caller's mapping, by the clamp above.
                unsafe { sys::populate_write(base.add(span.start), end - span.start) };
            }
        }
    }

    /// Pages this will map in per chain.
    pub(crate) fn pages(&self) -> usize {
        let page = sys::page_size();
        self.write.iter().map(|s| s.len() / page).sum()
    }
}

/// Private pages (written, anonymous) of this process mapped in
/// `base..base + len`, from `/proc/self/pagemap`; `None` where it cannot
/// be read (not Linux, no procfs).
pub(crate) fn private_pages(base: *const u8, len: usize) -> Option<usize> {
    let flags = sys::page_flags(base, len)?;
    Some(flags.iter().filter(|s| **s == sys::PageState::Private).count())
}

#[cfg(target_os = "linux")]
mod sys {
    use std::fs::File;
    use std::os::unix::fs::FileExt;
    use std::sync::atomic::{AtomicBool, Ordering};

    /// How a page of the learned memory was mapped.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub(super) enum PageState {
        Unmapped,
        /// Anonymous or a private copy: the chain wrote it.
        Private,
        /// Still the file (image) page: the chain only read it.
        Shared,
    }

    /// Set once populating turned out unsupported (kernel < 5.14).
    static UNSUPPORTED: AtomicBool = AtomicBool::new(false);

    pub(super) fn page_size() -> usize {
        // SAFETY: sysconf has no preconditions.
        usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).unwrap_or(4096)
    }

    /// One entry per page of `base..base + len`, from `/proc/self/pagemap`
    /// (bit 63: present; bit 61: file page or shared anonymous).
    pub(super) fn page_flags(base: *const u8, len: usize) -> Option<Vec<PageState>> {
        let page = page_size();
        let first = base as usize / page;
        let count = len.div_ceil(page);
        let mut raw = vec![0u8; count * 8];
        let file = File::open("/proc/self/pagemap").ok()?;
        file.read_exact_at(&mut raw, (first * 8) as u64).ok()?;
        Some(
            raw.as_chunks::<8>()
                .0
                .iter()
                .map(|e| {
                    let bits = u64::from_le_bytes(*e);
                    match (bits >> 63 & 1 == 1, bits >> 61 & 1 == 1) {
                        (false, _) => PageState::Unmapped,
                        (true, false) => PageState::Private,
                        (true, true) => PageState::Shared,
                    }
                })
                .collect(),
        )
    }

    /// # Safety
    /// `ptr..ptr + len` lies within one live mapping.
    pub(super) unsafe fn populate_write(ptr: *mut u8, len: usize) {
        if UNSUPPORTED.load(Ordering::Relaxed) {
            return;
        }
        // SAFETY: the caller's range; populating does not change contents.
        if unsafe { libc::madvise(ptr.cast(), len, libc::MADV_POPULATE_WRITE) } != 0
            && std::io::Error::last_os_error().raw_os_error() == Some(libc::EINVAL)
        {
            UNSUPPORTED.store(true, Ordering::Relaxed);
        }
    }
}

#[cfg(not(target_os = "linux"))]
mod sys {
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub(super) enum PageState {
        Private,
    }

    pub(super) fn page_size() -> usize {
        4096
    }

    pub(super) fn page_flags(_base: *const u8, _len: usize) -> Option<Vec<PageState>> {
        None
    }

    pub(super) unsafe fn populate_write(_ptr: *mut u8, _len: usize) {}
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    /// An anonymous mapping of `pages` pages, unmapped on drop.
    struct Mapping(*mut u8, usize);

    impl Mapping {
        fn new(pages: usize) -> Mapping {
            let len = pages * sys::page_size();
            // SAFETY: a fresh private anonymous mapping.
            let ptr = unsafe {
                libc::mmap(
                    std::ptr::null_mut(),
                    len,
                    libc::PROT_READ | libc::PROT_WRITE,
                    libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                    -1,
                    0,
                )
            };
            assert_ne!(ptr, libc::MAP_FAILED);
            Mapping(ptr.cast(), len)
        }
    }

    impl Drop for Mapping {
        fn drop(&mut self) {
            // SAFETY: our own mapping.
            unsafe { libc::munmap(self.0.cast(), self.1) };
        }
    }

    #[test]
    fn written_pages_are_learned_as_spans_and_untouched_ones_are_not() {
        let page = sys::page_size();
        let m = Mapping::new(64);
        for i in [0usize, 1, 2, 40] {
            // SAFETY: inside the mapping.
            unsafe { m.0.add(i * page).write(1) };
        }
        let hot = HotPages::learn(m.0, m.1);
        assert_eq!(hot.write, vec![0..3 * page, 40 * page..41 * page]);
        assert_eq!(hot.pages(), 4);
    }

    #[test]
    fn a_scattered_set_of_written_pages_is_not_learned() {
        let page = sys::page_size();
        let m = Mapping::new(4 * (MAX_SPANS + 1));
        for i in 0..=MAX_SPANS {
            // SAFETY: inside the mapping; 3-page gaps keep the spans apart.
            unsafe { m.0.add(4 * i * page).write(1) };
        }
        assert_eq!(HotPages::learn(m.0, m.1), HotPages::default());
    }

    #[test]
    fn pages_only_read_from_a_file_image_are_not_learned() {
        use std::os::fd::AsRawFd;
        let page = sys::page_size();
        let file = tempfile::tempfile().expect("temp file");
        file.set_len((4 * page) as u64).expect("sized");
        // SAFETY: a private mapping of our own file, unmapped below.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                4 * page,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE,
                file.as_raw_fd(),
                0,
            )
        };
        assert_ne!(ptr, libc::MAP_FAILED);
        let base: *mut u8 = ptr.cast();
        // SAFETY: inside the mapping.
        let read = unsafe { base.read_volatile() };
        // SAFETY: inside the mapping.
        unsafe { base.add(2 * page).write(read + 1) };
        let hot = HotPages::learn(base, 4 * page);
        // SAFETY: our own mapping.
        unsafe { libc::munmap(ptr, 4 * page) };
        assert_eq!(hot.write, vec![2 * page..3 * page]);
    }

    #[test]
    fn applying_maps_the_learned_pages_in_without_changing_them() {
        let page = sys::page_size();
        let m = Mapping::new(16);
        // SAFETY: inside the mapping.
        unsafe { m.0.add(3 * page).write(7) };
        let hot = HotPages::learn(m.0, m.1);
        let fresh = Mapping::new(16);
        // SAFETY: `fresh` is a live mapping of the same length.
        unsafe { hot.apply(fresh.0, fresh.1) };
        let flags = sys::page_flags(fresh.0, fresh.1).expect("pagemap readable");
        assert_eq!(flags[3], sys::PageState::Private);
        assert_eq!(flags[4], sys::PageState::Unmapped);
        // SAFETY: inside the mapping.
        assert_eq!(unsafe { fresh.0.add(3 * page).read() }, 0);
    }
}
