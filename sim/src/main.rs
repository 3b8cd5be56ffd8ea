//! `beamcore-sim`: the host simulator's command line (docs/simulator.md).
//!
//! ```text
//! beamcore-sim run   [--workload fib] [--policy default] [--cores 4] [--seed 1] [--grain-ns 10000]
//!                    [--factors 1.2,0.9,.. | --shares 0.3,0.2,..] [--turns] [--tick-ns 0,7472,..] [--per-core]
//!                    [--rebalance-ticks-ago 1] [--main-checks] [--events-until-us 2000]
//!                    [--results bench/results.json] [--wake-ns 1000]
//! beamcore-sim sweep [--out target/sim/sweep.json] [--seed 1] [--jobs 2] [--max-cores 1024]
//!                    [--workloads fib,uts] [--policies default,peers] [--grain on|off]
//!                    [--results bench/results.json]
//! ```
//!
//! `run` prints one `report: {json}` line (the kernel's field names, plus makespan and speedup
//! over a one-core run); `sweep` runs every workload under every policy at 1, 2, 4, ..., 1024
//! cores and the granularity sweep, and writes their reports for `scripts/sim.py`.
//!
//! This file holds the two commands' entry and `run`; `args` reads the command line and turns
//! names into workloads, policies and the cost model, `sweep` sizes and runs the sweep.

mod args;
mod sweep;

use std::time::Instant;

use beamcore_sim::report::{self, report};
use beamcore_sim::{SimConfig, Workload, simulate};
use serde_json::json;

use args::{Args, costs, policy, workload};

fn run(args: &Args) -> Result<(), String> {
    let mut costs = costs(args)?;
    // A wake-up's latency measured on the machine being modelled (the calibration passes each
    // QEMU run's own mean), in place of the cost model's.
    if let Some(ns) = args.get("wake-ns") {
        costs.wake_latency = ns.parse().map_err(|_| format!("--wake-ns {ns}: a whole number of nanoseconds"))?;
    }
    let seed = args.number("seed", 1u64)?;
    let cores = args.number("cores", 4usize)?;
    let grain_ns = args.get("grain-ns").map(|v| v.parse().map_err(|_| format!("--grain-ns {v}"))).transpose()?;
    let workload =
        workload(args.get("workload").unwrap_or("imbalanced"), grain_ns)?.sized(args.get("size").unwrap_or(""))?;
    let policy = policy(args.get("policy").unwrap_or("default"))?;
    let numbers = |name: &str| -> Result<Option<Vec<f64>>, String> {
        match args.get(name) {
            Some(list) => {
                let f: Result<Vec<f64>, _> = list.split(',').map(str::parse).collect();
                Ok(Some(f.map_err(|_| format!("--{name} {list}: numbers separated by commas"))?))
            }
            None => Ok(None),
        }
    };
    let factors = numbers("factors")?;
    let shares = numbers("shares")?;
    if factors.is_some() && shares.is_some() {
        return Err("--factors and --shares: one or the other".into());
    }
    for (name, list) in [("factors", &factors), ("shares", &shares)] {
        if let Some(list) = list
            && (list.len() != cores || list.iter().any(|&v| !(v > 0.0 && v.is_finite())))
        {
            return Err(format!("--{name}: one positive number per core ({cores}), got {list:?}"));
        }
    }
    let main_checks = args.flag("main-checks");
    let mut one = SimConfig::new(1, seed);
    one.main_checks = main_checks;
    let t1 = simulate(workload, &policy, one, &costs);
    let t1_ns = one_core_time(workload, t1.makespan);
    let mut config = SimConfig::new(cores, seed);
    config.main_checks = main_checks;
    config.factors = factors;
    config.shares = shares;
    config.turns = args.flag("turns");
    if let Some(list) = args.get("tick-ns") {
        let ticks: Result<Vec<u64>, _> = list.split(',').map(str::parse).collect();
        let ticks = ticks.map_err(|_| format!("--tick-ns {list}: whole nanoseconds separated by commas"))?;
        if ticks.len() != cores {
            return Err(format!("--tick-ns: one tick per core ({cores}), got {}", ticks.len()));
        }
        config.tick_ns = Some(ticks);
    }
    if let Some(ticks) = args.get("rebalance-ticks-ago") {
        config.rebalance_ticks_ago =
            ticks.parse().map_err(|_| format!("--rebalance-ticks-ago {ticks}: a whole number of ticks"))?;
    }
    if let Some(us) = args.get("events-until-us") {
        let us: u64 = us.parse().map_err(|_| format!("--events-until-us {us}: whole microseconds"))?;
        config.events_until_ns = Some(us.saturating_mul(1000));
    }
    let started = Instant::now();
    let outcome = simulate(workload, &policy, config, &costs);
    for e in &outcome.trace {
        println!("event: {} {} {} {}", e.core, e.at_ns, e.name, e.arg);
    }
    let mut line = report(&outcome, Some(t1_ns), args.flag("per-core"));
    line["host_ms"] = json!(started.elapsed().as_millis() as u64);
    println!("sim: costs: {costs}");
    println!(
        "sim: {} under {} on {cores} cores: makespan {:.3} ms, speedup {:.2} (T1 {:.3} ms), work W {:.3} ms, \
         critical path S {:.3} ms, W / S {:.1}, efficiency {:.3} (speedup / min(N, W / S)), {} steals, {} migrations",
        workload.name(),
        policy.name,
        outcome.makespan as f64 / 1e6,
        t1_ns as f64 / outcome.makespan.max(1) as f64,
        t1_ns as f64 / 1e6,
        outcome.work as f64 / 1e6,
        outcome.critical_path as f64 / 1e6,
        report::w_over_s(&outcome),
        report::efficiency(&outcome, t1_ns),
        outcome.steals(),
        outcome.migrations_total()
    );
    println!("report: {line}");
    if outcome.timed_out { Err("the run did not finish".into()) } else { Ok(()) }
}

/// The time a speedup is measured against: the one-core run's makespan; for `grain` the
/// tasks' work alone (its spawner polls, and the yields it makes at one core are not work the
/// tasks need), as the kernel's granularity figures do.
fn one_core_time(workload: Workload, one_core_makespan: u64) -> u64 {
    match workload {
        Workload::Grain { .. } => workload.units(),
        _ => one_core_makespan,
    }
}

fn main() {
    let result = Args::parse().and_then(|args| match args.command.as_str() {
        "run" => run(&args),
        "sweep" => sweep::sweep(&args),
        other => Err(format!("unknown command {other}: run or sweep")),
    });
    if let Err(why) = result {
        eprintln!("sim: {why}");
        std::process::exit(1);
    }
}
