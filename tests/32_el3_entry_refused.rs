//! Entered at EL3 (QEMU `virt,secure=on` starts every core at the kernel's entry point), the
//! kernel refuses to run: exactly one core prints one line saying why, every other core parks,
//! and the run ends with status 3 through semihosting. Before this was checked, every core ran
//! the boot path at once (a panic in the device-tree parser, interleaved `PANIC core` lines or
//! a silent hang).
//! qemu-test: configs=secure-smp4
//! qemu-test: exit=3
//! qemu-test: timeout=20
//! qemu-test: expect-count=1 ^boot: entered at EL3; beamcore runs at EL2 or EL1 and does not drop from EL3 \(boot without secure=on\)$
//! qemu-test: forbid=PANIC
//! qemu-test: forbid=^beamcore .* entered at
//! qemu-test: forbid=^test

#![no_std]
#![no_main]

use beamcore::{ExitCode, println};

/// Never reached when the refusal works: the kernel must stop before any of its bring-up.
fn main() -> ExitCode {
    println!("test failed: the program's main ran after an entry at EL3");
    ExitCode::Failure(1)
}

beamcore::entry!(main);
