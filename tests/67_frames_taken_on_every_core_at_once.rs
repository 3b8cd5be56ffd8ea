//! Every core takes frames at the same time: a core whose cache is empty reserves a run of
//! never-used frames from the pool in one step and hands them out without the pool's lock
//! (`mm::frames`), so this is where two cores could be handed the same frame, or the pool's
//! count of what is left could drift.
//!
//! Each core takes 400 frames at once (more than six runs), all cores released together, and
//! writes its number and the frame's index into each. Every frame must be page-aligned, be
//! handed out once across all cores, and still hold what its core wrote when all are done;
//! the pool's available bytes must fall by exactly what was taken and, once every frame is
//! given back, return to what they were.
//! qemu-test: configs=a72-smp4,a72-smp8,gicv3-smp16
//! qemu-test: expect=^test: \d+ frames taken on \d+ cores at once, each once
//! qemu-test: forbid=PANIC

#![no_std]
#![no_main]

extern crate alloc;

use alloc::vec::Vec;
use core::sync::atomic::{AtomicUsize, Ordering};

use beamcore::arch::context;
use beamcore::mm::frames;
use beamcore::mm::layout::PAGE_BYTES;
use beamcore::{ExitCode, println, smp};
use beamcore_apps::ensure;

const PER_CORE: usize = 400;
const MOST_CORES: usize = 16;

/// The frames each core took (0: none).
static TAKEN: [[AtomicUsize; PER_CORE]; MOST_CORES] = [const { [const { AtomicUsize::new(0) }; PER_CORE] }; MOST_CORES];
/// Cores that have arrived at the start, and allocations that failed.
static ARRIVED: AtomicUsize = AtomicUsize::new(0);
static FAILED: AtomicUsize = AtomicUsize::new(0);

/// What core `core` writes into its `i`th frame.
fn tag(core: usize, i: usize) -> usize {
    core << 32 | i
}

/// One core's share: wait for every core, then take PER_CORE frames as fast as it can.
fn take(core: usize) {
    // ORDERING: AcqRel / Acquire: only a start line; what the cores share is the pool, whose
    // own lock and per-core caches are what is tested.
    ARRIVED.fetch_add(1, Ordering::AcqRel);
    let cores = smp::cores_online();
    let mut spins = 0u64;
    while ARRIVED.load(Ordering::Acquire) < cores && spins < 100_000_000 {
        core::hint::spin_loop();
        spins += 1;
    }
    context::on_kernel_stack(|| {
        for (i, slot) in TAKEN[core].iter().enumerate() {
            match frames::allocate() {
                Ok(frame) => {
                    // SAFETY: a frame just handed out: RAM, identity-mapped read-write, this
                    // core's alone until it is given back.
                    unsafe { (frame as *mut usize).write(tag(core, i)) };
                    // ORDERING: Relaxed: read by main after run_on_all_and_wait, whose
                    // Release/Acquire count orders every share's writes before it returns.
                    slot.store(frame, Ordering::Relaxed);
                }
                Err(_) => {
                    FAILED.fetch_add(1, Ordering::Relaxed);
                }
            }
        }
    });
}

beamcore::entry!(main);

fn main() -> ExitCode {
    let cores = smp::cores_online();
    ensure!(cores <= MOST_CORES, "at most {MOST_CORES} cores, not {cores}");
    let before = frames::available_bytes();
    ensure!(smp::run_on_all_and_wait(take).is_ok(), "could not run on every core");
    ensure!(FAILED.load(Ordering::Relaxed) == 0, "{} allocations failed", FAILED.load(Ordering::Relaxed));
    let mut all: Vec<usize> = Vec::with_capacity(cores * PER_CORE);
    for (core, taken) in TAKEN.iter().enumerate().take(cores) {
        for (i, frame) in taken.iter().enumerate() {
            let frame = frame.load(Ordering::Relaxed);
            ensure!(frame != 0 && frame % PAGE_BYTES == 0, "core {core}'s frame {i} is {frame:#x}");
            // SAFETY: a frame this test holds: RAM, identity-mapped, written by its core.
            let seen = unsafe { (frame as *const usize).read() };
            ensure!(
                seen == tag(core, i),
                "core {core}'s frame {i} at {frame:#x} holds {seen:#x}: another core wrote it"
            );
            all.push(frame);
        }
    }
    all.sort_unstable();
    let distinct = all.windows(2).all(|pair| pair[0] != pair[1]);
    ensure!(distinct, "a frame was handed out twice");
    let taken_bytes = all.len() * PAGE_BYTES;
    let after = frames::available_bytes();
    ensure!(before - after == taken_bytes, "available fell by {} bytes for {taken_bytes} taken", before - after);
    context::on_kernel_stack(|| all.iter().for_each(|&frame| frames::free(frame)));
    let back = frames::available_bytes();
    ensure!(back == before, "available {back} bytes after every frame came back, {before} before");
    println!("test: {} frames taken on {cores} cores at once, each once", all.len());
    ExitCode::Success
}
