//! With one core there is no one to steal from: no steal is ever attempted, and the workload
//! still completes.
//! qemu-test: configs=a72-smp1
//! qemu-test: append=workload=imbalanced
//! qemu-test: forbid=PANIC

#![no_std]
#![no_main]

use beamcore::sched::telemetry;
use beamcore::{ExitCode, println};
use beamcore_apps::{ensure, workloads};

fn main() -> ExitCode {
    let outcome = workloads::imbalanced(50, 5);
    ensure!(outcome.ok, "{}", outcome.detail);
    let attempts = telemetry::total(|s| &s.steal_attempts);
    ensure!(attempts == 0, "{attempts} steal attempts on one core");
    println!("test: one core ran {} without a steal attempt", outcome.detail);
    ExitCode::Success
}

beamcore::entry!(main, settings = beamcore_apps::config::ARGS);
