//! The message-passing workloads: `ring` (a token around a ring), `bang` (many senders, one
//! receiver checking order and loss, its verdict written into room reserved beforehand) and
//! `big` (everyone pings everyone), each spread over the cores.

use alloc::boxed::Box;
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

use beamcore::sched::{self, Message, Pid, SpawnOptions};
use beamcore::smp;

use super::{Outcome, collect_words, credit, end_all, unit};

/// A token passed `laps` times around a ring of `members` processes spread over the cores.
pub fn ring(members: u64, laps: u64) -> Outcome {
    const STOP: u64 = u64::MAX;
    let me = sched::self_pid().expect("run from a process");
    let cores = smp::cores_online();
    let target = members * laps;
    let mut pids: Vec<Pid> = Vec::new();
    for i in 0..members as usize {
        let options = SpawnOptions::default().stack_bytes(4096).on_core(i % cores);
        let member = move || {
            let Message::Boxed(next) = sched::receive() else { return };
            let Ok(next) = next.downcast::<Pid>() else { return };
            loop {
                match sched::receive() {
                    Message::Word(STOP) => return,
                    Message::Word(token) if token == target => {
                        let _ = sched::send(me, Message::Word(token));
                    }
                    Message::Word(token) => {
                        unit(None);
                        let _ = sched::send(*next, Message::Word(token + 1));
                    }
                    _ => {}
                }
            }
        };
        match sched::spawn_with(options, member) {
            Ok(pid) => pids.push(pid),
            Err(error) => {
                // The members spawned so far wait for their neighbour: stop them.
                for &pid in &pids {
                    let _ = sched::send(pid, Message::Word(STOP));
                }
                return Outcome { ok: false, detail: format!("spawn {i}: {error}"), processes: i as u64 };
            }
        }
    }
    for (i, &pid) in pids.iter().enumerate() {
        let _ = sched::send(pid, Message::Boxed(Box::new(pids[(i + 1) % pids.len()])));
    }
    let _ = sched::send(pids[0], Message::Word(0));
    let arrived = sched::receive_timeout(120_000_000);
    for &pid in &pids {
        let _ = sched::send(pid, Message::Word(STOP));
    }
    while pids.iter().any(|&pid| sched::is_alive(pid)) {
        sched::yield_now();
    }
    match arrived {
        Some(Message::Word(token)) if token == target => Outcome {
            ok: true,
            detail: format!("token passed {laps} times around {members} processes"),
            processes: members,
        },
        other => {
            Outcome { ok: false, detail: format!("token arrived as {other:?}, expected {target}"), processes: members }
        }
    }
}

/// Erlang's "bang": `senders` processes (spread over the cores) each send `messages` numbered
/// messages to one receiver, which checks that each sender's arrive in order and none is lost.
pub fn bang(senders: u64, messages: u64) -> Outcome {
    let me = sched::self_pid().expect("run from a process");
    let cores = smp::cores_online();
    // The verdict's text is written into room reserved now: a spawn refused because the
    // senders' messages fill the heap (16 MiB of RAM) must still end with a verdict, and a
    // `format!` then would need memory there is none of.
    let detail = String::with_capacity(VERDICT_BYTES);
    let receiver = sched::spawn_with(SpawnOptions::default().on_core(0), move || {
        let mut next = alloc::vec![0u64; senders as usize];
        let mut disorder = 0u64;
        for _ in 0..senders * messages {
            if let Message::Word(word) = sched::receive() {
                let (sender, sequence) = ((word >> 32) as usize, word & 0xffff_ffff);
                if sender >= next.len() || next[sender] != sequence {
                    disorder += 1;
                } else {
                    next[sender] += 1;
                }
            }
        }
        credit(senders * messages / 16);
        let _ = sched::send(me, Message::Word(disorder));
    });
    let receiver = match receiver {
        Ok(pid) => pid,
        Err(error) => {
            return Outcome {
                ok: false,
                detail: verdict(detail, format_args!("spawn receiver: {error}")),
                processes: 0,
            };
        }
    };
    for sender in 0..senders {
        let options = SpawnOptions::default().stack_bytes(4096).on_core(sender as usize % cores);
        let spawned = sched::spawn_with(options, move || {
            for sequence in 0..messages {
                // The receiver's mailbox may be unable to grow while it is behind (16 MiB of
                // RAM): wait for it to drain instead of losing the message.
                while let Err(sched::SendError::OutOfMemory(_)) =
                    sched::send(receiver, Message::Word(sender << 32 | sequence))
                {
                    sched::yield_now();
                }
            }
            credit(messages / 16);
        });
        if let Err(error) = spawned {
            // The receiver waits for every sender's messages: it would wait forever.
            end_all(&[receiver]);
            let detail = verdict(detail, format_args!("spawn sender {sender}: {error}"));
            return Outcome { ok: false, detail, processes: sender + 1 };
        }
    }
    let processes = senders + 1;
    match sched::receive_timeout(120_000_000) {
        Some(Message::Word(0)) => Outcome {
            ok: true,
            detail: verdict(
                detail,
                format_args!("{} messages from {senders} senders, each sender's in order", senders * messages),
            ),
            processes,
        },
        other => Outcome {
            ok: false,
            detail: verdict(detail, format_args!("bang: out of order or lost: {other:?}")),
            processes,
        },
    }
}

/// Room reserved for a verdict written when memory may be short.
const VERDICT_BYTES: usize = 160;

/// Writes `text` into `buffer`, reserved beforehand, cutting it at the reserved room rather
/// than growing it (growing could fail when the heap is full).
fn verdict(mut buffer: String, text: core::fmt::Arguments<'_>) -> String {
    struct Bounded<'a>(&'a mut String);
    impl core::fmt::Write for Bounded<'_> {
        fn write_str(&mut self, s: &str) -> core::fmt::Result {
            let room = self.0.capacity() - self.0.len();
            let mut cut = s.len().min(room);
            while !s.is_char_boundary(cut) {
                cut -= 1;
            }
            self.0.push_str(&s[..cut]);
            Ok(())
        }
    }
    let _ = core::fmt::Write::write_fmt(&mut Bounded(&mut buffer), text);
    buffer
}

/// Erlang's "big": `n` processes (spread over the cores) each ping every other and answer every
/// ping with a pong; each must get exactly n - 1 pongs.
pub fn big(n: u64) -> Outcome {
    const PING: u64 = 1 << 63;
    let me = sched::self_pid().expect("run from a process");
    let cores = smp::cores_online();
    let mut pids: Vec<Pid> = Vec::new();
    for i in 0..n {
        let options = SpawnOptions::default().stack_bytes(8192).on_core(i as usize % cores);
        let member = move || {
            // Pings from faster peers may arrive before the list of peers: keep them.
            let mut early: Vec<u64> = Vec::new();
            let all = loop {
                match sched::receive() {
                    Message::Boxed(all) => match all.downcast::<Vec<Pid>>() {
                        Ok(all) => break all,
                        Err(_) => return,
                    },
                    Message::Word(word) => early.push(word),
                    _ => {}
                }
            };
            for (j, &peer) in all.iter().enumerate() {
                if j as u64 != i {
                    let _ = sched::send(peer, Message::Word(PING | i));
                }
            }
            let (mut pongs, mut pings) = (0, 0);
            for word in early {
                // Only pings can come before we have pinged anyone.
                pings += 1;
                let _ = sched::send(all[(word & !PING) as usize], Message::Word(i));
            }
            while pongs < n - 1 || pings < n - 1 {
                match sched::receive() {
                    Message::Word(word) if word & PING != 0 => {
                        pings += 1;
                        let _ = sched::send(all[(word & !PING) as usize], Message::Word(i));
                    }
                    Message::Word(_) => pongs += 1,
                    _ => {}
                }
            }
            credit(2 * (n - 1) / 8);
            let _ = sched::send(me, Message::Word(pongs));
        };
        match sched::spawn_with(options, member) {
            Ok(pid) => pids.push(pid),
            Err(error) => {
                // The members spawned so far wait for the list of peers: end them.
                end_all(&pids);
                return Outcome { ok: false, detail: format!("spawn {i}: {error}"), processes: i };
            }
        }
    }
    for &pid in &pids {
        let _ = sched::send(pid, Message::Boxed(Box::new(pids.clone())));
    }
    match collect_words(n as usize) {
        Ok(pongs) if pongs.iter().all(|&p| p == n - 1) => Outcome {
            ok: true,
            detail: format!("{n} processes, {} pings and as many pongs", n * (n - 1)),
            processes: n,
        },
        Ok(pongs) => Outcome { ok: false, detail: format!("pong counts {pongs:?}"), processes: n },
        Err(why) => Outcome { ok: false, detail: why, processes: n },
    }
}
