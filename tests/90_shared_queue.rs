//! `queues=shared` (one lock-protected run queue for the machine) keeps the scheduler's
//! promises, and `placement=round_robin` deals new processes over the cores.
//!
//! With `queues=shared`: `fib` and `imbalanced` complete every process exactly once (their own
//! checks, and spawned = completed + 1 for main); a max-priority process spawned behind 60
//! queued normal ones starts before all but at most one per core of them (a core may have
//! picked its level just before the max process was queued; the other cores are held by
//! high-priority blockers meanwhile, so the normal ones stay queued whatever turns QEMU gives
//! the vCPUs); bound processes run only on
//! their core, turn after turn; every core that ran a process took the lock, and nobody stole
//! (no steal attempts at all). With `placement=round_robin` (either mode): the cores' `spawned`
//! counts grow by exactly N / cores over N spawns, and with per-core queues each core gives
//! between half and twice its share of first turns (a thief may take some before they run).
//! With `placement=local` the dealing check fails (every spawn counts on core 0).
//!
//! Under `-icount`, so every run takes the same course.
//! qemu-test: configs=a72-smp1,a72-smp4,a72-smp8,gicv3-smp8
//! qemu-test: qemu-args=-icount shift=0,sleep=off
//! qemu-test: variants=queues=shared;queues=shared placement=round_robin;placement=round_robin
//! qemu-test: expect=^test: shared queue: ok
//! qemu-test: forbid=PANIC
//! qemu-test: timeout=120

#![no_std]
#![no_main]

extern crate alloc;

use alloc::vec::Vec;
use core::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use beamcore::arch::cpu;
use beamcore::mm::layout::MAX_CORES;
use beamcore::sched::{self, Message, Priority, QueueMode, SpawnOptions, SpawnPlacement, telemetry::total};
use beamcore::{ExitCode, println, smp};
use beamcore_apps::config::Workload;
use beamcore_apps::{ensure, workloads};

/// Start order of the priority check's processes.
static STARTED: AtomicUsize = AtomicUsize::new(0);
static MAX_STARTED_AT: AtomicUsize = AtomicUsize::new(usize::MAX);
/// `STARTED` as the max process was spawned.
static SPAWNED_AFTER: AtomicUsize = AtomicUsize::new(usize::MAX);
/// Turns bound processes took on a core not theirs.
static OFF_CORE_TURNS: AtomicUsize = AtomicUsize::new(0);
/// First turns per core of the placement check's processes.
static FIRST_TURNS: [AtomicUsize; MAX_CORES] = [const { AtomicUsize::new(0) }; MAX_CORES];
static GO: AtomicBool = AtomicBool::new(false);
/// The priority check's blockers: how many hold their core, the word that lets them go, and
/// how many have ended.
static BLOCKING: AtomicUsize = AtomicUsize::new(0);
static RELEASE: AtomicBool = AtomicBool::new(false);
static BLOCKERS_DONE: AtomicUsize = AtomicUsize::new(0);

fn main() -> ExitCode {
    let cores = smp::cores_online();
    let shared = sched::queue_mode() == QueueMode::Shared;
    let round_robin = sched::spawn_placement() == SpawnPlacement::RoundRobin;
    let me = sched::self_pid().expect("main runs as a process");
    if shared {
        for workload in [Workload::Fib, Workload::Imbalanced] {
            let outcome = workloads::run(workload);
            ensure!(outcome.ok, "{}: {}", workload.name(), outcome.detail);
        }
        // Priority: 60 normal processes queued, then one max process. The queueing is done by a
        // high-priority process bound to main's core, and every other core is held first by a
        // high-priority process bound to it, spinning until released: no normal process can
        // start before the max one is queued, however QEMU shares its turns among the vCPUs.
        // (Queued by main, they started anyway: under -icount the virtual clock runs with every
        // vCPU's instructions, so main's slice could end among its spawns, and main went behind
        // the processes it queued; on one image 59 of 60 had started before the max process was
        // queued, and nothing was checked.) A high process's slice ends every millisecond; its
        // core then takes the highest priority queued: the max process once there is one.
        let here = cpu::core_id();
        let high = SpawnOptions::default().priority(Priority::High);
        for core in (0..cores).filter(|&c| c != here) {
            sched::spawn_with(high.bound_to(core), || {
                BLOCKING.fetch_add(1, Ordering::Relaxed);
                while !RELEASE.load(Ordering::Relaxed) {
                    core::hint::spin_loop();
                }
                BLOCKERS_DONE.fetch_add(1, Ordering::Relaxed);
            })
            .expect("spawn a blocker");
        }
        while BLOCKING.load(Ordering::Relaxed) < cores - 1 {
            sched::yield_now();
        }
        let normals = 60;
        sched::spawn_with(high.bound_to(here), move || {
            for _ in 0..normals {
                sched::spawn(|| {
                    STARTED.fetch_add(1, Ordering::Relaxed);
                    // About 100 us of work: the cores stay busy while the rest wait.
                    let mut x = 0u64;
                    for i in 0..30_000u64 {
                        x = core::hint::black_box(x.wrapping_add(i));
                    }
                })
                .expect("spawn normal");
            }
            SPAWNED_AFTER.store(STARTED.load(Ordering::Relaxed), Ordering::Relaxed);
            let max = SpawnOptions::default().priority(Priority::Max);
            sched::spawn_with(max, move || {
                MAX_STARTED_AT.store(STARTED.fetch_add(1, Ordering::Relaxed), Ordering::Relaxed);
                let _ = sched::send(me, Message::Word(1));
            })
            .expect("spawn max");
        })
        .expect("spawn the queueing process");
        ensure!(matches!(sched::receive_timeout(5_000_000), Some(Message::Word(1))), "the max process did not run");
        let before = SPAWNED_AFTER.load(Ordering::Relaxed);
        let at = MAX_STARTED_AT.load(Ordering::Relaxed);
        ensure!(
            before + cores < normals,
            "only {} normal processes were still queued: nothing checked",
            normals - before
        );
        ensure!(
            at - before <= cores,
            "the max process started after {} normal ones queued before it (at most {cores} may race it)",
            at - before
        );
        println!("test: max started after {} of {} queued normal processes", at - before, normals - before);
        RELEASE.store(true, Ordering::Release);
        while BLOCKERS_DONE.load(Ordering::Relaxed) < cores - 1 {
            sched::yield_now();
        }
        // Bound processes: 3 per core, 20 turns each, every turn on their core.
        let bound: Vec<_> = (0..cores * 3)
            .map(|i| {
                let core = i % cores;
                sched::spawn_with(SpawnOptions::default().bound_to(core), move || {
                    for _ in 0..20 {
                        if cpu::core_id() != core {
                            OFF_CORE_TURNS.fetch_add(1, Ordering::Relaxed);
                        }
                        sched::yield_now();
                    }
                    let _ = sched::send(me, Message::Word(2));
                })
                .expect("spawn bound")
            })
            .collect();
        for _ in &bound {
            ensure!(matches!(sched::receive_timeout(5_000_000), Some(Message::Word(2))), "a bound process did not end");
        }
        let off = OFF_CORE_TURNS.load(Ordering::Relaxed);
        ensure!(off == 0, "bound processes took {off} turns off their core");
        // A bound process sends its message and then ends: the last may still be ending when its
        // message arrives. Give the ends up to 100 ms (a lost process never ends).
        let ended = workloads::wait_for_processes_to_end(1, 100_000);
        ensure!(ended.is_ok(), "{}", ended.unwrap_err());
        let spawned = total(|s| &s.spawned);
        let completed = total(|s| &s.completed);
        ensure!(spawned == completed + 1, "spawned {spawned}, completed {completed} (+1 for main)");
        let locks = total(|s| &s.queue_lock_acquisitions);
        let contended = total(|s| &s.queue_lock_contended);
        let attempts = total(|s| &s.steal_attempts);
        let steals = total(|s| &s.steals);
        ensure!(locks > 0, "no core took the shared queue's lock");
        ensure!(attempts == 0 && steals == 0, "{attempts} steal attempts, {steals} steals with queues=shared");
        for core in 0..cores {
            let stats = sched::core_stats(core);
            let ran = stats.executed.load(Ordering::Relaxed);
            let took = stats.queue_lock_acquisitions.load(Ordering::Relaxed);
            ensure!(ran == 0 || took > 0, "core {core} ran {ran} turns but never took the lock");
        }
        println!("test: {locks} lock acquisitions ({contended} contended), no steals, {spawned} processes once each");
    }
    if round_robin {
        let per_core = 16;
        let n = per_core * cores;
        let spawned_before: Vec<u64> =
            (0..cores).map(|c| sched::core_stats(c).spawned.load(Ordering::Relaxed)).collect();
        GO.store(false, Ordering::Relaxed);
        for _ in 0..n {
            sched::spawn(move || {
                FIRST_TURNS[cpu::core_id()].fetch_add(1, Ordering::Relaxed);
                while !GO.load(Ordering::Relaxed) {
                    sched::yield_now();
                }
                let _ = sched::send(me, Message::Word(3));
            })
            .expect("spawn dealt");
        }
        for (core, before) in spawned_before.iter().enumerate() {
            let dealt = sched::core_stats(core).spawned.load(Ordering::Relaxed) - before;
            ensure!(dealt == per_core as u64, "core {core} was dealt {dealt} of {n} spawns, expected {per_core}");
        }
        while (0..cores).map(|c| FIRST_TURNS[c].load(Ordering::Relaxed)).sum::<usize>() < n {
            sched::yield_now();
        }
        GO.store(true, Ordering::Relaxed);
        for _ in 0..n {
            ensure!(matches!(sched::receive_timeout(5_000_000), Some(Message::Word(3))), "a dealt process did not end");
        }
        let firsts: Vec<usize> = (0..cores).map(|c| FIRST_TURNS[c].load(Ordering::Relaxed)).collect();
        // With the shared queue any core may give a process its first turn: the dealing only
        // names its home core (the `spawned` counts above).
        for (core, &first) in firsts.iter().enumerate().filter(|_| !shared) {
            ensure!(
                first * 2 >= per_core && first <= per_core * 2,
                "core {core} gave {first} first turns, outside {}..={} (per core: {firsts:?})",
                per_core / 2,
                per_core * 2
            );
        }
        println!("test: {n} spawns dealt {per_core} per core; first turns per core {firsts:?}");
    }
    println!(
        "test: shared queue: ok ({cores} cores, queues={}, placement={})",
        sched::queue_mode(),
        sched::spawn_placement()
    );
    ExitCode::Success
}

beamcore::entry!(main, settings = beamcore_apps::config::ARGS);
