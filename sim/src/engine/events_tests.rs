//! The events a run notes (`events`): one for every steal, refused attempt, spawn, dispatch,
//! push, exit, sleep and wake-up the counters count, in time order, and none past the time
//! asked for.

use super::{Policy, Sim, SimConfig};
use crate::cost::CostModel;
use crate::workload::Workload;

fn traced(until_ns: u64) -> super::Outcome {
    let costs = CostModel::fallback();
    let mut config = SimConfig::new(4, 3);
    config.turns = true;
    config.tick_ns = Some(vec![996_144, 6_560, 17_696, 30_672]);
    config.events_until_ns = Some(until_ns);
    Sim::new(Workload::Fib { n: 12 }, Policy::peers(), config, &costs).run()
}

#[test]
fn every_counted_event_is_noted_once_in_time_order() {
    let outcome = traced(u64::MAX);
    let count = |name: &str| outcome.trace.iter().filter(|e| e.name == name).count() as u64;
    let sum = |f: fn(&super::CoreStats) -> u64| outcome.per_core.iter().map(f).sum::<u64>();
    assert!(outcome.steals() > 0, "the test needs steals to count");
    assert_eq!(count("steal"), sum(|c| c.stolen), "one per process taken");
    let mut ops = outcome.trace.iter().filter(|e| e.name == "steal").map(|e| (e.core, e.at_ns)).collect::<Vec<_>>();
    ops.dedup();
    assert_eq!(ops.len() as u64, outcome.steals(), "a steal's processes noted together");
    assert_eq!(ops.len() as u64 + count("refused"), sum(|c| c.steal_attempts), "every attempt steals or is refused");
    assert_eq!(count("spawn"), outcome.spawned - 1, "every spawn but main's");
    assert_eq!(count("exit"), outcome.completed);
    assert_eq!(count("run"), sum(|c| c.executed), "every dispatch");
    assert_eq!(count("migrate"), sum(|c| c.rebalanced), "every process a push moved");
    // Cores 1-3 start asleep (no `sleep` noted) and some are asleep at the end.
    let (sleeps, wakes) = (count("sleep"), count("idle_end"));
    assert!(wakes <= sleeps + 3 && sleeps <= wakes + 4, "{sleeps} sleeps, {wakes} wake-ups");
    assert!(wakes >= sum(|c| c.wakes), "every SGI-ended sleep among them");
    assert!(outcome.trace.windows(2).all(|w| w[0].at_ns <= w[1].at_ns), "in time order");
    // The yield's wake-up of core 1 ends its sleep as core 0's first turn ends (turns_tests).
    let first_wake = outcome.trace.iter().find(|e| e.name == "idle_end").expect("a wake-up");
    assert_eq!((first_wake.core, first_wake.at_ns), (1, 701));
}

#[test]
fn no_event_is_noted_past_the_time_asked_for_and_none_without_it() {
    let outcome = traced(20_000);
    assert!(!outcome.trace.is_empty());
    assert!(outcome.trace.iter().all(|e| e.at_ns < 20_000));
    let costs = CostModel::fallback();
    let plain = Sim::new(Workload::Fib { n: 12 }, Policy::peers(), SimConfig::new(4, 3), &costs).run();
    assert!(plain.trace.is_empty());
}
