//! The thief's window beyond 64 cores: the overload hint puts every core holding work worth a
//! thief in it (up to the window's size), so a thief sees the one loaded core among 1,023.

use std::collections::BTreeSet;

use super::{Policy, Sim, SimConfig, VIEW_WINDOW};
use crate::cost::CostModel;
use crate::workload::Workload;

/// A simulation of `cores` cores, not run: `loaded` cores given `per_core` stealable processes.
fn loaded_sim<'a>(costs: &'a CostModel, policy: Policy, cores: usize, loaded: &[usize], per_core: u64) -> Sim<'a> {
    let workload = Workload::kernel("fib").expect("fib");
    let mut sim = Sim::new(workload, policy, SimConfig::new(cores, 3), costs);
    for &c in loaded {
        for pid in 0..per_core {
            let _ = sim.cores[c].queues[1].push(pid);
        }
        sim.refresh_hint(c);
    }
    sim
}

fn check_shape(window: &[usize], thief: usize) {
    assert_eq!(window.len(), VIEW_WINDOW);
    assert_eq!(window[0], thief, "the thief comes first");
    assert_eq!(window.iter().collect::<BTreeSet<_>>().len(), VIEW_WINDOW, "no core twice");
}

#[test]
fn every_loaded_core_is_in_the_window() {
    let costs = CostModel::fallback();
    let loaded = [0, 17, 300, 511, 777, 1023];
    let mut sim = loaded_sim(&costs, Policy::default_policy(), 1024, &loaded, 2);
    for thief in [5, 600, 1022] {
        let window = sim.window(thief);
        check_shape(&window, thief);
        for c in loaded {
            assert!(window.contains(&c), "thief {thief}: loaded core {c} left out of {window:?}");
        }
    }
}

#[test]
fn a_core_below_min_steal_is_not_hinted() {
    let costs = CostModel::fallback();
    // One stealable process is not worth a thief (`min_steal` 2): only chance brings core 700
    // in, at 63 draws of 1,023 per window.
    let mut sim = loaded_sim(&costs, Policy::default_policy(), 1024, &[700], 1);
    let seen = (0..200).filter(|_| sim.window(3).contains(&700)).count();
    assert!(seen < 40, "core 700 in {seen} of 200 windows: hinted without work worth a thief");
}

#[test]
fn more_loaded_cores_than_fit_are_drawn_among() {
    let costs = CostModel::fallback();
    let loaded: Vec<usize> = (100..300).collect();
    let mut sim = loaded_sim(&costs, Policy::default_policy(), 512, &loaded, 3);
    let mut drawn = BTreeSet::new();
    for _ in 0..50 {
        let window = sim.window(9);
        check_shape(&window, 9);
        assert!(window[1..].iter().all(|c| loaded.contains(c)), "an unloaded core took a hinted place");
        drawn.extend(window[1..].iter().copied());
    }
    assert!(drawn.len() > 150, "the draw among 200 loaded cores reached only {}", drawn.len());
}

#[test]
fn at_64_cores_or_fewer_the_window_is_every_core() {
    let costs = CostModel::fallback();
    let mut sim = loaded_sim(&costs, Policy::default_policy(), 64, &[3], 2);
    assert_eq!(sim.window(10), (0..64).collect::<Vec<_>>());
    assert_eq!(sim.hint_cost(), 0);
}
