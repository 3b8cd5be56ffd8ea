//! The soak (`make soak`, apps/soak.rs): every workload and a steal storm under every victim
//! strategy, round after round, each run checked for processes that were lost or ran twice
//! from the scheduler's own counters ([`SoakOutcome`]).

use alloc::format;
use alloc::string::String;

use beamcore::sched;
use beamcore::smp;

use super::{END_GRACE_US, Workload, run, steal_storm, wait_for_processes_to_end};

/// What a soak run saw, over every workload and strategy it ran.
pub struct SoakOutcome {
    /// Workload runs (one workload under one strategy).
    pub runs: u64,
    /// Runs whose workload reported a wrong answer or a failure.
    pub failed_runs: u64,
    /// Processes spawned during the soak.
    pub processes: u64,
    /// Successful steals, and processes they moved (plus push rebalancing).
    pub steals: u64,
    pub migrations: u64,
    /// Processes spawned that never ended, and process ends beyond the spawns (a process run
    /// to its end twice), from the scheduler's own counters.
    pub lost: u64,
    pub duplicated: u64,
    /// The first failure, if any.
    pub first_failure: Option<String>,
}

impl core::fmt::Display for SoakOutcome {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(
            f,
            "{} runs, {} processes, {} steals moving {} processes, {} lost, {} duplicated, {} failed runs",
            self.runs, self.processes, self.steals, self.migrations, self.lost, self.duplicated, self.failed_runs
        )
    }
}

/// Runs every workload, and a steal storm of `storm_processes` tiny processes, under every
/// victim strategy, round after round, until `seconds` of guest time have passed (at least one
/// full round), checking after each run that every process spawned ended exactly once:
/// spawned = completed + still alive, where only the caller (main) may still be alive. Prints
/// one `soak:` line per round.
pub fn soak(seconds: u64, storm_processes: usize) -> SoakOutcome {
    use beamcore::sched::telemetry::total;
    let cores = smp::cores_online();
    let (_, boot_strategy) = sched::balance_config();
    let deadline = beamcore::time::now_count() + beamcore::time::us_to_counts(seconds.saturating_mul(1_000_000));
    let spawned_before = total(|s| &s.spawned);
    let steals_before = total(|s| &s.steals);
    let migrations_before = total(|s| &s.migrated_in);
    let mut outcome = SoakOutcome {
        runs: 0,
        failed_runs: 0,
        processes: 0,
        steals: 0,
        migrations: 0,
        lost: 0,
        duplicated: 0,
        first_failure: None,
    };
    let mut round = 0u64;
    loop {
        for workload in Workload::ALL.into_iter().map(Some).chain([None]) {
            for strategy in beamcore::sched::balance::Strategy::ALL {
                sched::set_strategy(strategy);
                let name = workload.map_or("storm", Workload::name);
                let result = match workload {
                    Some(workload) => run(workload),
                    None => {
                        let baseline = sched::process_count();
                        let mut storm = steal_storm(storm_processes, 1000);
                        if let Err(why) = wait_for_processes_to_end(baseline, END_GRACE_US) {
                            storm.ok = false;
                            storm.detail = format!("{}; {why}", storm.detail);
                        }
                        storm
                    }
                };
                outcome.runs += 1;
                // Every process ended: the scheduler's counters must balance exactly.
                let spawned = total(|s| &s.spawned);
                let completed = total(|s| &s.completed);
                let alive = sched::process_count() as u64;
                let (lost, duplicated) =
                    (spawned.saturating_sub(completed + alive), (completed + alive).saturating_sub(spawned));
                outcome.lost = outcome.lost.max(lost);
                outcome.duplicated = outcome.duplicated.max(duplicated);
                if !result.ok || lost != 0 || duplicated != 0 {
                    outcome.failed_runs += 1;
                    if outcome.first_failure.is_none() {
                        outcome.first_failure = Some(format!(
                            "round {round}, {name} with {strategy}: {} (lost {lost}, duplicated {duplicated})",
                            result.detail
                        ));
                    }
                }
            }
        }
        round += 1;
        let steals = total(|s| &s.steals) - steals_before;
        let processes = total(|s| &s.spawned) - spawned_before;
        beamcore::println!(
            "soak: round {round} on {cores} cores: {} runs, {processes} processes, {steals} steals, {} failed",
            outcome.runs,
            outcome.failed_runs
        );
        if beamcore::time::now_count() >= deadline || outcome.failed_runs > 0 {
            break;
        }
    }
    sched::set_strategy(boot_strategy);
    outcome.processes = total(|s| &s.spawned) - spawned_before;
    outcome.steals = total(|s| &s.steals) - steals_before;
    outcome.migrations = total(|s| &s.migrated_in) - migrations_before;
    outcome
}
