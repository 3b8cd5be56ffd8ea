//! The demo workloads (bootarg `workload=`), each checking its own result. `make run` runs the
//! configured one and prints the balancer's report; the in-QEMU tests run them under every
//! strategy.
//!
//! Work is counted in units: each unit is a fixed amount of computation, credited to the core
//! that ran it, so "work per core" measures where the computing happened (not where the
//! processes were spawned).

use alloc::boxed::Box;
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};

use beamcore::arch::cpu;
use beamcore::mm::layout::MAX_CORES;
use beamcore::sched::{self, Message, Pid, Priority, SpawnOptions};
use beamcore::smp;
use beamcore_workload_shapes::{
    grain_chunks, queens_below_crediting, queens_is_leaf, queens_next_placed, queens_two_placed, uts_child_id,
    uts_children, uts_count,
};

use crate::config::Workload;

mod offline;
mod probe;
pub use offline::offline;
pub use probe::share_probe;

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

/// Migrations made by max-priority processes of the `mixed` workload (0 with `protect_max=on`).
pub fn max_priority_migrations() -> u64 {
    MAX_PRIORITY_MIGRATIONS.load(Ordering::Relaxed)
}

static MAX_PRIORITY_MIGRATIONS: AtomicU64 = AtomicU64::new(0);

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

/// `workers` processes, all spawned on core 0, each running `units` units of work: only the
/// balancer spreads them.
pub fn imbalanced(workers: usize, units: usize) -> Outcome {
    let me = sched::self_pid().expect("run from a process");
    for i in 0..workers {
        let options = SpawnOptions::default().stack_bytes(4096).on_core(0);
        let spawned = sched::spawn_with(options, move || {
            for _ in 0..units {
                unit(None);
            }
            let _ = sched::send(me, Message::Word(i as u64));
        });
        if let Err(error) = spawned {
            return Outcome { ok: false, detail: format!("spawn {i}: {error}"), processes: i as u64 };
        }
    }
    let result = collect_words(workers).and_then(|words| exactly_once(&words, workers));
    let processes = workers as u64;
    match result {
        Ok(()) => {
            Outcome { ok: true, detail: format!("{workers} workers x {units} units, each reported once"), processes }
        }
        Err(why) => Outcome { ok: false, detail: why, processes },
    }
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

/// A token passed `laps` times around a ring of `members` processes spread over the cores.
pub fn ring(members: u64, laps: u64) -> Outcome {
    const STOP: u64 = u64::MAX;
    let me = sched::self_pid().expect("run from a process");
    let cores = smp::cores_online();
    let target = members * laps;
    let mut pids: Vec<Pid> = Vec::new();
    for i in 0..members as usize {
        let options = SpawnOptions::default().stack_bytes(4096).on_core(i % cores);
        let member = move || {
            let Message::Boxed(next) = sched::receive() else { return };
            let Ok(next) = next.downcast::<Pid>() else { return };
            loop {
                match sched::receive() {
                    Message::Word(STOP) => return,
                    Message::Word(token) if token == target => {
                        let _ = sched::send(me, Message::Word(token));
                    }
                    Message::Word(token) => {
                        unit(None);
                        let _ = sched::send(*next, Message::Word(token + 1));
                    }
                    _ => {}
                }
            }
        };
        match sched::spawn_with(options, member) {
            Ok(pid) => pids.push(pid),
            Err(error) => {
                // The members spawned so far wait for their neighbour: stop them.
                for &pid in &pids {
                    let _ = sched::send(pid, Message::Word(STOP));
                }
                return Outcome { ok: false, detail: format!("spawn {i}: {error}"), processes: i as u64 };
            }
        }
    }
    for (i, &pid) in pids.iter().enumerate() {
        let _ = sched::send(pid, Message::Boxed(Box::new(pids[(i + 1) % pids.len()])));
    }
    let _ = sched::send(pids[0], Message::Word(0));
    let arrived = sched::receive_timeout(120_000_000);
    for &pid in &pids {
        let _ = sched::send(pid, Message::Word(STOP));
    }
    while pids.iter().any(|&pid| sched::is_alive(pid)) {
        sched::yield_now();
    }
    match arrived {
        Some(Message::Word(token)) if token == target => Outcome {
            ok: true,
            detail: format!("token passed {laps} times around {members} processes"),
            processes: members,
        },
        other => {
            Outcome { ok: false, detail: format!("token arrived as {other:?}, expected {target}"), processes: members }
        }
    }
}

/// All four priorities; every fifth process bound to a core (it checks it never runs
/// elsewhere). Spawned on core 0.
pub fn mixed(workers: usize, units: usize) -> Outcome {
    static BOUND_UNITS: AtomicU32 = AtomicU32::new(0);
    let me = sched::self_pid().expect("run from a process");
    let cores = smp::cores_online();
    for i in 0..workers {
        let priority = Priority::ALL[i % 4];
        let bound = (i % 5 == 0).then_some(i / 5 % cores);
        let options = match bound {
            Some(core) => SpawnOptions::default().priority(priority).stack_bytes(4096).bound_to(core),
            None => SpawnOptions::default().priority(priority).stack_bytes(4096).on_core(0),
        };
        let spawned = sched::spawn_with(options, move || {
            for _ in 0..units {
                unit(bound);
                if bound.is_some() {
                    BOUND_UNITS.fetch_add(1, Ordering::Relaxed);
                }
            }
            if priority == Priority::Max {
                let me = sched::self_pid().and_then(sched::placement);
                let migrations = me.map_or(0, |p| u64::from(p.migrations));
                MAX_PRIORITY_MIGRATIONS.fetch_add(migrations, Ordering::Relaxed);
            }
            let _ = sched::send(me, Message::Word(i as u64));
        });
        if let Err(error) = spawned {
            return Outcome { ok: false, detail: format!("spawn {i}: {error}"), processes: i as u64 };
        }
    }
    let processes = workers as u64;
    let result = collect_words(workers).and_then(|words| exactly_once(&words, workers));
    match result {
        Ok(()) if bound_violations() == 0 => Outcome {
            ok: true,
            detail: format!(
                "{workers} workers of 4 priorities, {} bound units all on their cores",
                BOUND_UNITS.load(Ordering::Relaxed)
            ),
            processes,
        },
        Ok(()) => {
            Outcome { ok: false, detail: format!("{} bound units ran off their core", bound_violations()), processes }
        }
        Err(why) => Outcome { ok: false, detail: why, processes },
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

/// Erlang's "bang": `senders` processes (spread over the cores) each send `messages` numbered
/// messages to one receiver, which checks that each sender's arrive in order and none is lost.
pub fn bang(senders: u64, messages: u64) -> Outcome {
    let me = sched::self_pid().expect("run from a process");
    let cores = smp::cores_online();
    // The verdict's text is written into room reserved now: a spawn refused because the
    // senders' messages fill the heap (16 MiB of RAM) must still end with a verdict, and a
    // `format!` then would need memory there is none of.
    let detail = String::with_capacity(VERDICT_BYTES);
    let receiver = sched::spawn_with(SpawnOptions::default().on_core(0), move || {
        let mut next = alloc::vec![0u64; senders as usize];
        let mut disorder = 0u64;
        for _ in 0..senders * messages {
            if let Message::Word(word) = sched::receive() {
                let (sender, sequence) = ((word >> 32) as usize, word & 0xffff_ffff);
                if sender >= next.len() || next[sender] != sequence {
                    disorder += 1;
                } else {
                    next[sender] += 1;
                }
            }
        }
        credit(senders * messages / 16);
        let _ = sched::send(me, Message::Word(disorder));
    });
    let receiver = match receiver {
        Ok(pid) => pid,
        Err(error) => {
            return Outcome {
                ok: false,
                detail: verdict(detail, format_args!("spawn receiver: {error}")),
                processes: 0,
            };
        }
    };
    for sender in 0..senders {
        let options = SpawnOptions::default().stack_bytes(4096).on_core(sender as usize % cores);
        let spawned = sched::spawn_with(options, move || {
            for sequence in 0..messages {
                // The receiver's mailbox may be unable to grow while it is behind (16 MiB of
                // RAM): wait for it to drain instead of losing the message.
                while let Err(sched::SendError::OutOfMemory(_)) =
                    sched::send(receiver, Message::Word(sender << 32 | sequence))
                {
                    sched::yield_now();
                }
            }
            credit(messages / 16);
        });
        if let Err(error) = spawned {
            // The receiver waits for every sender's messages: it would wait forever.
            end_all(&[receiver]);
            let detail = verdict(detail, format_args!("spawn sender {sender}: {error}"));
            return Outcome { ok: false, detail, processes: sender + 1 };
        }
    }
    let processes = senders + 1;
    match sched::receive_timeout(120_000_000) {
        Some(Message::Word(0)) => Outcome {
            ok: true,
            detail: verdict(
                detail,
                format_args!("{} messages from {senders} senders, each sender's in order", senders * messages),
            ),
            processes,
        },
        other => Outcome {
            ok: false,
            detail: verdict(detail, format_args!("bang: out of order or lost: {other:?}")),
            processes,
        },
    }
}

/// Room reserved for a verdict written when memory may be short.
const VERDICT_BYTES: usize = 160;

/// Writes `text` into `buffer`, reserved beforehand, cutting it at the reserved room rather
/// than growing it (growing could fail when the heap is full).
fn verdict(mut buffer: String, text: core::fmt::Arguments<'_>) -> String {
    struct Bounded<'a>(&'a mut String);
    impl core::fmt::Write for Bounded<'_> {
        fn write_str(&mut self, s: &str) -> core::fmt::Result {
            let room = self.0.capacity() - self.0.len();
            let mut cut = s.len().min(room);
            while !s.is_char_boundary(cut) {
                cut -= 1;
            }
            self.0.push_str(&s[..cut]);
            Ok(())
        }
    }
    let _ = core::fmt::Write::write_fmt(&mut Bounded(&mut buffer), text);
    buffer
}

/// Processes chased around the cores until the migration limit stops them. Every core has a
/// bound max-priority "heater" that spins while its core is hot; each round all cores but one
/// are hot, and the cold one moves on (1, 2, .., then 1 again; core 0 is always hot). A
/// coordinator (bound to core 0, max priority) wakes `workers` free processes each round: those
/// that wake on a hot core starve behind its heater until the cold core steals them, so each
/// round moves most of them once. After a few milliseconds of a round the heat is switched off,
/// so a process that may no longer move (it reached `max_migrations`) still gets its turn where
/// it is. Every worker must answer once per round; the report gives the most migrations seen.
pub fn bounce(workers: usize, rounds: u64) -> Outcome {
    static HOT: [AtomicBool; MAX_CORES] = [const { AtomicBool::new(false) }; MAX_CORES];
    static STOP_HEATERS: AtomicBool = AtomicBool::new(false);
    const STOP: u64 = u64::MAX;
    let main = sched::self_pid().expect("run from a process");
    let cores = smp::cores_online();
    STOP_HEATERS.store(false, Ordering::Relaxed);
    let mut heaters = Vec::new();
    for (core, hot) in HOT.iter().enumerate().take(cores) {
        let options = SpawnOptions::default().priority(Priority::Max).stack_bytes(4096).bound_to(core);
        let heater = sched::spawn_with(options, move || {
            while !STOP_HEATERS.load(Ordering::Relaxed) {
                if hot.load(Ordering::Relaxed) {
                    for i in 0..2_000u64 {
                        core::hint::black_box(i);
                    }
                    sched::yield_now();
                } else {
                    let _ = sched::receive_timeout(20);
                }
            }
        });
        match heater {
            Ok(pid) => heaters.push(pid),
            Err(error) => {
                STOP_HEATERS.store(true, Ordering::Relaxed);
                return Outcome { ok: false, detail: format!("bounce: spawn heater: {error}"), processes: core as u64 };
            }
        }
    }
    let coordinator = move || {
        let me = sched::self_pid().expect("a process");
        let mut pids = Vec::new();
        for i in 0..workers {
            let options = SpawnOptions::default().stack_bytes(4096).on_core(i % cores);
            let worker = move || {
                while let Message::Word(round) = sched::receive() {
                    if round == STOP {
                        return;
                    }
                    unit(None);
                    let _ = sched::send(me, Message::Word(i as u64));
                }
            };
            match sched::spawn_with(options, worker) {
                Ok(pid) => pids.push(pid),
                Err(_) => {
                    for &pid in &pids {
                        let _ = sched::send(pid, Message::Word(STOP));
                    }
                    let _ = sched::send(main, Message::Word(u64::MAX));
                    return;
                }
            }
        }
        let mut wrong = 0u64;
        for round in 0..rounds {
            let cold = if cores > 1 { 1 + (round as usize) % (cores - 1) } else { 0 };
            for (core, hot) in HOT.iter().enumerate().take(cores) {
                hot.store(core != cold && cores > 1, Ordering::Relaxed);
            }
            // Give the heaters time to notice (they check every 20 us while cold).
            let _ = sched::receive_timeout(100);
            for &pid in &pids {
                let _ = sched::send(pid, Message::Word(round));
            }
            let heat_until = beamcore::time::now_count() + beamcore::time::us_to_counts(3_000);
            let mut answered = alloc::vec![0u32; workers];
            let mut count = 0;
            while count < workers {
                if beamcore::time::now_count() > heat_until {
                    for hot in HOT.iter() {
                        hot.store(false, Ordering::Relaxed);
                    }
                }
                match sched::receive_timeout(1_000) {
                    Some(Message::Word(i)) if (i as usize) < workers => {
                        answered[i as usize] += 1;
                        count += 1;
                    }
                    Some(_) => wrong += 1,
                    None if beamcore::time::now_count() > heat_until + beamcore::time::us_to_counts(5_000_000) => {
                        wrong += 1;
                        break;
                    }
                    None => {}
                }
            }
            wrong += answered.iter().filter(|&&n| n != 1).count() as u64;
        }
        for hot in HOT.iter() {
            hot.store(false, Ordering::Relaxed);
        }
        let most = pids.iter().filter_map(|&pid| sched::placement(pid)).map(|p| p.migrations).max().unwrap_or(0);
        for &pid in &pids {
            let _ = sched::send(pid, Message::Word(STOP));
        }
        let _ = sched::send(main, Message::Word(if wrong == 0 { u64::from(most) } else { u64::MAX - 1 }));
    };
    let options = SpawnOptions::default().priority(Priority::Max).stack_bytes(8192).bound_to(0);
    let spawned = sched::spawn_with(options, coordinator);
    let answer = match spawned {
        Ok(_) => sched::receive_timeout(120_000_000),
        Err(error) => {
            STOP_HEATERS.store(true, Ordering::Relaxed);
            return Outcome {
                ok: false,
                detail: format!("bounce: spawn coordinator: {error}"),
                processes: cores as u64,
            };
        }
    };
    STOP_HEATERS.store(true, Ordering::Relaxed);
    let processes = (cores + 1 + workers) as u64;
    let limit = sched::balance_config().0.max_migrations;
    match answer {
        Some(Message::Word(most)) if most < u64::MAX - 1 => Outcome {
            ok: true,
            detail: format!(
                "{workers} workers x {rounds} rounds, each answered once; most migrations of one worker {most} (limit {limit})"
            ),
            processes,
        },
        other => {
            Outcome { ok: false, detail: format!("bounce: a worker missed or repeated a round: {other:?}"), processes }
        }
    }
}

/// Erlang's "big": `n` processes (spread over the cores) each ping every other and answer every
/// ping with a pong; each must get exactly n - 1 pongs.
pub fn big(n: u64) -> Outcome {
    const PING: u64 = 1 << 63;
    let me = sched::self_pid().expect("run from a process");
    let cores = smp::cores_online();
    let mut pids: Vec<Pid> = Vec::new();
    for i in 0..n {
        let options = SpawnOptions::default().stack_bytes(8192).on_core(i as usize % cores);
        let member = move || {
            // Pings from faster peers may arrive before the list of peers: keep them.
            let mut early: Vec<u64> = Vec::new();
            let all = loop {
                match sched::receive() {
                    Message::Boxed(all) => match all.downcast::<Vec<Pid>>() {
                        Ok(all) => break all,
                        Err(_) => return,
                    },
                    Message::Word(word) => early.push(word),
                    _ => {}
                }
            };
            for (j, &peer) in all.iter().enumerate() {
                if j as u64 != i {
                    let _ = sched::send(peer, Message::Word(PING | i));
                }
            }
            let (mut pongs, mut pings) = (0, 0);
            for word in early {
                // Only pings can come before we have pinged anyone.
                pings += 1;
                let _ = sched::send(all[(word & !PING) as usize], Message::Word(i));
            }
            while pongs < n - 1 || pings < n - 1 {
                match sched::receive() {
                    Message::Word(word) if word & PING != 0 => {
                        pings += 1;
                        let _ = sched::send(all[(word & !PING) as usize], Message::Word(i));
                    }
                    Message::Word(_) => pongs += 1,
                    _ => {}
                }
            }
            credit(2 * (n - 1) / 8);
            let _ = sched::send(me, Message::Word(pongs));
        };
        match sched::spawn_with(options, member) {
            Ok(pid) => pids.push(pid),
            Err(error) => {
                // The members spawned so far wait for the list of peers: end them.
                end_all(&pids);
                return Outcome { ok: false, detail: format!("spawn {i}: {error}"), processes: i };
            }
        }
    }
    for &pid in &pids {
        let _ = sched::send(pid, Message::Boxed(Box::new(pids.clone())));
    }
    match collect_words(n as usize) {
        Ok(pongs) if pongs.iter().all(|&p| p == n - 1) => Outcome {
            ok: true,
            detail: format!("{n} processes, {} pings and as many pongs", n * (n - 1)),
            processes: n,
        },
        Ok(pongs) => Outcome { ok: false, detail: format!("pong counts {pongs:?}"), processes: n },
        Err(why) => Outcome { ok: false, detail: why, processes: n },
    }
}

/// Instructions one iteration of [`spin_work`]'s loop executes: ldr, madd, add, cmp, str, b.ne
/// in the release build (`llvm-objdump -d` of `workloads::spin_work`).
pub const SPIN_INSNS_PER_ITERATION: u64 = 6;

/// About `ns` nanoseconds of computation at one instruction per nanosecond (the guest time it
/// takes under `-icount shift=0`): `ns / 6` iterations of a multiply-add.
#[inline(never)]
fn spin_work(ns: u64) -> u64 {
    let mut x = ns;
    for i in 0..ns / SPIN_INSNS_PER_ITERATION {
        x = core::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(i));
    }
    x
}

/// Most grain tasks alive at once: the spawner waits for some to end beyond this, so a million
/// tiny tasks do not need a million stacks.
const GRAIN_WINDOW: u64 = 1024;

/// What the grain workload measured (for the report line of `make run`).
pub struct GrainRun {
    pub tasks: u64,
    pub grain_ns: u64,
    /// Guest time from the first spawn to the last task's end, in ns: under `-icount shift=0`
    /// the instructions every core executed meanwhile, summed.
    pub elapsed_ns: u64,
}

static LAST_GRAIN: spin::Mutex<Option<GrainRun>> = spin::Mutex::new(None);

/// The last grain run's measurements, if any.
pub fn last_grain() -> Option<GrainRun> {
    LAST_GRAIN.lock().take()
}

/// The granularity experiment: `total_ms` milliseconds of work (at one instruction per ns) cut
/// into tasks of `grain_ns` each, every task a process spawned on core 0 by one spawner bound
/// there (at most [`GRAIN_WINDOW`] alive at once), so only stealing spreads them, and a task
/// costs a spawn, a run and an exit besides its work. Each task marks its own index; every
/// index must be marked exactly once. Work is credited in nanoseconds (not units).
pub fn grain(grain_ns: u64, total_ms: u64) -> Outcome {
    use alloc::sync::Arc;
    use core::sync::atomic::AtomicU8;
    /// What the last task (or a spawner that gave up) sends main.
    const ALL_DONE: u64 = 0;
    const SPAWN_FAILED: u64 = 1;
    let grain_ns = grain_ns.max(1);
    let tasks = (total_ms * 1_000_000 / grain_ns).max(1);
    let marks: Arc<Vec<AtomicU8>> = Arc::new((0..tasks).map(|_| AtomicU8::new(0)).collect());
    let done = Arc::new(AtomicU64::new(0));
    let main = sched::self_pid().expect("run from a process");
    let started = beamcore::time::now_count();
    let spawner = {
        let (marks, done) = (Arc::clone(&marks), Arc::clone(&done));
        move || {
            for i in 0..tasks {
                while i - done.load(Ordering::Relaxed) >= GRAIN_WINDOW {
                    sched::yield_now();
                }
                let (marks, done) = (Arc::clone(&marks), Arc::clone(&done));
                let options = SpawnOptions::default().stack_bytes(4096).on_core(0);
                let spawned = spawn_patiently(options, move || {
                    // Credited chunk by chunk: a task preempted and moved credits each core
                    // what it computed there.
                    for chunk in grain_chunks(grain_ns) {
                        core::hint::black_box(spin_work(chunk));
                        WORK[cpu::core_id()].fetch_add(chunk, Ordering::Relaxed);
                    }
                    marks[i as usize].fetch_add(1, Ordering::Relaxed);
                    // ORDERING: AcqRel pairs with the other tasks' increments of `done` (a
                    // release sequence): the task that counts last sees every task's mark, and
                    // its send (the mailbox lock) hands them to main, which then reads the marks.
                    if done.fetch_add(1, Ordering::AcqRel) + 1 == tasks {
                        let _ = sched::send(main, Message::Word(ALL_DONE));
                    }
                });
                if spawned.is_err() {
                    let _ = sched::send(main, Message::Word(SPAWN_FAILED | i << 1));
                    return;
                }
            }
        }
    };
    let options = SpawnOptions::default().stack_bytes(4096).bound_to(0);
    if let Err(error) = sched::spawn_with(options, spawner) {
        return Outcome { ok: false, detail: format!("grain: spawn the spawner: {error}"), processes: 0 };
    }
    let answer = sched::receive_timeout(120_000_000);
    let elapsed_ns = beamcore::time::counts_to_ns(beamcore::time::now_count() - started);
    let processes = done.load(Ordering::Relaxed) + 1;
    match answer {
        Some(Message::Word(ALL_DONE)) => {}
        Some(Message::Word(word)) if word & SPAWN_FAILED != 0 => {
            return Outcome {
                ok: false,
                detail: format!("grain: spawning task {} of {tasks} failed", word >> 1),
                processes: (word >> 1) + 1,
            };
        }
        other => {
            return Outcome {
                ok: false,
                detail: format!("grain: {} of {tasks} tasks ended, then {other:?}", done.load(Ordering::Relaxed)),
                processes,
            };
        }
    }
    let twice = marks.iter().filter(|m| m.load(Ordering::Relaxed) > 1).count();
    let never = marks.iter().filter(|m| m.load(Ordering::Relaxed) == 0).count();
    *LAST_GRAIN.lock() = Some(GrainRun { tasks, grain_ns, elapsed_ns });
    Outcome {
        ok: twice == 0 && never == 0,
        detail: format!(
            "{tasks} tasks of {grain_ns} ns spawned on core 0, {never} never ran, {twice} ran twice, {} us of guest time",
            elapsed_ns / 1000
        ),
        processes: tasks + 1,
    }
}

/// What the hold workload measured (for the report line of `make run`).
#[derive(Clone, Copy, Debug)]
pub struct HoldRun {
    /// Processes alive at once at the peak (the workload's own; main not counted).
    pub peak: u64,
    /// RAM in use at the peak over RAM in use before, per process (`sched::memory_in_use`).
    pub bytes_per_process: u64,
    /// Guest time to spawn them all and see each blocked in `receive`, and then to message
    /// every one, collect its answer and see all of them ended, in µs.
    pub spawn_us: u64,
    pub end_us: u64,
    /// Why spawning stopped before the count asked for (or, with `processes=0`, at all).
    pub spawn_error: Option<sched::SpawnError>,
    /// Processes that answered their token correctly (each once), and whether all of them had
    /// ended in time afterwards.
    pub answered: u64,
    pub all_ended: bool,
}

static LAST_HOLD: spin::Mutex<Option<HoldRun>> = spin::Mutex::new(None);

/// The last hold run's measurements, if any.
pub fn last_hold() -> Option<HoldRun> {
    *LAST_HOLD.lock()
}

/// The token main sends process `i`, and the answer it expects back.
fn hold_token(i: u64) -> u64 {
    i.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 32
}

fn hold_answer(i: u64, token: u64) -> u64 {
    i << 32 | (token ^ 0xa5a5_a5a5)
}

/// `workload=hold`: `processes` processes alive at once (0: as many as memory allows), spread
/// over the cores, each blocked in `receive` (default options: the default stack, of which one
/// page is mapped); then each is sent a token and must answer it, exactly once, and end. When
/// spawning fails first (memory, or `max_processes`), the workload goes on with the processes
/// it has: it reports the count it reached and why it stopped, and fails unless `processes=0`
/// asked for as many as fit. Reports the peak, the memory per process and the times.
pub fn hold(processes: usize) -> Outcome {
    static READY: AtomicU64 = AtomicU64::new(0);
    let me = sched::self_pid().expect("run from a process");
    let cores = smp::cores_online();
    let baseline = sched::process_count();
    let memory_before = sched::memory_in_use();
    let started = beamcore::time::now_count();
    READY.store(0, Ordering::Relaxed);
    let wanted = if processes == 0 { usize::MAX } else { processes };
    let mut pids: Vec<Pid> = Vec::new();
    if processes > 0 && pids.try_reserve_exact(processes).is_err() {
        return Outcome { ok: false, detail: format!("hold: no memory to record {processes} pids"), processes: 0 };
    }
    let mut spawn_error = None;
    let mut bookkeeping_full = false;
    while pids.len() < wanted {
        if pids.len() == pids.capacity() && pids.try_reserve(pids.len().max(4096)).is_err() {
            bookkeeping_full = true;
            break;
        }
        let i = pids.len() as u64;
        let options = SpawnOptions::default().on_core(pids.len() % cores);
        let spawned = sched::spawn_with(options, move || {
            READY.fetch_add(1, Ordering::Relaxed);
            let Message::Word(token) = sched::receive() else { return };
            // Main's mailbox may be full for the moment (the kernel keeps its reserve): main
            // keeps draining it, so try again after letting others run.
            while let Err(sched::SendError::OutOfMemory(_)) = sched::send(me, Message::Word(hold_answer(i, token))) {
                sched::yield_now();
            }
        });
        match spawned {
            Ok(pid) => pids.push(pid),
            Err(error) => {
                spawn_error = Some(error);
                break;
            }
        }
    }
    let peak = pids.len();
    let alive = sched::process_count() - baseline;
    // Every process blocked in `receive`: the state whose memory is measured.
    let deadline = beamcore::time::now_count() + beamcore::time::us_to_counts(120_000_000);
    while (READY.load(Ordering::Relaxed) as usize) < peak && beamcore::time::now_count() < deadline {
        sched::yield_now();
    }
    let ready = READY.load(Ordering::Relaxed) as usize;
    let memory_at_peak = sched::memory_in_use();
    let spawned_at = beamcore::time::now_count();
    let bytes_per_process = (memory_at_peak.saturating_sub(memory_before) / peak.max(1)) as u64;

    // Message every one, collecting answers as they come (every 256 sends), so main's mailbox
    // holds a few hundred answers at a time rather than all of them.
    let mut answered: Vec<u8> = Vec::new();
    if answered.try_reserve_exact(peak).is_err() {
        end_all(&pids);
        return Outcome {
            ok: false,
            detail: format!("hold: no memory to check {peak} answers"),
            processes: peak as u64,
        };
    }
    answered.resize(peak, 0);
    let (mut count, mut problems, mut unsent) = (0usize, 0u64, 0u64);
    let mut take = |message: Message, count: &mut usize, problems: &mut u64| match message {
        Message::Word(word) => {
            let i = (word >> 32) as usize;
            if i < peak && word == hold_answer(i as u64, hold_token(i as u64)) && answered[i] == 0 {
                answered[i] = 1;
                *count += 1;
            } else {
                *problems += 1;
            }
        }
        _ => *problems += 1,
    };
    for (i, &pid) in pids.iter().enumerate() {
        if sched::send(pid, Message::Word(hold_token(i as u64))).is_err() {
            unsent += 1;
        }
        if i % 256 == 255 {
            while let Some(message) = sched::receive_timeout(0) {
                take(message, &mut count, &mut problems);
            }
        }
    }
    while count + ((problems + unsent) as usize) < peak {
        match sched::receive_timeout(120_000_000) {
            Some(message) => take(message, &mut count, &mut problems),
            None => break,
        }
    }
    let ended = wait_for_processes_to_end(baseline, END_GRACE_US);
    let end_us = beamcore::time::counts_to_us(beamcore::time::now_count() - spawned_at);
    let spawn_us = beamcore::time::counts_to_us(spawned_at - started);
    *LAST_HOLD.lock() = Some(HoldRun {
        peak: peak as u64,
        bytes_per_process,
        spawn_us,
        end_us,
        spawn_error,
        answered: count as u64,
        all_ended: ended.is_ok(),
    });
    let each = if peak > 0 { format!(", {bytes_per_process} bytes each") } else { String::new() };
    let mut detail = format!(
        "held {peak} processes alive at once{each}; spawned and blocked in {} ms, messaged, answered and ended in {} \
         ms",
        spawn_us / 1000,
        end_us / 1000
    );
    let mut ok = true;
    if let Some(error) = spawn_error {
        detail += &format!("; spawn {} failed: {error}", peak + 1);
        ok &= processes == 0 && matches!(error, sched::SpawnError::OutOfMemory(_) | sched::SpawnError::TableFull);
    }
    if bookkeeping_full {
        detail += "; stopped: no memory to record another pid";
        ok &= processes == 0;
    }
    if alive != peak || ready != peak {
        detail += &format!("; {alive} alive and {ready} blocked in receive at the peak, expected {peak}");
        ok = false;
    }
    if count != peak || problems != 0 || unsent != 0 {
        detail += &format!("; {count} of {peak} answered, {problems} wrong or repeated answers, {unsent} not sent");
        ok = false;
    }
    if let Err(why) = ended {
        detail += &format!("; {why}");
        ok = false;
    }
    Outcome { ok, detail, processes: peak as u64 }
}

/// The soak's steal storm: `processes` tiny processes spawned on core 0 in batches of `batch`
/// (so their stacks fit), each doing about 1,000 instructions of work and marking its own
/// index: with so little work per process, idle cores steal all the time. Every index must be
/// marked exactly once.
pub fn steal_storm(processes: usize, batch: usize) -> Outcome {
    use alloc::sync::Arc;
    use core::sync::atomic::AtomicU8;
    let marks: Arc<Vec<AtomicU8>> = Arc::new((0..processes).map(|_| AtomicU8::new(0)).collect());
    let done = Arc::new(AtomicU64::new(0));
    let mut started = 0;
    while started < processes {
        let end = (started + batch).min(processes);
        for i in started..end {
            let (marks, done) = (Arc::clone(&marks), Arc::clone(&done));
            let options = SpawnOptions::default().stack_bytes(4096).on_core(0);
            let spawned = spawn_patiently(options, move || {
                let mut x = i as u64;
                for k in 0..200u64 {
                    x = core::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(k));
                }
                marks[i].fetch_add(1, Ordering::Relaxed);
                done.fetch_add(1, Ordering::Relaxed);
            });
            if let Err(error) = spawned {
                return Outcome { ok: false, detail: format!("storm: spawn {i}: {error}"), processes: i as u64 };
            }
        }
        while done.load(Ordering::Relaxed) < end as u64 {
            sched::yield_now();
        }
        started = end;
    }
    let twice = marks.iter().filter(|m| m.load(Ordering::Relaxed) > 1).count();
    let never = marks.iter().filter(|m| m.load(Ordering::Relaxed) == 0).count();
    Outcome {
        ok: twice == 0 && never == 0,
        detail: format!("storm: {processes} tiny processes, {never} never ran, {twice} ran twice"),
        processes: processes as u64,
    }
}

/// What a soak run saw, over every workload and strategy it ran.
pub struct SoakOutcome {
    /// Workload runs (one workload under one strategy).
    pub runs: u64,
    /// Runs whose workload reported a wrong answer or a failure.
    pub failed_runs: u64,
    /// Processes spawned during the soak.
    pub processes: u64,
    /// Successful steals, and processes they moved (plus push rebalancing).
    pub steals: u64,
    pub migrations: u64,
    /// Processes spawned that never ended, and process ends beyond the spawns (a process run
    /// to its end twice), from the scheduler's own counters.
    pub lost: u64,
    pub duplicated: u64,
    /// The first failure, if any.
    pub first_failure: Option<String>,
}

impl core::fmt::Display for SoakOutcome {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(
            f,
            "{} runs, {} processes, {} steals moving {} processes, {} lost, {} duplicated, {} failed runs",
            self.runs, self.processes, self.steals, self.migrations, self.lost, self.duplicated, self.failed_runs
        )
    }
}

/// Runs every workload, and a steal storm of `storm_processes` tiny processes, under every
/// victim strategy, round after round, until `seconds` of guest time have passed (at least one
/// full round), checking after each run that every process spawned ended exactly once:
/// spawned = completed + still alive, where only the caller (main) may still be alive. Prints
/// one `soak:` line per round.
pub fn soak(seconds: u64, storm_processes: usize) -> SoakOutcome {
    use beamcore::sched::telemetry::total;
    let cores = smp::cores_online();
    let (_, boot_strategy) = sched::balance_config();
    let deadline = beamcore::time::now_count() + beamcore::time::us_to_counts(seconds.saturating_mul(1_000_000));
    let spawned_before = total(|s| &s.spawned);
    let steals_before = total(|s| &s.steals);
    let migrations_before = total(|s| &s.migrated_in);
    let mut outcome = SoakOutcome {
        runs: 0,
        failed_runs: 0,
        processes: 0,
        steals: 0,
        migrations: 0,
        lost: 0,
        duplicated: 0,
        first_failure: None,
    };
    let mut round = 0u64;
    loop {
        for workload in Workload::ALL.into_iter().map(Some).chain([None]) {
            for strategy in beamcore::sched::balance::Strategy::ALL {
                sched::set_strategy(strategy);
                let name = workload.map_or("storm", Workload::name);
                let result = match workload {
                    Some(workload) => run(workload),
                    None => {
                        let baseline = sched::process_count();
                        let mut storm = steal_storm(storm_processes, 1000);
                        if let Err(why) = wait_for_processes_to_end(baseline, END_GRACE_US) {
                            storm.ok = false;
                            storm.detail = format!("{}; {why}", storm.detail);
                        }
                        storm
                    }
                };
                outcome.runs += 1;
                // Every process ended: the scheduler's counters must balance exactly.
                let spawned = total(|s| &s.spawned);
                let completed = total(|s| &s.completed);
                let alive = sched::process_count() as u64;
                let (lost, duplicated) =
                    (spawned.saturating_sub(completed + alive), (completed + alive).saturating_sub(spawned));
                outcome.lost = outcome.lost.max(lost);
                outcome.duplicated = outcome.duplicated.max(duplicated);
                if !result.ok || lost != 0 || duplicated != 0 {
                    outcome.failed_runs += 1;
                    if outcome.first_failure.is_none() {
                        outcome.first_failure = Some(format!(
                            "round {round}, {name} with {strategy}: {} (lost {lost}, duplicated {duplicated})",
                            result.detail
                        ));
                    }
                }
            }
        }
        round += 1;
        let steals = total(|s| &s.steals) - steals_before;
        let processes = total(|s| &s.spawned) - spawned_before;
        beamcore::println!(
            "soak: round {round} on {cores} cores: {} runs, {processes} processes, {steals} steals, {} failed",
            outcome.runs,
            outcome.failed_runs
        );
        if beamcore::time::now_count() >= deadline || outcome.failed_runs > 0 {
            break;
        }
    }
    sched::set_strategy(boot_strategy);
    outcome.processes = total(|s| &s.spawned) - spawned_before;
    outcome.steals = total(|s| &s.steals) - steals_before;
    outcome.migrations = total(|s| &s.migrated_in) - migrations_before;
    outcome
}
