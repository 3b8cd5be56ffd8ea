//! A core that goes offline gives its frames at hand (its cache and its run of never-used
//! frames, `mm::frames`) to the pool, so that nothing of the pool waits for a core that is off.
//!
//! Every core takes 100 frames and gives them back, so each holds some at hand; cores 1..N-1
//! go offline, each giving back what it held (`sched::frames_released` grows at every leave);
//! then core 0, alone online, takes frames until none is left. At that point the pool must count
//! none available: a frame still held by an offline core would be counted but out of reach.
//! Every frame comes back, and the cores come back online.
//! qemu-test: configs=a72-smp4,gicv3-smp8
//! qemu-test: expect=^test: \d+ cores offline gave back \d+ frames; core 0 alone took all \d+ frames the pool had$
//! qemu-test: forbid=PANIC

#![no_std]
#![no_main]

extern crate alloc;

use alloc::vec::Vec;

use beamcore::arch::context;
use beamcore::mm::frames;
use beamcore::mm::layout::PAGE_BYTES;
use beamcore::{ExitCode, println, sched, smp};
use beamcore_apps::ensure;

const CHURN: usize = 100;

/// One core's share: take CHURN frames, then give them back (they stay at hand here).
fn churn(_core: usize) {
    context::on_kernel_stack(|| {
        let mut taken = [0usize; CHURN];
        for frame in taken.iter_mut() {
            *frame = frames::allocate().unwrap_or(0);
        }
        for &frame in taken.iter().filter(|&&frame| frame != 0) {
            frames::free(frame);
        }
    });
}

beamcore::entry!(main);

fn main() -> ExitCode {
    let cores = smp::cores_online();
    ensure!(cores >= 2, "needs at least two cores");
    ensure!(smp::run_on_all_and_wait(churn).is_ok(), "could not run on every core");
    let mut released = sched::frames_released();
    for core in 1..cores {
        ensure!(sched::take_offline(core).is_ok(), "core {core} did not go offline");
        let now = sched::frames_released();
        ensure!(now > released, "core {core} went offline holding no frames, or kept them");
        released = now;
    }
    let available = frames::available_bytes() / PAGE_BYTES;
    let mut all: Vec<usize> = Vec::with_capacity(available + 64);
    let left = context::on_kernel_stack(|| {
        while all.len() < all.capacity() {
            match frames::allocate() {
                Ok(frame) => all.push(frame),
                Err(_) => break,
            }
        }
        frames::available_bytes() / PAGE_BYTES
    });
    ensure!(left == 0, "out of frames with {left} still counted available: held where core 0 cannot take them");
    ensure!(all.len() >= available, "took {} frames of the {available} available", all.len());
    context::on_kernel_stack(|| all.iter().for_each(|&frame| frames::free(frame)));
    let back = frames::available_bytes() / PAGE_BYTES;
    ensure!(back >= available, "{back} frames available after all came back, {available} before");
    for core in 1..cores {
        ensure!(sched::bring_online(core).is_ok(), "core {core} did not come back");
    }
    println!(
        "test: {} cores offline gave back {} frames; core 0 alone took all {} frames the pool had",
        cores - 1,
        sched::frames_released(),
        all.len()
    );
    ExitCode::Success
}
