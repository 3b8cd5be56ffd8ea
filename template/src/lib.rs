//! What @NAME@'s program (src/main.rs) and its tests (tests/) share. Code goes here when a
//! test should exercise it; the program's own start-up stays in main.rs.

#![no_std]

use beamcore::sched::{self, SpawnOptions};
use beamcore::smp;

/// 1² + 2² + ... + n², computed by one process per number, spread over the cores online: each
/// sends its square back to the caller, which adds them up as they arrive.
///
/// Call it from a process (a program's `main` is one).
pub fn sum_of_squares(n: u64) -> u64 {
    let me = sched::self_pid().expect("sum_of_squares runs in a process");
    let cores = smp::cores_online();
    for k in 1..=n {
        let options = SpawnOptions::default().on_core(k as usize % cores);
        sched::spawn_with(options, move || {
            sched::send_value(me, k * k).expect("the caller waits for every square");
        })
        .expect("spawn");
    }
    (0..n).map(|_| sched::receive_value::<u64>()).sum()
}
