//! The balancer's rules hold for every strategy on every workload: each spawned process
//! completes exactly once (the workload checks), `imbalanced` leaves no core idle and keeps the
//! busiest core within 1.5x the mean, no process exceeds `max_migrations`, bound processes
//! never run elsewhere, no thief steals from one victim twice within `cooldown`, and with
//! `protect_max=on` no max-priority process moves (`beamcore_apps::testing::check_balancer_invariants`).
//! With the cooldown at its maximum (2^40 counts) thieves steal once per victim and
//! then wait: the run must still end, since a core never waits out a cooldown with IRQs masked.
//! `bounce` chases processes around the cores: the migration limit (default 100, and 10) must
//! be reached exactly, never passed.
//!
//! Runs under `-icount`: QEMU then gives every runnable core the same instruction budget in
//! turn, so work per core measures the scheduler, not how the host scheduled QEMU's threads
//! (with 4 vCPU threads on this 2-CPU host that alone skews per-core work by 2x).
//! qemu-test: configs=a72-smp4
//! qemu-test: qemu-args=-icount shift=0,sleep=off
//! qemu-test: variants=strategy=random workload=imbalanced;strategy=load workload=imbalanced;strategy=locality workload=imbalanced;strategy=p2c workload=imbalanced;strategy=adaptive workload=imbalanced;strategy=random workload=fib;strategy=load workload=fib;strategy=locality workload=fib;strategy=p2c workload=fib;strategy=adaptive workload=fib;strategy=random workload=ring;strategy=load workload=ring;strategy=locality workload=ring;strategy=p2c workload=ring;strategy=adaptive workload=ring;strategy=random workload=mixed;strategy=load workload=mixed;strategy=locality workload=mixed;strategy=p2c workload=mixed;strategy=adaptive workload=mixed;workload=imbalanced steal=half;workload=imbalanced max_migrations=1;workload=mixed protect_max=on;workload=imbalanced cooldown=100000;workload=imbalanced cooldown=1099511627776;workload=fib cooldown=1099511627776;workload=bounce;workload=bounce strategy=random;workload=bounce max_migrations=10
//! qemu-test: forbid=PANIC
//! qemu-test: timeout=120

#![no_std]
#![no_main]

use beamcore::ExitCode;

fn main() -> ExitCode {
    beamcore_apps::testing::run_configured_and_check()
}

beamcore::entry!(main, settings = beamcore_apps::config::ARGS);
