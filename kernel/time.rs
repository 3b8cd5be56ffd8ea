//! Time from the system counter: conversions and deadlines for bounded waits.

use crate::arch::cpu;

/// The counter, in ticks.
pub fn now_ticks() -> u64 {
    cpu::counter()
}

/// Counter ticks in `us` microseconds.
pub fn us_to_ticks(us: u64) -> u64 {
    (u128::from(us) * u128::from(cpu::counter_frequency()) / 1_000_000) as u64
}

/// Microseconds in `ticks` counter ticks.
pub fn ticks_to_us(ticks: u64) -> u64 {
    (u128::from(ticks) * 1_000_000 / u128::from(cpu::counter_frequency().max(1))) as u64
}

/// Nanoseconds in `ticks` counter ticks (under `-icount shift=0`, instructions).
pub fn ticks_to_ns(ticks: u64) -> u64 {
    (u128::from(ticks) * 1_000_000_000 / u128::from(cpu::counter_frequency().max(1))) as u64
}

/// A point in counter time after which a bounded wait gives up.
#[derive(Clone, Copy, Debug)]
pub struct Deadline(u64);

impl Deadline {
    pub fn after_us(us: u64) -> Deadline {
        Deadline(now_ticks().saturating_add(us_to_ticks(us)))
    }

    pub fn expired(&self) -> bool {
        now_ticks() >= self.0
    }
}
