//! The table's host tests (`cargo test` in crates/timer-heap/): unit tests of each promise, and
//! a property test against a `BTreeMap` model.

mod model;
mod unit;

/// A fixed pseudo-random sequence (xorshift64), so the larger tests need no `rand` and repeat.
pub(crate) struct Xorshift(pub(crate) u64);

impl Xorshift {
    pub(crate) fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}
