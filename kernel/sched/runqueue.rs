//! A core's run queues: three levels (max, high, and one shared by normal and low), each a
//! stealable `WorkQueue` (the Chase-Lev deque plus an overflow queue) and a private queue for
//! processes that may not move. The owner pushes at the bottom and takes from the top, like a
//! thief: run queues must be FIFO, or a yielding process would run again at once and starve
//! the others.

use alloc::collections::VecDeque;
use core::sync::atomic::{AtomicUsize, Ordering};

use super::balance::may_migrate;
use super::deque::{NativeAtomics, Steal, WorkQueue, WorkQueueStealer};
use super::idle::{SLEEPERS, wake_a_thief};
use super::priority::{LEVELS, LowPriorityDecision, Priority, low_priority_rule};
use super::process::{self, Affinity, Process};
use super::settings::balance;
use super::stats::{CoreStats, bump};

/// Capacity of each lock-free run queue; more runnable processes spill to the overflow.
const DEQUE_CAPACITY: usize = 256;

/// Retries of `take_oldest` before it gives up for this pass. Each `Steal::Retry` is either
/// progress elsewhere (a thief took the top item) or `STORE_EXCLUSIVE_ATTEMPTS` failed
/// store-exclusives in a row; more than a few in a row means something keeps clearing this
/// core's reservation, and spinning on it with IRQs masked would hide that and hold up timeouts,
/// the inbox and jobs.
const TAKE_OLDEST_ATTEMPTS: u32 = 4;

/// What every core may read of a core's run queues: the thieves' ends and the runnable counts.
pub(crate) struct SharedQueues {
    pub(super) stealers: spin::Once<[WorkQueueStealer<NativeAtomics>; LEVELS]>,
    /// Runnable processes queued here by priority (max, high, normal, low), for load. Atomic:
    /// a thief that takes one decrements the victim's count.
    pub(super) runnable: [AtomicUsize; 4],
}

impl SharedQueues {
    pub(super) const fn new() -> SharedQueues {
        SharedQueues { stealers: spin::Once::new(), runnable: [const { AtomicUsize::new(0) }; 4] }
    }

    /// Runnable processes of `priority` queued here.
    pub(super) fn runnable(&self, priority: Priority) -> usize {
        // ORDERING: Relaxed: a load figure; nothing is read through it.
        self.runnable[priority as usize].load(Ordering::Relaxed)
    }

    /// Stealable processes per level (0 for a core that has not started scheduling).
    pub(super) fn stealable(&self) -> [usize; LEVELS] {
        self.stealers.get().map_or([0; LEVELS], |s| s.each_ref().map(|q| q.len()))
    }

    /// Stealable processes, all levels.
    pub(super) fn stealable_total(&self) -> usize {
        self.stealers.get().map_or(0, |s| s.iter().map(|q| q.len()).sum())
    }
}

/// The owner's side of the run queues (only its core touches it, IRQs masked).
pub(super) struct RunQueues {
    /// Stealable runnable processes, one queue per level.
    queues: Option<[WorkQueue<NativeAtomics>; LEVELS]>,
    /// Runnable processes that may not move (bound, at the migration limit, protected max):
    /// kept out of the stealable queues so they never stand in a thief's way.
    private: [VecDeque<u32>; LEVELS],
    /// Per level: serve the private queue next (alternates with the stealable one).
    private_turn: [bool; LEVELS],
}

impl RunQueues {
    pub(super) const fn new() -> RunQueues {
        RunQueues { queues: None, private: [const { VecDeque::new() }; LEVELS], private_turn: [false; LEVELS] }
    }

    /// Makes the queues and publishes their thieves' ends. The owning core, once.
    pub(super) fn init(&mut self, shared: &SharedQueues) {
        let queues = [(); LEVELS].map(|()| WorkQueue::new(DEQUE_CAPACITY).expect("power-of-two run-queue capacity"));
        shared.stealers.call_once(|| [0, 1, 2].map(|level| queues[level].stealer()));
        self.queues = Some(queues);
        for private in &mut self.private {
            private.reserve(64);
        }
    }

    /// Queues a runnable process at the back of its level.
    pub(super) fn push(&mut self, shared: &SharedQueues, slot: u32) {
        let process = process::slot(slot);
        let priority = process.priority();
        // ORDERING: Relaxed: a load figure (see `SharedQueues::runnable`).
        shared.runnable[priority as usize].fetch_add(1, Ordering::Relaxed);
        let level = priority.level() as usize;
        if may_move(process, priority) {
            let queues = self.queues.as_ref().expect("run queues exist once the core schedules");
            // Never refused: a full deque spills to the overflow queue (Placement says which).
            let _placement = queues[level].push(u64::from(slot));
            if !SLEEPERS.is_empty() {
                wake_a_thief(queues[level].len());
            }
        } else {
            // Grows if needed; an allocation failure here is a kernel panic, never a lost process.
            self.private[level].push_back(slot);
        }
    }

    /// Takes the next process to run: highest level first, FIFO within a level (the owner takes
    /// from the top, like a thief, so every process of a level gets its turn).
    pub(super) fn take_next(&mut self, shared: &SharedQueues, stats: &CoreStats) -> Option<u32> {
        // Levels above normal/low are usually empty: the runnable counts (one load each) skip
        // them without touching their queues.
        let first_level = if shared.runnable(Priority::Max) != 0 {
            0
        } else if shared.runnable(Priority::High) != 0 {
            1
        } else {
            2
        };
        for level in first_level..LEVELS {
            loop {
                let queue = &self.queues.as_ref()?[level];
                // Alternate between the private and the stealable queue of the level, so neither
                // kind of process can starve the other.
                let prefer_private = self.private_turn[level];
                self.private_turn[level] = !prefer_private;
                let taken = if prefer_private || queue.is_empty() {
                    self.private[level].pop_front().or_else(|| take_oldest(queue, stats))
                } else {
                    take_oldest(queue, stats).or_else(|| self.private[level].pop_front())
                };
                let Some(slot) = taken else { break };
                let process = process::slot(slot);
                let priority = process.priority();
                // ORDERING: Relaxed: a load figure.
                shared.runnable[priority as usize].fetch_sub(1, Ordering::Relaxed);
                // SAFETY: the process is in none of the queues now; this core owns it.
                let passes = unsafe { &mut process.local().low_passes };
                if low_priority_rule(priority, passes) == LowPriorityDecision::PassOver {
                    self.push(shared, slot);
                    continue;
                }
                bump(&stats.local_pops);
                return Some(slot);
            }
        }
        None
    }
}

/// The owner's FIFO take from its own stealable queue: the oldest item, from the top like a
/// thief (spilled items are moved back into the deque first). After `TAKE_OLDEST_ATTEMPTS`
/// retries in a row it returns `None` for this pass: the item is still in the queue (a failed
/// CAS writes nothing; a lost race means a thief has it) and the scheduler loop comes back to it,
/// at worst after stealing or sleeping until the next tick.
fn take_oldest(queue: &WorkQueue<NativeAtomics>, stats: &CoreStats) -> Option<u32> {
    if queue.is_empty() {
        return None;
    }
    for _ in 0..TAKE_OLDEST_ATTEMPTS {
        match queue.take_oldest() {
            Steal::Success(item) => return Some(item as u32),
            Steal::Empty => return None,
            // A thief took the top item first, or the store-exclusive kept failing: look again.
            Steal::Retry => bump(&stats.take_oldest_retries),
        }
    }
    bump(&stats.take_oldest_gave_up);
    None
}

/// May the balancer move this process?
fn may_move(process: &Process, priority: Priority) -> bool {
    let (config, _) = balance();
    may_migrate(
        config,
        process.affinity() != Affinity::Free,
        // ORDERING: Relaxed: written by the core that moves it, which owns it (as we do now).
        process.migrations.load(Ordering::Relaxed),
        priority == Priority::Max,
    )
}
