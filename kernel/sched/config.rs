//! The scheduler's configuration, built once at boot and read by reference ever after.
//!
//! A setting used to travel: `cooldown=` was parsed by the bootargs crate, converted in the
//! kernel's bring-up, stored in a static, read back in the steal round and handed to the policy
//! crate, changing its name twice on the way. Now the kernel parses its bootargs (`Config`),
//! [`SchedConfig::from_boot`] converts every one the scheduler uses exactly once (durations to
//! counts by crates/counter-time's rule), `init_global` keeps the result, and the scheduler reads
//! `settings::config()`. Per-turn fast paths still read a few copies kept in atomics
//! (`settings::slice_counts` and the like): one load, no `Once` check.

use beamcore_bootargs::{Config, Telemetry};
use beamcore_sched_policy::balance::{BalanceConfig, Strategy};
use beamcore_sched_policy::placement::{QueueMode, SpawnPlacement};

/// What the scheduler runs with, from the bootargs (docs/scheduler.md lists each).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SchedConfig {
    /// Counts per time slice (`slice_us`, rounded up, at least 1).
    pub slice_counts: u64,
    /// Reductions a slice starts with (`reductions`, at least 1).
    pub reductions: u64,
    /// The balancer's rules, their durations in counts (`cooldown` and the backoff). Push
    /// rebalancing is off with `queues=shared`: one queue has nowhere to push to.
    pub balance: BalanceConfig,
    /// The victim strategy the run starts with (`strategy`; `set_strategy` switches it).
    pub strategy: Strategy,
    /// Whether `trace=on` asked for scheduling traces.
    pub trace: bool,
    /// Events each core's trace buffer keeps (`trace_events=`).
    pub trace_events: usize,
    /// Where runnable processes wait (`queues`).
    pub queues: QueueMode,
    /// Where new free processes start (`placement`).
    pub placement: SpawnPlacement,
    /// What each turn records (`telemetry`).
    pub telemetry: Telemetry,
    /// The most processes alive at once (`max_processes`, at most the table's size).
    pub max_processes: usize,
    /// The seed of every core's random choices (`seed`; 0: from the counter).
    pub seed: u64,
}

impl SchedConfig {
    /// The scheduler's configuration from the kernel's bootargs, with the counter running at
    /// `counter_hz`.
    pub fn from_boot(config: &Config, counter_hz: u64) -> SchedConfig {
        let balance = config.balance.timed(config.cooldown_ns, counter_hz);
        SchedConfig {
            slice_counts: beamcore_counter_time::us_to_counts(u64::from(config.slice_us), counter_hz).max(1),
            reductions: u64::from(config.reductions).max(1),
            balance: BalanceConfig { rebalance: balance.rebalance && config.queues == QueueMode::PerCore, ..balance },
            strategy: config.strategy,
            trace: config.trace,
            trace_events: config.trace_events as usize,
            queues: config.queues,
            placement: config.placement,
            telemetry: config.telemetry,
            max_processes: config.max_processes.min(beamcore_mm::layout::MAX_PROCESSES),
            seed: config.seed,
        }
    }
}
