//! Which cores schedule now (the active set), and where work meant for a core that has left goes
//! instead. Below the offline protocol (`offline/`), so that waking, stealing and spawning can ask
//! without depending on how a core leaves.

use core::sync::atomic::{AtomicU64, Ordering};

use super::runqueue::movable;
use crate::proc::process::{self, Process};
use beamcore_core_set::{CoreMask, CoreSet};
use beamcore_hal::ids::{CoreId, Slot};
use beamcore_mm::layout::MAX_CORES;
use beamcore_sched_policy::balance::may_run_on;
use beamcore_smp as smp;

/// Cores that schedule: they accept new work (spawns, wakes, pushes), may be robbed and are
/// looked at by the balancer. A leaving core removes itself before it empties its queues.
pub(crate) static ACTIVE: CoreSet = CoreSet::new();

/// Processes moved off leaving cores, and how many of them were bound there (and rebound).
pub(crate) static MOVED: AtomicU64 = AtomicU64::new(0);
static REBOUND: AtomicU64 = AtomicU64::new(0);

/// Is `core` scheduling now (online, not leaving)?
pub fn core_is_active(core: usize) -> bool {
    core < MAX_CORES && ACTIVE.contains(core)
}

/// The cores scheduling now, as one reading (see `CoreSet::load`).
pub(crate) fn active_set() -> CoreMask {
    ACTIVE.load()
}

/// May `process` run on `core`: is the core in its allowed set, and does it schedule? The one
/// check every mover makes (a thief before it keeps what it took, push rebalancing for the core
/// it sends processes to, a leaving core for where its processes go), so that a process never
/// lands outside its set or on a core that left.
#[inline]
pub(crate) fn may_run_here(process: &Process, core: CoreId) -> bool {
    may_run_on(&process.allowed.load(), core.index()) && core_is_active(core.index())
}

/// Cores scheduling now.
pub fn active_cores() -> usize {
    ACTIVE.load().len()
}

/// Processes moved off cores that went offline, and how many of those were bound there.
pub fn offline_moves() -> (u64, u64) {
    // ORDERING: Relaxed: figures for the report.
    (MOVED.load(Ordering::Relaxed), REBOUND.load(Ordering::Relaxed))
}

/// Every core once, at boot: it schedules.
pub(crate) fn join_at_boot(core: CoreId) {
    // ORDERING: SeqCst, as every change of ACTIVE.
    ACTIVE.insert(core.index(), Ordering::SeqCst);
}

/// The process in `slot`, moved off `from` (leaving or gone), goes to `to` if its allowed cores
/// include it, else to the next core after `from` that they include and that schedules; when
/// none does (a process bound to `from`, or a set of cores all gone), it goes to `to` and is
/// rebound there: its set becomes that one core (counted). Returns the core it goes to, which
/// is the process's core from now on. The caller owns the process (it took it from a queue,
/// or made it `Runnable` under its lock).
pub(crate) fn retarget(slot: Slot, from: CoreId, to: CoreId) -> CoreId {
    let process = process::slot(slot);
    let cores = smp::cores_online().max(1);
    let target = if to != from && may_run_here(process, to) {
        to
    } else {
        (1..cores)
            .map(|step| CoreId::new((from.index() + step) % cores))
            .find(|&c| may_run_here(process, c))
            .unwrap_or(to)
    };
    // ORDERING: Relaxed: the process's placement, handed over with the process by the inbox
    // (lock) it goes into next.
    process.core.store(target, Ordering::Relaxed);
    if !may_run_on(&process.allowed.load(), target.index()) {
        process.allowed.store(CoreMask::single(target.index()));
        process.movable.store(movable(process), Ordering::Relaxed);
        REBOUND.fetch_add(1, Ordering::Relaxed);
    }
    target
}

/// Where work meant for `core`, which no longer schedules, goes instead: the next active core
/// after it (core 0 always is).
pub(crate) fn substitute(core: CoreId) -> CoreId {
    let cores = smp::cores_online().max(1);
    let next = (1..=cores).map(|step| (core.index() + step) % cores).find(|&c| core_is_active(c));
    next.map_or(CoreId::BOOT, CoreId::new)
}
