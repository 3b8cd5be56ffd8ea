//! Each boot stack has an unmapped guard page below it: touching it faults (translation
//! fault at the guard address) instead of silently corrupting the neighbouring stack.
//! qemu-test: configs=a72-smp4
//! qemu-test: exit=1
//! qemu-test: expect=^test: writing to core 1's stack guard page at 0x[0-9a-f]+$
//! qemu-test: expect=^  translation fault, write access$
//! qemu-test: expect=^PANIC core 1: unexpected exception: data abort \(same EL\)$

#![no_std]
#![no_main]

extern crate alloc;

use beamcore::mm::layout;
use beamcore::{ExitCode, println};

fn fault_in_kernel() -> ExitCode {
    let (guard, stack_start, _) = layout::image().boot_stack(1);
    // The byte just below the stack is the top of the guard page.
    let target = (stack_start - 8) as *mut u64;
    println!("test: writing to core 1's stack guard page at {guard:#x}");
    // SAFETY: none: the store is meant to fault (the guard page is unmapped).
    unsafe { target.write_volatile(0) };
    println!("test failed: the guard page is writable");
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
