//! The console: one PL011 shared by every core, a whole line at a time.
//!
//! `println!` formats and writes its line while holding the console lock (with IRQs masked),
//! so the characters of two cores never mix within a line. Before the MMU is on (exclusives
//! are not reliable on device-typed memory) only the boot core runs and the console writes
//! without locking. A panic breaks the lock if its own core holds it, and otherwise waits a
//! bounded time for the holder to finish its line.

use core::fmt::{self, Write};
use core::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use crate::drivers::pl011::Pl011;
use crate::sync::IrqSpinLock;

/// Baud rate programmed on boards whose UART needs initialising.
pub const BAUD: u32 = 115_200;

/// UART base used until [`init`] (and by the early/panic path when [`init`] never ran).
static UART_BASE: AtomicUsize = AtomicUsize::new(crate::board::DEFAULT_UART_BASE);
/// Set once the MMU is on and the lock may be used.
static LOCKING: AtomicBool = AtomicBool::new(false);
static LOCK: IrqSpinLock<()> = IrqSpinLock::new(());

fn uart() -> Pl011 {
    // SAFETY: the base is the platform's console PL011 (or the board default before discovery),
    // identity-mapped as device memory once the MMU is on; writes are serialised by LOCK (or
    // there is a single core running before LOCKING is set).
    unsafe { Pl011::new(UART_BASE.load(Ordering::Relaxed)) }
}

struct Uart;

impl Write for Uart {
    fn write_str(&mut self, text: &str) -> fmt::Result {
        uart().write_str(text);
        Ok(())
    }
}

/// Switches to the discovered UART and to locked output. Boot core, after the MMU is on.
pub fn init(base: usize, clock_hz: Option<u32>) {
    UART_BASE.store(base, Ordering::Relaxed);
    if let Some(clock) = clock_hz {
        uart().init(clock, BAUD);
    }
    // ORDERING: Release, paired with the Acquire loads of LOCKING in `write_line`,
    // `write_final` and `flush`: a core that sees locked output also sees the new UART_BASE
    // (loaded Relaxed in `uart`) and the UART's initialisation.
    LOCKING.store(true, Ordering::Release);
}

/// Writes one formatted line. Used by [`println!`](crate::println).
pub fn write_line(args: fmt::Arguments<'_>) {
    // ORDERING: Acquire, paired with the Release store in `init` (the UART base and set-up).
    if !LOCKING.load(Ordering::Acquire) {
        let _ = Uart.write_fmt(format_args!("{args}\n"));
        return;
    }
    let _guard = loop {
        if let Some(guard) = LOCK.try_lock_for(LOCK_ATTEMPTS_BETWEEN_HALT_CHECKS) {
            break guard;
        }
        // The run is ending and the final words may keep the console for good: park rather
        // than spin with IRQs masked, where the halt SGI could not reach this core.
        if crate::smp::halting() {
            crate::smp::halt_this_core();
        }
    };
    let _ = Uart.write_fmt(format_args!("{args}\n"));
}

/// How often a core waiting for the console checks whether the run is ending.
const LOCK_ATTEMPTS_BETWEEN_HALT_CHECKS: usize = 1000;

/// Takes the console for good on the way down: breaks our own hold, waits a bounded time for
/// another core to finish its line, then writes regardless.
pub fn write_final(args: fmt::Arguments<'_>) {
    // ORDERING: Acquire, paired with the Release store in `init`, as in `write_line`.
    if LOCKING.load(Ordering::Acquire) {
        if LOCK.held_by_this_core() {
            // SAFETY: we are panicking on the holding core; its guard is never used again.
            unsafe { LOCK.force_unlock() };
        }
        // Keep the lock (forget the guard) so no other core writes after the final words.
        if let Some(guard) = LOCK.try_lock_for(10_000_000) {
            core::mem::forget(guard);
        }
    }
    let _ = Uart.write_fmt(args);
    uart().flush();
}

/// Waits until the UART has sent everything (before QEMU exits, which drops pending output).
/// Waits for any line in progress on another core to end (unless this core holds the console,
/// as after [`write_final`]).
pub fn flush() {
    // ORDERING: Acquire, paired with the Release store in `init`, as in `write_line`.
    let _guard = (LOCKING.load(Ordering::Acquire) && !LOCK.held_by_this_core()).then(|| LOCK.lock());
    uart().flush();
}

/// Prints a line to the console, atomically with respect to other cores.
#[macro_export]
macro_rules! println {
    () => { $crate::console::write_line(format_args!("")) };
    ($($arg:tt)*) => { $crate::console::write_line(format_args!($($arg)*)) };
}
