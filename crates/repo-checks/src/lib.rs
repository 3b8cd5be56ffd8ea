//! Checks of the repository as a whole, run on the host by `cargo test` (`make test-host`):
//! they read sources and documents rather than test one crate's code, so they live in a
//! package of their own, with nothing in its library. Its tests:
//!
//! - `ordering_notes`: every non-Relaxed atomic and every barrier in the sources has its
//!   `// ORDERING:` note;
//! - `readme_example`: README.md shows the API example exactly as tests/26 runs it;
//! - `kill_model` (only with `--cfg loom`): a loom model of the kernel's kill protocol against a
//!   slot's reuse, on a copy of the protocol;
//! - `link_exit_model` (only with `--cfg loom`): loom models of links, exit signals, monitors and
//!   `demonitor` against a process's end (kernel/sched/msg/signals.rs), with weakened variants that
//!   loom must catch.

#![no_std]
#![forbid(unsafe_code)]
