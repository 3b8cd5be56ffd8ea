//! The process control block and how a slot is reached (`process_types.rs` holds what programs
//! see of a process: pids, spawn options, exit reasons, messages, errors; `table.rs` makes and
//! reuses slots; `entry.rs` holds the closure a process runs).
//!
//! Control blocks live in a table in the process region (`layout::CONTROL_BLOCKS_VA`), with
//! room for [`MAX_PROCESSES`]; its pages are mapped as the table grows and never unmapped, and
//! slots are reused. A [`Pid`] carries the slot's generation, so a stale pid never reaches a
//! newer process in the same slot: every lookup compares generations under the slot's lock.
//! Because a control block, once made, stays mapped for good, a stale pointer can never
//! dangle; it can only be refused.

use alloc::boxed::Box;
use alloc::vec::Vec;
use core::cell::UnsafeCell;
use core::ptr::NonNull;
use core::sync::atomic::{AtomicBool, AtomicU8, AtomicU16, AtomicU32, AtomicU64, Ordering};

use beamcore_signal_queue::{Node, SignalQueue};

use super::chunks::made;
pub(crate) use super::chunks::{CHUNK_SLOTS, SLOTS_RESERVED, chunk_made};
pub(crate) use super::entry::Entry;
pub(crate) use super::process_types::LIMIT;
pub use super::process_types::{
    Affinity, DEFAULT_STACK_BYTES, ExitReason, INLINE_BYTES, InlineValue, Message, Pid, Ref, SendError, SpawnError,
    SpawnOptions, limit,
};
use beamcore_core_set::CoreMaskCell;
use beamcore_hal::arch::context::Context;
use beamcore_hal::arch::exception::TrapFrame;
use beamcore_hal::ids::{AtomicCoreId, CoreId, Slot};
use beamcore_hal::sync::IrqSpinLock;
use beamcore_mm::layout::{CONTROL_BLOCKS_BYTES, CONTROL_BLOCKS_VA, PAGE_BYTES};
use beamcore_mm::stacks::Stack;
use beamcore_sched_policy::priority::Priority;

/// Most processes alive at once that the process region has room for (the limit in force is
/// the bootarg `max_processes`, at most this).
pub use beamcore_mm::layout::MAX_PROCESSES;
/// Bytes of one process control block.
pub const CONTROL_BLOCK_BYTES: usize = core::mem::size_of::<Process>();

const _: () = assert!(CONTROL_BLOCK_BYTES <= 256, "a control block fits in 256 bytes");
const _: () =
    assert!(CONTROL_BLOCK_BYTES * CHUNK_SLOTS as usize == PAGE_BYTES, "a chunk's control blocks fill one page");

const _: () = assert!(CONTROL_BLOCK_BYTES * MAX_PROCESSES <= CONTROL_BLOCKS_BYTES, "the table fits its region");

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum State {
    /// The slot holds no process.
    Free,
    /// Alive: running, in exactly one run queue or inbox (or about to be), or blocked in
    /// `receive`. Whether it is blocked is its signal queue's word (`Process::signals`: WAITING
    /// until someone claims the wake-up), not a state here: one word, read-modify-written by
    /// whoever blocks or wakes it, so that exactly one party queues it again.
    Runnable,
}

/// What any core may touch, under the slot's lock.
pub(crate) struct Shared {
    pub generation: u32,
    pub state: State,
    /// Signals pushed into `Process::signals` in this generation (under this lock, by every
    /// producer: see `mailbox`); less the consumer's `Process::taken`, the queue's length.
    pub pushed: u32,
    /// Links, monitors both ways, the registered name and the trap-exits flag: made on first use
    /// (most processes have none, and the control block has no room for them).
    pub relations: Option<Box<Relations>>,
    /// Exit signals arrive as `Message::Exit` instead of ending it (`trap_exits`).
    pub trap_exits: bool,
}

/// The list of a process's links.
pub(crate) type Links = smallvec::SmallVec<[Pid; 2]>;

/// A process's relations to others, under its slot's lock (`msg/signals.rs` keeps both ends of each
/// consistent).
#[derive(Default)]
pub(crate) struct Relations {
    /// Processes linked to it (each also lists it). Two in place before any allocation: a
    /// worker links to its supervisor, a supervisor to many.
    pub links: Links,
    /// Monitors set on it: the reference and who is told when it ends.
    pub watchers: Vec<(Ref, Pid)>,
    /// Monitors it holds: the reference and whom it watches. A `Down` is delivered only while
    /// its reference is here, so `demonitor` (which removes it first) is never followed by one.
    pub watching: Vec<(Ref, Pid)>,
    /// Its registered name, if any (the registry maps it back).
    pub name: Option<Box<str>>,
    /// The reason an exit signal it does not trap ends it with, at its next safe point (see
    /// `Process::exit_requested`; the first one wins). `None` with the flag set: `Killed` (a
    /// `kill` needs no memory). Here rather than in `Shared`, whose 16 bytes the control block
    /// has no room for.
    pub pending_exit: Option<ExitReason>,
}

impl Shared {
    /// Why the process ends, once its `exit_requested` flag is set.
    pub fn exit_reason(&self) -> ExitReason {
        self.relations.as_ref().and_then(|r| r.pending_exit).unwrap_or(ExitReason::Killed)
    }
}

/// Why a process is unwinding, in a byte (the control block has no room for an `ExitReason`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Unwinding {
    /// It panicked: it ends with `Panic`.
    Panic,
    /// A kill or an exit signal: it ends with the pending reason (`Shared::exit_reason`).
    Requested,
    /// Its own `exit(reason)`, whose reason only the unwind's payload carries.
    Own,
}

/// What only the core running or scheduling the process touches.
pub(crate) struct ProcessLocal {
    pub context: Context,
    /// Set when the process was preempted: its full register state, saved on its own stack.
    pub preempted_frame: Option<NonNull<TrapFrame>>,
    pub entry: Entry,
    pub stack: Option<Stack>,
    /// The top page of the slot's own stack stretch is mapped (it is when the process's stack
    /// lives there; a process with a bigger stack leaves it as the slot had it).
    pub slot_stack_mapped: bool,
    /// Reductions left in the current slice.
    pub reductions: i64,
    /// Times passed over under the low-priority rule.
    pub low_passes: u8,
    /// Heap bytes allocated minus heap bytes freed while it ran (see `heap::counted`): what it
    /// leaves behind if it ends without unwinding (a fault, a kill it never reached a safe
    /// point for), counted then as not reclaimed.
    pub heap_net_bytes: i64,
    /// Its stack is being unwound (`turn/unwind.rs`), and the reason it ends with: a second end on
    /// the way (a panic in a destructor, a fault, a kill at a safe point a destructor reaches)
    /// ends it without unwinding, with this reason.
    pub unwinding: Option<Unwinding>,
    /// It came back to its base, by returning or by unwinding: what it owned was dropped.
    pub ended_at_base: bool,
    /// Turns it was given, preempted in its own code, since an exit came for it: past its
    /// allowance it is ended without unwinding (`unwind::ends_unrun`).
    pub exit_grace_turns: u8,
    /// The counter reading when it last entered a run queue of the core that holds it (the
    /// start of the wait the queue-wait histogram counts when it runs).
    pub queued_at: u64,
}

/// One queued signal: a message, a `Down` or a trapped `Exit`, in the node the signal queue
/// links (allocated by the sender, freed by the receiver).
pub(crate) type Signal = Node<Message>;

/// A process control block: 256 bytes, four cache lines of its own (aligned, so two control
/// blocks never share a line and a slot's address is its index shifted).
#[repr(align(64))]
pub(crate) struct Process {
    pub shared: IrqSpinLock<Shared>,
    /// Its signal queue (mailbox): pushed by any core under the slot lock after the
    /// generation check, taken from without a lock by the process itself (the consumer), and
    /// the wait hand-shake in its head word (`msg/mailbox.rs`, docs/scheduler.md).
    pub signals: SignalQueue<Message>,
    /// Signals the process has taken out of `signals` in this generation (written only by the
    /// consumer; `Shared::pushed` less this is the queue's length).
    pub taken: AtomicU32,
    /// Bumped (by the process itself, wrapping) each time it blocks, so that a stale timeout
    /// does not wake a later wait (16 bits for the control block's budget: a timeout 65,536
    /// waits stale can only wake a wait early, which `receive` takes as no message).
    pub wait_sequence: AtomicU16,
    pub priority: AtomicU8,
    /// The cores it may run on (`bound_to` is a one-core set). Read by thieves and push
    /// rebalancing through `offline::may_run_here`.
    pub allowed: CoreMaskCell,
    /// The core whose queues hold it or that runs it.
    pub core: AtomicCoreId,
    pub migrations: AtomicU32,
    /// The balancer may move it (`runqueue::movable`, kept up to date by whoever changes what
    /// it depends on: spawn, and each migration): its run queue is then the stealable one.
    pub movable: AtomicBool,
    /// An exit is pending (`Shared::pending_exit` says why): the scheduler ends the process
    /// instead of giving it its next turn, and `receive` ends it instead of blocking. Written
    /// only under the slot lock; read without it on the scheduler's fast path.
    pub exit_requested: AtomicBool,
    /// Reductions charged to it so far (`bump_reductions`): written only by the process itself,
    /// read by `process_info` from anywhere.
    pub reductions: AtomicU64,
    /// Pages of its stack mapped (written by its core when the stack is made or grows; read by
    /// `process_info`; a stack is at most 8 MiB, 2,048 pages).
    pub stack_mapped_pages: AtomicU16,
    /// It is blocking in `receive` and its core has not yet saved its registers: set before
    /// its signal queue's word says WAITING (a release fence between), cleared (Release) by
    /// that core once the registers are saved. With `queues=shared` a waker on another core
    /// queues the process as soon as it claims the wake-up (an acquire fence after the claim);
    /// the core that takes it from the shared queue waits for this flag (Acquire) before it
    /// touches the saved context or the stack. Only a block needs it: a yield, a preemption or
    /// an exit is queued (or ended) by the process's own core after the save, and with per-core
    /// queues a woken process goes through its own core too.
    pub registers_live: AtomicBool,
    /// The generation, readable without the lock (for traces; the lock's copy is the truth).
    pub generation_hint: AtomicU32,
    /// The next slot on the free list this one is on (under `FREE`'s lock).
    pub(crate) free_next: AtomicU32,
    pub local: UnsafeCell<ProcessLocal>,
}

// SAFETY: `shared` is behind a lock; `local` is only touched by the core that currently owns
// the process (runs it, or holds it in its own run queue), which the scheduler hands over with
// the release/acquire of the run-queue operations.
unsafe impl Sync for Process {}

impl Process {
    /// Records how much of its stack is mapped (for `process_info`).
    pub(crate) fn note_stack_mapped(&self, bytes: usize) {
        // ORDERING: Relaxed: a figure for a report, written only by the core that owns it.
        self.stack_mapped_pages.store((bytes / beamcore_mm::layout::PAGE_BYTES) as u16, Ordering::Relaxed);
    }

    /// It is about to block: its registers stay live on this core until `registers_saved`.
    /// The caller publishes it with the wait (see `receive::wait_for_message`).
    #[inline(always)]
    pub(crate) fn mark_registers_live(&self) {
        // ORDERING: Relaxed: the release fence before `prepare_wait` (`wait_for_message`)
        // orders it before the WAITING a waker's claim reads; the waker's acquire fence after
        // the claim orders it before the waker queues the process where another core can take
        // it (fence to fence through the head word).
        self.registers_live.store(true, Ordering::Relaxed);
    }

    /// The wait did not happen after all (something was queued, or an exit is pending): its
    /// registers were never handed over.
    #[inline(always)]
    pub(crate) fn registers_not_live(&self) {
        // ORDERING: Relaxed: its own flag, and nobody resumes it meanwhile (no wake-up was
        // claimed, or it blocks anyway and `registers_saved` follows).
        self.registers_live.store(false, Ordering::Relaxed);
    }

    /// Claims the wake-up of the process blocked in `receive` for a waker that is not a sender
    /// (a kill, an exit signal, a timeout): true if it waited and the caller, and nobody else,
    /// must queue it (IRQs masked until it has, as for a send).
    pub(crate) fn claim_wake(&self) -> bool {
        let claimed = self.signals.claim_wake();
        if claimed {
            // ORDERING: Acquire fence, paired with the release fence the process made before
            // its `prepare_wait`, as for a push that claims (`mailbox::push_locked`).
            core::sync::atomic::fence(Ordering::Acquire);
        }
        claimed
    }

    /// Takes the oldest signal from its queue.
    ///
    /// # Safety
    ///
    /// The signal queue's consumer contract: the caller is the process itself (or the core
    /// that holds it while it runs nowhere).
    #[inline(always)]
    pub(crate) unsafe fn take_signal(&self) -> Option<Box<Signal>> {
        // SAFETY: forwarded contract.
        let node = unsafe { self.signals.pop() }?;
        self.count_taken();
        Some(node)
    }

    /// One more signal taken out of its queue (by its consumer only).
    #[inline(always)]
    pub(crate) fn count_taken(&self) {
        // ORDERING: Relaxed: one writer (the consumer, handed on by the scheduler's hand-over);
        // a reader on another core gets a figure for a report.
        self.taken.store(self.taken.load(Ordering::Relaxed).wrapping_add(1), Ordering::Relaxed);
    }

    /// How many signals wait in its queue, read under its lock (`shared`): exact for the
    /// process itself, and for another one whenever no signal is being pushed or taken;
    /// otherwise a figure from a moment ago (the consumer's count may lag behind, never ahead:
    /// a push is counted before it is made).
    pub(crate) fn queue_len(&self, shared: &Shared) -> usize {
        // ORDERING: Relaxed: see `count_taken`.
        let taken = self.taken.load(Ordering::Relaxed);
        (shared.pushed.wrapping_sub(taken) as i32).max(0) as usize
    }

    /// It has just blocked and its registers are saved in its context: another core may now
    /// resume it.
    #[inline(always)]
    pub(crate) fn registers_saved(&self) {
        // ORDERING: Release, paired with the Acquire in `wait_registers_saved`: the saved
        // registers (and all the process wrote on its last core) are visible to whoever sees
        // false.
        self.registers_live.store(false, Ordering::Release);
    }

    /// Waits until the core that last ran it has saved its registers (see `registers_live`):
    /// a few dozen instructions at most, run by that core with IRQs masked.
    pub(crate) fn wait_registers_saved(&self) {
        // The check that the shared-queue test catches a missing wait (`make test-shared-wake`).
        #[cfg(sched_omit_register_wait)]
        return;
        // ORDERING: Acquire, paired with the Release in `registers_saved`.
        #[allow(unreachable_code)]
        while self.registers_live.load(Ordering::Acquire) {
            core::hint::spin_loop();
        }
    }

    pub(crate) const fn new() -> Process {
        Process {
            shared: IrqSpinLock::new(Shared {
                generation: 0,
                state: State::Free,
                pushed: 0,
                relations: None,
                trap_exits: false,
            }),
            signals: SignalQueue::new(),
            taken: AtomicU32::new(0),
            wait_sequence: AtomicU16::new(0),
            priority: AtomicU8::new(Priority::Normal as u8),
            allowed: CoreMaskCell::all(),
            core: AtomicCoreId::new(CoreId::BOOT),
            migrations: AtomicU32::new(0),
            movable: AtomicBool::new(false),
            exit_requested: AtomicBool::new(false),
            reductions: AtomicU64::new(0),
            stack_mapped_pages: AtomicU16::new(0),
            registers_live: AtomicBool::new(false),
            generation_hint: AtomicU32::new(0),
            free_next: AtomicU32::new(NO_SLOT.get()),
            local: UnsafeCell::new(ProcessLocal {
                context: Context::ZERO,
                preempted_frame: None,
                entry: Entry::EMPTY,
                stack: None,
                slot_stack_mapped: false,
                reductions: 0,
                low_passes: 0,
                heap_net_bytes: 0,
                unwinding: None,
                ended_at_base: false,
                exit_grace_turns: 0,
                queued_at: 0,
            }),
        }
    }

    pub fn priority(&self) -> Priority {
        Priority::from_u8(self.priority.load(Ordering::Relaxed))
    }

    pub fn affinity(&self) -> Affinity {
        Affinity::of(self.allowed.load())
    }

    /// The owner-only part.
    ///
    /// # Safety
    /// The caller is on the core that owns the process (see `Sync` above) with IRQs masked or
    /// in the process itself, and holds no other reference from this call.
    #[allow(clippy::mut_from_ref)]
    pub unsafe fn local(&self) -> &mut ProcessLocal {
        // SAFETY: forwarded contract: exclusive access by the owning core.
        unsafe { &mut *self.local.get() }
    }
}

/// No slot (the end of a free list).
pub(crate) const NO_SLOT: Slot = Slot::new(u32::MAX);
/// The control block in slot `index`: a slot the scheduler got from `table::allocate` (every index
/// it holds, in a pid, a queue or a timeout, comes from there).
pub(crate) fn slot(index: Slot) -> &'static Process {
    debug_assert!(made(index, Ordering::Relaxed), "slot {index} was never made");
    // SAFETY: a slot the table handed out has an initialised control block at this address in
    // the process region, mapped for good (`table::make_chunk`); `Process` is `Sync`.
    unsafe { &*(CONTROL_BLOCKS_VA as *const Process).add(index.index()) }
}

/// The control block in slot `index`, if the slot has ever been made.
pub(crate) fn slot_checked(index: Slot) -> Option<&'static Process> {
    // ORDERING: Acquire pairs with the Release in `ChunkBit::publish`: the block's
    // initialisation is seen before it is used.
    made(index, Ordering::Acquire).then(|| slot(index))
}

/// The slots made so far (those a pid can name), for a walk over the whole table.
pub(crate) fn slots_made() -> impl Iterator<Item = Slot> {
    // ORDERING: Relaxed: which chunks are reserved; each is asked whether it is made (Acquire).
    (0..SLOTS_RESERVED.load(Ordering::Relaxed)).map(Slot::new).filter(|&index| made(index, Ordering::Acquire))
}

/// The live process `pid` names, or `None` if it has ended or never existed.
pub(crate) fn lookup(pid: Pid) -> Option<&'static Process> {
    let process = slot_checked(pid.index)?;
    let shared = process.shared.lock();
    (shared.generation == pid.generation && shared.state != State::Free).then_some(process)
}
