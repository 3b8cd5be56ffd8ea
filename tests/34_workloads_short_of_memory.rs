//! With 16 MiB of RAM, every workload ends with a verdict, never a hang: those that need more
//! processes than fit (imbalanced, fib, ring) report a spawn that failed for want of memory, the
//! rest finish and check their answers, and in both cases every process the workload started
//! has ended afterwards (none left blocked in `receive`), so the program can go on.
//! qemu-test: configs=a72-smp4
//! qemu-test: qemu-args=-m 16M
//! qemu-test: variants=workload=imbalanced;workload=fib;workload=ring;workload=mixed;workload=nqueens;workload=uts;workload=bang;workload=big
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
    let too_big = matches!(workload, Workload::Imbalanced | Workload::Fib | Workload::Ring);
    if too_big {
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
