//! The owner's takes for every case the inline `take_next` leaves out: a low-priority process,
//! an empty level, a lost race, the run-next slot's cap, the private queues, `queues=shared`, and
//! a leaving core's take of everything.

use core::sync::atomic::Ordering;

use super::{NONE, RunQueues, SharedQueues, Take, slot_of, take_oldest};
use crate::proc::process::{self, Affinity, Process};
use crate::record::stats::CoreStats;
use crate::run::shared_queue;
use crate::settings::{config, shared_queues};
use beamcore_deque::Steal;
use beamcore_hal::ids::{CoreId, Slot};
use beamcore_sched_policy::balance::{may_migrate, pinned};
use beamcore_sched_policy::priority::{LEVELS, Priority};
use beamcore_smp as smp;

impl RunQueues {
    /// `take_next` for every case.
    #[cold]
    #[inline(never)]
    pub(super) fn take_next_slow(&mut self, shared: &SharedQueues, stats: &CoreStats) -> Option<Slot> {
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
            let slot = match self.take_run_next(shared, level) {
                Some(slot) => slot,
                None => match self.take_from_queues(level, stats) {
                    Take::Slot(slot) => {
                        // The run-next slot's level had its turn: its streak starts again.
                        if level == usize::from(self.run_next_level) {
                            self.run_next_streak.took_other();
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
    fn take_run_next(&mut self, shared: &SharedQueues, level: usize) -> Option<Slot> {
        let slot = self.run_next;
        if slot == NONE || usize::from(self.run_next_level) != level {
            return None;
        }
        self.run_next = NONE;
        if !self.run_next_streak.goes_first(|| !self.level_is_empty(level)) {
            self.run_next_streak.took_other();
            self.push_counted(shared, slot, process::slot(slot).priority());
            return None;
        }
        self.run_next_streak.took_run_next();
        Some(slot)
    }

    /// `take_next` with `queues=shared`: the highest level that holds a process here (private
    /// queue) or in the shared queue, alternating between the two within a level as
    /// `take_from_queues` does, the low-priority rule applied as everywhere.
    #[cold]
    #[inline(never)]
    fn take_next_shared(&mut self, shared: &SharedQueues, stats: &CoreStats) -> Option<Slot> {
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
                // A waker may have queued it while its last core was still saving its
                // registers (a `receive` that blocked): wait for them before anything reads
                // its context or frees its stack.
                process.wait_registers_saved();
                adopt(process, stats);
            }
            if process.priority() == Priority::Low && !self.low_may_run(shared, slot) {
                continue;
            }
            if from_private {
                self.count_take(stats);
            }
            return Some(slot);
        }
    }

    /// Whether `level`'s queues (not the "run next" slot) look empty.
    #[inline(always)]
    pub(super) fn level_is_empty(&self, level: usize) -> bool {
        // A `match`, not `is_none_or`: its closure is not always inlined, and the hand-off's
        // inline take must call nothing (see `RunQueues::push_inline`).
        self.private[level].is_empty()
            && match &self.queues {
                Some(queues) => queues[level].is_empty(),
                None => true,
            }
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
                None => take_oldest(stats, || queue.take_oldest()),
            }
        } else {
            match take_oldest(stats, || queue.take_oldest()) {
                Take::Empty => private.pop_front().map_or(Take::Empty, Take::Slot),
                Take::GaveUp => private.pop_front().map_or(Take::GaveUp, Take::Slot),
                taken => taken,
            }
        }
    }
}

impl RunQueues {
    /// Takes any process queued here, whatever its level, binding or low-priority passes, and
    /// counts it as no longer queued: for a leaving core, which hands every one to another core.
    /// `None` once every queue is empty (thieves may take some meanwhile: each item is taken
    /// once, by one of us). Nobody else pushes here (the owner is the only pusher, and its
    /// inbox is closed), so the loop ends.
    pub(crate) fn take_any(&mut self, shared: &SharedQueues) -> Option<Slot> {
        let slot = self.take_any_uncounted()?;
        shared.count(process::slot(slot).priority(), -1);
        Some(slot)
    }

    fn take_any_uncounted(&mut self) -> Option<Slot> {
        if self.run_next != NONE {
            self.run_next_streak.took_other();
            return Some(core::mem::replace(&mut self.run_next, NONE));
        }
        for level in 0..LEVELS {
            if let Some(slot) = self.private[level].pop_front() {
                return Some(slot);
            }
            let Some(queues) = self.queues.as_ref() else { continue };
            loop {
                match queues[level].take_oldest() {
                    Steal::Success(item) => return Some(slot_of(item)),
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

/// `queues=shared`: queues a movable process in the machine's shared queue, which this core's
/// runnable counts do not cover (`push` counted it here: that is undone). Out of line, so the
/// per-core mode's push carries none of it.
#[cold]
#[inline(never)]
pub(super) fn push_shared(shared: &SharedQueues, slot: Slot, priority: Priority) {
    shared.count(priority, -1);
    shared_queue::push(slot, priority.level() as usize);
}

/// A process this core took from the shared queue (`queues=shared`) runs here now: its core
/// changes (so a wake from this core finds it local), and a change of core counts as a
/// migration in the per-core counters. Its migration count, the balancer's budget, stays: no
/// balancer moves processes in this mode, and every core is equally far from the queue.
fn adopt(process: &Process, stats: &CoreStats) {
    let me = CoreId::this();
    // ORDERING: Relaxed: the shared queue's lock handed the process over.
    let before = process.core.swap(me, Ordering::Relaxed);
    if before != me {
        // ORDERING: Relaxed: counts other cores add to as well.
        stats.migrated_in.fetch_add(1, Ordering::Relaxed);
        crate::record::stats::of(before).migrated_out.fetch_add(1, Ordering::Relaxed);
    }
}

/// May the balancer move this process? Cached in `Process::movable` by whoever changes what
/// it depends on (its priority and allowed cores at spawn, its migration count when it moves).
/// A process with one core to run on (`bound_to`, see `balance::pinned`) counts as bound: it
/// is kept in the private queue, out of thieves' sight. With `queues=shared` "movable" means
/// "may wait in the shared queue": every process free to run on any core (`max_migrations` and
/// `protect_max` are rules of stealing, which that mode does not do; a process limited to some
/// cores stays in the private queue of the core it was placed on).
pub(crate) fn movable(process: &Process) -> bool {
    if shared_queues() {
        return process.affinity() == Affinity::Free;
    }
    let config = &config().balance;
    may_migrate(
        config,
        pinned(&process.allowed.load(), smp::cores_online()),
        // ORDERING: Relaxed: written by the core that moves it, which owns it (as we do now).
        process.migrations.load(Ordering::Relaxed),
        process.priority() == Priority::Max,
    )
}
