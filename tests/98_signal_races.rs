//! The races of the signal protocol, each run many times across cores, each counted exactly:
//! a link set while its target ends (exactly one `Exit`: its reason, or `noproc`); a monitor
//! set while its target ends (exactly one `Down`); two processes linking each other while both
//! end (nothing lost, nothing left: every process gone, no crash); an exit signal to a pid
//! whose slot a newer process took (refused, the newer one unharmed); a name registered while
//! its owner ends (after the end, the name is free either way).
//! qemu-test: configs=a72-smp4,a72-smp8,a72-smp1
//! qemu-test: expect=^test: signal races ok
//! qemu-test: forbid=PANIC
//! qemu-test: timeout=300

#![no_std]
#![no_main]

extern crate alloc;

use alloc::boxed::Box;
use alloc::format;

use beamcore::sched::{self, ExitReason, Message, Pid, SendError, SpawnOptions};
use beamcore::{ExitCode, println, smp};
use beamcore_apps::ensure;
use beamcore_apps::testing::receive_must_arrive;

const ROUNDS: u64 = 1_000;

fn other_core(n: u64) -> SpawnOptions {
    let cores = smp::cores_online();
    SpawnOptions::default().on_core(if cores == 1 { 0 } else { 1 + n as usize % (cores - 1) })
}

/// Receives until the word `sentinel` (sent to ourselves); counts what came before it.
fn leftovers(sentinel: u64) -> usize {
    let me = sched::self_pid().unwrap();
    sched::send(me, Message::Word(sentinel)).unwrap();
    let mut count = 0;
    loop {
        match receive_must_arrive() {
            Some(Message::Word(w)) if w == sentinel => return count,
            Some(_) => count += 1,
            None => return usize::MAX,
        }
    }
}

fn main() -> ExitCode {
    let me = sched::self_pid().unwrap();
    let baseline = sched::process_count();
    sched::trap_exits(true);

    // A link set while the target ends: exactly one Exit per round.
    let (mut real, mut noproc) = (0, 0);
    for round in 0..ROUNDS {
        let t = sched::spawn_with(other_core(round), move || sched::exit(ExitReason::Exit(round))).unwrap();
        sched::link(t).unwrap();
        match receive_must_arrive() {
            Some(Message::Exit { from, reason }) if from == t && reason == ExitReason::Exit(round) => real += 1,
            Some(Message::Exit { from, reason: ExitReason::NoProc }) if from == t => noproc += 1,
            other => ensure!(false, "link race round {round}: {other:?}"),
        }
    }
    ensure!(leftovers(u64::MAX) == 0, "a second Exit in the link race");

    // A monitor set while the target ends: exactly one Down per round.
    let (mut down_real, mut down_noproc) = (0, 0);
    for round in 0..ROUNDS {
        let t = sched::spawn_with(other_core(round), move || sched::exit(ExitReason::Exit(round))).unwrap();
        let reference = sched::monitor(t).unwrap();
        match receive_must_arrive() {
            Some(Message::Down { pid, reason, reference: r }) if pid == t && r == reference => {
                if reason == ExitReason::NoProc {
                    down_noproc += 1
                } else {
                    ensure!(reason == ExitReason::Exit(round), "round {round}: reason {reason}");
                    down_real += 1
                }
            }
            other => ensure!(false, "monitor race round {round}: {other:?}"),
        }
    }
    ensure!(leftovers(u64::MAX) == 0, "a second Down in the monitor race");

    // Two processes linking each other while both end. Each links the other (whose pid it is
    // sent), then ends with a reason of its own; neither traps. Each end is watched: the end is
    // its own reason or the other's (the other's exit signal came first), never anything else.
    for round in 0..ROUNDS {
        let body = move || {
            let Message::Boxed(other) = sched::receive() else { return };
            let Ok(other) = other.downcast::<Pid>() else { return };
            sched::link(*other).unwrap();
            sched::exit(ExitReason::Exit(round))
        };
        let (a, ra) = sched::spawn_monitor(other_core(round), body).unwrap();
        let (b, rb) = sched::spawn_monitor(other_core(round + 1), body).unwrap();
        sched::send(a, Message::Boxed(Box::new(b))).unwrap();
        // `b` may have ended already: `a` linked to it and ended, and took it along.
        let sent = sched::send(b, Message::Boxed(Box::new(a)));
        ensure!(matches!(sent, Ok(()) | Err(SendError::NoProc(_))), "send to b: {sent:?}");
        for _ in 0..2 {
            match receive_must_arrive() {
                Some(Message::Down { reference, reason, .. }) if reference == ra || reference == rb => ensure!(
                    matches!(reason, ExitReason::Exit(r) if r == round) || reason == ExitReason::NoProc,
                    "mutual link round {round}: {reason}"
                ),
                other => ensure!(false, "mutual link round {round}: {other:?}"),
            }
        }
    }
    ensure!(leftovers(u64::MAX) == 0, "left over after the mutual links");

    // An exit signal to a pid whose slot was reused: refused; the newer process is unharmed.
    let mut reused = 0;
    for round in 0..ROUNDS {
        let (old, r) = sched::spawn_monitor(other_core(round), || {}).unwrap();
        ensure!(matches!(receive_must_arrive(), Some(Message::Down { reference, .. }) if reference == r), "old ended");
        let newer = sched::spawn_with(other_core(round), move || {
            if let Message::Word(w) = sched::receive() {
                sched::send(me, Message::Word(w + 1)).unwrap();
            }
        })
        .unwrap();
        reused += u64::from(newer.index() == old.index());
        ensure!(sched::send_exit(old, ExitReason::Shutdown) == Err(SendError::NoProc(old)), "stale send_exit");
        ensure!(sched::link(old).is_ok(), "link to a stale pid");
        ensure!(
            matches!(receive_must_arrive(), Some(Message::Exit { from, reason: ExitReason::NoProc }) if from == old),
            "noproc"
        );
        sched::send(newer, Message::Word(round)).unwrap();
        ensure!(
            matches!(receive_must_arrive(), Some(Message::Word(w)) if w == round + 1),
            "the newer process answered"
        );
    }
    ensure!(reused > ROUNDS / 2, "slots were reused in only {reused} of {ROUNDS} rounds");

    // A name registered while its owner ends: after the end the name is free, either way.
    let (mut registered, mut refused) = (0, 0);
    for round in 0..ROUNDS {
        let (owner, r) = sched::spawn_monitor(other_core(round), || {}).unwrap();
        let name = format!("racer-{round}");
        match sched::register(&name, owner) {
            Ok(()) => registered += 1,
            Err(sched::RegisterError::NoProc(_)) => refused += 1,
            Err(error) => ensure!(false, "register {name}: {error}"),
        }
        ensure!(
            matches!(receive_must_arrive(), Some(Message::Down { reference, .. }) if reference == r),
            "owner ended"
        );
        ensure!(sched::whereis(&name).is_none(), "{name} outlived its process");
    }
    ensure!(sched::registered_count() == 0, "{} names left", sched::registered_count());

    let mut spins = 0u64;
    while sched::process_count() != baseline {
        sched::yield_now();
        spins += 1;
        ensure!(spins < 10_000_000, "{} processes alive, {baseline} at the start", sched::process_count());
    }
    println!(
        "test: signal races ok (link: {real} exits, {noproc} noproc; monitor: {down_real} downs, {down_noproc} \
         noproc; slot reused in {reused} rounds; names: {registered} registered, {refused} refused)"
    );
    ExitCode::Success
}

beamcore::entry!(main);
