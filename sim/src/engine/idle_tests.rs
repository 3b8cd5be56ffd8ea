//! Idle with work, charged as the kernel charges it: a search pause counts for as long as it
//! really lasted (under QEMU's turns the spinning core comes back only when its turn does),
//! and only if work still waits elsewhere when it ends.

use super::{Policy, Sim, SimConfig};
use crate::cost::CostModel;
use crate::workload::Workload;

/// Two cores, not run; core 0 holds `stealable` processes a thief may take.
fn core_0_holding(costs: &CostModel, stealable: u64) -> Sim<'_> {
    let workload = Workload::kernel("fib").expect("fib");
    let mut sim = Sim::new(workload, Policy::default_policy(), SimConfig::new(2, 1), costs);
    for pid in 0..stealable {
        let _ = sim.cores[0].queues[1].push(pid);
    }
    sim.refresh_hint(0);
    sim
}

#[test]
fn a_search_pause_counts_for_as_long_as_it_lasted() {
    let costs = CostModel::fallback();
    let mut sim = core_0_holding(&costs, 4);
    let pause = sim.search_pause(1, 1_000).expect("core 1 may search");
    // Its turn comes round long after the pause was due to end.
    let back = 1_000 + pause + 200_000;
    sim.pause_ended(1, back);
    assert_eq!(sim.cores[1].stats.idle_with_work_ns, back - 1_000);
    // Ended once: a second loop pass charges nothing more.
    sim.pause_ended(1, back + 5_000);
    assert_eq!(sim.cores[1].stats.idle_with_work_ns, back - 1_000);
}

#[test]
fn a_search_pause_with_no_work_left_elsewhere_when_it_ends_counts_nothing() {
    let costs = CostModel::fallback();
    let mut sim = core_0_holding(&costs, 0);
    let pause = sim.search_pause(1, 1_000).expect("core 1 may search");
    sim.pause_ended(1, 1_000 + pause);
    assert_eq!(sim.cores[1].stats.idle_with_work_ns, 0);
}

/// The kernel's `wakes` and `wake_latency_ns`: a sleep that a wake-up SGI ended counts once,
/// timed from the first SGI sent during it; a sleep its tick ended, with no SGI, counts nothing.
#[test]
fn a_wake_up_counts_from_the_first_sgi_of_the_sleep() {
    let costs = CostModel::fallback();
    let mut sim = core_0_holding(&costs, 0);
    sim.sleep(1, 1_000);
    sim.send_wake(1, 5_000);
    sim.send_wake(1, 7_000);
    sim.step(1, 9_000);
    assert_eq!((sim.cores[1].stats.wakes, sim.cores[1].stats.wake_latency_ns), (1, 4_000));
    // The next sleep ends at its tick, no SGI sent: nothing more.
    sim.sleep(1, 20_000);
    sim.step(1, 1_000_000);
    assert_eq!((sim.cores[1].stats.wakes, sim.cores[1].stats.wake_latency_ns), (1, 4_000));
}
