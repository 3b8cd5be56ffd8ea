//! A fault taken by kernel work on a process's behalf (IRQs masked, a kernel lock held) is the
//! kernel's fault, reported with its `PANIC` line, never a silent freeze: the process cannot be
//! ended there without leaving the lock held for every other core. Here a process takes an
//! `IrqSpinLock` (as the kernel's own code does on its behalf) and faults while holding it.
//! qemu-test: configs=a72-smp4,a72-smp1
//! qemu-test: exit=1
//! qemu-test: expect=^exception: Synchronous CurrentElSp0 on core \d+: data abort \(same EL\)
//! qemu-test: expect=^PANIC core \d+: unexpected exception: data abort \(same EL\)$
//! qemu-test: forbid=ended:
//! qemu-test: timeout=60

#![no_std]
#![no_main]

use beamcore::sched::{self, Message};
use beamcore::sync::IrqSpinLock;
use beamcore::{ExitCode, println};

static LOCK: IrqSpinLock<u64> = IrqSpinLock::new(0);

fn main() -> ExitCode {
    let pid = sched::spawn(|| {
        let _go = sched::receive();
        let guard = LOCK.lock();
        // SAFETY: none: the load is meant to fault (address 0x10 is unmapped), with the lock held.
        let value = unsafe { (0x10 as *const u64).read_volatile() };
        println!("test failed: the load under the lock returned {value} ({})", *guard);
    })
    .expect("spawn");
    sched::send(pid, Message::Word(0)).expect("go");
    let _ = sched::receive_timeout(10_000_000);
    println!("test failed: the machine went on after a fault under a kernel lock");
    ExitCode::Success
}

beamcore::entry!(main);
