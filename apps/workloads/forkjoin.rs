//! The fork-join workloads: `fib`, `nqueens` and `uts`, trees of processes in which each node
//! spawns its children on its own core and sums what they send up, so only stealing spreads
//! the tree. They share the fork and join of a node ([`ForkCounters`], [`join_children`]),
//! which keep a failed spawn from leaving anyone blocked and report it as the verdict.

use alloc::format;
use alloc::string::String;
use core::sync::atomic::{AtomicU64, Ordering};

use beamcore::sched::{self, Message, Pid, SpawnOptions};
use beamcore_workload_shapes::{
    queens_below_crediting, queens_is_leaf, queens_next_placed, queens_two_placed, uts_child_id, uts_children,
    uts_count,
};

use super::{Outcome, collect_words, credit, spawn_patiently, unit};

/// What a fork-join node (fib, nqueens) sends up when a spawn below it failed.
const SUBTREE_FAILED: u64 = u64::MAX;

/// The counters of one fork-join workload: processes spawned below main, and the first spawn
/// that failed (its error is what the verdict reports).
struct ForkCounters {
    spawned: AtomicU64,
    first_error: spin::Once<sched::SpawnError>,
}

impl ForkCounters {
    const fn new() -> ForkCounters {
        ForkCounters { spawned: AtomicU64::new(0), first_error: spin::Once::new() }
    }

    /// Spawns one child of a fork-join node (patiently): true if it runs, else its error is kept.
    fn fork<F: FnOnce() + Send + Clone + 'static>(&self, options: SpawnOptions, child: F) -> bool {
        match spawn_patiently(options, child) {
            Ok(_) => {
                self.spawned.fetch_add(1, Ordering::Relaxed);
                true
            }
            Err(error) => {
                self.first_error.call_once(|| error);
                false
            }
        }
    }
}

/// The join of a fork-join node: waits for every one of its `children` that exists, so none is
/// left blocked, and gives the sum they sent up, or [`SUBTREE_FAILED`] if a spawn failed here
/// (`failed`) or below any of them.
fn join_children(children: u64, mut failed: bool) -> u64 {
    let mut sum = 0;
    for _ in 0..children {
        match sched::receive() {
            Message::Word(SUBTREE_FAILED) => failed = true,
            Message::Word(value) => sum += value,
            _ => {}
        }
    }
    if failed { SUBTREE_FAILED } else { sum }
}

/// Recursive fork-join Fibonacci: each process spawns two children (on its own core) and
/// waits for their results.
pub fn fib(n: u64) -> Outcome {
    static COUNTERS: ForkCounters = ForkCounters::new();
    fn node(n: u64, parent: Pid) {
        let result = if n < 2 {
            unit(None);
            n
        } else {
            let me = sched::self_pid().expect("a process");
            let mut children = 0;
            let mut failed = false;
            for child in [n - 1, n - 2] {
                if COUNTERS.fork(SpawnOptions::default().stack_bytes(4096), move || node(child, me)) {
                    children += 1;
                } else {
                    failed = true;
                }
            }
            join_children(children, failed)
        };
        let _ = sched::send(parent, Message::Word(result));
    }
    let me = sched::self_pid().expect("run from a process");
    COUNTERS.spawned.store(1, Ordering::Relaxed);
    if let Err(error) = sched::spawn_with(SpawnOptions::default().stack_bytes(4096), move || node(n, me)) {
        return Outcome { ok: false, detail: format!("spawn root: {error}"), processes: 0 };
    }
    let expected = (0..n).fold((0u64, 1u64), |(a, b), _| (b, a + b)).0;
    let processes = COUNTERS.spawned.load(Ordering::Relaxed);
    match sched::receive_timeout(120_000_000) {
        Some(Message::Word(value)) if value == expected => {
            let processes = COUNTERS.spawned.load(Ordering::Relaxed);
            Outcome { ok: true, detail: format!("fib({n}) = {value} over {processes} processes"), processes }
        }
        Some(Message::Word(SUBTREE_FAILED)) => {
            let processes = COUNTERS.spawned.load(Ordering::Relaxed);
            let why = COUNTERS.first_error.get().map_or_else(|| "unknown".into(), |e| format!("{e}"));
            Outcome {
                ok: false,
                detail: format!("fib({n}): a spawn failed after {processes} processes: {why}"),
                processes,
            }
        }
        other => Outcome { ok: false, detail: format!("fib({n}): got {other:?}, expected {expected}"), processes },
    }
}

/// N-queens on an `n` x `n` board: one process per legal placement of the first two queens,
/// all spawned on core 0; the solutions must add up to the known count. Below them, while fewer
/// than `split` queens are placed, a process spawns one child (on its own core) per placement of
/// the next queen and sends up the sum of their counts; a process with `split` queens placed
/// searches the rest itself. `workload=nqueens` runs `nqueens(13, 2)` unless `queens_n=` and
/// `queens_split=` say otherwise (at 13 and 2 main's 132 tasks search); a deeper split is how
/// the simulator sizes the workload for many cores
/// (docs/simulator.md, "Sizes"): with only the first two queens split, the work is at most
/// n x n tasks, and W / S cannot pass their number.
pub fn nqueens(n: u32, split: u32) -> Outcome {
    const KNOWN: [u64; 16] = [1, 1, 0, 0, 2, 10, 4, 40, 92, 352, 724, 2680, 14200, 73712, 365_596, 2_279_184];
    static COUNTERS: ForkCounters = ForkCounters::new();
    fn task(n: u32, split: u32, placed: u32, (columns, left, right): (u32, u32, u32), parent: Pid) {
        let result = if queens_is_leaf(n, split, placed, columns) {
            // Credited as it goes: a task preempted and moved credits each core what it did.
            queens_below_crediting(n, columns, left, right, credit).0
        } else {
            let me = sched::self_pid().expect("a process");
            let (mut children, mut failed) = (0, false);
            queens_next_placed(n, columns, left, right, |c, l, r| {
                let child = move || task(n, split, placed + 1, (c, l, r), me);
                if COUNTERS.fork(SpawnOptions::default().stack_bytes(8192), child) {
                    children += 1;
                } else {
                    failed = true;
                }
                !failed
            });
            join_children(children, failed)
        };
        let _ = sched::send(parent, Message::Word(result));
    }
    let me = sched::self_pid().expect("run from a process");
    COUNTERS.spawned.store(0, Ordering::Relaxed);
    let mut tasks = 0u64;
    let mut failed = None;
    queens_two_placed(n, |columns, left, right| {
        let options = SpawnOptions::default().stack_bytes(8192).on_core(0);
        match sched::spawn_with(options, move || task(n, split, 2, (columns, left, right), me)) {
            Ok(_) => tasks += 1,
            Err(error) => failed = Some(error),
        }
        failed.is_none()
    });
    let processes = || tasks + COUNTERS.spawned.load(Ordering::Relaxed);
    if let Some(error) = failed {
        return Outcome { ok: false, detail: format!("spawn: {error}"), processes: processes() };
    }
    let counts = match collect_words(tasks as usize) {
        Ok(counts) => counts,
        Err(why) => return Outcome { ok: false, detail: why, processes: processes() },
    };
    if counts.contains(&SUBTREE_FAILED) {
        let error = COUNTERS.first_error.get().map_or(String::from("?"), |e| format!("{e}"));
        return Outcome { ok: false, detail: format!("spawn below a task: {error}"), processes: processes() };
    }
    let total = counts.iter().sum::<u64>();
    let expected = KNOWN.get(n as usize).copied().unwrap_or(u64::MAX);
    Outcome {
        ok: total == expected,
        detail: format!("{n}-queens: {total} solutions (expected {expected}) from {} processes", processes()),
        processes: processes(),
    }
}

/// Unbalanced tree search, binomial: a root with `root_children`, every other node with
/// `children` children at `percent`% probability. One process per node (each spawns its
/// children on its own core and sums their counts); the total must equal a sequential count.
pub fn uts(root_children: u64, children: u64, percent: u64) -> Outcome {
    static NODES: AtomicU64 = AtomicU64::new(0);
    static IN_PLACE: AtomicU64 = AtomicU64::new(0);
    fn node(id: u64, kids: u64, children: u64, percent: u64, depth: u32, parent: Pid) {
        unit(None);
        let me = sched::self_pid().expect("a process");
        let mut spawned = 0;
        let mut local = 0;
        for i in 0..kids {
            let child = uts_child_id(id, i);
            let grandchildren = if depth >= 64 { 0 } else { uts_children(child, children, percent) };
            let options = SpawnOptions::default().stack_bytes(4096);
            match sched::spawn_with(options, move || node(child, grandchildren, children, percent, depth + 1, me)) {
                Ok(_) => {
                    NODES.fetch_add(1, Ordering::Relaxed);
                    spawned += 1;
                }
                // No memory for another process: count that subtree here instead (the answer
                // stays exact; the report says how often this happened).
                Err(_) => {
                    IN_PLACE.fetch_add(1, Ordering::Relaxed);
                    local += uts_count(child, children, percent, depth + 1)
                }
            }
        }
        let mut total = 1 + local;
        for _ in 0..spawned {
            if let Message::Word(count) = sched::receive() {
                total += count;
            }
        }
        let _ = sched::send(parent, Message::Word(total));
    }
    let me = sched::self_pid().expect("run from a process");
    let expected = 1 + (0..root_children).map(|i| uts_count(uts_child_id(0, i), children, percent, 1)).sum::<u64>();
    NODES.store(1, Ordering::Relaxed);
    IN_PLACE.store(0, Ordering::Relaxed);
    let options = SpawnOptions::default().stack_bytes(8192).on_core(0);
    if let Err(error) = sched::spawn_with(options, move || node(0, root_children, children, percent, 0, me)) {
        return Outcome { ok: false, detail: format!("spawn root: {error}"), processes: 0 };
    }
    let processes = NODES.load(Ordering::Relaxed);
    match sched::receive_timeout(120_000_000) {
        Some(Message::Word(total)) => Outcome {
            ok: total == expected,
            detail: match IN_PLACE.load(Ordering::Relaxed) {
                0 => format!("binomial tree of {total} nodes (sequential count {expected})"),
                n => format!(
                    "binomial tree of {total} nodes (sequential count {expected}; {n} subtrees counted in place: no memory to spawn)"
                ),
            },
            processes: NODES.load(Ordering::Relaxed),
        },
        other => Outcome { ok: false, detail: format!("uts: got {other:?}, expected {expected}"), processes },
    }
}
