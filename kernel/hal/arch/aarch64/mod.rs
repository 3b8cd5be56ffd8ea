//! AArch64 (ARMv8-A) at EL1: cpu registers, exceptions, MMU, PSCI and the generic timer.

pub mod context;
pub mod cpu;
pub mod exception;
pub mod mmu;
pub mod psci;
pub mod timer;

// The kernel's `memcpy`, which the linker takes over compiler_builtins' weak one (memcpy.S says
// why it is worth its own loop).
core::arch::global_asm!(include_str!("memcpy.S"));
