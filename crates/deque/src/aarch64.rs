//! `Aarch64Asm`: the deque's atomic primitive written by hand in LDXR/STXR, LDAR and DMB.
//!
//! Why by hand: the compiler, told the CPU has LSE (ARMv8.1 atomics), turns a compare-and-swap
//! into CASAL; Cortex-A72 (Raspberry Pi 4) has no LSE, and the design wants the same exclusive
//! load/store sequence on every core, with its retry on a lost reservation made visible
//! ([`CasFailure::StoreExclusiveFailed`]) instead of hidden in a loop. The instruction choices,
//! against the ARMv8 memory model (ARM ARM B2.3, "other-multi-copy atomic"):
//!
//! | trait operation        | instructions           | why this is enough                                  |
//! |------------------------|------------------------|-----------------------------------------------------|
//! | `load_relaxed`         | `LDR` (by the compiler) | aligned 64-bit accesses are single-copy atomic; a Relaxed `AtomicU64` load has no other lowering, and letting the compiler emit it lets it use `[base, #offset]` |
//! | `store_relaxed`        | `STR` (by the compiler) | same                                               |
//! | `load_acquire`         | `LDAR`                 | Load-Acquire: no later access is performed before it |
//! | `fence_release`        | `DMB ISH`              | orders earlier loads *and* stores before later stores (`DMB ISHST` orders only stores, and a release must also keep earlier loads of the item's data before the publishing store) |
//! | `fence_full`           | `DMB ISH`              | the only ARMv8 barrier that orders an earlier store before a later load (the store-buffering shape of `pop` against `steal`) |
//! | `compare_exchange_top` | `LDAXR`/`CMP`/`STLXR`, `CLREX` on mismatch | the standard seq_cst RMW mapping: acquire on the load-exclusive, release on the store-exclusive; a Release (STLR-class) followed by an Acquire (LDAR-class) is ordered on ARMv8 (RCsc), so it is totally ordered with the DMBs |
//!
//! Every fence is inner-shareable (`ISH`): all cores of the kernel are in one inner-shareable
//! domain. Exclusives are only architecturally reliable on Normal, inner-shareable, cacheable
//! memory: the deque must live in memory mapped that way (the kernel's heap is), with the MMU
//! on. `top` sits alone on its 64-byte line (the A72 reservation granule), so the owner's
//! stores to `bottom` cannot clear a thief's monitor.

use core::arch::asm;
use core::sync::atomic::{AtomicU64, Ordering};

use super::primitives::{CasFailure, DequeAtomics};

/// Attempts of the compare-and-swap on `top` whose store-exclusive may fail while the value is
/// still the expected one, before reporting [`CasFailure::StoreExclusiveFailed`]. A failure
/// needs the monitor cleared between LDAXR and STLXR (an interrupt, a line eviction, a store to
/// the granule), so a second attempt nearly always succeeds; the bound keeps an unlucky core
/// from spinning unseen.
pub const STORE_EXCLUSIVE_ATTEMPTS: u32 = 8;

/// What the LDAXR/STLXR sequence reports: stored; the store-exclusive failed on every attempt
/// (1, STLXR's own failure status); or the value differed.
const STATUS_STORED: u32 = 0;
const STATUS_COMPARE_FAILED: u32 = 2;

/// The compare-and-swap on `top` in LDAXR/STLXR, written once for both builds: `inject` is the
/// fault-injection build's fragment, spliced between the comparison and the STLXR (empty in the
/// kernel's build), and `operands` its extra register. Label 6 is where an injected failure
/// rejoins the retry path; it emits no instruction, so the normal build's code is the same
/// with or without it. Labels: 2 an attempt, 3 a mismatch, 4 the end, 5 and 6 the injection's.
/// `observed` and `status` name the caller's variables the asm writes.
macro_rules! compare_exchange_asm {
    (
        $top:expr, $expected:expr, $new:expr, $observed:ident, $status:ident,
        inject: [$($inject:literal),* $(,)?],
        operands: [$($operand:tt)*]
    ) => {
        asm!(
            "mov {attempts_left:w}, #{attempts}",
            "2:",
            "ldaxr {observed}, [{address}]",
            "cmp {observed}, {expected}",
            "b.ne 3f",
            $($inject,)*
            "stlxr {status:w}, {new}, [{address}]",
            "cbz {status:w}, 4f",
            "6:",
            "subs {attempts_left:w}, {attempts_left:w}, #1",
            "b.ne 2b",
            "b 4f",
            "3:",
            "clrex",
            "mov {status:w}, #{compare_failed}",
            "4:",
            $($operand)*
            address = in(reg) $top.as_ptr(),
            expected = in(reg) $expected,
            new = in(reg) $new,
            observed = out(reg) $observed,
            status = out(reg) $status,
            attempts_left = out(reg) _,
            attempts = const STORE_EXCLUSIVE_ATTEMPTS,
            compare_failed = const STATUS_COMPARE_FAILED,
            options(nostack),
        )
    };
}

/// The deque's atomics as hand-written AArch64 instructions (no LSE), for the kernel.
#[derive(Debug)]
pub enum Aarch64Asm {}

impl DequeAtomics for Aarch64Asm {
    type Index = AtomicU64;

    #[inline]
    fn new_index(initial: u64) -> AtomicU64 {
        AtomicU64::new(initial)
    }

    #[inline]
    fn load_relaxed(index: &AtomicU64) -> u64 {
        // Not written by hand: a Relaxed 64-bit atomic load is a single LDR on AArch64 whatever
        // the compiler is told about the CPU, so `asm!` would add nothing but the address
        // arithmetic (it has no memory operands, so it cannot use `[base, #offset]`). The
        // compiler cannot move it across the ordering asm blocks below, which all clobber
        // memory.
        index.load(Ordering::Relaxed)
    }

    #[inline]
    fn load_acquire(index: &AtomicU64) -> u64 {
        let value: u64;
        // ORDERING: LDAR is a Load-Acquire: no later load or store of this core is performed
        // before it, which is C11 acquire. Each call site in chase_lev.rs names the release it
        // pairs with. No `readonly` option: the asm also stops the compiler from hoisting later
        // memory accesses above it.
        // SAFETY: as in `load_relaxed`: an aligned, live `u64` behind an `AtomicU64`, accessed
        // by a single-copy-atomic 64-bit instruction.
        unsafe {
            asm!(
                "ldar {value}, [{address}]",
                address = in(reg) index.as_ptr(),
                value = lateout(reg) value,
                options(nostack, preserves_flags),
            );
        }
        value
    }

    #[inline]
    fn store_relaxed(index: &AtomicU64, value: u64) {
        // Not written by hand, as `load_relaxed`: a Relaxed 64-bit atomic store is a single STR.
        index.store(value, Ordering::Relaxed);
    }

    #[inline]
    fn fence_release() {
        // ORDERING: DMB ISH orders every earlier load and store of this core before every later
        // one, as observed by all cores of the inner-shareable domain; `push` uses it between
        // the slot write and the store of `bottom`, pairing with the LDAR of `bottom` in
        // `steal`. DMB ISHST would order the stores but not earlier loads of the item's data
        // (C11 release requires both), so the full DMB it is. The asm has no `nomem`: it is a
        // compiler barrier too.
        // SAFETY: a barrier instruction touches no memory and no register.
        unsafe { asm!("dmb ish", options(nostack, preserves_flags)) };
    }

    #[inline]
    fn fence_full() {
        // ORDERING: DMB ISH is the C11 seq_cst fence on ARMv8 and the only barrier that keeps
        // an earlier store before a later load. `pop` needs exactly that between its STR of
        // `bottom` and its LDR of `top`, and pairs it with the DMB in `steal` between LDAR of
        // `top` and LDAR of `bottom`: because ARMv8 is other-multi-copy atomic, once either
        // core's DMB has completed its earlier access is visible to all, so at least one of the
        // two loads after the barriers sees the other core's write (the store-buffering litmus
        // test SB+dmb+dmb is forbidden). The asm has no `nomem`: it is a compiler barrier too.
        // SAFETY: a barrier instruction touches no memory and no register.
        unsafe { asm!("dmb ish", options(nostack, preserves_flags)) };
    }

    #[inline]
    fn compare_exchange_top(top: &AtomicU64, expected: u64, new: u64) -> Result<(), CasFailure> {
        let observed: u64;
        let status: u32;
        // ORDERING: LDAXR (load-acquire exclusive) + STLXR (store-release exclusive) is the
        // seq_cst read-modify-write of the C11-to-ARMv8 mapping. The release half (STLXR) pairs
        // with the LDAR of `top` in `push` (a thief's slot read happens-before the owner's
        // overwrite of that slot) and in the next `steal`. STLXR followed by a later LDAR/LDAXR
        // is ordered on ARMv8 (RCsc), and DMB ISH orders everything, so the CAS takes its place
        // in the total order with the fences. The exclusive pair makes the compare-and-swap
        // atomic: a store to `top` by another core between LDAXR and STLXR clears our monitor
        // and the STLXR fails. On a mismatch CLREX drops the monitor and nothing is written
        // (failure ordering: none needed).
        //
        // The retry loop is in the asm so it stays one small loop (the compiler would unroll a
        // Rust loop around one attempt). A failed STLXR (status 1) means the monitor was lost
        // while the value still matched; it retries from LDAXR, which sees any change another
        // core made meanwhile, at most STORE_EXCLUSIVE_ATTEMPTS times in all, then reports 1.
        // The sequence is written once, in `compare_exchange_asm!`; the fault-injection build
        // adds its fragment and one register there.
        // SAFETY: `top.as_ptr()` is an aligned, live `u64` inside an `AtomicU64`; the exclusive
        // pair accesses it single-copy atomically. `observed`, `status` and `attempts_left` are
        // `out` (not `lateout`), so they never share a register with the inputs, which are
        // read after they are first written; STLXR's status register thus differs from its data
        // and address registers, as the architecture requires. The sequence writes only its
        // outputs, the scratch register and the flags (not declared preserved), no stack.
        #[cfg(not(deque_inject_stxr_failure))]
        unsafe {
            compare_exchange_asm!(top, expected, new, observed, status, inject: [], operands: []);
        }
        #[cfg(deque_inject_stxr_failure)]
        let planned = inject::plan();
        #[cfg(deque_inject_stxr_failure)]
        let inject_left: u32;
        // With fault injection (`cfg(deque_inject_stxr_failure)`, test builds only): while
        // `inject` is non-zero, an attempt whose comparison succeeded skips its STLXR and fails
        // as a lost reservation would: CLREX clears the monitor, status 1, and the loop retries
        // from LDAXR exactly as after a real failure. `inject` counts down, so
        // `planned - inject_left` stores were skipped. The ORDERING argument above is unchanged:
        // a skipped store writes nothing, like a failed STLXR.
        // SAFETY: as above; `inject` is one more register, `inout`, so it is distinct from every
        // `out` register and from the inputs. It writes only its outputs and the flags.
        #[cfg(deque_inject_stxr_failure)]
        unsafe {
            compare_exchange_asm!(
                top,
                expected,
                new,
                observed,
                status,
                inject: [
                    "cbz {inject:w}, 5f",
                    "sub {inject:w}, {inject:w}, #1",
                    "clrex",
                    "mov {status:w}, #1",
                    "b 6f",
                    "5:",
                ],
                operands: [inject = inout(reg) planned => inject_left,]
            );
        }
        #[cfg(deque_inject_stxr_failure)]
        inject::record(planned - inject_left, status != STATUS_STORED && status != STATUS_COMPARE_FAILED);
        match status {
            STATUS_STORED => Ok(()),
            STATUS_COMPARE_FAILED => Err(CasFailure::ValueChanged { observed }),
            _ => Err(CasFailure::StoreExclusiveFailed),
        }
    }
}

/// Fault injection for the store-exclusive (`--cfg deque_inject_stxr_failure`): makes the failure
/// path, which real hardware takes only on a rare lost reservation, happen often enough to test.
///
/// Every [`INJECT_EVERY`]th compare-and-swap on a core is *faulty*, alternately in two ways: all
/// [`STORE_EXCLUSIVE_ATTEMPTS`] stores fail (the caller sees
/// [`CasFailure::StoreExclusiveFailed`]: `Pop::Retry`, `Steal::Retry`), or only the first one does
/// (the asm's own retry recovers, unseen by the caller). A skipped store happens only after the
/// comparison succeeded, as a real one can. Per-core call counters keep the schedule deterministic
/// per core and add no shared cache line to the contended ones.
#[cfg(deque_inject_stxr_failure)]
mod inject {
    use core::sync::atomic::{AtomicU64, Ordering};

    use beamcore_limits::MAX_CORES;

    use super::STORE_EXCLUSIVE_ATTEMPTS;

    /// One compare-and-swap in this many, per core, has injected store failures.
    pub const INJECT_EVERY: u64 = 8;

    /// One core's counters, on their own cache line. Written only by their own core, with a
    /// plain load and store (an interrupt handler on the same core using a deque could lose a
    /// count; the figures are a test's lower bound, never a correctness input).
    #[repr(align(64))]
    struct PerCore {
        calls: AtomicU64,
        skipped_stores: AtomicU64,
        reported_failures: AtomicU64,
    }

    static PER_CORE: [PerCore; MAX_CORES] = [const {
        PerCore { calls: AtomicU64::new(0), skipped_stores: AtomicU64::new(0), reported_failures: AtomicU64::new(0) }
    }; MAX_CORES];

    fn this_core() -> &'static PerCore {
        &PER_CORE[core_id().min(MAX_CORES - 1)]
    }

    /// The running core's logical id, which the kernel keeps in TPIDRRO_EL0 (its
    /// `arch::aarch64::cpu::set_core_id`). Read here directly, not through the kernel, so the
    /// deque needs nothing from the kernel; a core that never set it reads 0, which only merges
    /// its counts with core 0's in a test's lower bound.
    fn core_id() -> usize {
        let id: u64;
        // SAFETY: reading TPIDRRO_EL0 has no side effect and is allowed at EL1 and EL0.
        unsafe { core::arch::asm!("mrs {}, tpidrro_el0", out(reg) id, options(nomem, nostack, preserves_flags)) };
        id as usize
    }

    fn add(counter: &AtomicU64, amount: u64) {
        counter.store(counter.load(Ordering::Relaxed) + amount, Ordering::Relaxed);
    }

    /// How many of this call's store attempts to skip: 0 for most calls.
    #[inline]
    pub fn plan() -> u32 {
        let core = this_core();
        add(&core.calls, 1);
        let calls = core.calls.load(Ordering::Relaxed);
        if !calls.is_multiple_of(INJECT_EVERY) {
            0
        } else if (calls / INJECT_EVERY) % 2 == 1 {
            STORE_EXCLUSIVE_ATTEMPTS
        } else {
            1
        }
    }

    /// Counts what one call did: stores skipped, and whether it reported
    /// `StoreExclusiveFailed` (injected or real).
    #[inline]
    pub fn record(skipped: u32, reported_failure: bool) {
        let core = this_core();
        add(&core.skipped_stores, u64::from(skipped));
        if reported_failure {
            add(&core.reported_failures, 1);
        }
    }

    /// Totals over every core.
    pub fn counts() -> super::InjectionCounts {
        let sum = |field: fn(&PerCore) -> &AtomicU64| PER_CORE.iter().map(|c| field(c).load(Ordering::Relaxed)).sum();
        super::InjectionCounts {
            calls: sum(|c| &c.calls),
            skipped_stores: sum(|c| &c.skipped_stores),
            reported_failures: sum(|c| &c.reported_failures),
        }
    }
}

/// What store-exclusive fault injection did so far, summed over all cores.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InjectionCounts {
    /// Compare-and-swaps on `top` (every call, faulty or not).
    pub calls: u64,
    /// Store-exclusives skipped and failed by injection.
    pub skipped_stores: u64,
    /// Calls that returned [`CasFailure::StoreExclusiveFailed`] (all attempts failed; nearly
    /// always injected, a real lost reservation on every attempt is counted too).
    pub reported_failures: u64,
}

/// The fault-injection counters, or `None` when this build does not inject
/// (`cfg(deque_inject_stxr_failure)` off: then the primitive has no injection code at all). Lets
/// a test assert that injection happened without itself depending on the cfg.
pub fn store_exclusive_injection() -> Option<InjectionCounts> {
    #[cfg(deque_inject_stxr_failure)]
    {
        Some(inject::counts())
    }
    #[cfg(not(deque_inject_stxr_failure))]
    {
        None
    }
}

/// With `cfg(deque_inject_stxr_failure)`: one compare-and-swap in this many, per core, has
/// injected store-exclusive failures (see the `inject` module). 0 when the build does not inject.
#[cfg(deque_inject_stxr_failure)]
pub const INJECT_EVERY: u64 = inject::INJECT_EVERY;
/// With `cfg(deque_inject_stxr_failure)`: one compare-and-swap in this many, per core, has
/// injected store-exclusive failures (see the `inject` module). 0 when the build does not inject.
#[cfg(not(deque_inject_stxr_failure))]
pub const INJECT_EVERY: u64 = 0;
