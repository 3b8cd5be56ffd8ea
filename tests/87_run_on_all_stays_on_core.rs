//! `smp::run_on_all_and_wait` runs every core's share on that core, the caller's own share
//! included, even when the caller is a process that gives its core up in the middle of its
//! share. Here the caller's share starts a busy process bound to the caller's core and yields
//! while it runs, so the caller waits in its core's run queue with every other core idle and
//! searching: a process that may move would be stolen there and finish its share on another
//! core (which runs that core's own share as well). The caller is held on its core for its share
//! (`smp::Handlers::hold_current`); each share checks the core it runs on after every yield.
//! Thieves may take a victim's only process here (`min_steal=1 imbalance=0`, the peers'
//! thresholds): with the defaults a lone waiting process is never stolen, and the race needs a
//! second runnable process on the caller's core.
//! Seen to fail with the hold taken out: "the caller's share (core 0) ran on core 1".
//! qemu-test: configs=a72-smp4,a72-smp8
//! qemu-test: qemu-args=-icount shift=0,sleep=off
//! qemu-test: append=min_steal=1 imbalance=0 cooldown=0
//! qemu-test: expect=^test: every share ran on its own core, the caller's through \d+ yields
//! qemu-test: forbid=PANIC

#![no_std]
#![no_main]

use core::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use beamcore::arch::cpu;
use beamcore::sched::{self, SpawnOptions};
use beamcore::{ExitCode, println, smp};
use beamcore_apps::ensure;

/// Yields of the caller inside its share, each while the busy process holds its core.
const YIELDS: u64 = 20;
/// Shares that found themselves on another core than theirs (core + 1 of the first, 0: none).
static WRONG_CORE: AtomicUsize = AtomicUsize::new(0);
static RAN_ON: AtomicUsize = AtomicUsize::new(usize::MAX);
static YIELDED: AtomicU64 = AtomicU64::new(0);

fn check(core: usize) {
    let here = cpu::core_id();
    if here != core {
        let _ = WRONG_CORE.compare_exchange(0, core + 1, Ordering::Relaxed, Ordering::Relaxed);
        RAN_ON.store(here, Ordering::Relaxed);
    }
}

fn share(core: usize) {
    check(core);
    if sched::self_pid().is_none() {
        return; // another core's share: a kernel job, which cannot be moved
    }
    // The caller's share: a busy process on this core, and yields while it runs.
    let until = cpu::counter() + cpu::counter_frequency() / 100; // 10 ms
    let busy = sched::spawn_with(SpawnOptions::default().bound_to(core), move || {
        while cpu::counter() < until {
            core::hint::spin_loop();
        }
    });
    assert!(busy.is_ok(), "spawn the busy process: {busy:?}");
    for _ in 0..YIELDS {
        sched::yield_now();
        YIELDED.fetch_add(1, Ordering::Relaxed);
        check(core);
    }
}

fn main() -> ExitCode {
    let caller_core = cpu::core_id();
    ensure!(smp::run_on_all_and_wait(share).is_ok(), "could not run on every core");
    let wrong = WRONG_CORE.load(Ordering::Relaxed);
    ensure!(
        wrong == 0,
        "the {} share (core {}) ran on core {}",
        if wrong - 1 == caller_core { "caller's" } else { "a job's" },
        wrong - 1,
        RAN_ON.load(Ordering::Relaxed)
    );
    println!("test: every share ran on its own core, the caller's through {} yields", YIELDED.load(Ordering::Relaxed));
    ExitCode::Success
}

beamcore::entry!(main);
