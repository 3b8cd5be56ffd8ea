//! Bootargs become a typed configuration: good words apply, bad ones print
//! `bootargs: <what> ignored: <why>` and the default stays; maxcpus limits the cores started.
//! qemu-test: configs=a72-smp4,el2-smp4
//! qemu-test: append=slice_us=abc bogus=1 maxcpus=2 ticks=0 ticks=7 noequals strategy=busiest retries=-1 steal=all seed=42
//! qemu-test: expect=^bootargs: slice_us=abc ignored: not a decimal number$
//! qemu-test: expect=^bootargs: bogus=1 ignored: unknown key \(known: slice_us, maxcpus, ticks, reductions, strategy,
//! qemu-test: expect=^bootargs: ticks=0 ignored: out of range 1..=10000$
//! qemu-test: expect=^bootargs: noequals ignored: expected key=value$
//! qemu-test: expect=^bootargs: strategy=busiest ignored: expected one of random\|load\|locality\|p2c\|adaptive$
//! qemu-test: expect=^bootargs: retries=-1 ignored: not a decimal number$
//! qemu-test: expect=^bootargs: steal=all ignored: expected one of one\|half$
//! qemu-test: expect=^config: slice_us=1000 maxcpus=2 ticks=7 reductions=4000 strategy=load min_steal=2 imbalance=2 retries=3
//! qemu-test: expect=^config: .* seed=42$
//! qemu-test: expect-count=2 ^core \d+ online
//! qemu-test: forbid=PANIC

#![no_std]
#![no_main]

use beamcore::config::Config;
use beamcore::{ExitCode, println, smp};
use beamcore_apps::ensure;

fn main() -> ExitCode {
    let config = *beamcore::boot_config();
    let expected = Config { maxcpus: 2, ticks: 7, seed: 42, ..Config::default() };
    ensure!(config == expected, "config {config:?}, expected {expected:?}");
    ensure!(smp::cores_online() == 2, "{} cores online with maxcpus=2", smp::cores_online());
    println!("test: bad words rejected, defaults kept, maxcpus=2, ticks=7 and seed=42 applied");
    ExitCode::Success
}

beamcore::entry!(main);
