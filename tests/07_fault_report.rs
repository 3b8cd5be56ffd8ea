//! An unexpected exception in kernel code (a load from unmapped memory) prints its class, ESR, ELR, FAR and
//! the registers, then a PANIC line, and QEMU exits non-zero.
//! qemu-test: configs=a72-smp4,el2-smp4
//! qemu-test: exit=1
//! qemu-test: expect=^exception: Synchronous CurrentElSpx on core 1: data abort \(same EL\) \(ESR_EL1=0x9[0-9a-f]{7} EC=0x25
//! qemu-test: expect=^  translation fault, read access$
//! qemu-test: expect=FAR=0x0000000100000040
//! qemu-test: expect=^  x00=0x[0-9a-f]{16} x01=
//! qemu-test: expect=^PANIC core 1: unexpected exception: data abort \(same EL\)$

#![no_std]
#![no_main]

extern crate alloc;

use beamcore::{ExitCode, println};

fn fault_in_kernel() -> ExitCode {
    println!("test: loading from unmapped 0x100000040");
    // SAFETY: none: this read is meant to fault; the kernel must report it and exit.
    let value = unsafe { (0x1_0000_0040 as *const u64).read_volatile() };
    println!("test failed: read {value:#x} from unmapped memory");
    ExitCode::Failure(1)
}

/// Runs the faulting code as a kernel job on core 1 (scheduler context, not a process), where
/// a fault is the kernel's own and must end the run.
fn main() -> ExitCode {
    beamcore_apps::testing::run_as_kernel_job(1, || {
        let _ = fault_in_kernel();
    })
}

beamcore::entry!(main);
