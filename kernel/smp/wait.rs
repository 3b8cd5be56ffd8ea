//! Sleeping until a condition holds without losing the wake-up: the one primitive every
//! waiter on this layer (jobs, tests, programs) shares, so the mask-check-WFI order is
//! written once.

use crate::arch::cpu;

/// Sleeps in WFI until `condition` holds. The check runs with IRQs masked, and WFI wakes on a
/// pending interrupt even while masked, so a wake-up arriving between check and sleep is not
/// lost; the tick bounds every sleep anyway.
pub fn wait_until(condition: impl Fn() -> bool) {
    loop {
        let irq = cpu::irq_save();
        if condition() {
            cpu::irq_restore(irq);
            return;
        }
        cpu::wait_for_interrupt();
        cpu::irq_restore(irq);
    }
}
