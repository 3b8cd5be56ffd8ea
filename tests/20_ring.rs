//! The ring benchmark as a test: 1,000 processes in a ring (spread over the cores) pass a token
//! 100 times around; it arrives with the count 100,000, and every process then stops.
//! qemu-test: configs=a72-smp4,a72-smp1
//! qemu-test: forbid=PANIC
//! qemu-test: timeout=120

#![no_std]
#![no_main]

extern crate alloc;

use alloc::boxed::Box;
use alloc::vec::Vec;

use beamcore::sched::{self, Message, Pid, SpawnOptions};
use beamcore::{ExitCode, println, smp};
use beamcore_apps::ensure;

const N: u64 = 1_000;
const M: u64 = 100;
const STOP: u64 = u64::MAX;

fn member(main: Pid) {
    let next = match sched::receive() {
        Message::Boxed(next) => *next.downcast::<Pid>().expect("first message is the next pid"),
        other => panic!("ring member expected its neighbour, got {other:?}"),
    };
    loop {
        match sched::receive() {
            Message::Word(STOP) => return,
            Message::Word(token) if token == N * M => sched::send(main, Message::Word(token)).expect("main alive"),
            Message::Word(token) => sched::send(next, Message::Word(token + 1)).expect("next alive"),
            other => panic!("unexpected {other:?}"),
        }
    }
}

fn main() -> ExitCode {
    let me = sched::self_pid().unwrap();
    let cores = smp::cores_online();
    let baseline = sched::process_count();
    let mut ring: Vec<Pid> = Vec::new();
    for i in 0..N as usize {
        let options = SpawnOptions::default().stack_bytes(4096).on_core(i % cores);
        match sched::spawn_with(options, move || member(me)) {
            Ok(pid) => ring.push(pid),
            Err(error) => ensure!(false, "spawn member {i}: {error}"),
        }
    }
    for (i, &pid) in ring.iter().enumerate() {
        let next = ring[(i + 1) % ring.len()];
        ensure!(sched::send(pid, Message::Boxed(Box::new(next))).is_ok(), "wire member {i}");
    }
    ensure!(sched::send(ring[0], Message::Word(0)).is_ok(), "inject token");
    let arrived = sched::receive_timeout(60_000_000);
    ensure!(
        matches!(arrived, Some(Message::Word(t)) if t == N * M),
        "token arrived as {arrived:?}, expected {}",
        N * M
    );
    for &pid in &ring {
        ensure!(sched::send(pid, Message::Word(STOP)).is_ok(), "stop {pid}");
    }
    while sched::process_count() > baseline {
        sched::yield_now();
    }
    println!("test: token passed {} times around {N} processes on {cores} cores; all {N} stopped", M);
    ExitCode::Success
}

beamcore::entry!(main);
