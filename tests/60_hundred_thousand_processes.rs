//! 100,000 processes alive at once in 1 GiB (200,000 on the Pi 4's 2 GiB): `workload=hold`
//! spawns them over the cores, each blocks in `receive`; then each is sent a token and must
//! answer it exactly once and end. An idle process costs at most 5 KiB (its control block, its
//! one mapped stack page, its share of the tables), measured as the RAM in use at the peak less
//! before, over the count.
//! qemu-test: configs=a72-smp4
//! qemu-test: memory=1G
//! qemu-test: append=workload=hold processes=100000
//! qemu-test: forbid=PANIC
//! qemu-test: timeout=300

#![no_std]
#![no_main]

use beamcore::{ExitCode, println, sched};
use beamcore_apps::{ensure, workloads};

/// Most RAM an idle process may cost.
const MAX_BYTES_PER_PROCESS: u64 = 5 * 1024;

fn main() -> ExitCode {
    sched::arm_progress_watchdog(30);
    let wanted = beamcore_apps::config::args().processes as u64;
    let outcome = workloads::run(beamcore_apps::config::args().workload);
    ensure!(outcome.ok, "hold failed: {}", outcome.detail);
    let Some(run) = workloads::last_hold() else {
        println!("test failed: the hold workload left no measurements");
        return ExitCode::Failure(1);
    };
    ensure!(run.peak == wanted, "peak {} processes, expected {wanted}", run.peak);
    ensure!(
        run.bytes_per_process <= MAX_BYTES_PER_PROCESS,
        "{} bytes per idle process, more than {MAX_BYTES_PER_PROCESS}",
        run.bytes_per_process
    );
    ensure!(sched::process_count() == 1, "{} processes left besides main", sched::process_count() - 1);
    println!("test: {}", outcome.detail);
    ExitCode::Success
}

beamcore::entry!(main, settings = beamcore_apps::config::ARGS);
