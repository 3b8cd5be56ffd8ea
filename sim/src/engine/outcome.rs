//! What a run produced ([`Outcome`]): the makespan, work and critical path, every core's
//! counters and the checks a correct run must pass (each process ends once, no bound process
//! moved, no steal inside a cooldown), for `report.rs` and the tests.

use super::{CoreStats, Policy};
use crate::workload::Workload;

/// What a run produced.
#[derive(Clone, Debug)]
pub struct Outcome {
    pub workload: Workload,
    pub policy: Policy,
    pub cores: usize,
    pub seed: u64,
    /// From main's first step to the last process's end, ns.
    pub makespan: u64,
    /// The longest chain of operations that must follow one another (spawns, messages, each
    /// process's own operations), at their costs without switches or latencies: no schedule
    /// on any number of cores can beat it.
    pub critical_path: u64,
    /// The total work W: every operation of every process at the costs the critical path
    /// counts them (no switches, no latencies, no stealing), summed. It does not depend on the
    /// schedule, and W / `critical_path` is the workload's parallelism: Brent's bound on the
    /// speedup at N cores is min(N, W / S).
    pub work: u64,
    pub spawned: u64,
    pub completed: u64,
    pub max_migrations_seen: u32,
    pub per_core: Vec<CoreStats>,
    /// Per process: how many times it ended (must be 1) and how often it moved.
    pub exits: Vec<u32>,
    pub migrations: Vec<u32>,
    /// Processes that ran on a core they are bound away from (must be 0).
    pub bound_violations: u64,
    /// Steals by one thief from one victim closer together than the cooldown (must be 0).
    pub cooldown_violations: u64,
    /// Events processed.
    pub events: u64,
    /// The run stopped at `time_limit_ns` before every process ended.
    pub timed_out: bool,
    /// The scheduling events before `SimConfig::events_until_ns`, in time order (none without it).
    pub trace: Vec<TraceEvent>,
}

/// One scheduling event in the kernel trace's words (engine/events.rs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TraceEvent {
    pub core: usize,
    pub at_ns: u64,
    pub name: &'static str,
    pub arg: u64,
}

impl Outcome {
    pub fn steals(&self) -> u64 {
        self.per_core.iter().map(|c| c.steals).sum()
    }

    pub fn migrations_total(&self) -> u64 {
        self.per_core.iter().map(|c| c.migrated_in).sum()
    }

    pub fn work_max_over_mean(&self) -> f64 {
        let works: Vec<u64> = self.per_core.iter().map(|c| c.work).collect();
        let mean = works.iter().sum::<u64>() as f64 / works.len() as f64;
        works.iter().copied().max().unwrap_or(0) as f64 / mean.max(1e-9)
    }
}
