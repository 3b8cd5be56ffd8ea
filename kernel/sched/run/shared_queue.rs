//! The `queues=shared` baseline's run queue: one for the whole machine, a FIFO per run level
//! (max, high, normal/low) behind one IRQ-masking spin lock, taken by every core for every
//! push and every take.
//!
//! It exists to be measured against: beamcore's per-core deques avoid exactly this lock, and
//! `make bench BENCH=balance` runs both on the same workloads (docs/balancer.md, "The
//! shared-queue baseline"). So it is the plain version of the idea, not a tuned one: no
//! batching, no per-core caches, one lock. It keeps everything else of the per-core design:
//! the levels and the low-priority rule are applied by `RunQueues` exactly as there, processes
//! that may not move (bound to a core) stay in their core's private queue, and idle cores sleep
//! in WFI and are woken by an SGI, through the same `SLEEPERS` set.
//!
//! ```text
//!   push (any core: spawn, wake, yield) ──lock──▶ [max] [high] [normal/low]  ──lock──▶ take (any core)
//!        └─ 2+ queued and a core asleep: wake it         (FIFO each)        └─ 2+ left: wake another
//! ```
//!
//! Each core counts its lock acquisitions and the ones that found the lock taken
//! (`CoreStats::queue_lock_*`, in the report line).

use alloc::collections::VecDeque;
use core::sync::atomic::{AtomicU8, AtomicUsize, Ordering, fence};

use super::idle::{self, SLEEPERS};
use crate::record::stats::{self, CoreStats, bump};
use beamcore_hal::arch::cpu;
use beamcore_hal::ids::{CoreId, Slot};
use beamcore_hal::sync::{IrqSpinLock, IrqSpinLockGuard};
use beamcore_sched_policy::priority::LEVELS;

/// Queued processes at which a push or take wakes a sleeping core: the core that pushes or takes
/// is awake and will come to one of them itself, so only a second one is work for a sleeper
/// (the per-core mode wakes a thief at `min_steal`, 2 by default, for the same reason).
const WAKE_AT: usize = 2;

struct SharedRunQueue {
    /// The processes of each level, oldest first.
    levels: IrqSpinLock<[VecDeque<Slot>; LEVELS]>,
    /// Bit per level: its queue is not empty. Written only under the lock, so it is exact
    /// there; read without it as a hint of which level to lock for (a stale bit costs one
    /// empty look under the lock; a missed push is caught by `queued` before a core sleeps).
    occupied: AtomicU8,
    /// Processes queued, all levels.
    queued: AtomicUsize,
}

static QUEUE: SharedRunQueue = SharedRunQueue {
    levels: IrqSpinLock::new([const { VecDeque::new() }; LEVELS]),
    occupied: AtomicU8::new(0),
    queued: AtomicUsize::new(0),
};

/// The calling core's counters (for the lock counts).
fn my_stats() -> &'static CoreStats {
    stats::of(CoreId::this())
}

/// Takes the lock, counting the acquisition and whether it had to wait.
fn lock() -> IrqSpinLockGuard<'static, [VecDeque<Slot>; LEVELS]> {
    let (guard, contended) = QUEUE.levels.lock_noting_contention();
    let stats = my_stats();
    bump(&stats.queue_lock_acquisitions);
    if contended {
        bump(&stats.queue_lock_contended);
    }
    guard
}

/// Queues the process in `slot` (runnable, owned by the caller) at the back of `level`.
pub(crate) fn push(slot: Slot, level: usize) {
    let queued = {
        let mut levels = lock();
        // Grows if needed; an allocation failure here is a kernel panic, never a lost process.
        levels[level].push_back(slot);
        // ORDERING: Relaxed: under the lock (see `occupied`).
        QUEUE.occupied.fetch_or(1 << level, Ordering::Relaxed);
        // ORDERING: SeqCst, the pusher's half of the Dekker pair with `has_work` (a core about to
        // sleep joins `SLEEPERS` and then reads `queued`): either it sees this process, or the
        // fence in `wake_a_sleeper` lets us see it asleep.
        QUEUE.queued.fetch_add(1, Ordering::SeqCst) + 1
    };
    if queued >= WAKE_AT {
        wake_a_sleeper();
    }
}

/// Levels whose queue holds processes (a hint: see `occupied`).
#[inline]
pub(crate) fn occupied_levels() -> u8 {
    // ORDERING: Relaxed: a hint; the lock orders the queues themselves.
    QUEUE.occupied.load(Ordering::Relaxed)
}

/// The oldest process of `level`, if any; wakes another core when at least `WAKE_AT` stay
/// queued, so a burst pushed while cores slept spreads without waiting for their ticks.
pub(crate) fn take(level: usize) -> Option<Slot> {
    if occupied_levels() & (1 << level) == 0 {
        return None;
    }
    let (slot, left) = {
        let mut levels = lock();
        let slot = levels[level].pop_front();
        if levels[level].is_empty() {
            // ORDERING: Relaxed: under the lock (see `occupied`).
            QUEUE.occupied.fetch_and(!(1 << level), Ordering::Relaxed);
        }
        // ORDERING: Relaxed: a decrement needs no ordering for `has_work` (a core that sees a
        // stale non-zero count looks once more and then sleeps).
        let left = if slot.is_some() { QUEUE.queued.fetch_sub(1, Ordering::Relaxed) - 1 } else { 0 };
        (slot, left)
    };
    if left >= WAKE_AT {
        wake_a_sleeper();
    }
    slot
}

/// Whether processes are queued: the last look of a core about to sleep, after it joined
/// `SLEEPERS` (the other half of the Dekker pair in `push`).
pub(crate) fn has_work() -> bool {
    // ORDERING: SeqCst: pairs with the SeqCst increment in `push` (see there).
    QUEUE.queued.load(Ordering::SeqCst) != 0
}

/// Sends a wake-up SGI to the lowest-numbered sleeping core other than this one, if any.
fn wake_a_sleeper() {
    // ORDERING: SeqCst fence between our SeqCst update of `queued` and the read of `SLEEPERS`
    // (Relaxed, word by word): the store-load order the Dekker pair needs.
    fence(Ordering::SeqCst);
    if let Some(other) = SLEEPERS.load().first_other_than(cpu::core_id()) {
        idle::send_wake(other);
    }
}
