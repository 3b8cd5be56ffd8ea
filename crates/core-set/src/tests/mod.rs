//! The core sets' host tests (unit, and property tests against a `BTreeSet` model with
//! proptest): `cargo test` in crates/core-set/. In a folder of their own so lib.rs holds only
//! the sets.

mod unit;
