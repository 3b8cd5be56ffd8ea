//! Selective-receive micro-benchmarks, on one core under `-icount shift=0,sleep=off` (one
//! nanosecond of guest time per instruction; `make bench BENCH=receive`).
//!
//! Prints `bench: receive.call_reply_shallow <instructions> insns`: one call/reply round trip
//! to a server process in the shape of OTP's `gen_server:call` (`monitor_for_reply`, send the
//! request, `receive_reply`, which removes the monitor), with nothing else in the caller's
//! queue; `receive.call_reply_deep`: the same with 10,000 unrelated messages waiting in the
//! caller's queue, which the reply reference's mark lets the receive skip; and
//! `receive.deep_over_shallow`, their ratio.

#![no_std]
#![no_main]

use beamcore::sched::{self, Message, Pid, Ref, SpawnOptions};
use beamcore::{ExitCode, arch::cpu, println, time};

const CALLS: u64 = 2_000;
const DEEP: u64 = 10_000;

#[derive(Clone, Copy)]
struct Request {
    from: Pid,
    reference: Ref,
    n: u64,
}

/// Counts for `CALLS` round trips to `server`.
fn calls(server: Pid) -> u64 {
    let me = sched::self_pid().expect("a process");
    let start = cpu::counter();
    for n in 0..CALLS {
        let reply = sched::monitor_for_reply(server).expect("monitor");
        let _ = sched::send_value(server, Request { from: me, reference: reply.reference(), n });
        let answer = sched::receive_reply::<u64>(reply, None).expect("reply");
        core::hint::black_box(answer);
    }
    cpu::counter() - start
}

fn report(name: &str, counts: u64) -> f64 {
    let instructions = time::counts_to_ns(counts) as f64 / CALLS as f64;
    println!("bench: receive.{name} {instructions:.0} insns");
    instructions
}

fn main() -> ExitCode {
    println!("bench: config cores=1 calls={CALLS} deep={DEEP} counter_hz={}", cpu::counter_frequency());
    let server = sched::spawn_with(SpawnOptions::default().on_core(0), || {
        loop {
            let request = sched::receive_value::<Request>();
            let _ = sched::reply(request.from, request.reference, request.n + 1);
        }
    })
    .expect("spawn");
    // Warm the caches of nodes and the monitor tables first.
    let _ = calls(server);
    let shallow = report("call_reply_shallow", calls(server));
    let me = sched::self_pid().expect("a process");
    for w in 0..DEEP {
        sched::send(me, Message::Word(w)).expect("send");
    }
    let deep = report("call_reply_deep", calls(server));
    println!("bench: receive.deep_over_shallow {:.3} ratio", deep / shallow);
    let _ = sched::kill(server);
    ExitCode::Success
}

beamcore::entry!(main);
