//! The way down: a Rust panic or a fatal exception outside any process prints what happened
//! (with the backtrace of the calls that led there) and a `PANIC` line naming the core, then
//! exits QEMU with a failure status. A panic in a process's own code ends only that process
//! (`sched::on_panic`, which prints its backtrace), as its faults do.

use core::fmt;
use core::sync::atomic::{AtomicUsize, Ordering};

use crate::arch::cpu;
use crate::debug::backtrace::Backtrace;
use crate::exit::{ExitCode, exit};

/// The first core to go down, plus one (0: none yet). Later cores stop quietly so the first
/// report is the one printed; the same core again means a panic or fault while its own report
/// was being written (a `Display` in the message that panics, say), which gets one line that
/// formats nothing and exits, so the run still ends with a `PANIC` line instead of hanging.
static GOING_DOWN: AtomicUsize = AtomicUsize::new(0);

/// Prints `details`, then `PANIC core <id>: <message>`, and exits with status 1.
pub fn fatal(details: fmt::Arguments<'_>, message: fmt::Arguments<'_>) -> ! {
    let _ = cpu::irq_save();
    let me = cpu::core_id();
    // Plain load and store, no exclusives: this may run before the MMU is on. Relaxed: a later
    // core only stops on seeing the value, it reads nothing the first one wrote; two cores
    // racing past the check both print, which no ordering would prevent (only an exclusive swap
    // would).
    match GOING_DOWN.load(Ordering::Relaxed) {
        0 => {}
        first if first == me + 1 => {
            crate::console::write_final(format_args!("\nPANIC core {me}: panicked again while reporting a panic\n"));
            exit(ExitCode::Failure(1))
        }
        _ => crate::smp::halt_this_core(),
    }
    GOING_DOWN.store(me + 1, Ordering::Relaxed);
    crate::console::write_final(format_args!("{details}PANIC core {me}: {message}\n"));
    exit(ExitCode::Failure(1))
}

#[panic_handler]
fn panic(info: &core::panic::PanicInfo<'_>) -> ! {
    // Taken first, while the frames that led here are intact.
    let backtrace = Backtrace::here();
    // A panic in a process's own code ends that process only (it does not return then).
    match info.location() {
        Some(at) => {
            crate::sched::on_panic(format_args!("{} at {}:{}", info.message(), at.file(), at.line()), &backtrace)
        }
        None => crate::sched::on_panic(format_args!("{}", info.message()), &backtrace),
    }
    match info.location() {
        Some(at) => {
            fatal(format_args!("{backtrace}\n"), format_args!("{} at {}:{}", info.message(), at.file(), at.line()))
        }
        None => fatal(format_args!("{backtrace}\n"), format_args!("{}", info.message())),
    }
}
