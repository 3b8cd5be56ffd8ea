//! A process that faults, one that runs an undefined instruction, one that overflows its stack
//! and one that panics are ended with those reasons (their monitors are told, the console names
//! each); the other processes finish and the kernel goes on. The panicking process unwinds, so
//! the 4 KiB it held is freed; the faulting one cannot (a fault is not unwound), so the 4 KiB it
//! held is counted as not reclaimed.
//! qemu-test: configs=a72-smp4,a72-smp1
//! qemu-test: expect=^process <\d+\.\d+> on core \d+ ended: fault: data abort \(same EL\) at 0x18 \(ELR=
//! qemu-test: expect=^process <\d+\.\d+> on core \d+ ended: stack overflow
//! qemu-test: expect=^process <\d+\.\d+> on core \d+ ended: fault: undefined instruction \(EC 0, unknown reason\) at 0x
//! qemu-test: expect=^process <\d+\.\d+> on core \d+ ended: panic: deliberate panic with 4096 bytes held at tests/21_process_faults\.rs:\d+$
//! qemu-test: forbid=PANIC

#![no_std]
#![no_main]

extern crate alloc;

use beamcore::sched::{self, ExitReason, Message, SpawnOptions};
use beamcore::{ExitCode, println, smp};
use beamcore_apps::ensure;

#[inline(never)]
fn recurse(depth: u64) -> u64 {
    let buffer = core::hint::black_box([depth; 64]);
    if depth == u64::MAX { 0 } else { recurse(depth + 1) + buffer[3] }
}

fn main() -> ExitCode {
    let me = sched::self_pid().unwrap();
    let last = smp::cores_online() - 1;
    // Each faulty process waits for a go message, so the monitor is set before it ends.
    let faulty = sched::spawn_with(SpawnOptions::default().on_core(last), || {
        let _ = sched::receive();
        let held = core::hint::black_box(alloc::vec![7u8; 4096]);
        // SAFETY: none: the load is meant to fault (address 0x18 is unmapped).
        let value = unsafe { (0x18 as *const u64).read_volatile() };
        core::hint::black_box((value, held));
    });
    let overflowing = sched::spawn_with(SpawnOptions::default().stack_bytes(8192).on_core(last), || {
        let _ = sched::receive();
        core::hint::black_box(recurse(0));
    });
    let undefined = sched::spawn_with(SpawnOptions::default().on_core(0), || {
        let _ = sched::receive();
        // SAFETY: none: `udf` is meant to raise an undefined-instruction exception.
        unsafe { core::arch::asm!("udf #0x42") };
    });
    let panicking = sched::spawn_with(SpawnOptions::default().on_core(last), || {
        let _ = sched::receive();
        let held = core::hint::black_box(alloc::vec![7u8; 4096]);
        panic!("deliberate panic with {} bytes held", held.len());
    });
    ensure!(faulty.is_ok() && overflowing.is_ok() && undefined.is_ok() && panicking.is_ok(), "spawn");
    let (faulty, overflowing) = (faulty.unwrap(), overflowing.unwrap());
    let (undefined, panicking) = (undefined.unwrap(), panicking.unwrap());
    let not_reclaimed_before = sched::heap_not_reclaimed_bytes().expect("telemetry=full keeps heap balances");
    for pid in [faulty, overflowing, undefined, panicking] {
        ensure!(sched::monitor(pid).is_ok(), "monitor {pid}");
        ensure!(sched::send(pid, Message::Word(0)).is_ok(), "go {pid}");
    }
    for i in 0..8u64 {
        let spawned = sched::spawn_with(SpawnOptions::default().on_core(i as usize % (last + 1)), move || {
            sched::yield_now();
            let _ = sched::send(me, Message::Word(i));
        });
        ensure!(spawned.is_ok(), "spawn worker {i}");
    }
    let (mut workers, mut fault_seen, mut overflow_seen) = (0u32, false, false);
    let (mut undefined_seen, mut panic_seen) = (false, false);
    while workers != 0xff || !fault_seen || !overflow_seen || !undefined_seen || !panic_seen {
        match sched::receive_timeout(20_000_000) {
            Some(Message::Word(i)) => workers |= 1 << i,
            Some(Message::Down { pid, reason: ExitReason::Fault { class: 0x25, address: 0x18 }, .. })
                if pid == faulty =>
            {
                fault_seen = true
            }
            Some(Message::Down { pid, reason: ExitReason::StackOverflow, .. }) if pid == overflowing => {
                overflow_seen = true
            }
            // EC 0x00: unknown reason, which is what an undefined instruction raises.
            Some(Message::Down { pid, reason: ExitReason::Fault { class: 0x00, .. }, .. }) if pid == undefined => {
                undefined_seen = true
            }
            Some(Message::Down { pid, reason: ExitReason::Panic, .. }) if pid == panicking => panic_seen = true,
            other => ensure!(
                false,
                "unexpected {other:?} (workers {workers:#b}, fault {fault_seen}, overflow {overflow_seen})"
            ),
        }
    }
    for pid in [faulty, overflowing, undefined, panicking] {
        ensure!(!sched::is_alive(pid), "{pid} still alive");
    }
    let not_reclaimed = sched::heap_not_reclaimed_bytes().expect("telemetry=full") - not_reclaimed_before;
    // The fault's 4 KiB (and what its process's first turns allocated) only: the panic's was
    // unwound and freed.
    ensure!(
        (4096..8192).contains(&not_reclaimed),
        "heap not reclaimed after the fault and the panic: {not_reclaimed} bytes"
    );
    println!(
        "test: fault, undefined instruction, stack overflow and panic ended their processes \
         (the panic unwound; the fault's {not_reclaimed} heap bytes counted as not reclaimed); 8 workers finished"
    );
    ExitCode::Success
}

beamcore::entry!(main);
