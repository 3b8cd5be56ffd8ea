//! Which cores are idle, for whoever makes stealable work: the cores asleep in WFI and the
//! number searching for work (spinning through steal rounds before they sleep). A core that
//! queues stealable work wakes a sleeper to take it (as Go's runtime wakes an idle P) unless
//! one is searching already.

use core::sync::atomic::{AtomicUsize, Ordering};

use crate::settings::config;
use beamcore_core_set::CoreSet;
use beamcore_hal::arch::cpu;
use beamcore_sched_policy::balance::should_wake_a_thief;
use beamcore_smp::{self as smp, Sgi};

/// Cores asleep in WFI, so a core that queues stealable work can wake one to take it instead of
/// leaving it asleep until its tick.
pub(crate) static SLEEPERS: CoreSet = CoreSet::new();
/// Cores searching for work right now (idle, spinning through steal rounds before they sleep):
/// Go's spinning Ms. While one searches, new stealable work needs no wake-up SGI: the searcher
/// finds it within microseconds. At most half the cores search at once (Tokio's rule), so idle
/// cores do not all hammer the same victims.
pub(crate) static SEARCHING: AtomicUsize = AtomicUsize::new(0);

/// With enough stealable work queued here and no core searching, wakes one sleeping core to
/// come and take some (a searching core would find it by itself within microseconds).
///
/// The loads are Relaxed, and nothing orders them after the push that made the work: a core
/// that announces its sleep just then may be missed here while its own last look (in `sleep`)
/// misses the new item. That costs promptness, never a process: the owner runs the item itself,
/// and the sleeper's tick wakes it within one slice. A full barrier on every push (the yield
/// path) to close that window would cost more than it saves.
pub(crate) fn wake_a_thief(stealable_here: usize) {
    let sleepers = SLEEPERS.load();
    // ORDERING: Relaxed, as explained above.
    if !should_wake_a_thief(&config().balance, stealable_here, !sleepers.is_empty(), SEARCHING.load(Ordering::Relaxed))
    {
        return;
    }
    let me = cpu::core_id();
    if let Some(other) = sleepers.first_other_than(me) {
        let _ = smp::send_sgi(other, Sgi::Wake);
    }
}

/// Cores searching now (for the watchdog's dump).
pub(crate) fn searching() -> usize {
    // ORDERING: Relaxed: a diagnostic figure.
    SEARCHING.load(Ordering::Relaxed)
}
