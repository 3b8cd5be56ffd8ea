//! Time from the system counter: conversions and deadlines for bounded waits.

use crate::arch::cpu;

/// The generic counter now (a reading, in counts).
pub fn now_count() -> u64 {
    cpu::counter()
}

/// Counts in `us` microseconds.
pub fn us_to_counts(us: u64) -> u64 {
    (u128::from(us) * u128::from(cpu::counter_frequency()) / 1_000_000) as u64
}

/// Microseconds in `counts` increments of the counter.
pub fn counts_to_us(counts: u64) -> u64 {
    (u128::from(counts) * 1_000_000 / u128::from(cpu::counter_frequency().max(1))) as u64
}

/// Nanoseconds in `counts` increments of the counter (under `-icount shift=0`, instructions).
pub fn counts_to_ns(counts: u64) -> u64 {
    (u128::from(counts) * 1_000_000_000 / u128::from(cpu::counter_frequency().max(1))) as u64
}

/// The counter reading `us` microseconds from now (saturating): a deadline for a wait or a
/// timer.
pub fn count_after_us(us: u64) -> u64 {
    now_count().saturating_add(us_to_counts(us))
}

/// A point in counter time after which a bounded wait gives up.
#[derive(Clone, Copy, Debug)]
pub struct Deadline(u64);

impl Deadline {
    pub fn after_us(us: u64) -> Deadline {
        Deadline(count_after_us(us))
    }

    pub fn expired(&self) -> bool {
        now_count() >= self.0
    }
}
