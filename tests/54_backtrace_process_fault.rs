//! A process that faults two calls deep and one that panics two calls deep each end with a
//! backtrace on the console naming those calls, innermost first: the fault's report starts at
//! the faulting instruction in `process_faulting_inner`, then `process_faulting_outer`; the
//! panic's names the panic machinery, then `process_panicking_inner`, then
//! `process_panicking_outer`; both end in the process's entry. A third process panics in
//! `process_inlined_check`, which the compiler inlines into whatever calls it and so has no
//! frame: its backtrace names it on an `inlined:` line under the frame it was folded into (the
//! image's inline table). The kernel goes on: main is told of every end by its monitors. They
//! run one after the other, so their reports are in a known order.
//! qemu-test: configs=a72-smp4,a72-smp1
//! qemu-test: expect-order=^process <\d+\.\d+> on core \d+ ended: fault: data abort \(same EL\) at 0x100000028 \(ELR=0x[0-9a-f]+\)$
//! qemu-test: expect-order=^backtrace:$
//! qemu-test: expect-order=^  #0 0x[0-9a-f]{16} _54_backtrace_process_fault::process_faulting_inner\+0x[0-9a-f]+$
//! qemu-test: expect-order=^  #1 0x[0-9a-f]{16} _54_backtrace_process_fault::process_faulting_outer\+0x[0-9a-f]+$
//! qemu-test: expect-order=^  #\d+ 0x[0-9a-f]{16} process_entry\+0x[0-9a-f]+$
//! qemu-test: expect-order=^  #\d+ 0x[0-9a-f]{16} context_process_start\+0x[0-9a-f]+$
//! qemu-test: expect-order=^process <\d+\.\d+> on core \d+ ended: panic: deliberate process panic two calls deep at tests/54_backtrace_process_fault\.rs:\d+$
//! qemu-test: expect-order=^backtrace:$
//! qemu-test: expect-order=^  #\d+ 0x[0-9a-f]{16} core::panicking::panic_fmt\+0x[0-9a-f]+$
//! qemu-test: expect-order=^  #\d+ 0x[0-9a-f]{16} _54_backtrace_process_fault::process_panicking_inner\+0x[0-9a-f]+$
//! qemu-test: expect-order=^  #\d+ 0x[0-9a-f]{16} _54_backtrace_process_fault::process_panicking_outer\+0x[0-9a-f]+$
//! qemu-test: expect-order=^  #\d+ 0x[0-9a-f]{16} process_entry\+0x[0-9a-f]+$
//! qemu-test: expect-order=^process <\d+\.\d+> on core \d+ ended: panic: deliberate panic in inlined code at tests/54_backtrace_process_fault\.rs:\d+$
//! qemu-test: expect-order=^backtrace:$
//! qemu-test: expect-order=^  #\d+ 0x[0-9a-f]{16} core::panicking::panic_fmt\+0x[0-9a-f]+$
//! qemu-test: expect-order=^  #\d+ 0x[0-9a-f]{16} \S+\+0x[0-9a-f]+$
//! qemu-test: expect-order=^       inlined: _54_backtrace_process_fault::process_inlined_check$
//! qemu-test: expect-order=^test: every process ended with its backtrace; the kernel went on$
//! qemu-test: forbid=PANIC|\(stopped|  #\d+ 0x[0-9a-f]{16} \?$

#![no_std]
#![no_main]

extern crate alloc;

use beamcore::sched::{self, ExitReason, Message, SpawnOptions};
use beamcore::{ExitCode, println, smp};
use beamcore_apps::ensure;

/// Loads from `address`, unmapped: the instruction the fault's backtrace starts at.
#[inline(never)]
fn process_faulting_inner(address: usize) -> u64 {
    // SAFETY: none: the load is meant to fault; the kernel ends this process only.
    unsafe { (core::hint::black_box(address) as *const u64).read_volatile() }
}

/// Calls the inner function, not as a tail call, so its own frame stays on the stack.
#[inline(never)]
fn process_faulting_outer(address: usize) -> u64 {
    core::hint::black_box(process_faulting_inner(address + 8)) + 1
}

#[inline(never)]
fn process_panicking_inner(depth: u64) -> u64 {
    if core::hint::black_box(depth) == 2 {
        panic!("deliberate process panic two calls deep");
    }
    depth
}

#[inline(never)]
fn process_panicking_outer(depth: u64) -> u64 {
    core::hint::black_box(process_panicking_inner(depth + 1)) + 1
}

/// Panics when `value` is 3; always inlined, so its code lies in its caller's frame.
#[inline(always)]
fn process_inlined_check(value: u64) -> u64 {
    if value == 3 {
        panic!("deliberate panic in inlined code");
    }
    value * 2
}

/// Spawns `body` on the last core, monitors it and waits for its end.
fn run_and_wait(body: fn()) -> Option<ExitReason> {
    let options = SpawnOptions::default().on_core(smp::cores_online() - 1);
    let pid = sched::spawn_with(options, move || {
        let _go = sched::receive();
        body();
    })
    .ok()?;
    sched::monitor(pid).ok()?;
    sched::send(pid, Message::Word(0)).ok()?;
    match sched::receive_timeout(10_000_000)? {
        Message::Down { pid: ended, reason, .. } if ended == pid => Some(reason),
        _ => None,
    }
}

fn main() -> ExitCode {
    let fault = run_and_wait(|| {
        // 4 GiB up: beyond the RAM of both virt (128 MiB at 1 GiB) and QEMU raspi4b (960 MiB
        // at 0) and above the Pi's peripheral window, so unmapped on both.
        core::hint::black_box(process_faulting_outer(0x1_0000_0020));
    });
    ensure!(
        fault == Some(ExitReason::Fault { class: 0x25, address: 0x1_0000_0028 }),
        "the faulting process ended {fault:?}"
    );
    let panic = run_and_wait(|| {
        core::hint::black_box(process_panicking_outer(1));
    });
    ensure!(panic == Some(ExitReason::Panic), "the panicking process ended {panic:?}");
    let inlined = run_and_wait(|| {
        core::hint::black_box(process_inlined_check(core::hint::black_box(3)));
    });
    ensure!(inlined == Some(ExitReason::Panic), "the process panicking in inlined code ended {inlined:?}");
    println!("test: every process ended with its backtrace; the kernel went on");
    ExitCode::Success
}

beamcore::entry!(main);
