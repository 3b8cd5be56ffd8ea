//! Taking cores offline: the typed errors and the rules for what was bound or waiting there.
//!
//! - `take_offline` refuses a core that does not exist (`NoSuchCore`), core 0 (`BootCore`), the
//!   last online core (`LastOnline`, at one core), a core already offline (`AlreadyOffline`);
//!   `bring_online` refuses a core already online (`AlreadyOnline`) or that does not exist.
//! - While a core is offline: `spawn` on it or bound to it fails with `CoreOffline`, a job for
//!   it with `smp::SmpError::CoreOffline`.
//! - A process bound to the core and blocked in `receive` there when it leaves is rebound to
//!   another core when a message wakes it, and runs there (it reports where it ran and its new
//!   binding); it stays bound there once the core is back.
//! - A process bound there and waiting in `receive_timeout` times out on time elsewhere (its
//!   deadline is handed over), within its timeout plus two ticks, and is rebound too.
//!
//! Under `-icount`: the waits and timeouts are guest time, the same every run.
//! qemu-test: configs=a72-smp1,a72-smp4,gicv3-smp8
//! qemu-test: qemu-args=-icount shift=0,sleep=off
//! qemu-test: expect=^test: offline errors and bound processes: ok
//! qemu-test: forbid=PANIC
//! qemu-test: timeout=60

#![no_std]
#![no_main]

use alloc::boxed::Box;
use core::sync::atomic::{AtomicU64, Ordering};

use beamcore::sched::{self, Message, OfflineError, OnlineError, SpawnError, SpawnOptions};
use beamcore::{ExitCode, println, smp, time};
use beamcore_apps::ensure;

extern crate alloc;

const TIMEOUT_US: u64 = 20_000;
static TIMED_OUT_AFTER_US: AtomicU64 = AtomicU64::new(0);

fn main() -> ExitCode {
    let cores = smp::cores_online();
    let me = sched::self_pid().expect("main is a process");
    ensure!(
        sched::take_offline(cores) == Err(OfflineError::NoSuchCore(cores)),
        "take_offline({cores}): {:?}",
        sched::take_offline(cores)
    );
    ensure!(sched::bring_online(99) == Err(OnlineError::NoSuchCore(99)), "bring_online(99) accepted");
    if cores == 1 {
        let error = sched::take_offline(0);
        ensure!(error == Err(OfflineError::LastOnline(0)), "take_offline(0) on one core: {error:?}");
        println!("test: offline errors and bound processes: ok (one core: {})", error.unwrap_err());
        return ExitCode::Success;
    }
    let error = sched::take_offline(0);
    ensure!(error == Err(OfflineError::BootCore), "take_offline(0): {error:?}");
    println!("refused as it should: {}", error.unwrap_err());
    ensure!(sched::bring_online(1) == Err(OnlineError::AlreadyOnline(1)), "bring_online(1) while online accepted");

    let leaving = cores - 1;
    // A bound process blocked in receive on the leaving core: woken after the core has left.
    let bound = sched::spawn_with(SpawnOptions::default().bound_to(leaving), move || {
        let _go = sched::receive();
        let (here, home) = sched::self_placement().expect("a process");
        let _ = sched::send(me, Message::Word(((here as u64) << 32) | home.map_or(u64::MAX >> 32, |h| h as u64)));
    })
    .expect("spawn bound");
    // A process waiting with a timeout on the leaving core (bound there, so no thief moves it
    // first): its deadline must move, and the process be rebound when it fires.
    sched::spawn_with(SpawnOptions::default().bound_to(leaving), || {
        let started = time::now_count();
        let got = sched::receive_timeout(TIMEOUT_US);
        assert!(got.is_none(), "nothing is sent to it");
        TIMED_OUT_AFTER_US.store(time::counts_to_us(time::now_count() - started).max(1), Ordering::Relaxed);
    })
    .expect("spawn waiter");
    // Let both reach their receive on the leaving core.
    let settle = time::Deadline::after_us(2_000);
    while !settle.expired() {
        sched::yield_now();
    }
    let timeouts_before = sched::timeouts_moved();
    let (_, rebound_before) = sched::offline_moves();
    ensure!(sched::take_offline(leaving) == Ok(()), "take_offline({leaving}) failed");
    let again = sched::take_offline(leaving);
    ensure!(again == Err(OfflineError::AlreadyOffline(leaving)), "second take_offline: {again:?}");
    println!("refused as it should: {}", again.unwrap_err());
    ensure!(!sched::core_is_active(leaving) && !smp::core(leaving).is_online(), "core {leaving} still online");
    ensure!(sched::timeouts_moved() > timeouts_before, "the waiter's deadline was not handed over");
    let spawn = sched::spawn_with(SpawnOptions::default().on_core(leaving), || {});
    ensure!(matches!(spawn, Err(SpawnError::CoreOffline(c)) if c == leaving), "spawn on an offline core: {spawn:?}");
    let spawn = sched::spawn_with(SpawnOptions::default().bound_to(leaving), || {});
    ensure!(matches!(spawn, Err(SpawnError::CoreOffline(_))), "spawn bound to an offline core: {spawn:?}");
    let job = smp::run_on(leaving, Box::new(|| {}));
    ensure!(job == Err(smp::SmpError::CoreOffline(leaving)), "a job for an offline core: {job:?}");

    sched::send(bound, Message::Word(0)).expect("the bound process is alive");
    let (here, home) = match sched::receive_timeout(1_000_000) {
        Some(Message::Word(word)) => ((word >> 32) as usize, (word & 0xffff_ffff) as usize),
        other => {
            println!("test failed: the bound process did not answer: {other:?}");
            return ExitCode::Failure(1);
        }
    };
    ensure!(here != leaving && here == home, "the bound process ran on core {here}, bound to {home} (left: {leaving})");

    // The waiter times out on another core, on time.
    let deadline = time::Deadline::after_us(1_000_000);
    while TIMED_OUT_AFTER_US.load(Ordering::Relaxed) == 0 && !deadline.expired() {
        sched::yield_now();
    }
    let after = TIMED_OUT_AFTER_US.load(Ordering::Relaxed);
    let tick = u64::from(beamcore::boot_config().slice_us);
    ensure!(
        (TIMEOUT_US..=TIMEOUT_US + 2 * tick).contains(&after),
        "receive_timeout({TIMEOUT_US} us) on a core that left returned after {after} us"
    );
    let (_, rebound) = sched::offline_moves();
    ensure!(rebound == rebound_before + 2, "rebound count {rebound_before} -> {rebound}, expected two more");
    ensure!(sched::bring_online(leaving) == Ok(()), "bring_online({leaving}) failed");
    ensure!(sched::core_is_active(leaving) && smp::core(leaving).is_online(), "core {leaving} not back");
    let spawn = sched::spawn_with(SpawnOptions::default().on_core(leaving), || {});
    ensure!(spawn.is_ok(), "spawn on a core back online: {spawn:?}");
    println!(
        "test: offline errors and bound processes: ok (bound process rebound to core {home}, deadline moved and kept: \
         {after} us of {TIMEOUT_US})"
    );
    ExitCode::Success
}

beamcore::entry!(main);
