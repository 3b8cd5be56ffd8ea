//! The workloads beyond the balancer's, each checking its own answer on 4 cores with real
//! parallelism (no -icount): nqueens (13-queens has 73,712 solutions; also split down to the
//! third queen, `queens_split=3`: 1,162 processes in a tree, as the simulator sizes it), uts (a
//! binomial unbalanced tree counted in parallel equals its sequential count), bang (300,000
//! messages from 300 senders, each sender's in order) and big (100 processes pinging each
//! other: 9,900 pings, as many pongs); every process completes exactly once.
//! qemu-test: configs=a72-smp4
//! qemu-test: variants=workload=nqueens;workload=nqueens queens_split=3;workload=uts;workload=bang;workload=big
//! qemu-test: forbid=PANIC
//! qemu-test: timeout=120

#![no_std]
#![no_main]

use beamcore::ExitCode;

fn main() -> ExitCode {
    beamcore::smp::arm_watchdog(60);
    beamcore_apps::testing::run_configured_and_check()
}

beamcore::entry!(main, settings = beamcore_apps::config::ARGS);
