//! The balancer's telemetry at the end of a run: a table per core on the console and one
//! `report: {json}` line (the console contract in README.md).

use alloc::string::String;
use core::sync::atomic::{AtomicU64, Ordering};

use crate::record::stats::{self, CoreStats, Figure, LATENCY_BUCKETS};
use crate::settings::{NotCollected, balance_config, queue_mode, spawn_placement, telemetry};
use crate::steal::migrate::max_migrations_seen;
use beamcore_hal::arch::cpu;
use beamcore_hal::ids::CoreId;
use beamcore_hal::time;
use beamcore_json_report::JsonObject;
use beamcore_mm::layout::MAX_CORES;
use beamcore_sched_policy::queue_wait::mean_us;
use beamcore_smp::{self as smp, println};

fn read(counter: &AtomicU64) -> u64 {
    counter.load(Ordering::Relaxed)
}

/// Sum of a counter over the online cores.
pub fn total(field: fn(&CoreStats) -> &AtomicU64) -> u64 {
    (0..smp::cores_online()).map(|c| read(field(stats::of(CoreId::new(c))))).sum()
}

/// Prints the per-core table and the `report:` line. `work` gives each core's executed work
/// (units defined by the workload); `extra` adds workload-specific fields to the JSON.
pub fn print_report(
    workload: &str,
    work: &dyn Fn(usize) -> u64,
    extra: &dyn Fn(&mut JsonObject<'_, String>) -> core::fmt::Result,
) {
    let cores = smp::cores_online();
    let (_, strategy) = balance_config();
    println!(
        "core      work  turns  local_pops  attempts  steals  empty  below  cooldown  mig_limit  not_allowed  lost  mig_in  mig_out  asleep_ms"
    );
    for core in 0..cores {
        let s = stats::of(CoreId::new(core));
        println!(
            "{core:>4}  {:>8}  {:>5}  {:>10}  {:>8}  {:>6}  {:>5}  {:>5}  {:>8}  {:>9}  {:>11}  {:>4}  {:>6}  {:>7}  {:>9}",
            work(core),
            read(&s.executed),
            Figure(s.local_pops()),
            read(&s.steal_attempts),
            read(&s.steals),
            read(&s.fail_empty),
            read(&s.fail_below_threshold),
            read(&s.fail_cooldown),
            read(&s.fail_migration_limit),
            read(&s.fail_not_allowed),
            read(&s.fail_lost_race),
            read(&s.migrated_in),
            read(&s.migrated_out),
            time::counts_to_us(read(&s.asleep_counts)) / 1000
        );
    }
    // What the columns and the report leave out, said once: "-" above is not a zero.
    if let Err(not) = telemetry().take_counts() {
        println!("telemetry: local_pops {not}");
    }
    if let Err(not) = telemetry().queue_wait() {
        println!("telemetry: queue wait (wait_us_buckets, wait_us_mean) {not}");
    }
    if let Err(not) = telemetry().heap_accounting() {
        println!("telemetry: heap bytes per process (a panic's report) {not}");
    }
    let works: heapless::Vec<u64, MAX_CORES> = (0..cores).map(work).collect();
    let mean = works.iter().sum::<u64>() as f64 / cores as f64;
    let max = works.iter().copied().max().unwrap_or(0) as f64;
    let mut line = String::new();
    let _ = write_json(&mut line, workload, strategy.name(), cores, &works, max / mean.max(1e-9), extra);
    println!("report: {line}");
}

fn write_json(
    out: &mut String,
    workload: &str,
    strategy: &str,
    cores: usize,
    works: &[u64],
    max_over_mean: f64,
    extra: &dyn Fn(&mut JsonObject<'_, String>) -> core::fmt::Result,
) -> core::fmt::Result {
    let mut json = JsonObject::begin(out)?;
    json.string("workload", workload)?.uint("cores", cores as u64)?.string("strategy", strategy)?;
    json.string("queues", queue_mode().name())?.string("placement", spawn_placement().name())?;
    json.string("telemetry", telemetry().name())?;
    json.uint("spawned", total(|s| &s.spawned))?.uint("completed", total(|s| &s.completed))?;
    json.uint("max_migrations_seen", u64::from(max_migrations_seen()))?;
    json.float("work_max_over_mean", max_over_mean)?;
    let (moved, rebound) = crate::run::active::offline_moves();
    json.uint("offline_moved", moved)?.uint("offline_rebound", rebound)?;
    json.uint("offline_timeouts_moved", crate::offline::timeouts_moved())?;
    extra(&mut json)?;
    json.array("per_core", cores, |core, e| {
        let s = stats::of(CoreId::new(core));
        e.uint("core", core as u64)?
            .uint("online", u64::from(crate::run::active::core_is_active(core)))?
            .uint("offline_count", smp::core(core).offline_count())?
            .uint("work", works[core])?
            .uint("executed", read(&s.executed))?;
        figure(e, "local_pops", s.local_pops())?
            .uint("steal_attempts", read(&s.steal_attempts))?
            .uint("steals", read(&s.steals))?
            .uint("stolen", read(&s.stolen))?
            .uint("stealable_seen", read(&s.stealable_seen))?
            .uint("fail_empty", read(&s.fail_empty))?
            .uint("fail_below_threshold", read(&s.fail_below_threshold))?
            .uint("fail_cooldown", read(&s.fail_cooldown))?
            .uint("fail_migration_limit", read(&s.fail_migration_limit))?
            .uint("fail_not_allowed", read(&s.fail_not_allowed))?
            .uint("fail_lost_race", read(&s.fail_lost_race))?
            .uint("migrated_in", read(&s.migrated_in))?
            .uint("migrated_out", read(&s.migrated_out))?
            .uint("rebalanced", read(&s.rebalanced))?
            .uint("take_oldest_retries", read(&s.take_oldest_retries))?
            .uint("take_oldest_gave_up", read(&s.take_oldest_gave_up))?
            .uint("queue_lock_acquisitions", read(&s.queue_lock_acquisitions))?
            .uint("queue_lock_contended", read(&s.queue_lock_contended))?
            .uint("preemptions", read(&s.preemptions))?
            .uint("asleep_us", time::counts_to_us(read(&s.asleep_counts)))?
            .uint("wakes", read(&s.wakes))?
            .uint("wake_latency_ns", time::counts_to_ns(read(&s.wake_latency_counts)))?
            .uint("idle_with_work_us", time::counts_to_us(read(&s.idle_with_work_counts)))?;
        let gap = read(&s.min_steal_gap);
        if gap != u64::MAX {
            e.uint("min_steal_gap_counts", gap)?;
        }
        let histogram: [u64; LATENCY_BUCKETS] = core::array::from_fn(|b| read(&s.steal_latency[b]));
        e.uint_array("steal_latency_buckets", &histogram)?;
        match (s.wait_histogram(), s.wait_counts()) {
            (Ok(waits), Ok(counts)) => {
                e.uint_array("wait_us_buckets", &waits)?;
                e.float("wait_us_mean", mean_us(counts, waits.iter().sum(), cpu::counter_frequency()))?;
            }
            (Err(not), _) | (_, Err(not)) => {
                e.string("wait_us_buckets", &alloc::format!("{not}"))?
                    .string("wait_us_mean", &alloc::format!("{not}"))?;
            }
        }
        Ok(())
    })?;
    json.end()
}

/// `key`: the figure, or the message saying why it was not collected.
fn figure<'a, 'o>(
    e: &'a mut JsonObject<'o, String>,
    key: &str,
    value: Result<u64, NotCollected>,
) -> Result<&'a mut JsonObject<'o, String>, core::fmt::Error> {
    match value {
        Ok(value) => e.uint(key, value),
        Err(not) => e.string(key, &alloc::format!("{not}")),
    }
}
