//! The soak program (`make soak`): every workload under every victim strategy, back to back in
//! one boot, for `soak_s=` seconds of guest time, with exactly-once checked after each run.
//! Prints `soak:` lines per round, the totals, and `bench:` lines that scripts/soak.py gathers
//! into bench/results.json.

#![no_std]
#![no_main]

use beamcore::{ExitCode, println, sched, smp};
use beamcore_apps::workloads;

/// Tiny processes in each steal storm (one per strategy per round): most of the soak's steals.
const STORM_PROCESSES: usize = 100_000;

fn main() -> ExitCode {
    let seconds = u64::from(beamcore_apps::config::args().soak_s);
    let cores = smp::cores_online();
    println!("soak: {cores} cores, every workload under every strategy, for {seconds} s of guest time");
    sched::arm_progress_watchdog(30);
    let outcome = workloads::soak(seconds, STORM_PROCESSES);
    println!("soak: done on {cores} cores: {outcome}");
    for (name, value) in [
        ("steals", outcome.steals),
        ("processes", outcome.processes),
        ("lost", outcome.lost),
        ("duplicated", outcome.duplicated),
        ("failed_runs", outcome.failed_runs),
    ] {
        println!("bench: soak.{cores}cores.{name} {value} count");
    }
    match outcome.first_failure {
        Some(why) => {
            println!("soak: FAILED: {why}");
            ExitCode::Failure(1)
        }
        None => ExitCode::Success,
    }
}

beamcore::entry!(main, settings = beamcore_apps::config::ARGS);
