//! Time from the system counter: conversions and deadlines for bounded waits.
//!
//! The conversions are crates/counter-time's at this board's counter frequency: to counts they
//! round up (nothing comes early), from counts down (no report overstates). docs/layout.md,
//! "Two words for time", says why one rule.

use crate::arch::cpu;

/// The generic counter now (a reading, in counts).
pub fn now_count() -> u64 {
    cpu::counter()
}

/// Counts in `us` microseconds.
pub fn us_to_counts(us: u64) -> u64 {
    beamcore_counter_time::us_to_counts(us, cpu::counter_frequency())
}

/// Microseconds in `counts` increments of the counter.
pub fn counts_to_us(counts: u64) -> u64 {
    beamcore_counter_time::counts_to_us(counts, cpu::counter_frequency())
}

/// Nanoseconds in `counts` increments of the counter (under `-icount shift=0`, instructions).
pub fn counts_to_ns(counts: u64) -> u64 {
    beamcore_counter_time::counts_to_ns(counts, cpu::counter_frequency())
}

/// Counts in `seconds` (exact, saturating).
pub fn seconds_to_counts(seconds: u64) -> u64 {
    beamcore_counter_time::seconds_to_counts(seconds, cpu::counter_frequency())
}

/// Counts in `ns` nanoseconds, rounded up.
pub fn ns_to_counts(ns: u64) -> u64 {
    beamcore_counter_time::ns_to_counts(ns, cpu::counter_frequency())
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
