//! The deque's host tests: unit, property (proptest), stress (std threads), loom models (the
//! host benchmark against crossbeam-deque is `host-bench/`, with criterion).
//!
//! Outside loom: `cargo test` in crates/deque/. Loom: `RUSTFLAGS="--cfg loom" cargo test --release`
//! there (loom's atomics only work inside `loom::model`, so the other tests are off then).

#![forbid(unsafe_code)]

#[cfg(loom)]
mod loom_models;
#[cfg(not(loom))]
mod model;
#[cfg(not(loom))]
mod stress;
#[cfg(not(loom))]
mod unit;
