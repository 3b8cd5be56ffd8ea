//! An infallible allocation that cannot be met ends in a PANIC naming the size (Rust's
//! allocation-error path), never a hang.
//! qemu-test: configs=a72-smp4
//! qemu-test: exit=1
//! qemu-test: expect=^PANIC core 0: memory allocation of 1073741824 bytes failed

#![no_std]
#![no_main]

extern crate alloc;

use beamcore::{ExitCode, println};

fn main() -> ExitCode {
    let huge: alloc::vec::Vec<u8> = alloc::vec::Vec::with_capacity(1 << 30);
    println!("test failed: allocated {} bytes", huge.capacity());
    ExitCode::Failure(1)
}

beamcore::entry!(main);
