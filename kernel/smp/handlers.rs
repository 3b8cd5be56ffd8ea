//! The seam between this layer and the scheduler above it: the functions the boot code
//! registers so that the tick, the job queue and the watchdog can reach the scheduler without
//! this layer naming it.

use crate::arch::exception::TrapFrame;

/// What a tick does besides counting itself and re-arming the timer, who hears of a queued job,
/// and what the deadline watchdog prints before it panics: registered at boot (the scheduler's).
#[derive(Clone, Copy)]
pub struct Handlers {
    /// Every core's tick (IRQ context, IRQs masked); may rewrite the frame to end a slice.
    pub tick: fn(&mut TrapFrame),
    /// Fires the timers due on this core (IRQ context, IRQs masked), at every timer
    /// interrupt: a tick, or a deadline the timer was armed for.
    pub timers: fn(),
    /// The earliest timer deadline this core serves (`u64::MAX`: none), to arm the timer for.
    pub earliest_deadline: fn() -> u64,
    /// A job was queued for this core (called by [`run_on`] once it is in the queue).
    ///
    /// [`run_on`]: super::run_on
    pub job_queued: fn(usize),
    /// Prints the state of the run when the deadline watchdog fires.
    pub dump: fn(),
    /// Holds the calling process on its core (true) or lets it move again (false); nothing
    /// outside a process. [`run_on_all_and_wait`] holds its caller while it runs the caller's
    /// own share.
    ///
    /// [`run_on_all_and_wait`]: super::run_on_all_and_wait
    pub hold_current: fn(bool),
}

pub(super) static HANDLERS: spin::Once<Handlers> = spin::Once::new();

/// Registers the handlers (the boot core, before ticks are taken or jobs queued). Later calls
/// are ignored.
pub fn set_handlers(handlers: Handlers) {
    HANDLERS.call_once(|| handlers);
}
