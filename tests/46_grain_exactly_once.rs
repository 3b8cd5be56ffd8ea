//! The granularity experiment (`workload=grain`, `make bench BENCH=grain`) at both ends of its
//! sweep and under both policies the benchmarks compare: tasks of 1 us and of 100 us, all
//! spawned on core 0, each marking its own index; every task runs exactly once, every process
//! completes, and the balancer's rules hold (`beamcore_apps::testing::check_balancer_invariants`). The last
//! variant is the peers' policy (Go, Tokio): random victim, steal half, no cooldown, no
//! thresholds. Small totals (5-20 ms of work) keep it quick; the benchmark runs 120 ms.
//! qemu-test: configs=a72-smp4
//! qemu-test: qemu-args=-icount shift=0,sleep=off
//! qemu-test: variants=grain_ns=1000 grain_ms=5;grain_ns=100000 grain_ms=20;grain_ns=2000 grain_ms=10 strategy=random steal=half cooldown=0 min_steal=1 imbalance=0
//! qemu-test: append=workload=grain
//! qemu-test: expect=^test: grain with \S+ on 4 cores: \d+ tasks of \d+ ns spawned on core 0, 0 never ran, 0 ran twice
//! qemu-test: forbid=PANIC
//! qemu-test: timeout=120

#![no_std]
#![no_main]

use beamcore::ExitCode;

fn main() -> ExitCode {
    beamcore_apps::testing::run_configured_and_check()
}

beamcore::entry!(main, settings = beamcore_apps::config::ARGS);
