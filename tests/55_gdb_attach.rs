//! gdb-multiarch debugs the kernel in QEMU as `make debug` sets it up (scripts/debug.py): it
//! attaches with the kernel's symbols, stops at the first Rust function (`boot_core_entry`),
//! then breaks on a named function that main reaches three calls deep once every core is
//! online, lists one thread per core and prints a backtrace naming the three calls, innermost
//! first. Fails when gdb-multiarch is missing (scripts/setup.sh installs it).
//! qemu-test: configs=a72-smp4
//! qemu-test: timeout=90
//! qemu-test: gdb=break 55_gdb_attach::gdb_innermost_call;continue;info threads;bt;kill
//! qemu-test: expect-order=^Thread 1 hit Breakpoint 1, beamcore::kernel_init::boot_core_entry \(
//! qemu-test: expect-order=^Thread \d+ hit Breakpoint 2, 55_gdb_attach::gdb_innermost_call \(
//! qemu-test: expect-order=^\s+Id\s+Target Id\s+Frame\s*$
//! qemu-test: expect-order=^#0  55_gdb_attach::gdb_innermost_call \(
//! qemu-test: expect-order=^#1  0x[0-9a-f]+ in 55_gdb_attach::gdb_middle_call \(
//! qemu-test: expect-order=^#2  0x[0-9a-f]+ in 55_gdb_attach::gdb_outer_call \(
//! qemu-test: expect-order=^#3  0x[0-9a-f]+ in 55_gdb_attach::main \(
//! qemu-test: expect-order=^test: every core online; main calls gdb_outer_call$
//! qemu-test: expect-count=smp ^\*?\s+\d+\s+Thread 1\.\d+ \(CPU#\d+ \[[a-z ]+\]\) \S
//! qemu-test: forbid=PANIC

#![no_std]
#![no_main]

extern crate alloc;

use beamcore::{ExitCode, println, smp};

/// Where the debugger breaks: three calls below main.
#[inline(never)]
fn gdb_innermost_call(x: u64) -> u64 {
    core::hint::black_box(x) * 3
}

/// Each caller uses its callee's result, so no call is a tail call and every frame stays.
#[inline(never)]
fn gdb_middle_call(x: u64) -> u64 {
    core::hint::black_box(gdb_innermost_call(x + 1)) + 1
}

#[inline(never)]
fn gdb_outer_call(x: u64) -> u64 {
    core::hint::black_box(gdb_middle_call(x + 1)) + 1
}

fn main() -> ExitCode {
    println!("test: every core online; main calls gdb_outer_call");
    let result = gdb_outer_call(core::hint::black_box(1));
    println!("test: gdb_outer_call returned {result}");
    if smp::cores_online() == 0 { ExitCode::Failure(1) } else { ExitCode::Success }
}

beamcore::entry!(main);
