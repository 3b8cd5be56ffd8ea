//! Architecture support: everything that names an AArch64 register or instruction.

pub mod aarch64;

pub use aarch64::{context, cpu, exception, mmu, psci, timer};
