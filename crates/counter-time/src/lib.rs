//! Durations and counts of the generic counter (`CNTPCT_EL0`), converted one way everywhere.
//!
//! The kernel keeps durations in counter units (`*_counts`) and takes them from bootargs and
//! constants in nanoseconds, microseconds or seconds; reports give them back in microseconds or
//! nanoseconds. Every conversion in the kernel, its policy crate and the simulator is one of
//! these, so there is one rounding rule, and it is:
//!
//! - **to counts, round up**: a slice, cooldown, timeout or deadline never comes early, and a
//!   non-zero duration never becomes zero counts (zero stays zero);
//! - **from counts, round down**: a report never claims time that had not passed.
//!
//! Every result saturates at `u64::MAX` instead of wrapping. A counter frequency of zero (a
//! board that left CNTFRQ_EL0 unset) is read as 1 Hz, so nothing divides by zero.

#![no_std]
#![forbid(unsafe_code)]

const NS_PER_S: u128 = 1_000_000_000;
const US_PER_S: u128 = 1_000_000;

fn saturate(value: u128) -> u64 {
    u64::try_from(value).unwrap_or(u64::MAX)
}

fn hz(counter_hz: u64) -> u128 {
    u128::from(counter_hz.max(1))
}

/// `ns` nanoseconds in counts of a counter running at `counter_hz`, rounded up.
pub fn ns_to_counts(ns: u64, counter_hz: u64) -> u64 {
    saturate((u128::from(ns) * hz(counter_hz)).div_ceil(NS_PER_S))
}

/// `us` microseconds in counts, rounded up.
pub fn us_to_counts(us: u64, counter_hz: u64) -> u64 {
    saturate((u128::from(us) * hz(counter_hz)).div_ceil(US_PER_S))
}

/// `seconds` in counts (exact), saturating.
pub fn seconds_to_counts(seconds: u64, counter_hz: u64) -> u64 {
    saturate(u128::from(seconds) * hz(counter_hz))
}

/// Nanoseconds in `counts` increments, rounded down.
pub fn counts_to_ns(counts: u64, counter_hz: u64) -> u64 {
    saturate(u128::from(counts) * NS_PER_S / hz(counter_hz))
}

/// Microseconds in `counts` increments, rounded down.
pub fn counts_to_us(counts: u64, counter_hz: u64) -> u64 {
    saturate(u128::from(counts) * US_PER_S / hz(counter_hz))
}

/// Whole seconds in `counts` increments, rounded down.
pub fn counts_to_seconds(counts: u64, counter_hz: u64) -> u64 {
    saturate(u128::from(counts) / hz(counter_hz))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// QEMU virt's counter, a Pi 4's, and `-cpu max`'s.
    const BOARDS: [u64; 3] = [62_500_000, 54_000_000, 1_000_000_000];

    #[test]
    fn exact_values_on_the_boards() {
        assert_eq!(us_to_counts(1_000, 62_500_000), 62_500);
        assert_eq!(ns_to_counts(10_000, 1_000_000_000), 10_000);
        assert_eq!(seconds_to_counts(2, 54_000_000), 108_000_000);
        assert_eq!(counts_to_us(54_000_000, 54_000_000), 1_000_000);
        assert_eq!(counts_to_seconds(125_000_000, 62_500_000), 2);
    }

    #[test]
    fn to_counts_rounds_up_and_from_counts_rounds_down() {
        // 1 ns at 62.5 MHz is 0.0625 counts: one count, never zero.
        assert_eq!(ns_to_counts(1, 62_500_000), 1);
        assert_eq!(us_to_counts(1, 54_000_000), 54);
        // 1 count at 62.5 MHz is 16 ns: not a microsecond.
        assert_eq!(counts_to_us(1, 62_500_000), 0);
        assert_eq!(counts_to_ns(1, 54_000_000), 18);
        assert_eq!(ns_to_counts(0, 62_500_000), 0);
    }

    #[test]
    fn saturates_and_survives_a_zero_frequency() {
        assert_eq!(seconds_to_counts(u64::MAX, 1_000_000_000), u64::MAX);
        assert_eq!(us_to_counts(u64::MAX, 1_000_000_000), u64::MAX);
        assert_eq!(counts_to_us(1_000_000, 0), 1_000_000 * 1_000_000);
        assert_eq!(ns_to_counts(1, 0), 1);
    }

    proptest! {
        /// A duration converted to counts and back is never longer than asked for on the way
        /// back... and the counts never fall short of it: the round trip brackets the value.
        #[test]
        fn round_trip_brackets_the_duration(us in 0u64..(1 << 40), board in 0usize..3) {
            let hz = BOARDS[board];
            let counts = us_to_counts(us, hz);
            prop_assert!(counts_to_us(counts, hz) >= us);
            prop_assert!(counts == 0 || counts_to_us(counts - 1, hz) < us);
            let ns = us.saturating_mul(1_000);
            prop_assert_eq!(ns_to_counts(ns, hz), counts);
        }

        #[test]
        fn from_counts_never_overstates(counts in 0u64..(1 << 50), board in 0usize..3) {
            let hz = BOARDS[board];
            let us = counts_to_us(counts, hz);
            prop_assert!(us_to_counts(us, hz) <= counts);
            prop_assert!(counts_to_ns(counts, hz) / 1_000 == us);
        }
    }
}
