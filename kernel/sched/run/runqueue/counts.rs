//! What every core may read of a core's run queues: the thieves' ends and the runnable counts;
//! and what an item of the queues is.

use core::sync::atomic::{AtomicUsize, Ordering};

use beamcore_deque::{NativeAtomics, WorkQueueStealer};
use beamcore_hal::ids::Slot;
use beamcore_sched_policy::priority::{LEVELS, Priority};

/// What every core may read of a core's run queues: the thieves' ends and the runnable counts.
///
/// The runnable count of a priority is `queued - taken_away`: the owner counts its own pushes
/// and takes in `queued` with plain loads and stores (it is the only writer), and other cores
/// count the processes they take from here (steals, push rebalancing) in `taken_away`, so the
/// owner's every push and take costs no read-modify-write.
pub(crate) struct SharedQueues {
    pub(crate) stealers: spin::Once<[WorkQueueStealer<NativeAtomics>; LEVELS]>,
    /// Per priority (max, high, normal, low): pushes minus the owner's own takes.
    queued: [AtomicUsize; 4],
    /// Per priority: processes other cores took from here.
    taken_away: [AtomicUsize; 4],
}

impl SharedQueues {
    pub(crate) const fn new() -> SharedQueues {
        SharedQueues {
            stealers: spin::Once::new(),
            queued: [const { AtomicUsize::new(0) }; 4],
            taken_away: [const { AtomicUsize::new(0) }; 4],
        }
    }

    /// Runnable processes of `priority` queued here (a load figure: read while the owner and
    /// thieves change it, it may be off by the moves made during the two reads, never below 0).
    pub(crate) fn runnable(&self, priority: Priority) -> usize {
        // ORDERING: Relaxed: a load figure; nothing is read through it.
        let queued = self.queued[priority as usize].load(Ordering::Relaxed);
        let taken_away = self.taken_away[priority as usize].load(Ordering::Relaxed);
        (queued.wrapping_sub(taken_away) as isize).max(0) as usize
    }

    /// Runnable processes by priority.
    pub(crate) fn runnable_by_priority(&self) -> [usize; 4] {
        Priority::ALL.map(|p| self.runnable(p))
    }

    /// Another core took a process of `priority` from here (its steal or rebalancing).
    pub(crate) fn count_taken_away(&self, priority: Priority) {
        // ORDERING: Relaxed: a load figure.
        self.taken_away[priority as usize].fetch_add(1, Ordering::Relaxed);
    }

    /// Stealable processes per level (0 for a core that has not started scheduling).
    pub(crate) fn stealable(&self) -> [usize; LEVELS] {
        self.stealers.get().map_or([0; LEVELS], |s| s.each_ref().map(|q| q.len()))
    }

    /// Stealable processes, all levels.
    pub(crate) fn stealable_total(&self) -> usize {
        self.stealers.get().map_or(0, |s| s.iter().map(|q| q.len()).sum())
    }

    /// The owner queued (`+1`) or took (`-1`) a process of `priority`: a plain load and store,
    /// since only the owner writes `queued`.
    #[inline(always)]
    pub(super) fn count(&self, priority: Priority, delta: isize) {
        let counter = &self.queued[priority as usize];
        // ORDERING: Relaxed: a load figure (see `runnable`).
        counter.store(counter.load(Ordering::Relaxed).wrapping_add_signed(delta), Ordering::Relaxed);
    }
}

/// The deque's item that carries `slot`. The deque (crates/deque) is a pure crate of plain
/// `u64` items and knows no slots: this and [`slot_of`] are the one place the run queues, the
/// owner's takes and the thieves' steals convert, so a slot is a `Slot` everywhere else.
#[inline(always)]
pub(crate) fn item(slot: Slot) -> u64 {
    u64::from(slot.get())
}

/// The slot an item of the deque carries (one [`item`] made).
#[inline(always)]
pub(crate) fn slot_of(item: u64) -> Slot {
    Slot::new(item as u32)
}
