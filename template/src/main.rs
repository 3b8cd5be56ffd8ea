//! @NAME@: a beamcore program. The kernel brings up every core, then runs `main` as the first
//! process, on core 0; the `ExitCode` it returns ends the run (QEMU's exit status).

#![no_std]
#![no_main]

use beamcore::{ExitCode, println, smp};

fn main() -> ExitCode {
    let n = 100;
    let sum = @CRATE@::sum_of_squares(n);
    println!("@NAME@: sum of squares 1..={n} = {sum} (cores online: {})", smp::cores_online());
    ExitCode::Success
}

beamcore::entry!(main);
