//! Stress on real threads: one owner and three thieves; every item is taken exactly once.
//!
//! On the host these catch lost or duplicated items from real interleavings (and, on x86, the
//! store-to-load reordering the full barrier in `pop` prevents); loom covers weaker orderings.

use std::boxed::Box;
use std::println;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Barrier};
use std::thread;
use std::vec;
use std::vec::Vec;

use crate::{BoxWorker, Pop, Portable, PushedTo, Steal, WorkQueue, WorkQueueStealer, Worker};

const THIEVES: usize = 3;

/// Asserts that `taken` holds every item of `0..total` exactly once; their sum is checked too.
fn assert_each_item_taken_once(total: u64, taken: &[Vec<u64>]) {
    let mut times_taken = vec![0u8; total as usize];
    let mut sum = 0u128;
    for &item in taken.iter().flatten() {
        assert!(item < total, "item {item} was never pushed");
        let count = &mut times_taken[item as usize];
        *count = count.saturating_add(1);
        sum += u128::from(item);
    }
    let duplicated: Vec<usize> = (0..times_taken.len()).filter(|&i| times_taken[i] > 1).collect();
    let lost: Vec<usize> = (0..times_taken.len()).filter(|&i| times_taken[i] == 0).collect();
    assert!(
        duplicated.is_empty() && lost.is_empty(),
        "{} duplicated (first {:?}), {} lost (first {:?})",
        duplicated.len(),
        &duplicated[..duplicated.len().min(8)],
        lost.len(),
        &lost[..lost.len().min(8)],
    );
    assert_eq!(sum, u128::from(total) * u128::from(total - 1) / 2, "sum of all items");
}

/// What one thief took and how often it lost a race.
struct ThiefReport {
    taken: Vec<u64>,
    retries: u64,
}

/// What the owner and the thieves share: a start line, so no thread begins before all run,
/// and the owner's "finished" flag.
struct Race {
    start: Barrier,
    owner_done: AtomicBool,
}

impl Race {
    fn new() -> Arc<Race> {
        Arc::new(Race { start: Barrier::new(THIEVES + 1), owner_done: AtomicBool::new(false) })
    }

    fn owner_finished(&self) {
        // Release pairs with the thieves' Acquire load: the owner sets it only after its own
        // pop found the queue empty, and nothing is pushed after that.
        self.owner_done.store(true, Ordering::Release);
    }
}

/// A small deterministic pseudo-random sequence (xorshift64) for the owner's choices.
struct Xorshift(u64);

impl Xorshift {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

/// Runs `steal` from the start line until the owner has finished and the queue is empty.
fn thief_loop(race: &Race, mut steal: impl FnMut() -> Steal) -> ThiefReport {
    race.start.wait();
    let owner_done = &race.owner_done;
    let mut report = ThiefReport { taken: Vec::new(), retries: 0 };
    let mut idle_polls = 0u32;
    loop {
        match steal() {
            Steal::Success(item) => {
                report.taken.push(item);
                idle_polls = 0;
            }
            Steal::Retry => report.retries += 1,
            Steal::Empty => {
                // Acquire pairs with the Release store in `Race::owner_finished`.
                if owner_done.load(Ordering::Acquire) {
                    return report;
                }
                idle_polls += 1;
                if idle_polls.is_multiple_of(64) {
                    thread::yield_now();
                } else {
                    core::hint::spin_loop();
                }
            }
        }
    }
}

/// Items the owner moves through the deque: the full million, in debug builds too (about a
/// second on two cores); a few thousand under Miri, which interprets every access (`cargo
/// +nightly miri test` runs these tests with its data-race detector and weak-memory emulation).
const DEQUE_ITEMS: u64 = if cfg!(miri) { 3_000 } else { 1_000_000 };

#[test]
fn stress_one_owner_three_thieves_take_every_item_exactly_once() {
    let worker = Worker::<Portable>::new(256).expect("capacity");
    let race = Race::new();
    let thieves: Vec<_> = (0..THIEVES)
        .map(|_| {
            let stealer = worker.stealer();
            let race = Arc::clone(&race);
            thread::spawn(move || thief_loop(&race, || stealer.steal()))
        })
        .collect();

    // A head start the thieves are sure to find: the owner waits below until they took some.
    const HEAD_START: u64 = 64;
    for item in 0..HEAD_START {
        worker.push(item).expect("room");
    }
    race.start.wait();
    while worker.len() == HEAD_START as usize {
        core::hint::spin_loop();
    }
    let mut owner_taken = Vec::new();
    let mut owner_lost_races = 0u64;
    let mut owner_pop = |owner_taken: &mut Vec<u64>| match worker.pop() {
        Pop::Item(item) => owner_taken.push(item),
        Pop::LostRace => owner_lost_races += 1,
        Pop::Empty | Pop::Retry => {}
    };
    let mut choices = Xorshift(0x9e37_79b9_7f4a_7c15);
    for item in HEAD_START..DEQUE_ITEMS {
        while worker.push(item).is_err() {
            owner_pop(&mut owner_taken);
        }
        // Pop after about half the pushes, and "work" a little in between: the thieves keep
        // up, so the deque hovers near empty and the owner often races them for the last item.
        let choice = choices.next();
        if choice.is_multiple_of(2) {
            owner_pop(&mut owner_taken);
        }
        for _ in 0..(choice >> 58) {
            core::hint::spin_loop();
        }
    }
    while !worker.is_empty() {
        owner_pop(&mut owner_taken);
    }
    race.owner_finished();

    let reports: Vec<ThiefReport> = thieves.into_iter().map(|thief| thief.join().expect("thief panicked")).collect();
    let mut taken: Vec<Vec<u64>> = reports.iter().map(|report| report.taken.clone()).collect();
    let stolen: Vec<usize> = taken.iter().map(Vec::len).collect();
    let retries: u64 = reports.iter().map(|report| report.retries).sum();
    println!(
        "stress deque: {DEQUE_ITEMS} items, owner popped {} (lost {owner_lost_races} last-item \
         races), thieves stole {stolen:?} ({retries} retries)",
        owner_taken.len()
    );
    assert!(stolen.iter().sum::<usize>() > 0, "the thieves ran concurrently with the owner");
    taken.push(owner_taken);
    assert_each_item_taken_once(DEQUE_ITEMS, &taken);
}

const WORK_QUEUE_ITEMS: u64 = if cfg!(miri) { 2_000 } else { 400_000 };

#[test]
fn stress_work_queue_spills_under_thieves_and_loses_nothing() {
    let queue = WorkQueue::<Portable>::new(16).expect("capacity");
    let race = Race::new();
    let thieves: Vec<_> = (0..THIEVES)
        .map(|_| {
            let stealer: WorkQueueStealer = queue.stealer();
            let race = Arc::clone(&race);
            thread::spawn(move || thief_loop(&race, || stealer.steal()))
        })
        .collect();

    // Four deques' worth before the thieves start: the first spills are certain.
    let mut spilled = 0u64;
    let mut item = 0u64;
    while item < 64 {
        if queue.push(item) == PushedTo::Overflow {
            spilled += 1;
        }
        item += 1;
    }
    race.start.wait();
    let mut owner_taken = Vec::new();
    let mut choices = Xorshift(0x2545_f491_4f6c_dd1d);
    while item < WORK_QUEUE_ITEMS {
        // Random bursts of up to 47 pushes into a 16-slot deque (some spill, some fit), then
        // up to 47 pops, so the overflow fills and drains again and again.
        for _ in 0..choices.next() % 48 {
            if item == WORK_QUEUE_ITEMS {
                break;
            }
            if queue.push(item) == PushedTo::Overflow {
                spilled += 1;
            }
            item += 1;
        }
        for _ in 0..choices.next() % 48 {
            if let Pop::Item(popped) = queue.pop() {
                owner_taken.push(popped);
            }
            // "Work" on the popped item, giving the thieves time to empty the deque and go to
            // the overflow while the owner also refills from it.
            for _ in 0..(choices.next() >> 57) {
                core::hint::spin_loop();
            }
        }
    }
    loop {
        match queue.pop() {
            Pop::Item(popped) => owner_taken.push(popped),
            Pop::Empty | Pop::LostRace if queue.is_empty() => break,
            Pop::Empty | Pop::LostRace | Pop::Retry => {}
        }
    }
    race.owner_finished();

    let mut taken: Vec<Vec<u64>> =
        thieves.into_iter().map(|thief| thief.join().expect("thief panicked").taken).collect();
    let stolen: Vec<usize> = taken.iter().map(Vec::len).collect();
    println!(
        "stress work queue: {WORK_QUEUE_ITEMS} items, {spilled} spilled, owner popped {}, \
         thieves stole {stolen:?}",
        owner_taken.len()
    );
    assert!(spilled >= 48, "the head start alone spills 48 items past the 16-slot deque");
    taken.push(owner_taken);
    assert_each_item_taken_once(WORK_QUEUE_ITEMS, &taken);
}

#[test]
fn stress_boxed_items_move_between_threads_exactly_once() {
    const ITEMS: u64 = if cfg!(miri) { 1_000 } else { 50_000 };
    let worker = BoxWorker::<u64>::new(64).expect("capacity");
    let race = Race::new();
    let thieves: Vec<_> = (0..THIEVES)
        .map(|_| {
            let stealer = worker.stealer();
            let race = Arc::clone(&race);
            thread::spawn(move || thief_loop(&race, || stealer.steal().map(|item| *item)))
        })
        .collect();
    race.start.wait();
    let mut owner_taken = Vec::new();
    for item in 0..ITEMS {
        let mut boxed = Box::new(item);
        while let Err(full) = worker.push(boxed) {
            boxed = full.into_item();
            if let Pop::Item(popped) = worker.pop() {
                owner_taken.push(*popped);
            }
        }
    }
    while !worker.is_empty() {
        if let Pop::Item(popped) = worker.pop() {
            owner_taken.push(*popped);
        }
    }
    race.owner_finished();
    let mut taken: Vec<Vec<u64>> =
        thieves.into_iter().map(|thief| thief.join().expect("thief panicked").taken).collect();
    taken.push(owner_taken);
    assert_each_item_taken_once(ITEMS, &taken);
}
