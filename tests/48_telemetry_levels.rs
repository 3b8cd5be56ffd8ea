//! `telemetry=counters` and `telemetry=off` leave per-turn accounting out, and nothing else:
//! 2,000 processes spread over four cores each yield, block in `receive` and answer, so every
//! path that skips the accounting (the hand-off's copies for the level, the turn's end, the
//! general path) runs many times; each process must answer exactly once and the spawn and end
//! counts must agree. Then every reader of a figure the level does not collect must say so, not
//! show a zero: the queue-wait histogram and its sum, `local_pops` (off only), the heap that
//! processes that ended without unwinding left behind (a panic's line claims no count: the panic
//! unwinds) and the `report:` line.
//! Booted once per level (`variants`); the program checks the level it was booted with, and
//! under `telemetry=full` the same checks would fail (the figures are collected there).
//! qemu-test: configs=a72-smp4
//! qemu-test: variants=telemetry=counters;telemetry=off
//! qemu-test: expect=^config: .* telemetry=(counters|off)
//! qemu-test: expect=^process <\d+\.\d+> on core \d+ ended: panic: deliberate panic holding \d+ bytes at tests/48_telemetry_levels\.rs:\d+$
//! qemu-test: expect=^telemetry: queue wait \(wait_us_buckets, wait_us_mean\) not collected \(telemetry=(counters|off)\)$
//! qemu-test: expect=^report: .*"telemetry":"(counters|off)".*"wait_us_buckets":"not collected \(telemetry=(counters|off)\)","wait_us_mean":"not collected
//! qemu-test: expect=^test: telemetry=(counters|off): 2000 processes ran, each answered once
//! qemu-test: forbid=PANIC
//! qemu-test: timeout=90

#![no_std]
#![no_main]

extern crate alloc;

use alloc::format;
use alloc::vec;

use beamcore::sched::telemetry::{print_report, total};
use beamcore::sched::{self, ExitReason, Message, NotCollected, SpawnOptions, Telemetry};
use beamcore::{ExitCode, println, smp};
use beamcore_apps::ensure;
use beamcore_apps::testing::each_answers_once;

const PROCESSES: usize = 2000;
const YIELDS: usize = 3;

fn main() -> ExitCode {
    let level = sched::telemetry();
    ensure!(level == beamcore::boot_config().telemetry, "the level in force is the boot's");
    ensure!(level != Telemetry::Full, "booted with telemetry=counters or off (got {level})");
    let me = sched::self_pid().expect("main is a process");
    let cores = smp::cores_online();
    let (spawned_before, completed_before) = (total(|s| &s.spawned), total(|s| &s.completed));

    // Each process yields, then blocks until main's go, then answers with its index.
    let mut pids = vec![];
    for index in 0..PROCESSES {
        let spawned = sched::spawn_with(SpawnOptions::default().on_core(index % cores), move || {
            for _ in 0..YIELDS {
                sched::yield_now();
            }
            if let Message::Word(go) = sched::receive() {
                let _ = sched::send(me, Message::Word(go));
            }
        });
        ensure!(spawned.is_ok(), "spawn {index}: {spawned:?}");
        pids.push(spawned.unwrap());
    }
    for (index, pid) in pids.iter().enumerate() {
        ensure!(sched::send(*pid, Message::Word(index as u64)).is_ok(), "go to {pid}");
    }
    let answers = each_answers_once(PROCESSES);
    ensure!(answers.is_ok(), "{}", answers.unwrap_err());

    // A process that panics holding heap (it unwinds): its report line claims no byte count.
    let panicking = sched::spawn_with(SpawnOptions::default().on_core(1 % cores), || {
        let held = vec![7u8; 4096];
        sched::yield_now();
        panic!("deliberate panic holding {} bytes", held.len());
    });
    ensure!(panicking.is_ok(), "spawn the panicking process");
    let panicking = panicking.unwrap();
    ensure!(sched::monitor(panicking).is_ok(), "monitor {panicking}");
    match sched::receive_timeout(20_000_000) {
        Some(Message::Down { pid, reason: ExitReason::Panic, .. }) if pid == panicking => {}
        other => ensure!(false, "expected the panic's Down, got {other:?}"),
    }
    let processes = (PROCESSES + 1) as u64;
    let (spawned, completed) = (total(|s| &s.spawned) - spawned_before, total(|s| &s.completed) - completed_before);
    ensure!(spawned == processes && completed == processes, "spawned {spawned}, completed {completed}");

    // What is not collected says so, with the level's name.
    let not = NotCollected(level);
    ensure!(format!("{not}") == format!("not collected (telemetry={})", level.name()), "message: {not}");
    ensure!(
        sched::heap_not_reclaimed_bytes() == Err(not),
        "heap not reclaimed: {:?}",
        sched::heap_not_reclaimed_bytes()
    );
    let mut turns = 0;
    for core in 0..cores {
        let stats = sched::core_stats(core);
        ensure!(stats.wait_histogram() == Err(not), "core {core} histogram: {:?}", stats.wait_histogram());
        ensure!(stats.wait_counts() == Err(not), "core {core} wait sum: {:?}", stats.wait_counts());
        match level {
            Telemetry::Off => {
                ensure!(stats.local_pops() == Err(not), "core {core} local_pops: {:?}", stats.local_pops())
            }
            _ => ensure!(stats.local_pops().is_ok_and(|n| n > 0), "core {core} local_pops: {:?}", stats.local_pops()),
        }
        // The turn count stays at every level: the progress watchdog reads it.
        turns += stats.executed.load(core::sync::atomic::Ordering::Relaxed);
    }
    // At least YIELDS + 1 turns each: a process whose go is already queued when it reaches
    // `receive` answers and ends in its last yield's turn.
    ensure!(turns >= (PROCESSES * (YIELDS + 1)) as u64, "turns counted: {turns}");
    print_report("telemetry", &|_| 0, &|_| Ok(()));
    println!(
        "test: telemetry={level}: {PROCESSES} processes ran, each answered once; {turns} turns; {not} said where due"
    );
    ExitCode::Success
}

beamcore::entry!(main);
