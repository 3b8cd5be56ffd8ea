//! Backtraces on the console: the chain of calls that led to a panic, an unexpected exception
//! or a process's fault, each frame named from the kernel's own symbol table.
//!
//! A backtrace is collected at once (the frame records it follows may be overwritten as soon
//! as the code that took it calls anything) and printed later as
//!
//! ```text
//! backtrace:
//!   #0 0x000000004020039c __rustc::rust_begin_unwind+0x30
//!   #1 0x0000000040229aa4 core::panicking::panic_fmt+0x28
//!   #2 0x00000000402002c8 _52_backtrace_kernel_panic::kernel_inner_function+0x58
//!   #3 0x0000000040212340 beamcore::sched::entry::call_in_place+0x37c
//!        inlined: supervision_tree::fragile::flaky
//!        inlined: supervision_tree::fragile::start::{{closure}}
//!   ...
//! ```
//!
//! The `inlined:` lines under a frame are the functions whose code the address lies in although
//! they have no frame of their own (the compiler inlined them into the frame's function),
//! innermost first, as `llvm-addr2line -i` lists them; the standard library's own (core, alloc)
//! are left out. They come from the inline part of the image's table, which an image built
//! without debug information does not have.
//!
//! The walk reads only this core's boot stack and the stack of the process running on it, and
//! checks every frame record first (`unwind`), so taking a backtrace never faults. Should a
//! panic or fault happen while one is taken all the same, the backtrace taken on the way down
//! from it is left empty rather than recurse.

use core::arch::asm;
use core::fmt;
use core::ops::Range;
use core::sync::atomic::{AtomicBool, Ordering};

use super::symbols::{SymbolTable, kernel_symbols};
use super::unwind::{self, MAX_FRAMES, Stop, Walk};
use crate::arch::context::on_kernel_stack;
use crate::arch::cpu;
use crate::arch::exception::TrapFrame;
use crate::layout::{self, MAX_CORES};

/// The most `inlined:` lines one frame prints (deeper chains are cut at the innermost ones).
const MAX_INLINED: usize = 8;

/// A chain of code addresses, innermost first.
pub struct Backtrace {
    /// The exact address of the instruction that trapped, for a backtrace of an exception;
    /// the other entries are return addresses.
    pc: Option<u64>,
    /// `None` when this core was already taking a backtrace (see [`walk_from`]).
    walk: Option<Walk>,
}

/// Per core: a backtrace is being taken. Relaxed: only the core itself reads and writes its own.
static TAKING: [AtomicBool; MAX_CORES] = [const { AtomicBool::new(false) }; MAX_CORES];

/// The stacks a walk on this core may read: its boot stack (the kernel, its scheduler and every
/// exception run there) and the stack of the process it is running, if any.
fn stacks_of_this_core() -> [Range<usize>; 2] {
    let core = cpu::core_id();
    let boot = if core < MAX_CORES {
        let (_guard, start, top) = layout::image().boot_stack(core);
        start..top
    } else {
        0..0
    };
    let process = PROCESS_STACK.get().and_then(|lookup| lookup()).unwrap_or(0..0);
    [boot, process]
}

/// Where the stack of the process this core runs lies, if it runs one: the scheduler's
/// answer, registered at boot ([`set_process_stack_lookup`]). This layer sits below the
/// scheduler and cannot name it; until one is registered, walks keep to the boot stack.
static PROCESS_STACK: spin::Once<fn() -> Option<Range<usize>>> = spin::Once::new();

/// Registers the scheduler's lookup of the running process's mapped stack (the boot core,
/// once; later calls are ignored).
pub fn set_process_stack_lookup(lookup: fn() -> Option<Range<usize>>) {
    PROCESS_STACK.call_once(|| lookup);
}

/// The walk from `fp`, or `None` if this core is already in the middle of one (a panic or fault
/// while taking a backtrace, which would otherwise take another, and so on) or has no valid id.
fn walk_from(fp: u64, symbols: &SymbolTable<'_>) -> Option<Walk> {
    let taking = TAKING.get(cpu::core_id())?;
    if taking.swap(true, Ordering::Relaxed) {
        return None;
    }
    let stacks = stacks_of_this_core();
    // SAFETY: `unwind::walk` reads only 8-aligned words whose 16-byte record lies wholly inside
    // one of `stacks`: this core's boot stack without its guard page, and the mapped part of the
    // running process's stack (`sched::current_stack`; the part it has not grown into is not
    // mapped and is left out), both mapped read-write (identity before the MMU is on) for as
    // long as this core runs on them. The words may be stale, never unmapped.
    let read = |address: usize| unsafe { (address as *const u64).read_volatile() };
    let walk = unwind::walk(fp, &stacks, read, |address| symbols.is_code(address));
    taking.store(false, Ordering::Relaxed);
    Some(walk)
}

impl Backtrace {
    /// The calls that led to the caller of this function, starting with the caller itself.
    #[inline(never)]
    pub fn here() -> Backtrace {
        let fp: u64;
        // SAFETY: reads x29, this function's frame pointer (frame pointers are kept), with no
        // other effect.
        unsafe { asm!("mov {}, x29", out(reg) fp, options(nomem, nostack, preserves_flags)) };
        // On the kernel stack: a panic on a process's stack takes its backtrace first, and the
        // walk must never be what runs that stack out (a fault between setting and clearing
        // `TAKING` would leave every later backtrace on this core empty).
        Backtrace { pc: None, walk: on_kernel_stack(|| walk_from(fp, &kernel_symbols())) }
    }

    /// The calls that led to the instruction an exception interrupted: its address (ELR), then
    /// the return addresses of the frame records from its x29.
    pub fn of_exception(frame: &TrapFrame) -> Backtrace {
        Backtrace { pc: Some(frame.elr), walk: walk_from(frame.x[29], &kernel_symbols()) }
    }

    /// The addresses, innermost first: the trapping instruction (if any), then return addresses.
    pub fn addresses(&self) -> impl Iterator<Item = u64> + '_ {
        self.pc.into_iter().chain(self.walk.iter().flat_map(|walk| walk.frames().iter().copied()))
    }
}

impl fmt::Display for Backtrace {
    /// `backtrace:` and one `  #<n> <address> <function>+<offset>` line per frame (`?` when the
    /// address is in no function), then why the walk stopped if it was not the outermost frame.
    /// No newline after the last line.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let symbols = kernel_symbols();
        write!(f, "backtrace:")?;
        if symbols.is_empty() {
            write!(f, "\n  (no symbol table in this image: addresses only)")?;
        }
        for (index, address) in self.addresses().enumerate() {
            // A return address follows its call: look up the call itself, or a call that is
            // the last instruction of a function would be named after the next one.
            let is_return = index > 0 || self.pc.is_none();
            let within = if is_return { address.wrapping_sub(4) } else { address };
            write!(f, "\n  #{index} {address:#018x} ")?;
            match symbols.lookup(within) {
                Some(symbol) => write!(f, "{symbol}+{:#x}", address - symbol.start)?,
                None => write!(f, "?")?,
            }
            for name in symbols.inlined(within).take(MAX_INLINED) {
                write!(f, "\n       inlined: {name}")?;
            }
        }
        let Some(walk) = &self.walk else {
            return write!(f, "\n  (no frames: this core was already taking a backtrace, or has no id yet)");
        };
        match walk.stop {
            Stop::End => Ok(()),
            Stop::DepthLimit => write!(f, "\n  (stopped after {MAX_FRAMES} frames)"),
            Stop::Misaligned(fp) => write!(f, "\n  (stopped: frame pointer {fp:#x} is not aligned)"),
            Stop::OutsideStack(fp) => write!(f, "\n  (stopped: frame pointer {fp:#x} is outside the stack)"),
            Stop::NotAscending(fp) => write!(f, "\n  (stopped: frame pointer {fp:#x} does not lead outwards)"),
            Stop::NotCode(address) => write!(f, "\n  (stopped: return address {address:#x} is not in the code)"),
        }
    }
}
