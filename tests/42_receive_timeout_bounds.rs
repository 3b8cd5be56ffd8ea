//! `receive_timeout` with nothing to receive returns `None` neither early nor late: no sooner
//! than its timeout, and within its timeout plus two ticks (timeouts are checked when the core
//! comes round its loop, at the latest at its next tick, so a wait ends at most a tick after its
//! deadline, plus the time to be scheduled). Timeouts of 0, 250 us, 1 ms, 3.5 ms and 20 ms,
//! waited for by the program's main process and, at the same time, by a process bound to the
//! last core (the same core as main when there is only one).
//!
//! Runs under `-icount shift=0,sleep=off`: guest time is then the instruction count (1 ns per
//! instruction; idle time skips to the next timer deadline), so the upper bound is a repeatable
//! guest-time bound, not at the mercy of how the host schedules QEMU's threads.
//! qemu-test: configs=a72-smp4,a72-smp1
//! qemu-test: qemu-args=-icount shift=0,sleep=off
//! qemu-test: expect=^test: receive_timeout within \[timeout, timeout \+ 2 ticks\]
//! qemu-test: forbid=PANIC

#![no_std]
#![no_main]

use core::sync::atomic::{AtomicU64, Ordering};

use beamcore::sched::{self, SpawnOptions};
use beamcore::{ExitCode, boot_config, println, smp, time};
use beamcore_apps::ensure;

const TIMEOUTS_US: [u64; 5] = [20_000, 1_000, 3_500, 250, 0];

/// Waits each timeout out; the first one out of bounds as `Err((timeout, waited))`, else the
/// largest overshoot past a timeout, in microseconds.
fn wait_out_all() -> Result<u64, (u64, u64)> {
    let tick_us = u64::from(boot_config().slice_us);
    let mut worst = 0;
    for timeout_us in TIMEOUTS_US {
        let started = time::now_count();
        let nothing = sched::receive_timeout(timeout_us);
        let waited = time::now_count() - started;
        let waited_us = time::counts_to_us(waited);
        if nothing.is_some()
            || waited < time::us_to_counts(timeout_us)
            || waited > time::us_to_counts(timeout_us + 2 * tick_us)
        {
            return Err((timeout_us, waited_us));
        }
        worst = worst.max(waited_us - timeout_us);
    }
    Ok(worst)
}

/// What the process on the last core found (as a word, see `main`), `NO_REPORT` until then. Not a
/// message: one sent while main still waits out its own timeouts would end one of them with a
/// message (on one core, the two processes' waits end at the same ticks, in either order).
static REPORT: AtomicU64 = AtomicU64::new(NO_REPORT);
const NO_REPORT: u64 = u64::MAX;

fn main() -> ExitCode {
    let core = smp::cores_online() - 1;
    let tick_us = u64::from(boot_config().slice_us);
    let other = sched::spawn_with(SpawnOptions::default().bound_to(core), move || {
        let word = match wait_out_all() {
            Ok(worst) => worst,
            Err((timeout_us, waited_us)) => 1 << 63 | timeout_us << 32 | waited_us,
        };
        REPORT.store(word, Ordering::Release);
    });
    ensure!(other.is_ok(), "spawn: {other:?}");
    let mine = wait_out_all();
    if let Err((timeout_us, waited_us)) = mine {
        ensure!(
            false,
            "main: receive_timeout({timeout_us} us) returned after {waited_us} us, outside [timeout, timeout + 2 \
             ticks of {tick_us} us]"
        );
    }
    let give_up = time::now_count() + time::us_to_counts(10_000_000);
    let theirs = loop {
        let word = REPORT.load(Ordering::Acquire);
        if word != NO_REPORT {
            break word;
        }
        ensure!(time::now_count() < give_up, "the process on core {core} did not report within 10 s");
        sched::yield_now();
    };
    ensure!(
        theirs >> 63 == 0,
        "core {core}: receive_timeout({} us) returned after {} us, outside [timeout, timeout + 2 ticks of {tick_us} us]",
        (theirs >> 32) & 0x7fff_ffff,
        theirs & 0xffff_ffff
    );
    println!(
        "test: receive_timeout within [timeout, timeout + 2 ticks] for {TIMEOUTS_US:?} us; most late: main {} us, \
         core {core} {theirs} us",
        mine.unwrap_or(0)
    );
    ExitCode::Success
}

beamcore::entry!(main);
