//! The queue-wait histogram's arithmetic: how long a process waited in a run queue, from
//! counts to power-of-two microsecond buckets. Pure, host-tested; the scheduler records
//! into per-core counters with it (`stats::record_wait`), on the dispatch path, so that is a
//! multiply-high and a count of leading zeros indexing a counter: no division, no clamp (the
//! counts by leading zeros are folded into buckets when the report is written).
//!
//! Buckets: 0 holds waits below 1 us; bucket `i` (1 ≤ i < [`WAIT_BUCKETS`] - 1) holds
//! `[2^(i-1), 2^i)` us; the last everything from `2^(WAIT_BUCKETS-2)` us (131 ms) on.

#![forbid(unsafe_code)]

/// Buckets of the queue-wait histogram.
pub const WAIT_BUCKETS: usize = 19;

/// Converts counts to microseconds with one multiply-high: `us = counts * factor / 2^64`
/// with `factor = 2^64 * 10^6 / counter_hz`, computed once at boot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CountsToUs {
    factor: u64,
}

impl CountsToUs {
    /// For a counter running at `counter_hz` (above 1 MHz, as every supported board's is:
    /// 54 MHz, 62.5 MHz or 1 GHz; a slower one is taken as 1 MHz, one tick a microsecond).
    pub const fn new(counter_hz: u64) -> CountsToUs {
        let hz = if counter_hz > 1_000_000 { counter_hz } else { 1_000_001 };
        // Rounded up, so that a whole number of microseconds in counts converts exactly.
        CountsToUs { factor: ((1u128 << 64) * 1_000_000).div_ceil(hz as u128) as u64 }
    }

    /// The factor, to keep in an atomic word (see [`Self::from_factor`]).
    pub const fn factor(self) -> u64 {
        self.factor
    }

    /// The converter whose [`Self::factor`] this was.
    pub const fn from_factor(factor: u64) -> CountsToUs {
        CountsToUs { factor }
    }

    /// Whole microseconds in `counts`: the exact figure rounded down, or one more when the exact
    /// figure lies within `counts / 2^64` of the next whole microsecond (the factor is rounded
    /// up): never off by more than one.
    #[inline(always)]
    pub const fn us(self, counts: u64) -> u64 {
        ((counts as u128 * self.factor as u128) >> 64) as u64
    }
}

/// The bucket of a wait of `us` microseconds.
#[inline(always)]
pub const fn bucket_of_us(us: u64) -> usize {
    let bits = (u64::BITS - us.leading_zeros()) as usize;
    if bits < WAIT_BUCKETS - 1 { bits } else { WAIT_BUCKETS - 1 }
}

/// Counts by leading zeros: what the dispatch path keeps, one counter per possible
/// `us.leading_zeros()` (0 to 64), so it needs no subtraction or clamp; the report folds them
/// into the [`WAIT_BUCKETS`] buckets with [`fold_leading_zeros`].
pub const LEADING_ZEROS_COUNTS: usize = u64::BITS as usize + 1;

/// The counter of a wait of `us` microseconds among the [`LEADING_ZEROS_COUNTS`].
#[inline(always)]
pub const fn leading_zeros_index(us: u64) -> usize {
    us.leading_zeros() as usize
}

/// The histogram from counts by leading zeros.
pub fn fold_leading_zeros(counts: &[u64; LEADING_ZEROS_COUNTS]) -> [u64; WAIT_BUCKETS] {
    let mut buckets = [0; WAIT_BUCKETS];
    for (zeros, &count) in counts.iter().enumerate() {
        let bits = u64::BITS as usize - zeros;
        buckets[bits.min(WAIT_BUCKETS - 1)] += count;
    }
    buckets
}

/// The waits a bucket holds, in microseconds: `[low, high)`, `high` = `u64::MAX` for the last.
pub const fn bucket_range_us(bucket: usize) -> (u64, u64) {
    let low = if bucket == 0 { 0 } else { 1u64 << (bucket - 1) };
    let high = if bucket >= WAIT_BUCKETS - 1 { u64::MAX } else { 1u64 << bucket };
    (low, high)
}

/// The mean wait in microseconds (with fractions) of `count` waits that took `total_counts`
/// counts together; 0 with no waits.
pub fn mean_us(total_counts: u64, count: u64, counter_hz: u64) -> f64 {
    if count == 0 || counter_hz == 0 {
        return 0.0;
    }
    total_counts as f64 * 1e6 / counter_hz as f64 / count as f64
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::{prop_assert, proptest};

    #[test]
    fn buckets_are_powers_of_two_microseconds() {
        assert_eq!(bucket_of_us(0), 0);
        assert_eq!(bucket_of_us(1), 1);
        assert_eq!(bucket_of_us(2), 2);
        assert_eq!(bucket_of_us(3), 2);
        assert_eq!(bucket_of_us(4), 3);
        assert_eq!(bucket_of_us(1000), 10, "a 1 ms slice: [512, 1024) us");
        assert_eq!(bucket_of_us(1024), 11);
        assert_eq!(bucket_of_us(1 << 17), WAIT_BUCKETS - 1);
        assert_eq!(bucket_of_us(u64::MAX), WAIT_BUCKETS - 1);
        assert_eq!(bucket_range_us(0), (0, 1));
        assert_eq!(bucket_range_us(10), (512, 1024));
        assert_eq!(bucket_range_us(WAIT_BUCKETS - 1), (1 << 17, u64::MAX));
    }

    #[test]
    fn counts_become_microseconds_on_every_board() {
        // QEMU virt (62.5 MHz), a Pi 4 (54 MHz), -cpu max (1 GHz).
        let virt = CountsToUs::new(62_500_000);
        assert_eq!(virt.us(62_500), 1000);
        assert_eq!(virt.us(62), 0);
        assert_eq!(virt.us(63), 1);
        assert_eq!(CountsToUs::new(54_000_000).us(54_000_000), 1_000_000);
        assert_eq!(CountsToUs::new(1_000_000_000).us(1500), 1);
        assert_eq!(CountsToUs::new(1_000).us(5), 4, "a counter of 1 MHz or slower: about a tick a microsecond");
        assert_eq!(mean_us(62_500 * 3, 2, 62_500_000), 1500.0);
        assert_eq!(mean_us(123, 0, 62_500_000), 0.0);
    }

    #[test]
    fn counts_by_leading_zeros_fold_into_the_buckets() {
        let mut counts = [0u64; LEADING_ZEROS_COUNTS];
        for us in [0, 0, 1, 3, 1000, 3000, 3001, 1 << 20, u64::MAX] {
            counts[leading_zeros_index(us)] += 1;
        }
        let mut expected = [0u64; WAIT_BUCKETS];
        expected[0] = 2;
        expected[1] = 1;
        expected[2] = 1;
        expected[10] = 1;
        expected[12] = 2;
        expected[WAIT_BUCKETS - 1] = 2;
        assert_eq!(fold_leading_zeros(&counts), expected);
    }

    proptest! {
        /// The multiply-high equals the exact division or is one above it, and the bucket
        /// holds the wait.
        #[test]
        fn conversion_and_bucket_agree_with_the_definition(counts in 0u64..(1 << 48), hz_index in 0usize..3) {
            let hz = [54_000_000u64, 62_500_000, 1_000_000_000][hz_index];
            let exact = beamcore_counter_time::counts_to_us(counts, hz);
            let us = CountsToUs::new(hz).us(counts);
            prop_assert!(us == exact || us == exact + 1, "{} counts at {} Hz: {} us, exactly {}", counts, hz, us, exact);
            let (low, high) = bucket_range_us(bucket_of_us(us));
            prop_assert!(low <= us && us < high);
            let mut counts = [0u64; LEADING_ZEROS_COUNTS];
            counts[leading_zeros_index(us)] = 1;
            prop_assert!(fold_leading_zeros(&counts)[bucket_of_us(us)] == 1);
        }
    }
}
