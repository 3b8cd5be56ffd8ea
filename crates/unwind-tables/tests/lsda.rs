//! The reader against tables built here in the forms compilers emit, and against a plain
//! search over the same entries.

use beamcore_unwind_tables::lsda::{Action, LsdaError, action_at};
use proptest::prelude::*;

/// One call-site entry: start and length from the function's start, landing pad (0: none),
/// action index.
#[derive(Clone, Copy, Debug)]
struct Site {
    start: u64,
    length: u64,
    landing_pad: u64,
    action: u64,
}

fn uleb128(mut value: u64, out: &mut Vec<u8>) {
    loop {
        let byte = (value & 0x7f) as u8;
        value >>= 7;
        if value == 0 {
            out.push(byte);
            return;
        }
        out.push(byte | 0x80);
    }
}

/// A table with no landing-pad base, `type_table` (an offset, or none), the entries in
/// `encoding` (0x01 uleb128 or 0x03 udata4), and an action table of `trailing` bytes after.
fn table(encoding: u8, type_table: Option<u64>, sites: &[Site], trailing: usize) -> Vec<u8> {
    let mut entries = Vec::new();
    for site in sites {
        for value in [site.start, site.length, site.landing_pad] {
            match encoding {
                0x01 => uleb128(value, &mut entries),
                0x03 => entries.extend_from_slice(&(value as u32).to_le_bytes()),
                _ => unreachable!(),
            }
        }
        uleb128(site.action, &mut entries);
    }
    let mut out = vec![0xff];
    match type_table {
        Some(offset) => {
            out.push(0x9b);
            uleb128(offset, &mut out);
        }
        None => out.push(0xff),
    }
    out.push(encoding);
    uleb128(entries.len() as u64, &mut out);
    out.extend_from_slice(&entries);
    out.extend(std::iter::repeat_n(0x01, trailing));
    out
}

const FUNCTION: u64 = 0x4020_1000;

/// The rule the personality routine follows, stated plainly: the first entry whose range holds
/// `ip`, entries taken in order and the search ended by one starting after `ip`.
fn reference(sites: &[Site], ip: u64) -> Action {
    for site in sites {
        let start = FUNCTION + site.start;
        if ip < start {
            break;
        }
        if ip < start + site.length {
            return if site.landing_pad == 0 {
                Action::Nothing
            } else {
                Action::LandingPad(FUNCTION + site.landing_pad)
            };
        }
    }
    Action::Unlisted
}

fn sites() -> Vec<Site> {
    vec![
        Site { start: 0x10, length: 0x8, landing_pad: 0, action: 0 },
        Site { start: 0x18, length: 0x4, landing_pad: 0x80, action: 0 },
        Site { start: 0x1c, length: 0x30, landing_pad: 0, action: 0 },
        Site { start: 0x60, length: 0x4, landing_pad: 0x90, action: 1 },
    ]
}

#[test]
fn each_call_site_reads_as_listed() {
    for encoding in [0x01, 0x03] {
        let bytes = table(encoding, None, &sites(), 0);
        let at = |offset| action_at(&bytes, 0x5000, FUNCTION, FUNCTION + offset).unwrap();
        assert_eq!(at(0x10), Action::Nothing);
        assert_eq!(at(0x17), Action::Nothing);
        assert_eq!(at(0x18), Action::LandingPad(FUNCTION + 0x80));
        assert_eq!(at(0x1b), Action::LandingPad(FUNCTION + 0x80));
        assert_eq!(at(0x1c), Action::Nothing);
        assert_eq!(at(0x4b), Action::Nothing);
        assert_eq!(at(0x4c), Action::Unlisted, "between entries");
        assert_eq!(at(0x60), Action::LandingPad(FUNCTION + 0x90), "a catch is a landing pad too");
        assert_eq!(at(0x0), Action::Unlisted, "before the first entry");
        assert_eq!(at(0x64), Action::Unlisted, "after the last entry");
    }
}

#[test]
fn a_type_table_and_an_action_table_do_not_move_the_entries() {
    let bytes = table(0x01, Some(0x2345), &sites(), 7);
    assert_eq!(action_at(&bytes, 0, FUNCTION, FUNCTION + 0x18), Ok(Action::LandingPad(FUNCTION + 0x80)));
}

#[test]
fn an_absolute_landing_pad_base_is_used() {
    let mut bytes = table(0x01, None, &sites(), 0);
    bytes[0] = 0x00;
    for (i, byte) in 0x9000u64.to_le_bytes().into_iter().enumerate() {
        bytes.insert(1 + i, byte);
    }
    assert_eq!(action_at(&bytes, 0, FUNCTION, FUNCTION + 0x18), Ok(Action::LandingPad(0x9000 + 0x80)));
}

#[test]
fn a_cut_table_is_an_error_never_a_guess() {
    let bytes = table(0x03, None, &sites(), 0);
    for cut in 0..bytes.len() {
        let answer = action_at(&bytes[..cut], 0, FUNCTION, FUNCTION + 0x60);
        assert_eq!(answer, Err(LsdaError::Truncated), "cut at {cut}");
    }
}

#[test]
fn unknown_encodings_are_refused() {
    let mut bytes = table(0x01, None, &sites(), 0);
    let at = 2;
    bytes[at] = 0x81; // indirect uleb128: not a call-site form
    assert_eq!(action_at(&bytes, 0, FUNCTION, FUNCTION + 0x10), Err(LsdaError::Encoding(0x81)));
    bytes[at] = 0x11; // pc-relative: call-site fields are offsets
    assert_eq!(action_at(&bytes, 0, FUNCTION, FUNCTION + 0x10), Err(LsdaError::Encoding(0x11)));
    bytes[at] = 0x07;
    assert_eq!(action_at(&bytes, 0, FUNCTION, FUNCTION + 0x10), Err(LsdaError::Encoding(0x07)));
}

fn arbitrary_sites() -> impl Strategy<Value = Vec<Site>> {
    prop::collection::vec((1u64..64, 1u64..64, prop::option::of(1u64..4096), 0u64..300), 0..24).prop_map(|raw| {
        let mut next = 0;
        raw.into_iter()
            .map(|(gap, length, landing_pad, action)| {
                let start = next + gap - 1;
                next = start + length;
                Site { start, length, landing_pad: landing_pad.unwrap_or(0), action }
            })
            .collect()
    })
}

proptest! {
    #[test]
    fn agrees_with_the_plain_search(
        sites in arbitrary_sites(),
        encoding in prop::sample::select(vec![0x01u8, 0x03]),
        offset in 0u64..2200,
        trailing in 0usize..16,
    ) {
        let bytes = table(encoding, Some(12), &sites, trailing);
        let ip = FUNCTION + offset;
        prop_assert_eq!(action_at(&bytes, 0x1234, FUNCTION, ip), Ok(reference(&sites, ip)));
    }
}
