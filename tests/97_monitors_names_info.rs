//! Monitors with references, registered names, `process_info` and `set_priority`. Two
//! monitors on one process give two `Down`s, each with its own reference; `spawn_monitor` never
//! gives `noproc`, even for a process that ends at once; a monitor of an ended pid gives `noproc`
//! with the reference returned. `demonitor` before the end means no `Down` ever;
//! `demonitor(flush)` after the `Down` was queued takes it out and says the monitor was no longer
//! active. Names: register, whereis, send by name, every typed error, the name freed when its
//! process ends (and usable again), 10,000 names registered and each found. `process_info`
//! reports queue length, reductions, stack mapped, priority, core, links, monitors both ways, the
//! name and the trap flag; `set_priority` changes the priority.
//! qemu-test: configs=a72-smp1,a72-smp4,a72-smp8
//! qemu-test: expect=^test: monitors, names and process_info ok
//! qemu-test: forbid=PANIC
//! qemu-test: timeout=180

#![no_std]
#![no_main]

extern crate alloc;

use alloc::format;
use alloc::vec::Vec;

use beamcore::sched::{self, ExitReason, Message, Pid, Priority, RegisterError, SendError, Status};
use beamcore::{ExitCode, println, smp};
use beamcore_apps::ensure;
use beamcore_apps::testing::{receive_must_arrive, spread};

const NAMES: usize = 10_000;

/// A process that ends with `Exit(code)` when it receives a word, and answers nothing.
fn waiter(n: usize, code: u64) -> Pid {
    sched::spawn_with(spread(n), move || {
        let _ = sched::receive();
        sched::exit(ExitReason::Exit(code))
    })
    .expect("spawn")
}

/// Receives until the word `sentinel` (sent to ourselves), returning what came before it.
fn drain_to(sentinel: u64) -> Vec<Message> {
    let me = sched::self_pid().unwrap();
    sched::send(me, Message::Word(sentinel)).unwrap();
    let mut before = Vec::new();
    loop {
        match receive_must_arrive() {
            Some(Message::Word(w)) if w == sentinel => return before,
            Some(other) => before.push(other),
            None => return before,
        }
    }
}

fn main() -> ExitCode {
    let me = sched::self_pid().unwrap();
    let baseline = sched::process_count();

    // Two monitors, two Downs, each with its reference.
    let w = waiter(1, 1);
    let (a, b) = (sched::monitor(w).unwrap(), sched::monitor(w).unwrap());
    ensure!(a != b, "two monitors, two references");
    sched::send(w, Message::Word(0)).unwrap();
    let mut seen = [false; 2];
    for _ in 0..2 {
        match receive_must_arrive() {
            Some(Message::Down { pid, reason: ExitReason::Exit(1), reference }) if pid == w => {
                ensure!(reference == a || reference == b, "unknown reference {reference}");
                seen[usize::from(reference == b)] = true;
            }
            other => ensure!(false, "two monitors: {other:?}"),
        }
    }
    ensure!(seen == [true, true], "each reference once");
    let r = sched::monitor(w).unwrap();
    match receive_must_arrive() {
        Some(Message::Down { pid, reason: ExitReason::NoProc, reference }) if pid == w && reference == r => {}
        other => ensure!(false, "monitor of an ended pid: {other:?}"),
    }

    // spawn_monitor: set before the process can end.
    for case in 0..50 {
        let (pid, reference) =
            sched::spawn_monitor(spread(case), move || sched::exit(ExitReason::Exit(case as u64))).unwrap();
        match receive_must_arrive() {
            Some(Message::Down { pid: p, reason, reference: r })
                if p == pid && r == reference && reason == ExitReason::Exit(case as u64) => {}
            other => ensure!(false, "spawn_monitor case {case}: {other:?}"),
        }
    }

    // demonitor before the end: no Down for it, ever. Monitored first, so were the demonitor
    // ignored its Down would come before the second monitor's.
    let w = waiter(2, 2);
    let first = sched::monitor(w).unwrap();
    let second = sched::monitor(w).unwrap();
    ensure!(sched::demonitor(first, false), "demonitor of an active monitor");
    ensure!(!sched::demonitor(first, false), "demonitor twice");
    sched::send(w, Message::Word(0)).unwrap();
    match receive_must_arrive() {
        Some(Message::Down { reference, .. }) if reference == second => {}
        other => ensure!(false, "after demonitor: {other:?}"),
    }
    let rest = drain_to(7);
    ensure!(rest.is_empty(), "a Down after demonitor: {rest:?}");

    // demonitor with flush after the Down was queued: taken out.
    let w = waiter(3, 3);
    let ours = sched::monitor(w).unwrap();
    sched::send(w, Message::Word(0)).unwrap();
    // Wait until our Down is queued: the queue has one entry (we do not receive it).
    let mut spins = 0u64;
    while sched::process_info(me).is_some_and(|i| i.message_queue_len == 0) {
        sched::yield_now();
        spins += 1;
        ensure!(spins < 10_000_000, "the Down never came");
    }
    ensure!(!sched::demonitor(ours, true), "a monitor whose Down is queued is not active");
    ensure!(sched::process_info(me).is_some_and(|i| i.message_queue_len == 0), "flush took the Down out");

    // Names.
    let n = waiter(5, 5);
    ensure!(sched::register("", n) == Err(RegisterError::BadName), "empty name");
    ensure!(sched::register("server", n).is_ok(), "register");
    ensure!(sched::whereis("server") == Some(n), "whereis");
    ensure!(sched::register("server", me) == Err(RegisterError::NameTaken(n)), "taken name");
    ensure!(sched::register("other", n) == Err(RegisterError::AlreadyRegistered(n)), "second name");
    let info = sched::process_info(n).unwrap();
    ensure!(info.registered_name.as_deref() == Some("server"), "name in process_info");
    let watch = sched::monitor(n).unwrap();
    ensure!(sched::send_named("server", Message::Word(0)).is_ok(), "send by name");
    match receive_must_arrive() {
        Some(Message::Down { reference, reason: ExitReason::Exit(5), .. }) if reference == watch => {}
        other => ensure!(false, "named process ended: {other:?}"),
    }
    ensure!(sched::whereis("server").is_none(), "the name is freed when its process ends");
    ensure!(sched::send_named("server", Message::Word(0)) == Err(SendError::NotRegistered), "send to a free name");
    ensure!(sched::register("server", n) == Err(RegisterError::NoProc(n)), "register an ended pid");
    ensure!(sched::unregister("server") == Err(RegisterError::NotRegistered), "unregister a free name");
    ensure!(sched::register("server", me).is_ok(), "a freed name is usable again");
    ensure!(sched::unregister("server").is_ok(), "unregister");
    ensure!(sched::process_info(me).is_some_and(|i| i.registered_name.is_none()), "unregistered");

    // 10,000 names, each found.
    let base_names = sched::registered_count();
    let mut holders = Vec::with_capacity(NAMES);
    for i in 0..NAMES {
        let pid = sched::spawn(|| {
            let _ = sched::receive();
        })
        .unwrap();
        let name = format!("worker-{i}");
        ensure!(sched::register(&name, pid).is_ok(), "register {name}");
        holders.push(pid);
    }
    for (i, pid) in holders.iter().enumerate() {
        let name = format!("worker-{i}");
        ensure!(sched::whereis(&name) == Some(*pid), "whereis {name}");
    }
    ensure!(sched::registered_count() == base_names + NAMES, "{} names", sched::registered_count());
    for (i, pid) in holders.iter().enumerate() {
        sched::monitor(*pid).unwrap();
        sched::send_named(&format!("worker-{i}"), Message::Word(0)).unwrap();
    }
    for _ in 0..NAMES {
        ensure!(
            matches!(receive_must_arrive(), Some(Message::Down { reason: ExitReason::Normal, .. })),
            "worker ended"
        );
    }
    ensure!(sched::registered_count() == base_names, "names freed: {} left", sched::registered_count());

    // process_info and set_priority.
    let p = sched::spawn_with(spread(6), move || {
        sched::trap_exits(true);
        sched::link(me).unwrap();
        sched::bump_reductions(1_000);
        ensure_priority();
        sched::send(me, Message::Word(1)).unwrap();
        // Waits for three words without taking them: yields until told by the fourth.
        while sched::process_info(sched::self_pid().unwrap()).is_some_and(|i| i.message_queue_len < 4) {
            sched::yield_now();
        }
        let _ = sched::receive();
    })
    .unwrap();
    let watch_p = sched::monitor(p).unwrap();
    match receive_must_arrive() {
        Some(Message::Word(1)) => {}
        other => ensure!(false, "info process ready: {other:?}"),
    }
    ensure!(sched::register("info", p).is_ok(), "register info");
    for i in 0..3 {
        sched::send(p, Message::Word(i)).unwrap();
    }
    let info = sched::process_info(p).unwrap();
    ensure!(info.message_queue_len == 3, "queue length {}", info.message_queue_len);
    ensure!(info.reductions >= 1_000, "reductions {}", info.reductions);
    ensure!(info.stack_bytes_mapped >= 4096, "stack {}", info.stack_bytes_mapped);
    ensure!(info.priority == Priority::Low, "priority {:?}", info.priority);
    ensure!(info.core < smp::cores_online(), "core {}", info.core);
    ensure!(info.links == [me], "links {:?}", info.links);
    ensure!(info.monitored_by == [me], "monitored by {:?}", info.monitored_by);
    ensure!(info.trap_exits, "trap flag");
    ensure!(info.registered_name.as_deref() == Some("info"), "name");
    ensure!(sched::process_info(me).is_some_and(|i| i.monitors.contains(&p) && i.links == [p]), "our side");
    sched::unlink(p);
    sched::send(p, Message::Word(3)).unwrap();
    match receive_must_arrive() {
        Some(Message::Down { reference, reason: ExitReason::Normal, .. }) if reference == watch_p => {}
        other => ensure!(false, "info process ended: {other:?}"),
    }
    let waiting = waiter(7, 7);
    let mut spins = 0u64;
    while sched::process_info(waiting).is_some_and(|i| i.status != Status::Waiting) {
        sched::yield_now();
        spins += 1;
        ensure!(spins < 10_000_000, "never waited");
    }
    sched::kill(waiting).unwrap();
    ensure!(sched::process_info(n).is_none(), "no info for an ended pid");

    let mut spins = 0u64;
    while sched::process_count() != baseline {
        sched::yield_now();
        spins += 1;
        ensure!(spins < 10_000_000, "{} processes alive, {baseline} at the start", sched::process_count());
    }
    let rest = drain_to(9);
    ensure!(rest.is_empty(), "left over: {rest:?}");
    println!("test: monitors, names and process_info ok");
    ExitCode::Success
}

/// Lowers the caller to low (a high process polling with yields would starve a normal one on its core), checking what `set_priority` returns.
fn ensure_priority() {
    let old = sched::set_priority(Priority::Low);
    assert_eq!(old, Priority::Normal, "spawned at normal");
}

beamcore::entry!(main);
