//! With 16 MiB of RAM, every workload ends with a verdict, never a hang: `hold` asked for
//! 100,000 processes (about 460 MiB) reports a spawn that failed for want of memory, and with
//! `processes=0` holds as many as fit and succeeds; `imbalanced`, `fib` and `bang` may fit or
//! fail for memory (their processes end as they go, so how many are alive at once, and whether
//! the last spawns find memory, depends on how fast the other cores run them: `fib(18)`'s 8,361
//! processes failed at 1,453 to 6,213 and once fitted; nqueens split to the fourth queen,
//! `queens_split=4`, 7,566 processes in a tree, likewise: it fitted, and a spawn that fails
//! below a task is passed up to main); the rest finish and check their answers,
//! `ring`'s 1,000 processes included (about 4.6 KiB each: before stacks grew on demand, each took
//! 12 KiB and they did not fit); and in every case every process the workload started has ended
//! afterwards (none left blocked in `receive`), so the program can go on. `bang`'s senders wait
//! when the receiver's mailbox cannot grow; `uts` counts subtrees in place when it cannot spawn;
//! `grain` keeps at most 1,024 tasks alive; `hold` stops spawning at the first failure and still
//! messages, hears from and ends every process it has.
//! qemu-test: configs=a72-smp4
//! qemu-test: memory=16M
//! qemu-test: variants=workload=imbalanced;workload=fib;workload=ring;workload=mixed;workload=nqueens;workload=nqueens queens_split=4;workload=uts;workload=bang;workload=big;workload=grain grain_ns=2000 grain_ms=20;workload=hold processes=0;workload=hold processes=100000
//! qemu-test: forbid=PANIC
//! qemu-test: timeout=60

#![no_std]
#![no_main]

use beamcore::{ExitCode, println, sched};
use beamcore_apps::config::Workload;
use beamcore_apps::{ensure, workloads};

fn main() -> ExitCode {
    let workload = beamcore_apps::config::args().workload;
    let before = sched::process_count();
    let outcome = workloads::run(workload);
    let after = sched::process_count();
    ensure!(after == before, "{} processes left after {}: {}", after - before, workload.name(), outcome.detail);
    let too_big = workload == Workload::Hold && beamcore_apps::config::args().processes > 0;
    let split = workload == Workload::Nqueens && beamcore_apps::config::args().queens_split > 2;
    let may_not_fit = matches!(workload, Workload::Imbalanced | Workload::Fib | Workload::Bang) || split;
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

beamcore::entry!(main, settings = beamcore_apps::config::ARGS);
