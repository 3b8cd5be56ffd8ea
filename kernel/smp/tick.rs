//! The per-core timer tick: its period, when the next one is due, and arming the generic
//! timer for the earlier of that and the scheduler's earliest deadline. Apart from the IRQ
//! handler because bring-up starts the tick too, and the drift rule deserves its own page.

use core::sync::atomic::{AtomicU64, Ordering};

use super::handlers::HANDLERS;
use super::percore::PerCore;
use crate::arch::cpu;
use crate::arch::timer;

/// The tick period in counts.
pub(super) static TICK_PERIOD: AtomicU64 = AtomicU64::new(0);

/// The first tick of a core coming online, a period from now.
pub(super) fn start_tick(me: &PerCore) {
    let period = TICK_PERIOD.load(Ordering::Relaxed);
    // ORDERING: Relaxed: the core's own value.
    me.next_tick.store(cpu::counter() + period, Ordering::Relaxed);
    arm(me);
}

/// The tick after the one due now: a period after it, so ticks do not drift by handler
/// latency, or a period from now after a long stall (no burst of stale ticks).
pub(super) fn advance_tick(me: &PerCore, now: u64) {
    let period = TICK_PERIOD.load(Ordering::Relaxed);
    // ORDERING: Relaxed: the core's own value.
    let mut next = me.next_tick.load(Ordering::Relaxed).wrapping_add(period);
    if next <= now {
        next = now + period;
    }
    me.next_tick.store(next, Ordering::Relaxed);
}

/// Arms this core's generic timer for the earlier of its next tick and the earliest timer
/// deadline it serves (the scheduler's, through `Handlers::earliest_deadline`).
pub(super) fn arm(me: &PerCore) {
    // ORDERING: Relaxed: the core's own value.
    let next_tick = me.next_tick.load(Ordering::Relaxed);
    let deadline = HANDLERS.get().map_or(u64::MAX, |handlers| (handlers.earliest_deadline)());
    timer::arm_at(next_tick.min(deadline));
}

/// A timer deadline was set on this core (IRQs masked): arms the generic timer for it if it
/// comes before what the timer is armed for, so it fires at its time, not at the next tick.
pub fn deadline_added(deadline: u64) {
    if deadline < timer::armed_at() {
        timer::arm_at(deadline);
    }
}
