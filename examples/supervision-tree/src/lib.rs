//! A supervision tree in the style of OTP, built from beamcore-otp's supervisors and generic
//! servers:
//!
//! ```text
//! root (one_for_one, 1 restart in 5 s)
//! ├── tally     a generic server, registered as "tally": hands out jobs, counts their results
//! ├── pool      (one_for_one, 100 restarts a second) 8 workers that crash at random
//! └── fragile   (one_for_one, 2 restarts in 10 s) flaky, a child that needs a device
//! ```
//!
//! - [`jobs`]: the work, numbered jobs with results known in advance, and the workers' PRNG;
//! - [`tally`]: the registered server; it re-issues the job of a worker that crashed;
//! - [`pool`]: the workers and their supervisor;
//! - [`fragile`]: the device, the child that cannot live without it, and its supervisor;
//! - [`tree`]: the root, which ties the three together.
//!
//! The program (src/main.rs) runs the jobs while the workers crash, causes one outage that the
//! fragile supervisor cannot ride out, and checks that the tree reacted as OTP's would.

#![no_std]

extern crate alloc;

pub mod fragile;
pub mod jobs;
pub mod pool;
pub mod tally;
pub mod tree;
