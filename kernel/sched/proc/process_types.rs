//! What a program sees of processes: their identifiers, the options they are spawned with, why
//! they end, the messages they exchange and why a spawn or a send fails. The control block that
//! carries them is `process.rs`.

use alloc::boxed::Box;
use core::any::{Any, TypeId};
use core::fmt;
use core::mem::{MaybeUninit, align_of, needs_drop, size_of};
use core::sync::atomic::{AtomicUsize, Ordering};

use beamcore_core_set::CoreMask;
use beamcore_hal::{arch::exception::class_name, ids::Slot};
use beamcore_mm::heap::OutOfMemory;
use beamcore_mm::layout::MAX_PROCESSES;
use beamcore_sched_policy::balance::PlaceError;
use beamcore_sched_policy::priority::Priority;

/// The most stack a process may grow to unless it asks otherwise. It starts with one page
/// mapped and grows a page at a time as it faults below it (`mm::stacks`).
pub const DEFAULT_STACK_BYTES: usize = 32 * 1024;
/// The most processes alive at once (bootarg `max_processes`).
pub(crate) static LIMIT: AtomicUsize = AtomicUsize::new(MAX_PROCESSES);
/// The process limit in force.
pub fn limit() -> usize {
    LIMIT.load(Ordering::Relaxed)
}

/// A process identifier: a table slot and the generation of its occupant.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Pid {
    pub(crate) index: Slot,
    pub(crate) generation: u32,
}

impl Pid {
    pub fn index(self) -> u32 {
        self.index.get()
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

/// Where a process may run, as `placement` reports it (derived from its allowed cores).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Affinity {
    /// Any core; the balancer may move it.
    #[default]
    Free,
    /// Only this core, for good.
    Bound(usize),
    /// Only these cores (more than one, not all): the balancer moves it only among them.
    Within(CoreMask),
}

impl Affinity {
    /// The affinity a set of allowed cores amounts to.
    pub fn of(allowed: CoreMask) -> Affinity {
        if allowed == CoreMask::ALL {
            Affinity::Free
        } else if allowed.len() == 1
            && let Some(core) = allowed.first()
        {
            Affinity::Bound(core)
        } else {
            Affinity::Within(allowed)
        }
    }
}

/// How to spawn a process.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SpawnOptions {
    pub priority: Priority,
    /// The most stack the process may grow to (rounded up to pages; at least one page, at most
    /// 8 MiB). It starts with one page.
    pub stack_bytes: usize,
    /// The cores it may ever run on (all by default). Cores in the set that are not online
    /// are ignored; a set with no core that schedules is refused (`SpawnError::NoAllowedCore`).
    pub allowed: CoreMask,
    /// The core to start on (it must be allowed and scheduling). When `None`: the core
    /// `placement=` picks (the spawning core by default) if allowed and scheduling, else the
    /// lowest allowed core that schedules.
    pub core: Option<usize>,
}

impl Default for SpawnOptions {
    fn default() -> Self {
        SpawnOptions {
            priority: Priority::Normal,
            stack_bytes: DEFAULT_STACK_BYTES,
            allowed: CoreMask::ALL,
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

    /// Binds the process to `core`: it starts there and never moves (the one-core case of
    /// [`Self::allowed_cores`]).
    pub fn bound_to(mut self, core: usize) -> Self {
        self.allowed = CoreMask::single(core);
        self.core = Some(core);
        self
    }

    /// Lets the process run only on the cores in `allowed`: it starts on one of them, and
    /// stealing and push rebalancing move it only among them.
    pub fn allowed_cores(mut self, allowed: CoreMask) -> Self {
        self.allowed = allowed;
        self
    }

    /// Starts the process on `core` (which its allowed cores must include).
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
    /// It was killed: by `kill` (which it cannot trap), or by an exit signal with this reason.
    /// Its links receive `Killed` too.
    Killed,
    /// Asked to stop by whoever manages it (a supervisor's shutdown): an exit signal reason
    /// for an orderly stop, not a crash.
    Shutdown,
    /// It panicked (a Rust `panic!`, a failed `expect`, an overflow check). The message is
    /// printed on the console and its stack is unwound, so what it owned is dropped
    /// (docs/scheduler.md, "How a process ends").
    Panic,
    /// (In a monitor's `Down` or a link's exit signal) the process did not exist when the
    /// monitor or link was set.
    NoProc,
}

/// A reference: a value unique on this machine for the whole run (`sched::make_ref`), as
/// Erlang's `make_ref()`. A monitor is named by one (`Down` carries it, `demonitor` takes it).
///
/// Unique without a shared counter: the top byte is the core that made it, the rest that core's
/// own count, so making one never contends with another core.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Ref(pub(crate) u64);

impl Ref {
    /// The reference's bits (for printing or hashing; not to be made into a `Ref` again).
    pub fn bits(self) -> u64 {
        self.0
    }
}

impl fmt::Debug for Ref {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "#Ref<{}.{}>", self.0 >> 56, self.0 & ((1 << 56) - 1))
    }
}

impl fmt::Display for Ref {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self, f)
    }
}

impl fmt::Display for ExitReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ExitReason::Normal => write!(f, "normal"),
            ExitReason::Exit(code) => write!(f, "exit({code})"),
            ExitReason::Fault { class, address } => {
                write!(f, "fault: {} at {address:#x}", class_name(u64::from(*class) << 26))
            }
            ExitReason::StackOverflow => write!(f, "stack overflow"),
            ExitReason::OutOfMemory => write!(f, "out of memory: no page to grow its stack"),
            ExitReason::Killed => write!(f, "killed"),
            ExitReason::Shutdown => write!(f, "shutdown"),
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
    /// A monitored process ended (see `monitor`); `reference` is the one `monitor` returned.
    Down { pid: Pid, reason: ExitReason, reference: Ref },
    /// A linked process ended, or one sent an exit signal (`send_exit`), and this process traps
    /// exits (`trap_exits(true)`): the signal arrives as this message instead of ending it.
    Exit { from: Pid, reason: ExitReason },
    /// Anything else, boxed.
    Boxed(Box<dyn Any + Send>),
    /// A small value with no destructor (`Copy` payloads, mostly), kept in the message itself
    /// so that sending it allocates nothing but the queue node: see [`Message::new`].
    Inline(InlineValue),
}

/// A value of at most [`INLINE_BYTES`] bytes, aligned to at most 8, with no drop glue, stored
/// by value with its type's id. No destructor means dropping the message without reading the
/// value leaks nothing, and the type id means it is only ever read back as its own type.
pub struct InlineValue {
    type_id: TypeId,
    bytes: [MaybeUninit<u64>; 2],
}

/// The largest value [`Message::new`] keeps inline.
pub const INLINE_BYTES: usize = 16;

impl InlineValue {
    const fn fits<T>() -> bool {
        size_of::<T>() <= INLINE_BYTES && align_of::<T>() <= align_of::<u64>() && !needs_drop::<T>()
    }
}

impl Message {
    /// A message carrying `value`: a `u64` as [`Message::Word`], a small value with no
    /// destructor (at most [`INLINE_BYTES`], as a `Copy` struct of a pid and a word) inline,
    /// anything else boxed. Read it back with [`Message::take`] or [`Message::get`].
    #[inline(always)]
    pub fn new<T: Send + 'static>(value: T) -> Message {
        if TypeId::of::<T>() == TypeId::of::<u64>() {
            // SAFETY: T is u64 (same type id), so this is a read of a u64 as itself; `value`
            // is forgotten so it is not dropped twice (a u64 has no drop anyway).
            let word = unsafe { core::mem::transmute_copy::<T, u64>(&value) };
            core::mem::forget(value);
            return Message::Word(word);
        }
        if InlineValue::fits::<T>() {
            let mut bytes = [MaybeUninit::<u64>::uninit(); 2];
            // SAFETY: `bytes` is 16 bytes aligned to 8, and `fits` says T is no larger and
            // needs no more alignment; the value is moved in once and read out at most once,
            // as T (checked by the type id), and needs no drop if never read.
            unsafe { bytes.as_mut_ptr().cast::<T>().write(value) };
            return Message::Inline(InlineValue { type_id: TypeId::of::<T>(), bytes });
        }
        Message::Boxed(Box::new(value))
    }

    /// Whether the message carries a `T` (as [`Message::new`] made it; a `Word` is a `u64`).
    pub fn is<T: 'static>(&self) -> bool {
        match self {
            Message::Word(_) => TypeId::of::<T>() == TypeId::of::<u64>(),
            Message::Inline(inline) => inline.type_id == TypeId::of::<T>(),
            Message::Boxed(boxed) => boxed.is::<T>(),
            Message::Down { .. } | Message::Exit { .. } => false,
        }
    }

    /// The `T` the message carries, by reference, or `None` if it carries something else.
    pub fn get<T: 'static>(&self) -> Option<&T> {
        match self {
            Message::Word(word) => (word as &dyn Any).downcast_ref::<T>(),
            Message::Inline(inline) if inline.type_id == TypeId::of::<T>() => {
                // SAFETY: the type id says the bytes hold a T, written by `new` (which checked
                // its size and alignment); the reference borrows the message.
                Some(unsafe { &*inline.bytes.as_ptr().cast::<T>() })
            }
            Message::Boxed(boxed) => boxed.downcast_ref::<T>(),
            _ => None,
        }
    }

    /// The `T` the message carries, or the message back if it carries something else.
    pub fn take<T: 'static>(self) -> Result<T, Message> {
        match self {
            Message::Word(word) if TypeId::of::<T>() == TypeId::of::<u64>() => {
                // SAFETY: T is u64 (same type id): a read of a u64 as itself.
                Ok(unsafe { core::mem::transmute_copy::<u64, T>(&word) })
            }
            Message::Inline(inline) if inline.type_id == TypeId::of::<T>() => {
                // SAFETY: as in `get`; the message is consumed, so the value is read once.
                Ok(unsafe { inline.bytes.as_ptr().cast::<T>().read() })
            }
            Message::Boxed(boxed) => boxed.downcast::<T>().map(|value| *value).map_err(Message::Boxed),
            other => Err(other),
        }
    }
}

const _: () = assert!(size_of::<Message>() <= 40, "a message fits a queue node's budget");

impl fmt::Debug for Message {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Message::Word(word) => write!(f, "Word({word})"),
            Message::Down { pid, reason, reference } => write!(f, "Down({pid}, {reason}, {reference})"),
            Message::Exit { from, reason } => write!(f, "Exit({from}, {reason})"),
            Message::Boxed(_) => write!(f, "Boxed(..)"),
            Message::Inline(_) => write!(f, "Inline(..)"),
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
    /// The allowed cores include no core that schedules (online and not taken offline).
    NoAllowedCore,
    /// The options name a core to start on that the allowed cores leave out.
    NotAllowed(usize),
    /// `max_processes` processes are alive (bootarg; at most [`MAX_PROCESSES`]).
    TableFull,
    /// The options name a core that is offline (`sched::take_offline`).
    CoreOffline(usize),
}

impl From<PlaceError> for SpawnError {
    fn from(error: PlaceError) -> Self {
        match error {
            PlaceError::NoSuchCore(core) => SpawnError::NoSuchCore(core),
            PlaceError::NoAllowedCore => SpawnError::NoAllowedCore,
            PlaceError::NotAllowed(core) => SpawnError::NotAllowed(core),
            PlaceError::CoreOffline(core) => SpawnError::CoreOffline(core),
        }
    }
}

impl fmt::Display for SpawnError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SpawnError::OutOfMemory(error) => write!(f, "spawn: {error}"),
            SpawnError::NoSuchCore(core) => write!(f, "spawn: no online core {core}"),
            SpawnError::NoAllowedCore => write!(f, "spawn: the allowed cores include no core that schedules"),
            SpawnError::NotAllowed(core) => write!(f, "spawn: core {core} is not among the allowed cores"),
            SpawnError::CoreOffline(core) => write!(f, "spawn: core {core} is offline"),
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
    /// No process is registered under the name (`send_named`).
    NotRegistered,
}

impl fmt::Display for SendError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SendError::NoProc(pid) => write!(f, "send: no process {pid}"),
            SendError::OutOfMemory(pid) => write!(f, "send: no memory to grow the mailbox of {pid}"),
            SendError::NotRegistered => write!(f, "send: no process is registered under that name"),
        }
    }
}
