//! EL1 exceptions: the vector table (vectors.S), the saved context, and what each kind of
//! exception leads to.
//!
//! IRQs go to the interrupt dispatcher. A synchronous exception taken from a process (EL1 on
//! SP_EL0) ends that process (fault, or stack overflow when it hit its guard page) and the
//! kernel goes on. Any other exception is a kernel fault: it prints the exception class, ELR,
//! FAR, every register and the backtrace of the interrupted code, then a `PANIC` line, and
//! exits QEMU with a failure status (the console contract in README.md).

use core::fmt;

use aarch64_cpu::registers::{ESR_EL1, FAR_EL1, Readable};

use crate::debug::backtrace::Backtrace;

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
    match (esr >> 26) & 0x3f {
        0x00 => "undefined instruction (EC 0, unknown reason)",
        0x01 => "WFI/WFE trapped",
        0x07 => "FP/SIMD access trapped",
        0x0e => "illegal execution state",
        0x15 => "SVC from AArch64",
        0x16 => "HVC from AArch64",
        0x17 => "SMC from AArch64",
        0x18 => "system register access trapped",
        0x20 => "instruction abort from a lower EL",
        0x21 => "instruction abort (same EL)",
        0x22 => "PC alignment fault",
        0x24 => "data abort from a lower EL",
        0x25 => "data abort (same EL)",
        0x26 => "SP alignment fault",
        0x2c => "floating-point exception",
        0x2f => "SError",
        0x30 | 0x31 => "breakpoint",
        0x32 | 0x33 => "software step",
        0x34 | 0x35 => "watchpoint",
        0x3c => "BRK instruction",
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
        let class = (self.esr >> 26) & 0x3f;
        writeln!(
            f,
            "exception: {:?} {:?} on core {}: {} (ESR_EL1={:#010x} EC={:#04x} ISS={:#x})",
            self.kind,
            self.origin,
            self.core,
            class_name(self.esr),
            self.esr,
            class,
            self.esr & 0x1ff_ffff
        )?;
        if matches!(class, 0x20 | 0x21 | 0x24 | 0x25) {
            let access = if class >= 0x24 && self.esr & (1 << 6) != 0 { "write" } else { "read" };
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
    if kind == Kind::Irq && matches!(origin, Origin::CurrentElSp0 | Origin::CurrentElSpx) {
        crate::smp::handle_irq(frame);
        return;
    }
    if kind == Kind::Synchronous
        && origin == Origin::CurrentElSp0
        && crate::sched::on_process_fault(frame, ESR_EL1.get(), FAR_EL1.get())
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
    crate::panic::fatal(format_args!("{report}"), format_args!("unexpected exception: {class}"));
}
