//! The kernel's indices as types of their own: a process-table [`Slot`]. It is a plain integer
//! underneath, and before it had a name a function taking `(slot: u32, core: usize)` accepted
//! any other number in the slot's place without a word from the compiler.
//!
//! It lives here, at the bottom of the stack, because the lowest layers already speak of slots:
//! a process's first context carries its slot (`arch::context`) and its stack lies in the
//! slot's stretch of the process region (`beamcore_mm::stacks`). Defining it once here lets a
//! slot keep its type from the table that hands it out down to the stack it indexes, instead of
//! being unwrapped at the scheduler's edge and trusted below. The pure crates (mem-layout's
//! arithmetic, the deque's items) stay on raw integers: they are host-tested apart from the
//! kernel and take `get()`.
//!
//! `repr(transparent)`: the same size, alignment and calling convention as the integer inside,
//! so passing one, or taking one in an `extern "C"` function, costs nothing.

use core::fmt;

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
