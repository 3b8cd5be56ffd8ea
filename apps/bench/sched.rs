//! Scheduler micro-benchmarks, meant for one core under `-icount shift=0,sleep=off`: guest time
//! then advances one nanosecond per executed instruction, so counter deltas convert to
//! instruction counts that repeat run to run (scripts/bench.py runs it that way).
//!
//! Prints `bench: sched.<name> <instructions> insns` for: a yield between two processes, a
//! message hop (send plus the receiver's receive), spawn+run+exit of an empty process, a
//! crash reaching a link (`spawn_link`, the child's exit with a reason, the `Exit` message
//! received by the spawner, which traps exits); a spawn that stays alive, as the fork-join
//! workloads' are (`sched.spawn_alive`: the last 1,000 of 3,000 processes with fib's closure
//! and stack, spawned in a row while all of them wait; `sched.spawn_alive_reused`: the same
//! again once the first 3,000 have ended, in the slots and memory they left); and
//! `sched.bytes_per_process`: the RAM one idle process costs (1,000 processes spawned with the
//! default options and blocked in `receive`: the memory in use after, less before, over 1,000).

#![no_std]
#![no_main]

use core::sync::atomic::{AtomicU64, Ordering};

use beamcore::sched::{self, ExitReason, Message, SpawnOptions};
use beamcore::{ExitCode, arch::cpu, println, time};

const ROUNDS: u64 = 20_000;

static STARTED: AtomicU64 = AtomicU64::new(0);

/// Instructions per operation for `counts` counts spent on `operations` operations.
fn instructions(counts: u64, operations: u64) -> f64 {
    let nanoseconds = time::counts_to_ns(counts);
    nanoseconds as f64 / operations as f64
}

fn report(name: &str, counts: u64, operations: u64) {
    println!("bench: sched.{name}{} {:.0} insns", suffix(), instructions(counts, operations));
}

/// What the figures' names say of the boot: with `trace=on` they measure the cost of recording
/// scheduling events (`.traced`); with `telemetry=counters` or `off`, what a turn saves without
/// the accounting that level leaves out (`.counters`, `.off`).
fn suffix() -> &'static str {
    let config = beamcore::boot_config();
    match (config.trace, config.telemetry) {
        (true, _) => ".traced",
        (false, sched::Telemetry::Full) => "",
        (false, sched::Telemetry::Counters) => ".counters",
        (false, sched::Telemetry::Off) => ".off",
    }
}

fn bench_yield(me: sched::Pid) -> u64 {
    let body = move || {
        STARTED.compare_exchange(0, cpu::counter(), Ordering::Relaxed, Ordering::Relaxed).ok();
        for _ in 0..ROUNDS {
            sched::yield_now();
        }
        let _ = sched::send(me, Message::Word(cpu::counter()));
    };
    STARTED.store(0, Ordering::Relaxed);
    sched::spawn_with(SpawnOptions::default().on_core(0), body).expect("spawn");
    sched::spawn_with(SpawnOptions::default().on_core(0), body).expect("spawn");
    let mut end = 0;
    for _ in 0..2 {
        if let Message::Word(at) = sched::receive() {
            end = end.max(at);
        }
    }
    end - STARTED.load(Ordering::Relaxed)
}

fn bench_message_hop(me: sched::Pid) -> u64 {
    let echo = sched::spawn_with(SpawnOptions::default().on_core(0), || {
        loop {
            match sched::receive() {
                Message::Boxed(reply_to) => {
                    let reply_to = *reply_to.downcast::<sched::Pid>().expect("pid");
                    for _ in 0..ROUNDS {
                        if let Message::Word(n) = sched::receive() {
                            let _ = sched::send(reply_to, Message::Word(n));
                        }
                    }
                    return;
                }
                _ => continue,
            }
        }
    })
    .expect("spawn");
    let pinger = sched::spawn_with(SpawnOptions::default().on_core(0), move || {
        let start = cpu::counter();
        for n in 0..ROUNDS {
            let _ = sched::send(echo, Message::Word(n));
            let _ = sched::receive();
        }
        let _ = sched::send(me, Message::Word(cpu::counter() - start));
    })
    .expect("spawn");
    let _ = sched::send(echo, Message::Boxed(alloc::boxed::Box::new(pinger)));
    match sched::receive() {
        Message::Word(counts) => counts,
        other => panic!("unexpected {other:?}"),
    }
}

extern crate alloc;

/// Processes `bench_spawn_alive` keeps alive at once, and how many of the last it counts.
const ALIVE: usize = 3000;
const COUNTED: usize = 1000;

/// Counts for the last [`COUNTED`] of [`ALIVE`] processes spawned in a row, each waiting for a
/// message (so none has ended when the next is spawned), then their end (not counted). The
/// process is fib's node (apps/workloads/forkjoin.rs): a closure holding a number and the
/// parent's pid, a 4 KiB stack. `sched.spawn_exit`'s child runs and ends before the next
/// spawn, which takes the slot and the still-mapped stack page it left; a fork-join tree's
/// spawns come while the earlier ones are alive and, while the tree grows, take slots no
/// process had before, whose stack pages are mapped then (bench/sched-profile.md). Run first,
/// the last 1,000 are past every earlier benchmark's processes (`sched.bytes_per_process` had
/// 1,000 alive): what a spawn costs while the tree grows; run again, every slot was used
/// before: what it costs once the tree has shrunk and grows again. The simulator charges both
/// (docs/simulator.md). `mark` is the benchmark's `profile_begin_*`, called where the count
/// begins.
fn bench_spawn_alive(me: sched::Pid, mark: extern "C" fn()) -> u64 {
    let baseline = sched::process_count();
    let mut pids = alloc::vec::Vec::with_capacity(ALIVE);
    let mut start = 0;
    for n in 0..ALIVE {
        if n == ALIVE - COUNTED {
            mark();
            start = cpu::counter();
        }
        let options = SpawnOptions::default().stack_bytes(4096).on_core(0);
        let pid = sched::spawn_with(options, move || {
            let _ = sched::receive();
            let _ = sched::send(me, Message::Word(n as u64));
        });
        pids.push(pid.expect("spawn"));
    }
    let counts = cpu::counter() - start;
    profile_end();
    for pid in pids {
        let _ = sched::send(pid, Message::Word(0));
    }
    for _ in 0..ALIVE {
        let _ = sched::receive();
    }
    while sched::process_count() > baseline {
        sched::yield_now();
    }
    counts
}

/// Counts for the kernel's first spawn after boot (main is the only process before it): a
/// fresh slot at the start of the process region, whose control block and stack need their
/// page tables made, as the first spawn of every `make run` workload does (3,000 spawns later
/// `sched.spawn_alive` has that cost spread over 512 slots). Run before any other benchmark; a
/// single sample, exact under `-icount`. The process then ends.
fn bench_first_spawn(me: sched::Pid) -> u64 {
    let start = cpu::counter();
    let options = SpawnOptions::default().stack_bytes(4096).on_core(0);
    let pid = sched::spawn_with(options, move || {
        let _ = sched::receive();
        let _ = sched::send(me, Message::Word(0));
    });
    let counts = cpu::counter() - start;
    let _ = sched::send(pid.expect("the first spawn"), Message::Word(0));
    let _ = sched::receive();
    counts
}

/// Bytes of RAM per idle process (see the module documentation).
fn bench_bytes_per_process() -> usize {
    const IDLE: usize = 1000;
    static READY: AtomicU64 = AtomicU64::new(0);
    let baseline = sched::process_count();
    let mut pids = alloc::vec::Vec::with_capacity(IDLE);
    let before = sched::memory_in_use();
    for _ in 0..IDLE {
        let pid = sched::spawn_with(SpawnOptions::default().on_core(0), || {
            READY.fetch_add(1, Ordering::Relaxed);
            let _ = sched::receive();
        });
        pids.push(pid.expect("spawn"));
    }
    while READY.load(Ordering::Relaxed) < IDLE as u64 {
        sched::yield_now();
    }
    let after = sched::memory_in_use();
    for pid in pids {
        let _ = sched::send(pid, Message::Word(0));
    }
    while sched::process_count() > baseline {
        sched::yield_now();
    }
    (after - before) / IDLE
}

/// A crash reaching a link: `spawn_link` of a process that ends at once with a reason of its
/// own, and the exit signal received as `Message::Exit` by the spawner (which traps exits).
fn bench_link_exit() -> u64 {
    let previous = sched::trap_exits(true);
    let start = cpu::counter();
    for n in 0..ROUNDS {
        let options = SpawnOptions::default().stack_bytes(4096).on_core(0);
        sched::spawn_link(options, move || sched::exit(ExitReason::Exit(n))).expect("spawn_link");
        match sched::receive() {
            Message::Exit { reason: ExitReason::Exit(code), .. } if code == n => {}
            other => panic!("link_exit: unexpected {other:?}"),
        }
    }
    let counts = cpu::counter() - start;
    sched::trap_exits(previous);
    counts
}

fn bench_spawn_exit() -> u64 {
    let start = cpu::counter();
    for _ in 0..ROUNDS {
        sched::spawn_with(SpawnOptions::default().stack_bytes(4096).on_core(0), || {}).expect("spawn");
        // Let the child run and exit before the next spawn.
        sched::yield_now();
    }
    cpu::counter() - start
}

/// Marks for `scripts/profile.py` (`make profile`), which counts this kernel's instructions
/// one by one: those executed between a `profile_begin_<name>` and the next `profile_end` are
/// that benchmark's. Out of line and unmangled so that their addresses name them; each costs a
/// call and a return, once per benchmark.
macro_rules! profile_marks {
    ($($name:ident = $value:literal),*) => {$(
        #[unsafe(no_mangle)]
        #[inline(never)]
        extern "C" fn $name() {
            core::hint::black_box($value);
        }
    )*};
}
profile_marks!(
    profile_begin_yield = 1u8,
    profile_begin_message_hop = 2u8,
    profile_begin_spawn_exit = 3u8,
    profile_begin_link_exit = 4u8,
    profile_begin_spawn_alive = 5u8,
    profile_begin_spawn_alive_reused = 6u8,
    profile_end = 0u8
);

fn main() -> ExitCode {
    let me = sched::self_pid().expect("main is a process");
    let first_spawn_counts = bench_first_spawn(me);
    println!(
        "bench: config cores=1 rounds={ROUNDS} alive={ALIVE} counted={COUNTED} counter_hz={}",
        cpu::counter_frequency()
    );
    if suffix().is_empty() {
        println!("bench: sched.control_block {} bytes", sched::CONTROL_BLOCK_BYTES);
    }
    report("first_spawn", first_spawn_counts, 1);
    profile_begin_yield();
    let yield_counts = bench_yield(me);
    profile_end();
    report("yield", yield_counts, 2 * ROUNDS);
    profile_begin_message_hop();
    let hop_counts = bench_message_hop(me);
    profile_end();
    report("message_hop", hop_counts, 2 * ROUNDS);
    profile_begin_spawn_exit();
    let spawn_counts = bench_spawn_exit();
    profile_end();
    report("spawn_exit", spawn_counts, ROUNDS);
    profile_begin_link_exit();
    let link_counts = bench_link_exit();
    profile_end();
    report("link_exit", link_counts, ROUNDS);
    if suffix().is_empty() {
        println!("bench: sched.bytes_per_process {} bytes", bench_bytes_per_process());
    }
    // After `bytes_per_process`, whose figure counts the table growing for its 1,000.
    report("spawn_alive", bench_spawn_alive(me, profile_begin_spawn_alive), COUNTED as u64);
    report("spawn_alive_reused", bench_spawn_alive(me, profile_begin_spawn_alive_reused), COUNTED as u64);
    ExitCode::Success
}

beamcore::entry!(main);
