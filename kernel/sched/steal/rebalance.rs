//! Push rebalancing: core 0's periodic move of a few stealable processes from the busiest core
//! straight to the idlest on severe imbalance, as ERTS's check_balance does, under the rules a
//! steal round applies (`balance/`, host-tested).

use core::sync::atomic::Ordering;

use super::migrate::{core_views, hand_back, migrate};
use crate::proc::process;
use crate::record::trace::{self, Event};
use crate::run::active::{self, may_run_here};
use crate::run::attention;
use crate::run::percore::{OnCore, scheduler};
use crate::run::runqueue::slot_of;
use crate::run::wake::make_runnable;
use crate::settings::config;
use beamcore_deque::Steal;
use beamcore_hal::ids::CoreId;
use beamcore_sched_policy::balance::{RebalancePlan, plan_rebalance};
use beamcore_smp as smp;

/// Push rebalancing (core 0, as ERTS's check_balance): on severe imbalance, moves a few
/// stealable processes from the busiest core straight to the idlest, under the same rules.
pub(crate) fn rebalance(core: &mut OnCore) {
    let cores = smp::cores_online();
    if cores < 2 || !config().balance.rebalance {
        // Never due (every core is online before the loop starts): the attention bit goes.
        attention::set_own(core, attention::REBALANCE, false);
        return;
    }
    let Some(ticks) = attention::rebalance_look_due(core) else { return };
    let config = &config().balance;
    core.local().last_rebalance = ticks;
    // ORDERING: Relaxed: a record for the report, read by whoever prints it.
    core.scheduler().stats.rebalance_looked_at_tick.store(ticks, Ordering::Relaxed);
    let mut views = heapless::Vec::new();
    core_views(&mut views, cores);
    // Only cores that schedule: an offline core is neither robbed nor given work (a push that
    // races its leave is caught by its closed inbox and goes on, see `wake::deliver`).
    let Some(RebalancePlan { from: busiest, to: idlest, batch }) =
        plan_rebalance(config, &views, active::core_is_active)
    else {
        return;
    };
    let (busiest, idlest) = (CoreId::new(busiest), CoreId::new(idlest));
    let Some(stealers) = scheduler(busiest).queues.stealers.get() else { return };
    let mut moved = 0;
    'levels: for stealer in stealers {
        while moved < batch {
            match stealer.steal() {
                Steal::Success(item) => {
                    let slot = slot_of(item);
                    if !may_run_here(process::slot(slot), idlest) {
                        hand_back(core, slot, busiest);
                        continue 'levels;
                    }
                    migrate(slot, busiest, idlest);
                    trace::process_event(Event::Migrate, idlest, slot, busiest.index() as u32);
                    make_runnable(core, slot);
                    moved += 1;
                }
                Steal::Empty => continue 'levels,
                Steal::Retry => break 'levels,
            }
        }
    }
    if moved > 0 {
        // ORDERING: Relaxed: a statistic.
        core.scheduler().stats.rebalanced.fetch_add(moved as u64, Ordering::Relaxed);
    }
}
