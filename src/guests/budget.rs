//! How many chains of each guest may hold a pool slot at once, sized when
//! the engine starts from what the process really has left: memory
//! mappings, threads, file descriptors, memory and address space.
//!
//! Why: past one of these the kernel refuses something, and not always in
//! a way that can be answered. 10,000 CPython chains parked at once aborted
//! the process: ~4,500 chains in, a new guest thread's signal stack could
//! not be mapped (`vm.max_map_count`, 65,530 by default) and wasmtime
//! panics where that cannot unwind. So each guest's slots are capped at
//! what its budgets hold ([`Capacity`]), never above
//! `max_concurrent_chains`; chains beyond wait for a slot as those beyond
//! `max_concurrent_chains` do, within their total timeout.
//!
//! What one chain costs is measured, not guessed ([`MONTY`], [`CPYTHON`],
//! and the test at the bottom that keeps them true): read at start, the
//! budgets cost nothing per chain.

/// What a process has left of each budget its chains draw on, from which
/// an engine sizes its guests' slots ([`crate::EngineConfig::budgets`]);
/// `None` where the host does not say (then that budget bounds nothing).
/// [`Budgets::of_process`] reads them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Budgets {
    /// Memory mappings: `vm.max_map_count` less the process's own.
    pub maps: Option<u64>,
    /// Threads: the least of `RLIMIT_NPROC`, `kernel.threads-max`,
    /// `kernel.pid_max` and the cgroup's `pids.max`, less the threads that
    /// already run (all of the host's, or the cgroup's: whose they are,
    /// per user, is not cheap to learn, so all of them count).
    pub threads: Option<u64>,
    /// File descriptors: `RLIMIT_NOFILE`'s soft limit less the open ones.
    pub fds: Option<u64>,
    /// Memory: `MemAvailable`, or the cgroup's limit less its usage if
    /// that is less.
    pub memory: Option<u64>,
    /// Address space: the user half of a 48-bit space (128 TiB), or
    /// `RLIMIT_AS`, less what the process has mapped (reserved) already.
    pub address_space: Option<u64>,
}

impl Budgets {
    /// This process's budgets now: a few small reads of `/proc` and `/sys`
    /// (and one of `/proc/self/maps`), so once per engine, never per chain.
    /// Off Linux, only the file descriptors are known.
    pub fn of_process() -> Self {
        #[cfg(target_os = "linux")]
        {
            Budgets {
                maps: linux::maps(),
                threads: linux::threads(),
                fds: linux::fds(),
                memory: linux::memory(),
                address_space: linux::address_space(),
            }
        }
        #[cfg(not(target_os = "linux"))]
        {
            Budgets {
                fds: fds_left(rlimit(libc::RLIMIT_NOFILE), None),
                ..Budgets::default()
            }
        }
    }
}

/// A resource limit's soft value; `None` when unlimited or unreadable.
fn rlimit(resource: Resource) -> Option<u64> {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `limit` is a valid, writable `rlimit`.
    let read = unsafe { libc::getrlimit(resource, &mut limit) };
    (read == 0 && limit.rlim_cur != libc::RLIM_INFINITY).then_some(limit.rlim_cur)
}

/// The type `getrlimit` takes its resource as (it differs between libcs).
#[cfg(all(target_os = "linux", target_env = "gnu"))]
type Resource = libc::__rlimit_resource_t;
#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
type Resource = libc::c_int;

/// The most [`raise_fd_limit`] raises the soft limit to: where the hard
/// limit is huge (2^30 in some containers), a child that closes every
/// descriptor up to its limit one by one would take seconds; 2^20 is what
/// Docker gives by default, which such programs are used to.
const MAX_RAISED_FDS: u64 = 1 << 20;

/// Raises the soft `RLIMIT_NOFILE` to the hard limit (at most
/// [`MAX_RAISED_FDS`]), as Go's runtime does at start and servers commonly
/// do: the soft limit is often 1,024 for programs that use `select`, which
/// chainbox does not, and each CPython chain holds its workspace directory
/// open, each running command tool three pipes. Tool programs inherit the
/// raised limit. Returns the soft limit after (`None`: unlimited or
/// unreadable).
pub(crate) fn raise_fd_limit() -> Option<u64> {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `limit` is a valid, writable `rlimit`.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } != 0 {
        return None;
    }
    // macOS refuses a soft limit above OPEN_MAX whatever the hard one says.
    #[cfg(target_os = "macos")]
    let hard = limit.rlim_max.min(libc::OPEN_MAX as libc::rlim_t);
    #[cfg(not(target_os = "macos"))]
    let hard = limit.rlim_max;
    let hard = hard.min(MAX_RAISED_FDS as libc::rlim_t);
    if limit.rlim_cur < hard {
        let raised = libc::rlimit {
            rlim_cur: hard,
            rlim_max: limit.rlim_max,
        };
        // SAFETY: a valid `rlimit`; raising the soft limit up to the hard
        // one needs no privilege.
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &raised) } == 0 {
            limit.rlim_cur = hard;
        } else {
            tracing::debug!(
                "could not raise RLIMIT_NOFILE from {} to {hard}: {}",
                limit.rlim_cur,
                std::io::Error::last_os_error()
            );
        }
    }
    (limit.rlim_cur != libc::RLIM_INFINITY).then_some(limit.rlim_cur)
}

/// What is left of a file-descriptor `limit` with `open` descriptors open.
fn fds_left(limit: Option<u64>, open: Option<u64>) -> Option<u64> {
    limit.map(|limit| limit.saturating_sub(open.unwrap_or(0)))
}

#[cfg(target_os = "linux")]
mod linux {
    use std::path::Path;

    use super::{fds_left, rlimit};

    /// The user half of the 48-bit virtual address space of x86-64 and
    /// aarch64 with 4-level page tables: what every pool reservation of
    /// the process (each linear memory slot reserves ~4 GiB) must fit in.
    const USER_ADDRESS_SPACE: u64 = 128 << 40;

    /// A number in the file at `path` (a `/proc` or `/sys` value); `None`
    /// if it is absent, unreadable or `max` (cgroup v2's "no limit").
    fn number(path: impl AsRef<Path>) -> Option<u64> {
        std::fs::read_to_string(path).ok()?.trim().parse().ok()
    }

    /// Lines of `/proc/self/maps`: the process's mappings.
    pub(super) fn map_count() -> Option<u64> {
        let maps = std::fs::read("/proc/self/maps").ok()?;
        Some(maps.iter().filter(|&&b| b == b'\n').count() as u64)
    }

    /// A field of `/proc/self/status` (`Threads:`, `VmSize:` in kB).
    pub(super) fn status(field: &str) -> Option<u64> {
        let status = std::fs::read_to_string("/proc/self/status").ok()?;
        let value = status.lines().find_map(|l| l.strip_prefix(field))?;
        value.trim().trim_end_matches("kB").trim().parse().ok()
    }

    /// Descriptors open in this process.
    pub(super) fn open_fds() -> Option<u64> {
        Some(std::fs::read_dir("/proc/self/fd").ok()?.count() as u64)
    }

    pub(super) fn maps() -> Option<u64> {
        let max = number("/proc/sys/vm/max_map_count")?;
        Some(max.saturating_sub(map_count()?))
    }

    /// The directory of this process's cgroup under `controller` (v1), or
    /// of its v2 cgroup (`controller` empty), if mounted where expected.
    fn cgroup_dir(controller: &str) -> Option<std::path::PathBuf> {
        let groups = std::fs::read_to_string("/proc/self/cgroup").ok()?;
        let v1 = groups.lines().find_map(|l| {
            let mut parts = l.splitn(3, ':');
            let (_, names, path) = (parts.next()?, parts.next()?, parts.next()?);
            names.split(',').any(|n| n == controller).then(|| path.to_owned())
        });
        match v1 {
            Some(path) => Some(format!("/sys/fs/cgroup/{controller}{path}").into()),
            None => {
                let path = groups.lines().find_map(|l| l.strip_prefix("0::"))?;
                Some(format!("/sys/fs/cgroup{path}").into())
            }
        }
    }

    pub(super) fn threads() -> Option<u64> {
        // `/proc/loadavg`'s fourth field: runnable / all scheduling
        // entities (threads) of the host.
        let loadavg = std::fs::read_to_string("/proc/loadavg").ok()?;
        let host_threads: u64 = loadavg.split_whitespace().nth(3)?.split('/').nth(1)?.parse().ok()?;
        let host = [
            rlimit(libc::RLIMIT_NPROC),
            number("/proc/sys/kernel/threads-max"),
            number("/proc/sys/kernel/pid_max"),
        ]
        .into_iter()
        .flatten()
        .min()
        .map(|limit| limit.saturating_sub(host_threads));
        let cgroup = cgroup_dir("pids").and_then(|dir| {
            let max = number(dir.join("pids.max"))?;
            Some(max.saturating_sub(number(dir.join("pids.current")).unwrap_or(0)))
        });
        [host, cgroup].into_iter().flatten().min()
    }

    pub(super) fn fds() -> Option<u64> {
        fds_left(rlimit(libc::RLIMIT_NOFILE), open_fds())
    }

    pub(super) fn memory() -> Option<u64> {
        let meminfo = std::fs::read_to_string("/proc/meminfo").ok()?;
        let available = meminfo
            .lines()
            .find_map(|l| l.strip_prefix("MemAvailable:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            .map(|kb| kb * 1024);
        let cgroup = cgroup_dir("memory").and_then(|dir| {
            // v1 names it `memory.limit_in_bytes` (a huge number when
            // unlimited), v2 `memory.max` (`max`).
            let (limit, usage) = match number(dir.join("memory.max")) {
                Some(limit) => (limit, number(dir.join("memory.current"))),
                None => (
                    number(dir.join("memory.limit_in_bytes"))?,
                    number(dir.join("memory.usage_in_bytes")),
                ),
            };
            Some(limit.saturating_sub(usage.unwrap_or(0)))
        });
        [available, cgroup].into_iter().flatten().min()
    }

    pub(super) fn address_space() -> Option<u64> {
        let mapped = status("VmSize:")? * 1024;
        let limit = rlimit(libc::RLIMIT_AS).map_or(USER_ADDRESS_SPACE, |l| l.min(USER_ADDRESS_SPACE));
        Some(limit.saturating_sub(mapped))
    }
}

/// The budgets in a fixed order, with their names and the part of each a
/// guest's slots may take: the rest is headroom for everything else the
/// process does (tools' pipes and children, stores' connections, malloc's
/// arenas, the runtime's threads) and for what a chain costs beyond the
/// trivial one measured (memory above all: a chain may grow to its
/// `max_memory_bytes`).
const BUDGETS: [(&str, u64, u64); 5] = [
    ("memory mappings", 7, 8),
    ("threads", 7, 8),
    ("file descriptors", 7, 8),
    ("memory", 3, 4),
    ("address space", 7, 8),
];

impl Budgets {
    fn as_array(&self) -> [Option<u64>; 5] {
        [self.maps, self.threads, self.fds, self.memory, self.address_space]
    }
}

/// What one chain of a guest costs the process's budgets. Measured on
/// Linux 6.x (x86-64) with the trivial chain parked on a tool of
/// `benches/parked.rs`, from `/proc/self/maps`, `/proc/self/status` and
/// `/proc/self/fd` (BENCHMARKS.md, issue 57); the test at the bottom checks
/// the mappings, threads and descriptors still hold.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Cost {
    /// Mappings of each pool slot: the guard page of its fiber stack
    /// splits the stack pool's mapping (2, made with the pool); its linear
    /// memory, once an instance has run in it, splits the memory pool's (3
    /// for monty: the heap, the image copy-on-write, the reserved rest; 4
    /// for CPython: and a 64 KiB span), and stays split while the slot is
    /// idle (the pool keeps the image mapped for the slot's next instance).
    pub(crate) maps_per_slot: u64,
    /// Mappings of each of the guest's threads: its stack and guard page,
    /// the standard library's signal stack and guard, wasmtime's larger
    /// signal stack and guard (the one whose failed mapping aborted).
    pub(crate) maps_per_thread: u64,
    /// Threads of a chain: a CPython chain's guest runs on one of its own
    /// (`threads.rs`), a monty chain on its caller's runtime.
    pub(crate) threads_per_chain: u64,
    /// Descriptors of a pool slot's instance: a CPython instance holds its
    /// `/workspace` directory preopened.
    pub(crate) fds_per_slot: u64,
    /// Address space a pool slot reserves: its linear memory's
    /// reservation ([`super::MAX_MEMORY_BYTES`]) and guard, its fiber
    /// stack, its tables (the process's `VmSize` per slot).
    pub(crate) address_per_slot: u64,
    /// Memory (PSS) a parked trivial chain takes: a floor, not a bound.
    pub(crate) bytes_per_chain: u64,
}

/// A monty chain: 5 mappings per pool slot (2 + 3), no thread, no
/// descriptor, 4.04 GiB of address space per slot (`VmSize` of pools of
/// 41, 141 and 1,041 slots), ~100–125 KiB PSS parked (bench profile).
pub(crate) const MONTY: Cost = Cost {
    maps_per_slot: 5,
    maps_per_thread: 0,
    threads_per_chain: 0,
    fds_per_slot: 0,
    address_per_slot: 4_140 << 20,
    bytes_per_chain: 128 << 10,
};

/// A CPython chain: 6 mappings per pool slot (2 + 4) and 6 per thread (40
/// parked chains: +414 mappings, +43 threads, +39 descriptors), one
/// descriptor per slot, 4.1 GiB of address space per slot (pools of 11 and
/// 1,011 slots), 1.4 MiB PSS parked (1,396 KiB at 10,000, bench profile;
/// 2.7 MiB in the dev profile, BENCHMARKS.md issues 48, 57).
pub(crate) const CPYTHON: Cost = Cost {
    maps_per_slot: 6,
    maps_per_thread: 6,
    threads_per_chain: 1,
    fds_per_slot: 1,
    address_per_slot: 4_200 << 20,
    bytes_per_chain: 3 << 20,
};

/// One guest as the sizing sees it: what a chain costs, and how many pool
/// slots a pool for `n` chains has (more than `n`: the spare, the
/// sessions' parked instances, and for monty the freed slots waiting to be
/// decommitted).
pub(crate) struct Demand<'a> {
    pub(crate) cost: Cost,
    pub(crate) slots: &'a dyn Fn(u32) -> u32,
}

impl Demand<'_> {
    /// What `chains` chains of this guest and their pool take of each
    /// budget, in [`BUDGETS`]' order.
    fn need(&self, chains: u32) -> [u64; 5] {
        let c = self.cost;
        let slots = u64::from((self.slots)(chains));
        let threads = u64::from(chains) * c.threads_per_chain;
        // Saturating: 2^32 slots of 4 GiB each overflow a u64.
        [
            (slots.saturating_mul(c.maps_per_slot)).saturating_add(threads.saturating_mul(c.maps_per_thread)),
            threads,
            slots.saturating_mul(c.fds_per_slot),
            u64::from(chains).saturating_mul(c.bytes_per_chain),
            slots.saturating_mul(c.address_per_slot),
        ]
    }
}

/// How many chains of each guest may hold a pool slot at once: the
/// engine's [`crate::EngineConfig::max_concurrent_chains`], or less where
/// the process's budgets hold less ([`Budgets`]). Chains beyond wait for a
/// slot, within their total timeout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Capacity {
    /// Chains of the monty guest.
    pub monty: u32,
    /// Chains of the CPython guest.
    pub cpython: u32,
}

/// What the sizing found: the capacity, and for each guest below
/// `max_concurrent_chains` the budget that held it there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Sizing {
    pub(crate) capacity: Capacity,
    pub(crate) monty_bound: Option<&'static str>,
    pub(crate) cpython_bound: Option<&'static str>,
    /// Some guest's budgets did not hold even one chain (it got one).
    pub(crate) starved: bool,
}

/// Sizes both guests for `max_chains` from `budgets`. Where both guests at
/// `max_chains` fit a budget together, it bounds neither; where they do
/// not, each may take half of it, or all the other leaves at its most.
/// The CPython guest is built only on a chain that needs it, but its room
/// is kept from the start: its pool is made later, but in the same process.
pub(crate) fn size(budgets: &Budgets, max_chains: u32, monty: &Demand<'_>, cpython: &Demand<'_>) -> Sizing {
    let max = max_chains.max(1);
    let left = budgets.as_array();
    let usable: [Option<u64>; 5] = std::array::from_fn(|r| {
        let (_, num, den) = BUDGETS[r];
        left[r].map(|b| b / den * num + b % den * num / den)
    });
    let (need_monty, need_cpython) = (monty.need(max), cpython.need(max));
    let share = |own: &[u64; 5], other: &[u64; 5]| -> [Option<u64>; 5] {
        std::array::from_fn(|r| {
            usable[r].map(|u| match own[r].saturating_add(other[r]) <= u {
                true => u,
                false => (u / 2).max(u.saturating_sub(other[r])),
            })
        })
    };
    let (monty_chains, monty_bound) = fit(monty, max, &share(&need_monty, &need_cpython));
    let (cpython_chains, cpython_bound) = fit(cpython, max, &share(&need_cpython, &need_monty));
    Sizing {
        capacity: Capacity {
            monty: monty_chains.max(1),
            cpython: cpython_chains.max(1),
        },
        monty_bound,
        cpython_bound,
        starved: monty_chains == 0 || cpython_chains == 0,
    }
}

/// The most chains of `demand` in `0..=max` whose need fits `share`, and
/// the budget that stopped one more (`None`: `max` fits).
fn fit(demand: &Demand<'_>, max: u32, share: &[Option<u64>; 5]) -> (u32, Option<&'static str>) {
    let over = |chains: u32| {
        let need = demand.need(chains);
        (0..need.len()).find(|&r| share[r].is_some_and(|s| need[r] > s))
    };
    if over(max).is_none() {
        return (max, None);
    }
    // `over` grows with the chains: the last that fits, by bisection.
    let (mut fits, mut over_at) = (0, max);
    while over_at - fits > 1 {
        let mid = fits + (over_at - fits) / 2;
        match over(mid) {
            None => fits = mid,
            Some(_) => over_at = mid,
        }
    }
    (fits, over(fits + 1).map(|r| BUDGETS[r].0))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A guest of `maps` mappings per slot and nothing else, one slot per
    /// chain: sizes that read at a glance.
    fn maps_only(maps: u64) -> Cost {
        Cost {
            maps_per_slot: maps,
            maps_per_thread: 0,
            threads_per_chain: 0,
            fds_per_slot: 0,
            address_per_slot: 0,
            bytes_per_chain: 0,
        }
    }

    fn one_slot_per_chain(chains: u32) -> u32 {
        chains
    }

    fn sized(budgets: Budgets, max: u32, monty: Cost, cpython: Cost) -> Sizing {
        let monty = Demand {
            cost: monty,
            slots: &one_slot_per_chain,
        };
        let cpython = Demand {
            cost: cpython,
            slots: &one_slot_per_chain,
        };
        size(&budgets, max, &monty, &cpython)
    }

    #[test]
    fn budgets_that_hold_both_guests_at_max_concurrent_chains_bound_neither() {
        let budgets = Budgets {
            maps: Some(8_000),
            ..Budgets::default()
        };
        // 1,000 × 1 + 1,000 × 3 = 4,000 of the 7,000 usable.
        let sizing = sized(budgets, 1_000, maps_only(1), maps_only(3));
        assert_eq!(
            sizing.capacity,
            Capacity {
                monty: 1_000,
                cpython: 1_000
            }
        );
        assert_eq!((sizing.monty_bound, sizing.cpython_bound), (None, None));
    }

    #[test]
    fn the_most_chains_an_engine_may_have_are_sized_without_overflow() {
        let budgets = Budgets {
            address_space: Some(128 << 40),
            ..Budgets::default()
        };
        let sizing = sized(budgets, u32::MAX, MONTY, CPYTHON);
        assert!(sizing.capacity.monty < u32::MAX, "{sizing:?}");
    }

    #[test]
    fn unknown_budgets_bound_nothing() {
        let sizing = sized(Budgets::default(), 100_000, MONTY, CPYTHON);
        assert_eq!(
            sizing.capacity,
            Capacity {
                monty: 100_000,
                cpython: 100_000
            }
        );
    }

    #[test]
    fn guests_that_do_not_fit_a_budget_together_each_get_half_of_it() {
        let budgets = Budgets {
            maps: Some(800),
            ..Budgets::default()
        };
        // 7/8 of 800 usable: 700, 350 each.
        let sizing = sized(budgets, 1_000, maps_only(1), maps_only(3));
        assert_eq!(
            sizing.capacity,
            Capacity {
                monty: 350,
                cpython: 116
            }
        );
        assert_eq!(sizing.monty_bound, Some("memory mappings"));
        assert_eq!(sizing.cpython_bound, Some("memory mappings"));
    }

    #[test]
    fn a_guest_takes_what_the_other_leaves_of_a_budget() {
        let budgets = Budgets {
            maps: Some(8_000),
            ..Budgets::default()
        };
        // 7,000 usable; at 1,000 chains monty takes 1,000: CPython gets
        // the other 6,000 (more than half), 857 chains.
        let sizing = sized(budgets, 1_000, maps_only(1), maps_only(7));
        assert_eq!(
            sizing.capacity,
            Capacity {
                monty: 1_000,
                cpython: 857
            }
        );
    }

    #[test]
    fn a_budget_only_one_guest_draws_on_is_all_its_own() {
        let budgets = Budgets {
            threads: Some(800),
            ..Budgets::default()
        };
        let sizing = sized(budgets, 10_000, MONTY, CPYTHON);
        assert_eq!(
            sizing.capacity,
            Capacity {
                monty: 10_000,
                cpython: 700
            }
        );
        assert_eq!(sizing.cpython_bound, Some("threads"));
    }

    #[test]
    fn the_scarcest_budget_is_the_bound() {
        let budgets = Budgets {
            maps: Some(1 << 20),
            fds: Some(160),
            ..Budgets::default()
        };
        let sizing = sized(budgets, 10_000, MONTY, CPYTHON);
        assert_eq!(sizing.capacity.cpython, 140);
        assert_eq!(sizing.cpython_bound, Some("file descriptors"));
        assert_eq!(sizing.monty_bound, None);
    }

    #[test]
    fn budgets_that_hold_no_chain_still_give_each_guest_one() {
        let budgets = Budgets {
            maps: Some(0),
            ..Budgets::default()
        };
        let sizing = sized(budgets, 1_000, MONTY, CPYTHON);
        assert_eq!(sizing.capacity, Capacity { monty: 1, cpython: 1 });
        assert!(sizing.starved);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn every_budget_of_a_linux_process_is_read() {
        let budgets = Budgets::of_process();
        let read = budgets.as_array();
        assert!(read.iter().all(Option::is_some), "{budgets:?}");
        assert!(budgets.maps.is_some_and(|m| m > 0), "{budgets:?}");
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn the_soft_fd_limit_is_raised_to_the_hard_one() {
        let soft = raise_fd_limit().expect("a finite limit here");
        let mut limit = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: a valid, writable `rlimit`.
        assert_eq!(unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) }, 0);
        assert_eq!(soft, limit.rlim_cur);
        // Raised to the hard limit, or to the cap below it (a soft limit
        // above the cap already is left alone).
        assert!(
            soft >= limit.rlim_max.min(MAX_RAISED_FDS),
            "{soft} of {}",
            limit.rlim_max
        );
    }
}

/// The per-chain costs above hold: chains parked on a tool add no more
/// mappings, threads and descriptors than [`MONTY`] and [`CPYTHON`] count.
/// Each measurement runs alone, in a process of its own (this test binary
/// again, running only it): other tests' engines in this one would add
/// their own mappings and threads meanwhile.
#[cfg(all(test, target_os = "linux"))]
mod measured {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    use std::time::Duration;

    use serde_json::{Map, Value, json};

    use super::linux::{map_count, open_fds, status};
    use super::*;
    use crate::tools::{Tool, ToolContext, ToolError, ToolInfo, ToolOutput, ToolRegistry};
    use crate::{Approval, ChainPolicy, Engine, EngineConfig, PythonChoice, ToolRisk};

    /// Parks until released, counting the chains that reached it; while
    /// `open`, returns at once (the warm-up's calls).
    struct Park {
        info: ToolInfo,
        open: AtomicBool,
        arrived: AtomicUsize,
        release: tokio::sync::Notify,
    }

    #[async_trait::async_trait]
    impl Tool for Park {
        fn info(&self) -> &ToolInfo {
            &self.info
        }
        async fn execute(&self, _ctx: ToolContext, _args: Map<String, Value>) -> Result<ToolOutput, ToolError> {
            if self.open.load(Ordering::SeqCst) {
                return Ok(ToolOutput::Value(json!("open")));
            }
            let released = self.release.notified();
            self.arrived.fetch_add(1, Ordering::SeqCst);
            released.await;
            Ok(ToolOutput::Value(json!("released")))
        }
    }

    /// Mappings of each pool slot made with the pool (its fiber stack's
    /// guard page), already there before any chain runs.
    const STACK_GUARD_MAPS: u64 = 2;

    /// What the process may add besides the chains while they park: a
    /// few malloc arenas (two mappings each), the runtime's blocking
    /// threads (at most [`BLOCKING_THREADS`]) and a check thread or two.
    const SLACK_MAPS: u64 = 40;
    const SLACK_THREADS: u64 = 8;
    const SLACK_FDS: u64 = 8;

    /// The measuring runtime's blocking pool: the embedder's to size, not
    /// a chain's cost (wasmtime-wasi's file operations use it; tokio's
    /// default lets it grow to 512 threads, each kept 10 s).
    const BLOCKING_THREADS: usize = 4;

    /// Mappings, threads and descriptors of the process.
    fn held() -> [u64; 3] {
        [
            map_count().expect("/proc/self/maps"),
            status("Threads:").expect("/proc/self/status"),
            open_fds().expect("/proc/self/fd"),
        ]
    }

    /// What `chains` chains of `python` add while parked, over an engine
    /// that has run a few and made its spare.
    fn added_by_parked(python: PythonChoice, chains: usize) -> [u64; 3] {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .max_blocking_threads(BLOCKING_THREADS)
            .enable_all()
            .build()
            .expect("runtime");
        runtime.block_on(async {
            let engine = Engine::with_config(EngineConfig {
                max_concurrent_chains: chains as u32 + 4,
                ..EngineConfig::default()
            })
            .expect("engine");
            let park = Arc::new(Park {
                info: ToolInfo::new("park", "Parks.", json!({"type": "object", "properties": {}})),
                open: AtomicBool::new(true),
                arrived: AtomicUsize::new(0),
                release: tokio::sync::Notify::new(),
            });
            let registry = ToolRegistry::from_local([park.clone() as Arc<dyn Tool>]).expect("registry");
            let policy = ChainPolicy {
                python,
                ..ChainPolicy::default()
            };
            let approval = Approval::auto(ToolRisk::Safe);
            let script = "data = [i * i for i in range(100)]\nr = await park()\nr";
            // The warm-up runs the same script through an open park: what
            // the process starts once (the check's thread and watchdog) is
            // there before. One at a time: a chain's thread and pool slot
            // kept from a warm-up would be missing from the measure.
            for _ in 0..3 {
                let r = engine.run(script, &registry, &policy, &approval).await;
                assert!(r.is_ok(), "{r:?}");
            }
            park.open.store(false, Ordering::SeqCst);
            // The spare is made and the runs' stores dropped by now.
            tokio::time::sleep(Duration::from_secs(1)).await;
            let before = held();
            let mut tasks = tokio::task::JoinSet::new();
            for _ in 0..chains {
                let (engine, registry, policy, approval) =
                    (engine.clone(), registry.clone(), policy.clone(), approval.clone());
                tasks.spawn(async move { engine.run(script, &registry, &policy, &approval).await });
            }
            while park.arrived.load(Ordering::SeqCst) < chains {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            let parked = held();
            park.release.notify_waiters();
            while let Some(r) = tasks.join_next().await {
                let r = r.expect("a chain's task");
                assert!(r.is_ok(), "{r:?}");
            }
            std::array::from_fn(|i| parked[i].saturating_sub(before[i]))
        })
    }

    /// How many chains each measurement parks.
    const CHAINS: usize = 24;

    /// Runs the ignored test `name` of this module alone in a new process
    /// of this test binary, and reads what it measured.
    fn measured_alone(name: &str) -> [u64; 3] {
        let exe = std::env::current_exe().expect("the test binary");
        let out = std::process::Command::new(exe)
            .args([
                &format!("guests::budget::measured::{name}"),
                "--exact",
                "--ignored",
                "--nocapture",
            ])
            .args(["--test-threads", "1"])
            .output()
            .expect("the test binary runs");
        let text = String::from_utf8_lossy(&out.stdout);
        let line = text.lines().find_map(|l| l.split_once("measured: ").map(|(_, m)| m));
        let Some(line) = line else {
            panic!(
                "{name} measured nothing: {text}{}",
                String::from_utf8_lossy(&out.stderr)
            );
        };
        let numbers: Vec<u64> = line.split_whitespace().filter_map(|n| n.parse().ok()).collect();
        numbers.try_into().expect("three numbers")
    }

    #[test]
    #[ignore = "run alone by the tests below"]
    fn parked_monty_chains() {
        let [maps, threads, fds] = added_by_parked(PythonChoice::Monty, CHAINS);
        println!("measured: {maps} {threads} {fds}");
    }

    #[test]
    #[ignore = "run alone by the tests below"]
    fn parked_cpython_chains() {
        let [maps, threads, fds] = added_by_parked(PythonChoice::Cpython, CHAINS);
        println!("measured: {maps} {threads} {fds}");
    }

    fn assert_within(python: PythonChoice, cost: Cost, [maps, threads, fds]: [u64; 3]) {
        let chains = CHAINS;
        let n = chains as u64;
        let per_slot = cost.maps_per_slot - STACK_GUARD_MAPS;
        let max_maps = n * (per_slot + cost.threads_per_chain * cost.maps_per_thread) + SLACK_MAPS;
        assert!(
            maps <= max_maps,
            "{python:?}: {maps} mappings for {chains} chains, over {max_maps}"
        );
        let max_threads = n * cost.threads_per_chain + SLACK_THREADS;
        assert!(
            threads <= max_threads,
            "{python:?}: {threads} threads, over {max_threads}"
        );
        let max_fds = n * cost.fds_per_slot + SLACK_FDS;
        assert!(fds <= max_fds, "{python:?}: {fds} descriptors, over {max_fds}");
        // And they are what is measured, not far above it.
        assert!(maps + SLACK_MAPS >= n * per_slot, "{python:?}: only {maps} mappings");
    }

    #[test]
    fn a_parked_monty_chain_holds_no_more_than_its_guest_is_sized_for() {
        assert_within(PythonChoice::Monty, MONTY, measured_alone("parked_monty_chains"));
    }

    #[test]
    fn a_parked_cpython_chain_holds_no_more_than_its_guest_is_sized_for() {
        assert_within(PythonChoice::Cpython, CPYTHON, measured_alone("parked_cpython_chains"));
    }
}
