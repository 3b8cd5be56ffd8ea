//! An in-QEMU test: a kernel of its own that runs a check, prints what it found and exits with
//! its status. `make test` (`cargo test`) boots it through beamcore's runner: status 0 passes.
//! A panic fails it too (the kernel exits with a failure status), and so does a hang, killed at
//! the runner's deadline (TIMEOUT, 120 s).

#![no_std]
#![no_main]

use beamcore::{ExitCode, println, smp};

fn main() -> ExitCode {
    let n = 50;
    let got = @CRATE@::sum_of_squares(n);
    let expected = n * (n + 1) * (2 * n + 1) / 6;
    let verdict = if got == expected { "ok" } else { "FAILED" };
    let cores = smp::cores_online();
    println!("test boot: sum of squares 1..={n} = {got}, expected {expected} (cores online: {cores}): {verdict}");
    if got == expected { ExitCode::Success } else { ExitCode::Failure(1) }
}

beamcore::entry!(main);
