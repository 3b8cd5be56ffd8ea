//! What a simulation is asked to run besides the workload: the balancing [`Policy`] (the kernel's
//! `BalanceConfig` and victim strategy, by the names `make sim` compares) and the machine's
//! settings ([`SimConfig`]: cores, seed, slice, per-core speeds, time limit).

use beamcore_sched_policy::balance::{BalanceConfig, DEFAULT_COOLDOWN_NS, StealAmount, Strategy};

use super::COUNTER_HZ;

/// A balancing policy: the kernel's settings and victim strategy.
#[derive(Clone, Debug, PartialEq)]
pub struct Policy {
    pub name: String,
    pub config: BalanceConfig,
    pub strategy: Strategy,
}

impl Policy {
    /// beamcore's defaults (`strategy=load`), durations at the simulated 1 GHz counter.
    pub fn default_policy() -> Policy {
        Policy::strategy("default", Strategy::Load)
    }

    /// The defaults with another victim strategy.
    pub fn strategy(name: &str, strategy: Strategy) -> Policy {
        Policy {
            name: name.to_string(),
            config: BalanceConfig::default().timed(DEFAULT_COOLDOWN_NS, COUNTER_HZ),
            strategy,
        }
    }

    /// The peers' policy (Go, Tokio) as `make bench` runs it: `strategy=random steal=half
    /// cooldown=0 min_steal=1 imbalance=0`.
    pub fn peers() -> Policy {
        let config = BalanceConfig {
            min_steal: 1,
            imbalance: 0,
            amount: StealAmount::Half,
            ..BalanceConfig::default().timed(0, COUNTER_HZ)
        };
        Policy { name: "peers".to_string(), config, strategy: Strategy::Random }
    }

    /// Every policy `make sim` compares: the default (`load`), each other strategy with the
    /// other defaults, and the peers'.
    pub fn all() -> Vec<Policy> {
        let mut all = vec![Policy::default_policy()];
        for strategy in Strategy::ALL {
            if strategy != Strategy::Load {
                all.push(Policy::strategy(strategy.name(), strategy));
            }
        }
        all.push(Policy::peers());
        all
    }

    pub fn by_name(name: &str) -> Option<Policy> {
        Policy::all()
            .into_iter()
            .find(|p| p.name == name)
            .or_else(|| (name == "load").then(|| Policy::strategy("load", Strategy::Load)))
    }
}

/// One simulation's settings besides the policy and the workload.
#[derive(Clone, Debug)]
pub struct SimConfig {
    pub cores: usize,
    pub seed: u64,
    /// The time slice (bootarg `slice_us`), ns.
    pub slice_ns: u64,
    /// Reductions per slice (bootarg `reductions`).
    pub reductions: u32,
    /// Per-core time factors (every cost on core i is multiplied by `factors[i]`): 1.0 for a
    /// real machine's equal cores; other values for experiments (`beamcore-sim run --factors`).
    pub factors: Option<Vec<f64>>,
    /// QEMU's round-robin under `-icount` (replaces `factors`): core i gets `shares[i]` of the
    /// turns among the cores that are awake (not in WFI), so a core's time per instruction is
    /// the awake cores' summed shares over its own, and the others speed up while one sleeps.
    /// The shares are a run's share probe (`probe_ms=`); see docs/simulator.md.
    pub shares: Option<Vec<f64>>,
    /// QEMU's turns modelled one at a time (engine/turns.rs): one core runs while the others
    /// stand still, in place of every core running at once at its share's speed (`shares`
    /// is then ignored: the turns make them).
    pub turns: bool,
    /// Each core's first tick, ns after the start (a QEMU run's `next_tick_ns`); without it,
    /// drawn from the seed.
    pub tick_ns: Option<Vec<u64>>,
    /// How many ticks core 0 had taken since it last looked for severe imbalance, at the start
    /// (a QEMU run's `rebalance_ticks_ago`): its first look is due when its ticks make up the
    /// period from there. 0 starts the count with the workload.
    pub rebalance_ticks_ago: u64,
    /// The program's main computes what the kernel's `make run` program computes before its
    /// first spawn (uts counts its whole tree to check the answer), as the calibration against
    /// that program needs; `make sim` leaves it out, the policy's work being the tree.
    pub main_checks: bool,
    /// Give up after this much simulated time (a livelock would otherwise never end), ns: 1,000
    /// s, some five times the one-core time of the largest workload `make sim` runs.
    pub time_limit_ns: u64,
    /// Keep every scheduling event before this time, ns, in `Outcome::trace` (engine/events.rs):
    /// a timeline to read beside a traced QEMU run's.
    pub events_until_ns: Option<u64>,
}

impl SimConfig {
    pub fn new(cores: usize, seed: u64) -> SimConfig {
        SimConfig {
            cores: cores.max(1),
            seed,
            slice_ns: 1_000_000,
            reductions: 4000,
            factors: None,
            shares: None,
            turns: false,
            tick_ns: None,
            rebalance_ticks_ago: 0,
            main_checks: false,
            time_limit_ns: 1_000_000_000_000,
            events_until_ns: None,
        }
    }
}
