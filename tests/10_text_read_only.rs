//! Kernel code is read-only: a store into `.text` takes a permission fault.
//! qemu-test: configs=a72-smp4
//! qemu-test: exit=1
//! qemu-test: expect=^exception: Synchronous CurrentElSpx on core 0: data abort \(same EL\)
//! qemu-test: expect=^  permission fault, write access$
//! qemu-test: expect=^PANIC core 0: unexpected exception: data abort \(same EL\)$

#![no_std]
#![no_main]

use beamcore::{ExitCode, println};

fn main() -> ExitCode {
    let target = main as *const () as *mut u32;
    println!("test: storing to .text at {:#x}", target as usize);
    // SAFETY: none: the store is meant to fault (.text is mapped read-only).
    unsafe { target.write_volatile(0) };
    println!("test failed: wrote to kernel code");
    ExitCode::Failure(1)
}

beamcore::entry!(main);
