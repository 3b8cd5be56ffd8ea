//! Every core makes process slots at the same time: the table hands each core chunks of slots
//! of its own and makes them there, with no lock of its own (`proc::table`), so this is where
//! two cores could be handed the same slot, or a pid could name a block not yet made.
//!
//! One spawner bound to each core spawns 300 children on its own core, none of which ends until
//! every child has been spawned, so every spawn takes a slot no process has used. Every child
//! must get a slot of its own (its pid's slot index unique across all cores), must be alive
//! and found by its pid from another core, and must run exactly once.
//! qemu-test: configs=a72-smp4,a72-smp8,gicv3-smp16
//! qemu-test: expect=^test: \d+ slots made on \d+ cores at once, each once
//! qemu-test: forbid=PANIC

#![no_std]
#![no_main]

extern crate alloc;

use alloc::vec::Vec;
use core::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use beamcore::sched::{self, Message, Pid, SpawnOptions};
use beamcore::{ExitCode, println, smp};
use beamcore_apps::ensure;

const PER_CORE: usize = 300;
const MOST_CORES: usize = 16;
const MOST: usize = PER_CORE * MOST_CORES;

/// How many times each child (by its number) ran.
static RAN: [AtomicUsize; MOST] = [const { AtomicUsize::new(0) }; MOST];
/// Children spawned so far, on every core.
static SPAWNED: AtomicUsize = AtomicUsize::new(0);
/// Set once the test has looked every child up: the children may end then.
static RELEASE: AtomicBool = AtomicBool::new(false);

fn main() -> ExitCode {
    let cores = smp::cores_online().min(MOST_CORES);
    let me = sched::self_pid().expect("main is a process");
    for core in 0..cores {
        let spawner = sched::spawn_with(SpawnOptions::default().bound_to(core), move || {
            let mut pids = Vec::with_capacity(PER_CORE);
            for n in 0..PER_CORE {
                let child = core * PER_CORE + n;
                let pid = sched::spawn_with(SpawnOptions::default().bound_to(core), move || {
                    RAN[child].fetch_add(1, Ordering::Relaxed);
                    while !RELEASE.load(Ordering::Acquire) {
                        sched::yield_now();
                    }
                })
                .expect("spawn a child");
                SPAWNED.fetch_add(1, Ordering::Relaxed);
                pids.push(pid);
            }
            for pid in pids {
                let _ = sched::send(me, Message::new(pid));
            }
        });
        ensure!(spawner.is_ok(), "spawn the spawner of core {core}: {spawner:?}");
    }
    let total = cores * PER_CORE;
    let mut pids: Vec<Pid> = Vec::with_capacity(total);
    while pids.len() < total {
        let reported = sched::receive_timeout(20_000_000).map(Message::take::<Pid>);
        let Some(Ok(pid)) = reported else {
            ensure!(false, "only {} of {total} children were reported", pids.len());
            return ExitCode::Failure(1);
        };
        pids.push(pid);
    }
    ensure!(SPAWNED.load(Ordering::Relaxed) == total, "spawned {} of {total}", SPAWNED.load(Ordering::Relaxed));
    // Every child alive (none may end before RELEASE), so every slot was taken by one at once.
    let mut slots: Vec<u32> = pids.iter().map(|pid| pid.index()).collect();
    slots.sort_unstable();
    let before = slots.len();
    slots.dedup();
    ensure!(slots.len() == before, "{} children shared a slot with another", before - slots.len());
    for pid in &pids {
        ensure!(sched::is_alive(*pid), "child {pid:?} is not found by its pid");
    }
    RELEASE.store(true, Ordering::Release);
    for pid in &pids {
        while sched::is_alive(*pid) {
            sched::yield_now();
        }
    }
    for (child, ran) in RAN.iter().enumerate().take(total) {
        let ran = ran.load(Ordering::Relaxed);
        ensure!(ran == 1, "child {child} ran {ran} times");
    }
    println!("test: {total} slots made on {cores} cores at once, each once");
    ExitCode::Success
}

beamcore::entry!(main);
