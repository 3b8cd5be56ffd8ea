//! The console: one PL011 shared by every core, a whole line at a time.
//!
//! Two rules keep a line from ever freezing the machine (docs/memory.md, "the stack's edge"):
//!
//! - **A program's formatting never runs under the console lock.** `println!` called by a
//!   process's own code (on its stack, IRQs unmasked) formats the line into a [`LineBuffer`] on
//!   the caller's side first. A `Display` that panics, or a stack that runs out while
//!   formatting, is then that process's own panic or fault, taken with no lock held, and ends
//!   only that process.
//! - **The console lock is only ever held on a core's kernel stack.** The finished bytes are
//!   written under the lock inside [`on_kernel_stack`]; the kernel's own lines (kernel Display
//!   types only) are formatted there too. So no stack-growth fault can be taken while a core
//!   holds the console, and a fault report never waits for a lock its own core holds.
//!
//! Before the MMU is on (exclusives are not reliable on device-typed memory) only the boot core
//! runs and the console writes without locking. A panic breaks the lock if its own core holds it,
//! and otherwise waits a bounded time for the holder to finish its line.

use alloc::vec::Vec;
use core::fmt::{self, Write};
use core::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use crate::arch::context::{on_kernel_stack, running_on_process_stack};
use crate::arch::cpu;
use crate::drivers::pl011::Pl011;
use crate::sync::IrqSpinLock;

/// Baud rate programmed on boards whose UART needs initialising (the board's).
pub use crate::board::CONSOLE_BAUD as BAUD;

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
///
/// From a process's own code the line is formatted on the caller's side, with IRQs unmasked
/// and no lock held, then written on the kernel stack; from kernel code (the kernel stack, or a
/// process stack with IRQs masked: the kernel working for a process) formatting and writing
/// both happen on the kernel stack under the lock, since only kernel types are formatted there.
pub fn write_line(args: fmt::Arguments<'_>) {
    // A process runs only after `init` (locked output), so only the kernel's path below needs
    // to know whether the console locks yet.
    if running_on_process_stack() && !cpu::irqs_masked() {
        let mut line = LineBuffer::new();
        let _ = line.write_fmt(args);
        line.finish_line();
        let text = line.as_str();
        on_kernel_stack(|| {
            let _guard = lock_console();
            uart().write_str(text);
        });
    } else {
        write_kernel_line(args);
    }
}

/// Writes one line whose arguments are all the kernel's own types (no program `Display`):
/// formatted and written on the kernel stack whatever the caller's stack and mask, so a report
/// about a process at the edge of its stack (its panic line, its backtrace) needs none of it.
pub fn write_kernel_line(args: fmt::Arguments<'_>) {
    // ORDERING: Acquire, paired with the Release store in `init` (the UART base and set-up).
    if !LOCKING.load(Ordering::Acquire) {
        let _ = Uart.write_fmt(format_args!("{args}\n"));
        return;
    }
    on_kernel_stack(|| {
        let _guard = lock_console();
        let _ = Uart.write_fmt(format_args!("{args}\n"));
    });
}

/// Takes the console lock, parking this core instead if the run ends meanwhile.
fn lock_console() -> crate::sync::IrqSpinLockGuard<'static, ()> {
    loop {
        if let Some(guard) = LOCK.try_lock_for(LOCK_ATTEMPTS_BETWEEN_HALT_CHECKS) {
            return guard;
        }
        // The run is ending and the final words may keep the console for good: park rather
        // than spin with IRQs masked, where the halt SGI could not reach this core.
        if crate::halting() {
            crate::halt_this_core();
        }
    }
}

/// Bytes kept on the caller's stack before a line spills to the heap.
const INLINE_LINE_BYTES: usize = 256;
/// The longest line a process may print; the rest is cut and the cut marked.
pub const MAX_LINE_BYTES: usize = 64 * 1024;
/// Ends a line that was cut (at [`MAX_LINE_BYTES`], or when the heap had no room for it).
const CUT_MARK: &str = " [line cut]";

/// A line being formatted on the caller's side of the console: the first
/// [`INLINE_LINE_BYTES`] on the caller's stack, the rest on the heap, at most
/// [`MAX_LINE_BYTES`]. Running out of heap cuts the line (marked) instead of failing: a line
/// about a shortage of memory must still get out.
pub struct LineBuffer {
    inline: [u8; INLINE_LINE_BYTES],
    inline_len: usize,
    spilled: Vec<u8>,
    cut: bool,
}

impl LineBuffer {
    pub const fn new() -> LineBuffer {
        LineBuffer { inline: [0; INLINE_LINE_BYTES], inline_len: 0, spilled: Vec::new(), cut: false }
    }

    /// Formats `args` into a new buffer (a process's message before the kernel reports it).
    pub fn format(args: fmt::Arguments<'_>) -> LineBuffer {
        let mut line = LineBuffer::new();
        let _ = line.write_fmt(args);
        line
    }

    fn as_bytes(&self) -> &[u8] {
        if self.spilled.is_empty() { &self.inline[..self.inline_len] } else { &self.spilled }
    }

    /// The text written so far (cuts fall on character boundaries, so it is always UTF-8).
    pub fn as_str(&self) -> &str {
        core::str::from_utf8(self.as_bytes()).unwrap_or("")
    }

    /// Ends the line: the cut mark if it was cut, then a newline (room for both is kept).
    fn finish_line(&mut self) {
        if self.cut {
            self.push_unchecked(CUT_MARK.as_bytes());
        }
        self.push_unchecked(b"\n");
    }

    fn len(&self) -> usize {
        if self.spilled.is_empty() { self.inline_len } else { self.spilled.len() }
    }

    /// Appends `bytes`, keeping room for `keep_back` more: inline while they fit there, else on
    /// the heap. False (nothing appended) when the heap has no room.
    fn try_append(&mut self, bytes: &[u8], keep_back: usize) -> bool {
        if self.spilled.is_empty() && self.inline_len + bytes.len() + keep_back <= INLINE_LINE_BYTES {
            self.inline[self.inline_len..self.inline_len + bytes.len()].copy_from_slice(bytes);
            self.inline_len += bytes.len();
            true
        } else if self.spill(bytes.len() + keep_back) {
            self.spilled.extend_from_slice(bytes);
            true
        } else {
            false
        }
    }

    /// Appends without the length check (the cut mark and newline, whose room is reserved).
    fn push_unchecked(&mut self, bytes: &[u8]) {
        if !self.try_append(bytes, 0) {
            // No heap even for the ending: overwrite the inline tail so the line still ends.
            let at = INLINE_LINE_BYTES - bytes.len();
            self.inline[at..].copy_from_slice(bytes);
            self.inline_len = INLINE_LINE_BYTES;
        }
    }

    /// Moves the line to the heap with room for `more` bytes; false when the heap has none.
    fn spill(&mut self, more: usize) -> bool {
        let wanted = self.len() + more;
        if self.spilled.is_empty() {
            let mut spilled = Vec::new();
            if spilled.try_reserve(wanted.max(2 * INLINE_LINE_BYTES)).is_err() {
                return false;
            }
            spilled.extend_from_slice(&self.inline[..self.inline_len]);
            self.spilled = spilled;
            true
        } else {
            self.spilled.try_reserve(more).is_ok()
        }
    }
}

/// The largest character boundary of `text` at or below `at` (`at` < `text.len()`).
fn char_floor(text: &str, at: usize) -> usize {
    (0..=at).rev().find(|&i| text.is_char_boundary(i)).unwrap_or(0)
}

impl Default for LineBuffer {
    fn default() -> Self {
        LineBuffer::new()
    }
}

impl fmt::Write for LineBuffer {
    fn write_str(&mut self, text: &str) -> fmt::Result {
        if self.cut {
            return Ok(());
        }
        // Room for the cut mark and the newline is always kept back.
        let reserve = CUT_MARK.len() + 1;
        let room = MAX_LINE_BYTES - reserve - self.len();
        let mut bytes = text.as_bytes();
        if bytes.len() > room {
            bytes = &bytes[..char_floor(text, room)];
            self.cut = true;
        }
        if !self.try_append(bytes, reserve) {
            // The heap has no room: keep what fits inline and mark the line cut.
            let room = (INLINE_LINE_BYTES - reserve).saturating_sub(self.inline_len);
            let fits = if bytes.len() > room { char_floor(text, room) } else { bytes.len() };
            self.inline[self.inline_len..self.inline_len + fits].copy_from_slice(&bytes[..fits]);
            self.inline_len += fits;
            self.cut = true;
        }
        Ok(())
    }
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
