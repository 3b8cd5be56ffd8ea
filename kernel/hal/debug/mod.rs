//! Debugging aids the kernel carries itself: its table of function names and the backtraces
//! it prints on a panic, an unexpected exception and a process's fault or panic
//! (docs/debugging.md). The table's format and the frame walk are pure crates, tested on the
//! host (crates/kallsyms, crates/frame-walk); taking a backtrace of the running core and finding
//! the table in the image are the kernel's.

pub mod backtrace;
pub mod symbols;
pub use beamcore_frame_walk as unwind;
