//! The granularity experiment (`grain`): a fixed amount of work cut into tasks of a given size,
//! each a process spawned on core 0, and what it measured ([`GrainRun`]) for the report line;
//! [`spin_work`] is its calibrated computation (instructions per iteration counted).

use alloc::format;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicU64, Ordering};

use beamcore::arch::cpu;
use beamcore::sched::{self, Message, SpawnOptions};
use beamcore_workload_shapes::grain_chunks;

use super::{Outcome, WORK, spawn_patiently};

/// Instructions one iteration of [`spin_work`]'s loop executes: ldr, madd, add, cmp, str, b.ne
/// in the release build (`llvm-objdump -d` of `workloads::grain::spin_work`).
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
