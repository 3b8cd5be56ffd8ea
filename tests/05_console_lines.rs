//! Cores printing at the same time never mix characters within a line: each of 100 lines per
//! core arrives whole (the runner counts exact matches).
//! qemu-test: configs=a72-smp4,a72-smp8
//! qemu-test: expect-count=smp*100 ^mix c=\d+ n=\d+ ([a-z])\1{59} end$
//! qemu-test: forbid=PANIC

#![no_std]
#![no_main]

use beamcore::{ExitCode, println, smp};

fn print_lines(core: usize) {
    let letter = (b'a' + core as u8) as char;
    let mut payload = heapless::String::<60>::new();
    for _ in 0..60 {
        let _ = payload.push(letter);
    }
    for n in 0..100 {
        println!("mix c={core} n={n} {payload} end");
    }
}

fn main() -> ExitCode {
    match smp::run_on_all_and_wait(print_lines) {
        Ok(()) => ExitCode::Success,
        Err(_) => ExitCode::Failure(1),
    }
}

beamcore::entry!(main);
