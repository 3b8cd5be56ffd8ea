//! A row of the unwind table in 29 bits, and the step up one frame it allows, for walking a
//! stack whose code keeps no frame pointers (where x29's chain says nothing).
//!
//! The kernel keeps one word per call site: the return address in the high half, a verdict and
//! this row in the low half, so that a walk step is a lookup, two loads and a few additions.
//! Rows that do not fit (a CFA that is neither sp nor x29 plus an offset, a frame over 32 KiB,
//! a register saved more than 2 KiB below the CFA, a return address not saved at all) have no
//! compact form; the kernel then unwinds with the full unwinder.

use crate::frame_record::{Row, Rule};
use gimli::Register;

const SP: Register = Register(31);
const FP: Register = Register(29);

/// Bit 0: the CFA is x29 plus the offset (else sp plus it).
const CFA_ON_FP: u32 = 1;
/// Bits 1-12: the CFA's offset in 8-byte units.
const OFFSET_SHIFT: u32 = 1;
const OFFSET_UNITS: u32 = 0xfff;
/// Bits 13-20: how many 8-byte units below the CFA the return address is saved (1-255).
const LR_SHIFT: u32 = 13;
/// Bits 21-28: the same for the caller's x29; 0 when x29 still holds the caller's value.
const FP_SHIFT: u32 = 21;
const SLOT_UNITS: u32 = 0xff;
/// The bits a compact row uses.
pub const BITS: u32 = 29;

/// A row in [`BITS`] bits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CompactRow(u32);

/// 8-byte units from a byte count, if it is a multiple of 8 in `1..=max` units (`0` allowed
/// only when `zero` is).
fn units(bytes: i64, max: u32, zero: bool) -> Option<u32> {
    if bytes % 8 != 0 {
        return None;
    }
    let units = u32::try_from(bytes / 8).ok()?;
    (units <= max && (zero || units > 0)).then_some(units)
}

impl CompactRow {
    /// The compact form of `row`, if it has one. Also refused: a frame of no size, and saved
    /// words outside the frame (more than its size below the CFA), so that a step never reads
    /// below the register the CFA is counted from, and always goes up.
    pub fn new(row: &Row) -> Option<CompactRow> {
        let (register, offset) = row.cfa?;
        let on_fp = match register {
            FP => CFA_ON_FP,
            SP => 0,
            _ => return None,
        };
        let offset = units(offset, OFFSET_UNITS, false)?;
        let lr = match row.lr {
            Rule::SavedAt(at) => units(-at, SLOT_UNITS.min(offset), false)?,
            _ => return None,
        };
        let fp = match row.fp {
            Rule::Unchanged => 0,
            Rule::SavedAt(at) => units(-at, SLOT_UNITS.min(offset), false)?,
            Rule::Other => return None,
        };
        Some(CompactRow(on_fp | offset << OFFSET_SHIFT | lr << LR_SHIFT | fp << FP_SHIFT))
    }

    /// The row's bits, for keeping in a word.
    pub fn bits(self) -> u32 {
        self.0
    }

    /// A row from [`bits`](Self::bits) (only the low [`BITS`] are read).
    pub fn from_bits(bits: u32) -> CompactRow {
        CompactRow(bits & ((1 << BITS) - 1))
    }
}

/// The two registers a walk follows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Regs {
    pub sp: u64,
    pub fp: u64,
}

/// One frame up from a function whose row at its current instruction is `row` and whose sp
/// and x29 are `regs`: its caller's sp and x29 at the call, and the return address into the
/// caller. `None` when the step would leave the stack: a CFA on an x29 below sp, or a CFA above
/// `top` (the stack's top). With what [`CompactRow::new`] refuses, every read is then between
/// sp and the top, and every step goes up. `read` reads the word at an address.
#[inline(always)]
pub fn step(row: CompactRow, regs: Regs, top: u64, read: impl Fn(u64) -> u64) -> Option<(Regs, u64)> {
    let bits = row.0;
    let base = if bits & CFA_ON_FP == 0 {
        regs.sp
    } else if regs.fp >= regs.sp {
        regs.fp
    } else {
        return None;
    };
    let cfa = base + u64::from(bits >> OFFSET_SHIFT & OFFSET_UNITS) * 8;
    if cfa > top {
        return None;
    }
    let return_address = read(cfa - u64::from(bits >> LR_SHIFT & SLOT_UNITS) * 8);
    let fp_below = u64::from(bits >> FP_SHIFT & SLOT_UNITS) * 8;
    let fp = if fp_below == 0 { regs.fp } else { read(cfa - fp_below) };
    Some((Regs { sp: cfa, fp }, return_address))
}
