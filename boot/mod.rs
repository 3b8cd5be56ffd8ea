//! The first Rust code a core runs: from the entry assembly in `boot.S` to the kernel proper.
//!
//! `boot.S` leaves each core at EL1 with FP/SIMD enabled, a boot stack, exception vectors and
//! the MMU still off. The boot core then calls [`boot_core_entry`] with the loader's x0 and
//! the exception level it was entered at; secondaries call [`secondary_core_entry`] with their
//! logical core id.

use crate::mm::layout::{BOOT_STACK_STRIDE_BYTES, MAX_CORES};

core::arch::global_asm!(
    ".equ BOOT_STACK_STRIDE, {stride}",
    ".equ MAX_CORES, {max_cores}",
    include_str!("boot.S"),
    stride = const BOOT_STACK_STRIDE_BYTES,
    max_cores = const MAX_CORES,
);

/// Rust entry of the boot core.
///
/// # Safety
/// Called exactly once, by `_start`, on the boot core, with `.bss` zeroed and a valid stack.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn boot_core_entry(loader_x0: u64, entry_el: u64) -> ! {
    // SAFETY: forwarded contract: first and only call on the boot core.
    unsafe { crate::kernel_init::boot_core(loader_x0, entry_el as u8) }
}

/// Rust entry of a secondary core.
///
/// # Safety
/// Called once per secondary core, by `_secondary_start`, with that core's own boot stack and
/// `core_id` < `MAX_CORES`, after the boot core has built the page tables.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn secondary_core_entry(core_id: u64, entry_el: u64) -> ! {
    // SAFETY: forwarded contract.
    unsafe { crate::kernel_init::secondary_core(core_id as usize, entry_el as u8) }
}

unsafe extern "C" {
    /// PSCI CPU_ON entry point (boot.S).
    pub fn _secondary_start();
    /// Spin-table entry point (boot.S), for boards without PSCI.
    pub fn _spin_table_start();
}
