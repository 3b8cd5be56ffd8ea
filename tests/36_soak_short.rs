//! A short soak: every workload (`hold` among them: 10,000 processes alive at once; `offline`,
//! cores 1-3 leaving and coming back) and a steal storm of 5,000 tiny processes, each under all
//! five victim strategies (65 runs), back to back in one boot on 4 cores, with the scheduler's
//! counters checked after every run (spawned = completed + alive: no process lost, none run to
//! its end twice). Under -icount, so the run is the same every time; `make soak` is the long
//! version under plain MTTCG (real concurrency).
//! qemu-test: configs=a72-smp4
//! qemu-test: qemu-args=-icount shift=0,sleep=off
//! qemu-test: append=soak_s=1 cooldown=0
//! qemu-test: expect=^soak: done on 4 cores: 65 runs, \d+ processes, [1-9]\d* steals moving \d+ processes, 0 lost, 0 duplicated, 0 failed runs$
//! qemu-test: forbid=PANIC
//! qemu-test: timeout=240

#![no_std]
#![no_main]

use beamcore::{ExitCode, println, sched, smp};
use beamcore_apps::{ensure, workloads};

fn main() -> ExitCode {
    let cores = smp::cores_online();
    sched::arm_progress_watchdog(30);
    let outcome = workloads::soak(u64::from(beamcore_apps::config::args().soak_s), 5_000);
    println!("soak: done on {cores} cores: {outcome}");
    ensure!(outcome.first_failure.is_none(), "{}", outcome.first_failure.unwrap_or_default());
    ensure!(outcome.steals > 0, "the soak stole nothing");
    println!(
        "test: {} runs, {} processes, {} steals; exactly once throughout",
        outcome.runs, outcome.processes, outcome.steals
    );
    ExitCode::Success
}

beamcore::entry!(main, settings = beamcore_apps::config::ARGS);
