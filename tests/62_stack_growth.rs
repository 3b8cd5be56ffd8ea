//! Stacks grow on demand. A process that may grow to 2 MiB recurses 1 MiB deep (a page fault
//! per new page, mapped and resumed) and completes with the right sum; one that may grow to
//! 64 KiB recurses without end and ends with "stack overflow", its monitor told; one parked with
//! its stack pointer just above the last mapped page is preempted there, so the kernel must map
//! room for the registers it saves below it (it would otherwise fault in the timer interrupt);
//! workers counting meanwhile are untouched; and the pages the deep one grew are free again once
//! it has ended.
//! qemu-test: configs=a72-smp4,a72-smp1
//! qemu-test: expect=^process <\d+\.\d+> on core \d+ ended: stack overflow
//! qemu-test: forbid=PANIC
//! qemu-test: timeout=120

#![no_std]
#![no_main]

use core::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use beamcore::arch::cpu;
use beamcore::sched::{self, ExitReason, Message, SpawnOptions};
use beamcore::{ExitCode, println, smp, time};
use beamcore_apps::ensure;

/// Bytes of each level's buffer: about a kilobyte a level.
const LEVEL_BYTES: usize = 1000;
/// The deepest stack pointer `deep` reached, below its first frame.
static DEEPEST: AtomicUsize = AtomicUsize::new(0);

fn stack_pointer() -> usize {
    let sp: usize;
    // SAFETY: reads SP; no memory access.
    unsafe { core::arch::asm!("mov {}, sp", out(reg) sp, options(nomem, nostack, preserves_flags)) };
    sp
}

/// Recurses until `depth` reaches 0 with a buffer per level; sums every buffer (so none is
/// optimised away) and notes how deep the stack went.
#[inline(never)]
fn deep(depth: u64, start: usize) -> u64 {
    let buffer = core::hint::black_box([depth as u8; LEVEL_BYTES]);
    if depth == 0 {
        DEEPEST.store(start - stack_pointer(), Ordering::Relaxed);
        return 0;
    }
    let below = deep(depth - 1, start);
    below + buffer.iter().map(|&b| u64::from(b)).sum::<u64>() / LEVEL_BYTES as u64
}

#[inline(never)]
fn endless(depth: u64) -> u64 {
    let buffer = core::hint::black_box([depth; 64]);
    if depth == u64::MAX { 0 } else { endless(depth + 1) + buffer[3] }
}

/// Moves the stack pointer to 256 bytes above the boundary of its page (or of the page below)
/// and spins there, touching nothing on the stack, until `*preemptions` reaches `enough` or the
/// counter passes `until`; then restores it.
fn park_just_above_a_page_boundary(preemptions: &AtomicU64, enough: u64, until: u64) {
    let sp = stack_pointer();
    let boundary = sp & !4095;
    let parked = if sp - boundary >= 256 + 16 { boundary + 256 } else { boundary - 4096 + 256 };
    // SAFETY: SP moves down into the process's own stack (below everything in use: nothing is
    // overwritten) and back; the loop touches no memory. A tick meanwhile saves the registers
    // below the parked SP, which the kernel must map first.
    unsafe {
        core::arch::asm!(
            "mov {saved}, sp",
            "mov sp, {parked}",
            "2:",
            "ldr {now}, [{preemptions}]",
            "cmp {now}, {enough}",
            "b.hs 3f",
            "isb",
            "mrs {now}, cntpct_el0",
            "cmp {now}, {until}",
            "b.lo 2b",
            "3:",
            "mov sp, {saved}",
            saved = out(reg) _,
            now = out(reg) _,
            parked = in(reg) parked,
            preemptions = in(reg) preemptions.as_ptr(),
            enough = in(reg) enough,
            until = in(reg) until,
        )
    };
}

fn main() -> ExitCode {
    let me = sched::self_pid().unwrap();
    let cores = smp::cores_online();
    let last = cores - 1;
    let memory_before = sched::memory_in_use();

    // 1,024 levels of a kilobyte: 1 MiB deep in a stack that may reach 2 MiB.
    let levels = 1024u64;
    // Monitored as they are spawned: a monitor set after the spawn can find a process that already
    // ended (the deep one runs on main's core and may finish first), and reports `noproc`.
    let deep_one = sched::spawn_monitor(SpawnOptions::default().stack_bytes(2 << 20).on_core(0), move || {
        let start = stack_pointer();
        let sum = deep(levels, start);
        let _ = sched::send(me, Message::Word(sum));
    });
    let overflowing = sched::spawn_monitor(SpawnOptions::default().stack_bytes(64 << 10).on_core(last), || {
        let _ = sched::receive();
        core::hint::black_box(endless(0));
    });
    ensure!(deep_one.is_ok() && overflowing.is_ok(), "spawn");
    let (deep_one, overflowing) = (deep_one.unwrap().0, overflowing.unwrap().0);
    ensure!(sched::send(overflowing, Message::Word(0)).is_ok(), "go");

    // Parked on the last core (alone there but for the overflowing one, which ends at once):
    // its slices end by the timer while its stack pointer is 256 bytes above unmapped memory.
    let preemptions_before = sched::core_stats(last).preemptions.load(Ordering::Relaxed);
    let parked = sched::spawn_with(SpawnOptions::default().bound_to(last), move || {
        let _ = sched::receive();
        let preemptions = &sched::core_stats(last).preemptions;
        let enough = preemptions.load(Ordering::Relaxed) + 3;
        let until = cpu::counter() + time::us_to_counts(10_000_000);
        park_just_above_a_page_boundary(preemptions, enough, until);
        let _ = sched::send(me, Message::Word(u64::MAX));
    });
    ensure!(parked.is_ok(), "spawn the parked one");
    ensure!(sched::send(parked.unwrap(), Message::Word(0)).is_ok(), "go parked");

    for i in 0..8u64 {
        let spawned = sched::spawn_with(SpawnOptions::default().on_core(i as usize % cores), move || {
            let mut x = 0u64;
            for step in 0..20_000u64 {
                x = core::hint::black_box(x.wrapping_add(step));
            }
            let _ = sched::send(me, Message::Word(1 << 32 | i));
            core::hint::black_box(x);
        });
        ensure!(spawned.is_ok(), "spawn worker {i}");
    }

    let (mut workers, mut sum, mut deep_ended, mut overflowed, mut parked_done) = (0u32, None, false, false, false);
    while workers != 0xff || sum.is_none() || !deep_ended || !overflowed || !parked_done {
        match sched::receive_timeout(60_000_000) {
            Some(Message::Word(u64::MAX)) => parked_done = true,
            Some(Message::Word(word)) if word >> 32 == 1 => workers |= 1 << (word & 0xff),
            Some(Message::Word(word)) => sum = Some(word),
            Some(Message::Down { pid, reason: ExitReason::Normal, .. }) if pid == deep_one => deep_ended = true,
            Some(Message::Down { pid, reason: ExitReason::StackOverflow, .. }) if pid == overflowing => {
                overflowed = true
            }
            other => ensure!(false, "unexpected {other:?} (workers {workers:#x}, sum {sum:?})"),
        }
    }
    // Each level adds its depth byte: 1 + 2 + ... + 255 and so on, wrapping at 256.
    let expected: u64 = (1..=levels).map(|depth| depth % 256).sum();
    ensure!(sum == Some(expected), "deep recursion summed {sum:?}, expected {expected}");
    let deepest = DEEPEST.load(Ordering::Relaxed);
    ensure!(deepest >= 1 << 20, "the deep one reached only {deepest} bytes below its start");
    let preemptions = sched::core_stats(last).preemptions.load(Ordering::Relaxed) - preemptions_before;
    ensure!(preemptions >= 3, "the parked process was preempted {preemptions} times, expected 3 or more");
    while sched::process_count() > 1 {
        sched::yield_now();
    }
    let memory_after = sched::memory_in_use();
    ensure!(
        memory_after < memory_before + (256 << 10),
        "{} KiB more in use after the deep stack ended ({memory_before} -> {memory_after} bytes)",
        (memory_after - memory_before) >> 10
    );
    println!(
        "test: a stack grew to {} KiB and its process ended normally; a 64 KiB one overflowed (monitor told); a \
         process parked 256 bytes above unmapped stack was preempted {preemptions} times; 8 workers finished; \
         memory back to within {} KiB",
        deepest >> 10,
        memory_after.saturating_sub(memory_before) >> 10
    );
    ExitCode::Success
}

beamcore::entry!(main);
