//! AArch64 (ARMv8-A) at EL1: cpu registers, exceptions, MMU, PSCI and the generic timer.

pub mod context;
pub mod cpu;
pub mod exception;
pub mod mmu;
pub mod psci;
pub mod timer;
