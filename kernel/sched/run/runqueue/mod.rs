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
//!
//! Here: the pushes and the inline take. `slow.rs`: every other take. `counts.rs`: what other
//! cores read (the thieves' ends, the runnable counts).

mod counts;
mod slow;

use alloc::collections::VecDeque;
use core::sync::atomic::Ordering;

use crate::proc::process::{self, Process};
use crate::record::stats::{CoreStats, bump};
use crate::run::idle::{SLEEPERS, wake_a_thief};
use crate::settings::{Telemetry, shared_queues, telemetry};
use beamcore_deque::{NativeAtomics, Steal, WorkQueue};
use beamcore_hal::{arch::cpu, ids::Slot};
use beamcore_sched_policy::priority::{LEVELS, LowPriorityDecision, Priority, low_priority_rule};
use beamcore_sched_policy::run_next::RunNextStreak;
pub(crate) use counts::{SharedQueues, item, slot_of};
pub(crate) use slow::movable;
use slow::push_shared;

/// Capacity of each lock-free run queue; more runnable processes spill to the overflow.
const DEQUE_CAPACITY: usize = beamcore_sched_policy::placement::RUN_QUEUE_DEQUE_CAPACITY;

/// Retries of `take_oldest` before it gives up for this pass. Each `Steal::Retry` is either
/// progress elsewhere (a thief took the top item) or `STORE_EXCLUSIVE_ATTEMPTS` failed
/// store-exclusives in a row; more than a few in a row means something keeps clearing this
/// core's reservation, and spinning on it with IRQs masked would hide that and hold up timeouts,
/// the inbox and jobs.
const TAKE_OLDEST_ATTEMPTS: u32 = 4;

/// No process in the "run next" slot.
const NONE: Slot = Slot::new(u32::MAX);

/// The owner's side of the run queues (only its core touches it, IRQs masked).
pub(crate) struct RunQueues {
    /// Stealable runnable processes, one queue per level.
    queues: Option<[WorkQueue<NativeAtomics>; LEVELS]>,
    /// Runnable processes that may not move (bound, at the migration limit, protected max):
    /// kept out of the stealable queues so they never stand in a thief's way.
    private: [VecDeque<Slot>; LEVELS],
    /// Bit per level: serve the private queue next (alternates with the stealable one).
    private_turn: u8,
    /// Bit per level: it may hold processes. Set by every push; cleared when a take finds the
    /// level empty (thieves empty levels without telling, so a set bit may be stale, never a
    /// clear one).
    occupied: u8,
    /// A process a message woke on this core (`NONE` if none), and its level: it runs before
    /// the rest of its level, under the rule of `beamcore_sched_policy::run_next`.
    run_next: Slot,
    run_next_level: u8,
    run_next_streak: RunNextStreak,
    /// `telemetry=` counts takes (`local_pops`): what the paths that did not choose their copy
    /// by the level read (the hand-off's passes a constant instead).
    count_takes: bool,
}

/// What [`RunQueues::push_inline`] left to do.
pub(crate) enum InlinePush {
    /// Nothing: the process is in its level's deque.
    Done,
    /// The process is in the deque of this level, and a core is asleep: wake a thief.
    WakeAThief(usize),
    /// The process (of this priority, counted as queued here) is in no queue yet: private,
    /// `queues=shared`, or the deque full or items spilled.
    Refused(Priority),
}

/// A process taken from a core's queues and counted as taken.
pub(crate) enum Accepted {
    /// It runs.
    Run(Slot),
    /// A low-priority process: the low-priority rule decides whether it runs.
    Low(Slot),
}

/// What a take from one level's queues found.
enum Take {
    Slot(Slot),
    Empty,
    /// Items are there but the stealable queue's take gave up (see `TAKE_OLDEST_ATTEMPTS`).
    GaveUp,
}

impl RunQueues {
    pub(crate) const fn new() -> RunQueues {
        RunQueues {
            queues: None,
            private: [const { VecDeque::new() }; LEVELS],
            private_turn: 0,
            occupied: 0,
            run_next: NONE,
            run_next_level: 0,
            run_next_streak: RunNextStreak::new(),
            count_takes: true,
        }
    }

    /// Makes the queues and publishes their thieves' ends. The owning core, once. With
    /// `queues=shared` there are no deques (nothing to steal): only the private queues.
    pub(crate) fn init(&mut self, shared: &SharedQueues) {
        for private in &mut self.private {
            private.reserve(64);
        }
        self.count_takes = telemetry().take_counts().is_ok();
        if shared_queues() {
            return;
        }
        let queues = [(); LEVELS].map(|()| WorkQueue::new(DEQUE_CAPACITY).expect("power-of-two run-queue capacity"));
        shared.stealers.call_once(|| [0, 1, 2].map(|level| queues[level].stealer()));
        self.queues = Some(queues);
    }

    /// Queues a runnable process at the back of its level.
    #[inline(always)]
    pub(crate) fn push(&mut self, shared: &SharedQueues, slot: Slot) {
        match self.push_inline(shared, slot, Telemetry::Full) {
            InlinePush::Done => {}
            rest => self.push_rest(shared, slot, rest),
        }
    }

    /// The part of [`push`](Self::push) that calls nothing out of line: the usual case, a
    /// movable process into a deque with room and nothing spilled, with no core asleep. What it
    /// leaves undone, [`push_rest`](Self::push_rest) finishes. Split so that the hand-off from
    /// one process to the next (`dispatch`) can leave the rest to a function it tail-calls, and
    /// so needs no register saves of its own. The queue-wait stamp only with `telemetry=full`
    /// (elsewhere a stamp is cheaper than a test of the level: those pushes always stamp).
    #[inline(always)]
    pub(crate) fn push_inline(&mut self, shared: &SharedQueues, slot: Slot, telemetry: Telemetry) -> InlinePush {
        let process = process::slot(slot);
        if telemetry == Telemetry::Full {
            stamp_queued(process);
        }
        let priority = process.priority();
        shared.count(priority, 1);
        let level = priority.level_index();
        self.occupied |= 1 << level;
        // ORDERING: Relaxed: as in `push_counted`.
        if process.movable.load(Ordering::Relaxed)
            && let Some(queues) = self.queues.as_ref()
            && queues[level].try_push(item(slot)).is_ok()
        {
            if SLEEPERS.is_empty() {
                return InlinePush::Done;
            }
            return InlinePush::WakeAThief(level);
        }
        InlinePush::Refused(priority)
    }

    /// Finishes a [`push_inline`](Self::push_inline) that did not say `Done`.
    #[inline(never)]
    pub(crate) fn push_rest(&mut self, shared: &SharedQueues, slot: Slot, rest: InlinePush) {
        match rest {
            InlinePush::Done => {}
            InlinePush::WakeAThief(level) => {
                if let Some(queues) = self.queues.as_ref() {
                    wake_a_thief(queues[level].len());
                }
            }
            InlinePush::Refused(priority) => self.push_counted(shared, slot, priority),
        }
    }

    /// Puts a process a message just woke into the "run next" slot; the one there before, if
    /// any, goes to the back of its level (as Go's `runnext` does).
    #[inline]
    pub(crate) fn push_woken(&mut self, shared: &SharedQueues, slot: Slot) {
        if self.queues.is_none() {
            // `queues=shared`: no run-next slot (its process would run ahead of the shared
            // queue's higher levels); the woken process waits in the shared queue like any other.
            return self.push(shared, slot);
        }
        let process = process::slot(slot);
        stamp_queued(process);
        let priority = process.priority();
        shared.count(priority, 1);
        let level = priority.level_index() as u8;
        self.occupied |= 1 << level;
        let before = core::mem::replace(&mut self.run_next, slot);
        let before_level = core::mem::replace(&mut self.run_next_level, level);
        if before != NONE {
            let before_priority = process::slot(before).priority();
            debug_assert_eq!(before_priority.level() as u8, before_level);
            self.push_counted(shared, before, before_priority);
        }
    }

    /// Queues a process its core already counts as runnable.
    #[inline(always)]
    fn push_counted(&mut self, shared: &SharedQueues, slot: Slot, priority: Priority) {
        let process = process::slot(slot);
        let level = priority.level_index();
        self.occupied |= 1 << level;
        // ORDERING: Relaxed: the flag is written by whoever owns the process (as we do now),
        // before the queue or inbox that handed it to us.
        if process.movable.load(Ordering::Relaxed) {
            let Some(queues) = self.queues.as_ref() else {
                // `queues=shared` (a core schedules only after `init`).
                return push_shared(shared, slot, priority);
            };
            // Never refused: a full deque spills to the overflow queue (Placement says which).
            let _placement = queues[level].push(item(slot));
            if !SLEEPERS.is_empty() {
                wake_a_thief(queues[level].len());
            }
        } else {
            self.push_private(level, slot);
        }
    }

    #[inline(never)]
    fn push_private(&mut self, level: usize, slot: Slot) {
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
    pub(crate) fn take_next(&mut self, shared: &SharedQueues, stats: &CoreStats, telemetry: Telemetry) -> Option<Slot> {
        match self.take_next_inline(shared, stats, telemetry) {
            Some(Accepted::Run(slot)) => Some(slot),
            Some(Accepted::Low(slot)) => self.take_low_or_next(shared, stats, slot),
            None => self.take_next_slow(shared, stats),
        }
    }

    /// The part of [`take_next`](Self::take_next) that calls nothing out of line (see
    /// [`push_inline`](Self::push_inline)): `None`, with nothing taken, where `take_next_slow`
    /// must decide; a low-priority process taken is for
    /// [`take_low_or_next`](Self::take_low_or_next).
    #[inline(always)]
    pub(crate) fn take_next_inline(
        &mut self,
        shared: &SharedQueues,
        stats: &CoreStats,
        telemetry: Telemetry,
    ) -> Option<Accepted> {
        let count_take = telemetry != Telemetry::Off;
        let levels = self.occupied;
        if levels == 0 {
            return None;
        }
        let level = levels.trailing_zeros() as usize;
        if self.run_next != NONE
            && usize::from(self.run_next_level) == level
            && self.run_next_streak.goes_first(|| !self.level_is_empty(level))
        {
            let slot = core::mem::replace(&mut self.run_next, NONE);
            self.run_next_streak.took_run_next();
            return Some(self.accept_counted(shared, stats, slot, count_take));
        }
        if self.private[level].is_empty()
            && let Some(queues) = &self.queues
            // Spilled items, if the deque is empty, are `take_next_slow`'s to refill.
            && let Take::Slot(slot) = take_oldest(stats, || queues[level].take_oldest_in_deque())
        {
            // With the private queue empty, either turn takes from the stealable one, and the
            // turn is left as it is: the two alternate while both hold processes, which only
            // the general path sees.
            if level == usize::from(self.run_next_level) {
                self.run_next_streak.took_other();
            }
            return Some(self.accept_counted(shared, stats, slot, count_take));
        }
        None
    }

    /// A low-priority process `take_next_inline` took: it if the low-priority rule lets it
    /// run, else (it went to the back of its level) the next process as `take_next_slow` finds.
    #[cold]
    #[inline(never)]
    pub(crate) fn take_low_or_next(&mut self, shared: &SharedQueues, stats: &CoreStats, slot: Slot) -> Option<Slot> {
        if self.low_may_run(shared, slot) {
            self.count_take(stats);
            return Some(slot);
        }
        self.take_next_slow(shared, stats)
    }

    /// Counts a process taken from this core's queues as no longer queued and applies the
    /// low-priority rule: `None` when it was passed over (and queued again at the back).
    #[inline(always)]
    fn accept(&mut self, shared: &SharedQueues, stats: &CoreStats, slot: Slot) -> Option<Slot> {
        match self.accept_counted(shared, stats, slot, self.count_takes) {
            Accepted::Run(slot) => Some(slot),
            Accepted::Low(slot) if self.low_may_run(shared, slot) => {
                self.count_take(stats);
                Some(slot)
            }
            Accepted::Low(_) => None,
        }
    }

    /// Counts a process taken from this core's queues as no longer queued; a low-priority one
    /// is left for the low-priority rule. `count_take`: `local_pops` counts it (`telemetry=`).
    #[inline(always)]
    fn accept_counted(&mut self, shared: &SharedQueues, stats: &CoreStats, slot: Slot, count_take: bool) -> Accepted {
        let priority = process::slot(slot).priority();
        shared.count(priority, -1);
        if priority == Priority::Low {
            return Accepted::Low(slot);
        }
        if count_take {
            bump(&stats.local_pops);
        }
        Accepted::Run(slot)
    }

    /// Counts a take in `local_pops` unless `telemetry=off`.
    fn count_take(&self, stats: &CoreStats) {
        if self.count_takes {
            bump(&stats.local_pops);
        }
    }

    /// The low-priority rule for a low process just taken: false when it is passed over (and
    /// queued again).
    #[cold]
    #[inline(never)]
    fn low_may_run(&mut self, shared: &SharedQueues, slot: Slot) -> bool {
        let process = process::slot(slot);
        // SAFETY: the process is in none of the queues now; this core owns it.
        let passes = unsafe { &mut process.local().low_passes };
        if low_priority_rule(Priority::Low, passes) == LowPriorityDecision::PassOver {
            // Back of the level, its wait still running from when it was first queued.
            shared.count(Priority::Low, 1);
            self.push_counted(shared, slot, Priority::Low);
            return false;
        }
        true
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

/// The owner's FIFO take from its own stealable queue: the oldest item, from the top like a
/// thief. `take` is the queue's `take_oldest` (spilled items are moved back into the deque
/// first) or `take_oldest_in_deque` (they are left to a later take). After
/// `TAKE_OLDEST_ATTEMPTS` retries in a row it gives up for this pass: the item is still in the
/// queue (a failed CAS writes nothing; a lost race means a thief has it) and the scheduler loop
/// comes back to it, at worst after stealing or sleeping until the next tick.
#[inline(always)]
fn take_oldest(stats: &CoreStats, mut take: impl FnMut() -> Steal) -> Take {
    for _ in 0..TAKE_OLDEST_ATTEMPTS {
        match take() {
            Steal::Success(item) => return Take::Slot(slot_of(item)),
            Steal::Empty => return Take::Empty,
            // A thief took the top item first, or the store-exclusive kept failing: look again.
            Steal::Retry => bump(&stats.take_oldest_retries),
        }
    }
    bump(&stats.take_oldest_gave_up);
    Take::GaveUp
}
