//! The run's scheduling events in the kernel trace's words (`SimConfig::events_until_ns`,
//! `beamcore-sim run --events-until-us`), so a simulated run can be read beside a traced QEMU
//! run of the same workload, policy, seed and tick phases (`scripts/trace_compare.py`): the
//! calibration's tables say how far the counts are apart, and only the two timelines side by
//! side say where (the start's wake-up chain and the last millisecond's searches were found so).
//!
//! Kept in the outcome (`Outcome::trace`, in time order: each core's clock runs ahead on its
//! own, so they are noted out of order) and printed by `beamcore-sim run` one line per event,
//! `event: <core> <ns> <name> <arg>`, with the kernel's names (`kernel/sched/record/trace.rs`):
//! `spawn`, `run` (dispatched) and `exit` (the process), `steal` (the victim; one per process taken, as the
//! kernel's `try_steal` records each), `refused` (victim + 65,536 x the `Refusal`'s number, as
//! the kernel packs it), `sleep` and `idle_end`, and `migrate` for each process push rebalancing moves (on the
//! core it goes to, the busiest core its argument, as the kernel's `rebalance` records it).

use beamcore_sched_policy::balance::Refusal;

use super::Sim;
use super::outcome::TraceEvent;

impl Sim<'_> {
    /// `core`'s event `name` at `at`, if events are asked for up to then.
    pub(super) fn note(&mut self, core: usize, at: u64, name: &'static str, arg: u64) {
        if self.cfg.events_until_ns.is_some_and(|until| at < until) {
            self.trace.push(TraceEvent { core, at_ns: at, name, arg });
        }
    }

    /// A steal attempt `refusal` stopped at `victim`, packed as the kernel's trace packs it.
    pub(super) fn note_refused(&mut self, core: usize, at: u64, victim: usize, refusal: Refusal) {
        self.note(core, at, "refused", victim as u64 | (refusal as u64) << 16);
    }
}
