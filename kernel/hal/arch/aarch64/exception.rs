//! EL1 exceptions: the vector table (vectors.S), the saved context, and what each kind of
//! exception leads to.
//!
//! IRQs go to the interrupt handler registered at boot ([`set_handlers`]: the SMP layer's). A
//! synchronous exception taken from EL1 on SP_EL0 (a process) goes to the registered process
//! fault handler (the scheduler's), which ends that process (fault, or stack overflow when it
//! hit its guard page) and the kernel goes on. Any other exception, or one no handler claims,
//! is a kernel fault: it prints the exception class, ELR, FAR, every register and the
//! backtrace of the interrupted code, then a `PANIC` line, and exits QEMU with a failure status
//! (the console contract in README.md), through the kernel's way down registered first thing at
//! boot ([`set_fatal`]). This module names no layer above it: the boot code wires them in.

use core::fmt;
use core::sync::atomic::{AtomicUsize, Ordering};

use aarch64_cpu::registers::{ESR_EL1, FAR_EL1, Readable};
use tock_registers::LocalRegisterCopy;

use crate::debug::backtrace::Backtrace;

/// The exception class field's values (ESR_EL1.EC), as aarch64-cpu names them.
type Class = ESR_EL1::EC::Value;

/// What the kernel's exception handlers are; registered once at boot.
#[derive(Clone, Copy)]
pub struct Handlers {
    /// An IRQ taken from EL1 (a process or the kernel), with IRQs masked.
    pub irq: fn(&mut TrapFrame),
    /// A synchronous exception taken from EL1 on SP_EL0. Returns true when it was a process's
    /// and has been dealt with (the exception then returns where the frame now says); false
    /// makes it a kernel fault.
    pub process_fault: fn(&mut TrapFrame, &Syndrome) -> bool,
}

static HANDLERS: spin::Once<Handlers> = spin::Once::new();

/// Registers the handlers (the boot core, before any core unmasks IRQs). Later calls are
/// ignored.
pub fn set_handlers(handlers: Handlers) {
    HANDLERS.call_once(|| handlers);
}

/// How the kernel goes down: prints `details`, then a `PANIC` line with `message`, and ends the
/// run (the kernel crate's `panic::fatal`).
pub type Fatal = fn(details: fmt::Arguments<'_>, message: fmt::Arguments<'_>) -> !;

/// The registered [`Fatal`] as an address (0: none yet). A plain word rather than a `Once`: it
/// is written before the MMU is on, where exclusives are not to be relied on. Relaxed: the boot
/// core stores it before any other core runs or any exception is expected, and the other cores
/// are started after it (their start orders everything the boot core wrote before).
static FATAL: AtomicUsize = AtomicUsize::new(0);

/// Registers the kernel's way down. The boot core, first thing, before anything can fault.
pub fn set_fatal(fatal: Fatal) {
    FATAL.store(fatal as usize, Ordering::Relaxed);
}

/// Goes down through the registered [`Fatal`], or parks this core with IRQs masked if none is
/// registered yet (an exception before the boot core's first line of Rust: nothing to print
/// with).
fn go_down(details: fmt::Arguments<'_>, message: fmt::Arguments<'_>) -> ! {
    let fatal = FATAL.load(Ordering::Relaxed);
    if fatal != 0 {
        // SAFETY: a non-zero FATAL was stored by `set_fatal` from a value of type `Fatal`, and a
        // function pointer survives the round trip through `usize` (same size, no provenance
        // beyond the address on this target).
        let fatal: Fatal = unsafe { core::mem::transmute::<usize, Fatal>(fatal) };
        fatal(details, message)
    }
    let _ = super::cpu::irq_save();
    loop {
        super::cpu::wait_for_interrupt();
    }
}

/// Why a synchronous exception was taken: ESR_EL1 and FAR_EL1 as read on entry.
#[derive(Clone, Copy, Debug)]
pub struct Syndrome {
    pub esr: u64,
    pub far: u64,
}

impl Syndrome {
    /// The syndrome of the exception being handled.
    pub fn read() -> Syndrome {
        Syndrome { esr: ESR_EL1.get(), far: FAR_EL1.get() }
    }

    /// The exception class, if aarch64-cpu names it.
    pub fn class(&self) -> Option<Class> {
        LocalRegisterCopy::<u64, ESR_EL1::Register>::new(self.esr).read_as_enum(ESR_EL1::EC)
    }

    /// The exception class field as a number (what `ExitReason::Fault` reports).
    pub fn class_bits(&self) -> u8 {
        LocalRegisterCopy::<u64, ESR_EL1::Register>::new(self.esr).read(ESR_EL1::EC) as u8
    }

    /// A data abort taken without a change of exception level (a process's or the kernel's
    /// own load or store).
    pub fn is_data_abort_here(&self) -> bool {
        self.class() == Some(Class::DataAbortCurrentEL)
    }

    /// An abort's fault status code (ISS.DFSC/IFSC) says "translation fault" (the page is not
    /// mapped), at any level: 0b0001xx.
    pub fn is_translation_fault(&self) -> bool {
        self.is_abort() && self.esr & 0x3c == 0x04
    }

    /// An instruction or data abort, from this or a lower exception level: FAR holds the
    /// faulting address.
    pub fn is_abort(&self) -> bool {
        matches!(
            self.class(),
            Some(
                Class::InstrAbortLowerEL
                    | Class::InstrAbortCurrentEL
                    | Class::DataAbortLowerEL
                    | Class::DataAbortCurrentEL
            )
        )
    }

    /// The address the exception is about: FAR for an abort, else the instruction (ELR).
    pub fn fault_address(&self, frame: &TrapFrame) -> u64 {
        if self.is_abort() { self.far } else { frame.elr }
    }
}

core::arch::global_asm!(include_str!("vectors.S"));

/// The interrupted context, as `trap_common` in vectors.S lays it out.
#[repr(C)]
pub struct TrapFrame {
    pub x: [u64; 31],
    pub sp_el0: u64,
    pub elr: u64,
    pub spsr: u64,
    pub fpcr: u64,
    pub fpsr: u64,
    pub q: [u128; 32],
}

const _: () = assert!(core::mem::size_of::<TrapFrame>() == 800, "must match TRAP_FRAME_BYTES in vectors.S");

/// Which vector was taken: where from, and what kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Origin {
    CurrentElSp0,
    CurrentElSpx,
    LowerElAarch64,
    LowerElAarch32,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Synchronous,
    Irq,
    Fiq,
    SError,
}

fn decode(vector: u64) -> (Origin, Kind) {
    let origin = match vector / 4 {
        0 => Origin::CurrentElSp0,
        1 => Origin::CurrentElSpx,
        2 => Origin::LowerElAarch64,
        _ => Origin::LowerElAarch32,
    };
    let kind = match vector % 4 {
        0 => Kind::Synchronous,
        1 => Kind::Irq,
        2 => Kind::Fiq,
        _ => Kind::SError,
    };
    (origin, kind)
}

/// The exception class field of ESR_EL1, named.
pub fn class_name(esr: u64) -> &'static str {
    let Some(class) = (Syndrome { esr, far: 0 }).class() else { return "other exception class" };
    match class {
        Class::Unknown => "undefined instruction (EC 0, unknown reason)",
        Class::TrappedWFIorWFE => "WFI/WFE trapped",
        Class::TrappedFP => "FP/SIMD access trapped",
        Class::IllegalExecutionState => "illegal execution state",
        Class::SVC64 => "SVC from AArch64",
        Class::HVC64 => "HVC from AArch64",
        Class::SMC64 => "SMC from AArch64",
        Class::TrappedMsrMrs => "system register access trapped",
        Class::InstrAbortLowerEL => "instruction abort from a lower EL",
        Class::InstrAbortCurrentEL => "instruction abort (same EL)",
        Class::PCAlignmentFault => "PC alignment fault",
        Class::DataAbortLowerEL => "data abort from a lower EL",
        Class::DataAbortCurrentEL => "data abort (same EL)",
        Class::SPAlignmentFault => "SP alignment fault",
        Class::TrappedFP64 => "floating-point exception",
        Class::SError => "SError",
        Class::BreakpointLowerEL | Class::BreakpointCurrentEL => "breakpoint",
        Class::SoftwareStepLowerEL | Class::SoftwareStepCurrentEL => "software step",
        Class::WatchpointLowerEL | Class::WatchpointCurrentEL => "watchpoint",
        Class::Brk64 => "BRK instruction",
        _ => "other exception class",
    }
}

/// The fault status code of an abort (ISS.DFSC/IFSC), named.
fn fault_status_name(esr: u64) -> &'static str {
    match esr & 0x3f {
        0x04..=0x07 => "translation fault",
        0x09..=0x0b => "access flag fault",
        0x0d..=0x0f => "permission fault",
        0x21 => "alignment fault",
        0x10 => "synchronous external abort",
        0x30 => "TLB conflict",
        _ => "other fault",
    }
}

/// A fatal exception's description, printed before the `PANIC` line.
pub struct FaultReport<'a> {
    pub core: usize,
    pub origin: Origin,
    pub kind: Kind,
    pub esr: u64,
    pub far: u64,
    pub frame: &'a TrapFrame,
    /// The calls that led to the faulting instruction.
    pub backtrace: Backtrace,
}

impl fmt::Display for FaultReport<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let syndrome = Syndrome { esr: self.esr, far: self.far };
        writeln!(
            f,
            "exception: {:?} {:?} on core {}: {} (ESR_EL1={:#010x} EC={:#04x} ISS={:#x})",
            self.kind,
            self.origin,
            self.core,
            class_name(self.esr),
            self.esr,
            syndrome.class_bits(),
            self.esr & 0x1ff_ffff
        )?;
        if syndrome.is_abort() {
            // ISS.WnR (bit 6) of a data abort: the access was a write.
            let data = matches!(syndrome.class(), Some(Class::DataAbortLowerEL | Class::DataAbortCurrentEL));
            let access = if data && self.esr & (1 << 6) != 0 { "write" } else { "read" };
            writeln!(f, "  {}, {} access", fault_status_name(self.esr), access)?;
        }
        writeln!(
            f,
            "  ELR={:#018x} FAR={:#018x} SPSR={:#010x} SP_EL0={:#x}",
            self.frame.elr, self.far, self.frame.spsr, self.frame.sp_el0
        )?;
        for row in 0..8 {
            write!(f, " ")?;
            for col in 0..4 {
                let i = row * 4 + col;
                if i < 31 {
                    write!(f, " x{i:02}={:#018x}", self.frame.x[i])?;
                }
            }
            writeln!(f)?;
        }
        writeln!(f, "{}", self.backtrace)
    }
}

/// Called by vectors.S with the vector index and the saved context.
///
/// # Safety
/// Only vectors.S calls this, with `frame` pointing at the frame it just saved on this core's
/// stack.
#[unsafe(no_mangle)]
unsafe extern "C" fn exception_dispatch(vector: u64, frame: *mut TrapFrame) {
    // SAFETY: the frame lives on this core's stack for the duration of the call (contract).
    let frame = unsafe { &mut *frame };
    let (origin, kind) = decode(vector);
    let handlers = HANDLERS.get();
    if kind == Kind::Irq
        && matches!(origin, Origin::CurrentElSp0 | Origin::CurrentElSpx)
        && let Some(handlers) = handlers
    {
        (handlers.irq)(frame);
        return;
    }
    if kind == Kind::Synchronous
        && origin == Origin::CurrentElSp0
        && handlers.is_some_and(|h| (h.process_fault)(frame, &Syndrome::read()))
    {
        // A process faulted: it is ended and the exception returns into its core's scheduler.
        return;
    }
    let backtrace = Backtrace::of_exception(frame);
    let report = FaultReport {
        core: super::cpu::core_id(),
        origin,
        kind,
        esr: ESR_EL1.get(),
        far: FAR_EL1.get(),
        frame,
        backtrace,
    };
    let class = class_name(report.esr);
    go_down(format_args!("{report}"), format_args!("unexpected exception: {class}"));
}
