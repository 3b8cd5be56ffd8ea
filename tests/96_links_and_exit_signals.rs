//! Links and exit signals, Erlang's rules: a linked process's end sends its reason to the other
//! end; one that does not trap exits dies with the same reason (and ignores `normal`), one that
//! traps receives `Exit { from, reason }`; `unlink` stops it; `send_exit` works without a link;
//! `kill` cannot be trapped and reaches links as `killed`; a link to an ended process gives
//! `noproc`; `spawn_link` links from birth; `send_exit(self, normal)` ends the caller; an exit
//! signal to a pid whose slot was reused is refused and harms nobody; and a process's messages
//! all arrive before its exit signal or `Down` (the one ordering guarantee). Each case on
//! processes placed on other cores where there are some.
//! qemu-test: configs=a72-smp1,a72-smp4,a72-smp8,gicv3-smp64
//! qemu-test: expect=^test: links and exit signals ok
//! qemu-test: forbid=PANIC
//! qemu-test: timeout=180

#![no_std]
#![no_main]

use beamcore::sched::{self, ExitReason, Message, Pid, SendError, SpawnOptions};
use beamcore::{ExitCode, println};
use beamcore_apps::ensure;
use beamcore_apps::testing::{receive_must_arrive, spread};

/// A process that waits for a word, then ends with `reason` (a word 0 means "end normally").
fn ender(n: usize, reason: ExitReason) -> Pid {
    sched::spawn_with(spread(n), move || {
        let _ = sched::receive();
        sched::exit(reason)
    })
    .expect("spawn")
}

/// A process that links to `target`, reports to `parent` that it has, then answers every word
/// it receives with the word + 1 (so it can be asked whether it lives).
fn linked_echo(n: usize, target: Pid, parent: Pid) -> Pid {
    sched::spawn_with(spread(n + 1), move || {
        sched::link(target).expect("link");
        sched::send(parent, Message::Word(1)).expect("parent");
        loop {
            if let Message::Word(w) = sched::receive() {
                sched::send(parent, Message::Word(w + 1)).expect("parent");
            }
        }
    })
    .expect("spawn")
}

fn expect_word(expected: u64) -> Result<(), Message> {
    match receive_must_arrive() {
        Some(Message::Word(w)) if w == expected => Ok(()),
        Some(other) => Err(other),
        None => Err(Message::Word(u64::MAX)),
    }
}

fn expect_exit(from: Pid, reason: ExitReason) -> Result<(), Message> {
    match receive_must_arrive() {
        Some(Message::Exit { from: f, reason: r }) if f == from && r == reason => Ok(()),
        Some(other) => Err(other),
        None => Err(Message::Word(u64::MAX)),
    }
}

fn expect_down(pid: Pid, reason: ExitReason) -> Result<(), Message> {
    match receive_must_arrive() {
        Some(Message::Down { pid: p, reason: r, .. }) if p == pid && r == reason => Ok(()),
        Some(other) => Err(other),
        None => Err(Message::Word(u64::MAX)),
    }
}

fn main() -> ExitCode {
    let me = sched::self_pid().unwrap();
    let baseline = sched::process_count();
    ensure!(!sched::trap_exits(true), "trap_exits starts off");

    // 1. A trapping process receives its link's reason as a message.
    let w = ender(1, ExitReason::Exit(3));
    sched::link(w).expect("link");
    sched::send(w, Message::Word(0)).unwrap();
    let got = expect_exit(w, ExitReason::Exit(3));
    ensure!(got.is_ok(), "trapped Exit(3) from a link: {got:?}");

    // 2. A process that does not trap dies with its link's reason; 3. it ignores `normal`.
    for (case, reason) in [(2, ExitReason::Exit(5)), (3, ExitReason::Normal), (4, ExitReason::Shutdown)] {
        let w = ender(case, reason);
        let m = linked_echo(case, w, me);
        ensure!(expect_word(1).is_ok(), "case {case}: linked");
        sched::monitor(m).expect("monitor");
        let watch_w = sched::monitor(w).expect("monitor");
        sched::send(w, Message::Word(0)).unwrap();
        if reason == ExitReason::Normal {
            // Its Down comes after its links were told (`signals::on_end`).
            match receive_must_arrive() {
                Some(Message::Down { reference, reason: ExitReason::Normal, .. }) if reference == watch_w => {}
                other => ensure!(false, "case {case}: the normal end's Down: {other:?}"),
            }
            // Still alive: it answers.
            sched::send(m, Message::Word(10)).unwrap();
            let got = expect_word(11);
            ensure!(got.is_ok(), "a non-trapping process linked to one that ended normally died: {got:?}");
            ensure!(sched::process_info(m).is_some_and(|i| i.links.is_empty()), "the link is gone after the end");
            sched::kill(m).unwrap();
            let got = expect_down(m, ExitReason::Killed);
            ensure!(got.is_ok(), "killed echo: {got:?}");
        } else {
            let mut downs = [false; 2];
            for _ in 0..2 {
                match receive_must_arrive() {
                    Some(Message::Down { pid, reason: r, .. }) if pid == m && r == reason => downs[0] = true,
                    Some(Message::Down { reference, reason: r, .. }) if reference == watch_w && r == reason => {
                        downs[1] = true
                    }
                    other => ensure!(false, "case {case}: linked process ended with {reason}: {other:?}"),
                }
            }
            ensure!(downs == [true, true], "case {case}: both ends seen");
        }
    }

    // 4. After `unlink`, the end of the other is not signalled.
    let w = ender(5, ExitReason::Exit(8));
    sched::link(w).unwrap();
    ensure!(sched::process_info(w).is_some_and(|i| i.links == [me]), "link listed at the other end");
    sched::unlink(w);
    ensure!(sched::process_info(w).is_some_and(|i| i.links.is_empty()), "unlink removed both ends");
    let watch = sched::monitor(w).unwrap();
    sched::send(w, Message::Word(0)).unwrap();
    match receive_must_arrive() {
        Some(Message::Down { reference, reason: ExitReason::Exit(8), .. }) if reference == watch => {}
        other => ensure!(false, "after unlink, expected only the Down: {other:?}"),
    }

    // 5. `send_exit` without a link: trapped, ignored, or the end of the target.
    let t = sched::spawn_with(spread(6), move || {
        sched::trap_exits(true);
        sched::send(me, Message::Word(1)).unwrap();
        // Forwards what it receives as a word: the reason's code.
        if let Message::Exit { from, reason: ExitReason::Exit(code) } = sched::receive()
            && from == me
        {
            sched::send(me, Message::Word(100 + code)).unwrap();
        }
        let _ = sched::receive();
    })
    .unwrap();
    ensure!(expect_word(1).is_ok(), "trapping target ready");
    sched::send_exit(t, ExitReason::Exit(4)).unwrap();
    ensure!(expect_word(104).is_ok(), "a trapping process received send_exit's reason as Exit");
    let watch_t = sched::monitor(t).unwrap();
    // `kill` is not trapped, and a link partner that traps receives `killed`.
    sched::link(t).unwrap();
    sched::kill(t).unwrap();
    let first = receive_must_arrive();
    let second = receive_must_arrive();
    let saw_down = |m: &Option<Message>| matches!(m, Some(Message::Down { reference, reason: ExitReason::Killed, .. }) if *reference == watch_t);
    let saw_exit =
        |m: &Option<Message>| matches!(m, Some(Message::Exit { from, reason: ExitReason::Killed }) if *from == t);
    ensure!(
        (saw_down(&first) && saw_exit(&second)) || (saw_exit(&first) && saw_down(&second)),
        "kill of a trapping process: {first:?} {second:?}"
    );

    let n = ender(7, ExitReason::Normal);
    let watch_n = sched::monitor(n).unwrap();
    sched::send_exit(n, ExitReason::Normal).unwrap();
    sched::send_exit(n, ExitReason::Shutdown).unwrap();
    let got = expect_down(n, ExitReason::Shutdown);
    ensure!(got.is_ok(), "send_exit normal is ignored, shutdown ends it: {got:?} ({watch_n})");
    ensure!(sched::send_exit(n, ExitReason::Shutdown) == Err(SendError::NoProc(n)), "send_exit to an ended pid");

    // 6. A link to an ended process: `noproc`, trapped here, fatal for one that does not trap.
    sched::link(n).unwrap();
    let got = expect_exit(n, ExitReason::NoProc);
    ensure!(got.is_ok(), "link to an ended pid: {got:?}");
    let l = sched::spawn_with(spread(8), move || {
        sched::link(n).unwrap();
        sched::send(me, Message::Word(666)).unwrap();
    })
    .unwrap();
    sched::monitor(l).unwrap();
    let got = expect_down(l, ExitReason::NoProc);
    ensure!(got.is_ok(), "a non-trapping process linking to an ended pid ends with noproc: {got:?}");

    // 7. `spawn_link`: linked from birth, even if it ends at once.
    for case in 0..50 {
        let c = sched::spawn_link(spread(case), move || sched::exit(ExitReason::Exit(case as u64))).unwrap();
        let got = expect_exit(c, ExitReason::Exit(case as u64));
        ensure!(got.is_ok(), "spawn_link child {case} that ends at once: {got:?}");
    }

    // 8. `send_exit(self, normal)` ends the caller (when it does not trap).
    let s = sched::spawn_with(spread(9), || {
        let _go = sched::receive();
        let me = sched::self_pid().unwrap();
        let _ = sched::send_exit(me, ExitReason::Normal);
        sched::exit(ExitReason::Exit(99));
    })
    .unwrap();
    sched::link(s).unwrap();
    sched::send(s, Message::Word(0)).unwrap();
    let got = expect_exit(s, ExitReason::Normal);
    ensure!(got.is_ok(), "send_exit(self, normal): {got:?}");

    // 9. An exit signal to a pid whose slot a newer process took is refused; the newer one lives.
    let (old, _) = sched::spawn_monitor(SpawnOptions::default(), || {}).unwrap();
    let got = expect_down(old, ExitReason::Normal);
    ensure!(got.is_ok(), "old ended: {got:?}");
    let newer = sched::spawn(move || {
        if let Message::Word(w) = sched::receive() {
            sched::send(me, Message::Word(w + 1)).unwrap();
        }
    })
    .unwrap();
    ensure!(newer.index() == old.index(), "the slot was reused ({old} then {newer})");
    ensure!(sched::send_exit(old, ExitReason::Shutdown) == Err(SendError::NoProc(old)), "stale send_exit");
    sched::send(newer, Message::Word(41)).unwrap();
    ensure!(expect_word(42).is_ok(), "the newer process in the slot was unharmed");

    // 10. Ordering: every message a process sent arrives before its exit signal and its Down.
    const BURST: u64 = 2_000;
    let sender = sched::spawn_link(spread(10), move || {
        for i in 0..BURST {
            sched::send(me, Message::Word(1_000_000 + i)).unwrap();
        }
        panic!("deliberate crash after {BURST} messages")
    })
    .unwrap();
    let watch_s = sched::monitor(sender);
    let mut words = 0;
    let mut exit_at = None;
    let mut down_at = None;
    for position in 0..BURST + 2 {
        match receive_must_arrive() {
            Some(Message::Word(w)) => {
                ensure!(w == 1_000_000 + words, "message {words} arrived as {w}");
                ensure!(exit_at.is_none() && down_at.is_none(), "a message after the sender's end");
                words += 1;
            }
            Some(Message::Exit { from, reason: ExitReason::Panic }) if from == sender => exit_at = Some(position),
            Some(Message::Down { pid, reason: ExitReason::Panic, .. }) if pid == sender => down_at = Some(position),
            Some(Message::Down { pid, reason: ExitReason::NoProc, .. }) if pid == sender => down_at = Some(position),
            other => ensure!(false, "ordering: unexpected {other:?}"),
        }
    }
    ensure!(
        words == BURST && exit_at.is_some() && down_at.is_some(),
        "ordering: {words} words, {exit_at:?} {down_at:?}"
    );
    ensure!(watch_s.is_ok(), "monitor");

    ensure!(sched::process_count() == baseline, "{} processes alive, {baseline} at the start", sched::process_count());
    println!("test: links and exit signals ok");
    ExitCode::Success
}

beamcore::entry!(main);
