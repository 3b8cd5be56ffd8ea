//! Every program's steps ([`Program::next`]): main spawning the workload's processes where the
//! kernel spawns them and collecting their answers, and each worker, fib node, uts node, bang
//! sender and receiver, grain spawner and task asking for its next operation in turn.

use beamcore_sched_policy::Priority;
use beamcore_workload_shapes::{grain_chunks, uts_child_id, uts_children};

use super::catalog::grain_tasks;
use super::queens::{QueensTask, QueensTree};
use super::{Ctx, GRAIN_WINDOW, Op, Placement, Program, Workload, spawn, unit};

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

/// The phases of the program's main: what it computes before its first spawn, its spawns,
/// the answers it waits for, its exit.
const MAIN_PREPARE: u32 = 0;
const MAIN_SPAWN: u32 = 1;
const MAIN_RECEIVE: u32 = 2;
const MAIN_EXIT: u32 = 3;

fn main_next(workload: Workload, pc: &mut u32, index: &mut u64, ctx: &mut Ctx<'_>) -> Op {
    if *pc == MAIN_PREPARE {
        *pc = MAIN_SPAWN;
        // The kernel's uts counts the whole tree on its own core before it spawns the root (to
        // check the answer), inside the timed run: for that long every other core finds
        // nothing and goes to sleep.
        if let (Workload::Uts { .. }, true) = (workload, ctx.main_checks) {
            return Op::Compute { ns: workload.processes() * ctx.costs.uts_check_node, units: 0, reductions: 0 };
        }
    }
    // `index` counts the spawns from 0 to the count, then the answers received.
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
    if *pc == MAIN_SPAWN {
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
        *pc = MAIN_RECEIVE;
        *index = 0;
    }
    if *pc == MAIN_RECEIVE && *index < answers {
        *index += 1;
        return Op::Receive;
    }
    *pc = MAIN_EXIT;
    Op::Exit
}

#[cfg(test)]
mod tests {
    use crate::cost::CostModel;
    use crate::engine::{Policy, SimConfig};
    use crate::simulate;
    use crate::workload::Workload;

    fn makespan(workload: Workload, main_checks: bool, costs: &CostModel) -> u64 {
        let mut config = SimConfig::new(1, 3);
        config.main_checks = main_checks;
        simulate(workload, &Policy::default_policy(), config, costs).makespan
    }

    /// With `main_checks`, uts's main counts the tree before it spawns the root, as the
    /// kernel's does: one core's run is longer by that count's cost (and a preemption at most);
    /// a workload whose main checks nothing is the same.
    #[test]
    fn main_checks_adds_the_kernels_tree_count_to_uts_only() {
        let costs = CostModel::fallback();
        let uts = Workload::kernel("uts").unwrap().sized("roots=7,children=2 percent=56").unwrap();
        let check = uts.processes() * costs.uts_check_node;
        let added = makespan(uts, true, &costs) - makespan(uts, false, &costs);
        assert!((check..=check + costs.turn()).contains(&added), "{added} ns added, the count costs {check}");
        let fib = Workload::Fib { n: 10 };
        assert_eq!(makespan(fib, true, &costs), makespan(fib, false, &costs));
    }

    /// A main that only spawns is preempted by the tick that ends its slice, as the kernel's
    /// tick preempts a process in its own code: on one core, 3,000 workers take main past its
    /// 1 ms slice (at least 1.3 ms of spawns), so it is preempted and its first workers run
    /// before its last spawn. The workers compute one unit each, far less than a slice: no
    /// other preemption.
    #[test]
    fn a_main_that_only_spawns_is_preempted_at_the_tick() {
        let costs = CostModel::fallback();
        let workload = Workload::Imbalanced { workers: 3000, units: 1 };
        let outcome = simulate(workload, &Policy::default_policy(), SimConfig::new(1, 3), &costs);
        assert!(!outcome.timed_out);
        assert!(outcome.per_core[0].preemptions >= 1, "{} preemptions", outcome.per_core[0].preemptions);
    }

    /// The run's first spawn (the slot after main's) costs `sched.first_spawn`, every later one
    /// what it did: one core's fib run is longer by exactly the difference, and its work is the
    /// same (the surplus is the kernel's time).
    #[test]
    fn the_first_spawn_costs_what_the_kernels_first_spawn_does() {
        let measured = CostModel::fallback();
        let mut plain = measured.clone();
        plain.first_spawn = plain.spawn_fresh;
        let fib = Workload::Fib { n: 10 };
        let run = |costs: &CostModel| simulate(fib, &Policy::default_policy(), SimConfig::new(1, 3), costs);
        let (first, later) = (run(&measured), run(&plain));
        assert_eq!(first.makespan - later.makespan, measured.first_spawn - measured.spawn_fresh);
        assert_eq!(first.work, later.work);
    }
}
