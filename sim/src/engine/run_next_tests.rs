//! The "run next" slot, as the kernel's run queues keep it: a process a message woke on its own
//! core is counted as runnable, is no thief's to take, runs before the rest of its level, and
//! gives way to that level after `RUN_NEXT_CAP` turns in a row.

use beamcore_sched_policy::Priority;
use beamcore_sched_policy::run_next::RUN_NEXT_CAP;

use super::state::State;
use super::{Policy, Sim, SimConfig};
use crate::cost::CostModel;
use crate::workload::{Program, Workload};

/// A simulation of two cores, not run, its queues empty (the program's main taken out of core
/// 0's), and `count` waiting fib processes on core 0.
fn waiting_on_core_0(costs: &CostModel, count: usize) -> (Sim<'_>, Vec<u32>) {
    let workload = Workload::kernel("fib").expect("fib");
    let mut sim = Sim::new(workload, Policy::default_policy(), SimConfig::new(2, 1), costs);
    assert_eq!(sim.take_next(0, 0), Some(0), "main");
    let pids = (0..count)
        .map(|_| {
            let pid = sim.create(Program::Fib { n: 1, parent: 0, pc: 0 }, Priority::Normal, 0, false, 0);
            sim.procs[pid as usize].state = State::Waiting;
            pid
        })
        .collect();
    (sim, pids)
}

#[test]
fn a_woken_process_is_runnable_but_not_stealable() {
    let costs = CostModel::fallback();
    let (mut sim, pids) = waiting_on_core_0(&costs, 1);
    sim.wake_by_message(0, pids[0], 0);
    let view = sim.cores[0].view(0);
    assert_eq!((view.runnable, view.stealable), (1, 0), "counted as runnable, held back from thieves");
    assert_eq!(sim.take_next(0, 0), Some(pids[0]));
    assert_eq!(sim.cores[0].view(0).runnable, 0);
}

#[test]
fn a_wake_from_another_core_goes_through_the_inbox() {
    let costs = CostModel::fallback();
    let (mut sim, pids) = waiting_on_core_0(&costs, 1);
    sim.wake_by_message(1, pids[0], 0);
    assert_eq!(sim.cores[0].run_next, None);
    assert_eq!(sim.cores[0].inbox.iter().copied().collect::<Vec<_>>(), vec![pids[0]]);
}

#[test]
fn a_second_wake_pushes_the_first_into_the_stealable_queue() {
    let costs = CostModel::fallback();
    let (mut sim, pids) = waiting_on_core_0(&costs, 2);
    sim.wake_by_message(0, pids[0], 0);
    sim.wake_by_message(0, pids[1], 0);
    let view = sim.cores[0].view(0);
    assert_eq!((view.runnable, view.stealable), (2, 1));
    assert_eq!(sim.take_next(0, 0), Some(pids[1]), "the newest wake runs next");
    assert_eq!(sim.take_next(0, 0), Some(pids[0]));
}

#[test]
fn the_slot_gives_way_to_its_level_after_its_cap() {
    let costs = CostModel::fallback();
    // One process waits in the level; a pair keeps waking each other through the slot.
    let (mut sim, pids) = waiting_on_core_0(&costs, 2);
    let waiting = pids[0];
    sim.procs[waiting as usize].state = State::Runnable;
    sim.enqueue_local(0, waiting, 0);
    let ping = pids[1];
    let mut slot_turns = 0;
    loop {
        sim.wake_by_message(0, ping, 0);
        let next = sim.take_next(0, 0).expect("something to run");
        if next == waiting {
            break;
        }
        assert_eq!(next, ping);
        slot_turns += 1;
        assert!(slot_turns <= RUN_NEXT_CAP, "the waiting process starved behind the slot");
    }
    assert_eq!(slot_turns, RUN_NEXT_CAP, "the slot goes first exactly its cap in a row");
    assert_eq!(sim.take_next(0, 0), Some(ping), "and first again after the level's turn");
}
