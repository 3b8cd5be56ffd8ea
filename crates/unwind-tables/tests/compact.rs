//! Compact rows: which rows have one, and that a step with one reads what the full row says.

use beamcore_unwind_tables::compact::{CompactRow, Regs, step};
use beamcore_unwind_tables::frame_record::{Row, Rule};
use gimli::Register;
use proptest::prelude::*;
use std::collections::HashMap;

const SP: Register = Register(31);
const FP: Register = Register(29);

fn row(cfa: (Register, i64), fp: Rule, lr: Rule) -> Row {
    Row { cfa: Some(cfa), fp, lr }
}

#[test]
fn rows_without_a_compact_form() {
    let saved = Rule::SavedAt(-8);
    assert!(CompactRow::new(&row((Register(19), 16), Rule::Unchanged, saved)).is_none(), "CFA on x19");
    assert!(CompactRow::new(&Row { cfa: None, fp: Rule::Unchanged, lr: saved }).is_none(), "CFA expression");
    assert!(CompactRow::new(&row((SP, 12), Rule::Unchanged, saved)).is_none(), "offset not a multiple of 8");
    assert!(CompactRow::new(&row((SP, 32768), Rule::Unchanged, saved)).is_none(), "frame over 32 KiB");
    assert!(CompactRow::new(&row((SP, 16), Rule::Unchanged, Rule::Unchanged)).is_none(), "return address in x30");
    assert!(CompactRow::new(&row((SP, 16), Rule::Unchanged, Rule::SavedAt(-2048))).is_none(), "saved too far down");
    assert!(CompactRow::new(&row((SP, 16), Rule::Other, saved)).is_none(), "x29 elsewhere");
    assert!(CompactRow::new(&row((SP, 16), Rule::Unchanged, Rule::SavedAt(8))).is_none(), "saved above the CFA");
    assert!(CompactRow::new(&row((SP, 0), Rule::Unchanged, saved)).is_none(), "a frame of no size");
    assert!(CompactRow::new(&row((SP, 16), Rule::SavedAt(-24), saved)).is_none(), "x29 saved outside the frame");
    assert!(CompactRow::new(&row((FP, 8), Rule::Unchanged, Rule::SavedAt(-16))).is_none(), "x30 outside the frame");
    assert!(CompactRow::new(&row((SP, 32760), Rule::SavedAt(-2040), saved)).is_some(), "the largest that fit");
}

/// A stack as a map of words.
fn reader(words: &HashMap<u64, u64>) -> impl Fn(u64) -> u64 + '_ {
    move |address| *words.get(&address).unwrap_or_else(|| panic!("read outside the frame at {address:#x}"))
}

#[test]
fn a_step_on_sp_reads_the_saved_pair() {
    // sub sp, sp, #48; stp x29, x30, [sp, #32]: CFA = sp + 48, x29 at CFA - 16, x30 at CFA - 8.
    let compact = CompactRow::new(&row((SP, 48), Rule::SavedAt(-16), Rule::SavedAt(-8))).unwrap();
    let words = HashMap::from([(0x1020, 0xaaaa), (0x1028, 0x4020_1234)]);
    let regs = Regs { sp: 0x1000, fp: 0x7777 };
    assert_eq!(step(compact, regs, 0x2000, reader(&words)), Some((Regs { sp: 0x1030, fp: 0xaaaa }, 0x4020_1234)));
}

#[test]
fn a_step_on_x29_uses_it_and_an_unchanged_x29_is_kept() {
    let compact = CompactRow::new(&row((FP, 80), Rule::SavedAt(-80), Rule::SavedAt(-72))).unwrap();
    let words = HashMap::from([(0x1020, 0x1100), (0x1028, 0x4020_5678)]);
    let regs = Regs { sp: 0x1000, fp: 0x1020 };
    assert_eq!(step(compact, regs, 0x2000, reader(&words)), Some((Regs { sp: 0x1070, fp: 0x1100 }, 0x4020_5678)));
    let keeps = CompactRow::new(&row((SP, 16), Rule::Unchanged, Rule::SavedAt(-8))).unwrap();
    let words = HashMap::from([(0x1008, 0x4020_0004)]);
    assert_eq!(
        step(keeps, Regs { sp: 0x1000, fp: 0x5555 }, 0x2000, reader(&words)),
        Some((Regs { sp: 0x1010, fp: 0x5555 }, 0x4020_0004))
    );
}

#[test]
fn a_step_never_leaves_the_stack() {
    let compact = CompactRow::new(&row((SP, 48), Rule::SavedAt(-16), Rule::SavedAt(-8))).unwrap();
    let none = HashMap::new();
    assert_eq!(step(compact, Regs { sp: 0x1fe0, fp: 0 }, 0x2000, reader(&none)), None, "CFA above the top");
    let on_fp = CompactRow::new(&row((FP, 16), Rule::SavedAt(-16), Rule::SavedAt(-8))).unwrap();
    assert_eq!(step(on_fp, Regs { sp: 0x1000, fp: 0x0ff8 }, 0x2000, reader(&none)), None, "x29 below sp");
}

proptest! {
    /// Whatever row fits, its compact form reads the words the full row names, never below sp
    /// nor above the top, and goes up.
    #[test]
    fn compact_steps_read_what_the_row_says(
        on_fp in any::<bool>(),
        offset in 1i64..4096,
        lr in 1i64..256,
        fp in prop::option::of(1i64..256),
        sp in (0x1000u64..0x2000).prop_map(|s| s * 16),
        fp_value in (0x0f00u64..0x3000).prop_map(|s| s * 16),
    ) {
        let full = row(
            (if on_fp { FP } else { SP }, offset * 8),
            fp.map_or(Rule::Unchanged, |f| Rule::SavedAt(-8 * f)),
            Rule::SavedAt(-8 * lr),
        );
        let fits = lr <= offset && fp.is_none_or(|f| f <= offset);
        let Some(compact) = CompactRow::new(&full) else {
            prop_assert!(!fits);
            return Ok(());
        };
        prop_assert!(fits);
        prop_assert_eq!(CompactRow::from_bits(compact.bits()), compact);
        let top = 0x4_0000;
        let read = |address: u64| {
            assert!(address >= sp && address + 8 <= top, "read at {address:#x} outside sp {sp:#x}..top");
            address ^ 0x5a5a
        };
        let result = step(compact, Regs { sp, fp: fp_value }, top, read);
        let base = if on_fp { fp_value } else { sp };
        let cfa = base + offset as u64 * 8;
        if base < sp || cfa > top {
            prop_assert_eq!(result, None);
        } else {
            let expected_fp = fp.map_or(fp_value, |f| read(cfa - 8 * f as u64));
            prop_assert_eq!(result, Some((Regs { sp: cfa, fp: expected_fp }, read(cfa - 8 * lr as u64))));
            prop_assert!(cfa > sp);
        }
    }
}
