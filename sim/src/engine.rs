//! The discrete-event engine: simulated cores, each with its own clock, running the mechanics
//! of `kernel/sched/scheduler.rs` (the loop, queues, inbox, stealing rounds, search, sleep and
//! wake-ups, push rebalancing, preemption) and asking the kernel's own pure code every question
//! of policy: [`check_victim`], [`may_migrate`], [`steal_count`], [`backoff_counts`],
//! [`VictimPicker`] with [`Strategy::effective`], [`cooldown_ends_at`], [`plan_rebalance`] and
//! [`rebalance_due`], the idle search's [`max_searchers`], [`search_spent`] and
//! [`search_pause_counts`], [`should_wake_a_thief`], [`worth_a_thief`], [`low_priority_rule`],
//! [`CoreView::load_of`]; the run queues are the kernel's [`WorkQueue`] on portable atomics.
//! This file models the machine only: `make check` (scripts/check-sim-policy.py) fails on a
//! restated kernel constant or a policy decision made here.
//!
//! Time is in nanoseconds; the simulated counter runs at 1 GHz, so the balancer's tick-valued
//! settings are [`BalanceConfig::timed`] for 1 GHz. Each step is one action of one core at its
//! own clock; the engine always runs the core whose clock is earliest, so every action sees the
//! effects of every earlier one (conservative discrete-event simulation). An action's effects
//! (a push, a message, a spawned process) become visible when it completes.

use std::cmp::Reverse;
use std::collections::{BTreeSet, BinaryHeap, VecDeque};

use beamcore_deque::{Portable, Steal, WorkQueue, WorkQueueStealer};
use beamcore_sched_policy::Priority;
use beamcore_sched_policy::balance::{
    AdaptiveState, BalanceConfig, CoreView, DEFAULT_COOLDOWN_NS, NEVER, REBALANCE_PERIOD_NS, RebalancePlan, Refusal,
    Rng, SearchTiming, StealAmount, Strategy, VictimPicker, backoff_counts, check_victim, cooldown_ends_at,
    max_searchers, may_migrate, mix, ns_to_counts, plan_rebalance, rebalance_due, search_pause_counts, search_spent,
    should_wake_a_thief, steal_count, worth_a_thief,
};
use beamcore_sched_policy::placement::RUN_QUEUE_DEQUE_CAPACITY;
use beamcore_sched_policy::priority::{LEVELS, LowPriorityDecision, low_priority_rule};

use crate::cost::CostModel;
use crate::workload::{Ctx, Op, Placement, Program, Shared, Workload};

/// The simulated counter's frequency: one tick per nanosecond.
pub const COUNTER_HZ: u64 = 1_000_000_000;
/// Most cores a thief considers: the kernel's picker handles `MAX_CORES` (64) views. Beyond
/// that the simulated thief hands it a window of 64: itself and 63 others (its cluster first
/// under `locality`), drawn afresh each round.
pub const VIEW_WINDOW: usize = 64;
/// Cores per cluster (MPIDR Aff1), as on QEMU virt with GICv3: 16.
pub const CLUSTER: usize = 16;
/// The scheduler loop's own cost per pass that finds nothing (inbox, timeouts, jobs): counted.
const LOOP_NS: u64 = 40;
/// One `relax` pass while a victim's cooldown ends within a slice.
const RELAX_NS: u64 = 100;

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
    /// Give up after this much simulated time (a livelock would otherwise never end), ns: 1,000
    /// s, some five times the one-core time of the largest workload `make sim` runs.
    pub time_limit_ns: u64,
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
            time_limit_ns: 1_000_000_000_000,
        }
    }
}

/// A core's counters: the kernel's `CoreStats`, same names.
#[derive(Clone, Debug, Default)]
pub struct CoreStats {
    pub work: u64,
    pub executed: u64,
    pub completed: u64,
    pub preemptions: u64,
    pub local_pops: u64,
    pub spawned: u64,
    pub steal_attempts: u64,
    pub steals: u64,
    pub stolen: u64,
    pub stealable_seen: u64,
    pub fail_empty: u64,
    pub fail_below_threshold: u64,
    pub fail_cooldown: u64,
    pub fail_migration_limit: u64,
    pub fail_lost_race: u64,
    pub migrated_in: u64,
    pub migrated_out: u64,
    pub rebalanced: u64,
    pub asleep_ns: u64,
    pub idle_with_work_ns: u64,
    /// Smallest gap between two successful steals of this thief from one victim (ns).
    pub min_steal_gap: u64,
    /// Steal latency: bucket i counts steals below 2^(i+7) ns (the last, all above).
    pub steal_latency: [u64; 10],
    /// Time spent running processes (dispatch to switch-out), ns.
    pub busy_ns: u64,
}

/// What a process is doing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    Runnable,
    Running,
    Waiting,
    Done,
}

struct Proc {
    program: Program,
    priority: Priority,
    bound: bool,
    core: usize,
    migrations: u32,
    state: State,
    /// Waiting messages: (word, the earliest time it could have been sent: its critical path).
    mailbox: VecDeque<(u64, u64)>,
    low_passes: u8,
    reductions: i64,
    /// The message the program's last `Receive` took, handed to it with its next step.
    message: Option<u64>,
    /// Compute left after a preemption: (ns, units to credit, reductions to charge).
    left: Option<(u64, u64, u32)>,
    /// Critical path: the earliest this process could have reached where it is (ns).
    span: u64,
    exits: u32,
    /// It blocked in `receive`: the receive is tried again when it next runs.
    retry_receive: bool,
}

/// What the running process's current operation does when it completes.
enum Effect {
    None,
    Compute { units: u64, reductions: u32 },
    Spawn(Box<crate::workload::Spawn>),
    Send { to: u32, word: u64 },
    Credit(u64),
}

/// What the scheduler does with a process once it has switched out (`Pending`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Pending {
    Requeue,
    Preempted,
    Block,
    Exit,
}

enum Phase {
    /// The top of the scheduler loop.
    Loop,
    /// A process is running: `until` is when its current operation completes.
    Run {
        pid: u32,
        slice_started: u64,
        effect: Effect,
        preempt: bool,
    },
    /// Switching out of a process: acted on at the next loop pass.
    Switch {
        pid: u32,
        pending: Pending,
    },
    /// One attempt of a steal round.
    Steal(Round),
    Asleep {
        since: u64,
    },
}

struct Round {
    victims: Vec<usize>,
    next: usize,
    cooled_at: Option<u64>,
    thief_load: u64,
    /// Cores the thief's views cover (all, or its window beyond [`VIEW_WINDOW`]).
    window: Vec<usize>,
}

struct Core {
    queues: [WorkQueue<Portable>; LEVELS],
    stealers: [WorkQueueStealer<Portable>; LEVELS],
    private: [VecDeque<u32>; LEVELS],
    private_turn: [bool; LEVELS],
    runnable: [usize; 4],
    inbox: VecDeque<u32>,
    phase: Phase,
    /// When this core acts next, and a generation that invalidates older heap entries.
    at: u64,
    generation: u64,
    rng: Rng,
    window_rng: Rng,
    adaptive: AdaptiveState,
    last_steal: Vec<u64>,
    searching: bool,
    search_started: u64,
    search_rounds: u32,
    tick_phase: u64,
    factor: f64,
    stats: CoreStats,
}

impl Core {
    fn stealable(&self) -> usize {
        self.stealers.iter().map(|s| s.len()).sum()
    }

    fn view(&self, id: usize) -> CoreView {
        CoreView {
            load: CoreView::load_of(self.runnable),
            stealable: self.stealable(),
            runnable: self.runnable.iter().sum(),
            cluster: (id / CLUSTER) as u64,
        }
    }

    /// `ns` of this core's time (its factor applied).
    fn scale(&self, ns: u64) -> u64 {
        if self.factor == 1.0 { ns } else { (ns as f64 * self.factor).round() as u64 }
    }
}

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
    /// Summed shares of the cores not asleep (with `SimConfig::shares`).
    awake_shares: f64,
    searching: usize,
    shared: Shared,
    last_rebalance: u64,
    /// The kernel's idle-search durations and push-rebalance period at the simulated counter.
    search: SearchTiming,
    rebalance_period: u64,
    max_migrations_seen: u32,
    bound_home: Vec<Option<usize>>,
    bound_violations: u64,
    cooldown_violations: u64,
    done: usize,
    makespan: u64,
    /// Every increase of a process's `span` by an operation's cost, summed: [`Outcome::work`].
    work: u64,
    /// [`Sim::window`]'s marks of the cores already drawn, and its current stamp.
    window_marks: Vec<u64>,
    window_stamp: u64,
    events: u64,
}

fn latency_bucket(ns: u64) -> usize {
    let log = 64 - ns.leading_zeros() as usize;
    log.saturating_sub(7).min(9)
}

impl<'a> Sim<'a> {
    pub fn new(workload: Workload, policy: Policy, cfg: SimConfig, costs: &'a CostModel) -> Sim<'a> {
        let n = cfg.cores;
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
                    phase: Phase::Loop,
                    at: 0,
                    generation: 0,
                    // As the kernel's `sched::init_core_scheduler`: a counter reading mixed with the core's number.
                    rng: Rng::new(mix(cfg.seed, 1) ^ ((id as u64 + 1) << 32)),
                    window_rng: Rng::new(mix(cfg.seed, 2 + id as u64)),
                    adaptive: AdaptiveState::new(),
                    last_steal: vec![NEVER; n],
                    searching: false,
                    search_started: 0,
                    search_rounds: 0,
                    tick_phase: mix(cfg.seed, 1000 + id as u64) % cfg.slice_ns.max(1),
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
            awake_shares: 0.0,
            searching: 0,
            shared: Shared::default(),
            last_rebalance: 0,
            search: SearchTiming::at(COUNTER_HZ),
            rebalance_period: ns_to_counts(REBALANCE_PERIOD_NS, COUNTER_HZ),
            max_migrations_seen: 0,
            bound_home: Vec::new(),
            bound_violations: 0,
            cooldown_violations: 0,
            done: 0,
            makespan: 0,
            work: 0,
            window_marks: Vec::new(),
            window_stamp: 0,
            events: 0,
        };
        // The program's main: free, started on core 0 (`kernel_init`).
        if let Some(shares) = &sim.cfg.shares {
            sim.awake_shares = shares.iter().take(n).sum();
            sim.share_factors();
        }
        let main = sim.create(workload.main(), Priority::Normal, 0, false, 0);
        sim.enqueue_local(0, main, 0);
        for core in 0..n {
            sim.schedule(core, 0);
        }
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
            self.events += 1;
            self.step(core, at);
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
    fn set_awake(&mut self, core: usize, awake: bool) {
        let Some(share) = self.cfg.shares.as_ref().and_then(|s| s.get(core).copied()) else { return };
        self.awake_shares += if awake { share } else { -share };
        self.share_factors();
    }

    fn schedule(&mut self, core: usize, at: u64) {
        let c = &mut self.cores[core];
        c.generation += 1;
        c.at = at;
        self.heap.push(Reverse((at, core, c.generation)));
    }

    /// A new process on `core` (`spawn_with`); the caller makes it runnable.
    fn create(&mut self, program: Program, priority: Priority, core: usize, bound: bool, span: u64) -> u32 {
        let pid = self.procs.len() as u32;
        self.procs.push(Proc {
            program,
            priority,
            bound,
            core,
            migrations: 0,
            state: State::Runnable,
            mailbox: VecDeque::new(),
            low_passes: 0,
            reductions: 0,
            message: None,
            left: None,
            span,
            exits: 0,
            retry_receive: false,
        });
        self.bound_home.push(bound.then_some(core));
        self.cores[core].stats.spawned += 1;
        pid
    }

    fn may_move(&self, pid: u32) -> bool {
        let p = &self.procs[pid as usize];
        may_migrate(&self.policy.config, p.bound, p.migrations, p.priority == Priority::Max)
    }

    /// `enqueue_local`: on `core`'s own queues (its owner acting, at `now`).
    fn enqueue_local(&mut self, core: usize, pid: u32, now: u64) {
        let priority = self.procs[pid as usize].priority;
        let level = priority.level() as usize;
        let movable = self.may_move(pid);
        let c = &mut self.cores[core];
        c.runnable[priority as usize] += 1;
        if movable {
            // Never refused: a full deque spills to the overflow queue.
            let _placement = c.queues[level].push(u64::from(pid));
            if !self.sleepers.is_empty() {
                let stealable = self.cores[core].queues[level].len();
                self.wake_a_thief(core, stealable, now);
            }
        } else {
            c.private[level].push_back(pid);
        }
    }

    /// `wake_a_thief`: with enough stealable work here and no core searching, wake the
    /// lowest-numbered sleeper.
    fn wake_a_thief(&mut self, me: usize, stealable_here: usize, now: u64) {
        if !should_wake_a_thief(&self.policy.config, stealable_here, !self.sleepers.is_empty(), self.searching) {
            return;
        }
        if let Some(&other) = self.sleepers.iter().find(|&&c| c != me) {
            self.send_wake(other, now);
        }
    }

    /// A wake-up SGI to `core`: it leaves WFI `wake_latency` later, and never before it went
    /// into WFI. A core that ends a steal round goes to sleep at its own clock, which may be
    /// ahead of the sender's (its round's cost is charged at once): woken at the sender's time it
    /// would run before its round had ended, and its asleep time would come out negative.
    fn send_wake(&mut self, core: usize, now: u64) {
        if let Phase::Asleep { since } = self.cores[core].phase {
            let at = (now + self.costs.wake_latency).max(since);
            if at < self.cores[core].at {
                self.schedule(core, at);
            }
        }
    }

    /// `make_runnable`: queued directly on its own core when `actor` is that core, else through
    /// that core's inbox and a wake-up.
    fn make_runnable(&mut self, actor: usize, pid: u32, now: u64) {
        let target = self.procs[pid as usize].core;
        if target == actor {
            self.enqueue_local(target, pid, now);
        } else {
            self.cores[target].inbox.push_back(pid);
            self.send_wake(target, now);
        }
    }

    /// `take_next`: highest level first, FIFO within a level, private and stealable queues in
    /// turn, the low-priority rule applied.
    fn take_next(&mut self, core: usize, now: u64) -> Option<u32> {
        let c = &self.cores[core];
        let first_level = if c.runnable[Priority::Max as usize] != 0 {
            0
        } else if c.runnable[Priority::High as usize] != 0 {
            1
        } else {
            2
        };
        for level in first_level..LEVELS {
            loop {
                let c = &mut self.cores[core];
                let prefer_private = c.private_turn[level];
                c.private_turn[level] = !prefer_private;
                let take_queue = |c: &mut Core| match c.queues[level].take_oldest() {
                    Steal::Success(item) => Some(item as u32),
                    Steal::Empty | Steal::Retry => None,
                };
                let taken = if prefer_private || c.queues[level].is_empty() {
                    c.private[level].pop_front().or_else(|| take_queue(c))
                } else {
                    take_queue(c).or_else(|| c.private[level].pop_front())
                };
                let Some(pid) = taken else { break };
                let priority = self.procs[pid as usize].priority;
                self.cores[core].runnable[priority as usize] -= 1;
                let passes = &mut self.procs[pid as usize].low_passes;
                if low_priority_rule(priority, passes) == LowPriorityDecision::PassOver {
                    self.enqueue_local(core, pid, now);
                    continue;
                }
                self.cores[core].stats.local_pops += 1;
                return Some(pid);
            }
        }
        None
    }

    /// The cores a thief's views cover: all of them, or beyond [`VIEW_WINDOW`] the thief first
    /// and 63 others.
    fn window(&mut self, thief: usize) -> Vec<usize> {
        let n = self.cfg.cores;
        if n <= VIEW_WINDOW {
            return (0..n).collect();
        }
        let mut window = vec![thief];
        if self.policy.strategy == Strategy::Locality {
            let base = thief / CLUSTER * CLUSTER;
            window.extend((base..(base + CLUSTER).min(n)).filter(|&c| c != thief));
        }
        // Which cores are in already: marked with this call's stamp (the host's time only; the
        // same draws as a search of the window would make).
        self.window_stamp += 1;
        let stamp = self.window_stamp;
        self.window_marks.resize(n, 0);
        for &c in &window {
            self.window_marks[c] = stamp;
        }
        let rng = &mut self.cores[thief].window_rng;
        while window.len() < VIEW_WINDOW {
            let c = rng.below(n as u64) as usize;
            if self.window_marks[c] != stamp {
                self.window_marks[c] = stamp;
                window.push(c);
            }
        }
        window
    }

    fn views(&self, window: &[usize]) -> Vec<CoreView> {
        window.iter().map(|&c| self.cores[c].view(c)).collect()
    }

    /// Moves `pid`, just taken from `victim`'s stealable queue, to core `to` (`migrate`).
    fn migrate(&mut self, pid: u32, victim: usize, to: usize) {
        let priority = self.procs[pid as usize].priority;
        self.cores[victim].runnable[priority as usize] -= 1;
        let p = &mut self.procs[pid as usize];
        p.core = to;
        p.migrations += 1;
        self.max_migrations_seen = self.max_migrations_seen.max(p.migrations);
        self.cores[victim].stats.migrated_out += 1;
        self.cores[to].stats.migrated_in += 1;
    }

    /// `steal_from`: up to `count` processes from `victim`, highest level first.
    fn steal_from(&mut self, thief: usize, victim: usize, count: usize, now: u64) -> usize {
        let mut taken = 0;
        let mut lost_race = false;
        for level in 0..LEVELS {
            while taken < count {
                match self.cores[victim].stealers[level].steal() {
                    Steal::Success(item) => {
                        let pid = item as u32;
                        self.migrate(pid, victim, thief);
                        self.enqueue_local(thief, pid, now);
                        taken += 1;
                    }
                    Steal::Empty => break,
                    Steal::Retry => {
                        lost_race = true;
                        break;
                    }
                }
            }
        }
        if taken == 0 {
            let stats = &mut self.cores[thief].stats;
            if lost_race {
                stats.fail_lost_race += 1;
            } else {
                stats.fail_empty += 1;
            }
        }
        taken
    }

    /// Core 0's push rebalancing (`rebalance`).
    fn rebalance(&mut self, now: u64) -> u64 {
        let n = self.cfg.cores;
        let config = self.policy.config;
        if n < 2 || !rebalance_due(&config, now, self.last_rebalance, self.rebalance_period) {
            return 0;
        }
        self.last_rebalance = now;
        let views: Vec<CoreView> = (0..n).map(|c| self.cores[c].view(c)).collect();
        let cost = n as u64 * self.costs.view;
        let Some(RebalancePlan { from: busiest, to: idlest, batch }) = plan_rebalance(&config, &views, |_| true) else {
            return cost;
        };
        let mut moved = 0;
        'levels: for level in 0..LEVELS {
            while moved < batch {
                match self.cores[busiest].stealers[level].steal() {
                    Steal::Success(item) => {
                        let pid = item as u32;
                        self.migrate(pid, busiest, idlest);
                        self.make_runnable(0, pid, now);
                        moved += 1;
                    }
                    Steal::Empty => continue 'levels,
                    Steal::Retry => break 'levels,
                }
            }
        }
        self.cores[0].stats.rebalanced += moved as u64;
        cost + moved as u64 * (self.costs.steal + self.costs.migrate)
    }

    /// Does another core (of the window) hold `min_steal` stealable processes?
    fn work_elsewhere(&self, thief: usize, window: &[usize]) -> bool {
        let config = &self.policy.config;
        window.iter().filter(|&&c| c != thief).any(|&c| worth_a_thief(config, self.cores[c].stealable()))
    }

    fn stop_searching(&mut self, core: usize) {
        self.cores[core].searching = false;
        self.searching -= 1;
    }

    fn end_search(&mut self, core: usize) {
        if self.cores[core].searching {
            self.stop_searching(core);
        }
    }

    /// `search_a_little_longer`: the pause before the next loop pass, or `None` to sleep.
    fn search_pause(&mut self, core: usize, now: u64) -> Option<u64> {
        let n = self.cfg.cores;
        if n < 2 {
            return None;
        }
        if !self.cores[core].searching {
            if self.searching >= max_searchers(n) {
                return None;
            }
            self.searching += 1;
            let c = &mut self.cores[core];
            c.searching = true;
            c.search_started = now;
            c.search_rounds = 0;
        } else if search_spent(&self.search, self.cores[core].search_started, now) {
            self.stop_searching(core);
            return None;
        }
        let c = &mut self.cores[core];
        let pause = search_pause_counts(&self.search, c.search_rounds, c.rng.next_u64());
        c.search_rounds += 1;
        let pause = c.scale(pause);
        let window = self.window(core);
        if self.work_elsewhere(core, &window) {
            self.cores[core].stats.idle_with_work_ns += pause;
        }
        Some(pause)
    }

    /// One action of `core` at `now`.
    fn step(&mut self, core: usize, now: u64) {
        match std::mem::replace(&mut self.cores[core].phase, Phase::Loop) {
            Phase::Loop => self.loop_pass(core, now),
            Phase::Switch { pid, pending } => {
                self.after_switch(core, pid, pending, now);
                self.loop_pass(core, now);
            }
            Phase::Run { pid, slice_started, effect, preempt } => {
                self.run_step(core, now, pid, slice_started, effect, preempt)
            }
            Phase::Steal(round) => self.steal_attempt(core, now, round),
            Phase::Asleep { since } => {
                self.sleepers.remove(&core);
                self.set_awake(core, true);
                let slept = now - since;
                self.cores[core].stats.asleep_ns += slept;
                let window = self.window(core);
                if self.work_elsewhere(core, &window) {
                    self.cores[core].stats.idle_with_work_ns += slept;
                }
                self.loop_pass(core, now);
            }
        }
    }

    /// What `run` does once a process has switched out.
    fn after_switch(&mut self, core: usize, pid: u32, pending: Pending, now: u64) {
        match pending {
            Pending::Requeue | Pending::Preempted => {
                self.procs[pid as usize].state = State::Runnable;
                self.enqueue_local(core, pid, now);
            }
            // A message may have come while it switched out: the sender saw it waiting and
            // queued it already (through the inbox), as in the kernel.
            Pending::Block => {}
            Pending::Exit => {
                let p = &mut self.procs[pid as usize];
                p.state = State::Done;
                p.exits += 1;
                self.cores[core].stats.completed += 1;
                self.done += 1;
                self.makespan = self.makespan.max(now);
            }
        }
    }

    /// One pass of `run_loop` that found no job: inbox, rebalancing, the next process, or a
    /// steal round, search and sleep.
    fn loop_pass(&mut self, core: usize, now: u64) {
        let mut cost = LOOP_NS;
        while let Some(pid) = self.cores[core].inbox.pop_front() {
            self.enqueue_local(core, pid, now);
            cost += self.costs.push;
        }
        if core == 0 {
            cost += self.rebalance(now);
        }
        if let Some(pid) = self.take_next(core, now) {
            self.end_search(core);
            let c = &mut self.cores[core];
            c.stats.executed += 1;
            let start = now + c.scale(cost + self.costs.dispatch);
            let p = &mut self.procs[pid as usize];
            debug_assert_eq!(p.state, State::Runnable, "process {pid} dispatched twice");
            p.state = State::Running;
            p.reductions = i64::from(self.cfg.reductions);
            if let Some(home) = self.bound_home[pid as usize]
                && home != core
            {
                self.bound_violations += 1;
            }
            self.cores[core].phase = Phase::Run { pid, slice_started: start, effect: Effect::None, preempt: false };
            self.schedule(core, start);
            return;
        }
        self.start_round(core, now, cost);
    }

    fn start_round(&mut self, core: usize, now: u64, cost: u64) {
        if self.cfg.cores < 2 {
            // One core never steals; nothing runnable: sleep until work comes.
            let at = now + self.cores[core].scale(cost);
            self.sleep(core, at);
            return;
        }
        let window = self.window(core);
        let views = self.views(&window);
        let me = window.iter().position(|&c| c == core).expect("the thief is in its window");
        let strategy = self.policy.strategy;
        let c = &mut self.cores[core];
        let picked = VictimPicker::pick(
            deliberate_bug::strategy(strategy.effective(&c.adaptive)),
            me,
            &views,
            &mut c.rng,
            self.policy.config.retries as usize,
        );
        let picked = deliberate_bug::victims(picked.to_vec(), me, views.len());
        let victims = picked.iter().map(|&i| window[i]).collect();
        let thief_load = views[me].load;
        // The first attempt's backoff is zero, but `try_steal` draws its jitter all the same.
        let _ = c.rng.next_u64();
        let cost = cost + window.len() as u64 * self.costs.view;
        let at = now + c.scale(cost);
        c.phase = Phase::Steal(Round { victims, next: 0, cooled_at: None, thief_load, window });
        self.schedule(core, at);
    }

    /// One attempt of a round (`try_steal`'s loop body), then the next attempt, or the round's
    /// end.
    fn steal_attempt(&mut self, core: usize, now: u64, mut round: Round) {
        let config = self.policy.config;
        let Some(&victim) = round.victims.get(round.next) else {
            return self.end_round(core, now, round, 0);
        };
        round.next += 1;
        self.cores[core].stats.steal_attempts += 1;
        let view = self.cores[victim].view(victim);
        let mut cost = round.window.len() as u64 * self.costs.view + self.costs.attempt;
        let last = self.cores[core].last_steal[victim];
        let taken = match check_victim(&config, round.thief_load, &view, now, last) {
            Err(refusal) => {
                let stats = &mut self.cores[core].stats;
                match refusal {
                    Refusal::Empty => stats.fail_empty += 1,
                    Refusal::BelowThreshold => stats.fail_below_threshold += 1,
                    Refusal::Cooldown => {
                        round.cooled_at = cooldown_ends_at(&config, last, round.cooled_at);
                        stats.fail_cooldown += 1;
                    }
                    Refusal::MigrationLimit => stats.fail_migration_limit += 1,
                    // The simulator's processes have no allowed-core sets, and `check_victim`
                    // judges loads, never a process's set.
                    Refusal::NotAllowed => unreachable!("check_victim never refuses for a core set"),
                }
                0
            }
            Ok(()) => self.steal_from(
                core,
                victim,
                deliberate_bug::count(steal_count(config.amount, view.stealable), view.stealable),
                now,
            ),
        };
        let c = &mut self.cores[core];
        c.adaptive.record(taken > 0);
        if taken > 0 {
            cost += taken as u64 * (self.costs.steal + self.costs.migrate);
            let done_at = now + c.scale(cost);
            c.stats.steals += 1;
            c.stats.stolen += taken as u64;
            c.stats.stealable_seen += view.stealable as u64;
            c.stats.steal_latency[latency_bucket(done_at - now)] += 1;
            if last != NEVER {
                let gap = done_at.wrapping_sub(last);
                c.stats.min_steal_gap = c.stats.min_steal_gap.min(gap);
                // policy-check: a statistic (the kernel's rule, checked: it must count none)
                if gap < config.cooldown_counts {
                    self.cooldown_violations += 1;
                }
            }
            self.cores[core].last_steal[victim] = done_at;
            self.end_search(core);
            // If the victim still has work to spare and no core searches, wake another thief.
            let left = self.cores[victim].stealable();
            self.wake_a_thief(core, left, now);
            self.schedule(core, done_at);
            return;
        }
        if round.next < round.victims.len() {
            let pause = backoff_counts(&config, round.next as u32, c.rng.next_u64());
            let at = now + c.scale(cost + pause);
            c.phase = Phase::Steal(round);
            self.schedule(core, at);
            return;
        }
        self.end_round(core, now, round, cost);
    }

    /// A round that took nothing: come round again soon if a cooldown ends within a slice,
    /// else search a little longer, else sleep.
    fn end_round(&mut self, core: usize, now: u64, round: Round, cost: u64) {
        let now = now + self.cores[core].scale(cost);
        if let Some(at) = round.cooled_at
            && at.wrapping_sub(now) as i64 <= self.cfg.slice_ns as i64
        {
            let at = now + self.cores[core].scale(RELAX_NS);
            self.schedule(core, at);
            return;
        }
        match self.search_pause(core, now) {
            Some(pause) => self.schedule(core, now + pause),
            None => self.sleep(core, now),
        }
    }

    /// `sleep`: announce, look once more, then WFI until a wake-up or the next tick.
    fn sleep(&mut self, core: usize, now: u64) {
        if !self.cores[core].inbox.is_empty() {
            self.schedule(core, now);
            return;
        }
        self.sleepers.insert(core);
        if self.steal_would_succeed(core, now) {
            self.sleepers.remove(&core);
            self.schedule(core, now + self.cores[core].scale(LOOP_NS));
            return;
        }
        let slice = self.cfg.slice_ns.max(1);
        let phase = self.cores[core].tick_phase;
        let next_tick = if now < phase { phase } else { phase + ((now - phase) / slice + 1) * slice };
        self.cores[core].phase = Phase::Asleep { since: now };
        self.set_awake(core, false);
        self.schedule(core, next_tick);
    }

    fn steal_would_succeed(&mut self, thief: usize, now: u64) -> bool {
        if self.cfg.cores < 2 {
            return false;
        }
        let window = self.window(thief);
        let thief_load = self.cores[thief].view(thief).load;
        let config = self.policy.config;
        window.iter().filter(|&&v| v != thief).any(|&v| {
            check_victim(&config, thief_load, &self.cores[v].view(v), now, self.cores[thief].last_steal[v]).is_ok()
        })
    }

    /// The running process: its last operation completes now (its effect takes place), then it
    /// asks for the next.
    fn run_step(&mut self, core: usize, now: u64, pid: u32, slice_started: u64, effect: Effect, preempt: bool) {
        if preempt {
            // The tick ended its slice in the middle of a computation (kept in `left`).
            self.cores[core].stats.preemptions += 1;
            return self.switch_out(core, now, pid, slice_started, Pending::Preempted);
        }
        match effect {
            Effect::None => {}
            Effect::Compute { units, reductions } => {
                self.cores[core].stats.work += units;
                let p = &mut self.procs[pid as usize];
                p.reductions -= i64::from(reductions);
                if p.reductions <= 0 {
                    return self.switch_out(core, now, pid, slice_started, Pending::Requeue);
                }
            }
            Effect::Credit(units) => self.cores[core].stats.work += units,
            Effect::Spawn(spawn) => {
                let target = match spawn.placement {
                    Placement::Here => core,
                    Placement::OnCore(c) | Placement::Bound(c) => c.min(self.cfg.cores - 1),
                };
                let bound = matches!(spawn.placement, Placement::Bound(_));
                let span = self.procs[pid as usize].span;
                let child = self.create(spawn.program, spawn.priority, target, bound, span);
                self.make_runnable(core, child, now);
            }
            Effect::Send { to, word } => {
                let span = self.procs[pid as usize].span;
                let target = &mut self.procs[to as usize];
                if target.state != State::Done {
                    target.mailbox.push_back((word, span));
                    if target.state == State::Waiting {
                        target.state = State::Runnable;
                        self.make_runnable(core, to, now);
                    }
                }
            }
        }
        // Compute left over from a preemption comes first.
        if let Some((ns, units, reductions)) = self.procs[pid as usize].left.take() {
            return self.compute(core, now, pid, slice_started, ns, units, reductions);
        }
        let op = if std::mem::take(&mut self.procs[pid as usize].retry_receive) {
            Op::Receive
        } else {
            let p = &mut self.procs[pid as usize];
            let mut ctx = Ctx {
                me: pid,
                message: p.message.take(),
                cores: self.cfg.cores,
                costs: self.costs,
                shared: &mut self.shared,
            };
            p.program.next(&mut ctx)
        };
        let costs = self.costs;
        let (cost, effect) = match op {
            Op::Compute { ns, units, reductions } => {
                self.procs[pid as usize].span += ns;
                self.work += ns;
                return self.compute(core, now, pid, slice_started, ns, units, reductions);
            }
            Op::Credit(units) => (0, Effect::Credit(units)),
            Op::Spawn(spawn) => (costs.spawn, Effect::Spawn(spawn)),
            Op::Send { to, word } => (costs.send, Effect::Send { to, word }),
            Op::Receive => {
                let p = &mut self.procs[pid as usize];
                match p.mailbox.pop_front() {
                    Some((word, sent_span)) => {
                        p.span = p.span.max(sent_span);
                        p.message = Some(word);
                        (costs.receive, Effect::None)
                    }
                    None => {
                        // Block: the receive is tried again (and takes the message) once woken.
                        p.state = State::Waiting;
                        p.retry_receive = true;
                        return self.switch_out(core, now, pid, slice_started, Pending::Block);
                    }
                }
            }
            Op::Yield => return self.switch_out(core, now, pid, slice_started, Pending::Requeue),
            Op::Exit => {
                self.procs[pid as usize].span += costs.exit;
                self.work += costs.exit;
                let at = now + self.cores[core].scale(costs.exit);
                self.cores[core].stats.busy_ns += at - now;
                return self.switch_out(core, at, pid, slice_started, Pending::Exit);
            }
        };
        self.procs[pid as usize].span += cost;
        self.work += cost;
        let at = now + self.cores[core].scale(cost);
        self.cores[core].stats.busy_ns += at - now;
        self.cores[core].phase = Phase::Run { pid, slice_started, effect, preempt: false };
        self.schedule(core, at);
    }

    /// Computes `ns` (this core's factor applied), unless the tick ends the slice first.
    #[allow(clippy::too_many_arguments)]
    fn compute(&mut self, core: usize, now: u64, pid: u32, slice_started: u64, ns: u64, units: u64, reductions: u32) {
        let c = &self.cores[core];
        let end = now + c.scale(ns);
        // The first tick at which the slice is over: ticks come every slice at this core's phase.
        let slice = self.cfg.slice_ns.max(1);
        let due = slice_started + slice;
        let tick = if due <= c.tick_phase {
            c.tick_phase
        } else {
            c.tick_phase + (due - c.tick_phase).div_ceil(slice) * slice
        };
        if tick < end {
            let done_ns = ((tick - now) as f64 / c.factor).floor() as u64;
            self.procs[pid as usize].left = Some((ns - done_ns.min(ns), units, reductions));
            self.cores[core].stats.busy_ns += tick - now;
            self.cores[core].phase = Phase::Run { pid, slice_started, effect: Effect::None, preempt: true };
            self.schedule(core, tick);
            return;
        }
        self.cores[core].stats.busy_ns += end - now;
        self.cores[core].phase =
            Phase::Run { pid, slice_started, effect: Effect::Compute { units, reductions }, preempt: false };
        self.schedule(core, end);
    }

    /// The process gives the core back; the scheduler acts on `pending` once the switch is done.
    fn switch_out(&mut self, core: usize, now: u64, pid: u32, _slice_started: u64, pending: Pending) {
        let at = now + self.cores[core].scale(self.costs.switch_out);
        self.cores[core].stats.busy_ns += at - now;
        self.cores[core].phase = Phase::Switch { pid, pending };
        self.schedule(core, at);
    }
}

/// Deliberate bugs, built only with `--cfg sim_bug="<name>"` (never by `make sim`): the
/// calibration gate's self-test (`scripts/sim-calibrate.py --self-test`) builds the simulator
/// with each and requires the gate to fail on every one, so the gate is known to have power.
/// Without the cfg every function here is the identity.
mod deliberate_bug {
    use beamcore_sched_policy::balance::Strategy;

    /// `steal_all`: a thief takes everything it sees; `steal_two`: two instead of one.
    pub fn count(count: usize, stealable: usize) -> usize {
        if cfg!(sim_bug = "steal_all") {
            stealable
        } else if cfg!(sim_bug = "steal_two") {
            (count * 2).min(stealable)
        } else {
            count
        }
    }

    /// `random_default`: random victims whatever the strategy.
    pub fn strategy(strategy: Strategy) -> Strategy {
        if cfg!(sim_bug = "random_default") { Strategy::Random } else { strategy }
    }

    /// `index_order`: victims in index order, ignoring the picker (as many as it picked).
    pub fn victims(picked: Vec<usize>, me: usize, cores: usize) -> Vec<usize> {
        if !cfg!(sim_bug = "index_order") {
            return picked;
        }
        (0..cores).filter(|&c| c != me).take(picked.len()).collect()
    }
}
