//! Running out of heap is an error the caller sees, not a hang: fallible allocation returns
//! OutOfMemory, the memory comes back when freed, and the kernel carries on.
//! qemu-test: configs=a72-smp4
//! qemu-test: forbid=PANIC

#![no_std]
#![no_main]

extern crate alloc;

use alloc::vec::Vec;
use core::alloc::Layout;

use beamcore::mm::heap::{self, OutOfMemory};
use beamcore::{ExitCode, println};
use beamcore_apps::ensure;

const CHUNK: usize = 1 << 20;

fn main() -> ExitCode {
    let (_, free_before) = heap::usage();
    let layout = Layout::from_size_align(CHUNK, 4096).unwrap();
    let mut chunks = Vec::new();
    ensure!(chunks.try_reserve(1024).is_ok(), "bookkeeping vector");
    let error = loop {
        match heap::try_allocate(layout) {
            Ok(chunk) => chunks.push(chunk),
            Err(error) => break error,
        }
        ensure!(chunks.len() < 1024, "heap never ran out");
    };
    ensure!(error == OutOfMemory { requested_bytes: CHUNK }, "wrong error {error:?}");
    let taken = chunks.len();
    ensure!(taken * CHUNK + CHUNK > free_before / 2, "only {taken} MiB allocated of {} MiB free", free_before >> 20);
    // Built in place after the allocation, so the 4 MiB value never sits on this process's
    // stack: `try_box` of a value that size would need the value on the stack first, and how
    // much of it the optimiser elides changes with inlining.
    ensure!(heap::try_box_with(|| [0u8; 4 * CHUNK]).is_err(), "try_box_with succeeded on an exhausted heap");
    let mut huge: Vec<u8> = Vec::new();
    ensure!(huge.try_reserve(usize::MAX / 4).is_err(), "try_reserve of an impossible size succeeded");
    for chunk in chunks.drain(..) {
        // SAFETY: each chunk came from `try_allocate` with `layout` and is freed once.
        unsafe { alloc::alloc::dealloc(chunk.as_ptr(), layout) };
    }
    let (_, free_after) = heap::usage();
    ensure!(free_after + 64 * 1024 >= free_before, "heap did not recover: {free_after} of {free_before} bytes free");
    ensure!(heap::try_allocate(layout).is_ok(), "allocation after freeing failed");
    println!("test: {taken} MiB allocated, then OutOfMemory {{ requested_bytes: {CHUNK} }}; all freed and reusable");
    ExitCode::Success
}

beamcore::entry!(main);
