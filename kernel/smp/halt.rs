//! The end of a run without semihosting: parking every core for good, since nothing else ends
//! the machine. Apart because it must work in any state (before the GIC exists, from a panic)
//! and so touches the per-core state with the fewest assumptions.

use core::sync::atomic::{AtomicBool, Ordering};

use super::online::GIC;
use super::percore::CORES;
use super::{Sgi, send_sgi};
use crate::arch::cpu;
use crate::arch::timer;
use crate::layout::MAX_CORES;

/// Set when the run is ending and every core is being parked.
static HALTING: AtomicBool = AtomicBool::new(false);
/// How long [`halt_other_cores`] waits for the others to report parked.
const HALT_TIMEOUT_US: u64 = 500_000;

/// True once the run is ending ([`halt_other_cores`] was called): cores waiting for something
/// that may never come (the console after the final words) park instead.
pub fn halting() -> bool {
    HALTING.load(Ordering::Relaxed)
}

/// Asks every other online core to park for good and waits (bounded) until they have. Returns
/// `(parked, asked)`. For the end of a run without semihosting: afterwards no other core
/// schedules, prints or takes interrupts.
pub fn halt_other_cores() -> (usize, usize) {
    HALTING.store(true, Ordering::Relaxed);
    let me = cpu::core_id();
    let others = || (0..MAX_CORES).filter(move |&c| c != me && CORES[c].is_online());
    let mut asked = 0;
    for core in others() {
        if send_sgi(core, Sgi::Halt).is_ok() {
            asked += 1;
        }
    }
    let parked = || others().filter(|&c| CORES[c].is_parked()).count();
    let deadline = crate::time::Deadline::after_us(HALT_TIMEOUT_US);
    while parked() < asked && !deadline.expired() {
        cpu::relax();
    }
    (parked(), asked)
}

/// Parks the calling core for good, in a low-power wait that nothing ends: IRQs masked, its
/// timer stopped and its GIC interface closed (a pending interrupt, even a masked one, would
/// end every WFI at once). Safe before the GIC exists and with the MMU off (plain stores).
pub fn halt_this_core() -> ! {
    let _ = cpu::irq_save();
    timer::stop();
    if let Some(gic) = GIC.get() {
        gic.disable_this_core();
    }
    // ORDERING: Release pairs with the Acquire in `is_parked`: whoever sees this core parked
    // also sees that it stopped touching shared state. (`get`: a panic before the core id is
    // set must not index out of bounds and panic again.)
    if let Some(me) = CORES.get(cpu::core_id()) {
        me.parked.store(true, Ordering::Release);
    }
    loop {
        cpu::wait_for_interrupt();
    }
}
