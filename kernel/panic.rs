//! The way down: a Rust panic or a fatal exception outside any process prints what happened
//! (with the backtrace of the calls that led there) and a `PANIC` line naming the core, then
//! exits QEMU with a failure status. A panic in a process's own code ends only that process
//! (`sched::on_panic`, which prints its backtrace), as its faults do.

use core::fmt;
use core::sync::atomic::{AtomicBool, Ordering};

use crate::arch::cpu;
use crate::debug::backtrace::Backtrace;
use crate::exit::{ExitCode, exit};

/// Set by the first core to go down; later ones (or a panic inside the panic path) stop
/// quietly so the first report is the one printed.
static GOING_DOWN: AtomicBool = AtomicBool::new(false);

/// Prints `details`, then `PANIC core <id>: <message>`, and exits with status 1.
pub fn fatal(details: fmt::Arguments<'_>, message: fmt::Arguments<'_>) -> ! {
    let _ = cpu::irq_save();
    // Plain load and store, no exclusives: this may run before the MMU is on. Relaxed (was
    // Acquire/Release, which paired to publish nothing): a later core only stops on seeing the
    // flag, it reads nothing the first one wrote; two cores racing past the check both print,
    // which no ordering would prevent (only an exclusive swap would).
    if GOING_DOWN.load(Ordering::Relaxed) {
        crate::smp::halt_this_core();
    }
    GOING_DOWN.store(true, Ordering::Relaxed);
    crate::console::write_final(format_args!("{details}PANIC core {}: {message}\n", cpu::core_id()));
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
