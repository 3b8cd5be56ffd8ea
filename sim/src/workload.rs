//! The workloads of `apps/workloads.rs`, as process programs the simulator runs: the same
//! processes, spawned where the kernel spawns them, with the same priorities, bindings,
//! messages and reductions; their computation is a duration from the cost model instead of
//! real instructions.
//!
//! A program is a small state machine: [`Program::next`] returns the process's next operation
//! once the previous one has completed (a received message is handed to it in [`Ctx`]).

use beamcore_sched_policy::Priority;
use beamcore_workload_shapes::{grain_chunks, uts_child_id, uts_children, uts_count};

use crate::cost::CostModel;
use crate::queens::{QueensTask, QueensTree};

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
    /// State the workload's processes share (the kernel's atomics).
    pub shared: &'a mut Shared,
}

/// What processes of one workload share.
#[derive(Debug, Default)]
pub struct Shared {
    /// `grain`: tasks that have ended.
    pub grain_done: u64,
}

/// One of the kernel's workloads, with its size.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Workload {
    /// `fib(n)`: fork-join Fibonacci, two children per node.
    Fib { n: u32 },
    /// `imbalanced(workers, units)`: all spawned on core 0.
    Imbalanced { workers: u32, units: u32 },
    /// `nqueens(n, split)`: one task per placement of the first two queens, spawned on core 0,
    /// each splitting further until `split` queens are placed (src/queens.rs).
    Nqueens { n: u32, split: u32 },
    /// `uts(roots, children, percent)`: a binomial unbalanced tree, one process per node.
    Uts { roots: u32, children: u32, percent: u32 },
    /// `mixed(workers, units)`: four priorities, every fifth bound.
    Mixed { workers: u32, units: u32 },
    /// `bang(senders, messages)`: many senders, one receiver.
    Bang { senders: u32, messages: u32 },
    /// `grain(grain_ns, total)`: `total_ns` of work in tasks of `grain_ns`, one spawner on core 0.
    Grain { grain_ns: u64, total_ns: u64 },
}

impl Workload {
    /// The workloads `make sim` runs, with the kernel's sizes (`workloads::run`).
    pub const NAMES: [&'static str; 7] = ["fib", "nqueens", "uts", "imbalanced", "mixed", "bang", "grain"];

    /// A workload by name, at the size the kernel runs it (`grain` at its bootarg defaults:
    /// 10 us tasks, 120 ms).
    pub fn kernel(name: &str) -> Option<Workload> {
        Some(match name {
            "fib" => Workload::Fib { n: 18 },
            "imbalanced" => Workload::Imbalanced { workers: 400, units: 40 },
            "nqueens" => Workload::Nqueens { n: 13, split: 2 },
            "uts" => Workload::Uts { roots: 1000, children: 4, percent: 20 },
            "mixed" => Workload::Mixed { workers: 200, units: 30 },
            "bang" => Workload::Bang { senders: 300, messages: 1000 },
            "grain" => Workload::grain(10_000),
            _ => return None,
        })
    }

    /// The granularity workload with tasks of `grain_ns` (120 ms of work in all, as
    /// `make bench BENCH=grain`).
    pub fn grain(grain_ns: u64) -> Workload {
        Workload::Grain { grain_ns, total_ns: 120_000_000 }
    }

    /// The workload with the sizes `words` gives, bootargs-style `key=value` words separated by
    /// spaces or commas (`n=22`, `workers=4000 units=300`); a key it does not name keeps its
    /// value. The keys are the arguments of `apps/workloads.rs`'s function: fib `n`; nqueens `n`, `split`;
    /// imbalanced and mixed `workers`, `units`; uts `roots`, `children`, `percent`; bang
    /// `senders`, `messages`; grain `grain_ns`, `total_ns`.
    pub fn sized(self, words: &str) -> Result<Workload, String> {
        let mut w = self;
        for word in words.split([' ', ',']).filter(|w| !w.is_empty()) {
            let (key, value) = word.split_once('=').ok_or_else(|| format!("{word}: expected key=value"))?;
            let value: u64 = value.parse().map_err(|_| format!("{word}: not a number"))?;
            let small = || u32::try_from(value).map_err(|_| format!("{word}: too large"));
            match (&mut w, key) {
                (Workload::Fib { n } | Workload::Nqueens { n, .. }, "n") => *n = small()?,
                (Workload::Nqueens { split, .. }, "split") => *split = small()?,
                (Workload::Imbalanced { workers, .. } | Workload::Mixed { workers, .. }, "workers") => {
                    *workers = small()?
                }
                (Workload::Imbalanced { units, .. } | Workload::Mixed { units, .. }, "units") => *units = small()?,
                (Workload::Uts { roots, .. }, "roots") => *roots = small()?,
                (Workload::Uts { children, .. }, "children") => *children = small()?,
                (Workload::Uts { percent, .. }, "percent") => *percent = small()?,
                (Workload::Bang { senders, .. }, "senders") => *senders = small()?,
                (Workload::Bang { messages, .. }, "messages") => *messages = small()?,
                (Workload::Grain { grain_ns, .. }, "grain_ns") => *grain_ns = value,
                (Workload::Grain { total_ns, .. }, "total_ns") => *total_ns = value,
                _ => return Err(format!("{word}: {} has no size {key}", self.name())),
            }
        }
        if let Workload::Fib { n } = w
            && n > 40
        {
            return Err(format!("fib n={n}: more than 40 would not fit in memory"));
        }
        if let Workload::Nqueens { n, split } = w
            && !((4..=20).contains(&n) && (2..=n).contains(&split))
        {
            return Err(format!("nqueens n={n} split={split}: n 4 to 20, split 2 to n"));
        }
        Ok(w)
    }

    /// The workload's sizes as `key=value` words ([`Workload::sized`] reads them back).
    pub fn size(&self) -> String {
        match *self {
            Workload::Fib { n } => format!("n={n}"),
            Workload::Nqueens { n, split } => format!("n={n} split={split}"),
            Workload::Imbalanced { workers, units } | Workload::Mixed { workers, units } => {
                format!("workers={workers} units={units}")
            }
            Workload::Uts { roots, children, percent } => {
                format!("roots={roots} children={children} percent={percent}")
            }
            Workload::Bang { senders, messages } => format!("senders={senders} messages={messages}"),
            Workload::Grain { grain_ns, total_ns } => format!("grain_ns={grain_ns} total_ns={total_ns}"),
        }
    }

    pub fn name(&self) -> &'static str {
        match self {
            Workload::Fib { .. } => "fib",
            Workload::Imbalanced { .. } => "imbalanced",
            Workload::Nqueens { .. } => "nqueens",
            Workload::Uts { .. } => "uts",
            Workload::Mixed { .. } => "mixed",
            Workload::Bang { .. } => "bang",
            Workload::Grain { .. } => "grain",
        }
    }

    /// The program's main process (the kernel runs it on core 0).
    pub fn main(&self) -> Program {
        Program::Main { workload: *self, pc: 0, index: 0 }
    }

    /// Processes the workload spawns besides main: each must end exactly once.
    pub fn processes(&self) -> u64 {
        match *self {
            Workload::Fib { n } => fib_nodes(n),
            Workload::Imbalanced { workers, .. } | Workload::Mixed { workers, .. } => u64::from(workers),
            Workload::Nqueens { n, split } => QueensTree::of(n, split).processes,
            Workload::Uts { roots, children, percent } => uts_nodes(roots, children, percent),
            Workload::Bang { senders, .. } => u64::from(senders) + 1,
            Workload::Grain { grain_ns, total_ns } => grain_tasks(grain_ns, total_ns) + 1,
        }
    }

    /// Work units the workload credits in all (the report's per-core `work`, summed).
    pub fn units(&self) -> u64 {
        match *self {
            Workload::Fib { n } => fib_leaves(n),
            Workload::Imbalanced { workers, units } | Workload::Mixed { workers, units } => {
                u64::from(workers) * u64::from(units)
            }
            Workload::Nqueens { n, split } => QueensTree::of(n, split).units,
            Workload::Uts { roots, children, percent } => uts_nodes(roots, children, percent),
            Workload::Bang { senders, messages } => {
                let (s, m) = (u64::from(senders), u64::from(messages));
                s * (m / 16) + s * m / 16
            }
            Workload::Grain { grain_ns, total_ns } => grain_tasks(grain_ns, total_ns) * grain_ns.max(1),
        }
    }
}

fn grain_tasks(grain_ns: u64, total_ns: u64) -> u64 {
    (total_ns / grain_ns.max(1)).max(1)
}

/// Processes of `fib(n)`'s tree (the root included).
fn fib_nodes(n: u32) -> u64 {
    if n < 2 { 1 } else { 1 + fib_nodes(n - 1) + fib_nodes(n - 2) }
}

/// Leaves of `fib(n)`'s tree: each does one unit.
fn fib_leaves(n: u32) -> u64 {
    if n < 2 { 1 } else { fib_leaves(n - 1) + fib_leaves(n - 2) }
}

/// Nodes of the `uts` tree (one process each).
fn uts_nodes(roots: u32, children: u32, percent: u32) -> u64 {
    let (c, p) = (u64::from(children), u64::from(percent));
    1 + (0..u64::from(roots)).map(|i| uts_count(uts_child_id(0, i), c, p, 1)).sum::<u64>()
}

/// The reductions a unit charges (`workloads::unit` calls `bump_reductions(500)`).
const UNIT_REDUCTIONS: u32 = 500;
/// `workloads::GRAIN_WINDOW`: most grain tasks alive at once.
const GRAIN_WINDOW: u64 = 1024;

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
    /// An nqueens task (src/queens.rs).
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

fn spawn(program: Program, priority: Priority, placement: Placement) -> Op {
    Op::Spawn(Box::new(Spawn { program, priority, placement }))
}

fn unit(costs: &CostModel) -> Op {
    Op::Compute { ns: costs.unit, units: 1, reductions: UNIT_REDUCTIONS }
}

impl Program {
    /// The next operation, the previous one having completed.
    pub fn next(&mut self, ctx: &mut Ctx<'_>) -> Op {
        match self {
            Program::Main { workload, pc, index } => main_next(*workload, pc, index, ctx),
            Program::Worker { units, done, main, sent } => {
                if *done < *units {
                    *done += 1;
                    unit(ctx.costs)
                } else if !*sent {
                    *sent = true;
                    Op::Send { to: *main, word: 0 }
                } else {
                    Op::Exit
                }
            }
            Program::Fib { n, parent, pc } => {
                *pc += 1;
                match (*n < 2, *pc) {
                    (true, 1) => unit(ctx.costs),
                    (true, 2) => Op::Send { to: *parent, word: *n as u64 },
                    (false, 1) => {
                        spawn(Program::Fib { n: *n - 1, parent: ctx.me, pc: 0 }, Priority::Normal, Placement::Here)
                    }
                    (false, 2) => {
                        spawn(Program::Fib { n: *n - 2, parent: ctx.me, pc: 0 }, Priority::Normal, Placement::Here)
                    }
                    (false, 3 | 4) => Op::Receive,
                    (false, 5) => Op::Send { to: *parent, word: 0 },
                    _ => Op::Exit,
                }
            }
            Program::Queens(task) => task.next(ctx),
            Program::Uts { id, kids, depth, children, percent, parent, pc, i } => match *pc {
                0 => {
                    *pc = 1;
                    unit(ctx.costs)
                }
                1 if *i < *kids => {
                    let child = uts_child_id(*id, *i);
                    *i += 1;
                    let grandchildren = if *depth >= 64 { 0 } else { uts_children(child, *children, *percent) };
                    let program = Program::Uts {
                        id: child,
                        kids: grandchildren,
                        depth: *depth + 1,
                        children: *children,
                        percent: *percent,
                        parent: ctx.me,
                        pc: 0,
                        i: 0,
                    };
                    spawn(program, Priority::Normal, Placement::Here)
                }
                1 => {
                    *pc = 2;
                    *i = 0;
                    self.next(ctx)
                }
                2 if *i < *kids => {
                    *i += 1;
                    Op::Receive
                }
                2 => {
                    *pc = 3;
                    Op::Send { to: *parent, word: 0 }
                }
                _ => Op::Exit,
            },
            Program::BangReceiver { left, credit, main, pc } => {
                if *left > 0 {
                    *left -= 1;
                    return Op::Receive;
                }
                *pc += 1;
                match *pc {
                    1 => Op::Credit(*credit),
                    2 => Op::Send { to: *main, word: 0 },
                    _ => Op::Exit,
                }
            }
            Program::BangSender { left, receiver, credit, pc } => {
                if *left > 0 {
                    *left -= 1;
                    return Op::Send { to: *receiver, word: 0 };
                }
                *pc += 1;
                match *pc {
                    1 => Op::Credit(*credit),
                    _ => Op::Exit,
                }
            }
            Program::GrainSpawner { next, tasks, grain_ns, main } => {
                if *next >= *tasks {
                    return Op::Exit;
                }
                // `while i - done >= GRAIN_WINDOW { yield_now() }`
                if *next - ctx.shared.grain_done >= GRAIN_WINDOW {
                    return Op::Yield;
                }
                *next += 1;
                let task = Program::GrainTask { grain_ns: *grain_ns, tasks: *tasks, main: *main, pc: 0 };
                spawn(task, Priority::Normal, Placement::OnCore(0))
            }
            Program::GrainTask { grain_ns, tasks, main, pc } => {
                // As the kernel's task: chunk by chunk, each credited where it was computed.
                *pc += 1;
                let chunks = grain_chunks(*grain_ns).count() as u64;
                match u64::from(*pc) {
                    k if k <= chunks => {
                        let ns = grain_chunks(*grain_ns).nth(k as usize - 1).expect("k is at most the count");
                        Op::Compute { ns, units: ns, reductions: 0 }
                    }
                    k if k == chunks + 1 => {
                        ctx.shared.grain_done += 1;
                        if ctx.shared.grain_done == *tasks { Op::Send { to: *main, word: 0 } } else { Op::Exit }
                    }
                    _ => Op::Exit,
                }
            }
        }
    }
}

fn main_next(workload: Workload, pc: &mut u32, index: &mut u64, ctx: &mut Ctx<'_>) -> Op {
    // Phase 0 spawns `index` from 0 to the count; phase 1 receives that many answers; then exit.
    let me = ctx.me;
    let (count, answers) = match workload {
        Workload::Fib { .. } | Workload::Uts { .. } | Workload::Grain { .. } => (1, 1),
        Workload::Imbalanced { workers, .. } | Workload::Mixed { workers, .. } => {
            (u64::from(workers), u64::from(workers))
        }
        Workload::Nqueens { n, split } => {
            let tasks = QueensTree::of(n, split).top.len() as u64;
            (tasks, tasks)
        }
        Workload::Bang { senders, .. } => (u64::from(senders) + 1, 1),
    };
    if *pc == 0 {
        if *index < count {
            let i = *index;
            *index += 1;
            return match workload {
                Workload::Fib { n } => spawn(Program::Fib { n, parent: me, pc: 0 }, Priority::Normal, Placement::Here),
                Workload::Imbalanced { units, .. } => spawn(
                    Program::Worker { units, done: 0, main: me, sent: false },
                    Priority::Normal,
                    Placement::OnCore(0),
                ),
                Workload::Mixed { units, .. } => {
                    let priority = Priority::ALL[(i % 4) as usize];
                    let placement = if i.is_multiple_of(5) {
                        Placement::Bound((i / 5) as usize % ctx.cores)
                    } else {
                        Placement::OnCore(0)
                    };
                    spawn(Program::Worker { units, done: 0, main: me, sent: false }, priority, placement)
                }
                Workload::Nqueens { n, split } => {
                    let board = QueensTree::of(n, split).top[i as usize];
                    let task = QueensTask::new(n, split, 2, board, me);
                    spawn(Program::Queens(task), Priority::Normal, Placement::OnCore(0))
                }
                Workload::Uts { roots, children, percent } => {
                    let program = Program::Uts {
                        id: 0,
                        kids: u64::from(roots),
                        depth: 0,
                        children: u64::from(children),
                        percent: u64::from(percent),
                        parent: me,
                        pc: 0,
                        i: 0,
                    };
                    spawn(program, Priority::Normal, Placement::OnCore(0))
                }
                Workload::Bang { senders, messages } => {
                    let (s, m) = (u64::from(senders), u64::from(messages));
                    if i == 0 {
                        let receiver = Program::BangReceiver { left: s * m, credit: s * m / 16, main: me, pc: 0 };
                        spawn(receiver, Priority::Normal, Placement::OnCore(0))
                    } else {
                        // The receiver is the first process main spawned: pid main + 1.
                        let sender = Program::BangSender { left: m, receiver: me + 1, credit: m / 16, pc: 0 };
                        spawn(sender, Priority::Normal, Placement::OnCore((i - 1) as usize % ctx.cores))
                    }
                }
                Workload::Grain { grain_ns, total_ns } => {
                    let tasks = grain_tasks(grain_ns, total_ns);
                    let spawner = Program::GrainSpawner { next: 0, tasks, grain_ns: grain_ns.max(1), main: me };
                    spawn(spawner, Priority::Normal, Placement::Bound(0))
                }
            };
        }
        *pc = 1;
        *index = 0;
    }
    if *pc == 1 && *index < answers {
        *index += 1;
        return Op::Receive;
    }
    *pc = 2;
    Op::Exit
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The sizes match what the kernel reports for the same workloads.
    #[test]
    fn kernel_sizes() {
        assert_eq!(Workload::kernel("fib").unwrap().processes(), 8361);
        assert_eq!(Workload::kernel("fib").unwrap().units(), 4181);
        assert_eq!(Workload::kernel("uts").unwrap().processes(), 4377);
        assert_eq!(Workload::kernel("nqueens").unwrap().processes(), 132);
        assert_eq!(Workload::kernel("nqueens").unwrap().units(), crate::cost::NQUEENS_TOTAL_UNITS);
        // tests/31 (`workload=nqueens queens_split=3`): "from 1162 processes".
        assert_eq!(Workload::Nqueens { n: 13, split: 3 }.processes(), 1162);
        assert_eq!(Workload::kernel("imbalanced").unwrap().units(), 16_000);
        assert_eq!(Workload::kernel("grain").unwrap().processes(), 12_001);
    }

    /// Sizes are `key=value` words of the workload's own arguments, read back from what
    /// `size` prints; a key the workload does not have is refused.
    #[test]
    fn sizes_round_trip() {
        for name in Workload::NAMES {
            let w = Workload::kernel(name).unwrap();
            assert_eq!(w.sized(&w.size()), Ok(w), "{name}");
        }
        let fib = Workload::kernel("fib").unwrap();
        assert_eq!(fib.sized("n=24"), Ok(Workload::Fib { n: 24 }));
        let uts = Workload::kernel("uts").unwrap().sized("roots=7,children=2 percent=56");
        assert_eq!(uts, Ok(Workload::Uts { roots: 7, children: 2, percent: 56 }));
        let queens = Workload::kernel("nqueens").unwrap();
        assert_eq!(queens.sized("n=15 split=4"), Ok(Workload::Nqueens { n: 15, split: 4 }));
        assert!(queens.sized("split=14").is_err(), "no more splits than queens");
        assert!(fib.sized("workers=3").is_err());
        assert!(fib.sized("n").is_err());
    }
}
