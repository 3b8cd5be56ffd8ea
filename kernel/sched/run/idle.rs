//! Which cores are idle, for whoever makes stealable work: the cores asleep in WFI and the
//! number searching for work (spinning through steal rounds before they sleep). A core that
//! queues stealable work wakes a sleeper to take it (as Go's runtime wakes an idle P) unless
//! one is searching already.

use core::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use crate::settings::config;
use beamcore_core_set::CoreSet;
use beamcore_hal::arch::cpu;
use beamcore_mm::layout::MAX_CORES;
use beamcore_sched_policy::balance::{self, should_wake_a_thief, worth_a_thief};
use beamcore_smp::{self as smp, Sgi};

/// Cores asleep in WFI, so a core that queues stealable work can wake one to take it instead of
/// leaving it asleep until its tick.
pub(crate) static SLEEPERS: CoreSet = CoreSet::new();
/// Cores searching for work right now (idle, spinning through steal rounds before they sleep):
/// Go's spinning Ms. While one searches, new stealable work needs no wake-up SGI: the searcher
/// finds it within microseconds. At most half the cores search at once (Tokio's rule), so idle
/// cores do not all hammer the same victims.
pub(crate) static SEARCHING: AtomicUsize = AtomicUsize::new(0);

/// When each sleeper was first offered work worth a thief during its current sleep (a counter
/// reading; 0: not yet). At the end of a sleep, idle-with-work is counted from then, not from
/// the sleep's start: a core asleep before the work existed (as every other core is when a
/// program starts) did not leave it waiting (`idle_with_work`).
static WORK_OFFERED_AT: [AtomicU64; MAX_CORES] = [const { AtomicU64::new(0) }; MAX_CORES];
/// Sleepers not yet offered work worth a thief: the first core to queue such work stamps them
/// all and empties the set, so later pushes pay one load.
static UNOFFERED: CoreSet = CoreSet::new();

/// When a wake-up SGI was first sent to each core during its current sleep (a counter reading;
/// 0: none yet): the start of the wake-up latency its end measures (`wake_latency`).
static WAKE_SENT_AT: [AtomicU64; MAX_CORES] = [const { AtomicU64::new(0) }; MAX_CORES];

/// Sends `core` a wake-up SGI (it sleeps, or is about to), noting when for its wake-up latency.
pub(crate) fn send_wake(core: usize) {
    // ORDERING: Relaxed: a statistic's timestamp; the first request of a sleep wins. A stale
    // read on the woken core costs one sample, never a wake-up.
    let _ = WAKE_SENT_AT[core].compare_exchange(0, cpu::counter(), Ordering::Relaxed, Ordering::Relaxed);
    let _ = smp::send_sgi(core, Sgi::Wake);
}

/// With enough stealable work queued here and no core searching, wakes one sleeping core to
/// come and take some (a searching core would find it by itself within microseconds). Every
/// sleeper learns when such work was first offered (`WORK_OFFERED_AT`).
///
/// The loads are Relaxed, and nothing orders them after the push that made the work: a core
/// that announces its sleep just then may be missed here while its own last look (in `sleep`)
/// misses the new item. That costs promptness, never a process: the owner runs the item itself,
/// and the sleeper's tick wakes it within one slice. A full barrier on every push (the yield
/// path) to close that window would cost more than it saves.
pub(crate) fn wake_a_thief(stealable_here: usize) {
    let sleepers = SLEEPERS.load();
    let config = &config().balance;
    if sleepers.is_empty() || !worth_a_thief(config, stealable_here) {
        return;
    }
    if !UNOFFERED.is_empty() {
        let now = cpu::counter();
        for sleeper in UNOFFERED.take_all(Ordering::Relaxed).iter() {
            // ORDERING: Relaxed: a statistic's timestamp (see `idle_with_work`).
            WORK_OFFERED_AT[sleeper].store(now, Ordering::Relaxed);
        }
    }
    let me = cpu::core_id();
    // ORDERING: Relaxed, as explained above.
    if !should_wake_a_thief(config, stealable_here, true, SEARCHING.load(Ordering::Relaxed)) {
        return;
    }
    if let Some(other) = sleepers.first_other_than(me) {
        send_wake(other);
    }
}

/// The calling core is about to announce a sleep that begins at `now`: work worth a thief
/// waits elsewhere already (`waiting`: refused by a cooldown, say) or not yet.
pub(crate) fn sleep_begins(me: usize, now: u64, waiting: bool) {
    // ORDERING: Relaxed: a statistic. A late stamp from an offer made before this sleep can
    // land after this store; it is older than the sleep, so the whole sleep counts (see
    // `idle_with_work`): an upper bound, as before offers were recorded.
    WAKE_SENT_AT[me].store(0, Ordering::Relaxed);
    if waiting {
        UNOFFERED.remove(me, Ordering::Relaxed);
        WORK_OFFERED_AT[me].store(now, Ordering::Relaxed);
    } else {
        WORK_OFFERED_AT[me].store(0, Ordering::Relaxed);
        UNOFFERED.insert(me, Ordering::Relaxed);
    }
}

/// The sleep that began at `fell_asleep` has ended at `woke`: the counts since the first
/// wake-up SGI sent during it, if one was (a sleep the tick ended has none).
pub(crate) fn wake_latency(me: usize, fell_asleep: u64, woke: u64) -> Option<u64> {
    // ORDERING: Relaxed: a statistic (see `send_wake`).
    let sent = WAKE_SENT_AT[me].swap(0, Ordering::Relaxed);
    // A request noted after `woke` (sent while this core was already running) is not this
    // sleep's: the counter is the machine's one clock, so the comparisons hold across cores.
    (sent != 0 && (fell_asleep..=woke).contains(&sent)).then(|| woke - sent)
}

/// Of a sleep from `fell_asleep` to `woke`, with work worth a thief elsewhere at its end, the
/// counts that work waited (`balance::idle_with_work`): from the first offer the sleep saw, or
/// the whole sleep if none was recorded (work that came by a path that does not offer it, such
/// as a message waking a process elsewhere: an upper bound). A stamp after the wake is a later
/// offer's: a pusher that emptied `UNOFFERED` before `sleep_ended` took this core out stamps
/// it late.
pub(crate) fn idle_with_work(me: usize, fell_asleep: u64, woke: u64) -> u64 {
    // ORDERING: Relaxed: a statistic.
    let offered = WORK_OFFERED_AT[me].load(Ordering::Relaxed);
    balance::idle_with_work(fell_asleep, woke, (offered != 0).then_some(offered))
}

/// The calling core has left WFI: offers from now on are not its sleep's.
pub(crate) fn sleep_ended(me: usize) {
    UNOFFERED.remove(me, Ordering::Relaxed);
}

/// Cores searching now (for the watchdog's dump).
pub(crate) fn searching() -> usize {
    // ORDERING: Relaxed: a diagnostic figure.
    SEARCHING.load(Ordering::Relaxed)
}
