//! A core's run queues: three levels (max, high, and one shared by normal and low), each a
//! stealable `WorkQueue` (the Chase-Lev deque plus an overflow queue) and a private queue for
//! processes that may not move, plus one "run next" slot for a process a message just woke on
//! this core. The owner pushes at the bottom and takes from the top, like a thief: run queues
//! must be FIFO, or a yielding process would run again at once and starve the others.
//!
//! The owner's side is lean: a bitmap of the levels that may hold processes (so the usual case,
//! everything at normal, costs one bit test, not a look at every level), each process's
//! "movable" flag cached at spawn and migration, and no length computed before a take (the take
//! itself says "empty").
//!
//! With `queues=shared` a core makes no deques (`queues` stays `None`): movable processes go to
//! the machine's one shared queue (`shared_queue.rs`) instead, the private queues stay per core,
//! and the run-next slot is not used. The mode costs the per-core mode nothing on its fast
//! paths: a push already branches on `queues` being there, and a take reaches the shared
//! queue only from `take_next_slow`, where the fast path falls through whenever `queues` is
//! `None`. Only `push_woken` pays one extra test of `queues`.

use alloc::collections::VecDeque;
use core::sync::atomic::{AtomicUsize, Ordering};

use super::balance::{may_migrate, pinned};
use super::deque::{NativeAtomics, Steal, WorkQueue, WorkQueueStealer};
use super::idle::{SLEEPERS, wake_a_thief};
use super::priority::{LEVELS, LowPriorityDecision, Priority, low_priority_rule};
use super::process::{self, Affinity, Process};
use super::settings::{balance, shared_queues};
use super::shared_queue;
use super::stats::{CoreStats, bump};
use crate::arch::cpu;
use crate::smp;

/// Capacity of each lock-free run queue; more runnable processes spill to the overflow.
const DEQUE_CAPACITY: usize = 256;

/// Retries of `take_oldest` before it gives up for this pass. Each `Steal::Retry` is either
/// progress elsewhere (a thief took the top item) or `STORE_EXCLUSIVE_ATTEMPTS` failed
/// store-exclusives in a row; more than a few in a row means something keeps clearing this
/// core's reservation, and spinning on it with IRQs masked would hide that and hold up timeouts,
/// the inbox and jobs.
const TAKE_OLDEST_ATTEMPTS: u32 = 4;

/// Turns in a row the "run next" slot may give while other processes wait in its level: a
/// pair of processes passing messages back and forth would otherwise keep the rest of the level
/// from running for good (Tokio caps its LIFO slot at 3 polls for the same reason).
pub const RUN_NEXT_CAP: u32 = 4;

/// What every core may read of a core's run queues: the thieves' ends and the runnable counts.
///
/// The runnable count of a priority is `queued - taken_away`: the owner counts its own pushes
/// and takes in `queued` with plain loads and stores (it is the only writer), and other cores
/// count the processes they take from here (steals, push rebalancing) in `taken_away`, so the
/// owner's every push and take costs no read-modify-write.
pub(crate) struct SharedQueues {
    pub(super) stealers: spin::Once<[WorkQueueStealer<NativeAtomics>; LEVELS]>,
    /// Per priority (max, high, normal, low): pushes minus the owner's own takes.
    queued: [AtomicUsize; 4],
    /// Per priority: processes other cores took from here.
    taken_away: [AtomicUsize; 4],
}

impl SharedQueues {
    pub(super) const fn new() -> SharedQueues {
        SharedQueues {
            stealers: spin::Once::new(),
            queued: [const { AtomicUsize::new(0) }; 4],
            taken_away: [const { AtomicUsize::new(0) }; 4],
        }
    }

    /// Runnable processes of `priority` queued here (a load figure: read while the owner and
    /// thieves change it, it may be off by the moves made during the two reads, never below 0).
    pub(super) fn runnable(&self, priority: Priority) -> usize {
        // ORDERING: Relaxed: a load figure; nothing is read through it.
        let queued = self.queued[priority as usize].load(Ordering::Relaxed);
        let taken_away = self.taken_away[priority as usize].load(Ordering::Relaxed);
        (queued.wrapping_sub(taken_away) as isize).max(0) as usize
    }

    /// Runnable processes by priority.
    pub(super) fn runnable_by_priority(&self) -> [usize; 4] {
        Priority::ALL.map(|p| self.runnable(p))
    }

    /// Another core took a process of `priority` from here (its steal or rebalancing).
    pub(super) fn count_taken_away(&self, priority: Priority) {
        // ORDERING: Relaxed: a load figure.
        self.taken_away[priority as usize].fetch_add(1, Ordering::Relaxed);
    }

    /// Stealable processes per level (0 for a core that has not started scheduling).
    pub(super) fn stealable(&self) -> [usize; LEVELS] {
        self.stealers.get().map_or([0; LEVELS], |s| s.each_ref().map(|q| q.len()))
    }

    /// Stealable processes, all levels.
    pub(super) fn stealable_total(&self) -> usize {
        self.stealers.get().map_or(0, |s| s.iter().map(|q| q.len()).sum())
    }

    /// The owner queued (`+1`) or took (`-1`) a process of `priority`: a plain load and store,
    /// since only the owner writes `queued`.
    #[inline(always)]
    fn count(&self, priority: Priority, delta: isize) {
        let counter = &self.queued[priority as usize];
        // ORDERING: Relaxed: a load figure (see `runnable`).
        counter.store(counter.load(Ordering::Relaxed).wrapping_add_signed(delta), Ordering::Relaxed);
    }
}

/// No process in the "run next" slot.
const NONE: u32 = u32::MAX;

/// The owner's side of the run queues (only its core touches it, IRQs masked).
pub(super) struct RunQueues {
    /// Stealable runnable processes, one queue per level.
    queues: Option<[WorkQueue<NativeAtomics>; LEVELS]>,
    /// Runnable processes that may not move (bound, at the migration limit, protected max):
    /// kept out of the stealable queues so they never stand in a thief's way.
    private: [VecDeque<u32>; LEVELS],
    /// Bit per level: serve the private queue next (alternates with the stealable one).
    private_turn: u8,
    /// Bit per level: it may hold processes. Set by every push; cleared when a take finds the
    /// level empty (thieves empty levels without telling, so a set bit may be stale, never a
    /// clear one).
    occupied: u8,
    /// A process a message woke on this core (`NONE` if none), and its level: it runs before
    /// the rest of its level, for locality, at most `RUN_NEXT_CAP` times in a row while others
    /// wait there.
    run_next: u32,
    run_next_level: u8,
    run_next_streak: u32,
}

/// What a take from one level's queues found.
enum Take {
    Slot(u32),
    Empty,
    /// Items are there but the stealable queue's take gave up (see `TAKE_OLDEST_ATTEMPTS`).
    GaveUp,
}

impl RunQueues {
    pub(super) const fn new() -> RunQueues {
        RunQueues {
            queues: None,
            private: [const { VecDeque::new() }; LEVELS],
            private_turn: 0,
            occupied: 0,
            run_next: NONE,
            run_next_level: 0,
            run_next_streak: 0,
        }
    }

    /// Makes the queues and publishes their thieves' ends. The owning core, once. With
    /// `queues=shared` there are no deques (nothing to steal): only the private queues.
    pub(super) fn init(&mut self, shared: &SharedQueues) {
        for private in &mut self.private {
            private.reserve(64);
        }
        if shared_queues() {
            return;
        }
        let queues = [(); LEVELS].map(|()| WorkQueue::new(DEQUE_CAPACITY).expect("power-of-two run-queue capacity"));
        shared.stealers.call_once(|| [0, 1, 2].map(|level| queues[level].stealer()));
        self.queues = Some(queues);
    }

    /// Queues a runnable process at the back of its level.
    #[inline(always)]
    pub(super) fn push(&mut self, shared: &SharedQueues, slot: u32) {
        let process = process::slot(slot);
        stamp_queued(process);
        let priority = process.priority();
        shared.count(priority, 1);
        self.push_counted(slot, priority);
    }

    /// Puts a process a message just woke into the "run next" slot; the one there before, if
    /// any, goes to the back of its level (as Go's `runnext` does).
    #[inline]
    pub(super) fn push_woken(&mut self, shared: &SharedQueues, slot: u32) {
        if self.queues.is_none() {
            // `queues=shared`: no run-next slot (its process would run ahead of the shared
            // queue's higher levels); the woken process waits in the shared queue like any other.
            return self.push(shared, slot);
        }
        let process = process::slot(slot);
        stamp_queued(process);
        let priority = process.priority();
        shared.count(priority, 1);
        let level = priority.level() as u8;
        self.occupied |= 1 << level;
        let before = core::mem::replace(&mut self.run_next, slot);
        let before_level = core::mem::replace(&mut self.run_next_level, level);
        if before != NONE {
            let before_priority = process::slot(before).priority();
            debug_assert_eq!(before_priority.level() as u8, before_level);
            self.push_counted(before, before_priority);
        }
    }

    /// Queues a process its core already counts as runnable.
    #[inline(always)]
    fn push_counted(&mut self, slot: u32, priority: Priority) {
        let process = process::slot(slot);
        let level = priority.level() as usize;
        self.occupied |= 1 << level;
        // ORDERING: Relaxed: the flag is written by whoever owns the process (as we do now),
        // before the queue or inbox that handed it to us.
        if process.movable.load(Ordering::Relaxed) {
            let Some(queues) = self.queues.as_ref() else {
                // `queues=shared` (a core schedules only after `init`).
                return push_shared(slot, priority);
            };
            // Never refused: a full deque spills to the overflow queue (Placement says which).
            let _placement = queues[level].push(u64::from(slot));
            if !SLEEPERS.is_empty() {
                wake_a_thief(queues[level].len());
            }
        } else {
            self.push_private(level, slot);
        }
    }

    #[inline(never)]
    fn push_private(&mut self, level: usize, slot: u32) {
        // Grows if needed; an allocation failure here is a kernel panic, never a lost process.
        self.private[level].push_back(slot);
    }

    /// Takes the next process to run: highest level first, FIFO within a level (the owner takes
    /// from the top, like a thief, so every process of a level gets its turn), the "run next"
    /// slot before the rest of its level.
    ///
    /// The usual cases inline: the "run next" process under its cap, or the oldest of a level
    /// whose private queue is empty; everything else (a low-priority process, an empty level, a
    /// lost race, the cap reached) in `take_next_slow`, which gives the same answer.
    #[inline(always)]
    pub(super) fn take_next(&mut self, shared: &SharedQueues, stats: &CoreStats) -> Option<u32> {
        let levels = self.occupied;
        if levels != 0 {
            let level = levels.trailing_zeros() as usize;
            if self.run_next != NONE
                && usize::from(self.run_next_level) == level
                && (self.run_next_streak < RUN_NEXT_CAP || self.level_is_empty(level))
            {
                // Under its cap, or with nobody else waiting in its level: nobody to be fair to.
                if self.run_next_streak >= RUN_NEXT_CAP {
                    self.run_next_streak = 0;
                }
                let slot = core::mem::replace(&mut self.run_next, NONE);
                self.run_next_streak += 1;
                if let Some(slot) = self.accept(shared, stats, slot) {
                    return Some(slot);
                }
            } else if self.private[level].is_empty()
                && let Some(queues) = &self.queues
            {
                // With the private queue empty, either turn takes from the stealable one.
                self.private_turn ^= 1 << level;
                if let Take::Slot(slot) = take_oldest(&queues[level], stats) {
                    if level == usize::from(self.run_next_level) {
                        self.run_next_streak = 0;
                    }
                    if let Some(slot) = self.accept(shared, stats, slot) {
                        return Some(slot);
                    }
                } else {
                    // The general path takes this turn again.
                    self.private_turn ^= 1 << level;
                }
            }
        }
        self.take_next_slow(shared, stats)
    }

    /// Counts a process taken from this core's queues as no longer queued and applies the
    /// low-priority rule: `None` when it was passed over (and queued again at the back).
    #[inline(always)]
    fn accept(&mut self, shared: &SharedQueues, stats: &CoreStats, slot: u32) -> Option<u32> {
        let priority = process::slot(slot).priority();
        shared.count(priority, -1);
        if priority == Priority::Low && !self.low_may_run(shared, slot) {
            return None;
        }
        bump(&stats.local_pops);
        Some(slot)
    }

    /// The low-priority rule for a low process just taken: false when it is passed over (and
    /// queued again).
    #[cold]
    #[inline(never)]
    fn low_may_run(&mut self, shared: &SharedQueues, slot: u32) -> bool {
        let process = process::slot(slot);
        // SAFETY: the process is in none of the queues now; this core owns it.
        let passes = unsafe { &mut process.local().low_passes };
        if low_priority_rule(Priority::Low, passes) == LowPriorityDecision::PassOver {
            // Back of the level, its wait still running from when it was first queued.
            shared.count(Priority::Low, 1);
            self.push_counted(slot, Priority::Low);
            return false;
        }
        true
    }

    /// `take_next` for every case.
    #[cold]
    #[inline(never)]
    fn take_next_slow(&mut self, shared: &SharedQueues, stats: &CoreStats) -> Option<u32> {
        if self.queues.is_none() {
            return self.take_next_shared(shared, stats);
        }
        // Levels found with items that could not be taken this pass (see `Take::GaveUp`).
        let mut skip = 0u8;
        loop {
            let levels = self.occupied & !skip;
            if levels == 0 {
                return None;
            }
            let level = levels.trailing_zeros() as usize;
            let slot = match self.take_run_next(level) {
                Some(slot) => slot,
                None => match self.take_from_queues(level, stats) {
                    Take::Slot(slot) => {
                        // The run-next slot's level had its turn: its streak starts again.
                        if level == usize::from(self.run_next_level) {
                            self.run_next_streak = 0;
                        }
                        slot
                    }
                    Take::Empty => {
                        if self.run_next == NONE || usize::from(self.run_next_level) != level {
                            self.occupied &= !(1 << level);
                        }
                        skip |= 1 << level;
                        continue;
                    }
                    Take::GaveUp => {
                        skip |= 1 << level;
                        continue;
                    }
                },
            };
            if let Some(slot) = self.accept(shared, stats, slot) {
                return Some(slot);
            }
        }
    }

    /// The "run next" process if it is at `level` and has not had its `RUN_NEXT_CAP` turns in a
    /// row while others wait there; when it has, it goes to the back of the level instead.
    #[inline]
    fn take_run_next(&mut self, level: usize) -> Option<u32> {
        let slot = self.run_next;
        if slot == NONE || usize::from(self.run_next_level) != level {
            return None;
        }
        self.run_next = NONE;
        if self.run_next_streak >= RUN_NEXT_CAP {
            self.run_next_streak = 0;
            if !self.level_is_empty(level) {
                self.push_counted(slot, process::slot(slot).priority());
                return None;
            }
        }
        self.run_next_streak += 1;
        Some(slot)
    }

    /// `take_next` with `queues=shared`: the highest level that holds a process here (private
    /// queue) or in the shared queue, alternating between the two within a level as
    /// `take_from_queues` does, the low-priority rule applied as everywhere.
    #[cold]
    #[inline(never)]
    fn take_next_shared(&mut self, shared: &SharedQueues, stats: &CoreStats) -> Option<u32> {
        loop {
            let levels = self.occupied | shared_queue::occupied_levels();
            if levels == 0 {
                return None;
            }
            let level = levels.trailing_zeros() as usize;
            let private_first = self.private_turn & (1 << level) != 0;
            self.private_turn ^= 1 << level;
            let private = &mut self.private[level];
            let (slot, from_private) = if private_first {
                match private.pop_front() {
                    Some(slot) => (Some(slot), true),
                    None => (shared_queue::take(level), false),
                }
            } else {
                match shared_queue::take(level) {
                    Some(slot) => (Some(slot), false),
                    None => (private.pop_front(), true),
                }
            };
            if private.is_empty() {
                self.occupied &= !(1 << level);
            }
            let Some(slot) = slot else { continue };
            let process = process::slot(slot);
            if from_private {
                // Counted as runnable here when queued.
                shared.count(process.priority(), -1);
            } else {
                adopt(process, stats);
            }
            if process.priority() == Priority::Low && !self.low_may_run(shared, slot) {
                continue;
            }
            if from_private {
                bump(&stats.local_pops);
            }
            return Some(slot);
        }
    }

    /// Whether `level`'s queues (not the "run next" slot) look empty.
    fn level_is_empty(&self, level: usize) -> bool {
        self.private[level].is_empty() && self.queues.as_ref().is_none_or(|q| q[level].is_empty())
    }

    /// The next process of `level`'s queues, alternating between the private and the stealable
    /// queue, so neither kind of process can starve the other.
    fn take_from_queues(&mut self, level: usize, stats: &CoreStats) -> Take {
        let Some(queues) = self.queues.as_ref() else { return Take::Empty };
        let queue = &queues[level];
        let private_first = self.private_turn & (1 << level) != 0;
        self.private_turn ^= 1 << level;
        let private = &mut self.private[level];
        if private_first {
            match private.pop_front() {
                Some(slot) => Take::Slot(slot),
                None => take_oldest(queue, stats),
            }
        } else {
            match take_oldest(queue, stats) {
                Take::Empty => private.pop_front().map_or(Take::Empty, Take::Slot),
                Take::GaveUp => private.pop_front().map_or(Take::GaveUp, Take::Slot),
                taken => taken,
            }
        }
    }
}

/// Notes when `process` entered this core's run queue: its queue wait, counted when it runs
/// (`dispatch::begin_turn`), starts here. Only [`RunQueues::push`] and
/// [`RunQueues::push_woken`] call it: a process sent to the back of its level again (passed
/// over, or the run-next slot's cap) keeps waiting from its first entry.
#[inline(always)]
fn stamp_queued(process: &Process) {
    // SAFETY: the process is being queued by the core that owns it (in no queue yet, IRQs
    // masked under the caller's `OnCore`); no other reference to its `Local` is alive.
    unsafe { process.local().queued_at = cpu::counter() };
}

impl RunQueues {
    /// Takes any process queued here, whatever its level, binding or low-priority passes, and
    /// counts it as no longer queued: for a leaving core, which hands every one to another core.
    /// `None` once every queue is empty (thieves may take some meanwhile: each item is taken
    /// once, by one of us). Nobody else pushes here (the owner is the only pusher, and its
    /// inbox is closed), so the loop ends.
    pub(super) fn take_any(&mut self, shared: &SharedQueues) -> Option<u32> {
        let slot = self.take_any_uncounted()?;
        shared.count(process::slot(slot).priority(), -1);
        Some(slot)
    }

    fn take_any_uncounted(&mut self) -> Option<u32> {
        if self.run_next != NONE {
            self.run_next_streak = 0;
            return Some(core::mem::replace(&mut self.run_next, NONE));
        }
        for level in 0..LEVELS {
            if let Some(slot) = self.private[level].pop_front() {
                return Some(slot);
            }
            let Some(queues) = self.queues.as_ref() else { continue };
            loop {
                match queues[level].take_oldest() {
                    Steal::Success(item) => return Some(item as u32),
                    Steal::Empty => break,
                    // A thief took the top item, or a store-exclusive failed: look again.
                    Steal::Retry => {}
                }
            }
        }
        self.occupied = 0;
        None
    }
}

/// The owner's FIFO take from its own stealable queue: the oldest item, from the top like a
/// thief (spilled items are moved back into the deque first). After `TAKE_OLDEST_ATTEMPTS`
/// retries in a row it gives up for this pass: the item is still in the queue (a failed CAS
/// writes nothing; a lost race means a thief has it) and the scheduler loop comes back to it,
/// at worst after stealing or sleeping until the next tick.
#[inline(always)]
fn take_oldest(queue: &WorkQueue<NativeAtomics>, stats: &CoreStats) -> Take {
    for _ in 0..TAKE_OLDEST_ATTEMPTS {
        match queue.take_oldest() {
            Steal::Success(item) => return Take::Slot(item as u32),
            Steal::Empty => return Take::Empty,
            // A thief took the top item first, or the store-exclusive kept failing: look again.
            Steal::Retry => bump(&stats.take_oldest_retries),
        }
    }
    bump(&stats.take_oldest_gave_up);
    Take::GaveUp
}

/// `queues=shared`: queues a movable process in the machine's shared queue, which this core's
/// runnable counts do not cover (`push` counted it here: that is undone). Out of line, so the
/// per-core mode's push carries none of it.
#[cold]
#[inline(never)]
fn push_shared(slot: u32, priority: Priority) {
    super::percore::scheduler(crate::arch::cpu::core_id()).queues.count(priority, -1);
    shared_queue::push(slot, priority.level() as usize);
}

/// A process this core took from the shared queue (`queues=shared`) runs here now: its core
/// changes (so a wake from this core finds it local), and a change of core counts as a
/// migration in the per-core counters. Its migration count, the balancer's budget, stays: no
/// balancer moves processes in this mode, and every core is equally far from the queue.
fn adopt(process: &Process, stats: &CoreStats) {
    let me = crate::arch::cpu::core_id();
    // ORDERING: Relaxed: the shared queue's lock handed the process over.
    let before = process.core.swap(me, Ordering::Relaxed);
    if before != me {
        // ORDERING: Relaxed: counts other cores add to as well.
        stats.migrated_in.fetch_add(1, Ordering::Relaxed);
        super::percore::scheduler(before).stats.migrated_out.fetch_add(1, Ordering::Relaxed);
    }
}

/// May the balancer move this process? Cached in `Process::movable` by whoever changes what
/// it depends on (its priority and allowed cores at spawn, its migration count when it moves).
/// A process with one core to run on (`bound_to`, see `balance::pinned`) counts as bound: it
/// is kept in the private queue, out of thieves' sight. With `queues=shared` "movable" means
/// "may wait in the shared queue": every process free to run on any core (`max_migrations` and
/// `protect_max` are rules of stealing, which that mode does not do; a process limited to some
/// cores stays in the private queue of the core it was placed on).
pub(super) fn movable(process: &Process) -> bool {
    if shared_queues() {
        return process.affinity() == Affinity::Free;
    }
    let (config, _) = balance();
    may_migrate(
        config,
        pinned(&process.allowed.load(), smp::cores_online()),
        // ORDERING: Relaxed: written by the core that moves it, which owns it (as we do now).
        process.migrations.load(Ordering::Relaxed),
        process.priority() == Priority::Max,
    )
}
