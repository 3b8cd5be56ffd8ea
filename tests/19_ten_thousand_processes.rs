//! 10,000 processes spawned across 4 cores and ended: every one runs exactly once. Spawning
//! that finds the stack pool momentarily exhausted gets an error and retries after yielding.
//! qemu-test: configs=a72-smp4
//! qemu-test: forbid=PANIC
//! qemu-test: timeout=120

#![no_std]
#![no_main]

use core::sync::atomic::{AtomicU32, AtomicUsize, Ordering};

use beamcore::sched::{self, SpawnError, SpawnOptions};
use beamcore::{ExitCode, println, smp};
use beamcore_apps::ensure;

const PROCESSES: usize = 10_000;
static RUNS: [AtomicU32; PROCESSES] = [const { AtomicU32::new(0) }; PROCESSES];
static FINISHED: AtomicUsize = AtomicUsize::new(0);

fn main() -> ExitCode {
    let cores = smp::cores_online();
    let mut retries = 0u32;
    #[allow(clippy::needless_range_loop)] // i is also the process's identity, moved into it
    for i in 0..PROCESSES {
        let options = SpawnOptions::default().stack_bytes(4096).on_core(i % cores);
        loop {
            match sched::spawn_with(options, move || {
                RUNS[i].fetch_add(1, Ordering::Relaxed);
                FINISHED.fetch_add(1, Ordering::Release);
            }) {
                Ok(_) => break,
                Err(SpawnError::OutOfMemory(_)) => {
                    retries += 1;
                    sched::yield_now();
                }
                Err(error) => ensure!(false, "spawn {i}: {error}"),
            }
        }
    }
    while FINISHED.load(Ordering::Acquire) < PROCESSES {
        sched::yield_now();
    }
    // A process's function has returned before its scheduler ends it: wait for the ends too.
    while sched::process_count() > 1 {
        sched::yield_now();
    }
    for (i, runs) in RUNS.iter().enumerate() {
        let runs = runs.load(Ordering::Relaxed);
        ensure!(runs == 1, "process {i} ran {runs} times");
    }
    let completed: u64 = (0..cores).map(|c| sched::core_stats(c).completed.load(Ordering::Relaxed)).sum();
    ensure!(completed as usize >= PROCESSES, "{completed} completions counted");
    let spread: heapless::Vec<u64, { beamcore::mm::layout::MAX_CORES }> =
        (0..cores).map(|c| sched::core_stats(c).completed.load(Ordering::Relaxed)).collect();
    ensure!(spread.iter().all(|&n| n > 0), "a core completed nothing: {spread:?}");
    println!(
        "test: {PROCESSES} processes ran exactly once each across {cores} cores {spread:?}; {retries} spawn retries after OutOfMemory"
    );
    ExitCode::Success
}

beamcore::entry!(main);
