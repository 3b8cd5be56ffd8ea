//! The slot-making lock (`making`): while one core makes a process slot, another that must
//! make one waits for it, spinning, as a kernel spin lock makes it wait; under QEMU's turns
//! each of its looks ends its turn, so the holder runs on.

use beamcore_sched_policy::Priority;

use super::state::{Effect, Phase};
use super::{Policy, Sim, SimConfig};
use crate::cost::CostModel;
use crate::workload::{Placement, Spawn, Workload};

const GROWTH: u64 = 400;

fn two_cores(costs: &CostModel, turns: bool) -> Sim<'_> {
    let mut config = SimConfig::new(2, 1);
    if turns {
        config.turns = true;
        config.tick_ns = Some(vec![0; 2]);
    }
    Sim::new(Workload::kernel("fib").expect("fib"), Policy::default_policy(), config, costs)
}

fn a_spawn(sim: &Sim<'_>) -> Box<Spawn> {
    Box::new(Spawn { program: sim.workload.main(), priority: Priority::Normal, placement: Placement::Here })
}

fn awaiting(sim: &Sim<'_>, core: usize) -> bool {
    matches!(sim.cores[core].phase, Phase::Run { effect: Effect::AwaitMaking { .. }, .. })
}

#[test]
fn a_free_lock_is_held_while_the_slot_is_made_and_let_go_for_the_rest_of_the_spawn() {
    let costs = CostModel::fallback();
    let mut sim = two_cores(&costs, false);
    let spawn = a_spawn(&sim);
    sim.make_slot(1, 1_000, 0, 0, spawn, GROWTH, 1_000);
    assert_eq!(sim.making, Some(1));
    assert_eq!(sim.cores[1].at, 1_000 + costs.making, "the slot is made under the lock");
    let rest = match &sim.cores[1].phase {
        Phase::Run { effect: Effect::SpawnMade { rest, .. }, .. } => *rest,
        _ => panic!("not making a slot"),
    };
    assert_eq!(rest, costs.spawn + GROWTH - costs.making, "the rest of the spawn comes after");

    // The slot made, the lock is let go while the spawn goes on: another core may take it.
    sim.step(1, 1_000 + costs.making);
    assert_eq!(sim.making, None);
    assert_eq!(sim.cores[1].at, 1_000 + costs.making + rest);
    let spawn = a_spawn(&sim);
    sim.make_slot(0, 1_000 + costs.making + 1, 0, 0, spawn, GROWTH, 1_000 + costs.making + 1);
    assert_eq!(sim.making, Some(0), "free while core 1 finishes its spawn");
}

#[test]
fn a_core_that_finds_the_lock_held_waits_for_its_release_and_counts_the_wait_busy() {
    let costs = CostModel::fallback();
    let mut sim = two_cores(&costs, false);
    sim.making = Some(0);
    let spawn = a_spawn(&sim);
    sim.make_slot(1, 1_000, 0, 0, spawn, GROWTH, 1_000);
    assert!(awaiting(&sim, 1), "core 1 spins on the lock");
    assert_eq!(sim.making_waiters, vec![1]);
    assert_eq!(sim.cores[1].at, u64::MAX, "no event of its own until the lock is let go");
    let busy_before = sim.cores[1].stats.busy_ns;

    sim.release_making(3_000);
    assert_eq!(sim.making, None);
    assert!(sim.making_waiters.is_empty());
    assert_eq!(sim.cores[1].at, 3_000, "the waiter looks again at the release");
    sim.step(1, 3_000);
    assert_eq!(sim.making, Some(1), "and takes the lock");
    assert_eq!(sim.cores[1].at, 3_000 + costs.making, "its slot is made after the release");
    assert_eq!(sim.cores[1].stats.busy_ns - busy_before, 3_000 + costs.making - 1_000, "the spin was busy time");
}

#[test]
fn under_turns_a_waiter_looks_once_a_turn_and_hands_the_turn_to_the_holder() {
    let costs = CostModel::fallback();
    let mut sim = two_cores(&costs, true);
    // Core 1 holds the lock and is busy; core 0, whose turn it is, must make a slot too.
    sim.making = Some(1);
    sim.cores[1].phase = Phase::Loop;
    sim.sleepers.remove(&1);
    sim.turns.as_mut().expect("turns").parked[1] = Some(0);
    let start = sim.turns.as_ref().expect("turns").ends.saturating_sub(1);
    let spawn = a_spawn(&sim);
    sim.make_slot(0, start, 0, 0, spawn, GROWTH, start);
    assert!(awaiting(&sim, 0));
    // Its next event is a look: spinning, it passes the turn to core 1 at once.
    assert!(sim.spinning(0, start), "a look of the spin on the lock");
    assert_eq!(sim.turns.as_ref().expect("turns").current, 1, "the holder runs next");

    // Let go at 9,000: the waiter's next look finds the lock free and takes it.
    sim.release_making(9_000);
    assert!(!sim.spinning(0, 9_000));
    assert_eq!(sim.turns.as_ref().expect("turns").spin_until[0], None);
}
