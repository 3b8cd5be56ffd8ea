//! On one core, max runs before high before normal/low, and a low process queued ahead of a
//! normal one still runs after it (it is passed over first).
//! qemu-test: configs=a72-smp4
//! qemu-test: forbid=PANIC

#![no_std]
#![no_main]

use core::sync::atomic::{AtomicUsize, Ordering};

use beamcore::sched::{self, Message, Priority, SpawnOptions};
use beamcore::{ExitCode, println};
use beamcore_apps::ensure;

static LOG: [AtomicUsize; 8] = [const { AtomicUsize::new(usize::MAX) }; 8];
static NEXT: AtomicUsize = AtomicUsize::new(0);

fn record(priority: Priority) {
    LOG[NEXT.fetch_add(1, Ordering::Relaxed)].store(priority as usize, Ordering::Relaxed);
}

fn main() -> ExitCode {
    let me = sched::self_pid().unwrap();
    // A max-priority spawner on core 1 queues children there without letting any run first
    // (it never yields while spawning); lowest priority first, so queue order alone would be
    // the reverse of the expected run order.
    let spawner = SpawnOptions::default().priority(Priority::Max).bound_to(1);
    let spawned = sched::spawn_with(spawner, move || {
        for priority in [Priority::Low, Priority::Normal, Priority::High, Priority::Max] {
            let options = SpawnOptions::default().priority(priority).bound_to(1);
            sched::spawn_with(options, move || {
                record(priority);
                if NEXT.load(Ordering::Relaxed) == 4 {
                    let _ = sched::send(me, Message::Word(4));
                }
            })
            .expect("spawn child");
        }
    });
    ensure!(spawned.is_ok(), "spawn failed: {spawned:?}");
    let done = sched::receive_timeout(5_000_000);
    ensure!(matches!(done, Some(Message::Word(4))), "children did not all run: {done:?}");
    let order: [usize; 4] = core::array::from_fn(|i| LOG[i].load(Ordering::Relaxed));
    let expected = [Priority::Max as usize, Priority::High as usize, Priority::Normal as usize, Priority::Low as usize];
    ensure!(order == expected, "run order {order:?}, expected {expected:?} (max, high, normal, low)");
    println!("test: ran in order max, high, normal, low (low was queued first)");
    ExitCode::Success
}

beamcore::entry!(main);
