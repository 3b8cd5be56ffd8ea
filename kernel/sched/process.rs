//! Processes: identifiers, options, exit reasons, messages, and the process table.
//!
//! Control blocks live in a table in the process region (`layout::CONTROL_BLOCKS_VA`), with
//! room for [`MAX_PROCESSES`]; its pages are mapped as the table grows and never unmapped, and
//! slots are reused. A [`Pid`] carries the slot's generation, so a stale pid never reaches a
//! newer process in the same slot: every lookup compares generations under the slot's lock.
//! Because a control block, once made, stays mapped for good, a stale pointer can never
//! dangle; it can only be refused.
//!
//! Free slots wait on one of two lists: those whose stack stretch still has its top page mapped
//! (a process just ended there), reused first, last in first out; and those whose page was
//! taken back for the frame pool when it ran dry (`reclaim_stack_page`). A slot never used is
//! made (its control block mapped and initialised) only when both lists are empty.

use alloc::boxed::Box;
use alloc::collections::VecDeque;
use alloc::vec::Vec;
use core::any::Any;
use core::cell::UnsafeCell;
use core::fmt;
use core::ptr::NonNull;
use core::sync::atomic::{AtomicBool, AtomicU8, AtomicU32, AtomicUsize, Ordering};

use super::priority::Priority;
use crate::arch::context::Context;
use crate::arch::exception::TrapFrame;
use crate::mm::heap::{self, OutOfMemory};
use crate::mm::layout::{CONTROL_BLOCKS_BYTES, CONTROL_BLOCKS_VA, PAGE_BYTES};
use crate::mm::stacks::{self, Stack};
use crate::mm::{frames, vmap};
use crate::sync::IrqSpinLock;

/// Most processes alive at once that the process region has room for (the limit in force is
/// the bootarg `max_processes`, at most this).
pub use crate::mm::layout::MAX_PROCESSES;
/// Bytes of one process control block.
pub const CONTROL_BLOCK_BYTES: usize = core::mem::size_of::<Process>();

const _: () = assert!(CONTROL_BLOCK_BYTES <= 256, "a control block fits in 256 bytes");
/// The most stack a process may grow to unless it asks otherwise. It starts with one page
/// mapped and grows a page at a time as it faults below it (`mm::stacks`).
pub const DEFAULT_STACK_BYTES: usize = 32 * 1024;

const _: () = assert!(CONTROL_BLOCK_BYTES * MAX_PROCESSES <= CONTROL_BLOCKS_BYTES, "the table fits its region");

/// A process identifier: a table slot and the generation of its occupant.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Pid {
    pub(crate) index: u32,
    pub(crate) generation: u32,
}

impl Pid {
    pub fn index(self) -> u32 {
        self.index
    }

    pub fn generation(self) -> u32 {
        self.generation
    }
}

impl fmt::Debug for Pid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "<{}.{}>", self.index, self.generation)
    }
}

impl fmt::Display for Pid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self, f)
    }
}

/// Where a process may run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Affinity {
    /// Any core; the balancer may move it.
    #[default]
    Free,
    /// Only this core, for good.
    Bound(usize),
}

/// How to spawn a process.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SpawnOptions {
    pub priority: Priority,
    /// The most stack the process may grow to (rounded up to pages; at least one page, at most
    /// 8 MiB). It starts with one page.
    pub stack_bytes: usize,
    pub affinity: Affinity,
    /// The core to start on: the spawning core when `None` (or the bound core).
    pub core: Option<usize>,
}

impl Default for SpawnOptions {
    fn default() -> Self {
        SpawnOptions {
            priority: Priority::Normal,
            stack_bytes: DEFAULT_STACK_BYTES,
            affinity: Affinity::Free,
            core: None,
        }
    }
}

impl SpawnOptions {
    pub fn priority(mut self, priority: Priority) -> Self {
        self.priority = priority;
        self
    }

    pub fn stack_bytes(mut self, bytes: usize) -> Self {
        self.stack_bytes = bytes;
        self
    }

    /// Binds the process to `core`: it starts there and never moves.
    pub fn bound_to(mut self, core: usize) -> Self {
        self.affinity = Affinity::Bound(core);
        self.core = Some(core);
        self
    }

    /// Starts the (free) process on `core`.
    pub fn on_core(mut self, core: usize) -> Self {
        self.core = Some(core);
        self
    }
}

/// Why a process ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExitReason {
    /// Its function returned, or it called `exit(ExitReason::Normal)`.
    Normal,
    /// It called `exit` with this code.
    Exit(u64),
    /// It took a fatal exception; `class` is ESR_EL1.EC (e.g. 0x25 data abort, 0x21
    /// instruction abort), `address` the faulting address (FAR) or instruction (ELR).
    Fault { class: u8, address: u64 },
    /// It ran into the guard below its stack: it needed more than its maximum.
    StackOverflow,
    /// Its stack had to grow (or the kernel needed room on it to preempt it) and no free page
    /// was left.
    OutOfMemory,
    /// Another process killed it.
    Killed,
    /// It panicked (a Rust `panic!`, a failed `expect`, an overflow check). The message is
    /// printed on the console; what it had on the heap is not reclaimed (panics abort, there
    /// is no unwinding) but counted: see `sched::heap_not_reclaimed_bytes`.
    Panic,
    /// (In a monitor message) the process did not exist when the monitor was set.
    NoProc,
}

impl fmt::Display for ExitReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ExitReason::Normal => write!(f, "normal"),
            ExitReason::Exit(code) => write!(f, "exit({code})"),
            ExitReason::Fault { class, address } => {
                write!(f, "fault: {} at {address:#x}", crate::arch::exception::class_name(u64::from(*class) << 26))
            }
            ExitReason::StackOverflow => write!(f, "stack overflow"),
            ExitReason::OutOfMemory => write!(f, "out of memory: no page to grow its stack"),
            ExitReason::Killed => write!(f, "killed"),
            ExitReason::Panic => write!(f, "panic"),
            ExitReason::NoProc => write!(f, "noproc"),
        }
    }
}

/// What a mailbox holds.
///
/// `repr(u64)`: an explicit 8-byte tag makes the enum 32 bytes of aligned words instead of 24
/// with the tag tucked into a niche of `ExitReason`; moving it is then a few aligned loads and
/// stores, where the niche layout cost an out-of-line byte-wise `memcpy` on this strict-alignment
/// target (twice per message: into the mailbox and out of it).
#[repr(u64)]
pub enum Message {
    /// A machine word: counters, tokens, small results.
    Word(u64),
    /// A monitored process ended (see `monitor`).
    Down { pid: Pid, reason: ExitReason },
    /// Anything else, boxed.
    Boxed(Box<dyn Any + Send>),
}

impl fmt::Debug for Message {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Message::Word(word) => write!(f, "Word({word})"),
            Message::Down { pid, reason } => write!(f, "Down({pid}, {reason})"),
            Message::Boxed(_) => write!(f, "Boxed(..)"),
        }
    }
}

/// Why `spawn` failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SpawnError {
    /// No memory for the stack, the control block or the process's closure, or what is left
    /// is the kernel's reserve (see `mm::heap` and [`SPAWN_FRAME_RESERVE_BYTES`]).
    OutOfMemory(OutOfMemory),
    /// The options name a core that is not online.
    NoSuchCore(usize),
    /// `max_processes` processes are alive (bootarg; at most [`MAX_PROCESSES`]).
    TableFull,
}

impl fmt::Display for SpawnError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SpawnError::OutOfMemory(error) => write!(f, "spawn: {error}"),
            SpawnError::NoSuchCore(core) => write!(f, "spawn: no online core {core}"),
            SpawnError::TableFull => {
                write!(f, "spawn: process limit reached ({} processes alive; bootarg max_processes)", limit())
            }
        }
    }
}

/// Why a message could not be delivered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SendError {
    /// The process has ended (or never existed).
    NoProc(Pid),
    /// The receiver's mailbox could not grow.
    OutOfMemory(Pid),
}

impl fmt::Display for SendError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SendError::NoProc(pid) => write!(f, "send: no process {pid}"),
            SendError::OutOfMemory(pid) => write!(f, "send: no memory to grow the mailbox of {pid}"),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum State {
    /// The slot holds no process.
    Free,
    /// Running, or in exactly one run queue or inbox (or about to be). Other cores only
    /// need to tell live from ended and waiting from not, so the scheduler does not track
    /// running separately (it would cost a lock per switch).
    Runnable,
    /// Blocked in `receive`; a message (or its timeout) makes it runnable.
    Waiting,
}

/// What any core may touch, under the slot's lock.
pub(crate) struct Shared {
    pub generation: u32,
    pub state: State,
    pub mailbox: VecDeque<Message>,
    pub monitors: Vec<Pid>,
    /// Bumped each time the process blocks, so a stale timeout does not wake a later wait.
    pub wait_sequence: u64,
    pub timed_out: bool,
}

/// Bytes of closure a control block holds in place; a bigger closure is boxed on the heap.
const ENTRY_INLINE_BYTES: usize = 32;

/// The closure a new process runs. Small enough ones (up to [`ENTRY_INLINE_BYTES`], aligned
/// to at most 8) live in the control block itself, so spawning one allocates nothing on the
/// heap; others are boxed. Cleared unrun (the process was killed first), it drops the closure.
/// Written and taken in place: on the spawn path it is never moved whole.
pub(crate) struct Entry {
    /// Moves the closure out of `data` and runs it (`true`) or drops it (`false`); `None`
    /// when there is none.
    call: Option<unsafe fn(*mut u8, bool)>,
    data: core::mem::MaybeUninit<[u64; ENTRY_INLINE_BYTES / 8]>,
}

/// Runs (or drops) the `F` in `data`.
///
/// # Safety
/// `data` holds an `F` written by `Entry::put`, read here once.
unsafe fn call_in_place<F: FnOnce()>(data: *mut u8, run: bool) {
    // SAFETY: forwarded contract: the `F` is moved out and never read again.
    let function = unsafe { data.cast::<F>().read() };
    if run {
        function();
    }
}

impl Entry {
    const EMPTY: Entry = Entry { call: None, data: core::mem::MaybeUninit::uninit() };

    /// Whether an `F` is kept in place (else it must be boxed first).
    pub const fn fits<F>() -> bool {
        core::mem::size_of::<F>() <= ENTRY_INLINE_BYTES && core::mem::align_of::<F>() <= 8
    }

    /// Stores `function` (which [`fits`](Self::fits); a `Box<F>` always does), dropping any
    /// closure held before.
    pub fn put<F: FnOnce() + Send + 'static>(&mut self, function: F) {
        // A constant per `F`: the check costs nothing where it holds (spawn boxes the others).
        assert!(Self::fits::<F>(), "a closure that does not fit is boxed first");
        self.clear();
        // SAFETY: `data` has room and alignment for an `F` (asserted above).
        unsafe { self.data.as_mut_ptr().cast::<F>().write(function) };
        self.call = Some(call_in_place::<F>);
    }

    /// Takes the closure and runs it.
    pub fn run(&mut self) {
        if let Some(call) = self.call.take() {
            // SAFETY: `call` matches what `put` stored in `data`; taking it first means the
            // closure is read once.
            unsafe { call(self.data.as_mut_ptr().cast(), true) };
        }
    }

    /// Drops the closure unrun, if one is held.
    pub fn clear(&mut self) {
        if let Some(call) = self.call.take() {
            // SAFETY: as in `run`.
            unsafe { call(self.data.as_mut_ptr().cast(), false) };
        }
    }
}

/// What only the core running or scheduling the process touches.
pub(crate) struct Local {
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
    /// Heap bytes allocated minus heap bytes freed while it ran (see `heap::net_bytes_on`):
    /// what a panic leaves behind, since a panic does not unwind.
    pub heap_net_bytes: i64,
}

/// A process control block: 256 bytes, four cache lines of its own (aligned, so two control
/// blocks never share a line and a slot's address is its index shifted).
#[repr(align(64))]
pub(crate) struct Process {
    pub shared: IrqSpinLock<Shared>,
    pub priority: AtomicU8,
    /// `usize::MAX` when free to move, else the bound core.
    pub bound_core: AtomicUsize,
    /// The core whose queues hold it or that runs it.
    pub core: AtomicUsize,
    pub migrations: AtomicU32,
    /// The balancer may move it (`runqueue::movable`, kept up to date by whoever changes what
    /// it depends on: spawn, and each migration): its run queue is then the stealable one.
    pub movable: AtomicBool,
    pub kill_requested: AtomicBool,
    /// The generation, readable without the lock (for traces; the lock's copy is the truth).
    pub generation_hint: AtomicU32,
    /// The next slot on the free list this one is on (under `FREE`'s lock).
    free_next: AtomicU32,
    pub local: UnsafeCell<Local>,
}

// SAFETY: `shared` is behind a lock; `local` is only touched by the core that currently owns
// the process (runs it, or holds it in its own run queue), which the scheduler hands over with
// the release/acquire of the run-queue operations.
unsafe impl Sync for Process {}

const NOT_BOUND: usize = usize::MAX;

impl Process {
    const fn new() -> Process {
        Process {
            shared: IrqSpinLock::new(Shared {
                generation: 0,
                state: State::Free,
                mailbox: VecDeque::new(),
                monitors: Vec::new(),
                wait_sequence: 0,
                timed_out: false,
            }),
            priority: AtomicU8::new(Priority::Normal as u8),
            bound_core: AtomicUsize::new(NOT_BOUND),
            core: AtomicUsize::new(0),
            migrations: AtomicU32::new(0),
            movable: AtomicBool::new(false),
            kill_requested: AtomicBool::new(false),
            generation_hint: AtomicU32::new(0),
            free_next: AtomicU32::new(NO_SLOT),
            local: UnsafeCell::new(Local {
                context: Context::ZERO,
                preempted_frame: None,
                entry: Entry::EMPTY,
                stack: None,
                slot_stack_mapped: false,
                reductions: 0,
                low_passes: 0,
                heap_net_bytes: 0,
            }),
        }
    }

    pub fn priority(&self) -> Priority {
        Priority::from_u8(self.priority.load(Ordering::Relaxed))
    }

    pub fn affinity(&self) -> Affinity {
        match self.bound_core.load(Ordering::Relaxed) {
            NOT_BOUND => Affinity::Free,
            core => Affinity::Bound(core),
        }
    }

    /// The owner-only part.
    ///
    /// # Safety
    /// The caller is on the core that owns the process (see `Sync` above) with IRQs masked or
    /// in the process itself, and holds no other reference from this call.
    #[allow(clippy::mut_from_ref)]
    pub unsafe fn local(&self) -> &mut Local {
        // SAFETY: forwarded contract: exclusive access by the owning core.
        unsafe { &mut *self.local.get() }
    }
}

/// No slot (the end of a free list).
const NO_SLOT: u32 = u32::MAX;
/// Frames a spawn leaves for the stacks of processes already alive to grow into (and for the
/// kernel to save a preempted process's registers on its stack): 256 KiB, or 1/256 of RAM if
/// that is more, on top of the pool's emergency frames (`frames::EMERGENCY_FRAMES`).
pub const SPAWN_FRAME_RESERVE_BYTES: usize = 256 << 10;

fn spawn_frame_reserve() -> usize {
    SPAWN_FRAME_RESERVE_BYTES.max(frames::total_bytes() / 256) + frames::EMERGENCY_FRAMES * PAGE_BYTES
}

/// Slots `[0, SLOTS_MADE)` have a mapped, initialised control block (set with Release after the
/// slot is made; a reader that sees an index below it with Acquire sees the block).
static SLOTS_MADE: AtomicU32 = AtomicU32::new(0);
/// Serialises making slots (`SLOTS_MADE` only ever grows by one, in order).
static MAKING: IrqSpinLock<()> = IrqSpinLock::new(());
/// The most processes alive at once (bootarg `max_processes`).
static LIMIT: AtomicUsize = AtomicUsize::new(MAX_PROCESSES);
/// Processes alive (a mirror of `FreeSlots::live`, readable without the lock).
static LIVE: AtomicUsize = AtomicUsize::new(0);

/// Free slots whose stack page is still mapped (a mirror of `FreeSlots::mapped_len`).
static CACHED_STACK_PAGES: AtomicUsize = AtomicUsize::new(0);

struct FreeSlots {
    /// Free slots whose stack stretch has its top page mapped (LIFO), and those without.
    mapped: u32,
    unmapped: u32,
    mapped_len: usize,
    live: usize,
}

static FREE: IrqSpinLock<FreeSlots> =
    IrqSpinLock::new(FreeSlots { mapped: NO_SLOT, unmapped: NO_SLOT, mapped_len: 0, live: 0 });

impl FreeSlots {
    fn pop(&mut self, mapped: bool) -> Option<u32> {
        let list = if mapped { &mut self.mapped } else { &mut self.unmapped };
        let index = *list;
        if index == NO_SLOT {
            return None;
        }
        *list = slot(index).free_next.load(Ordering::Relaxed);
        if mapped {
            self.mapped_len -= 1;
            CACHED_STACK_PAGES.store(self.mapped_len, Ordering::Relaxed);
        }
        Some(index)
    }

    fn push(&mut self, mapped: bool, index: u32) {
        let list = if mapped { &mut self.mapped } else { &mut self.unmapped };
        slot(index).free_next.store(*list, Ordering::Relaxed);
        *list = index;
        if mapped {
            self.mapped_len += 1;
            CACHED_STACK_PAGES.store(self.mapped_len, Ordering::Relaxed);
        }
    }
}

/// Bytes of stack pages free slots keep mapped for their next process (taken back when the
/// frame pool runs dry).
pub(crate) fn cached_stack_bytes() -> usize {
    CACHED_STACK_PAGES.load(Ordering::Relaxed) * PAGE_BYTES
}

/// The control block in slot `index`: a slot the scheduler got from [`allocate`] (every index
/// it holds, in a pid, a queue or a timeout, comes from there).
pub(crate) fn slot(index: u32) -> &'static Process {
    debug_assert!(index < SLOTS_MADE.load(Ordering::Relaxed), "slot {index} was never made");
    // SAFETY: slots below `SLOTS_MADE` have an initialised control block at this address in the
    // process region, mapped for good (`make_slot`); `Process` is `Sync`.
    unsafe { &*(CONTROL_BLOCKS_VA as *const Process).add(index as usize) }
}

/// The control block in slot `index`, if the slot has ever been made.
pub(crate) fn slot_checked(index: u32) -> Option<&'static Process> {
    // ORDERING: Acquire pairs with the Release in `make_slot`: the block's initialisation is
    // seen before it is used.
    (index < SLOTS_MADE.load(Ordering::Acquire)).then(|| slot(index))
}

/// Slots made so far (the indices a pid can have).
pub(crate) fn slots_made() -> u32 {
    SLOTS_MADE.load(Ordering::Acquire)
}

/// The process limit in force.
pub fn limit() -> usize {
    LIMIT.load(Ordering::Relaxed)
}

/// Applies the bootarg `max_processes` and lets the frame pool take back free slots' stack
/// pages when it runs dry. Boot core, before any spawn.
pub(crate) fn init_table() -> Result<(), OutOfMemory> {
    LIMIT.store(crate::boot_config().max_processes.min(MAX_PROCESSES), Ordering::Relaxed);
    frames::set_reclaimer(reclaim_stack_page);
    Ok(())
}

/// A slot for a new process, with a stack of `stack_bytes` in its control block (`stack`,
/// `slot_stack_mapped`). The slot is the caller's; nothing else can reach it until its state
/// says it is alive. IRQs masked, kernel stack (`context::on_kernel_stack`).
pub(crate) fn allocate(stack_bytes: usize) -> Result<u32, SpawnError> {
    let live = LIVE.load(Ordering::Relaxed);
    if !heap::within_reserve(0, live + 1) {
        return Err(SpawnError::OutOfMemory(OutOfMemory { requested_bytes: heap::kernel_reserve(live + 1) }));
    }
    // Free slots' stack pages count: a spawn takes such a slot first, and the pool takes them
    // back when it runs dry.
    if frames::available_bytes() + cached_stack_bytes() < spawn_frame_reserve() + PAGE_BYTES {
        return Err(SpawnError::OutOfMemory(OutOfMemory { requested_bytes: PAGE_BYTES }));
    }
    let (index, top_mapped) = take_slot()?;
    match stacks::allocate(index, stack_bytes, top_mapped) {
        Ok(stack) => {
            // SAFETY: the slot is ours alone (taken from the free lists or just made).
            let local = unsafe { slot(index).local() };
            local.slot_stack_mapped = top_mapped || stack.in_slot();
            local.stack = Some(stack);
            Ok(index)
        }
        Err(error) => {
            put_slot(index, top_mapped);
            Err(SpawnError::OutOfMemory(error))
        }
    }
}

/// A free slot (reused first, its stack page still mapped; else one whose page was taken back;
/// else a new one) and whether its stack stretch has its top page mapped.
fn take_slot() -> Result<(u32, bool), SpawnError> {
    {
        let mut free = FREE.lock();
        if free.live >= limit() {
            return Err(SpawnError::TableFull);
        }
        let taken = match free.pop(true) {
            Some(index) => Some((index, true)),
            None => free.pop(false).map(|index| (index, false)),
        };
        free.live += 1;
        LIVE.store(free.live, Ordering::Relaxed);
        if let Some(taken) = taken {
            return Ok(taken);
        }
    }
    make_slot().map(|index| (index, false)).inspect_err(|_| {
        let mut free = FREE.lock();
        free.live -= 1;
        LIVE.store(free.live, Ordering::Relaxed);
    })
}

/// Makes the next slot: maps its control block's pages and initialises it.
fn make_slot() -> Result<u32, SpawnError> {
    let _making = MAKING.lock();
    let index = SLOTS_MADE.load(Ordering::Relaxed);
    if index as usize >= MAX_PROCESSES {
        return Err(SpawnError::TableFull);
    }
    let start = CONTROL_BLOCKS_VA + index as usize * CONTROL_BLOCK_BYTES;
    let end = start + CONTROL_BLOCK_BYTES;
    let first_page = start & !(PAGE_BYTES - 1);
    vmap::prepare(first_page, end).map_err(SpawnError::OutOfMemory)?;
    for page in (first_page..end).step_by(PAGE_BYTES) {
        if !vmap::is_mapped(page) {
            let frame = frames::allocate().map_err(SpawnError::OutOfMemory)?;
            vmap::map(page, frame);
        }
    }
    vmap::publish();
    // SAFETY: `[start, end)` is mapped read-write (above) and no one else can reach it: the
    // slot's index is not below `SLOTS_MADE` yet, and `MAKING` is held.
    unsafe { (start as *mut Process).write(Process::new()) };
    // ORDERING: Release: the initialised block is seen by whoever sees the new count (Acquire
    // in `slot_checked`).
    SLOTS_MADE.store(index + 1, Ordering::Release);
    Ok(index)
}

/// Puts a slot that was taken but not used back on its list.
fn put_slot(index: u32, top_mapped: bool) {
    let mut free = FREE.lock();
    free.push(top_mapped, index);
    free.live -= 1;
    LIVE.store(free.live, Ordering::Relaxed);
}

/// Returns a slot whose process has ended (its stack freed with `stacks::free`).
pub(crate) fn release_slot(index: u32) {
    // SAFETY: the scheduler that ends the process owns its control block (see `finish`).
    let mapped = unsafe { slot(index).local().slot_stack_mapped };
    put_slot(index, mapped);
}

/// For the frame pool when no frame is free: unmaps the stack page of the free slot released
/// most recently and returns its frame; the slot moves to the other list.
fn reclaim_stack_page() -> Option<usize> {
    let index = FREE.lock().pop(true)?;
    let frame = stacks::unmap_slot_top(index);
    FREE.lock().push(false, index);
    frame
}

/// The live process `pid` names, or `None` if it has ended or never existed.
pub(crate) fn lookup(pid: Pid) -> Option<&'static Process> {
    let process = slot_checked(pid.index)?;
    let shared = process.shared.lock();
    (shared.generation == pid.generation && shared.state != State::Free).then_some(process)
}

/// Processes alive now.
pub(crate) fn live_count() -> usize {
    LIVE.load(Ordering::Relaxed)
}
