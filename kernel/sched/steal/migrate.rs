//! What the balancer sees of the cores and how a process it took moves: the view of each core
//! that a steal round and a push rebalance both judge by, and the moves both make (a process
//! migrated to its new core, or handed back to the core it came from when it may not run where
//! it was to go).

use core::sync::atomic::{AtomicU32, Ordering};

use crate::proc::process;
use crate::record::stats::{self, bump};
use crate::run::percore::{OnCore, scheduler};
use crate::run::runqueue::movable;
use crate::run::wake::make_runnable;
use beamcore_hal::ids::{CoreId, Slot};
use beamcore_mm::layout::MAX_CORES;
use beamcore_sched_policy::balance::CoreView;
use beamcore_smp as smp;

/// The most migrations any process has made.
static MAX_MIGRATIONS_SEEN: AtomicU32 = AtomicU32::new(0);

/// The most migrations any process has made so far.
pub fn max_migrations_seen() -> u32 {
    // ORDERING: Relaxed: a figure for the report.
    MAX_MIGRATIONS_SEEN.load(Ordering::Relaxed)
}

/// What a thief sees of one core.
pub(super) fn core_view(core: CoreId) -> CoreView {
    let queues = &scheduler(core).queues;
    let by_priority = queues.runnable_by_priority();
    CoreView {
        load: CoreView::load_of(by_priority),
        stealable: queues.stealable_total(),
        runnable: by_priority.iter().sum(),
        cluster: (smp::core(core.index()).mpidr() >> 8) & 0xff,
    }
}

/// What a thief sees of every online core, written into `views` (emptied first). Filled in
/// place rather than returned: the vector holds room for `MAX_CORES` views (2 KiB), and a
/// returned one was copied whole on every steal round, whatever the number of cores.
pub(super) fn core_views(views: &mut heapless::Vec<CoreView, MAX_CORES>, cores: usize) {
    views.clear();
    for core in 0..cores {
        // `cores` is at most MAX_CORES (cores online), the vector's capacity.
        let _ = views.push(core_view(CoreId::new(core)));
    }
}

/// Moves a process just taken from `victim`'s stealable queue to core `to`.
pub(super) fn migrate(slot: Slot, victim: CoreId, to: CoreId) {
    let process = process::slot(slot);
    // ORDERING: Relaxed throughout: counts and the process's placement; the process itself
    // is handed over by the deque's steal (and the queue or inbox it goes into next).
    scheduler(victim).queues.count_taken_away(process.priority());
    process.core.store(to, Ordering::Relaxed);
    let migrations = process.migrations.fetch_add(1, Ordering::Relaxed) + 1;
    process.movable.store(movable(process), Ordering::Relaxed);
    MAX_MIGRATIONS_SEEN.fetch_max(migrations, Ordering::Relaxed);
    stats::of(victim).migrated_out.fetch_add(1, Ordering::Relaxed);
    stats::of(to).migrated_in.fetch_add(1, Ordering::Relaxed);
}

/// Returns a process taken from `from`'s stealable queue that may not run where it was to go:
/// it goes back to `from` (through its inbox, or straight into the run queue when `from` is
/// this core), at the back of its level, and the refusal is counted here as `not_allowed`.
/// Nothing is lost: the process was in no queue only between the take and this.
pub(super) fn hand_back(core: &mut OnCore, slot: Slot, from: CoreId) {
    let process = process::slot(slot);
    // The inbox's drain (or the enqueue) counts it as queued at `from` again.
    scheduler(from).queues.count_taken_away(process.priority());
    bump(&core.scheduler().stats.fail_not_allowed);
    make_runnable(core, slot);
}
