//! The discrete-event engine: simulated cores, each with its own clock, running the mechanics
//! of `kernel/sched/scheduler.rs` (the loop, queues, inbox, stealing rounds, search, sleep and
//! wake-ups, push rebalancing, preemption) and asking the kernel's own pure code every question
//! of policy: `check_victim`, `may_migrate`, `steal_count`, `backoff_counts`, `VictimPicker`
//! with `Strategy::effective`, `cooldown_ends_at`, `plan_rebalance` and `rebalance_due`, the
//! idle search's `max_searchers`, `search_spent` and `search_pause_counts`,
//! `should_wake_a_thief`, `worth_a_thief`, `low_priority_rule`, `CoreView::load_of`; the run
//! queues are the kernel's `WorkQueue` on portable atomics. The engine models the machine only:
//! `make check` (scripts/check-sim-policy.py) fails on a restated kernel constant or a policy
//! decision made here.
//!
//! Time is in nanoseconds; the simulated counter runs at 1 GHz, so the balancer's tick-valued
//! settings are `BalanceConfig::timed` for 1 GHz. Each step is one action of one core at its
//! own clock; the engine always runs the core whose clock is earliest, so every action sees the
//! effects of every earlier one (conservative discrete-event simulation). An action's effects
//! (a push, a message, a spawned process) become visible when it completes.
//!
//! This module holds the simulation ([`Sim`]): its state, its construction and the event loop
//! that runs the earliest core's next action. The actions are its submodules, one concern each:
//! `run` (the scheduler loop and the running process), `queues` (queueing, wake-ups, taking
//! the next process), `steal` (steal rounds and push rebalancing), `idle` (search and sleep);
//! `events` keeps the run's events in the kernel trace's words, `state` defines what is kept
//! per core and per process, `policy` and `outcome` what a run is given and what it produces,
//! `deliberate_bug` the calibration gate's self-test bugs.

mod deliberate_bug;
mod events;
#[cfg(test)]
mod events_tests;
mod idle;
#[cfg(test)]
mod idle_tests;
mod making;
#[cfg(test)]
mod making_tests;
mod outcome;
mod policy;
mod queues;
#[cfg(test)]
mod rebalance_tests;
mod run;
#[cfg(test)]
mod run_next_tests;
mod state;
mod steal;
mod turns;
#[cfg(test)]
mod turns_tests;
#[cfg(test)]
mod window_tests;

use std::cmp::Reverse;
use std::collections::{BTreeSet, BinaryHeap, VecDeque};

use beamcore_deque::WorkQueue;
use beamcore_sched_policy::Priority;
use beamcore_sched_policy::balance::{AdaptiveState, NEVER, Rng, SearchTiming, mix, rebalance_period_ticks};
use beamcore_sched_policy::placement::RUN_QUEUE_DEQUE_CAPACITY;
use beamcore_sched_policy::priority::LEVELS;
use beamcore_sched_policy::run_next::RunNextStreak;

pub use outcome::{Outcome, TraceEvent};
pub use policy::{Policy, SimConfig};
pub use state::CoreStats;
use state::{Core, Phase, Proc};

use crate::cost::CostModel;
use crate::workload::{Shared, Workload};
use turns::Turns;

/// The simulated counter's frequency: one tick per nanosecond.
pub const COUNTER_HZ: u64 = 1_000_000_000;
/// Most cores a thief considers: the kernel's picker handles `MAX_CORES` (64) views. Beyond
/// that the simulated thief hands it a window of 64, drawn afresh each round: itself, its
/// cluster under `locality`, the cores the overload hint names, and random others
/// (`Sim::window`).
pub const VIEW_WINDOW: usize = 64;
/// Reading one word of the overload hint beyond [`VIEW_WINDOW`] cores (64 cores' bits): a load,
/// a count of its set bits and a branch.
const HINT_WORD_NS: u64 = 4;
/// `Sim::hint_at` of a core not in the hint.
const NOT_HINTED: usize = usize::MAX;
/// Cores per cluster (MPIDR Aff1), as on QEMU virt with GICv3: 16.
pub const CLUSTER: usize = 16;
/// The scheduler loop's own cost per pass that finds nothing (inbox, timeouts, jobs): counted.
const LOOP_NS: u64 = 40;
/// One `relax` pass while a victim's cooldown ends within a slice.
const RELAX_NS: u64 = 100;

/// One simulation.
pub struct Sim<'a> {
    cfg: SimConfig,
    policy: Policy,
    costs: &'a CostModel,
    workload: Workload,
    cores: Vec<Core>,
    procs: Vec<Proc>,
    heap: BinaryHeap<Reverse<(u64, usize, u64)>>,
    sleepers: BTreeSet<usize>,
    /// The overload hint: the cores whose stealable count is worth a thief, in no order
    /// (`refresh_hint`), and each core's place in it ([`NOT_HINTED`]: none).
    hinted: Vec<usize>,
    hint_at: Vec<usize>,
    /// Sleepers not yet offered work worth a thief (the kernel's `UNOFFERED`); a core that woke
    /// meanwhile may still be in it, harmlessly (a sleep resets its own stamp).
    unoffered: BTreeSet<usize>,
    /// Summed shares of the cores not asleep (with `SimConfig::shares`).
    awake_shares: f64,
    /// QEMU's turns, one core at a time (with `SimConfig::turns`; `turns`).
    turns: Option<Turns>,
    searching: usize,
    shared: Shared,
    /// Core 0's tick count when it last looked for severe imbalance (counted from its last look
    /// before the start, `SimConfig::rebalance_ticks_ago` ticks before it), and the period in
    /// its ticks (`rebalance_period_ticks`).
    last_rebalance: u64,
    rebalance_period: u64,
    /// The kernel's idle-search durations at the simulated counter.
    search: SearchTiming,
    max_migrations_seen: u32,
    bound_home: Vec<Option<usize>>,
    bound_violations: u64,
    cooldown_violations: u64,
    done: usize,
    /// The most processes alive at once so far: a spawn past it takes a slot no process had
    /// (`CostModel::spawn_fresh`).
    most_alive: usize,
    /// The core holding the lock every core shares that a spawn making a slot takes, and the
    /// cores spinning for it (`making`).
    making: Option<usize>,
    making_waiters: Vec<usize>,
    makespan: u64,
    /// Every increase of a process's `span` by an operation's cost, summed: [`Outcome::work`].
    work: u64,
    /// [`Sim::window`]'s marks of the cores already drawn, and its current stamp.
    window_marks: Vec<u64>,
    window_stamp: u64,
    events: u64,
    /// The events `note` kept (`SimConfig::events_until_ns`).
    trace: Vec<TraceEvent>,
}

impl<'a> Sim<'a> {
    pub fn new(workload: Workload, policy: Policy, cfg: SimConfig, costs: &'a CostModel) -> Sim<'a> {
        let n = cfg.cores;
        let rebalance_period = rebalance_period_ticks(cfg.slice_ns.max(1));
        let cores = (0..n)
            .map(|id| {
                let queues = [(); LEVELS].map(|()| WorkQueue::new(RUN_QUEUE_DEQUE_CAPACITY).expect("power of two"));
                let stealers = [0, 1, 2].map(|level| queues[level].stealer());
                Core {
                    queues,
                    stealers,
                    private: [const { VecDeque::new() }; LEVELS],
                    private_turn: [false; LEVELS],
                    runnable: [0; 4],
                    inbox: VecDeque::new(),
                    run_next: None,
                    run_next_streak: RunNextStreak::new(),
                    phase: Phase::Loop,
                    at: 0,
                    generation: 0,
                    // As the kernel's `sched::init_core_scheduler`: a counter reading mixed with the core's number.
                    rng: Rng::new(mix(cfg.seed, 1) ^ ((id as u64 + 1) << 32)),
                    window_rng: Rng::new(mix(cfg.seed, 2 + id as u64)),
                    adaptive: AdaptiveState::new(),
                    last_steal: vec![NEVER; n],
                    searching: false,
                    work_offered_at: None,
                    wake_sent_at: None,
                    search_started: 0,
                    search_rounds: 0,
                    pause_since: None,
                    ticks_taken_until: 0,
                    tick_phase: cfg.tick_ns.as_ref().map_or_else(|| mix(cfg.seed, 1000 + id as u64), |t| t[id])
                        % cfg.slice_ns.max(1),
                    factor: cfg.factors.as_ref().and_then(|f| f.get(id).copied()).unwrap_or(1.0),
                    stats: CoreStats { min_steal_gap: u64::MAX, ..CoreStats::default() },
                }
            })
            .collect();
        let mut sim = Sim {
            cfg,
            policy,
            costs,
            workload,
            cores,
            procs: Vec::new(),
            heap: BinaryHeap::new(),
            sleepers: BTreeSet::new(),
            hinted: Vec::new(),
            hint_at: vec![NOT_HINTED; n],
            unoffered: BTreeSet::new(),
            awake_shares: 0.0,
            turns: None,
            searching: 0,
            shared: Shared::default(),
            last_rebalance: 0,
            rebalance_period,
            search: SearchTiming::at(COUNTER_HZ),
            max_migrations_seen: 0,
            bound_home: Vec::new(),
            bound_violations: 0,
            cooldown_violations: 0,
            done: 0,
            most_alive: 0,
            making: None,
            making_waiters: Vec::new(),
            makespan: 0,
            work: 0,
            window_marks: Vec::new(),
            window_stamp: 0,
            events: 0,
            trace: Vec::new(),
        };
        // The program's main: free, started on core 0 (`kernel_init`).
        if sim.cfg.turns {
            // Every core runs at full speed in its own turn; the turns make the shares.
            sim.turns = Some(Turns::new(n));
        } else if let Some(shares) = &sim.cfg.shares {
            sim.awake_shares = shares.iter().take(n).sum();
            sim.share_factors();
        }
        let main = sim.create(workload.main(), Priority::Normal, 0, false, 0);
        sim.enqueue_local(0, main, 0);
        for core in 0..n {
            sim.schedule(core, 0);
        }
        sim.start_turns();
        sim
    }

    /// Runs to the end (every process ended) or the time limit.
    pub fn run(mut self) -> Outcome {
        let mut timed_out = false;
        while let Some(Reverse((at, core, generation))) = self.heap.pop() {
            if generation != self.cores[core].generation {
                continue;
            }
            if self.done == self.procs.len() {
                break;
            }
            if at > self.cfg.time_limit_ns {
                timed_out = true;
                break;
            }
            if !self.in_turn(core, at) || self.spinning(core, at) {
                continue;
            }
            self.events += 1;
            self.step(core, at);
            self.after_step(core, at);
        }
        let per_core: Vec<CoreStats> = self.cores.iter().map(|c| c.stats.clone()).collect();
        let critical_path = self.procs.iter().map(|p| p.span).max().unwrap_or(0);
        Outcome {
            workload: self.workload,
            policy: self.policy,
            cores: self.cfg.cores,
            seed: self.cfg.seed,
            makespan: self.makespan,
            critical_path,
            work: self.work,
            spawned: per_core.iter().map(|c| c.spawned).sum(),
            completed: per_core.iter().map(|c| c.completed).sum(),
            max_migrations_seen: self.max_migrations_seen,
            per_core,
            exits: self.procs.iter().map(|p| p.exits).collect(),
            migrations: self.procs.iter().map(|p| p.migrations).collect(),
            bound_violations: self.bound_violations,
            cooldown_violations: self.cooldown_violations,
            events: self.events,
            trace: {
                let mut trace = std::mem::take(&mut self.trace);
                trace.sort_by_key(|e| (e.at_ns, e.core));
                trace
            },
            timed_out: timed_out || self.done != self.procs.len(),
        }
    }

    /// Every core's time factor from the awake cores' shares (`SimConfig::shares`). A factor
    /// applies to what a core starts from now on; what is under way keeps its end time.
    fn share_factors(&mut self) {
        let Some(shares) = &self.cfg.shares else { return };
        for (core, &share) in self.cores.iter_mut().zip(shares) {
            core.factor = self.awake_shares / share;
        }
    }

    /// `core` goes into WFI (`asleep`) or leaves it: the others' turns grow or shrink.
    pub(super) fn set_awake(&mut self, core: usize, awake: bool) {
        if self.turns.is_some() {
            return;
        }
        let Some(share) = self.cfg.shares.as_ref().and_then(|s| s.get(core).copied()) else { return };
        self.awake_shares += if awake { share } else { -share };
        self.share_factors();
    }

    fn schedule(&mut self, core: usize, at: u64) {
        let c = &mut self.cores[core];
        c.generation += 1;
        c.at = at;
        let generation = c.generation;
        if !self.park(core, at) {
            self.heap.push(Reverse((at, core, generation)));
        }
    }
}
