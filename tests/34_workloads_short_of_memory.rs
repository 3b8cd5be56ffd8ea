//! With 16 MiB of RAM, every workload ends with a verdict, never a hang: those that need more
//! processes alive at once than fit (fib, ring) report a spawn that failed for want of memory,
//! the rest finish and check their answers, except `imbalanced` and `bang` (300 senders alive at
//! once, each with a stack, which a 2 MiB stack pool cannot hold), which may do either: its 400
//! workers end as they go, so whether the last spawns find memory depends on how fast the other
//! cores run them (without -icount, on a shared host it failed at spawn 224, 239, 354 and once
//! fitted); and in every case every process the workload started
//! has ended afterwards (none left blocked in `receive`), so the program can go on. `bang`'s
//! senders wait when the receiver's mailbox cannot grow; `uts` counts subtrees in place when it
//! cannot spawn; `grain` keeps at most 1,024 tasks alive.
//! qemu-test: configs=a72-smp4
//! qemu-test: qemu-args=-m 16M
//! qemu-test: variants=workload=imbalanced;workload=fib;workload=ring;workload=mixed;workload=nqueens;workload=uts;workload=bang;workload=big;workload=grain grain_ns=2000 grain_ms=20
//! qemu-test: forbid=PANIC
//! qemu-test: timeout=60

#![no_std]
#![no_main]

use beamcore::config::Workload;
use beamcore::{ExitCode, ensure, println, sched, workloads};

fn main() -> ExitCode {
    let workload = beamcore::boot_config().workload;
    let before = sched::process_count();
    let outcome = workloads::run(workload);
    let after = sched::process_count();
    ensure!(after == before, "{} processes left after {}: {}", after - before, workload.name(), outcome.detail);
    let too_big = matches!(workload, Workload::Fib | Workload::Ring);
    let may_not_fit = matches!(workload, Workload::Imbalanced | Workload::Bang);
    if may_not_fit && !outcome.ok {
        ensure!(
            outcome.detail.contains("out of memory"),
            "{} failed for another reason: {}",
            workload.name(),
            outcome.detail
        );
    } else if too_big {
        ensure!(!outcome.ok, "{} should not fit in 16 MiB: {}", workload.name(), outcome.detail);
        ensure!(
            outcome.detail.contains("out of memory"),
            "{} failed for another reason: {}",
            workload.name(),
            outcome.detail
        );
    } else {
        ensure!(outcome.ok, "{} failed: {}", workload.name(), outcome.detail);
    }
    let verdict = if outcome.ok { "ok" } else { "FAILED" };
    println!(
        "test: {} ended with a verdict in 16 MiB: {verdict} ({}); no process left",
        workload.name(),
        outcome.detail
    );
    ExitCode::Success
}

beamcore::entry!(main);
