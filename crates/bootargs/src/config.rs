//! The kernel's own settings: the [`Config`] they fill, its defaults, the `config:` line that
//! shows them, and the table of its words. Kept together so that adding a setting touches one
//! file: the field, its default, how it prints and its word.

use core::fmt;

use beamcore_limits::{MAX_CORES, MAX_PROCESSES};
use beamcore_sched_policy::balance::{BalanceConfig, DEFAULT_COOLDOWN_NS, StealAmount, Strategy};
use beamcore_sched_policy::placement::{QueueMode, SpawnPlacement};

use crate::table::{Setting, choice, number};
use crate::telemetry::Telemetry;

/// Settings chosen at boot. `Default` gives the documented defaults.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Config {
    /// Period of the per-core timer tick in microseconds (the scheduler's time slice).
    pub slice_us: u32,
    /// Most cores to bring up, counting the boot core (like Linux's `maxcpus=`).
    pub maxcpus: usize,
    /// Timer ticks every core waits in the boot workload before reporting (at most [`MAX_TICKS`]).
    pub ticks: u32,
    /// Reductions (units of work) a process may spend in one slice before it must yield.
    pub reductions: u32,
    /// How idle cores choose whom to steal from.
    pub strategy: Strategy,
    /// Thresholds, migration limit, amount, protection, rebalancing (its durations in counts of
    /// the counter are set by the kernel from `cooldown_ns` and the counter's frequency).
    pub balance: BalanceConfig,
    /// No steal from the same victim within this many nanoseconds of the last success.
    pub cooldown_ns: u64,
    /// Record scheduling events per core and dump them at the end of the run.
    pub trace: bool,
    /// Events each core's trace buffer keeps (its newest; older ones are dropped and counted).
    /// [`DEFAULT_TRACE_EVENTS`] unless set, and then not printed.
    pub trace_events: u32,
    /// What each process turn records beyond what correctness needs (queue-wait histogram,
    /// per-process heap accounting, take counts).
    pub telemetry: Telemetry,
    /// Most processes alive at once: `spawn` fails with `TableFull` beyond (like ERTS's `+P`).
    pub max_processes: usize,
    /// Where runnable processes wait: per-core deques (with stealing) or one shared queue.
    pub queues: QueueMode,
    /// On which core a new free process starts when its spawner names none.
    pub placement: SpawnPlacement,
    /// Seeds every core's random choices (victims, backoff and search jitter): the same seed
    /// gives the same choices, another seed others, so a run under `-icount` can be repeated
    /// with different luck. 0: each core seeds from the counter at boot.
    pub seed: u64,
    /// Instructions (`nop`s) the boot core executes before it starts the other cores. Under
    /// `-icount` a few instructions more at boot redraw how QEMU shares its turns among the
    /// vCPUs, as any small change to the kernel does; the calibration samples that on purpose
    /// (docs/simulator.md). 0 by default, and then not printed.
    pub boot_jitter: u32,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            slice_us: 1000,
            maxcpus: MAX_CORES,
            ticks: 10,
            reductions: 4000,
            strategy: Strategy::Load,
            balance: BalanceConfig::default(),
            cooldown_ns: DEFAULT_COOLDOWN_NS,
            trace: false,
            trace_events: DEFAULT_TRACE_EVENTS,
            telemetry: Telemetry::Full,
            max_processes: MAX_PROCESSES,
            queues: QueueMode::PerCore,
            placement: SpawnPlacement::Local,
            seed: 0,
            boot_jitter: 0,
        }
    }
}

impl fmt::Display for Config {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let b = &self.balance;
        let on_off = |on: bool| if on { "on" } else { "off" };
        write!(
            f,
            "slice_us={} maxcpus={} ticks={} reductions={} strategy={} min_steal={} imbalance={} retries={} \
             cooldown={} max_migrations={} steal={} protect_max={} rebalance={} rebalance_ratio={} trace={} telemetry={} max_processes={} \
             queues={} placement={} seed={}",
            self.slice_us,
            self.maxcpus,
            self.ticks,
            self.reductions,
            self.strategy,
            b.min_steal,
            b.imbalance,
            b.retries,
            self.cooldown_ns,
            b.max_migrations,
            if b.amount == StealAmount::One { "one" } else { "half" },
            on_off(b.protect_max),
            on_off(b.rebalance),
            b.rebalance_ratio,
            on_off(self.trace),
            self.telemetry,
            self.max_processes,
            self.queues,
            self.placement,
            self.seed
        )?;
        if self.boot_jitter != 0 {
            write!(f, " boot_jitter={}", self.boot_jitter)?;
        }
        if self.trace_events != DEFAULT_TRACE_EVENTS {
            write!(f, " trace_events={}", self.trace_events)?;
        }
        Ok(())
    }
}

const STRATEGIES: &[&str] = &["random", "load", "locality", "p2c", "adaptive"];
/// `on|off` (the index is 1 for `on`).
pub const ON_OFF: &[&str] = &["off", "on"];

pub(crate) const SETTINGS: &[Setting<Config>] = &[
    number("slice_us", 100, 1_000_000, |c, v| c.slice_us = v as u32),
    number("maxcpus", 1, MAX_CORES as u64, |c, v| c.maxcpus = v as usize),
    number("ticks", 1, MAX_TICKS, |c, v| c.ticks = v as u32),
    number("reductions", 1, 1_000_000, |c, v| c.reductions = v as u32),
    choice("strategy", STRATEGIES, |c, i| c.strategy = Strategy::ALL[i]),
    number("min_steal", 1, 1_000, |c, v| c.balance.min_steal = v as usize),
    number("imbalance", 0, 1_000_000, |c, v| c.balance.imbalance = v),
    number("retries", 1, 64, |c, v| c.balance.retries = v as u32),
    number("cooldown", 0, 1 << 40, |c, v| c.cooldown_ns = v),
    number("max_migrations", 0, 1_000_000, |c, v| c.balance.max_migrations = v as u32),
    choice("steal", &["one", "half"], |c, i| c.balance.amount = [StealAmount::One, StealAmount::Half][i]),
    choice("protect_max", ON_OFF, |c, i| c.balance.protect_max = i == 1),
    choice("rebalance", ON_OFF, |c, i| c.balance.rebalance = i == 1),
    number("rebalance_ratio", 2, 1_000, |c, v| c.balance.rebalance_ratio = v),
    choice("trace", ON_OFF, |c, i| c.trace = i == 1),
    number("trace_events", 16, MAX_TRACE_EVENTS, |c, v| c.trace_events = v as u32),
    choice("telemetry", Telemetry::NAMES, |c, i| c.telemetry = Telemetry::ALL[i]),
    number("max_processes", 1, MAX_PROCESSES as u64, |c, v| c.max_processes = v as usize),
    choice("queues", QueueMode::NAMES, |c, i| c.queues = QueueMode::ALL[i]),
    choice("placement", SpawnPlacement::NAMES, |c, i| c.placement = SpawnPlacement::ALL[i]),
    number("seed", 0, u64::MAX, |c, v| c.seed = v),
    number("boot_jitter", 0, MAX_BOOT_JITTER, |c, v| c.boot_jitter = v as u32),
];

/// Events a core's trace buffer keeps by default: 96 KiB a core, the last few milliseconds of a
/// busy core's turns.
pub const DEFAULT_TRACE_EVENTS: u32 = 4096;

/// Largest `trace_events=`: 6 MiB a core (24 bytes an event), enough for every event of the
/// workloads' runs at their kernel sizes (fib(18) records about 20,000 on its busiest core).
pub const MAX_TRACE_EVENTS: u64 = 262_144;

/// Largest `boot_jitter=`: a million instructions, a millisecond of guest time under `-icount`.
pub const MAX_BOOT_JITTER: u64 = 1_000_000;

/// Largest `ticks=`: the boot check of `make run` waits this many ticks with no progress line,
/// so at the default 1 ms tick at most 10 s.
pub const MAX_TICKS: u64 = 10_000;
