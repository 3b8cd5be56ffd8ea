//! The workloads' bootargs (`workload=`, `soak_s=`, `grain_ns=`, `grain_ms=`, `processes=`,
//! `rounds=`, `probe_ms=`, `queens_n=`, `queens_split=`): a program that runs workloads names
//! [`ARGS`] in its entry, `beamcore::entry!(main, settings = beamcore_apps::config::ARGS)`, and
//! the kernel parses them at boot with its own words (the parser and its tests:
//! crates/workload-args).

use beamcore::config::ProgramArgs;
pub use beamcore_workload_args::{DEFAULT_HOLD_PROCESSES, Workload, WorkloadArgs};

/// The workloads' settings, parsed by the kernel at boot.
pub static ARGS: ProgramArgs<WorkloadArgs> = ProgramArgs::new(&beamcore_workload_args::TABLE);

/// The workloads' settings in force.
pub fn args() -> WorkloadArgs {
    ARGS.get()
}
