//! A map-reduce farm on beamcore's processes: a coordinator hands out chunks of a CPU-bound job
//! to worker processes by message, one chunk at a time to whichever worker has just finished,
//! and adds up the results as they come back.
//!
//! The job: for every number i in 0..n, the integer square root of a 64-bit hash of i
//! ([`item`]), summed. Every number's cost is the same and nothing is shared, so the farm's
//! answer must equal the sequential sum ([`sum_range`] over 0..n) exactly.

#![no_std]

extern crate alloc;

use alloc::vec;
use alloc::vec::Vec;
use beamcore::sched::{self, Pid, SendError, SpawnError, SpawnOptions};
use beamcore::smp;
use core::fmt;

/// Numbers between two `bump_reductions` calls: a worker accounts for its work as it goes, so
/// the scheduler can give the other processes on its core their turns.
const BATCH: u64 = 256;

/// A worker's silence after which the coordinator gives up (guest time).
const RESULT_TIMEOUT_US: u64 = 60_000_000;

/// splitmix64's output function: a 64-bit hash of `x`.
pub fn hash(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The work for one number: ⌊√hash(i)⌋ (below 2³², so 2²² of them sum to less than 2⁵⁴).
pub fn item(i: u64) -> u64 {
    hash(i).isqrt()
}

/// The sum of [`item`] over `start..end`, computed by the calling process.
pub fn sum_range(start: u64, end: u64) -> u64 {
    let mut sum = 0u64;
    let mut from = start;
    while from < end {
        let to = end.min(from + BATCH);
        sum += (from..to).map(item).sum::<u64>();
        sched::bump_reductions((to - from) as u32);
        from = to;
    }
    sum
}

/// What the coordinator sends a worker.
#[derive(Clone, Copy)]
enum Task {
    /// Compute chunk `index`: the numbers `start..end`.
    Chunk { index: usize, start: u64, end: u64 },
    /// No more work: end.
    Stop,
}

/// What a worker sends back for each chunk.
#[derive(Clone, Copy)]
struct Done {
    worker: usize,
    index: usize,
    sum: u64,
    /// The core the worker ran on when it finished the chunk.
    core: usize,
}

/// What a farm found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Outcome {
    /// The sum of every chunk's result.
    pub sum: u64,
    /// Chunks computed (each exactly once).
    pub chunks: usize,
    /// How many of the workers computed at least one chunk.
    pub busy_workers: usize,
    /// The cores chunks were finished on, one bit per core.
    pub cores_used: u64,
}

/// Why a farm did not finish.
#[derive(Debug)]
pub enum FarmError {
    Spawn(SpawnError),
    Send(SendError),
    /// A chunk's result came back twice.
    Duplicate {
        index: usize,
    },
    /// No result for [`RESULT_TIMEOUT_US`] while chunks were still out.
    NoResult {
        outstanding: usize,
    },
}

impl fmt::Display for FarmError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FarmError::Spawn(error) => write!(f, "spawning a worker failed: {error:?}"),
            FarmError::Send(error) => write!(f, "sending to a worker failed: {error:?}"),
            FarmError::Duplicate { index } => write!(f, "chunk {index}'s result came back twice"),
            FarmError::NoResult { outstanding } => {
                write!(f, "no result for {} s with {outstanding} chunks out", RESULT_TIMEOUT_US / 1_000_000)
            }
        }
    }
}

/// A worker: computes chunks until told to stop, sending each result to `coordinator`.
fn worker(coordinator: Pid, worker: usize) {
    loop {
        match sched::receive_value::<Task>() {
            Task::Chunk { index, start, end } => {
                let sum = sum_range(start, end);
                let core = sched::self_placement().map_or(0, |(core, _)| core);
                if sched::send_value(coordinator, Done { worker, index, sum, core }).is_err() {
                    return; // the coordinator is gone: nobody wants the rest
                }
            }
            Task::Stop => return,
        }
    }
}

/// The sum of [`item`] over 0..n, cut into `chunks` chunks and farmed out to `workers` worker
/// processes spread over the cores online (worker w starts on core w mod cores; work stealing
/// may move it). Call it from a process (a program's `main` is one).
pub fn farm(workers: usize, n: u64, chunks: usize) -> Result<Outcome, FarmError> {
    let me = sched::self_pid().expect("farm runs in a process");
    let cores = smp::cores_online();
    let chunk = |index: usize| {
        let start = n * index as u64 / chunks as u64;
        let end = n * (index as u64 + 1) / chunks as u64;
        Task::Chunk { index, start, end }
    };

    let mut pids = Vec::with_capacity(workers);
    for w in 0..workers {
        let options = SpawnOptions::default().on_core(w % cores);
        pids.push(sched::spawn_with(options, move || worker(me, w)).map_err(FarmError::Spawn)?);
    }

    // One chunk to each worker to start with, then the next to whichever reports back.
    let mut next = 0;
    let mut outstanding = 0;
    for &pid in pids.iter().take(chunks) {
        sched::send_value(pid, chunk(next)).map_err(FarmError::Send)?;
        next += 1;
        outstanding += 1;
    }
    let mut seen = vec![false; chunks];
    let mut chunks_by_worker = vec![0usize; workers];
    let mut outcome = Outcome { sum: 0, chunks: 0, busy_workers: 0, cores_used: 0 };
    while outstanding > 0 {
        let Some(done) = sched::receive_value_timeout::<Done>(RESULT_TIMEOUT_US) else {
            return Err(FarmError::NoResult { outstanding });
        };
        outstanding -= 1;
        if core::mem::replace(&mut seen[done.index], true) {
            return Err(FarmError::Duplicate { index: done.index });
        }
        outcome.sum += done.sum;
        outcome.chunks += 1;
        outcome.cores_used |= 1 << done.core;
        chunks_by_worker[done.worker] += 1;
        if next < chunks {
            sched::send_value(pids[done.worker], chunk(next)).map_err(FarmError::Send)?;
            next += 1;
            outstanding += 1;
        }
    }
    for &pid in &pids {
        sched::send_value(pid, Task::Stop).map_err(FarmError::Send)?;
    }
    outcome.busy_workers = chunks_by_worker.iter().filter(|&&count| count > 0).count();
    Ok(outcome)
}
