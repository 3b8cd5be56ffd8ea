//! Any core can interrupt any other: every ordered pair (A, B) of distinct cores, A sends one
//! SGI to B and B's handler counts exactly one from A, and none from itself.
//! qemu-test: configs=a72-smp4,a72-smp8,gicv3-smp16,el2-smp4,gicv3-smp64
//! qemu-test: forbid=PANIC

#![no_std]
#![no_main]

use beamcore::time::Deadline;
use beamcore::{ExitCode, println, smp};
use beamcore_apps::ensure;

fn ping_everyone(core: usize) {
    for other in (0..smp::cores_online()).filter(|&c| c != core) {
        smp::ping(other).expect("online core");
    }
}

/// How long every ping may take to arrive (host time without -icount; on a loaded 2-CPU host a
/// 64-core run takes a few seconds in all).
const ARRIVAL_BOUND_US: u64 = 20_000_000;

fn main() -> ExitCode {
    let cores = smp::cores_online();
    ensure!(cores >= 2, "needs at least two cores");
    if let Some(late) = (0..cores).find(|&c| !smp::core(c).is_online()) {
        ensure!(false, "core {late} of {cores} counted is not online");
    }
    ensure!(smp::run_on_all_and_wait(ping_everyone).is_ok(), "could not run on every core");
    let arrived = |b: usize| (0..cores).map(|a| smp::core(b).pings_from(a)).sum::<u32>() as usize;
    // Bounded: a lost SGI names the pairs it missed instead of running into the runner's deadline.
    let deadline = Deadline::after_us(ARRIVAL_BOUND_US);
    smp::wait_until(|| (0..cores).all(|b| arrived(b) >= cores - 1) || deadline.expired());
    for b in (0..cores).filter(|&b| arrived(b) < cores - 1) {
        let missing = (0..cores).filter(|&a| a != b && smp::core(b).pings_from(a) == 0);
        println!(
            "core {b} (online {}, {} interrupts taken): no ping yet from {:?}",
            smp::core(b).is_online(),
            smp::core(b).irqs(),
            missing.collect::<heapless::Vec<usize, 64>>()
        );
    }
    for b in 0..cores {
        for a in 0..cores {
            let got = smp::core(b).pings_from(a);
            let wanted = u32::from(a != b);
            ensure!(got == wanted, "core {b} counted {got} pings from core {a}, expected {wanted}");
        }
        ensure!(smp::core(b).unexpected_irqs() == 0, "core {b} took unexpected interrupts");
    }
    ensure!(smp::ping(cores).is_err(), "pinging a core that is not online must fail");
    println!("test: all {} ordered pairs delivered exactly one SGI", cores * (cores - 1));
    ExitCode::Success
}

beamcore::entry!(main);
