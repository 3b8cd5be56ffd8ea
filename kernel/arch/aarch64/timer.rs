//! The EL1 physical generic timer: a periodic tick on every core.
//!
//! Each core programs its own timer (the registers are per core) and takes its interrupt as
//! PPI 30 (INTID 30, "non-secure EL1 physical timer" in the GIC's private range).

use aarch64_cpu::registers::{CNTP_CTL_EL0, CNTP_CVAL_EL0, Readable, Writeable};

/// The interrupt id of the EL1 physical timer.
pub const TIMER_INTID: u32 = 30;

/// Arms this core's timer to fire `period_counts` counts after the previous deadline (or
/// after now when there was none), so ticks do not drift by handler latency.
pub fn arm_next(period_counts: u64) {
    let now = super::cpu::counter();
    let previous = CNTP_CVAL_EL0.get();
    let mut next = previous.wrapping_add(period_counts);
    // After a long stall (or the first time), do not fire a burst of stale ticks.
    if next <= now || previous == 0 {
        next = now + period_counts;
    }
    CNTP_CVAL_EL0.set(next);
    CNTP_CTL_EL0.write(CNTP_CTL_EL0::ENABLE::SET + CNTP_CTL_EL0::IMASK::CLEAR);
    // ORDERING: ISB: the writes to CNTP_CVAL_EL0 and CNTP_CTL_EL0 must take effect before the
    // caller's EOI (`smp::handle_irq`), or the old compare value keeps the level-sensitive
    // timer PPI asserted and the GIC raises the interrupt again just after it is ended.
    // System-register writes are only guaranteed to affect what follows after a context
    // synchronisation event.
    aarch64_cpu::asm::barrier::isb(aarch64_cpu::asm::barrier::SY);
}

/// Stops this core's timer.
pub fn stop() {
    CNTP_CTL_EL0.write(CNTP_CTL_EL0::ENABLE::CLEAR + CNTP_CTL_EL0::IMASK::SET);
    // ORDERING: ISB: the timer is off before the caller parks in WFI (as in `arm_next`: a
    // system-register write needs a context synchronisation event to take effect).
    aarch64_cpu::asm::barrier::isb(aarch64_cpu::asm::barrier::SY);
}

/// True when this core's timer condition is met (the interrupt is due).
pub fn is_pending() -> bool {
    CNTP_CTL_EL0.is_set(CNTP_CTL_EL0::ISTATUS)
}
