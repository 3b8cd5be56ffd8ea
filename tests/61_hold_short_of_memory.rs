//! 100,000 processes do not fit in 128 MiB: `workload=hold` spawns until a spawn fails with
//! `OutOfMemory` (never a panic), reports the largest count it reached, and still messages,
//! hears from and ends every process it had. Then the kernel goes on: holding half as many
//! works.
//! qemu-test: configs=a72-smp4
//! qemu-test: append=workload=hold processes=100000
//! qemu-test: forbid=PANIC
//! qemu-test: timeout=120

#![no_std]
#![no_main]

use beamcore::sched::{self, SpawnError};
use beamcore::{ExitCode, println};
use beamcore_apps::{ensure, workloads};

fn main() -> ExitCode {
    sched::arm_progress_watchdog(30);
    let outcome = workloads::run(beamcore_apps::config::args().workload);
    ensure!(!outcome.ok, "100,000 processes fitted in 128 MiB: {}", outcome.detail);
    let Some(run) = workloads::last_hold() else {
        println!("test failed: the hold workload left no measurements");
        return ExitCode::Failure(1);
    };
    ensure!(matches!(run.spawn_error, Some(SpawnError::OutOfMemory(_))), "spawning stopped with {:?}", run.spawn_error);
    ensure!(run.peak > 10_000 && run.peak < 100_000, "peak of {} processes", run.peak);
    ensure!(run.answered == run.peak && run.all_ended, "{}", outcome.detail);
    ensure!(sched::process_count() == 1, "{} processes left besides main", sched::process_count() - 1);
    let half = workloads::hold(run.peak as usize / 2);
    ensure!(half.ok, "holding half as many afterwards failed: {}", half.detail);
    println!("test: {}; then {}", outcome.detail, half.detail);
    ExitCode::Success
}

beamcore::entry!(main, settings = beamcore_apps::config::ARGS);
