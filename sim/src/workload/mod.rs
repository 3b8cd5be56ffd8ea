//! The workloads of `apps/workloads.rs`, as process programs the simulator runs: the same
//! processes, spawned where the kernel spawns them, with the same priorities, bindings,
//! messages and reductions; their computation is a duration from the cost model instead of
//! real instructions.
//!
//! A program is a small state machine: [`Program::next`] returns the process's next operation
//! once the previous one has completed (a received message is handed to it in [`Ctx`]).
//!
//! This module holds what the engine and the programs share: the operations a process asks
//! for ([`Op`], [`Spawn`], [`Placement`]), what it sees ([`Ctx`], [`Shared`]) and the programs
//! themselves ([`Program`]). The workloads by name and size are `catalog`'s, the programs'
//! steps `programs`', the nqueens tasks (whose tree is searched once) `queens`'. Those three
//! depend on this module and `programs` on the other two, never the other way: no cycle.

mod catalog;
mod programs;
pub mod queens;

use beamcore_sched_policy::Priority;

pub use catalog::Workload;
use queens::QueensTask;

use crate::cost::CostModel;

/// Where a spawned process starts (`SpawnOptions`): on the spawner's core, on a given core
/// (free to move), or bound to a core for good.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Placement {
    Here,
    OnCore(usize),
    Bound(usize),
}

/// What a process asks for next.
#[derive(Debug)]
pub enum Op {
    /// Computes for `ns` (before the core's speed factor), then credits `units` of work to the
    /// core it finished on and charges `reductions` (yielding when the slice's budget is spent,
    /// as `bump_reductions` does).
    Compute {
        ns: u64,
        units: u64,
        reductions: u32,
    },
    /// Credits units of work without computing (the kernel's `credit`, for work that is the
    /// messaging itself).
    Credit(u64),
    Spawn(Box<Spawn>),
    Send {
        to: u32,
        word: u64,
    },
    /// Takes the next message, blocking while there is none.
    Receive,
    Yield,
    Exit,
}

/// A process to spawn.
#[derive(Debug)]
pub struct Spawn {
    pub program: Program,
    pub priority: Priority,
    pub placement: Placement,
}

/// What a program sees when asked for its next operation.
pub struct Ctx<'a> {
    /// Its own pid.
    pub me: u32,
    /// The message its last `Receive` took.
    pub message: Option<u64>,
    pub cores: usize,
    pub costs: &'a CostModel,
    /// Whether the program's main checks its answer as the kernel's does (`SimConfig`).
    pub main_checks: bool,
    /// State the workload's processes share (the kernel's atomics).
    pub shared: &'a mut Shared,
}

/// What processes of one workload share.
#[derive(Debug, Default)]
pub struct Shared {
    /// `grain`: tasks that have ended.
    pub grain_done: u64,
}

/// The reductions a unit charges (`workloads::unit` calls `bump_reductions(500)`).
const UNIT_REDUCTIONS: u32 = 500;
/// `workloads::GRAIN_WINDOW`: most grain tasks alive at once.
pub(super) const GRAIN_WINDOW: u64 = 1024;

/// A process's program and where it is in it.
#[derive(Debug)]
pub enum Program {
    Main {
        workload: Workload,
        pc: u32,
        index: u64,
    },
    /// A worker of `imbalanced` or `mixed`: `units` units, then one word to main.
    Worker {
        units: u32,
        done: u32,
        main: u32,
        sent: bool,
    },
    Fib {
        n: u32,
        parent: u32,
        pc: u32,
    },
    /// An nqueens task (`queens`).
    Queens(QueensTask),
    Uts {
        id: u64,
        kids: u64,
        depth: u32,
        children: u64,
        percent: u64,
        parent: u32,
        pc: u32,
        i: u64,
    },
    BangReceiver {
        left: u64,
        credit: u64,
        main: u32,
        pc: u32,
    },
    BangSender {
        left: u64,
        receiver: u32,
        credit: u64,
        pc: u32,
    },
    GrainSpawner {
        next: u64,
        tasks: u64,
        grain_ns: u64,
        main: u32,
    },
    GrainTask {
        grain_ns: u64,
        tasks: u64,
        main: u32,
        pc: u32,
    },
}

pub(super) fn spawn(program: Program, priority: Priority, placement: Placement) -> Op {
    Op::Spawn(Box::new(Spawn { program, priority, placement }))
}

pub(super) fn unit(costs: &CostModel) -> Op {
    Op::Compute { ns: costs.unit, units: 1, reductions: UNIT_REDUCTIONS }
}
