//! The programs that run on beamcore share this library: the demo workloads (`workload=`), their
//! bootargs, and what the in-QEMU tests share. None of it is in the kernel library: the kernel
//! (package `beamcore`, kernel/) schedules processes; what those processes do lives here.

#![no_std]

extern crate alloc;

pub mod config;
pub mod testing;
pub mod workloads;

/// The kernel, for the macros here (`ensure!`) to name from any crate.
#[doc(hidden)]
pub use beamcore as __kernel;
