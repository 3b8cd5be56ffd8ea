//! The engine's own state: what it keeps per process ([`Proc`], its [`State`] and what its
//! operation does on completion, [`Effect`]), per core ([`Core`], its [`Phase`] in the scheduler
//! loop, a steal [`Round`]) and the kernel-named counters each core reports ([`CoreStats`]).
//! The methods that change them are the engine's other modules; this one only defines them.

use std::collections::VecDeque;

use beamcore_deque::{Portable, WorkQueue, WorkQueueStealer};
use beamcore_sched_policy::Priority;
use beamcore_sched_policy::balance::{AdaptiveState, CoreView, Rng};
use beamcore_sched_policy::priority::LEVELS;
use beamcore_sched_policy::run_next::RunNextStreak;

use super::CLUSTER;
use crate::workload::Program;

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
    /// Processes stolen that had not run yet (fresh from their spawn): a thief that takes one
    /// takes all its work to come, where one that takes a process that ran before takes what is
    /// left of it (`scripts/steal_mix.py` reads the same from the kernel's trace).
    pub stolen_fresh: u64,
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
    /// Sleeps a wake-up SGI ended, and their summed latency from the first SGI sent during the
    /// sleep to its end (the kernel's `wakes` and `wake_latency_ns`).
    pub wakes: u64,
    pub wake_latency_ns: u64,
    /// Smallest gap between two successful steals of this thief from one victim (ns).
    pub min_steal_gap: u64,
    /// Steal latency: bucket i counts steals below 2^(i+7) ns (the last, all above).
    pub steal_latency: [u64; 10],
    /// Time spent running processes (dispatch to switch-out), ns.
    pub busy_ns: u64,
}

/// What a process is doing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum State {
    Runnable,
    Running,
    Waiting,
    Done,
}

pub(super) struct Proc {
    pub(super) program: Program,
    pub(super) priority: Priority,
    pub(super) bound: bool,
    pub(super) core: usize,
    pub(super) migrations: u32,
    pub(super) state: State,
    /// Waiting messages: (word, the earliest time it could have been sent: its critical path).
    pub(super) mailbox: VecDeque<(u64, u64)>,
    pub(super) low_passes: u8,
    pub(super) reductions: i64,
    /// The message the program's last `Receive` took, handed to it with its next step.
    pub(super) message: Option<u64>,
    /// Compute left after a preemption: (ns, units to credit, reductions to charge).
    pub(super) left: Option<(u64, u64, u32)>,
    /// Critical path: the earliest this process could have reached where it is (ns).
    pub(super) span: u64,
    pub(super) exits: u32,
    /// It blocked in `receive`: the receive is tried again when it next runs.
    pub(super) retry_receive: bool,
    /// It has been dispatched at least once.
    pub(super) ran: bool,
}

/// What the running process's current operation does when it completes.
pub(super) enum Effect {
    None,
    Compute {
        units: u64,
        reductions: u32,
    },
    Spawn(Box<crate::workload::Spawn>),
    /// A spawn making its slot, the shared lock (`making`) held until the slot is made; then
    /// the lock is let go and the spawn goes on outside it for `rest`.
    SpawnMade {
        spawn: Box<crate::workload::Spawn>,
        rest: u64,
    },
    /// A spawn that must make a slot and found the shared lock held: spinning on it since `since`,
    /// then `growth` more than a spawn into a reused slot.
    AwaitMaking {
        spawn: Box<crate::workload::Spawn>,
        growth: u64,
        since: u64,
    },
    Send {
        to: u32,
        word: u64,
    },
    Credit(u64),
}

/// What the scheduler does with a process once it has switched out (`Pending`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Pending {
    Requeue,
    Preempted,
    Block,
    Exit,
}

pub(super) enum Phase {
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

pub(super) struct Round {
    pub(super) victims: Vec<usize>,
    pub(super) next: usize,
    pub(super) cooled_at: Option<u64>,
    pub(super) thief_load: u64,
    /// Cores the thief's views cover (all, or its window beyond [`VIEW_WINDOW`]).
    pub(super) window: Vec<usize>,
}

pub(super) struct Core {
    pub(super) queues: [WorkQueue<Portable>; LEVELS],
    pub(super) stealers: [WorkQueueStealer<Portable>; LEVELS],
    pub(super) private: [VecDeque<u32>; LEVELS],
    pub(super) private_turn: [bool; LEVELS],
    pub(super) runnable: [usize; 4],
    pub(super) inbox: VecDeque<u32>,
    /// A process a message sent on this core woke (the kernel's "run next" slot): counted as
    /// runnable, not stealable, taken before the rest of its level under `run_next_streak`.
    pub(super) run_next: Option<u32>,
    pub(super) run_next_streak: RunNextStreak,
    pub(super) phase: Phase,
    /// When this core acts next, and a generation that invalidates older heap entries.
    pub(super) at: u64,
    pub(super) generation: u64,
    pub(super) rng: Rng,
    pub(super) window_rng: Rng,
    pub(super) adaptive: AdaptiveState,
    pub(super) last_steal: Vec<u64>,
    pub(super) searching: bool,
    /// When work worth a thief was first offered during this core's sleep (`idle::sleep`,
    /// `queues::wake_a_thief`), as the kernel's `run::idle` records it.
    pub(super) work_offered_at: Option<u64>,
    /// When a wake-up SGI was first sent to this core during its current sleep (the kernel's
    /// `WAKE_SENT_AT`), for its wake-up latency.
    pub(super) wake_sent_at: Option<u64>,
    pub(super) search_started: u64,
    pub(super) search_rounds: u32,
    /// When this core's current search pause began: the kernel charges the pause as idle with
    /// work by the counter when the core comes back (`cpu::counter() - since`), which under
    /// QEMU's turns is when its turn comes round again, not when the pause was due to end.
    pub(super) pause_since: Option<u64>,
    pub(super) tick_phase: u64,
    /// Under QEMU's turns: the time up to which this core has taken its ticks' interrupts (a
    /// tick after it is pending until the core next runs with interrupts open).
    pub(super) ticks_taken_until: u64,
    pub(super) factor: f64,
    pub(super) stats: CoreStats,
}

impl Core {
    pub(super) fn stealable(&self) -> usize {
        self.stealers.iter().map(|s| s.len()).sum()
    }

    pub(super) fn view(&self, id: usize) -> CoreView {
        CoreView {
            load: CoreView::load_of(self.runnable),
            stealable: self.stealable(),
            runnable: self.runnable.iter().sum(),
            cluster: (id / CLUSTER) as u64,
        }
    }

    /// How many ticks this core has taken by `now` (the kernel's `smp` tick count since the
    /// start: a tick at `now` itself is taken, as the loop pass that follows a preemption comes
    /// after its handler).
    pub(super) fn ticks_by(&self, slice: u64, now: u64) -> u64 {
        if now < self.tick_phase { 0 } else { (now - self.tick_phase) / slice + 1 }
    }

    /// This core's first tick at or after `at`: its ticks come every `slice` at its phase.
    pub(super) fn next_tick(&self, slice: u64, at: u64) -> u64 {
        let phase = self.tick_phase;
        if at <= phase { phase } else { phase + (at - phase).div_ceil(slice) * slice }
    }

    /// The tick that ends a slice begun at `slice_started`: the first of this core's ticks at or
    /// after a whole slice (the kernel's tick preempts once `counter - slice_started` reaches
    /// the slice).
    pub(super) fn slice_ends_at(&self, slice: u64, slice_started: u64) -> u64 {
        self.next_tick(slice, slice_started + slice)
    }

    /// Under QEMU's turns, the core takes a pending tick at `now` (its turn has come back, or
    /// the kernel call in which the tick came has ended): whether that tick ends the slice
    /// begun at `slice_started`. The kernel's tick asks `counter - slice_started >= slice`
    /// when it is taken, so a tick that came a little before the slice's end ends it if it
    /// is taken after (QEMU's log shows such a tick taken 5 us late, core 0 waiting for two
    /// other vCPUs' fresh turns); one taken before leaves the slice to the next tick.
    pub(super) fn take_pending_tick(&mut self, slice: u64, now: u64, slice_started: u64) -> bool {
        if self.next_tick(slice, self.ticks_taken_until + 1) > now {
            return false;
        }
        self.ticks_taken_until = now;
        now.saturating_sub(slice_started) >= slice
    }

    /// `ns` of this core's time (its factor applied).
    pub(super) fn scale(&self, ns: u64) -> u64 {
        if self.factor == 1.0 { ns } else { (ns as f64 * self.factor).round() as u64 }
    }
}
