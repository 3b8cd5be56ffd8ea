//! Push rebalancing's clock at the start (`SimConfig::rebalance_ago_ns`): the kernel's core 0
//! last looked for imbalance some time before a workload begins (a slice before it, after the
//! boot check, on the calibration's images), so its first push can come a period after that
//! look, not a period after the start.

use super::{Policy, Sim, SimConfig};
use crate::cost::CostModel;
use crate::workload::Workload;

/// When the first process push rebalancing moves arrives, in a QEMU-like run of `nqueens` (its
/// main spawns every task on core 0, then waits for their results from 0.55 ms on) under the
/// default policy on four cores.
fn first_push_ns(rebalance_ago_ns: u64) -> u64 {
    let costs = CostModel::fallback();
    let mut config = SimConfig::new(4, 1);
    config.turns = true;
    config.tick_ns = Some(vec![996_208, 6_624, 17_760, 30_832]);
    config.rebalance_ago_ns = rebalance_ago_ns;
    config.events_until_ns = Some(10_000_000);
    let outcome =
        Sim::new(Workload::kernel("nqueens").expect("nqueens"), Policy::default_policy(), config, &costs).run();
    outcome.trace.iter().find(|e| e.name == "migrate").expect("a push in the first 10 ms").at_ns
}

#[test]
fn the_first_push_comes_a_period_after_core_0s_last_look_before_the_start() {
    // The period is 2 ms, and core 0 looks when its loop runs once a look is due: when main
    // blocks (0.55 ms), then at the ticks that end the slices of the task it runs from then
    // (1.996 ms, 3.996 ms). Looked 1.5 ms before the start: due at 0.5 ms, so the push comes as
    // main blocks. Looked 1.003 ms before (QEMU's reports): due at 0.997 ms, at the slice's end
    // at 1.996 ms. Looked at the start: due at 2 ms, 4 us after that tick, so at the next.
    let at = |ago| first_push_ns(ago) / 1000;
    assert!((550..600).contains(&at(1_500_000)), "first push at {} us", at(1_500_000));
    assert!((3_996..4_100).contains(&at(0)), "first push at {} us", at(0));
    assert!((1_996..2_100).contains(&at(1_003_072)), "first push at {} us", at(1_003_072));
}
