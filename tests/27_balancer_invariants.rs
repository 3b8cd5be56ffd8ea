//! The balancer's rules hold for every strategy on every workload: each spawned process
//! completes exactly once (the workload checks), `imbalanced` leaves no core idle and keeps the
//! busiest core within 1.5x the mean, no process exceeds `max_migrations`, bound processes
//! never run elsewhere, no thief steals from one victim twice within `cooldown`, and with
//! `protect_max=on` no max-priority process moves.
//!
//! Runs under `-icount`: QEMU then gives every runnable core the same instruction budget in
//! turn, so work per core measures the scheduler, not how the host scheduled QEMU's threads
//! (with 4 vCPU threads on this 2-CPU host that alone skews per-core work by 2x).
//! qemu-test: configs=a72-smp4
//! qemu-test: qemu-args=-icount shift=0,sleep=off
//! qemu-test: variants=strategy=random workload=imbalanced;strategy=load workload=imbalanced;strategy=locality workload=imbalanced;strategy=p2c workload=imbalanced;strategy=adaptive workload=imbalanced;strategy=random workload=fib;strategy=load workload=fib;strategy=locality workload=fib;strategy=p2c workload=fib;strategy=adaptive workload=fib;strategy=random workload=ring;strategy=load workload=ring;strategy=locality workload=ring;strategy=p2c workload=ring;strategy=adaptive workload=ring;strategy=random workload=mixed;strategy=load workload=mixed;strategy=locality workload=mixed;strategy=p2c workload=mixed;strategy=adaptive workload=mixed;workload=imbalanced steal=half;workload=imbalanced max_migrations=1;workload=mixed protect_max=on;workload=imbalanced cooldown=100000
//! qemu-test: forbid=PANIC
//! qemu-test: timeout=120

#![no_std]
#![no_main]

extern crate alloc;

use core::sync::atomic::Ordering;

use beamcore::config::Workload;
use beamcore::sched::{self, telemetry};
use beamcore::{ExitCode, ensure, println, smp, workloads};

fn main() -> ExitCode {
    let config = *beamcore::boot_config();
    let cores = smp::cores_online();
    let outcome = workloads::run(config.workload);
    ensure!(outcome.ok, "workload {} failed: {}", config.workload.name(), outcome.detail);
    let spawned = telemetry::total(|s| &s.spawned);
    let completed = telemetry::total(|s| &s.completed);
    // main itself is spawned and still running.
    ensure!(spawned == completed + 1, "spawned {spawned}, completed {completed}");

    let works: heapless::Vec<u64, 32> = (0..cores).map(workloads::work_on).collect();
    let mean = works.iter().sum::<u64>() as f64 / cores as f64;
    let max = *works.iter().max().unwrap() as f64;
    let default_limits = beamcore::config::Config::default().balance;
    let (balance, strategy) = sched::balance_config();
    // The 1.5x bound is checked with the default thresholds and cooldown (any strategy, either
    // steal amount); other variants exercise the limits themselves.
    let default_thresholds = balance.cooldown_cycles == default_limits.cooldown_cycles
        && balance.max_migrations == default_limits.max_migrations;
    if config.workload == Workload::Imbalanced && default_thresholds {
        ensure!(works.iter().all(|&w| w > 0), "a core executed no work: {works:?}");
        ensure!(max <= 1.5 * mean, "busiest core {max} > 1.5 x mean {mean:.0}: {works:?}");
    }
    let seen = sched::max_migrations_seen();
    ensure!(seen <= balance.max_migrations, "a process migrated {seen} times (limit {})", balance.max_migrations);
    ensure!(workloads::bound_violations() == 0, "bound processes ran off their core");
    for core in 0..cores {
        let gap = sched::core_stats(core).min_steal_gap.load(Ordering::Relaxed);
        ensure!(
            gap == u64::MAX || gap >= balance.cooldown_cycles,
            "core {core} stole from one victim twice within {gap} cycles (cooldown {})",
            balance.cooldown_cycles
        );
    }
    if balance.protect_max {
        ensure!(workloads::max_priority_migrations() == 0, "a protected max-priority process moved");
    }
    let steals = telemetry::total(|s| &s.steals);
    println!(
        "test: {} with {strategy}: {} ({steals} steals, work {works:?}, max/mean {:.2}, max migrations {seen})",
        config.workload.name(),
        outcome.detail,
        max / mean
    );
    ExitCode::Success
}

beamcore::entry!(main);
