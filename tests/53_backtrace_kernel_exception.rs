//! An unexpected exception in kernel code two calls deep prints, after the registers, the
//! chain of calls that led to the faulting instruction: the instruction itself, in
//! `kernel_faulting_inner`, then `kernel_faulting_outer`, then the scheduler loop that ran the
//! kernel job on core 1, innermost first, then the PANIC line.
//! qemu-test: configs=a72-smp4,el2-smp4
//! qemu-test: exit=1
//! qemu-test: expect-order=^exception: Synchronous CurrentElSpx on core 1: data abort \(same EL\)
//! qemu-test: expect-order=^  x28=0x[0-9a-f]{16} x29=
//! qemu-test: expect-order=^backtrace:$
//! qemu-test: expect-order=^  #0 0x[0-9a-f]{16} _53_backtrace_kernel_exception::kernel_faulting_inner\+0x[0-9a-f]+$
//! qemu-test: expect-order=^  #1 0x[0-9a-f]{16} _53_backtrace_kernel_exception::kernel_faulting_outer\+0x[0-9a-f]+$
//! qemu-test: expect-order=^  #\d+ 0x[0-9a-f]{16} beamcore_sched::scheduler::run_loop\+0x[0-9a-f]+$
//! qemu-test: expect-order=^PANIC core 1: unexpected exception: data abort \(same EL\)$
//! qemu-test: forbid=\(stopped|  #\d+ 0x[0-9a-f]{16} \?$

#![no_std]
#![no_main]

extern crate alloc;

use beamcore::ExitCode;

/// Loads from unmapped memory: the instruction the backtrace's first frame must name.
#[inline(never)]
fn kernel_faulting_inner(address: usize) -> u64 {
    // SAFETY: none: the load is meant to fault (nothing is mapped at 4 GiB + 0x48 on a 128 MiB
    // virt machine); the kernel must report it and end the run.
    unsafe { (core::hint::black_box(address) as *const u64).read_volatile() }
}

/// Calls the inner function, not as a tail call, so its own frame stays on the stack.
#[inline(never)]
fn kernel_faulting_outer(address: usize) -> u64 {
    core::hint::black_box(kernel_faulting_inner(address + 8)) + 1
}

fn main() -> ExitCode {
    beamcore_apps::testing::run_as_kernel_job(1, || {
        core::hint::black_box(kernel_faulting_outer(0x1_0000_0040));
    })
}

beamcore::entry!(main);
