//! The workloads whose processes start on one core and must be spread by the balancer:
//! `imbalanced` (equal workers), `mixed` (every priority, some bound, the max-priority ones
//! watched for migrations) and the soak's `steal_storm` (tiny processes, constant stealing).

use alloc::format;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use beamcore::sched::{self, Message, Priority, SpawnOptions};
use beamcore::smp;

use super::{Outcome, bound_violations, collect_words, exactly_once, spawn_patiently, unit};

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

/// Migrations made by max-priority processes of the `mixed` workload (0 with `protect_max=on`).
pub fn max_priority_migrations() -> u64 {
    MAX_PRIORITY_MIGRATIONS.load(Ordering::Relaxed)
}

static MAX_PRIORITY_MIGRATIONS: AtomicU64 = AtomicU64::new(0);

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
