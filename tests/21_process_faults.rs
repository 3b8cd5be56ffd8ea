//! A process that faults and one that overflows its stack are ended with those reasons; the
//! other processes finish and the kernel goes on.
//! qemu-test: configs=a72-smp4,a72-smp1
//! qemu-test: expect=^process <\d+\.\d+> on core \d+ ended: fault: data abort \(same EL\) at 0x18 \(ELR=
//! qemu-test: expect=^process <\d+\.\d+> on core \d+ ended: stack overflow
//! qemu-test: forbid=PANIC

#![no_std]
#![no_main]

use beamcore::sched::{self, ExitReason, Message, SpawnOptions};
use beamcore::{ExitCode, ensure, println, smp};

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
        // SAFETY: none: the load is meant to fault (address 0x18 is unmapped).
        let value = unsafe { (0x18 as *const u64).read_volatile() };
        core::hint::black_box(value);
    });
    let overflowing = sched::spawn_with(SpawnOptions::default().stack_bytes(8192).on_core(last), || {
        let _ = sched::receive();
        core::hint::black_box(recurse(0));
    });
    ensure!(faulty.is_ok() && overflowing.is_ok(), "spawn");
    let (faulty, overflowing) = (faulty.unwrap(), overflowing.unwrap());
    for pid in [faulty, overflowing] {
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
    while workers != 0xff || !fault_seen || !overflow_seen {
        match sched::receive_timeout(20_000_000) {
            Some(Message::Word(i)) => workers |= 1 << i,
            Some(Message::Down { pid, reason: ExitReason::Fault { class: 0x25, address: 0x18 } }) if pid == faulty => {
                fault_seen = true
            }
            Some(Message::Down { pid, reason: ExitReason::StackOverflow }) if pid == overflowing => {
                overflow_seen = true
            }
            other => ensure!(
                false,
                "unexpected {other:?} (workers {workers:#b}, fault {fault_seen}, overflow {overflow_seen})"
            ),
        }
    }
    ensure!(!sched::is_alive(faulty) && !sched::is_alive(overflowing), "faulty processes still alive");
    println!("test: fault and stack overflow ended their processes; 8 workers finished");
    ExitCode::Success
}

beamcore::entry!(main);
