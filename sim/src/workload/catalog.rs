//! The kernel's workloads by name and size ([`Workload`]): the sizes `apps/workloads.rs` runs
//! them at, `key=value` sizes read and printed for the command line and the sweep, and what a
//! run of each must count (its processes and work units), which the engine's runs are checked
//! against.

use beamcore_workload_shapes::{uts_child_id, uts_count};

use super::Program;
use super::queens::QueensTree;

/// One of the kernel's workloads, with its size.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Workload {
    /// `fib(n)`: fork-join Fibonacci, two children per node.
    Fib { n: u32 },
    /// `imbalanced(workers, units)`: all spawned on core 0.
    Imbalanced { workers: u32, units: u32 },
    /// `nqueens(n, split)`: one task per placement of the first two queens, spawned on core 0,
    /// each splitting further until `split` queens are placed (`queens`).
    Nqueens { n: u32, split: u32 },
    /// `uts(roots, children, percent)`: a binomial unbalanced tree, one process per node.
    Uts { roots: u32, children: u32, percent: u32 },
    /// `mixed(workers, units)`: four priorities, every fifth bound.
    Mixed { workers: u32, units: u32 },
    /// `bang(senders, messages)`: many senders, one receiver.
    Bang { senders: u32, messages: u32 },
    /// `grain(grain_ns, total)`: `total_ns` of work in tasks of `grain_ns`, one spawner on core 0.
    Grain { grain_ns: u64, total_ns: u64 },
}

impl Workload {
    /// The workloads `make sim` runs, with the kernel's sizes (`workloads::run`).
    pub const NAMES: [&'static str; 7] = ["fib", "nqueens", "uts", "imbalanced", "mixed", "bang", "grain"];

    /// A workload by name, at the size the kernel runs it (`grain` at its bootarg defaults:
    /// 10 us tasks, 120 ms).
    pub fn kernel(name: &str) -> Option<Workload> {
        Some(match name {
            "fib" => Workload::Fib { n: 18 },
            "imbalanced" => Workload::Imbalanced { workers: 400, units: 40 },
            "nqueens" => Workload::Nqueens { n: 13, split: 2 },
            "uts" => Workload::Uts { roots: 1000, children: 4, percent: 20 },
            "mixed" => Workload::Mixed { workers: 200, units: 30 },
            "bang" => Workload::Bang { senders: 300, messages: 1000 },
            "grain" => Workload::grain(10_000),
            _ => return None,
        })
    }

    /// The granularity workload with tasks of `grain_ns` (120 ms of work in all, as
    /// `make bench BENCH=grain`).
    pub fn grain(grain_ns: u64) -> Workload {
        Workload::Grain { grain_ns, total_ns: 120_000_000 }
    }

    /// The workload with the sizes `words` gives, bootargs-style `key=value` words separated by
    /// spaces or commas (`n=22`, `workers=4000 units=300`); a key it does not name keeps its
    /// value. The keys are the arguments of `apps/workloads.rs`'s function: fib `n`; nqueens `n`, `split`;
    /// imbalanced and mixed `workers`, `units`; uts `roots`, `children`, `percent`; bang
    /// `senders`, `messages`; grain `grain_ns`, `total_ns`.
    pub fn sized(self, words: &str) -> Result<Workload, String> {
        let mut w = self;
        for word in words.split([' ', ',']).filter(|w| !w.is_empty()) {
            let (key, value) = word.split_once('=').ok_or_else(|| format!("{word}: expected key=value"))?;
            let value: u64 = value.parse().map_err(|_| format!("{word}: not a number"))?;
            let small = || u32::try_from(value).map_err(|_| format!("{word}: too large"));
            match (&mut w, key) {
                (Workload::Fib { n } | Workload::Nqueens { n, .. }, "n") => *n = small()?,
                (Workload::Nqueens { split, .. }, "split") => *split = small()?,
                (Workload::Imbalanced { workers, .. } | Workload::Mixed { workers, .. }, "workers") => {
                    *workers = small()?
                }
                (Workload::Imbalanced { units, .. } | Workload::Mixed { units, .. }, "units") => *units = small()?,
                (Workload::Uts { roots, .. }, "roots") => *roots = small()?,
                (Workload::Uts { children, .. }, "children") => *children = small()?,
                (Workload::Uts { percent, .. }, "percent") => *percent = small()?,
                (Workload::Bang { senders, .. }, "senders") => *senders = small()?,
                (Workload::Bang { messages, .. }, "messages") => *messages = small()?,
                (Workload::Grain { grain_ns, .. }, "grain_ns") => *grain_ns = value,
                (Workload::Grain { total_ns, .. }, "total_ns") => *total_ns = value,
                _ => return Err(format!("{word}: {} has no size {key}", self.name())),
            }
        }
        if let Workload::Fib { n } = w
            && n > 40
        {
            return Err(format!("fib n={n}: more than 40 would not fit in memory"));
        }
        if let Workload::Nqueens { n, split } = w
            && !((4..=20).contains(&n) && (2..=n).contains(&split))
        {
            return Err(format!("nqueens n={n} split={split}: n 4 to 20, split 2 to n"));
        }
        Ok(w)
    }

    /// The workload's sizes as `key=value` words ([`Workload::sized`] reads them back).
    pub fn size(&self) -> String {
        match *self {
            Workload::Fib { n } => format!("n={n}"),
            Workload::Nqueens { n, split } => format!("n={n} split={split}"),
            Workload::Imbalanced { workers, units } | Workload::Mixed { workers, units } => {
                format!("workers={workers} units={units}")
            }
            Workload::Uts { roots, children, percent } => {
                format!("roots={roots} children={children} percent={percent}")
            }
            Workload::Bang { senders, messages } => format!("senders={senders} messages={messages}"),
            Workload::Grain { grain_ns, total_ns } => format!("grain_ns={grain_ns} total_ns={total_ns}"),
        }
    }

    pub fn name(&self) -> &'static str {
        match self {
            Workload::Fib { .. } => "fib",
            Workload::Imbalanced { .. } => "imbalanced",
            Workload::Nqueens { .. } => "nqueens",
            Workload::Uts { .. } => "uts",
            Workload::Mixed { .. } => "mixed",
            Workload::Bang { .. } => "bang",
            Workload::Grain { .. } => "grain",
        }
    }

    /// The program's main process (the kernel runs it on core 0).
    pub fn main(&self) -> Program {
        Program::Main { workload: *self, pc: 0, index: 0 }
    }

    /// Processes the workload spawns besides main: each must end exactly once.
    pub fn processes(&self) -> u64 {
        match *self {
            Workload::Fib { n } => fib_nodes(n),
            Workload::Imbalanced { workers, .. } | Workload::Mixed { workers, .. } => u64::from(workers),
            Workload::Nqueens { n, split } => QueensTree::of(n, split).processes,
            Workload::Uts { roots, children, percent } => uts_nodes(roots, children, percent),
            Workload::Bang { senders, .. } => u64::from(senders) + 1,
            Workload::Grain { grain_ns, total_ns } => grain_tasks(grain_ns, total_ns) + 1,
        }
    }

    /// Work units the workload credits in all (the report's per-core `work`, summed).
    pub fn units(&self) -> u64 {
        match *self {
            Workload::Fib { n } => fib_leaves(n),
            Workload::Imbalanced { workers, units } | Workload::Mixed { workers, units } => {
                u64::from(workers) * u64::from(units)
            }
            Workload::Nqueens { n, split } => QueensTree::of(n, split).units,
            Workload::Uts { roots, children, percent } => uts_nodes(roots, children, percent),
            Workload::Bang { senders, messages } => {
                let (s, m) = (u64::from(senders), u64::from(messages));
                s * (m / 16) + s * m / 16
            }
            Workload::Grain { grain_ns, total_ns } => grain_tasks(grain_ns, total_ns) * grain_ns.max(1),
        }
    }
}

pub(super) fn grain_tasks(grain_ns: u64, total_ns: u64) -> u64 {
    (total_ns / grain_ns.max(1)).max(1)
}

/// Processes of `fib(n)`'s tree (the root included).
fn fib_nodes(n: u32) -> u64 {
    if n < 2 { 1 } else { 1 + fib_nodes(n - 1) + fib_nodes(n - 2) }
}

/// Leaves of `fib(n)`'s tree: each does one unit.
fn fib_leaves(n: u32) -> u64 {
    if n < 2 { 1 } else { fib_leaves(n - 1) + fib_leaves(n - 2) }
}

/// Nodes of the `uts` tree (one process each).
fn uts_nodes(roots: u32, children: u32, percent: u32) -> u64 {
    let (c, p) = (u64::from(children), u64::from(percent));
    1 + (0..u64::from(roots)).map(|i| uts_count(uts_child_id(0, i), c, p, 1)).sum::<u64>()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The sizes match what the kernel reports for the same workloads.
    #[test]
    fn kernel_sizes() {
        assert_eq!(Workload::kernel("fib").unwrap().processes(), 8361);
        assert_eq!(Workload::kernel("fib").unwrap().units(), 4181);
        assert_eq!(Workload::kernel("uts").unwrap().processes(), 4377);
        assert_eq!(Workload::kernel("nqueens").unwrap().processes(), 132);
        assert_eq!(Workload::kernel("nqueens").unwrap().units(), crate::cost::NQUEENS_TOTAL_UNITS);
        // tests/31 (`workload=nqueens queens_split=3`): "from 1162 processes".
        assert_eq!(Workload::Nqueens { n: 13, split: 3 }.processes(), 1162);
        assert_eq!(Workload::kernel("imbalanced").unwrap().units(), 16_000);
        assert_eq!(Workload::kernel("grain").unwrap().processes(), 12_001);
    }

    /// Sizes are `key=value` words of the workload's own arguments, read back from what
    /// `size` prints; a key the workload does not have is refused.
    #[test]
    fn sizes_round_trip() {
        for name in Workload::NAMES {
            let w = Workload::kernel(name).unwrap();
            assert_eq!(w.sized(&w.size()), Ok(w), "{name}");
        }
        let fib = Workload::kernel("fib").unwrap();
        assert_eq!(fib.sized("n=24"), Ok(Workload::Fib { n: 24 }));
        let uts = Workload::kernel("uts").unwrap().sized("roots=7,children=2 percent=56");
        assert_eq!(uts, Ok(Workload::Uts { roots: 7, children: 2, percent: 56 }));
        let queens = Workload::kernel("nqueens").unwrap();
        assert_eq!(queens.sized("n=15 split=4"), Ok(Workload::Nqueens { n: 15, split: 4 }));
        assert!(queens.sized("split=14").is_err(), "no more splits than queens");
        assert!(fib.sized("workers=3").is_err());
        assert!(fib.sized("n").is_err());
    }
}
