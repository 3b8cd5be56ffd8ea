//! Host benchmark (criterion): beamcore's Chase-Lev deque against crossbeam-deque, side by side.
//!
//! beamcore's deque is the kernel's own algorithm with `core::sync::atomic` ([`Portable`]), the
//! same code the kernel runs except for the hand-written LDXR/STXR primitive. crossbeam-deque is
//! the Chase-Lev deque most Rust code uses (Rayon's work stealing is built on it), so it is the
//! anchor: absolute times depend on the host, the ratio between the two in one run does not as
//! much. Each pattern is one criterion group holding both implementations, driven through the
//! same generic code, so the two compiled loops differ only in the deque:
//!
//! - `push_pop`: the owner pushes a batch of 1,024 items, then pops them all (LIFO), alone.
//! - `push_steal`: the owner pushes a batch, then a stealer handle on the same thread takes them
//!   all (FIFO): the cost of `steal` without contention.
//! - `owner_1_thief`, `owner_3_thieves`: the owner pushes a batch, popping after every second
//!   push, then drains the deque, while 1 or 3 threads steal in a loop; every item is taken
//!   exactly once, by the owner or a thief (checked). Time is the owner's.
//!
//! Every iteration moves one batch, so criterion's time per iteration compares directly: the
//! lower, the higher the throughput. `scripts/bench.py` (`make bench BENCH=deque.host`) reads
//! criterion's estimates and reports, per pattern, crossbeam's time over ours as
//! `deque.host.ours_over_crossbeam.<pattern>` and their geometric mean as
//! `deque.host.ours_over_crossbeam` (above 1: beamcore's deque moves items faster).
//!
//! Host only: `cargo bench --bench deque_host --target <host triple>` (the default target is
//! bare metal, where neither std nor criterion exists). Measurement is kept short (criterion's
//! `--measurement-time` and `--warm-up-time` override it) so the bench does not dominate
//! `make bench`; with thieves on a 2-CPU host the contended figures are noisy.

use std::hint::black_box;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use beamcore_deque::{Pop, Portable, Steal};
use criterion::{BenchmarkGroup, Criterion, Throughput, criterion_group, criterion_main, measurement::WallTime};

/// Items moved per iteration; also the capacity of beamcore's fixed ring (crossbeam's grows).
const BATCH: u64 = 1024;

/// The owner's end of a deque, as the patterns use it.
trait Owner: Send {
    type Thief: Thief;
    fn new_deque() -> Self;
    fn thief(&self) -> Self::Thief;
    fn push(&self, item: u64);
    /// The newest item, or `None` once the deque is empty (a race lost on the last item counts
    /// as empty: a thief took it).
    fn pop(&self) -> Option<u64>;
}

/// A thief's end of a deque.
trait Thief: Send + Clone {
    /// The oldest item, or `None` if there was none or the thief lost a race for it.
    fn steal(&self) -> Option<u64>;
}

struct Beamcore(beamcore_deque::Worker<Portable>);

#[derive(Clone)]
struct BeamcoreThief(beamcore_deque::Stealer<Portable>);

impl Owner for Beamcore {
    type Thief = BeamcoreThief;

    fn new_deque() -> Self {
        Beamcore(beamcore_deque::Worker::new(BATCH as usize).expect("power-of-two capacity"))
    }

    fn thief(&self) -> BeamcoreThief {
        BeamcoreThief(self.0.stealer())
    }

    #[inline]
    fn push(&self, item: u64) {
        // No pattern holds more than BATCH items: a full ring would be a bug in the bench.
        if self.0.push(item).is_err() {
            panic!("deque full: the bench holds at most {BATCH} items");
        }
    }

    #[inline]
    fn pop(&self) -> Option<u64> {
        loop {
            match self.0.pop() {
                Pop::Item(item) => return Some(item),
                Pop::Empty | Pop::LostRace => return None,
                // Only the AArch64 primitive's store-exclusive gives up; the item is still there.
                Pop::Retry => continue,
            }
        }
    }
}

impl Thief for BeamcoreThief {
    #[inline]
    fn steal(&self) -> Option<u64> {
        match self.0.steal() {
            Steal::Success(item) => Some(item),
            Steal::Empty | Steal::Retry => None,
        }
    }
}

struct Crossbeam(crossbeam_deque::Worker<u64>);

#[derive(Clone)]
struct CrossbeamThief(crossbeam_deque::Stealer<u64>);

impl Owner for Crossbeam {
    type Thief = CrossbeamThief;

    fn new_deque() -> Self {
        // LIFO for the owner, as beamcore's; pushing a batch once grows crossbeam's buffer to its
        // working size, so no iteration pays for a growth.
        let worker = crossbeam_deque::Worker::new_lifo();
        for item in 0..BATCH {
            worker.push(item);
        }
        while worker.pop().is_some() {}
        Crossbeam(worker)
    }

    fn thief(&self) -> CrossbeamThief {
        CrossbeamThief(self.0.stealer())
    }

    #[inline]
    fn push(&self, item: u64) {
        self.0.push(item);
    }

    #[inline]
    fn pop(&self) -> Option<u64> {
        self.0.pop()
    }
}

impl Thief for CrossbeamThief {
    #[inline]
    fn steal(&self) -> Option<u64> {
        self.0.steal().success()
    }
}

fn push_pop<D: Owner>(group: &mut BenchmarkGroup<'_, WallTime>, name: &str) {
    let deque = D::new_deque();
    group.bench_function(name, |b| {
        b.iter(|| {
            for item in 0..BATCH {
                deque.push(black_box(item));
            }
            for _ in 0..BATCH {
                black_box(deque.pop());
            }
        })
    });
    assert!(deque.pop().is_none(), "every iteration takes every item it pushed");
}

fn push_steal<D: Owner>(group: &mut BenchmarkGroup<'_, WallTime>, name: &str) {
    let deque = D::new_deque();
    let thief = deque.thief();
    group.bench_function(name, |b| {
        b.iter(|| {
            for item in 0..BATCH {
                deque.push(black_box(item));
            }
            for _ in 0..BATCH {
                black_box(thief.steal());
            }
        })
    });
    assert!(deque.pop().is_none(), "every iteration steals every item it pushed");
}

/// `iterations` batches through one deque with `thieves` threads stealing throughout; returns
/// the owner's time. The thieves start before the clock and stop after it.
fn owner_with_thieves<D: Owner>(iterations: u64, thieves: usize) -> Duration {
    let deque = D::new_deque();
    let done = AtomicBool::new(false);
    thread::scope(|scope| {
        let handles: Vec<_> = (0..thieves)
            .map(|_| {
                let (thief, done) = (deque.thief(), &done);
                scope.spawn(move || {
                    let mut taken = 0u64;
                    while !done.load(Ordering::Relaxed) {
                        match thief.steal() {
                            Some(item) => {
                                black_box(item);
                                taken += 1;
                            }
                            None => std::hint::spin_loop(),
                        }
                    }
                    taken
                })
            })
            .collect();
        let start = Instant::now();
        let mut popped = 0u64;
        for _ in 0..iterations {
            for item in 0..BATCH {
                deque.push(black_box(item));
                if item % 2 == 1 && deque.pop().is_some() {
                    popped += 1;
                }
            }
            while deque.pop().is_some() {
                popped += 1;
            }
        }
        let elapsed = start.elapsed();
        done.store(true, Ordering::Relaxed);
        let stolen: u64 = handles.into_iter().map(|h| h.join().expect("thief thread")).sum();
        assert_eq!(popped + stolen, iterations * BATCH, "every item taken exactly once");
        elapsed
    })
}

fn contended<D: Owner>(group: &mut BenchmarkGroup<'_, WallTime>, name: &str, thieves: usize) {
    group.bench_function(name, |b| b.iter_custom(|iterations| owner_with_thieves::<D>(iterations, thieves)));
}

fn deques(c: &mut Criterion) {
    let mut group = c.benchmark_group("push_pop");
    group.throughput(Throughput::Elements(BATCH));
    push_pop::<Beamcore>(&mut group, "beamcore");
    push_pop::<Crossbeam>(&mut group, "crossbeam");
    group.finish();

    let mut group = c.benchmark_group("push_steal");
    group.throughput(Throughput::Elements(BATCH));
    push_steal::<Beamcore>(&mut group, "beamcore");
    push_steal::<Crossbeam>(&mut group, "crossbeam");
    group.finish();

    for (pattern, thieves) in [("owner_1_thief", 1), ("owner_3_thieves", 3)] {
        let mut group = c.benchmark_group(pattern);
        group.throughput(Throughput::Elements(BATCH));
        contended::<Beamcore>(&mut group, "beamcore", thieves);
        contended::<Crossbeam>(&mut group, "crossbeam", thieves);
        group.finish();
    }
}

/// Short on purpose: eight benchmarks of about 1.3 s each.
fn short() -> Criterion {
    Criterion::default()
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(1))
        .sample_size(30)
}

criterion_group! {
    name = benches;
    config = short();
    targets = deques
}
criterion_main!(benches);
