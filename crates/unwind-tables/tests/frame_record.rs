//! The frame-record reading against the prologues and epilogues compilers emit for AArch64,
//! written as the call-frame instructions they come with.

use beamcore_unwind_tables::frame_record::{CfiError, Factors, holds_record_at};
use gimli::{CallFrameInstruction as I, Register};

const SP: Register = Register(31);
const FP: Register = Register(29);
const LR: Register = Register(30);
const START: u64 = 0x4020_0000;
/// LLVM's factors for AArch64: locations in bytes, saved registers in 8-byte steps down.
const FACTORS: Factors = Factors { code: 1, data: -8 };

fn cie() -> Vec<I<usize>> {
    vec![I::DefCfa { register: SP, offset: 0 }]
}

fn at(cie: &[I<usize>], fde: &[I<usize>], factors: Factors, offset: u64) -> Result<bool, CfiError> {
    holds_record_at(cie.iter().cloned().map(Ok), fde.iter().cloned().map(Ok), factors, START, START + offset)
}

/// `stp x29, x30, [sp, #-16]!` then `mov x29, sp`, described once after the second.
fn record_at_bottom() -> Vec<I<usize>> {
    vec![
        I::AdvanceLoc { delta: 8 },
        I::DefCfa { register: FP, offset: 16 },
        I::Offset { register: LR, factored_offset: 1 },
        I::Offset { register: FP, factored_offset: 2 },
    ]
}

#[test]
fn the_usual_prologue_holds_the_record_once_x29_is_set() {
    let fde = record_at_bottom();
    assert_eq!(at(&cie(), &fde, FACTORS, 0), Ok(false), "first instruction: nothing saved yet");
    assert_eq!(at(&cie(), &fde, FACTORS, 4), Ok(false), "x29 not yet set");
    assert_eq!(at(&cie(), &fde, FACTORS, 8), Ok(true));
    assert_eq!(at(&cie(), &fde, FACTORS, 0x400), Ok(true), "the row lasts to the function's end");
}

#[test]
fn a_record_above_the_bottom_of_the_frame_counts() {
    // core::fmt::write: sub sp, sp, #112; stp x29, x30, [sp, #32]; ...; add x29, sp, #32.
    let fde = vec![
        I::AdvanceLoc { delta: 28 },
        I::DefCfa { register: FP, offset: 80 },
        I::Offset { register: LR, factored_offset: 9 },
        I::Offset { register: FP, factored_offset: 10 },
        I::Offset { register: Register(19), factored_offset: 12 },
    ];
    assert_eq!(at(&cie(), &fde, FACTORS, 40), Ok(true));
}

#[test]
fn a_frame_without_a_frame_pointer_does_not() {
    // Saved x29 and x30, but the CFA stays sp-based: x29 is the caller's, not this frame's.
    let fde = vec![
        I::AdvanceLoc { delta: 4 },
        I::DefCfaOffset { offset: 48 },
        I::Offset { register: LR, factored_offset: 1 },
        I::Offset { register: FP, factored_offset: 2 },
    ];
    assert_eq!(at(&cie(), &fde, FACTORS, 16), Ok(false));
}

#[test]
fn swapped_or_misplaced_saves_do_not() {
    let swapped = vec![
        I::AdvanceLoc { delta: 8 },
        I::DefCfa { register: FP, offset: 16 },
        I::Offset { register: LR, factored_offset: 2 },
        I::Offset { register: FP, factored_offset: 1 },
    ];
    assert_eq!(at(&cie(), &swapped, FACTORS, 8), Ok(false));
    let elsewhere = vec![
        I::AdvanceLoc { delta: 8 },
        I::DefCfa { register: FP, offset: 32 },
        I::Offset { register: LR, factored_offset: 1 },
        I::Offset { register: FP, factored_offset: 2 },
    ];
    assert_eq!(at(&cie(), &elsewhere, FACTORS, 8), Ok(false), "x29 is 16 bytes below its record");
    let mut moved = record_at_bottom();
    moved.push(I::AdvanceLoc { delta: 8 });
    moved.push(I::Register { dest_register: LR, src_register: Register(9) });
    assert_eq!(at(&cie(), &moved, FACTORS, 12), Ok(true), "before the move");
    assert_eq!(at(&cie(), &moved, FACTORS, 16), Ok(false), "return address kept in x9");
}

#[test]
fn an_epilogue_inside_the_function_is_followed_and_restored() {
    // A return in the middle: remember, undo the frame, return; the code after it has the
    // frame again.
    let mut fde = record_at_bottom();
    fde.extend([
        I::AdvanceLoc { delta: 0x20 },
        I::RememberState,
        I::DefCfa { register: SP, offset: 16 },
        I::AdvanceLoc { delta: 4 },
        I::DefCfaOffset { offset: 0 },
        I::Restore { register: LR },
        I::Restore { register: FP },
        I::AdvanceLoc { delta: 4 },
        I::RestoreState,
    ]);
    assert_eq!(at(&cie(), &fde, FACTORS, 0x27), Ok(true), "before the epilogue");
    assert_eq!(at(&cie(), &fde, FACTORS, 0x28), Ok(false), "sp-based CFA");
    assert_eq!(at(&cie(), &fde, FACTORS, 0x2c), Ok(false), "registers restored");
    assert_eq!(at(&cie(), &fde, FACTORS, 0x30), Ok(true), "state restored after the return");
}

#[test]
fn factors_scale_locations_and_offsets() {
    let fde = vec![
        I::AdvanceLoc { delta: 2 },
        I::DefCfaSf { register: FP, factored_offset: -4 },
        I::Offset { register: LR, factored_offset: 2 },
        I::OffsetExtendedSf { register: FP, factored_offset: 4 },
    ];
    let factors = Factors { code: 4, data: -4 };
    assert_eq!(at(&cie(), &fde, factors, 7), Ok(false), "advance of 2 is 8 bytes");
    assert_eq!(at(&cie(), &fde, factors, 8), Ok(true));
}

#[test]
fn set_location_moves_too() {
    let fde = vec![
        I::SetLoc { address: START + 12 },
        I::DefCfa { register: FP, offset: 16 },
        I::Offset { register: LR, factored_offset: 1 },
        I::Offset { register: FP, factored_offset: 2 },
    ];
    assert_eq!(at(&cie(), &fde, FACTORS, 11), Ok(false));
    assert_eq!(at(&cie(), &fde, FACTORS, 12), Ok(true));
    let backwards = vec![I::SetLoc { address: START + 12 }, I::SetLoc { address: START + 4 }];
    assert_eq!(at(&cie(), &backwards, FACTORS, 20), Err(CfiError::Malformed));
}

#[test]
fn state_errors_are_reported() {
    let deep: Vec<I<usize>> = (0..5).map(|_| I::RememberState).collect();
    assert_eq!(at(&cie(), &deep, FACTORS, 0), Err(CfiError::TooDeep));
    let none = vec![I::RestoreState];
    assert_eq!(at(&cie(), &none, FACTORS, 0), Err(CfiError::NothingRemembered));
    let moving_cie = vec![I::AdvanceLoc { delta: 4 }];
    assert_eq!(at(&moving_cie, &record_at_bottom(), FACTORS, 8), Err(CfiError::Malformed));
}

#[test]
fn a_parse_error_is_an_error() {
    let result = holds_record_at::<usize, _, _>(
        cie().into_iter().map(Ok),
        [Err(gimli::Error::UnexpectedEof(gimli::ReaderOffsetId(0)))],
        FACTORS,
        START,
        START,
    );
    assert_eq!(result, Err(CfiError::Parse));
}

#[test]
fn the_row_says_where_each_value_is() {
    use beamcore_unwind_tables::frame_record::{Row, Rule, row_at};
    // No frame pointer: CFA = sp + 48, x30 at CFA - 8, x29 at CFA - 16.
    let fde = vec![
        I::AdvanceLoc { delta: 4 },
        I::DefCfaOffset { offset: 48 },
        I::Offset { register: LR, factored_offset: 1 },
        I::Offset { register: FP, factored_offset: 2 },
    ];
    let row = row_at(cie().into_iter().map(Ok), fde.into_iter().map(Ok), FACTORS, START, START + 8).unwrap();
    assert_eq!(row, Row { cfa: Some((SP, 48)), fp: Rule::SavedAt(-16), lr: Rule::SavedAt(-8) });
    assert!(!row.holds_record());
    // A leaf: nothing saved, the return address still in x30.
    let row = row_at(cie().into_iter().map(Ok), std::iter::empty(), FACTORS, START, START).unwrap();
    assert_eq!(row, Row { cfa: Some((SP, 0)), fp: Rule::Unchanged, lr: Rule::Unchanged });
}
