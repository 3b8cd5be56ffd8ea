//! Host benchmark: the `Portable` deque against crossbeam-deque in one run (reports, asserts none).
//!
//! `cargo test --lib --release --target x86_64-unknown-linux-gnu sched::deque::tests::bench --
//! --ignored --nocapture` prints `bench:` lines (the console contract's benchmark format).

use std::hint::black_box;
use std::println;
use std::time::{Duration, Instant};

use crate::sched::deque::{Portable, Worker};

const BATCH: u64 = 1024;
const ROUNDS: u32 = 2_000;
const REPEATS: u32 = 5;

/// Best of `REPEATS` runs of `ROUNDS` rounds of `round`, in nanoseconds per item moved.
fn best_nanoseconds_per_item(mut round: impl FnMut()) -> f64 {
    let mut best = Duration::MAX;
    for _ in 0..REPEATS {
        let start = Instant::now();
        for _ in 0..ROUNDS {
            round();
        }
        best = best.min(start.elapsed());
    }
    best.as_secs_f64() * 1e9 / f64::from(ROUNDS) / BATCH as f64
}

#[test]
#[ignore = "benchmark: run in release with --ignored --nocapture"]
fn bench_host_portable_vs_crossbeam() {
    let ours = Worker::<Portable>::new(BATCH as usize).expect("capacity");
    let our_thief = ours.stealer();
    let theirs = crossbeam_deque::Worker::<u64>::new_lifo();
    let their_thief = theirs.stealer();
    // Let crossbeam grow its buffer to the batch size before timing.
    for item in 0..BATCH {
        theirs.push(item);
    }
    while theirs.pop().is_some() {}

    let ours_push_pop = best_nanoseconds_per_item(|| {
        for item in 0..BATCH {
            let _ = ours.push(black_box(item));
        }
        for _ in 0..BATCH {
            let _ = black_box(ours.pop());
        }
    });
    let theirs_push_pop = best_nanoseconds_per_item(|| {
        for item in 0..BATCH {
            theirs.push(black_box(item));
        }
        for _ in 0..BATCH {
            black_box(theirs.pop());
        }
    });
    let ours_push_steal = best_nanoseconds_per_item(|| {
        for item in 0..BATCH {
            let _ = ours.push(black_box(item));
        }
        for _ in 0..BATCH {
            let _ = black_box(our_thief.steal());
        }
    });
    let theirs_push_steal = best_nanoseconds_per_item(|| {
        for item in 0..BATCH {
            theirs.push(black_box(item));
        }
        for _ in 0..BATCH {
            let _ = black_box(their_thief.steal());
        }
    });

    println!("bench: deque.host.portable.push_pop {ours_push_pop:.2} ns");
    println!("bench: deque.host.crossbeam.push_pop {theirs_push_pop:.2} ns");
    println!("bench: deque.host.portable.push_steal {ours_push_steal:.2} ns");
    println!("bench: deque.host.crossbeam.push_steal {theirs_push_steal:.2} ns");
    let ratio = (ours_push_pop + ours_push_steal) / (theirs_push_pop + theirs_push_steal);
    println!("bench: deque.host.portable_vs_crossbeam {ratio:.3} ratio");
    assert!(ours.is_empty() && theirs.is_empty(), "every round moved every item");
}
