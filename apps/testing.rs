//! What the in-QEMU tests (tests/) share: the failure macro, running a job in kernel context,
//! a `Display` that panics, and the balancer's rules checked after a workload. Only tests use these; they live here, in
//! the programs' library, so the kernel library holds none of them.

use alloc::boxed::Box;
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use core::fmt;
use core::sync::atomic::Ordering;

use beamcore::{ExitCode, println, sched, smp};

use crate::config::Workload;
use crate::workloads::{Outcome, bound_violations, max_priority_migrations, run, work_on};

/// In a test kernel: if `condition` is false, prints `test failed: <message>` and returns
/// `ExitCode::Failure(1)` from the enclosing function.
#[macro_export]
macro_rules! ensure {
    ($condition:expr, $($message:tt)+) => {
        if !$condition {
            $crate::__kernel::println!("test failed: {}", format_args!($($message)+));
            return $crate::__kernel::ExitCode::Failure(1);
        }
    };
}

/// How long a test waits, in guest time, for a message that must come: long enough that only
/// a lost message reaches it (a failure, never a measurement).
pub const MUST_ARRIVE_US: u64 = 20_000_000;

/// The next message, or `None` if nothing came within [`MUST_ARRIVE_US`] (the test fails).
pub fn receive_must_arrive() -> Option<sched::Message> {
    sched::receive_timeout(MUST_ARRIVE_US)
}

/// Receives `processes` answers, `Message::Word(index)` with each index below `processes`, each
/// within [`MUST_ARRIVE_US`]: Ok when every index answered exactly once, else what went wrong
/// (an index twice, another message, or nothing in time).
pub fn each_answers_once(processes: usize) -> Result<(), String> {
    let mut answered = alloc::vec![false; processes];
    for _ in 0..processes {
        match receive_must_arrive() {
            Some(sched::Message::Word(index)) if (index as usize) < processes => {
                if core::mem::replace(&mut answered[index as usize], true) {
                    return Err(format!("process {index} answered twice"));
                }
            }
            other => return Err(format!("expected an answer, got {other:?}")),
        }
    }
    // `processes` answers, none twice: every index answered.
    Ok(())
}

/// The reason in `pid`'s `Down` (the caller monitors it), passing over every other message, or
/// `None` if it did not come within [`MUST_ARRIVE_US`] (the test fails).
pub fn down_must_arrive(pid: sched::Pid) -> Option<sched::ExitReason> {
    loop {
        match receive_must_arrive()? {
            sched::Message::Down { pid: who, reason, .. } if who == pid => return Some(reason),
            _ => {}
        }
    }
}

/// Spawn options that start the `n`th of a series of processes on core `n` modulo the cores
/// online: a series spread over every core.
pub fn spread(n: usize) -> sched::SpawnOptions {
    sched::SpawnOptions::default().on_core(n % smp::cores_online())
}

/// A `Display` that panics when formatted ("inner panic inside Display"): a program's own
/// formatting code failing inside `println!` or a panic's message (tests/92, tests/95).
pub struct PanickingDisplay;

impl fmt::Display for PanickingDisplay {
    fn fmt(&self, _f: &mut fmt::Formatter<'_>) -> fmt::Result {
        panic!("inner panic inside Display")
    }
}

/// For test kernels that must fault in kernel code (not in a process, where a fault only ends
/// the process): runs `job` as a kernel job on core `core`, then waits for the run to end
/// (the fault's PANIC exits QEMU). Returns a failure if the job could not be queued or the
/// run went on.
pub fn run_as_kernel_job(core: usize, job: fn()) -> ExitCode {
    if smp::run_on(core, Box::new(job)).is_err() {
        println!("test failed: could not queue work on core {core}");
        return ExitCode::Failure(1);
    }
    smp::wait_until(|| false);
    ExitCode::Failure(1)
}

/// A test kernel's whole `main`: runs the workload the bootargs name, checks the balancer's
/// rules with [`check_balancer_invariants`], prints `test: <summary>` or `test failed: <why>`.
pub fn run_configured_and_check() -> ExitCode {
    sched::arm_progress_watchdog(10);
    let workload = crate::config::args().workload;
    let outcome = run(workload);
    match check_balancer_invariants(workload, &outcome) {
        Ok(summary) => {
            println!("test: {summary}");
            ExitCode::Success
        }
        Err(why) => {
            println!("test failed: {why}");
            ExitCode::Failure(1)
        }
    }
}

/// Checks the balancer's rules after `run` and says what held, or what did not: every process
/// completed exactly once (the workload's own check), with default thresholds `imbalanced`
/// leaves no core idle and keeps the busiest within 1.5x the mean work, no process exceeded
/// `max_migrations`, bound processes never ran elsewhere, no thief stole from one victim twice
/// within `cooldown`, with `protect_max=on` no max-priority process moved, and no core's time
/// counters (asleep, idle with work, wake-up latency) exceed the time since boot.
pub fn check_balancer_invariants(workload: Workload, outcome: &Outcome) -> Result<String, String> {
    use beamcore::sched::telemetry::total;
    if !outcome.ok {
        return Err(format!("workload {} failed: {}", workload.name(), outcome.detail));
    }
    let cores = smp::cores_online();
    let spawned = total(|s| &s.spawned);
    let completed = total(|s| &s.completed);
    // The caller (main) is a process too and still runs.
    if spawned != completed + 1 {
        return Err(format!("spawned {spawned}, completed {completed}"));
    }
    let works: Vec<u64> = (0..cores).map(work_on).collect();
    let mean = works.iter().sum::<u64>() as f64 / cores as f64;
    let max = works.iter().copied().max().unwrap_or(0) as f64;
    let (balance, strategy) = sched::balance_config();
    let defaults = beamcore::config::Config::default();
    let default_thresholds = beamcore::boot_config().cooldown_ns == defaults.cooldown_ns
        && balance.max_migrations == defaults.balance.max_migrations;
    if workload == Workload::Imbalanced && default_thresholds {
        if works.contains(&0) {
            return Err(format!("a core executed no work: {works:?}"));
        }
        // Under -icount QEMU itself gives vCPUs unequal shares of the machine: with one bound,
        // always-busy process per core the busiest did 1.27x the mean at 4 cores and 1.84x at 8
        // (docs/benchmarks.md, "A limit of speedup measured under -icount"), and at 4 cores as
        // much as 1.55x for the same kernel when nothing but the command line's length changed
        // (which core QEMU favours moves with it). Perfect balancing cannot beat that spread,
        // so the bound sits above it at every core count; a core left idle, or the work left
        // on the spawning core (4x the mean at 4 cores), still fails.
        let bound = 2.0;
        if max > bound * mean {
            return Err(format!("busiest core {max} > {bound} x mean {mean:.0}: {works:?}"));
        }
    }
    let seen = sched::max_migrations_seen();
    if seen > balance.max_migrations {
        return Err(format!("a process migrated {seen} times (limit {})", balance.max_migrations));
    }
    // `bounce` moves its workers more often than the limit allows (150 rounds, most of them a
    // move each): the limit must be reached, not only respected.
    if workload == Workload::Bounce && cores > 1 && balance.max_migrations <= 100 && seen != balance.max_migrations {
        return Err(format!(
            "bounce: the most migrations seen is {seen}, the limit {} was never reached",
            balance.max_migrations
        ));
    }
    if bound_violations() != 0 {
        return Err(format!("bound processes ran {} units off their core", bound_violations()));
    }
    for core in 0..cores {
        let gap = sched::core_stats(core).min_steal_gap.load(Ordering::Relaxed);
        if gap != u64::MAX && gap < balance.cooldown_counts {
            return Err(format!(
                "core {core} stole from one victim twice within {gap} counts (cooldown {})",
                balance.cooldown_counts
            ));
        }
    }
    // Time counters are sums of spans of this run: none can exceed the time since boot (a span
    // taken backwards, a stamp from after the span's end, wraps to an enormous figure).
    let up = beamcore::arch::cpu::counter();
    for core in 0..cores {
        let stats = sched::core_stats(core);
        for (name, counts) in [
            ("asleep", &stats.asleep_counts),
            ("idle with work", &stats.idle_with_work_counts),
            ("wake-up latency", &stats.wake_latency_counts),
        ] {
            let counts = counts.load(Ordering::Relaxed);
            if counts > up {
                return Err(format!("core {core}: {counts} counts {name}, more than the {up} since boot"));
            }
        }
    }
    if balance.protect_max && max_priority_migrations() != 0 {
        return Err("a protected max-priority process moved".into());
    }
    let steals = total(|s| &s.steals);
    let stolen = total(|s| &s.stolen);
    let stealable_seen = total(|s| &s.stealable_seen);
    // `grain`'s one victim (core 0) is raced by every thief at once and by its own spawner, and
    // a thief's batch ends at its first lost race (`steal_from`), so there `steal=half` takes
    // less than half minus one per steal (42% of what was seen, measured): only the upper bound
    // is checked for it.
    let half = balance.amount == beamcore::sched::balance::StealAmount::Half;
    if workload == Workload::Grain && half {
        if stolen > stealable_seen {
            return Err(format!("steal=half: {steals} steals took {stolen} of {stealable_seen} stealable"));
        }
    } else {
        check_steal_amounts(balance.amount, steals, stolen, stealable_seen)?;
    }
    Ok(format!(
        "{} with {strategy} on {cores} cores: {} ({steals} steals taking {stolen} of {stealable_seen} stealable, work {works:?}, max/mean {:.2}, max migrations {seen})",
        workload.name(),
        outcome.detail,
        max / mean
    ))
}

/// Checks what the steals took against `steal=` (from the thieves' counters): with `one`
/// exactly one process per steal; with `half` at least half of what the victim had stealable
/// when the thief decided (a thief that loses a race for some of them takes fewer, so a
/// shortfall of one per steal is allowed), and never more than it had.
pub fn check_steal_amounts(
    amount: beamcore::sched::balance::StealAmount,
    steals: u64,
    stolen: u64,
    stealable_seen: u64,
) -> Result<(), String> {
    use beamcore::sched::balance::StealAmount;
    match amount {
        StealAmount::One if stolen != steals => Err(format!("steal=one: {steals} steals took {stolen} processes")),
        StealAmount::Half if stolen > stealable_seen => {
            Err(format!("steal=half: {steals} steals took {stolen} of {stealable_seen} stealable"))
        }
        StealAmount::Half if 2 * (stolen + steals) < stealable_seen => Err(format!(
            "steal=half: {steals} steals took {stolen} processes of {stealable_seen} stealable, less than half"
        )),
        _ => Ok(()),
    }
}
