//! `bounce`: processes chased around the cores by hot "heaters" until the migration limit
//! stops them, each answering once per round: the migration limit's workload.

use alloc::format;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicBool, Ordering};

use beamcore::mm::layout::MAX_CORES;
use beamcore::sched::{self, Message, Priority, SpawnOptions};
use beamcore::smp;

use super::{Outcome, unit};

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
