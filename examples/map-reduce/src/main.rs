//! map-reduce: 64 worker processes spread over the cores compute a sum in chunks handed out by
//! message (src/lib.rs); the program checks their answer against the same sum computed by one
//! process alone, prints its verdict and exits with it.

#![no_std]
#![no_main]

use beamcore::{ExitCode, println, smp, time};

/// Worker processes.
const WORKERS: usize = 64;
/// Numbers summed: 0..N.
const N: u64 = 1 << 22;
/// Chunks they are cut into (each a message out and one back).
const CHUNKS: usize = 512;

fn main() -> ExitCode {
    let cores = smp::cores_online();
    let started = time::now_count();
    let farmed = map_reduce::farm(WORKERS, N, CHUNKS);
    let farm_ms = time::counts_to_us(time::now_count() - started) / 1000;

    let started = time::now_count();
    let sequential = map_reduce::sum_range(0, N);
    let alone_ms = time::counts_to_us(time::now_count() - started) / 1000;

    match farmed {
        Ok(outcome) if outcome.sum == sequential && outcome.chunks == CHUNKS => {
            let used = outcome.cores_used.count_ones();
            println!(
                "map-reduce: ok: {WORKERS} workers on {cores} {} ({} of them busy, chunks finished on {used} {}) \
                 summed {CHUNKS} chunks of 0..{N} to {sequential:#x}, as one process alone does; \
                 {farm_ms} ms farmed, {alone_ms} ms alone",
                cores_word(cores as u32),
                outcome.busy_workers,
                cores_word(used)
            );
            ExitCode::Success
        }
        Ok(outcome) => {
            println!(
                "map-reduce: FAILED: the workers' sum of {} chunks is {:#x}, one process alone makes it {sequential:#x}",
                outcome.chunks, outcome.sum
            );
            ExitCode::Failure(1)
        }
        Err(error) => {
            println!("map-reduce: FAILED: {error}");
            ExitCode::Failure(1)
        }
    }
}

fn cores_word(count: u32) -> &'static str {
    if count == 1 { "core" } else { "cores" }
}

beamcore::entry!(main);
