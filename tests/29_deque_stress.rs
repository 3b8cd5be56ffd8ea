//! The work-stealing deque under contention on real (emulated) cores: every core owns a
//! deque, pushes its own items and pops them while every other core steals from it; 1,000,000
//! items in all. A bitmap proves each item was taken exactly once, and the sums match.
//!
//! Two phases. First every core is owner and thief at once (1,000,000 items). Then core 0
//! alone owns a deque that it keeps at one or two items (push one, pop one when there are
//! two) while every other core steals from it (4,000,000 items): the owner's pops and the
//! thieves' steals keep meeting at the last items, the case the full barrier in `pop` exists
//! for (a store of `bottom` followed by a load of `top`: the one reordering an x86 host, and so
//! QEMU, performs). Built with `--cfg deque_omit_pop_barrier` (`make test-deque-barrier`), this
//! test reports duplicated items in some runs; with the barrier, never (docs/deque.md).
//!
//! Built with `--cfg deque_inject_stxr_failure` (`make test-deque-stxr-failure`), every 8th
//! compare-and-swap on `top` of a core has its store-exclusive failed on purpose, so the owner
//! sees `Pop::Retry` and thieves `Steal::Retry` with the item still in the deque: the same
//! exactly-once checks must hold, and the test asserts that failures were injected and that
//! the owner did see `Pop::Retry`. Without injection it prints how many `Pop::Retry` real lost
//! reservations gave (usually none).
//! qemu-test: configs=a72-smp4,a72-smp8,max-smp4
//! qemu-test: forbid=PANIC
//! qemu-test: timeout=180

#![no_std]
#![no_main]

extern crate alloc;

use alloc::vec::Vec;
use core::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

use beamcore::mm::layout::MAX_CORES;
use beamcore::sched::deque::{NativeAtomics, Pop, Steal, Stealer, Worker, store_exclusive_injection};
use beamcore::{ExitCode, println, smp};
use beamcore_apps::ensure;

const TOTAL_ITEMS: u64 = 1_000_000;
const PAIR_ITEMS: u64 = 4_000_000;
const CAPACITY: usize = 64;

static STEALERS: [spin::Once<Stealer<NativeAtomics>>; MAX_CORES] = [const { spin::Once::new() }; MAX_CORES];
static READY: AtomicUsize = AtomicUsize::new(0);
static TAKEN: AtomicU64 = AtomicU64::new(0);
static SUM: AtomicU64 = AtomicU64::new(0);
static DUPLICATES: AtomicU64 = AtomicU64::new(0);
static STOP: AtomicBool = AtomicBool::new(false);
static BITMAP: spin::Once<Vec<AtomicU64>> = spin::Once::new();
static PAIR_BITMAP: spin::Once<Vec<AtomicU64>> = spin::Once::new();
static PAIR_STEALER: spin::Once<Stealer<NativeAtomics>> = spin::Once::new();
static PAIR_DONE: AtomicBool = AtomicBool::new(false);
static PAIR_DUPLICATES: AtomicU64 = AtomicU64::new(0);
static PAIR_STEALS: AtomicU64 = AtomicU64::new(0);
static STOLEN: [AtomicU64; MAX_CORES] = [const { AtomicU64::new(0) }; MAX_CORES];
static POPPED: [AtomicU64; MAX_CORES] = [const { AtomicU64::new(0) }; MAX_CORES];
/// `Pop::Retry` results (the store-exclusive failed on every attempt; the item stayed).
static POP_RETRIES: AtomicU64 = AtomicU64::new(0);

/// Counts a `Pop::Retry`.
fn pop_retried() {
    POP_RETRIES.fetch_add(1, Ordering::Relaxed);
}

fn take(item: u64) {
    let bitmap = BITMAP.get().expect("bitmap");
    let bit = 1u64 << (item % 64);
    if bitmap[(item / 64) as usize].fetch_or(bit, Ordering::Relaxed) & bit != 0 {
        DUPLICATES.fetch_add(1, Ordering::Relaxed);
    }
    SUM.fetch_add(item, Ordering::Relaxed);
    TAKEN.fetch_add(1, Ordering::Relaxed);
}

fn steal_round(me: usize, cores: usize) {
    for victim in (0..cores).filter(|&v| v != me) {
        if let Some(stealer) = STEALERS[victim].get()
            && let Steal::Success(item) = stealer.steal()
        {
            take(item);
            STOLEN[me].fetch_add(1, Ordering::Relaxed);
        }
    }
}

fn hammer(core: usize) {
    let cores = smp::cores_online();
    let worker: Worker<NativeAtomics> = Worker::new(CAPACITY).expect("capacity is a power of two");
    STEALERS[core].call_once(|| worker.stealer());
    READY.fetch_add(1, Ordering::AcqRel);
    while READY.load(Ordering::Acquire) < cores {
        core::hint::spin_loop();
    }
    let per_core = TOTAL_ITEMS / cores as u64;
    let first = core as u64 * per_core;
    let last = if core == cores - 1 { TOTAL_ITEMS } else { first + per_core };
    let mut next = first;
    let mut round = 0u64;
    while next < last {
        // Two pushes, then a pop (and a pop every other round): the deque holds one or two
        // items, so most pops race the thieves near the last element.
        let burst = 2;
        for _ in 0..burst {
            if next < last && worker.push(next).is_ok() {
                next += 1;
            }
        }
        match worker.pop() {
            Pop::Item(item) => {
                take(item);
                POPPED[core].fetch_add(1, Ordering::Relaxed);
            }
            Pop::Retry => pop_retried(),
            Pop::Empty | Pop::LostRace => {}
        }
        if round % 2 == 1 {
            match worker.pop() {
                Pop::Item(item) => {
                    take(item);
                    POPPED[core].fetch_add(1, Ordering::Relaxed);
                }
                Pop::Retry => pop_retried(),
                Pop::Empty | Pop::LostRace => {}
            }
        }
        steal_round(core, cores);
        round += 1;
    }
    // Drain what is left of our own, then help the others until everything is taken.
    loop {
        match worker.pop() {
            Pop::Item(item) => {
                take(item);
                POPPED[core].fetch_add(1, Ordering::Relaxed);
            }
            // The item is still there: pop again.
            Pop::Retry => pop_retried(),
            Pop::Empty | Pop::LostRace => break,
        }
    }
    while !STOP.load(Ordering::Acquire) {
        steal_round(core, cores);
        if TAKEN.load(Ordering::Relaxed) + DUPLICATES.load(Ordering::Relaxed) >= TOTAL_ITEMS {
            break;
        }
    }
}

fn pair_take(item: u64) {
    let bitmap = PAIR_BITMAP.get().expect("bitmap");
    let bit = 1u64 << (item % 64);
    if bitmap[(item / 64) as usize].fetch_or(bit, Ordering::Relaxed) & bit != 0 {
        PAIR_DUPLICATES.fetch_add(1, Ordering::Relaxed);
    }
}

/// Phase two: core 0 owns, everyone else steals from it.
fn pair_phase(core: usize) {
    if core == 0 {
        let worker: Worker<NativeAtomics> = Worker::new(CAPACITY).expect("capacity");
        PAIR_STEALER.call_once(|| worker.stealer());
        for item in 0..PAIR_ITEMS {
            while worker.push(item).is_err() {
                match worker.pop() {
                    Pop::Item(taken) => pair_take(taken),
                    Pop::Retry => pop_retried(),
                    Pop::Empty | Pop::LostRace => {}
                }
            }
            if worker.len() >= 2 {
                match worker.pop() {
                    Pop::Item(taken) => pair_take(taken),
                    Pop::Retry => pop_retried(),
                    Pop::Empty | Pop::LostRace => {}
                }
            }
        }
        loop {
            match worker.pop() {
                Pop::Item(taken) => pair_take(taken),
                // The item is still there: pop again.
                Pop::Retry => pop_retried(),
                Pop::Empty | Pop::LostRace => break,
            }
        }
        PAIR_DONE.store(true, Ordering::Release);
    } else {
        let stealer = loop {
            if let Some(stealer) = PAIR_STEALER.get() {
                break stealer;
            }
            core::hint::spin_loop();
        };
        while !PAIR_DONE.load(Ordering::Acquire) {
            if let Steal::Success(item) = stealer.steal() {
                pair_take(item);
                PAIR_STEALS.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
}

fn main() -> ExitCode {
    let cores = smp::cores_online();
    let words = TOTAL_ITEMS.div_ceil(64) as usize;
    BITMAP.call_once(|| (0..words).map(|_| AtomicU64::new(0)).collect());
    ensure!(smp::run_on_all_and_wait(hammer).is_ok(), "could not run on every core");
    STOP.store(true, Ordering::Release);
    let taken = TAKEN.load(Ordering::Relaxed);
    let duplicates = DUPLICATES.load(Ordering::Relaxed);
    let bitmap = BITMAP.get().unwrap();
    let seen: u64 = bitmap.iter().map(|w| u64::from(w.load(Ordering::Relaxed).count_ones())).sum();
    let stolen: u64 = STOLEN.iter().map(|s| s.load(Ordering::Relaxed)).sum();
    let popped: u64 = POPPED.iter().map(|p| p.load(Ordering::Relaxed)).sum();
    println!(
        "deque stress: {cores} cores, {taken} takes ({popped} pops, {stolen} steals), {duplicates} duplicated, {} lost",
        TOTAL_ITEMS - seen
    );
    ensure!(duplicates == 0, "{duplicates} items were taken twice");
    ensure!(seen == TOTAL_ITEMS, "{} items were lost", TOTAL_ITEMS - seen);
    ensure!(taken == TOTAL_ITEMS, "{taken} takes for {TOTAL_ITEMS} items");
    let expected_sum = TOTAL_ITEMS * (TOTAL_ITEMS - 1) / 2;
    ensure!(SUM.load(Ordering::Relaxed) == expected_sum, "sum of taken items differs");
    ensure!(stolen > 0 && popped > 0, "no contention: {stolen} steals, {popped} pops");
    PAIR_BITMAP.call_once(|| (0..PAIR_ITEMS.div_ceil(64)).map(|_| AtomicU64::new(0)).collect());
    ensure!(smp::run_on_all_and_wait(pair_phase).is_ok(), "could not run the pair phase");
    let pair_seen: u64 =
        PAIR_BITMAP.get().unwrap().iter().map(|w| u64::from(w.load(Ordering::Relaxed).count_ones())).sum();
    let pair_duplicates = PAIR_DUPLICATES.load(Ordering::Relaxed);
    let pair_steals = PAIR_STEALS.load(Ordering::Relaxed);
    println!(
        "deque stress (one owner): {PAIR_ITEMS} items, {pair_steals} steals, {pair_duplicates} duplicated, {} lost",
        PAIR_ITEMS - pair_seen
    );
    ensure!(pair_duplicates == 0, "{pair_duplicates} items were taken twice (one owner)");
    ensure!(pair_seen == PAIR_ITEMS, "{} items were lost (one owner)", PAIR_ITEMS - pair_seen);
    let pop_retries = POP_RETRIES.load(Ordering::Relaxed);
    match store_exclusive_injection() {
        Some(injected) => {
            println!(
                "deque stress: store-exclusive injection on: {} CAS calls, {} stores failed by injection, {} CAS calls reported StoreExclusiveFailed, {pop_retries} Pop::Retry seen by owners",
                injected.calls, injected.skipped_stores, injected.reported_failures
            );
            ensure!(injected.skipped_stores > 0, "injection on, but no store-exclusive was failed");
            ensure!(injected.reported_failures > 0, "injection on, but no CAS reported StoreExclusiveFailed");
            ensure!(pop_retries > 0, "injection on, but no owner saw Pop::Retry");
        }
        None => println!("deque stress: store-exclusive injection off; {pop_retries} Pop::Retry seen by owners"),
    }
    println!(
        "test: {} items each taken exactly once on {cores} cores ({} stolen); sums match",
        TOTAL_ITEMS + PAIR_ITEMS,
        stolen + pair_steals
    );
    ExitCode::Success
}

beamcore::entry!(main);
