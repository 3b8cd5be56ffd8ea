//! The command line: `--key value` options and flags ([`Args`]), and the names it gives turned
//! into what the simulator runs: a workload at the kernel's size, a policy, the cost model
//! (read from `bench/results.json`, or the built-in figures without it).

use std::path::PathBuf;

use beamcore_sim::{CostModel, Policy, Workload};

pub struct Args {
    pub command: String,
    options: Vec<(String, String)>,
    flags: Vec<String>,
}

/// The options that take no value.
const FLAGS: [&str; 3] = ["per-core", "turns", "main-checks"];

impl Args {
    pub fn parse() -> Result<Args, String> {
        let mut args = std::env::args().skip(1);
        let command = args.next().ok_or("usage: beamcore-sim run|sweep [--option value]... (docs/simulator.md)")?;
        let (mut options, mut flags) = (Vec::new(), Vec::new());
        let rest: Vec<String> = args.collect();
        let mut i = 0;
        while i < rest.len() {
            let key = rest[i].strip_prefix("--").ok_or_else(|| format!("unexpected argument {}", rest[i]))?;
            if FLAGS.contains(&key) {
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

    /// Whether the flag `--name` was given.
    pub fn flag(&self, name: &str) -> bool {
        self.flags.iter().any(|f| f == name)
    }

    pub fn get(&self, key: &str) -> Option<&str> {
        self.options.iter().rev().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
    }

    pub fn number<T: std::str::FromStr>(&self, key: &str, default: T) -> Result<T, String> {
        match self.get(key) {
            Some(v) => v.parse().map_err(|_| format!("--{key} {v}: not a number")),
            None => Ok(default),
        }
    }

    pub fn list(&self, key: &str) -> Option<Vec<String>> {
        self.get(key).map(|v| v.split(',').map(str::to_string).collect())
    }
}

pub fn workload(name: &str, grain_ns: Option<u64>) -> Result<Workload, String> {
    if name == "grain"
        && let Some(ns) = grain_ns
    {
        return Ok(Workload::grain(ns));
    }
    Workload::kernel(name).ok_or_else(|| format!("unknown workload {name} (known: {})", Workload::NAMES.join(", ")))
}

pub fn policy(name: &str) -> Result<Policy, String> {
    Policy::by_name(name).ok_or_else(|| {
        let known: Vec<String> = Policy::all().into_iter().map(|p| p.name).collect();
        format!("unknown policy {name} (known: {}, load)", known.join(", "))
    })
}

pub fn costs(args: &Args) -> Result<CostModel, String> {
    let path = PathBuf::from(args.get("results").unwrap_or("bench/results.json"));
    if path.exists() {
        CostModel::from_results(&path)
    } else {
        eprintln!("sim: {} not found: built-in figures", path.display());
        Ok(CostModel::fallback())
    }
}
