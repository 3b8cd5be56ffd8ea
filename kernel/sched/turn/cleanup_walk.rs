//! Whether unwinding the calling process would run any code: if no frame between its end and
//! its base has a landing pad at its call, the process is ended at once, which is what the
//! unwind would come to, for a few instructions per frame instead of tens of thousands.
//!
//! Two walks go from `unwind::begin` up to `unwind::run_at_base`, both trusting nothing but the
//! image's own unwind tables (crates/unwind-tables), read once per call site and then kept:
//! - [`walk`] follows the frame records (x29's chain), as code built with frame pointers
//!   keeps them: per call site, one word says that the calling function's x29 points at its
//!   record there and that the call has no landing pad.
//! - [`walk_rows`] follows the tables' rows (where each frame saved the return address and
//!   x29, its CFA on sp or x29), for code without frame pointers, or a frame whose x29 is not
//!   its record: per call site, one word holds the row in compact form.
//!
//! The verdicts depend only on the image, so the caches are shared by every core and never
//! cleared: an entry is a return address and its verdict in one word, so it is right or it is
//! someone else's (a different address), never stale. A missing one is filled by [`walk_learning`].

use core::ops::Range;
use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use beamcore_unwind_tables::call_sites::{CallSites, HighHalf, Key, TaggedAddress};
use beamcore_unwind_tables::compact::{self, CompactRow, Regs};
use beamcore_unwind_tables::frame_record::{self, Factors, Row};
use beamcore_unwind_tables::lsda::{self, Action};
use gimli::{BaseAddresses, EhFrame, EhFrameHdr, NativeEndian, Pointer, UnwindSection};

/// The verdicts, in the low two bits of a cache entry. Passing is 0, so that the frame-record
/// walk's common step compares a whole entry with the return address.
/// The call has no landing pad (and, in [`RECORDS`], x29 is the caller's frame record there):
/// the unwind passes.
const PASSES: u64 = 0;
/// Nothing known to be safe: no tables, or (in [`RECORDS`]) x29 is not the record here, or (in
/// [`ROWS`]) the row has no compact form.
const UNKNOWN: u64 = 1;
/// The call is in the process's base, where the unwind stops.
const BASE: u64 = 2;
/// The call has a landing pad (or is in no call-site range): the unwind would run code here.
const RUNS_CODE: u64 = 3;
const VERDICT_BITS: u64 = 3;

/// Sets per cache, of two call sites each (16 KiB a cache): a process's paths from its safe
/// points to its base cross a few dozen, and the kernel's hot ends some 60 between them (two
/// ways, and this many sets: see `CallSites` for the cliff one way made).
const SETS: usize = 1024;
/// For [`walk`]: entries are a return address with its verdict in the low bits (return
/// addresses are 4-aligned).
static RECORDS: CallSites<SETS> = CallSites::new();
/// For [`walk_rows`]: a return address in the high half (the kernel's code lies below 4 GiB;
/// code above it has no entry and is unwound), the verdict in bits 0-1 and the compact row of
/// the calling function at the call from bit 2.
static ROWS: CallSites<SETS> = CallSites::new();

/// What [`begin`'s](super::unwind::begin) own frame is at [`Here`] (the walks start there):
/// 0 until learnt ([`learn_own`]); then [`OWN_KNOWN`], with [`OWN_RECORD`] if x29 is its record and
/// [`OWN_ROW`] with the compact row in the low bits if the row has a compact form.
static OWN: AtomicU64 = AtomicU64::new(0);
const OWN_KNOWN: u64 = 1 << 63;
const OWN_RECORD: u64 = 1 << 62;
const OWN_ROW: u64 = 1 << 61;

static LEARNING_PASSES: AtomicU64 = AtomicU64::new(0);

/// How many ends so far read verdicts from the unwind tables ([`walk_learning`]): for tests,
/// which hold that a path once learnt stays learnt.
pub fn learning_passes() -> u64 {
    // ORDERING: Relaxed: a count, read after the ends it counts were seen to finish (their
    // `Down`s), which orders it.
    LEARNING_PASSES.load(Ordering::Relaxed)
}

/// Set by [`rows_only`]: [`learn_own`] then never says that begin's x29 is its record, so every
/// quick end takes [`walk_rows`], as in code built without frame pointers.
static ROWS_ONLY: AtomicBool = AtomicBool::new(false);

/// Makes every quick end walk the tables' rows (`true`) or, where frame records allow, the
/// records (`false`, the default): for tests, so that one build checks both walks.
pub fn rows_only(on: bool) {
    // ORDERING: Relaxed: both are facts re-learnt at the next end; a core that still sees the
    // old answer takes the other walk once, which is as right.
    ROWS_ONLY.store(on, Ordering::Relaxed);
    OWN.store(0, Ordering::Relaxed);
}

/// The walks' starting point: the address, sp and x29 of one instruction of `unwind::begin`.
pub(crate) struct Here {
    pc: u64,
    sp: u64,
    fp: u64,
}

/// Where the calling function is. Inlined into `unwind::begin` (never inlined itself), so that
/// there is one such instruction and [`OWN`] describes it.
#[inline(always)]
pub(crate) fn here() -> Here {
    let (pc, sp, fp): (u64, u64, u64);
    // SAFETY: reads the address of this instruction, sp and x29; touches nothing.
    unsafe {
        core::arch::asm!("adr {pc}, .", "mov {sp}, sp", "mov {fp}, x29", pc = out(reg) pc, sp = out(reg) sp,
            fp = out(reg) fp, options(nomem, nostack, preserves_flags));
    }
    Here { pc, sp, fp }
}

/// What a walk found.
pub(crate) enum Finding {
    /// No frame has code to run: end the process at once.
    NothingToRun,
    /// Some frame has a landing pad, or the stack cannot be followed: unwind.
    Unwind,
    /// The frame records do not reach the base: try [`walk_rows`].
    Rows,
    /// A verdict not kept yet: walk again with [`walk_learning`].
    Unknown,
}

/// Walks the frame records from [`Here`] up to the process's base; `stack_top` bounds them.
/// Inlined into `unwind::begin`: the frames it skips are begin's own, which holds nothing to
/// drop at that point.
#[inline(always)]
pub(crate) fn walk(here: &Here, stack_top: usize) -> Finding {
    // ORDERING: Relaxed: a fact of the image; a core that sees no answer yet finds it again.
    let own = OWN.load(Ordering::Relaxed);
    if own & OWN_RECORD == 0 {
        return if own & OWN_KNOWN == 0 { Finding::Unknown } else { Finding::Rows };
    }
    // The common step: way 0 holds the address, passing; one comparison.
    walk_records(here.fp, stack_top, |return_address| {
        let first = RECORDS.first(return_address);
        if first == return_address | PASSES { first } else { RECORDS.find::<TaggedAddress>(return_address) }
    })
}

/// The frame-record walk from `fp`, its entries read by `entry_of` (a [`RECORDS`] word, which
/// may be another return address's).
#[inline(always)]
fn walk_records(mut fp: u64, stack_top: usize, mut entry_of: impl FnMut(u64) -> u64) -> Finding {
    // The last byte a record may start at: below the stack's top.
    let last = stack_top as u64 - 16;
    // Every step goes up the stack and stays under its top, so the walk ends.
    loop {
        if fp > last {
            return Finding::Unwind;
        }
        // SAFETY: the record lies below the top of the running process's own stack and above
        // the frame running this (the chain only ascends, checked below), all of it mapped:
        // the stack is mapped contiguously from its lowest touched page to its top.
        let (next, return_address) = unsafe { (*(fp as *const u64), *((fp + 8) as *const u64)) };
        let known = entry_of(return_address);
        if known != return_address | PASSES {
            if known == return_address | BASE {
                return Finding::NothingToRun;
            }
            return other_record(return_address, known);
        }
        if next <= fp {
            return Finding::Unwind;
        }
        fp = next;
    }
}

/// A [`RECORDS`] entry other than passing.
#[inline(never)]
fn other_record(return_address: u64, known: u64) -> Finding {
    if known & !VERDICT_BITS != return_address {
        return Finding::Unknown;
    }
    match known & VERDICT_BITS {
        UNKNOWN => Finding::Rows,
        _ => Finding::Unwind,
    }
}

/// Walks the unwind table's rows from [`Here`] up to the process's base; `stack_top` bounds
/// the stack.
#[inline(never)]
pub(crate) fn walk_rows(here: &Here, stack_top: usize) -> Finding {
    // ORDERING: Relaxed: see `walk`.
    walk_rows_with(here, stack_top, OWN.load(Ordering::Relaxed), |return_address| ROWS.find::<HighHalf>(return_address))
}

/// The row walk from [`Here`], whose frame is described by `own` (an [`OWN`] word), its entries
/// read by `entry_of` (a [`ROWS`] word, which may be another return address's).
#[inline(always)]
fn walk_rows_with(here: &Here, stack_top: usize, own: u64, mut entry_of: impl FnMut(u64) -> u64) -> Finding {
    if own & OWN_KNOWN == 0 {
        return Finding::Unknown;
    }
    if own & OWN_ROW == 0 {
        return Finding::Unwind;
    }
    let mut row = CompactRow::from_bits(own as u32);
    let mut regs = Regs { sp: here.sp, fp: here.fp };
    loop {
        // SAFETY: `step` reads only between sp (this frame's, or a caller's) and the CFA it
        // finds, which it checks is under the top of the running process's own stack: mapped,
        // as in `walk`.
        let read = |address: u64| unsafe { *(address as *const u64) };
        let Some((caller, return_address)) = compact::step(row, regs, stack_top as u64, read) else {
            return Finding::Unwind;
        };
        let known = entry_of(return_address);
        if known >> 32 != return_address {
            return Finding::Unknown;
        }
        match known & VERDICT_BITS {
            PASSES => row = CompactRow::from_bits((known as u32) >> 2),
            BASE => return Finding::NothingToRun,
            _ => return Finding::Unwind,
        }
        regs = caller;
    }
}

/// The walks again, every verdict not kept read from the unwind tables on the way (and kept),
/// for an end that found one missing; `base` is the address of `unwind::run_at_base`. One pass
/// whatever the cache holds: two return addresses of one walk that share an entry are both
/// answered. Cold: the first end through a call site. Runs on the process's stack, needing a
/// few hundred bytes of it.
#[cold]
#[inline(never)]
pub(crate) fn walk_learning(here: &Here, stack_top: usize, base: usize) -> Finding {
    // ORDERING: Relaxed: see `learning_passes`.
    LEARNING_PASSES.fetch_add(1, Ordering::Relaxed);
    // ORDERING: Relaxed: see `walk`.
    let mut own = OWN.load(Ordering::Relaxed);
    if own & OWN_KNOWN == 0 {
        own = learn_own(here.pc, base);
    }
    let finding = if own & OWN_RECORD != 0 {
        walk_records(here.fp, stack_top, |return_address| learn_record(return_address, base))
    } else {
        Finding::Rows
    };
    let finding = match finding {
        Finding::Rows => walk_rows_with(here, stack_top, own, |return_address| learn_row(return_address, base)),
        finding => finding,
    };
    match finding {
        // Only a row entry that cannot be kept (code above 4 GiB).
        Finding::Unknown => Finding::Unwind,
        finding => finding,
    }
}

/// The [`OWN`] word for the walks' own instruction at `pc`, found and kept. Only how the frame
/// is kept counts there, not a landing pad: begin's frame is not unwound.
fn learn_own(pc: u64, base: usize) -> u64 {
    let row = examine(pc, base).and_then(|found| found.row);
    let mut own = OWN_KNOWN;
    // ORDERING: Relaxed: see `rows_only`.
    if row.is_some_and(|row| row.holds_record()) && !ROWS_ONLY.load(Ordering::Relaxed) {
        own |= OWN_RECORD;
    }
    if let Some(compact) = row.as_ref().and_then(CompactRow::new) {
        own |= OWN_ROW | u64::from(compact.bits());
    }
    // ORDERING: Relaxed: see `walk`.
    OWN.store(own, Ordering::Relaxed);
    own
}

/// The [`RECORDS`] word of `return_address`, read from the tables if not kept, and kept.
fn learn_record(return_address: u64, base: usize) -> u64 {
    let known = RECORDS.find::<TaggedAddress>(return_address);
    if TaggedAddress::address(known) == return_address {
        return known;
    }
    // The call's own instruction, as the personality routine takes it (one byte back: inside
    // the call, whose row and call-site entry are the ones that count).
    let verdict = match examine(return_address.wrapping_sub(1), base) {
        Some(Examined { base: true, .. }) => BASE,
        Some(Examined { row: Some(row), verdict, .. }) if row.holds_record() => verdict,
        _ => UNKNOWN,
    };
    RECORDS.keep::<TaggedAddress>(return_address, return_address | verdict);
    return_address | verdict
}

/// The [`ROWS`] word of `return_address`, read from the tables if not kept, and kept (a return
/// address above 4 GiB has no word: the one given back then matches no address).
fn learn_row(return_address: u64, base: usize) -> u64 {
    if return_address >> 32 != 0 {
        return 0;
    }
    let known = ROWS.find::<HighHalf>(return_address);
    if HighHalf::address(known) == return_address {
        return known;
    }
    let (verdict, row) = match examine(return_address.wrapping_sub(1), base) {
        Some(Examined { base: true, .. }) => (BASE, 0),
        Some(Examined { row: Some(row), verdict, .. }) => match CompactRow::new(&row) {
            Some(compact) => (verdict, compact.bits()),
            None => (UNKNOWN, 0),
        },
        _ => (UNKNOWN, 0),
    };
    let word = return_address << 32 | u64::from(row) << 2 | verdict;
    ROWS.keep::<HighHalf>(return_address, word);
    word
}

/// What the tables say about one instruction.
struct Examined {
    /// It is in the process's base.
    base: bool,
    /// Its function's row there, if the instructions could be followed.
    row: Option<Row>,
    /// [`PASSES`] or [`RUNS_CODE`], by its function's exception table.
    verdict: u64,
}

/// The image's unwind tables, from the linker script's symbols.
struct Sections {
    text: Range<usize>,
    eh_frame_hdr: Range<usize>,
    eh_frame: Range<usize>,
    except_tables: Range<usize>,
}

fn sections() -> Sections {
    unsafe extern "C" {
        static __executable_start: u8;
        static __etext: u8;
        static __GNU_EH_FRAME_HDR: u8;
        static __eh_frame_hdr_end: u8;
        static __eh_frame_start: u8;
        static __eh_frame_end: u8;
        static __gcc_except_table_start: u8;
        static __gcc_except_table_end: u8;
    }
    let at = |symbol: *const u8| symbol as usize;
    Sections {
        text: at(&raw const __executable_start)..at(&raw const __etext),
        eh_frame_hdr: at(&raw const __GNU_EH_FRAME_HDR)..at(&raw const __eh_frame_hdr_end),
        eh_frame: at(&raw const __eh_frame_start)..at(&raw const __eh_frame_end),
        except_tables: at(&raw const __gcc_except_table_start)..at(&raw const __gcc_except_table_end),
    }
}

/// A section of the image as bytes.
fn bytes(range: &Range<usize>) -> &'static [u8] {
    // SAFETY: a read-only section of the running image, mapped for its life, bounded by the
    // linker script's symbols.
    unsafe { core::slice::from_raw_parts(range.start as *const u8, range.end - range.start) }
}

/// What the tables say about the instruction holding the byte at `address`; `None` when no
/// function's tables cover it.
fn examine(address: u64, base: usize) -> Option<Examined> {
    let sections = sections();
    if !sections.text.contains(&(address as usize)) {
        return None;
    }
    let bases = BaseAddresses::default()
        .set_text(sections.text.start as u64)
        .set_eh_frame_hdr(sections.eh_frame_hdr.start as u64)
        .set_eh_frame(sections.eh_frame.start as u64);
    let header = EhFrameHdr::new(bytes(&sections.eh_frame_hdr), NativeEndian).parse(&bases, 8).ok()?;
    let eh_frame = EhFrame::new(bytes(&sections.eh_frame), NativeEndian);
    let fde = header.table()?.fde_for_address(&eh_frame, &bases, address, EhFrame::cie_from_offset).ok()?;
    let start = fde.initial_address();
    if start == base as u64 {
        return Some(Examined { base: true, row: None, verdict: RUNS_CODE });
    }
    let cie = fde.cie();
    let factors = Factors { code: cie.code_alignment_factor(), data: cie.data_alignment_factor() };
    let mut initial = cie.instructions(&eh_frame, &bases);
    let mut own = fde.instructions(&eh_frame, &bases);
    let row = frame_record::row_at(
        core::iter::from_fn(|| initial.next().transpose()),
        core::iter::from_fn(|| own.next().transpose()),
        factors,
        start,
        address,
    )
    .ok();
    let verdict = match fde.lsda() {
        None => PASSES,
        Some(Pointer::Direct(table)) if sections.except_tables.contains(&(table as usize)) => {
            let tables = &sections.except_tables;
            let bytes = &bytes(tables)[table as usize - tables.start..];
            match lsda::action_at(bytes, table, start, address) {
                Ok(Action::Nothing) => PASSES,
                _ => RUNS_CODE,
            }
        }
        Some(_) => RUNS_CODE,
    };
    Some(Examined { base: false, row, verdict })
}
