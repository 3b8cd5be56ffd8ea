//! `workload=offline`: fib and uts run over and over while a controller process takes every
//! core but 0 offline and brings it back, `rounds` times, and processes bound to those cores
//! keep working. Checks: every fib and uts answer is exact (a lost process would leave its
//! parent waiting, one run twice would count twice), every bound worker reports exactly once
//! and only ever ran on the core it was bound to at the time, and an offline core's interrupt
//! and turn counters do not move while it is off (read from other cores).

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use super::{Outcome, collect_words, exactly_once, fib, unit, uts};
use beamcore::sched::{self, Message, Priority, SpawnOptions};
use beamcore::smp;

/// Bound workers per core that goes offline.
const BOUND_PER_CORE: usize = 3;
/// Turns the controller gives up between two steps, so the other processes run meanwhile.
const SETTLE_YIELDS: u32 = 40;

static CONTROLLER_DONE: AtomicBool = AtomicBool::new(false);
static STOP_WORKERS: AtomicBool = AtomicBool::new(false);
/// Units a bound worker ran away from the core it was bound to (must stay 0).
static OFF_BINDING: AtomicU64 = AtomicU64::new(0);
static FAILURE: spin::Mutex<Option<String>> = spin::Mutex::new(None);

fn fail(why: String) {
    FAILURE.lock().get_or_insert(why);
}

/// One round: every core but 0 offline, a pause with the counters checked, every core back.
fn round(cores: usize, round: u32) -> Result<(), String> {
    let mut frozen = Vec::new();
    for core in 1..cores {
        sched::take_offline(core).map_err(|e| format!("round {round}: {e}"))?;
        if smp::core(core).is_online() || sched::core_is_active(core) {
            return Err(format!("round {round}: core {core} still online after take_offline"));
        }
        frozen.push((core, smp::core(core).irqs(), sched::core_stats(core).executed.load(Ordering::Relaxed)));
    }
    for _ in 0..SETTLE_YIELDS {
        sched::yield_now();
    }
    for &(core, irqs, turns) in &frozen {
        let (now_irqs, now_turns) = (smp::core(core).irqs(), sched::core_stats(core).executed.load(Ordering::Relaxed));
        if (now_irqs, now_turns) != (irqs, turns) {
            return Err(format!(
                "round {round}: core {core} moved while offline: interrupts {irqs} -> {now_irqs}, turns {turns} -> \
                 {now_turns}"
            ));
        }
    }
    for core in 1..cores {
        sched::bring_online(core).map_err(|e| format!("round {round}: {e}"))?;
    }
    for _ in 0..SETTLE_YIELDS {
        sched::yield_now();
    }
    Ok(())
}

/// The workload (see the module's comment).
pub fn offline(rounds: u32) -> Outcome {
    let cores = smp::cores_online();
    let me = sched::self_pid().expect("run from a process");
    CONTROLLER_DONE.store(false, Ordering::Relaxed);
    STOP_WORKERS.store(false, Ordering::Relaxed);
    OFF_BINDING.store(0, Ordering::Relaxed);
    *FAILURE.lock() = None;
    let (moved_before, rebound_before) = sched::offline_moves();
    let mut workers = 0;
    for core in 1..cores {
        for _ in 0..BOUND_PER_CORE {
            let index = workers as u64;
            let options = SpawnOptions::default().bound_to(core).stack_bytes(8192);
            let spawned = sched::spawn_with(options, move || {
                while !STOP_WORKERS.load(Ordering::Relaxed) {
                    unit(None);
                    match sched::self_placement() {
                        Some((here, Some(home))) if here == home => {}
                        _ => {
                            OFF_BINDING.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                    sched::yield_now();
                }
                let _ = sched::send(me, Message::Word(index));
            });
            if let Err(error) = spawned {
                STOP_WORKERS.store(true, Ordering::Relaxed);
                return Outcome { ok: false, detail: format!("spawn bound worker: {error}"), processes: 0 };
            }
            workers += 1;
        }
    }
    let controller = SpawnOptions::default().priority(Priority::High).on_core(0);
    let spawned = sched::spawn_with(controller, move || {
        for r in 0..rounds {
            if cores < 2 {
                break;
            }
            if let Err(why) = round(cores, r) {
                fail(why);
                // Bring back whatever is still off, so the run can end.
                for core in 1..cores {
                    let _ = sched::bring_online(core);
                }
                break;
            }
        }
        // ORDERING: Release: main sees the failure, if any, with the flag.
        CONTROLLER_DONE.store(true, Ordering::Release);
    });
    if let Err(error) = spawned {
        STOP_WORKERS.store(true, Ordering::Relaxed);
        return Outcome { ok: false, detail: format!("spawn controller: {error}"), processes: workers as u64 };
    }
    let mut processes = workers as u64 + 1;
    let mut passes = 0;
    let mut detail = String::new();
    let mut ok = true;
    // ORDERING: Acquire, paired with the controller's Release store.
    while passes == 0 || !CONTROLLER_DONE.load(Ordering::Acquire) {
        for outcome in [fib(14), uts(100, 4, 20)] {
            processes += outcome.processes;
            if !outcome.ok {
                ok = false;
                detail = outcome.detail;
            }
        }
        passes += 1;
        if !ok {
            break;
        }
    }
    STOP_WORKERS.store(true, Ordering::Relaxed);
    match collect_words(workers).and_then(|words| exactly_once(&words, workers)) {
        Ok(()) => {}
        Err(why) => {
            ok = false;
            detail = format!("bound workers: {why}");
        }
    }
    // ORDERING: Acquire, paired with the controller's Release store of CONTROLLER_DONE: its
    // last take_offline/bring_online is seen before this worker checks its count.
    while !CONTROLLER_DONE.load(Ordering::Acquire) {
        sched::yield_now();
    }
    if let Some(why) = FAILURE.lock().take() {
        ok = false;
        detail = why;
    }
    let off_binding = OFF_BINDING.load(Ordering::Relaxed);
    if off_binding != 0 {
        ok = false;
        detail = format!("{off_binding} units of bound workers ran off their core");
    }
    let (moved, rebound) = sched::offline_moves();
    let (moved, rebound) = (moved - moved_before, rebound - rebound_before);
    if ok {
        detail = format!(
            "{rounds} rounds of cores 1..={} offline and back over {passes} passes of fib and uts; {moved} \
             processes moved off leaving cores, {rebound} of them rebound; {workers} bound workers each reported once",
            cores - 1
        );
    }
    Outcome { ok, detail, processes }
}
