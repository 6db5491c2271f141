//! A chain's limits and what it used: the memory cap, the CPU clock and the
//! bounded stdout, kept in [`Meters`] shared outside the store so they
//! survive a store dropped by the total timeout.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use wasmtime::ResourceLimiter;

use crate::chain::Usage;
use crate::policy::ChainPolicy;

/// Text kept up to a byte cap; the rest is counted and dropped.
#[derive(Debug, Default)]
pub(crate) struct BoundedText {
    text: String,
    cap: usize,
    total: u64,
    truncated: bool,
}

impl BoundedText {
    fn new(cap: usize) -> Self {
        BoundedText {
            cap,
            ..Default::default()
        }
    }

    pub(crate) fn push(&mut self, s: &str) {
        self.total += s.len() as u64;
        let room = self.cap.saturating_sub(self.text.len());
        if s.len() <= room {
            self.text.push_str(s);
        } else {
            self.text.push_str(&s[..s.floor_char_boundary(room)]);
            self.truncated = true;
        }
    }
}

/// What a chain has printed and used so far. Shared between the store and
/// the engine so that it outlives the store: when the total timeout drops a
/// running chain, the stdout and usage up to that moment still reach the
/// result.
#[derive(Debug)]
pub(crate) struct Meters {
    pub(crate) clock: Arc<CpuClock>,
    stdout: Mutex<BoundedText>,
    peak_memory: AtomicU64,
}

impl Meters {
    pub(crate) fn new(policy: &ChainPolicy) -> Arc<Self> {
        Arc::new(Meters {
            clock: Arc::new(CpuClock::new(policy.max_cpu())),
            stdout: Mutex::new(BoundedText::new(
                usize::try_from(policy.max_stdout_bytes).unwrap_or(usize::MAX),
            )),
            peak_memory: AtomicU64::new(0),
        })
    }

    pub(crate) fn stdout(&self) -> std::sync::MutexGuard<'_, BoundedText> {
        self.stdout.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The guest starts running on this thread: its CPU clock starts.
    pub(crate) fn guest_starts(&self) {
        self.clock.resume();
    }

    /// The usage so far, and the captured stdout (taken, so call it once).
    pub(crate) fn take(&self) -> (Usage, String) {
        self.clock.pause();
        let mut stdout = self.stdout();
        let usage = Usage {
            peak_memory_bytes: self.peak_memory.load(Ordering::Relaxed),
            cpu_ms: crate::chain::millis(self.clock.used()),
            stdout_bytes: stdout.total,
            stdout_truncated: stdout.truncated,
        };
        (usage, std::mem::take(&mut stdout.text))
    }
}

/// Caps linear memory growth at the policy's `max_memory_bytes` and
/// records the peak (in the chain's [`Meters`]) and whether the cap was hit.
#[derive(Debug)]
pub(crate) struct MemoryLimiter {
    limit: usize,
    meters: Arc<Meters>,
    hit: bool,
    /// The linear memory's size after the last growth allowed.
    current: usize,
}

impl MemoryLimiter {
    pub(crate) fn new(limit: usize, meters: Arc<Meters>) -> Self {
        MemoryLimiter {
            limit,
            meters,
            hit: false,
            current: 0,
        }
    }

    /// The linear memory's size, as far as growths have told.
    pub(crate) fn current(&self) -> usize {
        self.current
    }

    /// The memory is already `size` bytes (a spare instance's, grown
    /// before this limiter's chain started): counted as if grown now.
    pub(crate) fn grown_to(&mut self, size: usize) {
        self.current = self.current.max(size);
        self.meters.peak_memory.fetch_max(size as u64, Ordering::Relaxed);
    }

    /// Whether a growth past the limit was refused (the fact a memory kill
    /// is classified from).
    pub(crate) fn hit(&self) -> bool {
        self.hit
    }

    /// The cap, in bytes.
    pub(crate) fn limit(&self) -> usize {
        self.limit
    }
}

/// The error a denied memory growth traps with.
#[derive(Debug, thiserror::Error)]
#[error("memory limit exceeded: the script needed more than {limit} bytes (max_memory_bytes)")]
pub(crate) struct MemoryLimitExceeded {
    limit: usize,
}

impl ResourceLimiter for MemoryLimiter {
    fn memory_growing(&mut self, _current: usize, desired: usize, _maximum: Option<usize>) -> wasmtime::Result<bool> {
        if desired > self.limit {
            self.hit = true;
            return Err(MemoryLimitExceeded { limit: self.limit }.into());
        }
        self.grown_to(desired);
        Ok(true)
    }

    fn table_growing(&mut self, _current: usize, desired: usize, _maximum: Option<usize>) -> wasmtime::Result<bool> {
        Ok(desired <= 100_000)
    }
}

/// The script's CPU time: the CPU time of the thread running the guest,
/// counted while guest code runs (host calls and the moments the chain is
/// parked at a yield excluded). A thread's CPU clock, not wall time, so a
/// loaded machine or other chains on other threads do not use up a chain's
/// `max_cpu_s`.
///
/// Every stretch of guest code runs inside one poll of the chain's future
/// (wasmtime runs the guest on a fiber resumed by that poll), so it starts
/// and ends on one thread; the clock remembers which thread's CPU clock the
/// stretch started on and reads that one when it ends.
#[derive(Debug)]
pub(crate) struct CpuClock {
    limit: Duration,
    /// Nanoseconds of guest CPU time in finished stretches.
    used: AtomicU64,
    /// The open stretch: which thread clock, and its reading at the start.
    stretch: Mutex<Option<(thread_cpu::Clock, u64)>>,
    exceeded: AtomicBool,
    /// Epoch ticks seen while the guest ran.
    ticks: AtomicU64,
}

impl CpuClock {
    fn new(limit: Duration) -> Self {
        CpuClock {
            limit,
            used: AtomicU64::new(0),
            stretch: Mutex::new(None),
            exceeded: AtomicBool::new(false),
            ticks: AtomicU64::new(0),
        }
    }

    fn stretch(&self) -> std::sync::MutexGuard<'_, Option<(thread_cpu::Clock, u64)>> {
        self.stretch.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The guest stops running (a host call, a yield, the end). Pausing
    /// twice counts nothing in between.
    pub(crate) fn pause(&self) {
        if let Some((clock, start)) = self.stretch().take() {
            let now = clock.now().unwrap_or(start);
            self.used.fetch_add(now.saturating_sub(start), Ordering::Relaxed);
        }
    }

    /// The guest runs (again) on the current thread.
    pub(crate) fn resume(&self) {
        let clock = thread_cpu::Clock::current();
        let start = clock.now().unwrap_or(0);
        *self.stretch() = Some((clock, start));
    }

    /// Guest CPU time in finished stretches.
    pub(crate) fn used(&self) -> Duration {
        Duration::from_nanos(self.used.load(Ordering::Relaxed))
    }

    /// The chain's `max_cpu_s`.
    pub(crate) fn limit(&self) -> Duration {
        self.limit
    }

    /// Whether the limit ended the chain.
    pub(crate) fn exceeded(&self) -> bool {
        self.exceeded.load(Ordering::Relaxed)
    }

    /// One epoch tick while the guest ran: pauses the clock and says whether
    /// the chain is over its limit (recorded, so the trap is classified from
    /// this fact) and whether it is time to yield the thread.
    pub(crate) fn tick(&self, ticks_per_yield: u64) -> Tick {
        self.pause();
        if self.used() > self.limit {
            self.exceeded.store(true, Ordering::Relaxed);
            return Tick::OverLimit;
        }
        if self
            .ticks
            .fetch_add(1, Ordering::Relaxed)
            .is_multiple_of(ticks_per_yield)
        {
            Tick::Yield
        } else {
            self.resume();
            Tick::Continue
        }
    }
}

/// What an epoch tick means for the running guest.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Tick {
    /// Keep running (the clock runs on).
    Continue,
    /// Let other chains on this thread run; resume the clock afterwards.
    Yield,
    /// Over `max_cpu_s`: trap.
    OverLimit,
}

/// The CPU clock of a thread.
mod thread_cpu {
    /// A thread's CPU-time clock (Linux: `pthread_getcpuclockid`); elsewhere
    /// a monotonic wall clock stands in.
    #[derive(Debug, Clone, Copy)]
    pub(crate) struct Clock {
        #[cfg(target_os = "linux")]
        id: libc::clockid_t,
    }

    impl Clock {
        /// The calling thread's clock.
        #[cfg(target_os = "linux")]
        pub(crate) fn current() -> Clock {
            let mut id: libc::clockid_t = libc::CLOCK_THREAD_CPUTIME_ID;
            // SAFETY: `pthread_self()` is the live calling thread; `id` is a valid out-pointer.
            if unsafe { libc::pthread_getcpuclockid(libc::pthread_self(), &mut id) } != 0 {
                id = libc::CLOCK_THREAD_CPUTIME_ID;
            }
            Clock { id }
        }

        /// Nanoseconds of CPU time the thread has used; `None` once it is gone.
        #[cfg(target_os = "linux")]
        pub(crate) fn now(&self) -> Option<u64> {
            let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
            // SAFETY: `ts` is a valid out-pointer; a stale clock id only makes the call fail.
            if unsafe { libc::clock_gettime(self.id, &mut ts) } != 0 {
                return None;
            }
            Some(ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64)
        }

        #[cfg(not(target_os = "linux"))]
        pub(crate) fn current() -> Clock {
            Clock {}
        }

        #[cfg(not(target_os = "linux"))]
        pub(crate) fn now(&self) -> Option<u64> {
            static ORIGIN: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
            Some(ORIGIN.get_or_init(std::time::Instant::now).elapsed().as_nanos() as u64)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Spins until this thread has used `d` of CPU time.
    fn spin_cpu(d: Duration) {
        let clock = thread_cpu::Clock::current();
        let start = clock.now().unwrap_or(0);
        let mut x = 0u64;
        while clock.now().unwrap_or(u64::MAX) < start + d.as_nanos() as u64 {
            x = std::hint::black_box(x.wrapping_add(1));
        }
    }

    #[test]
    fn the_cpu_clock_counts_cpu_not_sleep() {
        let clock = CpuClock::new(Duration::from_secs(1));
        clock.resume();
        std::thread::sleep(Duration::from_millis(100));
        clock.pause();
        assert!(
            clock.used() < Duration::from_millis(20),
            "sleep counted as CPU: {:?}",
            clock.used()
        );
        clock.resume();
        spin_cpu(Duration::from_millis(30));
        clock.pause();
        assert!(clock.used() >= Duration::from_millis(30), "{:?}", clock.used());
    }

    #[test]
    fn a_paused_cpu_clock_counts_nothing_until_resumed() {
        let clock = CpuClock::new(Duration::from_secs(1));
        spin_cpu(Duration::from_millis(20));
        clock.pause();
        clock.pause();
        assert_eq!(clock.used(), Duration::ZERO);
    }

    #[test]
    fn a_tick_over_the_limit_is_recorded_as_a_fact() {
        let clock = CpuClock::new(Duration::from_millis(5));
        clock.resume();
        assert_eq!(clock.tick(5), Tick::Yield);
        assert!(!clock.exceeded());
        clock.resume();
        spin_cpu(Duration::from_millis(20));
        assert_eq!(clock.tick(5), Tick::OverLimit);
        assert!(clock.exceeded());
    }

    #[test]
    fn bounded_text_keeps_whole_characters_up_to_its_cap_and_counts_the_rest() {
        let mut text = BoundedText::new(5);
        text.push("ab");
        text.push("cdé€f");
        assert_eq!(text.text, "abcd", "a character never splits");
        assert!(text.truncated);
        assert_eq!(text.total, 2 + "cdé€f".len() as u64);
    }

    #[test]
    fn bounded_text_under_its_cap_is_whole() {
        let mut text = BoundedText::new(64);
        text.push("line 1\n");
        text.push("line 2\n");
        assert_eq!(text.text, "line 1\nline 2\n");
        assert!(!text.truncated);
    }
}
