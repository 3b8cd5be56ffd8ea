//! The farm's bookkeeping: more workers than chunks, fewer, one; chunks that do not divide the
//! range evenly; an empty range. Each farm's sum must be the sequential one, every chunk must be
//! computed once, and no more workers may be busy than there were chunks.

#![no_std]
#![no_main]

use beamcore::{ExitCode, println, smp};

fn main() -> ExitCode {
    let cases = [(1, 1000, 7), (8, 10_000, 64), (100, 5000, 10), (16, 12_345, 33), (4, 0, 4)];
    let mut failed = 0;
    for (workers, n, chunks) in cases {
        let expected = map_reduce::sum_range(0, n);
        let verdict = match map_reduce::farm(workers, n, chunks) {
            Ok(outcome) if outcome.sum == expected && outcome.chunks == chunks && outcome.busy_workers <= chunks => {
                "ok"
            }
            Ok(_) => "FAILED (wrong sum or chunk count)",
            Err(_) => "FAILED (the farm did not finish)",
        };
        if verdict != "ok" {
            failed += 1;
        }
        println!("test farm: {workers} workers, 0..{n} in {chunks} chunks: {verdict}");
    }
    println!("test farm: {} cases on {} cores, {failed} failed", cases.len(), smp::cores_online());
    if failed == 0 { ExitCode::Success } else { ExitCode::Failure(1) }
}

beamcore::entry!(main);
