//! A chain's limits and what it used: the memory cap, the CPU clock and the
//! bounded stdout, kept in [`Meters`] shared outside the store so they
//! survive a store dropped by the total timeout.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use wasmtime::ResourceLimiter;

use crate::live::{ChainEvent, Observer};
use crate::policy::ChainPolicy;
use crate::result::Usage;

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

    /// Keeps what fits of `s`, and returns it.
    pub(crate) fn push<'a>(&mut self, s: &'a str) -> &'a str {
        self.total += s.len() as u64;
        let room = self.cap.saturating_sub(self.text.len());
        let kept = if s.len() <= room {
            s
        } else {
            self.truncated = true;
            &s[..s.floor_char_boundary(room)]
        };
        self.text.push_str(kept);
        kept
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
    /// Who sees the stdout as it is printed ([`crate::live`]).
    observer: Option<Observer>,
}

impl Meters {
    pub(crate) fn new(policy: &ChainPolicy, observer: Option<Observer>) -> Arc<Self> {
        Arc::new(Meters {
            clock: Arc::new(CpuClock::new(policy.max_cpu())),
            stdout: Mutex::new(BoundedText::new(
                usize::try_from(policy.max_stdout_bytes).unwrap_or(usize::MAX),
            )),
            peak_memory: AtomicU64::new(0),
            observer,
        })
    }

    fn stdout(&self) -> std::sync::MutexGuard<'_, BoundedText> {
        self.stdout.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The script printed `text`: kept up to the cap, and what is kept
    /// handed to the observer (after the lock is let go).
    pub(crate) fn print(&self, text: &str) {
        let kept = self.stdout().push(text);
        if let Some(observer) = &self.observer
            && !kept.is_empty()
        {
            observer.send(ChainEvent::Stdout(kept.to_owned()));
        }
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
            cpu_ms: crate::util::millis(self.clock.used()),
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
///
/// A reading of a thread's CPU clock is a system call (~1 µs on a VM: two
/// per tool call were a tenth of its cost), so host calls do not read it
/// when they can avoid it: see [`CpuClock::enter_host`].
#[derive(Debug)]
pub(crate) struct CpuClock {
    limit: Duration,
    /// Nanoseconds of guest CPU time in finished stretches.
    used: AtomicU64,
    /// The open stretch.
    stretch: Mutex<Option<Stretch>>,
    exceeded: AtomicBool,
    /// Epoch ticks seen while the guest ran.
    ticks: AtomicU64,
}

/// A stretch of guest code: which thread's clock, and its CPU reading and
/// the wall time when it began.
#[derive(Debug, Clone, Copy)]
struct Stretch {
    clock: thread_cpu::Clock,
    cpu: u64,
    wall: Instant,
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

    fn stretch(&self) -> std::sync::MutexGuard<'_, Option<Stretch>> {
        self.stretch.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The guest stops running (a yield, a wait, the end). Pausing twice
    /// counts nothing in between.
    pub(crate) fn pause(&self) {
        if let Some(stretch) = self.stretch().take() {
            let now = stretch.clock.now().unwrap_or(stretch.cpu);
            self.used.fetch_add(now.saturating_sub(stretch.cpu), Ordering::Relaxed);
        }
    }

    /// The guest runs (again) on the current thread.
    pub(crate) fn resume(&self) {
        let clock = thread_cpu::Clock::current();
        let cpu = clock.now().unwrap_or(0);
        *self.stretch() = Some(Stretch {
            clock,
            cpu,
            wall: Instant::now(),
        });
    }

    /// The guest calls a tool (or an OS function) and waits for it. Reads
    /// no clock: the call's end decides, in [`CpuClock::leave_host`], how
    /// much of the stretch was the script's.
    pub(crate) fn enter_host(&self) -> HostCall {
        HostCall { since: Instant::now() }
    }

    /// The host call `call` returns to the guest.
    ///
    /// - Back within [`SHORT_HOST_CALL`] on the same thread (an ordinary
    ///   tool call's bookkeeping): the stretch runs on, no clock read; the
    ///   host's work, at most `SHORT_HOST_CALL` per call, counts as the
    ///   script's.
    /// - Later (a tool doing real work), or on another thread: the stretch
    ///   ends at the call's start. Its CPU reading now includes the host's
    ///   work, so the script is counted the smaller of that and the
    ///   stretch's wall time up to the call: never the tool's CPU, and at
    ///   most what the guest could have used (more only by the time its
    ///   thread was preempted within the stretch, itself at most an epoch
    ///   tick long). A fresh stretch starts.
    pub(crate) fn leave_host(&self, call: HostCall) {
        let mut stretch = self.stretch();
        let Some(open) = *stretch else {
            drop(stretch);
            return self.resume();
        };
        if call.since.elapsed() < SHORT_HOST_CALL && open.clock.is_current() {
            return;
        }
        *stretch = None;
        drop(stretch);
        let cpu = open.clock.now().unwrap_or(open.cpu).saturating_sub(open.cpu);
        let wall = call.since.saturating_duration_since(open.wall).as_nanos() as u64;
        self.used.fetch_add(cpu.min(wall), Ordering::Relaxed);
        self.resume();
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

    /// Whether the guest's CPU time, the open stretch included, is over the
    /// limit (then recorded, so the trap is classified from this fact). Read
    /// by the CPython guest's watchdog from its own thread, while the guest
    /// runs: the stretch's thread CPU time, at most its wall time.
    pub(crate) fn over_limit_now(&self) -> bool {
        let open = *self.stretch();
        let running = open.map_or(0, |s| {
            let cpu = s.clock.now().unwrap_or(s.cpu).saturating_sub(s.cpu);
            cpu.min(s.wall.elapsed().as_nanos() as u64)
        });
        if self.used() + Duration::from_nanos(running) > self.limit {
            self.exceeded.store(true, Ordering::Relaxed);
            return true;
        }
        false
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

/// Host work that counts as the script's CPU rather than cost a clock
/// reading (see [`CpuClock::leave_host`]).
pub(crate) const SHORT_HOST_CALL: Duration = Duration::from_micros(50);

/// A host call in progress, from [`CpuClock::enter_host`].
#[derive(Debug)]
#[must_use = "give it to `CpuClock::leave_host` when the call returns"]
pub(crate) struct HostCall {
    since: Instant,
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

        /// Whether this is the calling thread's clock.
        #[cfg(target_os = "linux")]
        pub(crate) fn is_current(&self) -> bool {
            Clock::current().id == self.id
        }

        #[cfg(not(target_os = "linux"))]
        pub(crate) fn is_current(&self) -> bool {
            true
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
    fn a_long_host_call_is_not_the_scripts_cpu() {
        let clock = CpuClock::new(Duration::from_secs(1));
        clock.resume();
        let call = clock.enter_host();
        spin_cpu(Duration::from_millis(30));
        clock.leave_host(call);
        clock.pause();
        assert!(clock.used() < Duration::from_millis(5), "{:?}", clock.used());
    }

    #[test]
    fn the_script_before_a_long_host_call_is_counted() {
        let clock = CpuClock::new(Duration::from_secs(1));
        clock.resume();
        spin_cpu(Duration::from_millis(20));
        let call = clock.enter_host();
        std::thread::sleep(Duration::from_millis(20));
        clock.leave_host(call);
        clock.pause();
        assert!(clock.used() >= Duration::from_millis(20), "{:?}", clock.used());
        assert!(clock.used() < Duration::from_millis(35), "{:?}", clock.used());
    }

    #[test]
    fn a_short_host_call_leaves_the_stretch_running() {
        let clock = CpuClock::new(Duration::from_secs(1));
        clock.resume();
        let before = clock.stretch().map(|s| s.cpu);
        clock.leave_host(clock.enter_host());
        assert_eq!(clock.stretch().map(|s| s.cpu), before, "no new stretch, no reading");
        spin_cpu(Duration::from_millis(10));
        clock.pause();
        assert!(clock.used() >= Duration::from_millis(10), "{:?}", clock.used());
    }

    #[test]
    fn a_host_call_returning_on_another_thread_starts_that_threads_stretch() {
        let clock = Arc::new(CpuClock::new(Duration::from_secs(1)));
        clock.resume();
        let other = Arc::clone(&clock);
        std::thread::spawn(move || {
            // Returned at once: only the thread differs.
            other.leave_host(other.enter_host());
            let stretch = (*other.stretch()).expect("the clock runs");
            assert!(stretch.clock.is_current(), "the stretch must be this thread's");
        })
        .join()
        .expect("the other thread");
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
