//! Kernel code is read-only: a store into `.text` takes a permission fault.
//! qemu-test: configs=a72-smp4
//! qemu-test: exit=1
//! qemu-test: expect=^exception: Synchronous CurrentElSpx on core 1: data abort \(same EL\)
//! qemu-test: expect=^  permission fault, write access$
//! qemu-test: expect=^PANIC core 1: unexpected exception: data abort \(same EL\)$

#![no_std]
#![no_main]

extern crate alloc;

use beamcore::{ExitCode, println};

fn fault_in_kernel() -> ExitCode {
    let target = fault_in_kernel as *const () as *mut u32;
    println!("test: storing to .text at {:#x}", target as usize);
    // SAFETY: none: the store is meant to fault (.text is mapped read-only).
    unsafe { target.write_volatile(0) };
    println!("test failed: wrote to kernel code");
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
