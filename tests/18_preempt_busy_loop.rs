//! A process in an endless loop that never yields is preempted by the timer: the processes
//! beside it on the same core still finish, and it can be killed.
//! qemu-test: configs=a72-smp4,a72-smp1
//! qemu-test: forbid=PANIC

#![no_std]
#![no_main]

use beamcore::sched::{self, ExitReason, Message, SpawnOptions};
use beamcore::{ExitCode, println, smp};
use beamcore_apps::ensure;

fn main() -> ExitCode {
    let me = sched::self_pid().unwrap();
    let core = smp::cores_online() - 1;
    let spinner = sched::spawn_with(SpawnOptions::default().bound_to(core), || {
        let mut x: u64 = 0;
        loop {
            x = core::hint::black_box(x.wrapping_add(1));
        }
    });
    ensure!(spinner.is_ok(), "spawn spinner");
    let spinner = spinner.unwrap();
    for i in 0..5u64 {
        let worker = sched::spawn_with(SpawnOptions::default().bound_to(core), move || {
            let mut sum = 0u64;
            for k in 0..100_000u64 {
                sum = core::hint::black_box(sum + k);
            }
            let _ = sched::send(me, Message::Word(i + sum - sum));
        });
        ensure!(worker.is_ok(), "spawn worker {i}");
    }
    let mut seen = 0u32;
    for _ in 0..5 {
        match sched::receive_timeout(20_000_000) {
            Some(Message::Word(i)) => seen |= 1 << i,
            other => ensure!(false, "worker message missing: {other:?} (finished: {seen:#b})"),
        }
    }
    ensure!(seen == 0b11111, "workers finished: {seen:#b}");
    let preemptions = sched::core_stats(core).preemptions.load(core::sync::atomic::Ordering::Relaxed);
    ensure!(preemptions > 0, "no preemption counted on core {core}");
    ensure!(sched::monitor(spinner).is_ok(), "monitor spinner");
    ensure!(sched::kill(spinner).is_ok(), "kill spinner");
    match sched::receive_timeout(20_000_000) {
        Some(Message::Down { pid, reason: ExitReason::Killed, .. }) if pid == spinner => {}
        other => ensure!(false, "expected the spinner's Down(Killed), got {other:?}"),
    }
    println!("test: 5 workers finished beside an endless loop on core {core} ({preemptions} preemptions); loop killed");
    ExitCode::Success
}

beamcore::entry!(main);
