//! The balancer on 8 cores: `imbalanced` (everything spawned on core 0) spreads to every core
//! with the busiest within 1.5x the mean, and `mixed` keeps every rule (bound processes stay,
//! limits hold), under the default strategy and thresholds.
//! qemu-test: configs=a72-smp8
//! qemu-test: qemu-args=-icount shift=0,sleep=off
//! qemu-test: variants=workload=imbalanced;workload=mixed
//! qemu-test: forbid=PANIC
//! qemu-test: timeout=120

#![no_std]
#![no_main]

use beamcore::ExitCode;

fn main() -> ExitCode {
    beamcore_apps::testing::run_configured_and_check()
}

beamcore::entry!(main, settings = beamcore_apps::config::ARGS);
