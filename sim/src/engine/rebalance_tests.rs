//! Push rebalancing's count at the start (`SimConfig::rebalance_ticks_ago`) and its cadence: the
//! kernel's core 0 last looked for severe imbalance some ticks before a workload begins (one, on
//! the calibration's images), so its first push can come sooner than a period after the start;
//! after that it looks every second tick (at 1 ms a tick), at the first pass of its loop.

use super::{Policy, Sim, SimConfig};
use crate::cost::CostModel;
use crate::workload::Workload;

/// When each process push rebalancing moves arrives in the first 10 ms of a QEMU-like run of
/// `workload` under the default policy on four cores, in us (one entry per push).
fn pushes_us(workload: &str, rebalance_ticks_ago: u64) -> Vec<u64> {
    let costs = CostModel::fallback();
    let mut config = SimConfig::new(4, 1);
    config.turns = true;
    config.tick_ns = Some(vec![996_208, 6_624, 17_760, 30_832]);
    config.rebalance_ticks_ago = rebalance_ticks_ago;
    config.events_until_ns = Some(10_000_000);
    let outcome =
        Sim::new(Workload::kernel(workload).expect("a kernel workload"), Policy::default_policy(), config, &costs)
            .run();
    let mut pushes: Vec<u64> = outcome.trace.iter().filter(|e| e.name == "migrate").map(|e| e.at_ns / 1000).collect();
    pushes.dedup();
    pushes
}

#[test]
fn the_first_push_comes_when_core_0s_ticks_since_its_last_look_make_up_the_period() {
    // The period is two ticks (of 1 ms; core 0's at 0.996, 1.996, ... ms), and core 0 looks at
    // the first pass of its loop once a look is due; `mixed` passes through it often. One tick
    // since the last look (QEMU's reports): due after the tick at 0.996 ms. None: after the one
    // at 1.996 ms. Two: due at once, at the first pass (the start, with nothing to push yet),
    // and then again two ticks later.
    let first = |ago| pushes_us("mixed", ago).first().copied().expect("a push in the first 10 ms");
    assert!((996..1_996).contains(&first(1)), "first push at {} us", first(1));
    assert!((1_996..2_996).contains(&first(0)), "first push at {} us", first(0));
    assert!((1_996..2_996).contains(&first(2)), "first push at {} us", first(2));
}

#[test]
fn pushes_come_every_second_tick_of_core_0() {
    // `nqueens`: main spawns its 132 tasks on core 0 and blocks at 0.55 ms; from then core 0's
    // loop runs at the ticks that end its tasks' slices. While the imbalance stays severe, a
    // push at each look: 1.996, 3.996, 5.996 and 7.996 ms, none skipped and none between.
    // (Compared in counter time, a look a few nanoseconds later after its tick than the one
    // before made the next one not yet due, and QEMU's kernel skipped the third.)
    let pushes = pushes_us("nqueens", 1);
    assert!(pushes.len() >= 4, "pushes at {pushes:?} us");
    for (k, &at) in pushes[..4].iter().enumerate() {
        let tick = 996 + 1_000 * (2 * k as u64 + 1);
        assert!((tick..tick + 100).contains(&at), "push {k} at {at} us, its look's tick at {tick} us: {pushes:?}");
    }
}
