//! The first Rust code a core runs: from the entry assembly in `boot.S` to the kernel proper.
//!
//! `boot.S` leaves each core at EL1 with FP/SIMD enabled, a boot stack, exception vectors and
//! the MMU still off. The boot core then calls `boot_core_entry` with the loader's x0 and the
//! exception level it was entered at; secondaries call `secondary_core_entry` with their logical
//! core id. Both are the kernel crate's (its bring-up): this crate sits low in the kernel's stack
//! of crates (on the hardware layer only), and the assembly reaches up by symbol, as a C
//! kernel's start code calls its `main`.
//!
//! A core entered at EL3 does not get that far: `boot.S` parks all but one, and that one calls
//! [`el3_entry_refused`], which says why on the board's default UART and ends the run.

#![no_std]
#![deny(unsafe_op_in_unsafe_fn)]
#![warn(clippy::undocumented_unsafe_blocks, clippy::missing_safety_doc)]

use beamcore_hal::layout::{BOOT_STACK_STRIDE_BYTES, MAX_CORES};
use beamcore_hal::{board, drivers};

core::arch::global_asm!(
    ".equ BOOT_STACK_STRIDE, {stride}",
    ".equ MAX_CORES, {max_cores}",
    include_str!("boot.S"),
    stride = const BOOT_STACK_STRIDE_BYTES,
    max_cores = const MAX_CORES,
);

/// The one line printed when the kernel is entered at EL3 (QEMU `virt,secure=on`).
pub const EL3_REFUSAL: &str =
    "boot: entered at EL3; beamcore runs at EL2 or EL1 and does not drop from EL3 (boot without secure=on)";

/// QEMU's exit status after [`EL3_REFUSAL`] (semihosting builds); 3 for EL3, distinct from the
/// status 1 of a panic or failed test.
#[cfg(feature = "semihosting")]
pub const EL3_EXIT_STATUS: u32 = 3;

/// Entered at EL3: prints [`EL3_REFUSAL`] and exits with `EL3_EXIT_STATUS` (semihosting), or
/// parks this core (without semihosting; the other cores are parked already).
///
/// beamcore has no secure-world set-up to drop from EL3 with (SCR_EL3, secure GIC groups, a
/// PSCI implementation for the other cores), so it stops here with one clear line rather than
/// let every core run the boot path at once. The MMU is off, `.bss` is not zeroed and no heap
/// or console state exists: the board's default UART is written directly, without a lock.
///
/// # Safety
/// Called only by `boot.S`'s `el3_refuse`, on the single core it lets through, with a stack,
/// FP/SIMD untrapped and the MMU off; every other core is parked and touches no device.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn el3_entry_refused() -> ! {
    let base = board::DEFAULT_UART_BASE;
    board::init_uart_pins(base);
    // SAFETY: the board's console PL011 (MMU off: physical, device memory); the only core
    // running code (the others are parked, per the contract), so nothing else drives it.
    let uart = unsafe { drivers::pl011::Pl011::new(base) };
    if board::UART_NEEDS_INIT {
        uart.init(board::DEFAULT_UART_CLOCK_HZ, board::CONSOLE_BAUD);
    }
    uart.write_str(EL3_REFUSAL);
    uart.write_str("\n");
    uart.flush();
    #[cfg(feature = "semihosting")]
    {
        use qemu_exit::QEMUExit;
        qemu_exit::AArch64::new().exit(EL3_EXIT_STATUS)
    }
    #[cfg(not(feature = "semihosting"))]
    loop {
        aarch64_cpu::asm::wfe();
    }
}

unsafe extern "C" {
    /// PSCI CPU_ON entry point (boot.S).
    pub fn _secondary_start();
    /// Spin-table entry point (boot.S), for boards without PSCI.
    pub fn _spin_table_start();
}
