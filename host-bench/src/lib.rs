//! Host benchmarks of beamcore's pure code, measured with criterion: `benches/deque.rs` compares
//! the kernel's Chase-Lev deque with crossbeam-deque. This library is empty: cargo needs one
//! library or binary target in a package, and the benchmarks need none.
//!
//! Run: `cargo bench -p beamcore-host-bench --target <host triple>`, or
//! `make bench BENCH=deque.host`, which also records the figures in `bench/results.json`.

#![no_std]
#![forbid(unsafe_code)]
