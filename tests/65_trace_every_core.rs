//! `trace=on`: the boot core makes every core's trace buffer once all cores are online (so that
//! making them cannot move the cores' tick phases), and every core records into its own. Each
//! core runs processes that yield and answer; the dump must then hold events of every core
//! (`trace: core=N recorded=M` with M > 0 for each), and none of them dropped for want of a
//! buffer. With a buffer made only for the boot core, the other cores' lines would read
//! `recorded=0` (what the dump prints for a core without one).
//! qemu-test: configs=a72-smp4,a72-smp8
//! qemu-test: variants=trace=on trace_events=2048
//! qemu-test: expect=^trace: begin cores=(4|8) counter_hz=\d+$
//! qemu-test: expect=^trace: core=0 recorded=[1-9]\d* dropped=\d+$
//! qemu-test: expect=^trace: core=1 recorded=[1-9]\d* dropped=\d+$
//! qemu-test: expect=^trace: core=2 recorded=[1-9]\d* dropped=\d+$
//! qemu-test: expect=^trace: core=3 recorded=[1-9]\d* dropped=\d+$
//! qemu-test: expect=^trace: end$
//! qemu-test: expect=^test: trace: \d+ processes on (4|8) cores answered once each$
//! qemu-test: forbid=^trace: core=\d+ recorded=0
//! qemu-test: forbid=no memory for a buffer
//! qemu-test: forbid=PANIC
//! qemu-test: timeout=60

#![no_std]
#![no_main]

use beamcore::sched::{self, Message, SpawnOptions};
use beamcore::{ExitCode, println, smp};
use beamcore_apps::ensure;
use beamcore_apps::testing::each_answers_once;

const PER_CORE: usize = 8;

fn main() -> ExitCode {
    ensure!(sched::trace::enabled(), "booted with trace=on, tracing is on");
    let me = sched::self_pid().expect("main is a process");
    let cores = smp::cores_online();
    let processes = PER_CORE * cores;
    for index in 0..processes {
        let options = SpawnOptions::default().bound_to(index % cores);
        let spawned = sched::spawn_with(options, move || {
            sched::yield_now();
            let _ = sched::send(me, Message::Word(index as u64));
        });
        ensure!(spawned.is_ok(), "spawn {index}: {spawned:?}");
    }
    let answers = each_answers_once(processes);
    ensure!(answers.is_ok(), "{}", answers.unwrap_err());
    sched::trace::dump();
    println!("test: trace: {processes} processes on {cores} cores answered once each");
    ExitCode::Success
}

beamcore::entry!(main);
