//! The kernel's two kinds of index, as types of their own: a process-table [`Slot`] and a
//! [`CoreId`]. Both are plain integers underneath, and before they had names a function taking
//! `(slot: u32, from: usize, to: usize)` accepted a core id in the slot's place, or a count
//! where a core was meant, without a word from the compiler.
//!
//! They live here, at the bottom of the stack, because the lowest layers already speak of them:
//! a process's first context carries its slot (`arch::context`) and its stack lies in the
//! slot's stretch of the process region (`beamcore_mm::stacks`); every layer has core ids, the
//! first of them `arch::cpu::core_id`. Defining them once here lets a slot keep its type from
//! the table that hands it out down to the stack it indexes, instead of being unwrapped at the
//! scheduler's edge and trusted below. The pure crates (mem-layout's arithmetic, the deque's
//! items, the balancing policy's core numbers) stay on raw integers: they are host-tested apart
//! from the kernel and take `get()` or `index()`. So does the program API (`cores_online()`,
//! `SpawnOptions::on_core`), which counts cores as programs do.
//!
//! Both are `repr(transparent)`: the same size, alignment and calling convention as the integer
//! inside, so passing one, or taking one in an `extern "C"` function, costs nothing.

use core::fmt;
use core::sync::atomic::{AtomicUsize, Ordering};

/// The index of a process-table slot: which control block, and which stretch of the process
/// region holds its stack. Not a pid: a slot is reused, and only a pid's generation tells its
/// occupants apart.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
#[repr(transparent)]
pub struct Slot(u32);

impl Slot {
    /// The slot with this index.
    #[inline(always)]
    pub const fn new(index: u32) -> Slot {
        Slot(index)
    }

    /// The index as stored in packed words and pids.
    #[inline(always)]
    pub const fn get(self) -> u32 {
        self.0
    }

    /// The index, for indexing a table.
    #[inline(always)]
    pub const fn index(self) -> usize {
        self.0 as usize
    }
}

impl fmt::Display for Slot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0, f)
    }
}

/// The logical id of a core: 0 for the boot core, dense up to `smp::cores_online()`, below
/// `layout::MAX_CORES`. What indexes the per-core tables.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
#[repr(transparent)]
pub struct CoreId(usize);

impl CoreId {
    /// The boot core.
    pub const BOOT: CoreId = CoreId(0);

    /// The core with this id.
    #[inline(always)]
    pub const fn new(id: usize) -> CoreId {
        CoreId(id)
    }

    /// The running core ([`crate::arch::cpu::core_id`]).
    #[inline(always)]
    pub fn this() -> CoreId {
        CoreId(crate::arch::cpu::core_id())
    }

    /// The id, for indexing a per-core table.
    #[inline(always)]
    pub const fn index(self) -> usize {
        self.0
    }
}

impl fmt::Display for CoreId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0, f)
    }
}

/// A [`CoreId`] in an atomic word: which core holds a process, read by the others. The one
/// place such a word and its id convert.
#[repr(transparent)]
pub struct AtomicCoreId(AtomicUsize);

impl AtomicCoreId {
    pub const fn new(core: CoreId) -> AtomicCoreId {
        AtomicCoreId(AtomicUsize::new(core.0))
    }

    #[inline(always)]
    pub fn load(&self, order: Ordering) -> CoreId {
        CoreId(self.0.load(order))
    }

    #[inline(always)]
    pub fn store(&self, core: CoreId, order: Ordering) {
        self.0.store(core.0, order)
    }

    #[inline(always)]
    pub fn swap(&self, core: CoreId, order: Ordering) -> CoreId {
        CoreId(self.0.swap(core.0, order))
    }
}
