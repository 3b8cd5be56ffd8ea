//! Exclusives (LDXR/STXR) work between cores once the MMU maps RAM Normal inner-shareable:
//! every core adds 20,000 times to a shared atomic and to a lock-protected counter; both
//! totals are exact.
//! qemu-test: configs=a72-smp4,a53-smp4,max-smp4,gicv3-smp16
//! qemu-test: forbid=PANIC

#![no_std]
#![no_main]

use core::sync::atomic::{AtomicU64, Ordering};

use beamcore::sync::IrqSpinLock;
use beamcore::{ExitCode, println, smp};
use beamcore_apps::ensure;

const ROUNDS: u64 = 20_000;
static ATOMIC_TOTAL: AtomicU64 = AtomicU64::new(0);
static LOCKED_TOTAL: IrqSpinLock<u64> = IrqSpinLock::new(0);

fn hammer(_core: usize) {
    for _ in 0..ROUNDS {
        ATOMIC_TOTAL.fetch_add(1, Ordering::Relaxed);
        *LOCKED_TOTAL.lock() += 1;
    }
}

fn main() -> ExitCode {
    let cores = smp::cores_online() as u64;
    ensure!(smp::run_on_all_and_wait(hammer).is_ok(), "could not run on every core");
    let atomic = ATOMIC_TOTAL.load(Ordering::Relaxed);
    let locked = *LOCKED_TOTAL.lock();
    ensure!(atomic == cores * ROUNDS, "atomic total {atomic}, expected {}", cores * ROUNDS);
    ensure!(locked == cores * ROUNDS, "locked total {locked}, expected {}", cores * ROUNDS);
    println!("test: {cores} cores x {ROUNDS} increments: atomic and locked totals exact ({atomic})");
    ExitCode::Success
}

beamcore::entry!(main);
