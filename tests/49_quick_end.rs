//! Ending at once: a process whose stack holds nothing to drop when it ends is ended without
//! the unwinder (`ends_at_once` counts it), and one that holds something is unwound
//! (`ends_unwound`) and its destructors run, exactly once each. Checked for the three ends
//! that reach a safe point (its own `exit`, a panic, a kill while it waits in `receive`), at
//! the bottom of its stack and 40 calls deep, with both walks the quick end can take: the frame
//! records, and the unwind tables' rows (`sched::quick_end_walks_rows_only`, which code built
//! without frame pointers takes). Every `Down` carries the reason the process ended with, and
//! after it all the memory in use is what it was, to the page. Once a path's first end has
//! learnt its call sites, the later ends through it read nothing from the unwind tables.
//!
//! Built optimised, as the kernel runs: whether a frame has a landing pad is the compiler's
//! choice, and an unoptimised build keeps some that do nothing (a drop flag that is never set
//! at that call), which make ends that could be quick unwind instead.
//! qemu-test: configs=a72-smp1,a72-smp4
//! qemu-test: profile=release
//! qemu-test: expect=^test: quick end: 2 walks x 3 ends x 2 depths x 2 holdings x \d+ processes: every end as expected$
//! qemu-test: forbid=PANIC

#![no_std]
#![no_main]

extern crate alloc;

use core::sync::atomic::{AtomicU64, Ordering};

use beamcore::sched::{self, ExitReason, Message, Pid, SpawnOptions};
use beamcore::{ExitCode, println, smp};
use beamcore_apps::ensure;

/// Processes per case.
const PROCESSES: u64 = 40;
/// Calls between the process's entry and its end, for the deep cases.
const DEEP: u32 = 40;

/// Destructors run: one per `Guard` dropped.
static DROPS: AtomicU64 = AtomicU64::new(0);

/// Something a process owns whose drop is seen: the unwinder must run it.
struct Guard(u64);

impl Drop for Guard {
    fn drop(&mut self) {
        core::hint::black_box(self.0);
        DROPS.fetch_add(1, Ordering::Relaxed);
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum End {
    Exit,
    Panic,
    KilledInReceive,
}

/// The end itself, once `depth` calls down.
#[inline(never)]
fn end_here(end: End, n: u64, supervisor: Pid) -> u64 {
    match end {
        End::Exit => sched::exit(ExitReason::Exit(n)),
        End::Panic => panic!("process {n} panics on purpose"),
        End::KilledInReceive => {
            sched::send(supervisor, Message::Word(n)).expect("supervisor alive");
            // A word that never comes: the kill ends it here.
            match sched::receive_matching(|m| matches!(m, Message::Word(w) if *w == u64::MAX)) {
                Message::Word(w) => w,
                _ => 0,
            }
        }
    }
}

/// `depth` calls, each a frame of its own (the result is used after the call, so none is a
/// tail call), holding nothing; the guard, if any, lives in the outermost.
#[inline(never)]
fn descend(depth: u32, end: End, n: u64, supervisor: Pid) -> u64 {
    let below = if depth == 0 { end_here(end, n, supervisor) } else { descend(depth - 1, end, n, supervisor) };
    core::hint::black_box(below) + u64::from(depth)
}

/// A process holding a guard in its outermost frame: a landing pad at the call below drops it.
#[inline(never)]
fn holding(end: End, depth: u32, n: u64, supervisor: Pid) {
    let guard = Guard(n);
    core::hint::black_box(&guard);
    let result = descend(depth, end, n, supervisor);
    core::hint::black_box((result, guard));
}

/// A process holding nothing: no frame has a landing pad.
#[inline(never)]
fn bare(end: End, depth: u32, n: u64, supervisor: Pid) {
    let result = descend(depth, end, n, supervisor);
    core::hint::black_box(result);
}

/// Both counters summed over every core.
fn ends() -> (u64, u64) {
    (0..smp::cores_online()).fold((0, 0), |(quick, unwound), core| {
        let stats = sched::core_stats(core);
        (quick + stats.ends_at_once.load(Ordering::Relaxed), unwound + stats.ends_unwound.load(Ordering::Relaxed))
    })
}

/// One case: PROCESSES processes, each ending `end` at `depth` holding a guard or not.
fn case(end: End, depth: u32, holds: bool, me: Pid) -> Result<(), &'static str> {
    let (quick_before, unwound_before) = ends();
    let drops_before = DROPS.load(Ordering::Relaxed);
    let learnt_before = sched::quick_end_learning_passes();
    for n in 0..PROCESSES {
        let options = SpawnOptions::default().on_core(n as usize % smp::cores_online());
        let spawned = if holds {
            sched::spawn_monitor(options, move || holding(end, depth, n, me))
        } else {
            sched::spawn_monitor(options, move || bare(end, depth, n, me))
        };
        let (pid, reference) = spawned.map_err(|_| "spawn")?;
        if end == End::KilledInReceive {
            match sched::receive_timeout(60_000_000) {
                Some(Message::Word(w)) if w == n => {}
                _ => return Err("no word that the process waits"),
            }
            sched::kill(pid).map_err(|_| "kill")?;
        }
        let expected = match end {
            End::Exit => ExitReason::Exit(n),
            End::Panic => ExitReason::Panic,
            End::KilledInReceive => ExitReason::Killed,
        };
        match sched::receive_timeout(60_000_000) {
            Some(Message::Down { reference: r, pid: p, reason }) if r == reference && p == pid => {
                if reason != expected {
                    return Err("a Down with another reason");
                }
            }
            _ => return Err("no Down for the process"),
        }
    }
    let (quick, unwound) = ends();
    let (quick, unwound) = (quick - quick_before, unwound - unwound_before);
    let drops = DROPS.load(Ordering::Relaxed) - drops_before;
    let learnt = sched::quick_end_learning_passes() - learnt_before;
    println!(
        "{end:?} depth {depth} holding {holds}: {quick} ended at once, {unwound} unwound, {drops} destructors run, \
         {learnt} read the unwind tables"
    );
    // The processes of a case end one after another through one path: its first end learns
    // the path's call sites, and later ones find them kept. A few more may learn: the first
    // after the walk changed (begin's own frame), and for a kill the first at each of the few
    // safe points it can land at (measured: at most 3 of 40). Call sites that evict each other
    // in the caches make every end read the tables again (a layout cliff seen once: 11,103
    // instructions a link and exit instead of 1,691).
    if learnt > PROCESSES / 4 {
        return Err("ends through a path already learnt read the unwind tables again");
    }
    if drops != if holds { PROCESSES } else { 0 } {
        return Err("destructors run not once per guard");
    }
    if quick + unwound != PROCESSES {
        return Err("an end neither at once nor unwound");
    }
    if holds && unwound != PROCESSES {
        return Err("a process holding a guard was not unwound");
    }
    // A panic passes through the panic machinery's frames, which hold cleanups of their own:
    // whether it can end at once is theirs to say. The other ends hold nothing on the way.
    if !holds && end != End::Panic && quick != PROCESSES {
        return Err("a process holding nothing was unwound");
    }
    Ok(())
}

beamcore::entry!(main);

fn main() -> ExitCode {
    let me = sched::self_pid().unwrap();
    sched::set_crash_reports(false);
    // Warm up: the first ends learn the call sites.
    let _ = case(End::Exit, DEEP, false, me);
    let memory = sched::memory_in_use();
    for rows_only in [false, true] {
        sched::quick_end_walks_rows_only(rows_only);
        println!("walk: {}", if rows_only { "the unwind tables' rows" } else { "frame records" });
        for end in [End::Exit, End::Panic, End::KilledInReceive] {
            for depth in [0, DEEP] {
                for holds in [false, true] {
                    if let Err(why) = case(end, depth, holds, me) {
                        ensure!(false, "{end:?} depth {depth} holding {holds}, rows only {rows_only}: {why}");
                    }
                }
            }
        }
    }
    sched::quick_end_walks_rows_only(false);
    let now = sched::memory_in_use();
    ensure!(now.abs_diff(memory) < 4096, "memory in use {memory} bytes before, {now} after");
    println!(
        "test: quick end: 2 walks x 3 ends x 2 depths x 2 holdings x {PROCESSES} processes: every end as expected"
    );
    ExitCode::Success
}
