//! Core sets hold under stealing and push rebalancing: processes limited to several different
//! sets of cores (non-contiguous ones among them, and one-core sets) run only on cores of their
//! set, every one of them exactly once to its end, while idle thieves and core 0's push
//! rebalancing move them about. Each process notes, on every turn, the core it runs on; the
//! test checks every such core against the set, that each process ended exactly once (and the
//! scheduler's spawned/completed counts), that some processes of multi-core sets did move
//! within their set, that thieves stole, and that the balancer refused "not allowed here" at
//! least once (`fail_not_allowed` > 0: the refusal path ran). It also checks that a set with no
//! online core, and a start core outside the set, are refused with their typed errors.
//!
//! The processes start piled up on the lowest core of their set, so thieves take from there;
//! a thief outside a process's set takes it, sees it may not run it and hands it back.
//! Under `-icount` the run is the same every time.
//! qemu-test: configs=a72-smp4,a72-smp8,gicv3-smp8
//! qemu-test: qemu-args=-icount shift=0,sleep=off
//! qemu-test: expect=^test: core sets: \d+ processes in \d+ sets ran \d+ turns, none outside its set
//! qemu-test: forbid=PANIC
//! qemu-test: timeout=120

#![no_std]
#![no_main]

extern crate alloc;

use alloc::vec::Vec;
use core::sync::atomic::{AtomicU64, Ordering};

use beamcore::arch::cpu;
use beamcore::sched::{self, CoreMask, ExitReason, Message, SpawnError, SpawnOptions};
use beamcore::{ExitCode, println, smp};
use beamcore_apps::ensure;

const PROCESSES: usize = 160;
const TURNS: u64 = 24;
/// Work per turn, in iterations of `spin` (a few instructions each).
const WORK_PER_TURN: u64 = 3_000;

/// Busy work the compiler cannot remove.
fn spin(iterations: u64) {
    let mut x = 0u64;
    for i in 0..iterations {
        x = core::hint::black_box(x.wrapping_add(i));
    }
    core::hint::black_box(x);
}

/// Per process: the cores it ran on (a bit per core, one noted every turn), turns taken,
/// turns on a core outside its set, and how many times it reached its end.
static SEEN: [AtomicU64; PROCESSES] = [const { AtomicU64::new(0) }; PROCESSES];
static TURNS_TAKEN: [AtomicU64; PROCESSES] = [const { AtomicU64::new(0) }; PROCESSES];
static OUTSIDE: [AtomicU64; PROCESSES] = [const { AtomicU64::new(0) }; PROCESSES];
static ENDED: [AtomicU64; PROCESSES] = [const { AtomicU64::new(0) }; PROCESSES];

/// The sets for `cores` online cores: non-contiguous, overlapping, one-core and wide ones.
fn sets(cores: usize) -> Vec<CoreMask> {
    let lists: &[&[usize]] = if cores >= 8 {
        &[&[1, 4, 6], &[0, 7], &[2, 3, 5], &[3], &[0, 2, 4, 6], &[1, 3, 5, 7], &[5, 6, 7], &[1, 2]]
    } else {
        &[&[1, 2], &[0, 3], &[1, 3], &[2], &[0, 2, 3], &[1, 2, 3]]
    };
    lists.iter().map(|cores| CoreMask::of(cores)).collect()
}

fn main() -> ExitCode {
    let cores = smp::cores_online();
    ensure!(cores >= 4, "needs at least 4 cores, has {cores}");
    let me = sched::self_pid().expect("main is a process");

    // Caller mistakes are typed errors, never a panic or a process placed anywhere.
    let nowhere = sched::spawn_with(SpawnOptions::default().allowed_cores(CoreMask::single(cores + 3)), || {});
    ensure!(nowhere == Err(SpawnError::NoAllowedCore), "a set of offline cores: {nowhere:?}");
    let outside = sched::spawn_with(SpawnOptions::default().allowed_cores(CoreMask::of(&[1, 2])).on_core(3), || {});
    ensure!(outside == Err(SpawnError::NotAllowed(3)), "a start core outside the set: {outside:?}");

    let sets = sets(cores);
    let spawned_before = sched::telemetry::total(|s| &s.spawned);
    let completed_before = sched::telemetry::total(|s| &s.completed);
    for index in 0..PROCESSES {
        let set = sets[index % sets.len()];
        // No start core named: main runs on core 0, so a set without core 0 starts on its
        // lowest core, piling processes up there for thieves to take.
        let options = SpawnOptions::default().allowed_cores(set);
        // Monitored: the `Down` is sent after the scheduler has counted the end, so once every
        // `Down` is in, `completed` must show every process (the last `Word` alone comes before
        // its sender's end is counted, which made this check race the last process's end).
        let spawned = sched::spawn_monitor(options, move || {
            for _ in 0..TURNS {
                let core = cpu::core_id();
                SEEN[index].fetch_or(1 << core, Ordering::Relaxed);
                TURNS_TAKEN[index].fetch_add(1, Ordering::Relaxed);
                if !set.contains(core) {
                    OUTSIDE[index].fetch_add(1, Ordering::Relaxed);
                }
                spin(WORK_PER_TURN);
                sched::yield_now();
            }
            ENDED[index].fetch_add(1, Ordering::Relaxed);
            let _ = sched::send(me, Message::Word(index as u64));
        });
        ensure!(spawned.is_ok(), "spawn process {index}: {spawned:?}");
    }
    let mut reported = [0u32; PROCESSES];
    let mut downs = 0;
    for _ in 0..2 * PROCESSES {
        match sched::receive_timeout(60_000_000) {
            Some(Message::Word(index)) if (index as usize) < PROCESSES => reported[index as usize] += 1,
            Some(Message::Down { reason: ExitReason::Normal, .. }) => downs += 1,
            other => {
                println!("test failed: waiting for the processes' ends, got {other:?}");
                return ExitCode::Failure(1);
            }
        }
    }
    ensure!(downs == PROCESSES, "{downs} Downs for {PROCESSES} processes");
    let mut moved = 0;
    let mut turns = 0;
    for index in 0..PROCESSES {
        let set = sets[index % sets.len()];
        let seen = SEEN[index].load(Ordering::Relaxed);
        let outside = OUTSIDE[index].load(Ordering::Relaxed);
        ensure!(
            outside == 0 && CoreMask::from_low_word(seen).intersection(set) == CoreMask::from_low_word(seen),
            "process {index} ran {outside} turns outside its set {:?}: ran on cores {:?}",
            set.iter().collect::<Vec<_>>(),
            CoreMask::from_low_word(seen).iter().collect::<Vec<_>>()
        );
        let ended = ENDED[index].load(Ordering::Relaxed);
        ensure!(
            ended == 1 && reported[index] == 1,
            "process {index} ended {ended} times, reported {}",
            reported[index]
        );
        let taken = TURNS_TAKEN[index].load(Ordering::Relaxed);
        ensure!(taken == TURNS, "process {index} took {taken} turns, expected {TURNS}");
        turns += taken;
        if seen.count_ones() > 1 {
            moved += 1;
        }
    }
    // Main's own spawns are counted as well: only the differences matter.
    let spawned = sched::telemetry::total(|s| &s.spawned) - spawned_before;
    let completed = sched::telemetry::total(|s| &s.completed) - completed_before;
    ensure!(
        spawned == PROCESSES as u64 && completed == PROCESSES as u64,
        "the scheduler counted {spawned} spawned and {completed} completed, expected {PROCESSES} each"
    );
    let steals = sched::telemetry::total(|s| &s.steals);
    let not_allowed = sched::telemetry::total(|s| &s.fail_not_allowed);
    let rebalanced = sched::telemetry::total(|s| &s.rebalanced);
    ensure!(steals > 0, "no steal happened: the test did not exercise stealing");
    ensure!(moved > 0, "no process of a multi-core set ran on more than one core");
    ensure!(not_allowed > 0, "the not_allowed refusal was never counted: the path was not exercised");
    println!(
        "test: core sets: {PROCESSES} processes in {} sets ran {turns} turns, none outside its set; \
         {moved} ran on more than one core; {steals} steals, {rebalanced} moved by rebalancing, \
         {not_allowed} not_allowed refusals",
        sets.len()
    );
    sched::telemetry::print_report("core_sets", &|_| 0, &|_| Ok(()));
    ExitCode::Success
}

beamcore::entry!(main);
