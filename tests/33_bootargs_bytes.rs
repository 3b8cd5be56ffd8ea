//! A command line is bytes, not text: a word that is not UTF-8 is reported (its bad byte shown
//! as \xNN) and every valid word still applies; a control character is escaped when a word is
//! echoed; a number beyond u64 is "too large", not "not a number"; and the word the 512-byte
//! limit cuts (`slice_us=1000000` kept as `slice_us=100`) is ignored, not applied. The raw
//! 0xff and ESC bytes reach /chosen/bootargs through QEMU's -append (the harness turns \xNN into
//! the byte). The x.pad word (a module parameter, skipped silently) puts `slice_us=` at byte 500.
//! qemu-test: configs=a72-smp4
//! qemu-test: append=ticks=7 bad\xffword=1 \x1b[31mred=1 maxcpus=2 ticks=99999999999999999999 x.pad=aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa slice_us=1000000
//! qemu-test: expect=^bootargs: bad\\xffword=1 ignored: not valid UTF-8$
//! qemu-test: expect=^bootargs: \\x1b\[31mred=1 ignored: unknown key \(known:
//! qemu-test: expect=^bootargs: ticks=99999999999999999999 ignored: number too large \(at most 10000\)$
//! qemu-test: expect=^bootargs: slice_us=100 ignored: cut off at the 512-byte command-line limit$
//! qemu-test: expect=^bootargs: command line ignored beyond 512 bytes: too long$
//! qemu-test: expect=^config: slice_us=1000 maxcpus=2 ticks=7
//! qemu-test: expect-count=5 ^bootargs:
//! qemu-test: forbid=\x1b
//! qemu-test: forbid=PANIC

#![no_std]
#![no_main]

use beamcore::config::Config;
use beamcore::{ExitCode, println, smp};
use beamcore_apps::ensure;

fn main() -> ExitCode {
    let config = *beamcore::boot_config();
    let expected = Config { maxcpus: 2, ticks: 7, ..Config::default() };
    ensure!(config == expected, "config {config:?}, expected {expected:?}");
    ensure!(smp::cores_online() == 2, "{} cores online with maxcpus=2", smp::cores_online());
    println!("test: valid words around a non-UTF-8 byte applied; the word cut at 512 bytes not applied");
    ExitCode::Success
}

beamcore::entry!(main);
