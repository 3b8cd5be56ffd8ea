//! The demo workloads' settings on the kernel command line: `workload=`, `soak_s=`,
//! `grain_ns=`, `grain_ms=`, `processes=`, `rounds=`, `probe_ms=`, `queens_n=` and
//! `queens_split=`.
//!
//! The kernel reads none of these; they belong to the programs in the root package (the
//! `make run` kernel, the soak, the tests that run workloads). The kernel's parser offers every
//! word it does not know to the program's [`TABLE`] in the same pass as its own (see
//! `beamcore_bootargs::Table`), so a bad value here gets the same typed rejection and message as
//! a bad kernel word, and a word neither knows is reported once, naming both key lists.
//!
//! Pure code: tested on the host.

#![cfg_attr(not(test), no_std)]
#![forbid(unsafe_code)]

use core::fmt;

use beamcore_bootargs::{Setting, Table, choice, number};
use beamcore_limits::MAX_PROCESSES;

/// The workloads' settings. `Default` gives the documented defaults.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WorkloadArgs {
    /// What `make run` runs.
    pub workload: Workload,
    /// Seconds of guest time the soak program (`make soak`) keeps running workloads.
    pub soak_s: u32,
    /// Work per task of `workload=grain`, in nanoseconds of guest time at one instruction per
    /// nanosecond (`-icount shift=0`): about that many instructions.
    pub grain_ns: u32,
    /// Total work of `workload=grain` in milliseconds (at one instruction per nanosecond): the
    /// workload runs `grain_ms * 1_000_000 / grain_ns` tasks.
    pub grain_ms: u32,
    /// Processes `workload=hold` keeps alive at once; 0: as many as memory allows.
    pub processes: usize,
    /// `workload=offline`: times every core but 0 goes offline and comes back.
    pub rounds: u32,
    /// Milliseconds of the share probe run after the workload (0: none; apps/workloads/probe.rs).
    pub probe_ms: u32,
    /// `workload=nqueens`: the board's size.
    pub queens_n: u32,
    /// `workload=nqueens`: queens placed before a task searches the rest itself; below the first
    /// two, each placement is a process of its own (apps/workloads.rs, `nqueens`). More splits
    /// give more, smaller tasks, and a shorter critical path for the work.
    pub queens_split: u32,
}

impl Default for WorkloadArgs {
    fn default() -> Self {
        WorkloadArgs {
            workload: Workload::Imbalanced,
            soak_s: 120,
            grain_ns: 10_000,
            grain_ms: 120,
            processes: DEFAULT_HOLD_PROCESSES,
            rounds: 4,
            probe_ms: 0,
            queens_n: 13,
            queens_split: 2,
        }
    }
}

/// The words in force, in the kernel's `config:` line after the kernel's own.
impl fmt::Display for WorkloadArgs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "workload={} soak_s={} grain_ns={} grain_ms={} processes={} rounds={} probe_ms={} queens_n={} \
             queens_split={}",
            self.workload.name(),
            self.soak_s,
            self.grain_ns,
            self.grain_ms,
            self.processes,
            self.rounds,
            self.probe_ms,
            self.queens_n,
            self.queens_split
        )
    }
}

/// What `workload=hold` holds unless `processes=` says otherwise.
pub const DEFAULT_HOLD_PROCESSES: usize = 10_000;

/// The demo workloads of `make run` (bootarg `workload=`); each checks its own result.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Workload {
    /// Every process spawned on core 0: only stealing spreads the work.
    #[default]
    Imbalanced,
    /// Recursive fork-join: each process spawns two children and waits for their results.
    Fib,
    /// A token passed around a ring of processes.
    Ring,
    /// All four priorities, some processes bound to cores.
    Mixed,
    /// N-queens on a `queens_n` board: one process per placement of the first two queens, each
    /// splitting further until `queens_split` are placed; counts the solutions.
    Nqueens,
    /// Unbalanced tree search (binomial): a process per tree node, counting the nodes.
    Uts,
    /// Many senders, one receiver (Erlang's "bang" benchmark).
    Bang,
    /// All-to-all ping-pong among many processes (Erlang's "big" benchmark).
    Big,
    /// Processes chased from core to core by moving load, until the migration limit holds
    /// them (the test of `max_migrations`).
    Bounce,
    /// The granularity experiment: `grain_ms` of work cut into tasks of `grain_ns` each, every
    /// task spawned on core 0; each must run exactly once.
    Grain,
    /// `processes` processes alive at once, each blocked in `receive`; then each is sent a
    /// message and must answer it and end.
    Hold,
    /// fib and uts while a controller takes cores 1..N-1 offline and back `rounds` times,
    /// with processes bound to those cores; every process must run exactly once.
    Offline,
}

const WORKLOADS: &[&str] =
    &["imbalanced", "fib", "ring", "mixed", "nqueens", "uts", "bang", "big", "bounce", "grain", "hold", "offline"];

impl Workload {
    pub const ALL: [Workload; 12] = [
        Workload::Imbalanced,
        Workload::Fib,
        Workload::Ring,
        Workload::Mixed,
        Workload::Nqueens,
        Workload::Uts,
        Workload::Bang,
        Workload::Big,
        Workload::Bounce,
        Workload::Grain,
        Workload::Hold,
        Workload::Offline,
    ];

    pub fn name(self) -> &'static str {
        WORKLOADS[self as usize]
    }
}

const SETTINGS: &[Setting<WorkloadArgs>] = &[
    choice("workload", WORKLOADS, |c, i| c.workload = Workload::ALL[i]),
    number("soak_s", 1, 86_400, |c, v| c.soak_s = v as u32),
    number("grain_ns", 100, 10_000_000, |c, v| c.grain_ns = v as u32),
    number("grain_ms", 1, 10_000, |c, v| c.grain_ms = v as u32),
    number("processes", 0, MAX_PROCESSES as u64, |c, v| c.processes = v as usize),
    number("rounds", 1, 1_000, |c, v| c.rounds = v as u32),
    number("probe_ms", 0, 10_000, |c, v| c.probe_ms = v as u32),
    number("queens_n", 4, 15, |c, v| c.queens_n = v as u32),
    number("queens_split", 2, 15, |c, v| c.queens_split = v as u32),
];

/// The workloads' settings, for the kernel's parser.
pub static TABLE: Table<WorkloadArgs> = Table::new(
    SETTINGS,
    &["workload", "soak_s", "grain_ns", "grain_ms", "processes", "rounds", "probe_ms", "queens_n", "queens_split"],
);

#[cfg(test)]
mod tests {
    use beamcore_bootargs::{Config, Parsed, RejectReason, TableWords};

    use super::*;

    fn parse(line: &str) -> (Parsed<'_>, WorkloadArgs) {
        let mut program = TableWords { table: &TABLE, config: WorkloadArgs::default() };
        let parsed = beamcore_bootargs::parse(line.as_bytes(), false, &mut program);
        (parsed, program.config)
    }

    fn reasons(parsed: &Parsed<'_>) -> Vec<RejectReason> {
        parsed.rejections.iter().map(|r| r.reason).collect()
    }

    #[test]
    fn defaults_print_every_word() {
        assert_eq!(
            WorkloadArgs::default().to_string(),
            "workload=imbalanced soak_s=120 grain_ns=10000 grain_ms=120 processes=10000 rounds=4 probe_ms=0 \
             queens_n=13 queens_split=2"
        );
    }

    #[test]
    fn every_workload_name_parses_to_its_workload() {
        for workload in Workload::ALL {
            let line = format!("workload={}", workload.name());
            let (parsed, args) = parse(&line);
            assert!(parsed.rejections.is_empty());
            assert_eq!(args.workload, workload);
        }
        let (parsed, args) = parse("workload=fib workload=bogus");
        assert_eq!(args.workload, Workload::Fib, "a bad word keeps what was in force");
        assert_eq!(reasons(&parsed), [RejectReason::NotOneOf(WORKLOADS)]);
        assert_eq!(
            parsed.rejections[0].to_string(),
            "bootargs: workload=bogus ignored: expected one of \
             imbalanced|fib|ring|mixed|nqueens|uts|bang|big|bounce|grain|hold|offline"
        );
    }

    #[test]
    fn grain_settings_parse_within_their_ranges() {
        let (parsed, args) = parse("workload=grain grain_ns=1000 grain_ms=5");
        assert!(parsed.rejections.is_empty());
        assert_eq!(args.workload, Workload::Grain);
        assert_eq!((args.grain_ns, args.grain_ms), (1000, 5));
        let (parsed, args) = parse("grain_ns=99 grain_ns=10000001 grain_ms=0");
        assert_eq!(args, WorkloadArgs::default());
        assert_eq!(reasons(&parsed)[0], RejectReason::OutOfRange { min: 100, max: 10_000_000 });
        assert_eq!(reasons(&parsed)[2], RejectReason::OutOfRange { min: 1, max: 10_000 });
    }

    #[test]
    fn queens_settings_parse_within_their_ranges() {
        let (parsed, args) = parse("workload=nqueens queens_n=15 queens_split=5");
        assert!(parsed.rejections.is_empty());
        assert_eq!((args.workload, args.queens_n, args.queens_split), (Workload::Nqueens, 15, 5));
        let (parsed, args) = parse("queens_n=3 queens_n=16 queens_split=1 queens_split=16");
        assert_eq!(args, WorkloadArgs::default());
        assert_eq!(
            reasons(&parsed),
            [
                RejectReason::OutOfRange { min: 4, max: 15 },
                RejectReason::OutOfRange { min: 4, max: 15 },
                RejectReason::OutOfRange { min: 2, max: 15 },
                RejectReason::OutOfRange { min: 2, max: 15 },
            ]
        );
    }

    #[test]
    fn process_and_round_settings_parse_within_their_ranges() {
        let (parsed, args) = parse("workload=hold processes=100_000 max_processes=500 rounds=7");
        assert!(parsed.rejections.is_empty());
        assert_eq!(args.workload, Workload::Hold);
        assert_eq!((args.processes, args.rounds), (100_000, 7));
        assert_eq!(parsed.config.max_processes, 500, "max_processes= stays the kernel's");
        assert_eq!(parse("processes=0").1.processes, 0, "0: as many as fit");
        let (parsed, args) = parse("processes=2097153 rounds=0 rounds=1001 soak_s=0");
        assert_eq!(args, WorkloadArgs::default());
        assert_eq!(
            reasons(&parsed),
            [
                RejectReason::OutOfRange { min: 0, max: MAX_PROCESSES as u64 },
                RejectReason::OutOfRange { min: 1, max: 1_000 },
                RejectReason::OutOfRange { min: 1, max: 1_000 },
                RejectReason::OutOfRange { min: 1, max: 86_400 },
            ]
        );
    }

    #[test]
    fn kernel_words_stay_the_kernels_and_unknown_words_name_every_key() {
        let (parsed, args) = parse("ticks=3 workload=ring bogus=1");
        assert_eq!(parsed.config, Config { ticks: 3, ..Config::default() });
        assert_eq!(args.workload, Workload::Ring);
        assert_eq!(reasons(&parsed), [RejectReason::UnknownKey { program_keys: TABLE.keys() }]);
        let shown = parsed.rejections[0].to_string();
        assert!(
            shown.starts_with("bootargs: bogus=1 ignored: unknown key (known: slice_us, maxcpus, ticks,"),
            "{shown}"
        );
        assert!(
            shown.ends_with(
                ", workload, soak_s, grain_ns, grain_ms, processes, rounds, probe_ms, queens_n, queens_split)"
            ),
            "{shown}"
        );
    }
}
