//! The demo workloads (bootarg `workload=`), each checking its own result. `make run` runs the
//! configured one and prints the balancer's report; the in-QEMU tests run them under every
//! strategy.
//!
//! Work is counted in units: each unit is a fixed amount of computation, credited to the core
//! that ran it, so "work per core" measures where the computing happened (not where the
//! processes were spawned).
//!
//! This file holds what every workload shares: the work counters, [`Outcome`], [`run`] (the
//! configured workload, then the wait for its processes to end) and the helpers for spawning
//! patiently, collecting answers and checking each came exactly once. The workloads are its
//! submodules, by kind: `forkjoin`, `spread`, `messaging`, `bounce`, `grain`, `hold`,
//! `offline`, `probe`; `soak` runs them all. Every public item is re-exported here, so its
//! path is `workloads::name` whichever file holds it.

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicU64, Ordering};

use beamcore::arch::cpu;
use beamcore::mm::layout::MAX_CORES;
use beamcore::sched::{self, Message, Pid, SpawnOptions};

use crate::config::Workload;

mod bounce;
mod forkjoin;
mod grain;
mod hold;
mod messaging;
mod offline;
mod probe;
mod soak;
mod spread;
pub use bounce::bounce;
pub use forkjoin::{fib, nqueens, uts};
pub use grain::{GrainRun, SPIN_INSNS_PER_ITERATION, grain, last_grain};
pub use hold::{HoldRun, hold, last_hold};
pub use messaging::{bang, big, ring};
pub use offline::offline;
pub use probe::share_probe;
pub use soak::{SoakOutcome, soak};
pub use spread::{imbalanced, max_priority_migrations, mixed, steal_storm};

static WORK: [AtomicU64; MAX_CORES] = [const { AtomicU64::new(0) }; MAX_CORES];
/// Units a bound process ran on a core other than its own (must stay 0).
static BOUND_VIOLATIONS: AtomicU64 = AtomicU64::new(0);

/// Work units executed on `core` so far.
pub fn work_on(core: usize) -> u64 {
    WORK[core].load(Ordering::Relaxed)
}

/// Units bound processes ran away from their core.
pub fn bound_violations() -> u64 {
    BOUND_VIOLATIONS.load(Ordering::Relaxed)
}

/// One unit of computation (about 10,000 instructions), credited to the running core; a bound
/// process checks it is on its core.
fn unit(bound: Option<usize>) {
    spin_unit();
    let core = cpu::core_id();
    WORK[core].fetch_add(1, Ordering::Relaxed);
    if bound.is_some_and(|home| home != core) {
        BOUND_VIOLATIONS.fetch_add(1, Ordering::Relaxed);
    }
    sched::bump_reductions(500);
}

/// The computation of one unit, credited to nobody.
fn spin_unit() {
    let mut x = 0u64;
    for i in 0..2_000u64 {
        x = core::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(i));
    }
}

/// What a workload reports.
pub struct Outcome {
    pub ok: bool,
    pub detail: String,
    /// Processes the workload spawned (each must complete exactly once).
    pub processes: u64,
}

/// Credits `units` of work to the running core without doing any (for workloads whose work is
/// their own computation).
fn credit(units: u64) {
    WORK[cpu::core_id()].fetch_add(units, Ordering::Relaxed);
}

/// Runs `workload` from the calling process (the program's main) and returns once every
/// process it started has ended (so the scheduler's counters are final).
pub fn run(workload: Workload) -> Outcome {
    let baseline = sched::process_count();
    let outcome = match workload {
        Workload::Imbalanced => imbalanced(400, 40),
        Workload::Fib => fib(18),
        Workload::Ring => ring(1000, 20),
        Workload::Mixed => mixed(200, 30),
        Workload::Nqueens => {
            let config = crate::config::args();
            nqueens(config.queens_n, config.queens_split)
        }
        Workload::Uts => uts(1000, 4, 20),
        Workload::Bang => bang(300, 1000),
        Workload::Big => big(100),
        Workload::Bounce => bounce(8, 150),
        Workload::Grain => {
            let config = crate::config::args();
            grain(u64::from(config.grain_ns), u64::from(config.grain_ms))
        }
        Workload::Hold => hold(crate::config::args().processes),
        Workload::Offline => offline(crate::config::args().rounds),
    };
    let mut outcome = outcome;
    if let Err(why) = wait_for_processes_to_end(baseline, END_GRACE_US) {
        outcome.ok = false;
        outcome.detail = format!("{}; {why}", outcome.detail);
    }
    // A workload that failed early may have left answers from processes that finished after
    // it gave up: drop them, so they do not reach whatever the program runs next.
    while sched::receive_timeout(0).is_some() {}
    outcome
}

/// Guest time a workload's processes get to end once it has returned.
const END_GRACE_US: u64 = 30_000_000;

/// Waits until only `baseline` processes are left, or says how many had not ended within
/// `grace_us` microseconds.
pub fn wait_for_processes_to_end(baseline: usize, grace_us: u64) -> Result<(), String> {
    let deadline = beamcore::time::Deadline::after_us(grace_us);
    while sched::process_count() > baseline {
        if deadline.expired() {
            let left = sched::process_count().saturating_sub(baseline);
            return Err(format!("{left} of its processes had not ended {} ms after it returned", grace_us / 1000));
        }
        sched::yield_now();
    }
    Ok(())
}

/// Ends the processes a workload started before it gave up (they may wait for messages that
/// will never come); those already ended are skipped.
fn end_all(pids: &[Pid]) {
    for &pid in pids {
        let _ = sched::kill(pid);
    }
}

fn collect_words(count: usize) -> Result<Vec<u64>, String> {
    let mut words = Vec::with_capacity(count);
    for received in 0..count {
        match sched::receive_timeout(120_000_000) {
            Some(Message::Word(word)) => words.push(word),
            other => return Err(format!("message {received} of {count}: {other:?}")),
        }
    }
    Ok(words)
}

/// Checks that every process index in `0..count` reported exactly once.
fn exactly_once(words: &[u64], count: usize) -> Result<(), String> {
    let mut seen = alloc::vec![0u32; count];
    for &word in words {
        let index = (word & 0xffff_ffff) as usize;
        if index >= count {
            return Err(format!("unknown process index {index}"));
        }
        seen[index] += 1;
    }
    match seen.iter().position(|&n| n != 1) {
        Some(i) => Err(format!("process {i} reported {} times", seen[i])),
        None => Ok(()),
    }
}

/// Spawns, retrying for a while when memory is short (other processes may be about to end and
/// free theirs); gives up with the error after a bounded number of tries.
fn spawn_patiently<F: FnOnce() + Send + Clone + 'static>(
    options: SpawnOptions,
    function: F,
) -> Result<Pid, sched::SpawnError> {
    const TRIES: u32 = 64;
    let mut tries = 0;
    loop {
        match sched::spawn_with(options, function.clone()) {
            Ok(pid) => return Ok(pid),
            Err(sched::SpawnError::OutOfMemory(_)) if tries < TRIES => {
                tries += 1;
                sched::yield_now();
            }
            Err(error) => return Err(error),
        }
    }
}
