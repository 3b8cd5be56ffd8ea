//! A timeout belongs to one wait: when a `receive_timeout` is answered by a message before its
//! deadline, its timeout must not wake the process's next wait. Here a process alone on its
//! core waits 5 ms and is answered at once (by a helper on the same core, which can run only
//! once the process has blocked), then waits 50 ms for nothing. The old 5 ms deadline falls
//! inside the second wait; were it honoured, the process would be woken early, find no message
//! and wait again: an extra turn on its core. So the core must give exactly one turn during the
//! second wait (the one that ends it, at its deadline), and the wait must last its 50 ms and no
//! more than two ticks longer.
//!
//! Runs under `-icount shift=0,sleep=off` so that guest time, and with it where the stale
//! deadline falls, is repeatable; the test also checks it fell inside the second wait and that
//! the first wait really blocked (no preemption let the helper answer before it).
//! qemu-test: configs=a72-smp4,a72-smp1
//! qemu-test: qemu-args=-icount shift=0,sleep=off
//! qemu-test: expect=^test: second wait: 1 turn
//! qemu-test: forbid=PANIC

#![no_std]
#![no_main]

use core::sync::atomic::{AtomicU64, Ordering};

use beamcore::sched::{self, Message, SpawnOptions};
use beamcore::{ExitCode, boot_config, println, smp, time};
use beamcore_apps::ensure;

const FIRST_US: u64 = 5_000;
const SECOND_US: u64 = 50_000;

/// What the waiting process measured (written before it reports, read after).
static TURNS: AtomicU64 = AtomicU64::new(u64::MAX);
static SECOND_WAITED: AtomicU64 = AtomicU64::new(0);
static FIRST_WAIT_PREEMPTED: AtomicU64 = AtomicU64::new(u64::MAX);
static SECOND_STARTED_AFTER_US: AtomicU64 = AtomicU64::new(u64::MAX);

fn main() -> ExitCode {
    let me = sched::self_pid().unwrap();
    let core = smp::cores_online() - 1;
    let waiter = sched::spawn_with(SpawnOptions::default().bound_to(core), move || {
        let stats = sched::core_stats(core);
        // A fresh slice, so no preemption comes between spawning the helper and blocking.
        sched::yield_now();
        let preemptions_before = stats.preemptions.load(Ordering::Relaxed);
        let waiter = sched::self_pid().unwrap();
        // Queued behind us on our core: it runs once we block, and answers our first wait.
        sched::spawn_with(SpawnOptions::default().bound_to(core), move || {
            let _ = sched::send(waiter, Message::Word(1));
        })
        .expect("spawn helper");
        let first_started = time::now_count();
        let first = sched::receive_timeout(FIRST_US);
        FIRST_WAIT_PREEMPTED.store(stats.preemptions.load(Ordering::Relaxed) - preemptions_before, Ordering::Relaxed);
        if !matches!(first, Some(Message::Word(1))) {
            let _ = sched::send(me, Message::Word(0));
            return;
        }
        // Turns are counted when they start: this one is already in `before`.
        let before = stats.executed.load(Ordering::Relaxed);
        let second_started = time::now_count();
        let second = sched::receive_timeout(SECOND_US);
        let waited = time::now_count() - second_started;
        let after = stats.executed.load(Ordering::Relaxed);
        TURNS.store(after - before, Ordering::Relaxed);
        SECOND_WAITED.store(time::counts_to_us(waited), Ordering::Relaxed);
        SECOND_STARTED_AFTER_US.store(time::counts_to_us(second_started - first_started), Ordering::Relaxed);
        let _ = sched::send(me, Message::Word(if second.is_none() { 2 } else { 3 }));
    });
    ensure!(waiter.is_ok(), "spawn waiter: {waiter:?}");
    let report = sched::receive_timeout(10_000_000);
    ensure!(!matches!(report, Some(Message::Word(0))), "first wait was not answered by the helper's message");
    ensure!(!matches!(report, Some(Message::Word(3))), "second wait got a message though nobody sent one");
    ensure!(matches!(report, Some(Message::Word(2))), "waiter did not report: {report:?}");

    let preempted = FIRST_WAIT_PREEMPTED.load(Ordering::Relaxed);
    let started_after = SECOND_STARTED_AFTER_US.load(Ordering::Relaxed);
    let turns = TURNS.load(Ordering::Relaxed);
    let waited = SECOND_WAITED.load(Ordering::Relaxed);
    let tick_us = u64::from(boot_config().slice_us);
    // The premises: the first wait blocked (the helper ran because we blocked, not because we
    // were preempted) and its deadline lies inside the second wait.
    ensure!(preempted == 0, "first wait: {preempted} preemptions on core {core}; it may not have blocked");
    ensure!(started_after < FIRST_US, "second wait began {started_after} us after the first, past its deadline");
    ensure!(
        turns == 1,
        "core {core} gave {turns} turns during the second wait, expected 1: the first wait's timeout woke it"
    );
    ensure!(waited >= SECOND_US, "second wait ended early, after {waited} us of {SECOND_US}");
    ensure!(waited <= SECOND_US + 2 * tick_us, "second wait ended late, after {waited} us of {SECOND_US}");
    println!(
        "test: second wait: {turns} turn on core {core}, {waited} us for {SECOND_US} us; began {started_after} us \
         into the first wait (answered at once)"
    );
    ExitCode::Success
}

beamcore::entry!(main);
