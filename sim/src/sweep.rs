//! `beamcore-sim sweep`: every workload under every policy at 1, 2, 4, ..., 1024 cores, each
//! sized so its parallelism exceeds the core count ([`sweep_size`]), plus the granularity
//! sweep, run on a few threads longest first; the reports, with speedups against the same
//! size's one-core run, written as JSON for `scripts/sim.py`.

use std::path::PathBuf;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use beamcore_sim::report::{self, report};
use beamcore_sim::{Policy, SimConfig, Workload, simulate};
use serde_json::{Value, json};

use super::args::{Args, costs, policy, workload};
use super::one_core_time;

/// Task sizes of the granularity sweep (µs), as `make bench BENCH=grain`.
const GRAIN_SIZES_US: [u64; 7] = [1, 3, 10, 30, 100, 300, 1000];
/// Core counts of the granularity sweep.
const GRAIN_CORES: [usize; 4] = [4, 8, 64, 256];

/// W / S the sweep sizes each workload for at N cores: 10 x N, so that Brent's bound min(N, W / S)
/// is N and a greedy schedule without costs would reach at least 1 / 1.1 of it (T <= W / N + S).
const PARALLELISM_PER_CORE: f64 = 10.0;

/// The size `make sim` runs `name` at on `cores` cores: the kernel's own size where its W / S is
/// at least 10 x N, else the smallest of a few larger ones that is (each W / S measured when the
/// size was chosen; the sweep warns when a run falls short). Sizes are the arguments of
/// `apps/workloads.rs`'s function (`Workload::sized`):
///
/// - fib: n = 24 (W / S 44,900) to 256 cores, 26 (113,000) at 512 and 1024, beyond 10 x N
///   on purpose: the kernel's fib(18) has 2,830, enough to 256 cores, but its run there lasts
///   0.34 ms, much of it spent spreading the tree from core 0 and stealing 12 us leaves (0.69
///   of the bound at 256 cores, 0.85 at 64); a larger tree amortises that start, as a long run
///   on a real machine would.
/// - imbalanced and mixed: 25 x N workers of N units, each at least the kernel's (imbalanced 400
///   of 40, mixed 200 of 30): S is one spawn per worker on main's chain plus one worker's
///   units, so both grow with N. With 0.6 x N units W / S was 12 to 13 x N while a spawn cost
///   half of `sched.spawn_exit`; at `sched.spawn_alive_reused` it fell to 9.4-9.9 x N.
/// - uts: the kernel's tree (1,000 roots, 4 children at 20%) has W / S 76 whatever its roots:
///   main's root spawns them one after another and each carries 5 nodes (64 us) on average,
///   so W / S cannot pass about 150. From 8 cores the tree is supercritical instead (2 children
///   at 56%: 1.12 per node, cut at depth 64), its roots chosen on the hashed tree: 7 (W / S
///   347), 13 (682), 26 (2,990), 52 (9,510), 75 (16,400).
/// - nqueens: the kernel's nqueens(13, 2) has W / S 108 (one task per placement of the first two
///   queens, 132 tasks: W / S is at most their number, about 0.8 of it), enough to 8 cores.
///   Beyond, n = 15 split deeper: every task with fewer than `split` queens placed spawns one
///   child per placement of the next (`apps/workloads.rs`), so W / S grows with the leaves
///   while the span stays one search plus a few spawns: split 3 (1,764 leaves) W / S 1,140 to
///   64 cores, split 4 (13,980) 5,840 to 512, split 5 (89,428) 23,900 at 1024. (Split 2 gave
///   149 at n = 15, short of 10 x N from 16 cores, and its few large tasks decided the end.)
/// - bang and grain: the kernel's sizes (their spans are one receiver's and one spawner's).
fn sweep_size(name: &str, cores: usize) -> Result<Workload, String> {
    let kernel = workload(name, None)?;
    let n = cores as u64;
    let size = match name {
        "fib" => match cores {
            0..=256 => "n=24".into(),
            _ => "n=26".into(),
        },
        "imbalanced" | "mixed" => {
            let (workers, units) = match kernel {
                Workload::Imbalanced { workers, units } | Workload::Mixed { workers, units } => (workers, units),
                _ => unreachable!("{name} is imbalanced or mixed"),
            };
            let workers = (25 * n).max(u64::from(workers));
            format!("workers={workers} units={}", n.max(u64::from(units)))
        }
        "uts" => match cores {
            0..=4 => String::new(),
            5..=32 => "roots=7 children=2 percent=56".into(),
            33..=64 => "roots=13 children=2 percent=56".into(),
            65..=256 => "roots=26 children=2 percent=56".into(),
            257..=512 => "roots=52 children=2 percent=56".into(),
            _ => "roots=75 children=2 percent=56".into(),
        },
        "nqueens" => match cores {
            0..=8 => String::new(),
            9..=64 => "n=15 split=3".into(),
            65..=512 => "n=15 split=4".into(),
            _ => "n=15 split=5".into(),
        },
        _ => String::new(),
    };
    kernel.sized(&size)
}

/// The policies the sweep sizes the workloads for: beamcore's default and the peers'. The other
/// victim strategies run at the kernel's sizes: those that do not spread the work (`random`,
/// `locality`, `p2c` beyond 64 cores reach 3-30x) would take hours of host time on the sizes
/// 1024 cores need, every idle core polling through seconds of simulated time (`locality` on
/// imbalanced sized for 1024 cores: some 13 s of it).
const SIZED_POLICIES: [&str; 2] = ["default", "peers"];

/// The size the sweep runs `name` at under `policy` on `cores` cores.
fn sized_for(name: &str, policy: &Policy, cores: usize) -> Result<Workload, String> {
    if SIZED_POLICIES.contains(&policy.name.as_str()) { sweep_size(name, cores) } else { workload(name, None) }
}

/// One simulation of the sweep.
struct Job {
    workload: Workload,
    /// Name in the figures: the workload's, or `grain_<size>us` in the granularity sweep.
    label: String,
    policy: Policy,
    cores: usize,
    /// A one-core run of a size only larger core counts run: their T1, not a figure.
    t1_only: bool,
}

pub fn sweep(args: &Args) -> Result<(), String> {
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
        for policy in &policies {
            for &cores in &core_counts {
                // One core never steals: every policy gives the same run, simulated once.
                if cores == 1 && policy.name != policies[0].name {
                    continue;
                }
                let w = sized_for(name, policy, cores)?;
                jobs.push(Job { workload: w, label: name.clone(), policy: policy.clone(), cores, t1_only: false });
            }
        }
        // T1 of every other size: a one-core run, not reported as one.
        let mut sizes: Vec<Workload> = core_counts.iter().map(|&c| sweep_size(name, c)).collect::<Result<_, _>>()?;
        sizes.push(workload(name, None)?);
        let mut seen = vec![sized_for(name, &policies[0], 1)?];
        for w in sizes {
            if !seen.contains(&w) {
                seen.push(w);
                let policy = policies[0].clone();
                jobs.push(Job { workload: w, label: name.clone(), policy, cores: 1, t1_only: true });
            }
        }
    }
    if names.iter().any(|n| n == "grain") && args.get("grain").unwrap_or("on") == "on" {
        let grain_policies: Vec<Policy> =
            policies.iter().filter(|p| p.name == "default" || p.name == "peers").cloned().collect();
        for size in GRAIN_SIZES_US {
            let w = Workload::grain(size * 1000);
            let label = format!("grain_{size}us");
            jobs.push(Job { workload: w, label: label.clone(), policy: policies[0].clone(), cores: 1, t1_only: false });
            for policy in &grain_policies {
                for cores in GRAIN_CORES.into_iter().filter(|&c| c <= max_cores) {
                    jobs.push(Job { workload: w, label: label.clone(), policy: policy.clone(), cores, t1_only: false });
                }
            }
        }
    }
    // Longest first, so the two threads finish together: many cores and fine grains last long.
    let weight = |j: &Job| j.cores as u64 * j.workload.processes().max(j.workload.units() / 8);
    let mut order: Vec<usize> = (0..jobs.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(weight(&jobs[i])));
    let results: Mutex<Vec<Option<(Value, f64, f64)>>> = Mutex::new(vec![None; jobs.len()]);
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
                    results.lock().expect("no thread panicked")[i] = Some((line, report::bound(&outcome), secs));
                }
            });
        }
    });
    let results = results.into_inner().expect("no thread panicked");
    // Speedup and efficiency against the same workload's one-core run.
    let mut t1 = std::collections::BTreeMap::new();
    for (job, result) in jobs.iter().zip(&results) {
        if job.cores == 1 {
            let line = &result.as_ref().expect("every run finished").0;
            t1.insert((job.label.clone(), job.workload.size()), line["makespan_ns"].as_u64().expect("a makespan"));
        }
    }
    let mut lines = Vec::new();
    let mut host_secs = 0.0;
    let mut failed = 0;
    for (job, result) in jobs.iter().zip(results) {
        let (mut line, bound, secs) = result.expect("every run finished");
        host_secs += secs;
        if job.t1_only {
            continue;
        }
        let t = one_core_time(job.workload, t1[&(job.label.clone(), job.workload.size())]);
        let makespan = line["makespan_ns"].as_u64().expect("a makespan");
        let speedup = t as f64 / makespan.max(1) as f64;
        line["t1_ns"] = json!(t);
        line["speedup"] = json!(report::round4(speedup));
        // Against the run's own bound, min(N, W / S) (Brent), not N alone.
        line["efficiency"] = json!(report::round4(speedup / bound));
        line["host_s"] = json!((secs * 1e3).round() / 1e3);
        let w_over_s = line["w_over_s"].as_f64().unwrap_or(0.0);
        let sized = SIZED_POLICIES.contains(&job.policy.name.as_str());
        if sized
            && !job.label.starts_with("grain")
            && job.cores > 1
            && w_over_s < PARALLELISM_PER_CORE * job.cores as f64
        {
            eprintln!(
                "sim: {} at {} cores ({}): W / S {w_over_s:.0}, below {} x N",
                job.label,
                job.cores,
                job.workload.size(),
                PARALLELISM_PER_CORE
            );
        }
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
