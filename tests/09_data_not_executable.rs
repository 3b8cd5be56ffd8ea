//! Only kernel code is executable: jumping into a heap buffer holding a valid `ret`
//! instruction takes an instruction abort (permission fault) instead of running it.
//! qemu-test: configs=a72-smp4
//! qemu-test: exit=1
//! qemu-test: expect=^exception: Synchronous CurrentElSpx on core 1: instruction abort \(same EL\)
//! qemu-test: expect=^  permission fault, read access$
//! qemu-test: expect=^PANIC core 1: unexpected exception: instruction abort \(same EL\)$

#![no_std]
#![no_main]

extern crate alloc;

use beamcore::{ExitCode, println};

fn fault_in_kernel() -> ExitCode {
    const RET: u32 = 0xd65f_03c0;
    let code = alloc::boxed::Box::new([RET; 4]);
    let address = code.as_ptr() as usize;
    println!("test: calling heap address {address:#x}");
    // SAFETY: none: the call is meant to fault (heap memory is mapped never-executable).
    let function: extern "C" fn() = unsafe { core::mem::transmute(address) };
    function();
    println!("test failed: executed code from the heap");
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
