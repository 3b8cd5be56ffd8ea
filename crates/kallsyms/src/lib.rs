//! The kernel's table of its own functions (like Linux's kallsyms), so a backtrace can name
//! them on the console itself: on a board's UART there is no debugger and no ELF to look in.
//!
//! `scripts/link-kallsyms.py` links every kernel twice and puts the table of the first link's
//! code in the `.kallsyms` section of the second (`scripts/ksyms.py` writes it, and documents
//! the format this module reads). Names are stored mangled; [`Symbol`] prints them demangled.
//!
//! Pure: the table is bytes, parsed with bounds checks only, so a damaged or missing table
//! gives no names rather than a fault (and the host tests run the same code). Finding the
//! table in the running image (the linker's `__kallsyms_start`) is the kernel's part:
//! `beamcore::debug::symbols::kernel_symbols`.

#![cfg_attr(not(test), no_std)]
#![forbid(unsafe_code)]

use core::fmt;

mod inline;

pub use inline::{InlineTable, Inlined};

const MAGIC: &[u8; 8] = b"BCKSYMS1";
const HEADER_BYTES: usize = 24;

/// A parsed symbol table: sorted addresses, each with a name; and, if the image had debug
/// information, where functions were inlined.
#[derive(Clone, Copy, Debug)]
pub struct SymbolTable<'a> {
    addresses: &'a [u8],
    offsets: &'a [u8],
    names: &'a [u8],
    text_end: u64,
    inline: InlineTable<'a>,
}

/// A function (or assembly label) and where it starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Symbol<'a> {
    /// As the ELF spells it (mangled for Rust functions).
    pub raw_name: &'a str,
    pub start: u64,
}

impl fmt::Display for Symbol<'_> {
    /// The demangled name without its hash (`beamcore::sched::api::spawn`); other names as
    /// they are (`trap_common`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        Name(self.raw_name).fmt(f)
    }
}

/// A function's name as the image spells it; printed demangled, without its hash.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Name<'a>(pub &'a str);

impl fmt::Display for Name<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:#}", rustc_demangle::demangle(self.0))
    }
}

fn u32_at(bytes: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(bytes.get(at..at + 4)?.try_into().ok()?))
}

fn u64_at(bytes: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(bytes.get(at..at + 8)?.try_into().ok()?))
}

impl<'a> SymbolTable<'a> {
    /// A table with no symbols: every lookup fails.
    pub const EMPTY: SymbolTable<'static> =
        SymbolTable { addresses: &[], offsets: &[], names: &[], text_end: 0, inline: InlineTable::EMPTY };

    /// Reads the table's header and checks that its parts fit in `bytes`; `None` if not a table.
    pub fn parse(bytes: &'a [u8]) -> Option<SymbolTable<'a>> {
        if bytes.get(..8)? != MAGIC {
            return None;
        }
        let count = u32_at(bytes, 8)? as usize;
        let names_len = u32_at(bytes, 12)? as usize;
        let text_end = u64_at(bytes, 16)?;
        let offsets_at = HEADER_BYTES.checked_add(count.checked_mul(8)?)?;
        let names_at = offsets_at.checked_add(count.checked_add(1)?.checked_mul(4)?)?;
        let end = names_at.checked_add(names_len)?;
        // The inline part, 8-aligned after the names; a damaged one names no inlines.
        let inline_at = end.checked_add(end.wrapping_neg() % 8)?;
        let inline =
            bytes.get(inline_at..).and_then(|rest| InlineTable::parse(rest, text_end)).unwrap_or(InlineTable::EMPTY);
        Some(SymbolTable {
            addresses: bytes.get(HEADER_BYTES..offsets_at)?,
            offsets: bytes.get(offsets_at..names_at)?,
            names: bytes.get(names_at..end)?,
            text_end,
            inline,
        })
    }

    /// The functions inlined at `address`, innermost first, as `llvm-addr2line -i` lists them
    /// before the function [`lookup`](Self::lookup) names; none without an inline part.
    pub fn inlined(&self, address: u64) -> Inlined<'a> {
        self.inline.at(address)
    }

    /// Number of symbols.
    pub fn len(&self) -> usize {
        self.addresses.len() / 8
    }

    /// True when the table names nothing.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn address(&self, index: usize) -> u64 {
        u64_at(self.addresses, index * 8).unwrap_or(u64::MAX)
    }

    /// The `index`th symbol in address order (`None` past the end or if its name is damaged).
    pub fn get(&self, index: usize) -> Option<Symbol<'a>> {
        let from = u32_at(self.offsets, index * 4)? as usize;
        let to = u32_at(self.offsets, (index + 1) * 4)? as usize;
        let raw_name = core::str::from_utf8(self.names.get(from..to)?).ok()?;
        Some(Symbol { raw_name, start: self.address(index) })
    }

    /// The symbol whose code holds `address`: the last one starting at or below it, if the
    /// address lies in the image's code at all.
    pub fn lookup(&self, address: u64) -> Option<Symbol<'a>> {
        if address >= self.text_end {
            return None;
        }
        // The first index whose address is above `address`; the symbol before it holds it.
        let (mut low, mut high) = (0, self.len());
        while low < high {
            let middle = low + (high - low) / 2;
            if self.address(middle) <= address {
                low = middle + 1;
            } else {
                high = middle;
            }
        }
        self.get(low.checked_sub(1)?)
    }

    /// True when `address` could be an instruction of this image's code: at or after the first
    /// symbol and before the end of code.
    pub fn is_code(&self, address: u64) -> bool {
        !self.is_empty() && self.address(0) <= address && address < self.text_end
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What scripts/ksyms.py `encode` writes for [`SAMPLE`] with code ending at 0x1200
    /// (scripts/test_tools.py checks that it still does): both sides read one fixture, so the
    /// format cannot drift on one side alone.
    const FIXTURE: &[u8] = include_bytes!("../../../tests/data/ksyms-sample.bin");

    const SAMPLE: &[(u64, &str)] = &[
        (0x1000, "_start"),
        (0x1040, "_RNvNtNtCs1234_8beamcore5sched3api5spawn"),
        (0x1100, "_ZN4core9panicking9panic_fmt17h0123456789abcdefE"),
        (0x1180, "trap_common"),
    ];

    #[test]
    fn lookup_finds_the_function_holding_an_address() {
        let table = SymbolTable::parse(FIXTURE).unwrap();
        assert_eq!(table.len(), 4);
        assert_eq!(table.lookup(0xfff), None, "below the first symbol");
        assert_eq!(table.lookup(0x1000).unwrap().raw_name, "_start");
        assert_eq!(table.lookup(0x103c).unwrap().raw_name, "_start");
        let spawn = table.lookup(0x1044).unwrap();
        assert_eq!((spawn.start, spawn.to_string().as_str()), (0x1040, "beamcore::sched::api::spawn"));
        assert_eq!(table.lookup(0x1100).unwrap().to_string(), "core::panicking::panic_fmt", "legacy, hash dropped");
        assert_eq!(table.lookup(0x11fc).unwrap().to_string(), "trap_common");
        assert_eq!(table.lookup(0x1200), None, "past the end of code");
        assert!(table.is_code(0x1000) && table.is_code(0x11ff));
        assert!(!table.is_code(0xfff) && !table.is_code(0x1200));
    }

    #[test]
    fn every_address_finds_the_greatest_start_at_or_below_it() {
        let table = SymbolTable::parse(FIXTURE).unwrap();
        for (index, (start, name)) in SAMPLE.iter().enumerate() {
            assert_eq!(table.get(index), Some(Symbol { raw_name: name, start: *start }));
        }
        for address in 0xf00..0x1300u64 {
            let expected = SAMPLE.iter().rev().find(|(start, _)| *start <= address).filter(|_| address < 0x1200);
            assert_eq!(table.lookup(address).map(|s| s.start), expected.map(|(start, _)| *start), "{address:#x}");
        }
    }

    /// The same symbols with an inline part (scripts/test_tools.py: `KSYMS_INLINE_*`): worker
    /// from 0x1040, helper inlined into worker from 0x1060, nothing from 0x1080, leaf from 0x1100.
    const INLINE_FIXTURE: &[u8] = include_bytes!("../../../tests/data/ksyms-inline-sample.bin");

    fn inlined_at(table: &SymbolTable<'_>, address: u64) -> Vec<String> {
        table.inlined(address).map(|name| name.to_string()).collect()
    }

    #[test]
    fn inlined_functions_are_listed_innermost_first() {
        let table = SymbolTable::parse(INLINE_FIXTURE).unwrap();
        assert_eq!(table.lookup(0x1044).unwrap().to_string(), "beamcore::sched::api::spawn", "symbols as before");
        assert!(inlined_at(&table, 0x1000).is_empty(), "before the first segment");
        assert!(inlined_at(&table, 0x103c).is_empty());
        assert_eq!(inlined_at(&table, 0x1040), ["app::worker"]);
        assert_eq!(inlined_at(&table, 0x105c), ["app::worker"]);
        assert_eq!(inlined_at(&table, 0x1060), ["app::helper", "app::worker"]);
        assert_eq!(inlined_at(&table, 0x107c), ["app::helper", "app::worker"]);
        assert!(inlined_at(&table, 0x1080).is_empty(), "a segment with nothing inlined");
        assert_eq!(inlined_at(&table, 0x1100), ["app::leaf"], "v0 names demangle too");
        assert_eq!(inlined_at(&table, 0x11fc), ["app::leaf"]);
        assert!(inlined_at(&table, 0x1200).is_empty(), "past the end of code");
        assert!(inlined_at(&SymbolTable::parse(FIXTURE).unwrap(), 0x1060).is_empty(), "a table without the part");
    }

    #[test]
    fn a_damaged_inline_part_names_no_inlines_and_never_loops() {
        let symbols_end = FIXTURE.len().next_multiple_of(8);
        for cut in symbols_end..INLINE_FIXTURE.len() {
            let table = SymbolTable::parse(&INLINE_FIXTURE[..cut]).unwrap();
            assert!(inlined_at(&table, 0x1060).is_empty(), "cut at {cut}");
            assert_eq!(table.lookup(0x1044).unwrap().start, 0x1040, "the symbols still work");
        }
        // helper's parent made itself: the walk stops at its depth limit.
        let mut cycle = INLINE_FIXTURE.to_vec();
        let nodes_at = symbols_end + 32 + 4 * 4 * 2;
        cycle[nodes_at + 12..nodes_at + 16].copy_from_slice(&1u32.to_le_bytes());
        let table = SymbolTable::parse(&cycle).unwrap();
        assert_eq!(table.inlined(0x1060).count(), 32);
        // A node index beyond the nodes.
        let mut beyond = INLINE_FIXTURE.to_vec();
        let innermost_at = symbols_end + 32 + 4 * 4;
        beyond[innermost_at..innermost_at + 4].copy_from_slice(&1000u32.to_le_bytes());
        assert!(inlined_at(&SymbolTable::parse(&beyond).unwrap(), 0x1040).is_empty());
    }

    #[test]
    fn damaged_or_missing_tables_name_nothing() {
        assert!(SymbolTable::parse(&[]).is_none());
        let mut magic = FIXTURE.to_vec();
        magic[7] = b'0';
        assert!(SymbolTable::parse(&magic).is_none(), "magic");
        for cut in 0..FIXTURE.len() {
            assert!(SymbolTable::parse(&FIXTURE[..cut]).is_none(), "cut at {cut}");
        }
        let mut huge = FIXTURE.to_vec();
        huge[8..12].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(SymbolTable::parse(&huge).is_none(), "a count beyond the bytes");
        let mut crossed = FIXTURE.to_vec();
        let offsets_at = HEADER_BYTES + SAMPLE.len() * 8;
        crossed[offsets_at..offsets_at + 4].copy_from_slice(&1000u32.to_le_bytes());
        let table = SymbolTable::parse(&crossed).unwrap();
        assert_eq!(table.lookup(0x1000), None, "a name offset beyond the names");
        assert_eq!(table.lookup(0x1040).unwrap().raw_name, SAMPLE[1].1, "the others still work");
        assert_eq!(SymbolTable::EMPTY.lookup(0x1000), None);
        assert!(!SymbolTable::EMPTY.is_code(0));
    }
}
