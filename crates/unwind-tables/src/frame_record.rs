//! Whether, at a given instruction of a function, x29 points at the function's own frame
//! record: the caller's x29 saved at `[x29]` and the return address at `[x29 + 8]`, read from the
//! function's call-frame instructions (its CIE's initial ones, then its FDE's, up to the
//! instruction).
//!
//! AArch64 code built with frame pointers sets x29 to its record in the prologue, but not
//! always at the bottom of its frame (`core::fmt::write` keeps its record 32 bytes above sp,
//! with the CFA 80 bytes above x29), and code built without them uses x29 as it likes. The
//! tables say which: the record is where the CFA is x29 plus some `c`, and the caller's x29 and
//! the return address are saved at CFA - c and CFA - c + 8. Only x29, x30 and the CFA are
//! followed, so a row is three small values where a general unwinder keeps a rule for every
//! register.

use gimli::{CallFrameInstruction, ReaderOffset, Register};

/// The frame pointer, x29, in DWARF's numbering for AArch64.
const FP: Register = Register(29);
/// The link register, x30, which holds the return address at a call.
const LR: Register = Register(30);
/// Nesting of `DW_CFA_remember_state` this reader follows (compilers use one level).
const REMEMBERED: usize = 4;

/// Why the instructions could not be followed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CfiError {
    /// The parser failed on the instructions.
    Parse,
    /// A location that goes backwards, a CIE that moves the location, an offset out of range.
    Malformed,
    /// More `DW_CFA_remember_state` nesting than this reader keeps.
    TooDeep,
    /// `DW_CFA_restore_state` with nothing remembered.
    NothingRemembered,
}

/// Where a register's value of the caller is, as far as this reader tells.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rule {
    /// Unchanged (the register still holds the caller's value).
    Unchanged,
    /// Saved at the CFA plus this.
    SavedAt(i64),
    /// Anything else (another register, an expression, undefined).
    Other,
}

/// The row of the unwind table at one instruction, for what a walk needs: the CFA (the
/// caller's sp), and where the caller's x29 and the return address (x30) are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Row {
    /// The CFA as a register plus an offset; `None` for an expression, or before any rule.
    pub cfa: Option<(Register, i64)>,
    pub fp: Rule,
    pub lr: Rule,
}

impl Row {
    const START: Row = Row { cfa: None, fp: Rule::Unchanged, lr: Rule::Unchanged };

    fn rule(&mut self, register: Register) -> Option<&mut Rule> {
        match register {
            FP => Some(&mut self.fp),
            LR => Some(&mut self.lr),
            _ => None,
        }
    }

    /// Whether x29 points at this frame's record: the caller's x29, then the return address.
    pub fn holds_record(&self) -> bool {
        match self.cfa {
            Some((FP, c)) => self.fp == Rule::SavedAt(-c) && self.lr == Rule::SavedAt(8 - c),
            _ => false,
        }
    }
}

/// The alignment factors of the function's CIE, by which instructions scale their operands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Factors {
    pub code: u64,
    pub data: i64,
}

/// Whether x29 points at the frame record at `ip`, in the function starting at
/// `function_start` whose CIE's initial instructions are `cie` and FDE's are `fde`.
pub fn holds_record_at<T, C, F>(
    cie: C,
    fde: F,
    factors: Factors,
    function_start: u64,
    ip: u64,
) -> Result<bool, CfiError>
where
    T: ReaderOffset,
    C: IntoIterator<Item = Result<CallFrameInstruction<T>, gimli::Error>>,
    F: IntoIterator<Item = Result<CallFrameInstruction<T>, gimli::Error>>,
{
    row_at(cie, fde, factors, function_start, ip).map(|row| row.holds_record())
}

/// The row at `ip` (as [`holds_record_at`] takes its arguments).
pub fn row_at<T, C, F>(cie: C, fde: F, factors: Factors, function_start: u64, ip: u64) -> Result<Row, CfiError>
where
    T: ReaderOffset,
    C: IntoIterator<Item = Result<CallFrameInstruction<T>, gimli::Error>>,
    F: IntoIterator<Item = Result<CallFrameInstruction<T>, gimli::Error>>,
{
    let mut row = Row::START;
    for instruction in cie {
        let instruction = instruction.map_err(|_| CfiError::Parse)?;
        if matches!(instruction, CallFrameInstruction::SetLoc { .. } | CallFrameInstruction::AdvanceLoc { .. }) {
            return Err(CfiError::Malformed);
        }
        apply(&mut row, &Row::START, &mut Remembered::default(), instruction, factors)?;
    }
    let initial = row;
    let mut remembered = Remembered::default();
    let mut location = function_start;
    for instruction in fde {
        let instruction = instruction.map_err(|_| CfiError::Parse)?;
        let next = match instruction {
            CallFrameInstruction::AdvanceLoc { delta } => {
                Some(location.checked_add(u64::from(delta) * factors.code).ok_or(CfiError::Malformed)?)
            }
            CallFrameInstruction::SetLoc { address } if address < location => return Err(CfiError::Malformed),
            CallFrameInstruction::SetLoc { address } => Some(address),
            _ => None,
        };
        match next {
            // The row built so far covers every instruction before `next`, `ip` among them.
            Some(next) if next > ip => break,
            Some(next) => location = next,
            None => apply(&mut row, &initial, &mut remembered, instruction, factors)?,
        }
    }
    Ok(row)
}

/// Rows put aside by `DW_CFA_remember_state`.
#[derive(Default)]
struct Remembered {
    rows: [Option<Row>; REMEMBERED],
    depth: usize,
}

fn scaled(factored: i64, factor: i64) -> Result<i64, CfiError> {
    factored.checked_mul(factor).ok_or(CfiError::Malformed)
}

fn signed(value: u64) -> Result<i64, CfiError> {
    i64::try_from(value).map_err(|_| CfiError::Malformed)
}

/// One instruction that is not a location change, applied to `row`.
fn apply<T: ReaderOffset>(
    row: &mut Row,
    initial: &Row,
    remembered: &mut Remembered,
    instruction: CallFrameInstruction<T>,
    factors: Factors,
) -> Result<(), CfiError> {
    use CallFrameInstruction as I;
    match instruction {
        I::DefCfa { register, offset } => row.cfa = Some((register, signed(offset)?)),
        I::DefCfaSf { register, factored_offset } => {
            row.cfa = Some((register, scaled(factored_offset, factors.data)?));
        }
        I::DefCfaRegister { register } => row.cfa = row.cfa.map(|(_, offset)| (register, offset)),
        I::DefCfaOffset { offset } => {
            let offset = signed(offset)?;
            row.cfa = row.cfa.map(|(register, _)| (register, offset));
        }
        I::DefCfaOffsetSf { factored_offset } => {
            let offset = scaled(factored_offset, factors.data)?;
            row.cfa = row.cfa.map(|(register, _)| (register, offset));
        }
        I::DefCfaExpression { .. } => row.cfa = None,
        I::Offset { register, factored_offset } => {
            let at = scaled(signed(factored_offset)?, factors.data)?;
            if let Some(rule) = row.rule(register) {
                *rule = Rule::SavedAt(at);
            }
        }
        I::OffsetExtendedSf { register, factored_offset } => {
            let at = scaled(factored_offset, factors.data)?;
            if let Some(rule) = row.rule(register) {
                *rule = Rule::SavedAt(at);
            }
        }
        I::SameValue { register } => {
            if let Some(rule) = row.rule(register) {
                *rule = Rule::Unchanged;
            }
        }
        I::Undefined { register }
        | I::ValOffset { register, .. }
        | I::ValOffsetSf { register, .. }
        | I::Register { dest_register: register, .. }
        | I::Expression { register, .. }
        | I::ValExpression { register, .. } => {
            if let Some(rule) = row.rule(register) {
                *rule = Rule::Other;
            }
        }
        I::Restore { register } => {
            let mut initial = *initial;
            if let (Some(rule), Some(first)) = (row.rule(register), initial.rule(register)) {
                *rule = *first;
            }
        }
        I::RememberState => {
            let slot = remembered.rows.get_mut(remembered.depth).ok_or(CfiError::TooDeep)?;
            *slot = Some(*row);
            remembered.depth += 1;
        }
        I::RestoreState => {
            remembered.depth = remembered.depth.checked_sub(1).ok_or(CfiError::NothingRemembered)?;
            let saved = remembered.rows[remembered.depth].take().ok_or(CfiError::NothingRemembered)?;
            // The CFA rule is part of the remembered state, as DWARF 5 (6.4.2.4) and LLVM's
            // epilogues expect.
            *row = saved;
        }
        I::ArgsSize { .. } | I::NegateRaState | I::Nop | I::SetLoc { .. } | I::AdvanceLoc { .. } => {}
    }
    Ok(())
}
