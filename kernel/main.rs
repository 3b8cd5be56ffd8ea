//! The `make run` kernel: boots every core, checks that each takes its own timer ticks and
//! can interrupt every other, then runs a ring of processes across all cores and reports what
//! each core did.
//!
//! The balancer (load-based work stealing) is a later issue; until then each process runs on
//! the core it was spawned on, and the ring spreads them round-robin.

#![no_std]
#![no_main]

extern crate alloc;

use alloc::boxed::Box;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicU64, Ordering};

use beamcore::mm::layout::MAX_CORES;
use beamcore::sched::{self, Message, Pid, SpawnOptions};
use beamcore::{ExitCode, println, smp};

/// Ring size and laps of the demo workload.
const RING_PROCESSES: u64 = 1000;
const RING_LAPS: u64 = 20;
const STOP: u64 = u64::MAX;

static TICKS_WAITED: [AtomicU64; MAX_CORES] = [const { AtomicU64::new(0) }; MAX_CORES];

fn boot_check(core: usize) {
    let me = smp::core(core);
    let start = me.ticks();
    let wanted = u64::from(beamcore::boot_config().ticks);
    smp::wait_until(|| me.ticks() >= start + wanted);
    TICKS_WAITED[core].store(me.ticks() - start, Ordering::Relaxed);
    for other in (0..smp::cores_online()).filter(|&c| c != core) {
        smp::ping(other).expect("every online core can be pinged");
    }
}

fn ring_member(main: Pid) {
    let Message::Boxed(next) = sched::receive() else { return };
    let Ok(next) = next.downcast::<Pid>() else { return };
    loop {
        match sched::receive() {
            Message::Word(STOP) => return,
            Message::Word(token) if token == RING_PROCESSES * RING_LAPS => {
                let _ = sched::send(main, Message::Word(token));
            }
            Message::Word(token) => {
                let _ = sched::send(*next, Message::Word(token + 1));
            }
            _ => {}
        }
    }
}

fn run_ring(cores: usize) -> Result<u64, &'static str> {
    let me = sched::self_pid().ok_or("main is not a process")?;
    let mut ring: Vec<Pid> = Vec::new();
    for i in 0..RING_PROCESSES as usize {
        let options = SpawnOptions::default().stack_bytes(4096).on_core(i % cores);
        ring.push(sched::spawn_with(options, move || ring_member(me)).map_err(|_| "spawn failed")?);
    }
    for (i, &pid) in ring.iter().enumerate() {
        let next = ring[(i + 1) % ring.len()];
        sched::send(pid, Message::Boxed(Box::new(next))).map_err(|_| "ring member gone")?;
    }
    sched::send(ring[0], Message::Word(0)).map_err(|_| "ring member gone")?;
    let token = match sched::receive_timeout(60_000_000) {
        Some(Message::Word(token)) => token,
        _ => return Err("the token did not come back"),
    };
    for &pid in &ring {
        let _ = sched::send(pid, Message::Word(STOP));
    }
    while ring.iter().any(|&pid| sched::is_alive(pid)) {
        sched::yield_now();
    }
    Ok(token)
}

fn main() -> ExitCode {
    let cores = smp::cores_online();
    if let Err(error) = smp::run_on_all_and_wait(boot_check) {
        println!("run: {error}");
        return ExitCode::Failure(1);
    }
    let received = |c: usize| (0..cores).map(|from| smp::core(c).pings_from(from)).sum::<u32>();
    smp::wait_until(|| (0..cores).all(|c| received(c) as usize == cores - 1));
    let token = match run_ring(cores) {
        Ok(token) => token,
        Err(why) => {
            println!("run: ring failed: {why}");
            return ExitCode::Failure(1);
        }
    };
    println!("ring: {RING_PROCESSES} processes, {RING_LAPS} laps, token arrived as {token}");

    let stat = |c: usize| sched::core_stats(c);
    println!("core  mpidr        ticks  pings_in  spawned  executed  completed  preempted");
    for (c, ticks) in TICKS_WAITED.iter().enumerate().take(cores) {
        println!(
            "{c:>4}  {:#010x}  {:>5}  {:>8}  {:>7}  {:>8}  {:>9}  {:>9}",
            smp::core(c).mpidr(),
            ticks.load(Ordering::Relaxed),
            received(c),
            stat(c).spawned.load(Ordering::Relaxed),
            stat(c).executed.load(Ordering::Relaxed),
            stat(c).completed.load(Ordering::Relaxed),
            stat(c).preemptions.load(Ordering::Relaxed)
        );
    }
    let mut line = heapless::String::<8192>::new();
    let _ = write_report(&mut line, cores, token, &received);
    println!("report: {line}");
    if token == RING_PROCESSES * RING_LAPS { ExitCode::Success } else { ExitCode::Failure(1) }
}

fn write_report(
    out: &mut impl core::fmt::Write,
    cores: usize,
    token: u64,
    received: &dyn Fn(usize) -> u32,
) -> core::fmt::Result {
    let load = |c: usize, f: fn(&sched::CoreStats) -> &AtomicU64| f(sched::core_stats(c)).load(Ordering::Relaxed);
    let total = |f: fn(&sched::CoreStats) -> &AtomicU64| (0..cores).map(|c| load(c, f)).sum::<u64>();
    let mut json = beamcore::report::JsonObject::begin(out)?;
    json.string("workload", "ring")?.uint("cores", cores as u64)?.uint("ring_processes", RING_PROCESSES)?;
    json.uint("token", token)?.uint("spawned", total(|s| &s.spawned))?.uint("completed", total(|s| &s.completed))?;
    json.array("per_core", cores, |c, e| {
        e.uint("core", c as u64)?
            .uint("mpidr", smp::core(c).mpidr())?
            .uint("ticks", TICKS_WAITED[c].load(Ordering::Relaxed))?
            .uint("pings_in", u64::from(received(c)))?
            .uint("spawned", load(c, |s| &s.spawned))?
            .uint("executed", load(c, |s| &s.executed))?
            .uint("completed", load(c, |s| &s.completed))?
            .uint("preemptions", load(c, |s| &s.preemptions))?
            .uint("local_pops", load(c, |s| &s.local_pops))?;
        Ok(())
    })?;
    json.end()
}

beamcore::entry!(main);
