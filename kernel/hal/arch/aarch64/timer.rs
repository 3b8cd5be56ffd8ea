//! The EL1 physical generic timer: each core's tick and earliest deadline.
//!
//! Each core programs its own timer (the registers are per core) and takes its interrupt as
//! PPI 30 (INTID 30, "non-secure EL1 physical timer" in the GIC's private range). The SMP
//! layer arms it for the earlier of the next tick and the earliest timer deadline
//! (`smp::handle_irq`, `smp::deadline_added`).

use aarch64_cpu::registers::{CNTP_CTL_EL0, CNTP_CVAL_EL0, Readable, Writeable};

/// The interrupt id of the EL1 physical timer.
pub const TIMER_INTID: u32 = 30;

/// Arms this core's timer to fire when the counter reaches `at` (at once if it has).
pub fn arm_at(at: u64) {
    CNTP_CVAL_EL0.set(at);
    CNTP_CTL_EL0.write(CNTP_CTL_EL0::ENABLE::SET + CNTP_CTL_EL0::IMASK::CLEAR);
    // ORDERING: ISB: the writes to CNTP_CVAL_EL0 and CNTP_CTL_EL0 must take effect before the
    // caller's EOI (`smp::handle_irq`), or the old compare value keeps the level-sensitive
    // timer PPI asserted and the GIC raises the interrupt again just after it is ended.
    // System-register writes are only guaranteed to affect what follows after a context
    // synchronisation event.
    aarch64_cpu::asm::barrier::isb(aarch64_cpu::asm::barrier::SY);
}

/// The counter value this core's timer is armed for.
pub fn armed_at() -> u64 {
    CNTP_CVAL_EL0.get()
}

/// Stops this core's timer.
pub fn stop() {
    CNTP_CTL_EL0.write(CNTP_CTL_EL0::ENABLE::CLEAR + CNTP_CTL_EL0::IMASK::SET);
    // ORDERING: ISB: the timer is off before the caller parks in WFI (as in `arm_at`: a
    // system-register write needs a context synchronisation event to take effect).
    aarch64_cpu::asm::barrier::isb(aarch64_cpu::asm::barrier::SY);
}

/// True when this core's timer condition is met (the interrupt is due).
pub fn is_pending() -> bool {
    CNTP_CTL_EL0.is_set(CNTP_CTL_EL0::ISTATUS)
}
