//! Timer micro-benchmarks, on one core under `-icount shift=0,sleep=off` (one nanosecond of
//! guest time per instruction; `make bench BENCH=timers`).
//!
//! With 100,000 timers pending on the core (due in 100 s, so none fires during the run):
//! `bench: timers.insert <instructions> insns`, one `send_after` (its message made, the timer
//! set, the core's timer armed if it is the earliest), and `timers.cancel`, one `cancel_timer`
//! of a pending timer (its message dropped), each averaged over 10,000 at spread deadlines.
//! `timers.fire_lateness_us`: the worst lateness, over 10,000 timers of 50 to 150 us fired one
//! after the other, from a timer's deadline to its message taken by the process waiting for it
//! (`timers.fire_lateness_mean_us`, the mean).

#![no_std]
#![no_main]

extern crate alloc;

use alloc::vec::Vec;

use beamcore::sched::{self, Cancelled, Message};
use beamcore::{ExitCode, arch::cpu, println, time};

const PENDING: u64 = 100_000;
const MEASURED: u64 = 10_000;
const FIRED: u64 = 10_000;

fn instructions(counts: u64, operations: u64) -> f64 {
    time::counts_to_ns(counts) as f64 / operations as f64
}

fn main() -> ExitCode {
    println!("bench: config cores=1 pending={PENDING} counter_hz={}", cpu::counter_frequency());
    let me = sched::self_pid().expect("a process");
    let mut background = Vec::with_capacity(PENDING as usize);
    for i in 0..PENDING {
        background
            .push(sched::send_after(me, 100_000_000 + (i * 7_919) % 1_000_000, Message::Word(i)).expect("send_after"));
    }
    let mut measured = Vec::with_capacity(MEASURED as usize);
    let start = cpu::counter();
    for i in 0..MEASURED {
        measured.push(
            sched::send_after(me, 100_000_000 + (i * 104_729) % 1_000_000, Message::Word(i)).expect("send_after"),
        );
    }
    let inserting = cpu::counter() - start;
    println!("bench: timers.insert {:.0} insns", instructions(inserting, MEASURED));
    let start = cpu::counter();
    for timer in measured.iter().rev() {
        let cancelled = sched::cancel_timer(*timer);
        core::hint::black_box(cancelled);
    }
    let cancelling = cpu::counter() - start;
    println!("bench: timers.cancel {:.0} insns", instructions(cancelling, MEASURED));
    if measured.iter().any(|timer| sched::read_timer(*timer).is_some()) {
        println!("bench: a cancelled timer is still pending");
        return ExitCode::Failure(1);
    }
    // Lateness: one timer at a time, the process waiting in `receive` for it.
    let (mut worst, mut total) = (0u64, 0u64);
    for i in 0..FIRED {
        let delay_us = 50 + (i * 37) % 101;
        let deadline = time::now_count() + time::us_to_counts(delay_us);
        sched::send_after(me, delay_us, Message::Word(deadline)).expect("send_after");
        let due = sched::receive_value::<u64>();
        let late = time::now_count().saturating_sub(due);
        worst = worst.max(late);
        total += late;
    }
    println!("bench: timers.fire_lateness_us {:.1} us", time::counts_to_ns(worst) as f64 / 1_000.0);
    println!("bench: timers.fire_lateness_mean_us {:.2} us", time::counts_to_ns(total / FIRED) as f64 / 1_000.0);
    for timer in background {
        if sched::cancel_timer(timer) == Cancelled::NotPending {
            println!("bench: a background timer fired early");
            return ExitCode::Failure(1);
        }
    }
    ExitCode::Success
}

beamcore::entry!(main);
