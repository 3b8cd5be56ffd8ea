//! The deadline watchdog: a whole-run deadline checked on core 0's tick, so a hung test says
//! where it hung instead of running until the host's timeout. It is not `sched/watchdog.rs`:
//! that one watches processes; this one watches the run, from below the scheduler.

use core::sync::atomic::{AtomicU64, Ordering};

use super::handlers::HANDLERS;
use crate::arch::cpu;
use crate::arch::exception::TrapFrame;

/// Counter value after which core 0's tick declares the run stuck (0 = no watchdog).
static WATCHDOG_AT: AtomicU64 = AtomicU64::new(0);

/// Arms the watchdog: if the run is still going `seconds` from now, core 0 prints every core's
/// scheduler state and panics (a hung test then says where it hung).
pub fn arm_watchdog(seconds: u64) {
    WATCHDOG_AT.store(cpu::counter().saturating_add(crate::time::seconds_to_counts(seconds)), Ordering::Relaxed);
}

pub(super) fn check_watchdog(frame: &TrapFrame) {
    let at = WATCHDOG_AT.load(Ordering::Relaxed);
    if at != 0 && cpu::counter() > at {
        WATCHDOG_AT.store(0, Ordering::Relaxed);
        crate::println!(
            "watchdog: core 0 was at ELR={:#x} LR={:#x} SPSR={:#x} ({})",
            frame.elr,
            frame.x[30],
            frame.spsr,
            if crate::arch::context::interrupted_process(frame) { "a process" } else { "the kernel" }
        );
        if let Some(handlers) = HANDLERS.get() {
            (handlers.dump)();
        }
        panic!("watchdog: the run made no end within its deadline");
    }
}
