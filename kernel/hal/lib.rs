//! beamcore's hardware layer, the bottom of the kernel's stack of crates: everything that names
//! an AArch64 register or instruction, the locks, the device drivers, the boards, where the
//! running image lies, time from the system counter, and the backtraces the kernel prints.
//!
//! It names no crate above it (memory, cores, scheduler, kernel): where it must call up (an
//! IRQ, a process's fault, the way down on a kernel fault, the running process's stack for a
//! backtrace) the layer above registers a function at boot (`arch::exception::set_handlers`,
//! `arch::exception::set_fatal`, `debug::backtrace::set_process_stack_lookup`). docs/layout.md
//! draws the stack.

#![no_std]
#![deny(unsafe_op_in_unsafe_fn)]
#![warn(clippy::undocumented_unsafe_blocks, clippy::missing_safety_doc)]

pub mod arch;
pub mod board;
pub mod debug;
pub mod drivers;
pub mod ids;
pub mod layout;
pub mod sync;
pub mod time;

/// The machine's description (crates/platform): what the boards and drivers are built from.
pub use beamcore_platform as platform;
/// The machine as discovered at boot (beside the module of the same name: a function and a
/// module live in different namespaces).
pub use board::platform;
