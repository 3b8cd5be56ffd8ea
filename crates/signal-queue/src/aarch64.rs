//! `Aarch64Asm`: the head word's operations written by hand in LDXR/STXR.
//!
//! Why by hand, as for the deque (`docs/deque.md`): Cortex-A72 (Raspberry Pi 4) has no LSE, the
//! design wants the same exclusive sequences on every core, and the push must keep its link
//! store *outside* the exclusive window: the architecture guarantees forward progress of an
//! LDXR/STXR pair only when no other explicit memory access comes between them (ARM ARM B2.9,
//! "Load-Exclusive and Store-Exclusive instruction usage restrictions"). A compiler-generated
//! `compare_exchange` loop does the same (its own pair has nothing in between); writing it by
//! hand folds the tag tests into the loop and makes each barrier a visible, argued choice.
//!
//! | operation          | instructions                                      | ordering                      |
//! |--------------------|---------------------------------------------------|-------------------------------|
//! | `push`             | `LDXR`/`CMP`/`STLXR` loop; `STR` link on a retry   | release on the store only    |
//! | `take`             | `LDR` look; if a node, `LDAXR`/`STXR` of 0 loop   | acquire on the load only      |
//! | `compare_exchange` | `LDXR`/`CMP`/`STXR` loop, `CLREX` on mismatch     | none                          |
//! | `close`            | `LDAXR`/`STXR` of CLOSED loop                     | acquire on the load only      |
//!
//! The word must live in Normal, inner-shareable, cacheable memory (the kernel's heap), where
//! exclusives work. A store-exclusive that fails (the monitor lost to an interrupt, an
//! eviction, another core's store to the granule) retries from its load-exclusive; unlike the
//! deque's bounded CAS there is no caller to report it to: every operation here is a loop that
//! retries on contention anyway.
//!
//! Under `cfg(signal_queue_inject_stxr_failure)` every operation's first store-exclusive is
//! skipped and treated as failed (the monitor cleared by `CLREX`), so each retry path runs on
//! every call; the ORDERING arguments are unchanged, since a skipped store writes nothing.

use core::arch::asm;
use core::sync::atomic::AtomicUsize;

use super::primitives::{CLOSED, HeadAtomics, WAITING};

/// The head word's operations as hand-written AArch64 exclusives (no LSE), for the kernel.
#[derive(Debug)]
pub enum Aarch64Asm {}

/// The injection text placed before a store-exclusive: on the first pass (`inject` = 1) skip the
/// store, clear the monitor and branch back to the load-exclusive at `$retry`, as a failed store
/// would; then never again in this call.
#[cfg(signal_queue_inject_stxr_failure)]
macro_rules! fail_first_store {
    ($retry:literal) => {
        concat!("cbz {inject}, 7f\n", "mov {inject}, xzr\n", "clrex\n", "b ", $retry, "\n", "7:")
    };
}
#[cfg(not(signal_queue_inject_stxr_failure))]
macro_rules! fail_first_store {
    ($retry:literal) => {
        ""
    };
}

/// `asm!`, plus the injection counter operand in injecting builds (an operand no template
/// names is an error, so it exists only there).
#[cfg(signal_queue_inject_stxr_failure)]
macro_rules! exclusive_asm {
    ($($template:expr),+ ; $($operands:tt)*) => {
        asm!($($template),+, inject = inout(reg) 1usize => _, $($operands)*)
    };
}
#[cfg(not(signal_queue_inject_stxr_failure))]
macro_rules! exclusive_asm {
    ($($template:expr),+ ; $($operands:tt)*) => {
        asm!($($template),+, $($operands)*)
    };
}

impl HeadAtomics for Aarch64Asm {
    #[inline]
    fn push(head: &AtomicUsize, node: usize, next: &AtomicUsize) -> usize {
        let old: usize;
        // The first attempt (label 4) guesses EMPTY, for which the link already holds the
        // right value (the trait's precondition): pushing onto an idle queue is LDXR, CBNZ,
        // STLXR, CBNZ, with no plain load to bring the line in shared first and no link store.
        // A mismatch (label 2) takes the value found as the next guess: CLOSED leaves;
        // otherwise the link is stored for it (EMPTY after WAITING, else the node found) and
        // the pair retries (label 6). A failed STLXR with the guess still right only retries
        // its pair. Under injection each of the two pairs fails its first store once. The link
        // store is outside the exclusive window (forward progress, see the module docs).
        //
        // ORDERING: STLXR (store-release exclusive) publishes the node: its value, written by
        // the caller before the call, and its link are ordered before the store of `node` into
        // the word. The consumer's LDAXR in `take`/`close` reads this store or a later push's;
        // a later push's STLXR is itself a release ordered after its LDXR that read ours, so
        // the chain W(link) -> STLXR -> LDXR -> STLXR' -> LDAXR is in ARMv8's ordered-before
        // relation (other-multi-copy atomicity), and the consumer sees every link and value of
        // the list it takes (C11: the later read-modify-writes continue this store's release
        // sequence). A link left EMPTY from before the call was written by whoever last owned
        // the node, which happens before this call, so the release covers it too. LDXR needs no
        // acquire: a producer reads nothing the consumer or another producer wrote except the
        // word itself; in particular `Wake` orders nothing from the consumer's `prepare_wait`
        // to the waker (see `Pushed::Wake`). The asm has no `nomem`/`readonly`: it is a
        // compiler barrier, so the caller's store of the value is not moved after it.
        //
        // SAFETY: `head` and `next` are live, aligned `usize` atomics, accessed by
        // single-copy-atomic 64-bit instructions (`next` is the link of the caller's
        // unpublished node, whose address is `node`). Every output is `out`, not `lateout`:
        // they are written before the inputs' last read, so they must not share their
        // registers; in particular STLXR's status register differs from its data and address
        // registers, as the architecture requires. Only the outputs, the scratch registers and
        // the flags are written.
        unsafe {
            exclusive_asm!(
                "4:",
                "ldxr {seen}, [{head}]",
                "cbnz {seen}, 2f",
                fail_first_store!("4b"),
                "stlxr {status:w}, {node}, [{head}]",
                "cbnz {status:w}, 4b",
                "mov {old}, xzr",
                "b 5f",
                "2:",
                "clrex",
                "mov {old}, {seen}",
                "cmp {old}, #{closed}",
                "b.eq 5f",
                "cmp {old}, #{waiting}",
                "csel {link}, xzr, {old}, eq",
                "str {link}, [{next}]",
                "6:",
                "ldxr {seen}, [{head}]",
                "cmp {seen}, {old}",
                "b.ne 2b",
                fail_first_store!("6b"),
                "stlxr {status:w}, {node}, [{head}]",
                "cbnz {status:w}, 6b",
                "5:";
                head = in(reg) head.as_ptr(),
                node = in(reg) node,
                next = in(reg) next.as_ptr(),
                old = out(reg) old,
                seen = out(reg) _,
                link = out(reg) _,
                status = out(reg) _,
                closed = const CLOSED,
                waiting = const WAITING,
                options(nostack),
            );
        }
        old
    }

    #[inline]
    fn take(head: &AtomicUsize) -> usize {
        let list: usize;
        // A plain LDR looks first, so an empty queue costs no exclusive and no acquire: once
        // the word holds a node only the consumer (the caller) makes it hold a tag again, so
        // the loop below, with no test, swaps out a node: this list or a longer one.
        //
        // ORDERING: LDAXR (load-acquire exclusive) pairs with the STLXR of every push in the
        // list (see `push`): no later access of the consumer, which reads the nodes' links and
        // values, is performed before it. STXR needs no release: storing EMPTY publishes
        // nothing (producers read only the word). The asm is a compiler barrier (no `nomem`),
        // so the consumer's reads of the nodes stay after it.
        //
        // SAFETY: `head` is a live, aligned `usize` atomic; `status` is `out`, so it differs
        // from the address register. Only the outputs and the flags are written.
        unsafe {
            exclusive_asm!(
                "ldr {list}, [{head}]",
                "cmp {list}, #{closed}",
                "b.ls 5f",
                "4:",
                "ldaxr {list}, [{head}]",
                fail_first_store!("4b"),
                "stxr {status:w}, xzr, [{head}]",
                "cbnz {status:w}, 4b",
                "5:";
                head = in(reg) head.as_ptr(),
                list = out(reg) list,
                status = out(reg) _,
                closed = const CLOSED,
                options(nostack),
            );
        }
        list
    }

    #[inline]
    fn compare_exchange(head: &AtomicUsize, expected: usize, new: usize) -> Result<(), usize> {
        let seen: usize;
        // ORDERING: none (LDXR, STXR): the wait hand-shake is decided by the word's
        // modification order alone, the exclusive pair making this read-modify-write atomic
        // against the producers' (a push between LDXR and STXR clears the monitor and the
        // STXR fails and retries). Nothing is published with WAITING or EMPTY, and a node
        // found on a mismatch is read only after `take`'s LDAXR. CLREX on a mismatch drops the
        // monitor; nothing is written.
        //
        // SAFETY: `head` is a live, aligned `usize` atomic; `seen` and `status` are `out`, so
        // they differ from the inputs. Only the outputs and the flags are written.
        unsafe {
            exclusive_asm!(
                "4:",
                "ldxr {seen}, [{head}]",
                "cmp {seen}, {expected}",
                "b.ne 2f",
                fail_first_store!("4b"),
                "stxr {status:w}, {new}, [{head}]",
                "cbnz {status:w}, 4b",
                "b 5f",
                "2:",
                "clrex",
                "5:";
                head = in(reg) head.as_ptr(),
                expected = in(reg) expected,
                new = in(reg) new,
                seen = out(reg) seen,
                status = out(reg) _,
                options(nostack),
            );
        }
        if seen == expected { Ok(()) } else { Err(seen) }
    }

    #[inline]
    fn close(head: &AtomicUsize) -> usize {
        let old: usize;
        // ORDERING: LDAXR, as in `take`: the closer owns and reads the nodes it swaps out.
        // STXR needs no release: producers that find CLOSED read nothing else.
        //
        // SAFETY: as in `take`; `closed` is an input register distinct from the `out` ones.
        unsafe {
            exclusive_asm!(
                "4:",
                "ldaxr {old}, [{head}]",
                fail_first_store!("4b"),
                "stxr {status:w}, {closed}, [{head}]",
                "cbnz {status:w}, 4b";
                head = in(reg) head.as_ptr(),
                closed = in(reg) CLOSED,
                old = out(reg) old,
                status = out(reg) _,
                options(nostack),
            );
        }
        old
    }
}
