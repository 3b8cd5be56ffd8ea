//! `beamcore-sim`: the host simulator's command line (docs/simulator.md).
//!
//! ```text
//! beamcore-sim run   [--workload fib] [--policy default] [--cores 4] [--seed 1] [--grain-ns 10000]
//!                    [--factors 1.2,0.9,.. | --shares 0.3,0.2,..] [--per-core]
//!                    [--results bench/results.json]
//! beamcore-sim sweep [--out target/sim/sweep.json] [--seed 1] [--jobs 2] [--max-cores 1024]
//!                    [--workloads fib,uts] [--policies default,peers] [--grain on|off]
//!                    [--results bench/results.json]
//! ```
//!
//! `run` prints one `report: {json}` line (the kernel's field names, plus makespan and speedup
//! over a one-core run); `sweep` runs every workload under every policy at 1, 2, 4, ..., 1024
//! cores and the granularity sweep, and writes their reports for `scripts/sim.py`.

use std::path::PathBuf;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use beamcore_sim::report::report;
use beamcore_sim::{CostModel, Policy, SimConfig, Workload, simulate};
use serde_json::{Value, json};

/// Task sizes of the granularity sweep (µs), as `make bench BENCH=grain`.
const GRAIN_SIZES_US: [u64; 7] = [1, 3, 10, 30, 100, 300, 1000];
/// Core counts of the granularity sweep.
const GRAIN_CORES: [usize; 4] = [4, 8, 64, 256];

struct Args {
    command: String,
    options: Vec<(String, String)>,
    flags: Vec<String>,
}

impl Args {
    fn parse() -> Result<Args, String> {
        let mut args = std::env::args().skip(1);
        let command = args.next().ok_or("usage: beamcore-sim run|sweep [--option value]... (docs/simulator.md)")?;
        let (mut options, mut flags) = (Vec::new(), Vec::new());
        let rest: Vec<String> = args.collect();
        let mut i = 0;
        while i < rest.len() {
            let key = rest[i].strip_prefix("--").ok_or_else(|| format!("unexpected argument {}", rest[i]))?;
            if key == "per-core" {
                flags.push(key.to_string());
                i += 1;
            } else {
                let value = rest.get(i + 1).ok_or_else(|| format!("--{key} needs a value"))?;
                options.push((key.to_string(), value.clone()));
                i += 2;
            }
        }
        Ok(Args { command, options, flags })
    }

    fn get(&self, key: &str) -> Option<&str> {
        self.options.iter().rev().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
    }

    fn number<T: std::str::FromStr>(&self, key: &str, default: T) -> Result<T, String> {
        match self.get(key) {
            Some(v) => v.parse().map_err(|_| format!("--{key} {v}: not a number")),
            None => Ok(default),
        }
    }

    fn list(&self, key: &str) -> Option<Vec<String>> {
        self.get(key).map(|v| v.split(',').map(str::to_string).collect())
    }
}

fn workload(name: &str, grain_ns: Option<u64>) -> Result<Workload, String> {
    if name == "grain"
        && let Some(ns) = grain_ns
    {
        return Ok(Workload::grain(ns));
    }
    Workload::kernel(name).ok_or_else(|| format!("unknown workload {name} (known: {})", Workload::NAMES.join(", ")))
}

fn policy(name: &str) -> Result<Policy, String> {
    Policy::by_name(name).ok_or_else(|| {
        let known: Vec<String> = Policy::all().into_iter().map(|p| p.name).collect();
        format!("unknown policy {name} (known: {}, load)", known.join(", "))
    })
}

fn costs(args: &Args) -> Result<CostModel, String> {
    let path = PathBuf::from(args.get("results").unwrap_or("bench/results.json"));
    if path.exists() {
        CostModel::from_results(&path)
    } else {
        eprintln!("sim: {} not found: built-in figures", path.display());
        Ok(CostModel::fallback())
    }
}

fn run(args: &Args) -> Result<(), String> {
    let costs = costs(args)?;
    let seed = args.number("seed", 1u64)?;
    let cores = args.number("cores", 4usize)?;
    let grain_ns = args.get("grain-ns").map(|v| v.parse().map_err(|_| format!("--grain-ns {v}"))).transpose()?;
    let workload = workload(args.get("workload").unwrap_or("imbalanced"), grain_ns)?;
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
    let t1 = simulate(workload, &policy, SimConfig::new(1, seed), &costs);
    let t1_ns = one_core_time(workload, t1.makespan);
    let mut config = SimConfig::new(cores, seed);
    config.factors = factors;
    config.shares = shares;
    let started = Instant::now();
    let outcome = simulate(workload, &policy, config, &costs);
    let mut line = report(&outcome, Some(t1_ns), args.flags.iter().any(|f| f == "per-core"));
    line["host_ms"] = json!(started.elapsed().as_millis() as u64);
    println!("sim: costs: {costs}");
    println!(
        "sim: {} under {} on {cores} cores: makespan {:.3} ms, speedup {:.2} (T1 {:.3} ms), critical path {:.3} ms, \
         {} steals, {} migrations",
        workload.name(),
        policy.name,
        outcome.makespan as f64 / 1e6,
        t1_ns as f64 / outcome.makespan.max(1) as f64,
        t1_ns as f64 / 1e6,
        outcome.critical_path as f64 / 1e6,
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

/// One simulation of the sweep.
struct Job {
    workload: Workload,
    /// Name in the figures: the workload's, or `grain_<size>us` in the granularity sweep.
    label: String,
    policy: Policy,
    cores: usize,
}

fn sweep(args: &Args) -> Result<(), String> {
    let costs = costs(args)?;
    let seed = args.number("seed", 1u64)?;
    let jobs_wanted = args.number("jobs", 2usize)?.max(1);
    let max_cores = args.number("max-cores", 1024usize)?;
    let out = PathBuf::from(args.get("out").unwrap_or("target/sim/sweep.json"));
    let names = args.list("workloads").unwrap_or_else(|| Workload::NAMES.iter().map(|s| s.to_string()).collect());
    let policies: Vec<Policy> = match args.list("policies") {
        Some(list) => list.iter().map(|p| policy(p)).collect::<Result<_, _>>()?,
        None => Policy::all(),
    };
    let core_counts: Vec<usize> = (0..=10).map(|i| 1usize << i).filter(|&c| c <= max_cores).collect();
    let mut jobs = Vec::new();
    for name in &names {
        let w = workload(name, None)?;
        for policy in &policies {
            for &cores in &core_counts {
                // One core never steals: every policy gives the same run, simulated once.
                if cores == 1 && policy.name != policies[0].name {
                    continue;
                }
                jobs.push(Job { workload: w, label: name.clone(), policy: policy.clone(), cores });
            }
        }
    }
    if names.iter().any(|n| n == "grain") && args.get("grain").unwrap_or("on") == "on" {
        let grain_policies: Vec<Policy> =
            policies.iter().filter(|p| p.name == "default" || p.name == "peers").cloned().collect();
        for size in GRAIN_SIZES_US {
            let w = Workload::grain(size * 1000);
            let label = format!("grain_{size}us");
            jobs.push(Job { workload: w, label: label.clone(), policy: policies[0].clone(), cores: 1 });
            for policy in &grain_policies {
                for cores in GRAIN_CORES.into_iter().filter(|&c| c <= max_cores) {
                    jobs.push(Job { workload: w, label: label.clone(), policy: policy.clone(), cores });
                }
            }
        }
    }
    // Longest first, so the two threads finish together: many cores and fine grains last long.
    let weight = |j: &Job| j.cores as u64 * j.workload.processes();
    let mut order: Vec<usize> = (0..jobs.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(weight(&jobs[i])));
    let results: Mutex<Vec<Option<(Value, u64, f64)>>> = Mutex::new(vec![None; jobs.len()]);
    let next = AtomicUsize::new(0);
    let started = Instant::now();
    eprintln!("sim: {} runs on {jobs_wanted} threads; costs: {costs}", jobs.len());
    std::thread::scope(|scope| {
        for _ in 0..jobs_wanted {
            scope.spawn(|| {
                loop {
                    let k = next.fetch_add(1, Ordering::Relaxed);
                    let Some(&i) = order.get(k) else { break };
                    let job = &jobs[i];
                    let t0 = Instant::now();
                    let outcome = simulate(job.workload, &job.policy, SimConfig::new(job.cores, seed), &costs);
                    let mut line = report(&outcome, None, false);
                    line["label"] = json!(job.label);
                    line["timed_out"] = json!(outcome.timed_out);
                    let secs = t0.elapsed().as_secs_f64();
                    results.lock().expect("no thread panicked")[i] = Some((line, outcome.makespan, secs));
                }
            });
        }
    });
    let results = results.into_inner().expect("no thread panicked");
    // Speedup and efficiency against the same workload's one-core run.
    let mut t1 = std::collections::BTreeMap::new();
    for (job, result) in jobs.iter().zip(&results) {
        if job.cores == 1 {
            t1.insert(job.label.clone(), result.as_ref().expect("every run finished").1);
        }
    }
    let mut lines = Vec::new();
    let mut host_secs = 0.0;
    let mut failed = 0;
    for (job, result) in jobs.iter().zip(results) {
        let (mut line, makespan, secs) = result.expect("every run finished");
        host_secs += secs;
        let t = one_core_time(job.workload, t1[&job.label]);
        let speedup = t as f64 / makespan.max(1) as f64;
        line["t1_ns"] = json!(t);
        line["speedup"] = json!((speedup * 1e4).round() / 1e4);
        line["efficiency"] = json!((speedup / job.cores as f64 * 1e4).round() / 1e4);
        line["host_s"] = json!((secs * 1e3).round() / 1e3);
        if line["timed_out"] == json!(true) || line["ok"] != json!(true) {
            failed += 1;
            eprintln!("sim: {} {} {} cores did not finish cleanly", job.label, job.policy.name, job.cores);
        }
        lines.push(line);
    }
    let document = json!({
        "seed": seed,
        "costs": costs.to_string(),
        "wall_s": (started.elapsed().as_secs_f64() * 10.0).round() / 10.0,
        "cpu_s": (host_secs * 10.0).round() / 10.0,
        "runs": lines,
    });
    if let Some(dir) = out.parent() {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    std::fs::write(&out, serde_json::to_string_pretty(&document).expect("JSON"))
        .map_err(|e| format!("{}: {e}", out.display()))?;
    eprintln!(
        "sim: {} runs in {:.1} s ({:.1} s of simulation on {jobs_wanted} threads) into {}",
        jobs.len(),
        started.elapsed().as_secs_f64(),
        host_secs,
        out.display()
    );
    if failed > 0 { Err(format!("{failed} runs did not finish cleanly")) } else { Ok(()) }
}

fn main() {
    let result = Args::parse().and_then(|args| match args.command.as_str() {
        "run" => run(&args),
        "sweep" => sweep(&args),
        other => Err(format!("unknown command {other}: run or sweep")),
    });
    if let Err(why) = result {
        eprintln!("sim: {why}");
        std::process::exit(1);
    }
}
