//! Each core's attention word: one bit per kind of work the scheduler loop must do before it
//! picks the next process (queued jobs, processes in the inbox, a timeout pending, push
//! rebalancing on core 0). With the word at zero the loop would only pick the next process, so a
//! process that gives up the core can hand it to the next one directly (`dispatch`), without the
//! loop's round.
//!
//! Bits others set (jobs, inbox) are set after the work is queued and cleared by the owner
//! before it looks at the queue, so a set bit is never lost: whoever queues after the clear sets
//! it again. The timeout and rebalance bits only say "look at the time": the deadline, or core
//! 0's tick count, decides.

use core::sync::atomic::Ordering;

use super::percore::{OnCore, scheduler};
use crate::settings::{Telemetry, config, rebalance_period_ticks};
use beamcore_hal::arch::cpu;
use beamcore_hal::ids::CoreId;
use beamcore_sched_policy::balance::rebalance_due;
use beamcore_smp as smp;

/// Jobs are queued for the core (`smp::run_on`).
pub(crate) const JOBS: u32 = 1 << 0;
/// Another core put a process in this core's inbox.
pub(crate) const INBOX: u32 = 1 << 1;
/// A timer is pending in a table this core serves (`timers`).
pub(crate) const TIMEOUTS: u32 = 1 << 2;
/// Push rebalancing is on and this core (0) does it.
pub(crate) const REBALANCE: u32 = 1 << 3;
/// The core is asked to go offline (`offline::take_offline`).
pub(crate) const LEAVE: u32 = 1 << 4;
/// Tracing was asked for (bootarg `trace=on`): set on every core at start-up and never cleared.
/// Not work for the loop; it keeps the hand-off off its fast path, which records no events, so
/// that path tests one word instead of two (`dispatch::next_turn_from_process`).
pub(crate) const TRACING: u32 = 1 << 5;
/// `telemetry=counters` or `telemetry=off`: set on every core at start-up and never cleared, as
/// `TRACING`. Not work for the loop either: in the word so that the default, `telemetry=full`,
/// costs the hand-off nothing (its one test of the word, zero, is the one it already made),
/// and the other two levels one compare of the word already loaded
/// (`dispatch::next_turn_from_process`).
pub(crate) const TELEMETRY_COUNTERS: u32 = 1 << 6;
pub(crate) const TELEMETRY_OFF: u32 = 1 << 7;
/// The bits that say how the core is set up, not what the loop must do.
const NOT_WORK: u32 = TRACING | TELEMETRY_COUNTERS | TELEMETRY_OFF;

/// The bit a core sets at start-up for `telemetry` (none for `Full`).
pub(crate) const fn telemetry_bit(telemetry: Telemetry) -> u32 {
    match telemetry {
        Telemetry::Full => 0,
        Telemetry::Counters => TELEMETRY_COUNTERS,
        Telemetry::Off => TELEMETRY_OFF,
    }
}

/// This core's telemetry level, for the paths that did not choose theirs by the word already.
#[inline(always)]
pub(crate) fn telemetry(core: &OnCore) -> Telemetry {
    // ORDERING: Relaxed: the owner's own bits, set before it scheduled.
    let bits = core.scheduler().attention.load(Ordering::Relaxed);
    if bits & TELEMETRY_COUNTERS != 0 {
        Telemetry::Counters
    } else if bits & TELEMETRY_OFF != 0 {
        Telemetry::Off
    } else {
        Telemetry::Full
    }
}

/// Tells `core` a job was queued for it (registered with `smp` at boot).
pub fn job_queued(core: usize) {
    // ORDERING: Release, paired with the Acquire clear in `take`: an owner that clears the bit
    // after this set sees the job in its queue.
    scheduler(CoreId::new(core)).attention.fetch_or(JOBS, Ordering::Release);
}

/// Tells `core` a process is in its inbox (after it was pushed there).
pub(crate) fn inbox_filled(core: CoreId) {
    // ORDERING: Release, as in `job_queued`, for the inbox.
    scheduler(core).attention.fetch_or(INBOX, Ordering::Release);
}

/// Asks `core` to leave at its loop's next top (`offline::leave`).
pub(crate) fn leave_requested(core: CoreId) {
    // ORDERING: Release, as in `job_queued`: the owner that clears the bit sees the request.
    scheduler(core).attention.fetch_or(LEAVE, Ordering::Release);
}

/// Is `bit` set (the owner asks)?
#[inline]
pub(crate) fn is_set(core: &OnCore, bit: u32) -> bool {
    // ORDERING: Relaxed peek; `take` synchronises when the owner acts on it.
    core.scheduler().attention.load(Ordering::Relaxed) & bit != 0
}

/// The owner, before it looks at the queue behind `bit`: clears the bit if set. Work queued
/// before a set it clears is seen by the look that follows; work queued after sets it again.
#[inline]
pub(crate) fn take(core: &OnCore, bit: u32) {
    let attention = &core.scheduler().attention;
    // ORDERING: Relaxed peek: only the clear below needs to synchronise.
    if attention.load(Ordering::Relaxed) & bit != 0 {
        // ORDERING: Acquire, paired with the Release set in `job_queued` / `inbox_filled`.
        attention.fetch_and(!bit, Ordering::Acquire);
    }
}

/// The owner sets or clears one of its own bits (timeouts, rebalance).
pub(crate) fn set_own(core: &OnCore, bit: u32, on: bool) {
    let attention = &core.scheduler().attention;
    // ORDERING: Relaxed: only this core reads these bits, and it acts on the state behind
    // them (its own `CoreLocal`), not on the bit.
    if (attention.load(Ordering::Relaxed) & bit != 0) != on {
        if on {
            attention.fetch_or(bit, Ordering::Relaxed);
        } else {
            attention.fetch_and(!bit, Ordering::Relaxed);
        }
    }
}

/// Must the scheduler loop run before the next process (jobs, inbox, a deadline that has
/// passed, rebalancing due)? False means it would only pick the next process.
#[inline]
pub(crate) fn loop_needed(core: &mut OnCore) -> bool {
    // ORDERING: Relaxed: a bit set on another core is seen a little later at worst; until then
    // this core runs its processes as it would have anyway, and the loop sees the work on its
    // next round (every block with nothing to run, every tick that ends a slice).
    let bits = core.scheduler().attention.load(Ordering::Relaxed) & !NOT_WORK;
    if bits == 0 {
        return false;
    }
    if bits & (JOBS | INBOX | LEAVE) != 0 {
        return true;
    }
    let now = cpu::counter();
    (bits & TIMEOUTS != 0 && core.local().timers_due <= now)
        || (bits & REBALANCE != 0 && rebalance_look_due(core).is_some())
}

/// Core 0's tick count, when a look for severe imbalance is due (`balance::rebalance_due`,
/// counted in its ticks): asked here, and by the look itself (`steal::rebalance`).
pub(crate) fn rebalance_look_due(core: &mut OnCore) -> Option<u64> {
    let ticks = smp::core(core.id().index()).ticks();
    rebalance_due(&config().balance, ticks, core.local().last_rebalance, rebalance_period_ticks()).then_some(ticks)
}
