//! The balancer's decisions, end to end, with pinned ballast setting each core's load (idle
//! cores 0 and 3 are the thieves; nothing is spawned on them):
//! - min_steal: core 1 runs two bound processes and holds one free one, so it never has more
//!   than one stealable process (below `min_steal=2`): the thieves try, and it is never taken.
//! - amount: core 1 runs a bound max-priority spinner and holds 16 free normal processes that
//!   never get a turn there: with `steal=one` each steal takes exactly one; with `steal=half`
//!   at least half of what the thief saw (from the thieves' `stolen` and `stealable_seen`).
//! - load formula (with `strategy=load retries=1` and a cooldown that never ends, so a thief
//!   only ever tries the busiest core by load): core 1 holds 6 bound max + 3 free normal
//!   processes (load 4*5 + 2*3 = 26 while one runs, 8 processes queued), core 2 holds 12 low
//!   (load 14, 14 queued, 3 of them free). By the 4/3/2/1 formula core 1 is the busiest, so core
//!   2 is never robbed; counting processes instead (8 < 14) would rob core 2 first.
//!
//! Runs under -icount, so the same decisions are taken every run.
//!
//! qemu-test: configs=a72-smp4
//! qemu-test: qemu-args=-icount shift=0,sleep=off
//! qemu-test: variants=steal=one rebalance=off;steal=half rebalance=off;strategy=load retries=1 cooldown=1099511627776 rebalance=off
//! qemu-test: forbid=PANIC
//! qemu-test: timeout=120

#![no_std]
#![no_main]

extern crate alloc;

use alloc::vec::Vec;
use core::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use beamcore::sched::balance::StealAmount;
use beamcore::sched::{self, Pid, Priority, SpawnOptions};
use beamcore::{ExitCode, println};
use beamcore_apps::ensure;

/// Set to end every spinner of the current scenario.
static STOP: AtomicBool = AtomicBool::new(false);
/// Spinners still running.
static RUNNING: AtomicUsize = AtomicUsize::new(0);

/// A process that computes and yields until told to stop.
fn spin(options: SpawnOptions) -> Pid {
    RUNNING.fetch_add(1, Ordering::Relaxed);
    sched::spawn_with(options.stack_bytes(4096), || {
        while !STOP.load(Ordering::Relaxed) {
            let mut x = 1u64;
            for i in 0..2_000u64 {
                x = core::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(i));
            }
            sched::yield_now();
        }
        RUNNING.fetch_sub(1, Ordering::Relaxed);
    })
    .expect("spawn a spinner")
}

/// Lets the scenario run for `us` microseconds of guest time (main waits, so core 0 is idle).
fn let_run(us: u64) {
    let _ = sched::receive_timeout(us);
}

/// Stops every spinner and waits until they have all ended.
fn stop_all() {
    STOP.store(true, Ordering::Relaxed);
    while RUNNING.load(Ordering::Relaxed) != 0 || sched::process_count() > 1 {
        let _ = sched::receive_timeout(1_000);
    }
    STOP.store(false, Ordering::Relaxed);
}

fn total(counter: fn(&sched::CoreStats) -> &core::sync::atomic::AtomicU64) -> u64 {
    (0..beamcore::smp::cores_online()).map(|c| counter(sched::core_stats(c)).load(Ordering::Relaxed)).sum()
}

/// The load-formula scenario (see the header); its steals start cooldowns that never end, so it
/// runs first and the amount scenario is skipped in its variant.
fn load_formula() -> ExitCode {
    let robbed_before: Vec<u64> = (0..4).map(|c| sched::core_stats(c).migrated_out.load(Ordering::Relaxed)).collect();
    for _ in 0..6 {
        spin(SpawnOptions::default().priority(Priority::Max).bound_to(1));
    }
    for _ in 0..3 {
        spin(SpawnOptions::default().on_core(1));
    }
    for _ in 0..9 {
        spin(SpawnOptions::default().priority(Priority::Low).bound_to(2));
    }
    for _ in 0..3 {
        spin(SpawnOptions::default().priority(Priority::Low).on_core(2));
    }
    let loads = [1, 2].map(sched::core_load);
    let_run(20_000);
    let robbed: Vec<u64> =
        (0..4).map(|c| sched::core_stats(c).migrated_out.load(Ordering::Relaxed) - robbed_before[c]).collect();
    stop_all();
    ensure!(robbed[1] > 0, "load: the busiest core (1, loads {loads:?}) was never robbed: {robbed:?}");
    ensure!(robbed[2] == 0, "load: core 2 was robbed although core 1 weighs more (loads {loads:?}): {robbed:?}");
    println!("test: load formula: loads of cores 1 and 2 at the start {loads:?}; processes taken per core {robbed:?}");
    ExitCode::Success
}

fn main() -> ExitCode {
    let (config, strategy) = sched::balance_config();
    ensure!(beamcore::smp::cores_online() == 4, "needs 4 cores");
    let load_variant = config.retries == 1 && strategy == sched::balance::Strategy::Load;
    if load_variant && load_formula() != ExitCode::Success {
        return ExitCode::Failure(1);
    }

    // min_steal: one free process beside two bound ones on core 1.
    let attempts_before = total(|s| &s.steal_attempts);
    spin(SpawnOptions::default().bound_to(1));
    spin(SpawnOptions::default().bound_to(1));
    let lone = spin(SpawnOptions::default().on_core(1));
    let_run(20_000);
    let placement = sched::placement(lone);
    let attempts = total(|s| &s.steal_attempts) - attempts_before;
    stop_all();
    ensure!(attempts > 0, "min_steal: the idle cores never tried to steal");
    ensure!(
        placement.is_some_and(|p| p.core == 1 && p.migrations == 0),
        "min_steal: the only stealable process of core 1 was taken: {placement:?}"
    );
    println!("test: min_steal: {attempts} steal attempts, the lone free process never left core 1");

    if load_variant {
        return ExitCode::Success;
    }
    // amount: 16 free processes starved on core 1 by a bound max-priority spinner.
    let (steals_before, stolen_before, seen_before) =
        (total(|s| &s.steals), total(|s| &s.stolen), total(|s| &s.stealable_seen));
    spin(SpawnOptions::default().priority(Priority::Max).bound_to(1));
    for _ in 0..16 {
        spin(SpawnOptions::default().on_core(1));
    }
    let_run(20_000);
    let steals = total(|s| &s.steals) - steals_before;
    let stolen = total(|s| &s.stolen) - stolen_before;
    let seen = total(|s| &s.stealable_seen) - seen_before;
    stop_all();
    ensure!(steals > 0, "amount: nothing was stolen from core 1");
    match config.amount {
        StealAmount::One => ensure!(stolen == steals, "steal=one: {steals} steals took {stolen} processes"),
        StealAmount::Half => {
            ensure!(stolen > steals, "steal=half: {steals} steals took only {stolen} processes (one each)");
            ensure!(2 * stolen >= seen, "steal=half: {steals} steals took {stolen} of {seen} stealable, under half");
        }
    }
    if let Err(why) = beamcore_apps::testing::check_steal_amounts(config.amount, steals, stolen, seen) {
        ensure!(false, "amount: {why}");
    }
    println!("test: amount: {steals} steals took {stolen} processes of {seen} stealable they saw");

    ExitCode::Success
}

beamcore::entry!(main);
