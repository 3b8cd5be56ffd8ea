//! The deque's host tests: unit, property (proptest), stress (std threads), loom models (the
//! host benchmark against crossbeam-deque is `host-bench/`, with criterion).
//!
//! Outside loom: `cargo test --lib --target x86_64-unknown-linux-gnu sched::deque`.
//! Loom: `RUSTFLAGS="--cfg loom" cargo test --lib --release --target x86_64-unknown-linux-gnu
//! sched::deque` (loom's atomics only work inside `loom::model`, so the other tests are off then).

#![forbid(unsafe_code)]

#[cfg(loom)]
mod loom_models;
#[cfg(not(loom))]
mod model;
#[cfg(not(loom))]
mod stress;
#[cfg(not(loom))]
mod unit;
