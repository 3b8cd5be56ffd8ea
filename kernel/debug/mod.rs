//! Debugging aids the kernel carries itself: its table of function names and the backtraces
//! it prints on a panic, an unexpected exception and a process's fault or panic
//! (docs/debugging.md). The table and the frame walk are pure and tested on the host; taking a
//! backtrace of the running core is bare-metal only.

pub mod symbols;
pub mod unwind;

#[cfg(target_os = "none")]
pub mod backtrace;
