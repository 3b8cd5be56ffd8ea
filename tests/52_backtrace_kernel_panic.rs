//! A kernel panic two calls deep prints the chain of calls that led to it, named from the
//! kernel's own symbol table: a kernel job on core 2 calls `kernel_outer_function`, which calls
//! `kernel_inner_function`, which panics. The backtrace, before the PANIC line, names the panic
//! machinery, then the inner function, then the outer one, then the scheduler loop that ran the
//! job and the core's entry, innermost first.
//! qemu-test: configs=a72-smp4
//! qemu-test: exit=1
//! qemu-test: expect-order=^backtrace:$
//! qemu-test: expect-order=^  #\d+ 0x[0-9a-f]{16} core::panicking::panic_fmt\+0x[0-9a-f]+$
//! qemu-test: expect-order=^  #\d+ 0x[0-9a-f]{16} _52_backtrace_kernel_panic::kernel_inner_function\+0x[0-9a-f]+$
//! qemu-test: expect-order=^  #\d+ 0x[0-9a-f]{16} _52_backtrace_kernel_panic::kernel_outer_function\+0x[0-9a-f]+$
//! qemu-test: expect-order=^  #\d+ 0x[0-9a-f]{16} beamcore_sched::scheduler::run_loop\+0x[0-9a-f]+$
//! qemu-test: expect-order=^  #\d+ 0x[0-9a-f]{16} secondary_core_entry\+0x[0-9a-f]+$
//! qemu-test: expect-order=^PANIC core 2: deliberate kernel panic two calls deep \(depth 2\) at tests/52_backtrace_kernel_panic\.rs:\d+$
//! qemu-test: forbid=\(stopped|  #\d+ 0x[0-9a-f]{16} \?$

#![no_std]
#![no_main]

extern crate alloc;

use beamcore::ExitCode;

/// Panics: the frame the backtrace must name first after the panic machinery.
#[inline(never)]
fn kernel_inner_function(depth: u64) -> u64 {
    if core::hint::black_box(depth) == 2 {
        panic!("deliberate kernel panic two calls deep (depth {depth})");
    }
    depth
}

/// Calls the inner function, not as a tail call (its result is used after the call), so its
/// own frame stays on the stack.
#[inline(never)]
fn kernel_outer_function(depth: u64) -> u64 {
    core::hint::black_box(kernel_inner_function(depth + 1)) + 1
}

/// The panic comes from a kernel job on core 2 (scheduler context, not a process): it is the
/// kernel's own and ends the run.
fn main() -> ExitCode {
    beamcore_apps::testing::run_as_kernel_job(2, || {
        core::hint::black_box(kernel_outer_function(1));
    })
}

beamcore::entry!(main);
