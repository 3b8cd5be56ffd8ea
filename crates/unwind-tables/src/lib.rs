//! Two readings of a function's unwind tables, for ending a process without unwinding it when
//! unwinding would run no code.
//!
//! The kernel ends a process by unwinding its stack (`kernel/sched/turn/unwind.rs`): every frame's
//! cleanups run, so what the process owned is freed. Most processes that end hold nothing that
//! needs dropping at that moment, and the DWARF unwinder costs tens of thousands of
//! instructions to find that out frame by frame. The kernel instead walks the frame records
//! (x29's chain) from where the process ends to its base and asks, per return address, two
//! questions these modules answer from the tables the unwinder itself reads:
//!
//! - [`lsda`]: does the calling function have a landing pad at that call? If none of them has,
//!   unwinding would run nothing, and ending the process at once is the same thing.
//! - [`frame_record`]: at that call, does the calling function's x29 point at its own frame
//!   record (the caller's x29, then the return address)? Only then is the next step of the
//!   walk the one the unwinder would take, whatever flags the code was built with.
//!
//! The answers depend on the image only, so the kernel keeps them per return address, in
//! [`call_sites`]' two-way cache.

#![cfg_attr(not(test), no_std)]
#![forbid(unsafe_code)]

pub mod call_sites;
pub mod compact;
pub mod frame_record;
pub mod lsda;
