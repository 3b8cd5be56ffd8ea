//! The run's report: the kernel's `report: {json}` fields where they apply
//! (`kernel/sched/telemetry.rs`), plus what only a simulation can give (makespan, speedup).

use serde_json::{Value, json};

use crate::engine::Outcome;

/// Speedup over a one-core run that took `t1` ns: T1 / Tp.
pub fn speedup(outcome: &Outcome, t1: u64) -> f64 {
    t1 as f64 / outcome.makespan.max(1) as f64
}

/// The workload's parallelism W / S: its total work over its critical path, both at the
/// operations' costs without switches or latencies.
pub fn w_over_s(outcome: &Outcome) -> f64 {
    outcome.work as f64 / outcome.critical_path.max(1) as f64
}

/// Brent's bound on the speedup at this run's core count: min(N, W / S). No schedule on N
/// equal cores runs in less than max(W / N, S).
pub fn bound(outcome: &Outcome) -> f64 {
    (outcome.cores as f64).min(w_over_s(outcome))
}

/// Efficiency: the speedup over `t1` against the run's own bound, speedup / min(N, W / S).
/// 1 is as fast as any schedule could be; it can pass 1 by at most T1 / W (the one-core run's
/// scheduling costs, which W leaves out).
pub fn efficiency(outcome: &Outcome, t1: u64) -> f64 {
    speedup(outcome, t1) / bound(outcome)
}

/// The report of `outcome`, with its speedup over `t1` (the one-core makespan) when given.
/// `per_core` lists every core's counters under the kernel's names (times in µs as the kernel
/// prints them; the simulated counter runs at 1 GHz, so `min_steal_gap_counts` is in ns).
pub fn report(outcome: &Outcome, t1: Option<u64>, per_core: bool) -> Value {
    let mut report = json!({
        "workload": outcome.workload.name(),
        "cores": outcome.cores,
        "strategy": outcome.policy.strategy.name(),
        "policy": outcome.policy.name,
        "seed": outcome.seed,
        "spawned": outcome.spawned,
        "completed": outcome.completed,
        "max_migrations_seen": outcome.max_migrations_seen,
        "work_max_over_mean": round4(outcome.work_max_over_mean()),
        "ok": !outcome.timed_out && outcome.exits.iter().all(|&e| e == 1),
        "workload_processes": outcome.workload.processes(),
        "size": outcome.workload.size(),
        "elapsed_us": outcome.makespan / 1000,
        "makespan_ns": outcome.makespan,
        "critical_path_ns": outcome.critical_path,
        "work_ns": outcome.work,
        "w_over_s": round4(w_over_s(outcome)),
        "steals": outcome.steals(),
        "migrations": outcome.migrations_total(),
        "events": outcome.events,
    });
    if let Some(t1) = t1 {
        let s = speedup(outcome, t1);
        report["t1_ns"] = json!(t1);
        report["speedup"] = json!(round4(s));
        report["efficiency"] = json!(round4(efficiency(outcome, t1)));
    }
    if per_core {
        let cores: Vec<Value> = outcome
            .per_core
            .iter()
            .enumerate()
            .map(|(core, s)| {
                let mut c = json!({
                    "core": core, "work": s.work, "executed": s.executed, "local_pops": s.local_pops,
                    "steal_attempts": s.steal_attempts, "steals": s.steals, "stolen": s.stolen,
                    "stolen_fresh": s.stolen_fresh, "stealable_seen": s.stealable_seen, "fail_empty": s.fail_empty,
                    "fail_below_threshold": s.fail_below_threshold, "fail_cooldown": s.fail_cooldown,
                    "fail_migration_limit": s.fail_migration_limit, "fail_lost_race": s.fail_lost_race,
                    "migrated_in": s.migrated_in, "migrated_out": s.migrated_out, "rebalanced": s.rebalanced,
                    "take_oldest_retries": 0, "take_oldest_gave_up": 0, "preemptions": s.preemptions,
                    "asleep_us": s.asleep_ns / 1000, "idle_with_work_us": s.idle_with_work_ns / 1000,
                    "busy_us": s.busy_ns / 1000, "wakes": s.wakes, "wake_latency_ns": s.wake_latency_ns, "steal_latency_buckets": s.steal_latency,
                });
                if s.min_steal_gap != u64::MAX {
                    c["min_steal_gap_counts"] = json!(s.min_steal_gap);
                }
                c
            })
            .collect();
        report["per_core"] = Value::Array(cores);
    } else {
        report["work_per_core"] = json!(outcome.per_core.iter().map(|c| c.work).collect::<Vec<_>>());
    }
    report
}

pub fn round4(x: f64) -> f64 {
    (x * 10_000.0).round() / 10_000.0
}
