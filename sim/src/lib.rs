//! beamcore's host simulator (issue #15, docs/simulator.md): a discrete-event simulation of the
//! kernel's per-core schedulers at 1 to 1024 cores that asks the kernel's own pure code every
//! question of policy (`beamcore::sched::balance`, `beamcore::sched::priority`) and keeps its run
//! queues in the kernel's own `WorkQueue`, so a change to the policy changes the simulation.

pub mod cost;
pub mod engine;
pub mod report;
pub mod workload;

pub use cost::CostModel;
pub use engine::{Outcome, Policy, Sim, SimConfig};
pub use workload::Workload;
/// The nqueens tasks, at their former path (they are one of `workload`'s programs now).
pub use workload::queens;

/// Runs `workload` under `policy` with `config` and the cost model `costs`.
pub fn simulate(workload: Workload, policy: &Policy, config: SimConfig, costs: &CostModel) -> Outcome {
    Sim::new(workload, policy.clone(), config, costs).run()
}
