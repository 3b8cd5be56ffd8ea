//! The queue-wait histogram lands where the wait is known by construction. Four processes of
//! equal priority, all bound to core 3 (nothing else runs there), take turns of a fixed length
//! W = 1,000 us of busy work each (timed with the counter), then yield: from its second turn on,
//! each one waits exactly while the other three take their turns, 3 W = 3,000 us and a few
//! switches, in bucket [2,048, 4,096) us. Each takes 21 turns (the last one only reports and
//! ends), and only the first and the last round differ: the first turns wait 0, 1, 2 and 3 W
//! after the processes were queued, the last (short) ones 3, 2, 1 and 0 W. So of the 4 x 21 =
//! 84 waits core 3 counts, exactly 4 x 19 + 2 = 78 fall in that bucket, none above it, and the
//! mean is (78 x 3 + 2 x 2 + 2 x 1) / 84 W = 2.86 W (checked within [2.75 W, 3 W]).
//!
//! A high-priority variant of the same check: a max-priority hog on core 2 is woken by a normal worker there each turn and
//! then runs 1.5 W; the worker, queued behind it, waits 1.5 W every turn after its first (20
//! waits in [1,024, 2,048) us), and the hog, first in line whenever woken, waits only a few
//! switches (its 22 waits and the worker's first below 32 us).
//!
//! The slice (`slice_us=100000`) is longer than any turn, so no tick preempts a turn and the
//! turns are exactly what the processes make them. Under `-icount` guest time is the
//! instruction count, the same every run. The report line carries the histogram.
//! qemu-test: configs=a72-smp4
//! qemu-test: qemu-args=-icount shift=0,sleep=off
//! qemu-test: append=slice_us=100000
//! qemu-test: expect=^test: queue wait: core 3 counted 84 waits, \d+ in \[2048, 4096\) us, mean \d+ us
//! qemu-test: expect=^test: queue wait: behind a max-priority hog, 20 waits
//! qemu-test: expect=^report: .*"wait_us_buckets":\[
//! qemu-test: forbid=PANIC
//! qemu-test: timeout=60

#![no_std]
#![no_main]

use beamcore::arch::cpu;
use beamcore::sched::queue_wait::{WAIT_BUCKETS, bucket_of_us, bucket_range_us, mean_us};
use beamcore::sched::{self, Message, Priority, SpawnOptions};
use beamcore::{ExitCode, println};
use beamcore_apps::ensure;

const BUSY: usize = 4;
const TURNS: u64 = 20;
/// Length of one turn.
const TURN_US: u64 = 1_000;
/// Length of one of the hog's turns (1.5 turns: mid-bucket, [1024, 2048) us).
const HOG_TURN_US: u64 = 1_500;
/// A wait that is only a few switches stays below this.
const SHORT_US: u64 = 32;

/// Busy for `us` microseconds of counter time, from now.
fn busy_for(us: u64) {
    let ticks = us * cpu::counter_frequency() / 1_000_000;
    let start = cpu::counter();
    while cpu::counter().wrapping_sub(start) < ticks {
        core::hint::spin_loop();
    }
}

/// Core `core`'s histogram and summed wait, as they read now.
fn waits(core: usize) -> ([u64; WAIT_BUCKETS], u64) {
    let stats = sched::core_stats(core);
    // The default, telemetry=full, collects them: an error here is a failure.
    (stats.wait_histogram().expect("queue wait collected"), stats.wait_counts().expect("queue wait collected"))
}

fn main() -> ExitCode {
    let me = sched::self_pid().expect("main is a process");
    let hz = cpu::counter_frequency();

    // Round robin on core 3.
    let (before, before_counts) = waits(3);
    for index in 0..BUSY {
        let spawned = sched::spawn_with(SpawnOptions::default().bound_to(3), move || {
            for _ in 0..TURNS {
                busy_for(TURN_US);
                sched::yield_now();
            }
            let _ = sched::send(me, Message::Word(index as u64));
        });
        ensure!(spawned.is_ok(), "spawn busy process {index}: {spawned:?}");
    }
    for _ in 0..BUSY {
        ensure!(sched::receive_timeout(10_000_000).is_some(), "a busy process did not end within 10 s");
    }
    let (after, after_counts) = waits(3);
    let counted: [u64; WAIT_BUCKETS] = core::array::from_fn(|b| after[b] - before[b]);
    let total: u64 = counted.iter().sum();
    // The turns: 21 each (20 that end in a yield, and the one that reports and ends).
    let turns = BUSY as u64 * (TURNS + 1);
    ensure!(total == turns, "core 3 counted {total} waits, expected {turns}: {counted:?}");
    let expected = bucket_of_us(3 * TURN_US);
    let (low, high) = bucket_range_us(expected);
    let in_bucket = counted[expected];
    let three_turn_waits = BUSY as u64 * (TURNS - 1) + 2;
    ensure!(
        in_bucket == three_turn_waits,
        "{in_bucket} of {total} waits in [{low}, {high}) us (3 turns of {TURN_US} us), expected {three_turn_waits}: {counted:?}"
    );
    ensure!(counted[expected + 1..].iter().all(|&n| n == 0), "waits above {high} us: {counted:?}");
    let mean = mean_us(after_counts - before_counts, total, hz);
    ensure!(
        (2.75 * TURN_US as f64..=3.0 * TURN_US as f64).contains(&mean),
        "mean wait {mean:.0} us, expected 2.86 turns of {TURN_US} us"
    );
    println!(
        "test: queue wait: core 3 counted {total} waits, {in_bucket} in [{low}, {high}) us, mean {} us",
        mean as u64
    );

    // A max-priority hog on core 2, woken by the worker each turn: the worker's every turn
    // after its first waits out one hog turn of 1.5 W, bucket [1024, 2048) us; the hog, first in
    // line whenever it is woken, waits a few switches.
    let (before, _) = waits(2);
    let hog = sched::spawn_with(SpawnOptions::default().bound_to(2).priority(Priority::Max), || {
        while let Message::Word(0) = sched::receive() {
            busy_for(HOG_TURN_US);
        }
    });
    let Ok(hog) = hog else { return ExitCode::Failure(1) };
    let worker = sched::spawn_with(SpawnOptions::default().bound_to(2), move || {
        for _ in 0..TURNS {
            busy_for(TURN_US / 10);
            let _ = sched::send(hog, Message::Word(0));
            sched::yield_now();
        }
        let _ = sched::send(hog, Message::Word(1));
        let _ = sched::send(me, Message::Word(0));
    });
    ensure!(worker.is_ok(), "spawn the worker: {worker:?}");
    ensure!(sched::receive_timeout(10_000_000).is_some(), "the worker did not end within 10 s");
    while sched::is_alive(hog) {
        sched::yield_now();
    }
    let (after, _) = waits(2);
    let counted: [u64; WAIT_BUCKETS] = core::array::from_fn(|b| after[b] - before[b]);
    let total: u64 = counted.iter().sum();
    // The worker: 21 turns; the hog: its first, 20 wakes and the one that ends it.
    ensure!(total == 2 * TURNS + 3, "core 2 counted {total} waits, expected {}: {counted:?}", 2 * TURNS + 3);
    let behind = bucket_of_us(HOG_TURN_US);
    let short: u64 = counted[..=bucket_of_us(SHORT_US)].iter().sum();
    ensure!(
        counted[behind] == TURNS && short == total - TURNS,
        "expected {TURNS} waits in bucket {:?} us (behind the hog) and the other {} below {SHORT_US} us: {counted:?}",
        bucket_range_us(behind),
        total - TURNS
    );
    println!(
        "test: queue wait: behind a max-priority hog, {TURNS} waits in {:?} us, {short} below {SHORT_US} us",
        bucket_range_us(behind)
    );

    sched::telemetry::print_report("queue_wait", &|_| 0, &|_| Ok(()));
    ExitCode::Success
}

beamcore::entry!(main);
