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

    // Throughput, ours over crossbeam's (higher is better for us), for the owner alone and for
    // the owner with 1 and with 3 thieves; the headline figure is their geometric mean.
    let scenarios = [
        ("owner_push_pop", theirs_push_pop / ours_push_pop),
        ("owner_1_thief", contended_ratio(1)),
        ("owner_3_thieves", contended_ratio(3)),
    ];
    let mut product = 1.0;
    for (name, throughput_ratio) in scenarios {
        println!("bench: deque.host.ours_over_crossbeam.{name} {throughput_ratio:.3} ratio");
        product *= throughput_ratio;
    }
    let geometric_mean = product.powf(1.0 / scenarios.len() as f64);
    println!("bench: deque.host.ours_over_crossbeam {geometric_mean:.3} ratio");
}

/// Items moved per second by an owner that pushes and pops while `thieves` threads steal, for
/// one deque implementation; best of `REPEATS`.
fn contended_throughput(thieves: usize, ours: bool) -> f64 {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
    const ITEMS: u64 = 200_000;
    let mut best: f64 = 0.0;
    for _ in 0..REPEATS {
        let done = Arc::new(AtomicBool::new(false));
        let taken = Arc::new(AtomicU64::new(0));
        let (owner_ours, owner_theirs) =
            (Worker::<Portable>::new(1024).expect("capacity"), crossbeam_deque::Worker::<u64>::new_lifo());
        let handles: Vec<_> = (0..thieves)
            .map(|_| {
                let (done, taken) = (Arc::clone(&done), Arc::clone(&taken));
                let (ours_stealer, theirs_stealer) = (owner_ours.stealer(), owner_theirs.stealer());
                std::thread::spawn(move || {
                    while !done.load(Ordering::Relaxed) {
                        let got = if ours {
                            ours_stealer.steal().success().is_some()
                        } else {
                            theirs_stealer.steal().is_success()
                        };
                        if got {
                            taken.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                })
            })
            .collect();
        let start = Instant::now();
        let mut popped = 0u64;
        for item in 0..ITEMS {
            if ours {
                while owner_ours.push(item).is_err() {
                    if owner_ours.pop().item().is_some() {
                        popped += 1;
                    }
                }
                if item % 2 == 1 && owner_ours.pop().item().is_some() {
                    popped += 1;
                }
            } else {
                owner_theirs.push(item);
                if item % 2 == 1 && owner_theirs.pop().is_some() {
                    popped += 1;
                }
            }
        }
        loop {
            let more = if ours { owner_ours.pop().item().is_some() } else { owner_theirs.pop().is_some() };
            if !more {
                break;
            }
            popped += 1;
        }
        let elapsed = start.elapsed();
        done.store(true, Ordering::Relaxed);
        for handle in handles {
            handle.join().expect("thief");
        }
        let moved = popped + taken.load(Ordering::Relaxed);
        best = best.max(moved as f64 / elapsed.as_secs_f64());
    }
    best
}

fn contended_ratio(thieves: usize) -> f64 {
    contended_throughput(thieves, true) / contended_throughput(thieves, false)
}
