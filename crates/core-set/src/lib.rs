//! Sets of core ids: shared between cores (which cores sleep, the scheduler's `SLEEPERS`; which
//! cores have a ping pending for a receiver, `smp`'s `pings_pending`), and the cores a process
//! may run on ([`CoreMask`], kept in its control block in a [`CoreMaskCell`]).
//!
//! An [`AtomicCoreSet`] is an array of `AtomicU64` words, bit `core % 64` of word `core / 64`
//! standing for core `core`, so it holds any id below `64 * WORDS`. [`CoreSet`] is the one
//! sized for the kernel's [`MAX_CORES`]. Each operation touches one word atomically; a reading of
//! the whole set (a [`CoreBits`] snapshot) is word by word, so with more than one word it is not
//! one instant's state. Every user here treats the set as a hint backed by something else (the
//! tick bounds a sleep; each pending ping has its own bit, read and cleared in one swap), which
//! is why that suffices.
//!
//! Pure: no kernel dependencies, host-tested against a simple model.

#![cfg_attr(not(test), no_std)]
#![forbid(unsafe_code)]

use core::sync::atomic::{AtomicU64, Ordering};

pub use beamcore_limits::MAX_CORES;

/// Bits per word.
const WORD_BITS: usize = u64::BITS as usize;

/// Words a set of the kernel's cores needs.
pub const CORE_SET_WORDS: usize = MAX_CORES.div_ceil(WORD_BITS);

/// A set of the kernel's cores (ids below [`MAX_CORES`]).
pub type CoreSet = AtomicCoreSet<CORE_SET_WORDS>;

// Every core id fits, and no whole word is unused (checked at build time).
const _: () = assert!(CoreSet::CAPACITY >= MAX_CORES && CoreSet::CAPACITY < MAX_CORES + WORD_BITS);

/// A shared set of core ids below `64 * WORDS`.
///
/// Cache-line aligned: a set is written by every core that joins or leaves it, so it gets a line
/// of its own rather than bouncing a neighbour's.
#[repr(C, align(64))]
pub struct AtomicCoreSet<const WORDS: usize> {
    words: [AtomicU64; WORDS],
}

/// The word index and bit mask of `core`.
fn position(core: usize) -> (usize, u64) {
    (core / WORD_BITS, 1u64 << (core % WORD_BITS))
}

impl<const WORDS: usize> AtomicCoreSet<WORDS> {
    /// Ids a set can hold: `0..CAPACITY`.
    pub const CAPACITY: usize = WORDS * WORD_BITS;

    /// The empty set.
    pub const fn new() -> Self {
        AtomicCoreSet { words: [const { AtomicU64::new(0) }; WORDS] }
    }

    /// Adds `core`; `ordering` is that of the word's read-modify-write. Panics if `core` is not
    /// below [`Self::CAPACITY`].
    pub fn insert(&self, core: usize, ordering: Ordering) {
        let (word, bit) = position(core);
        self.words[word].fetch_or(bit, ordering);
    }

    /// Removes `core`; `ordering` is that of the word's read-modify-write.
    pub fn remove(&self, core: usize, ordering: Ordering) {
        let (word, bit) = position(core);
        self.words[word].fetch_and(!bit, ordering);
    }

    /// Whether `core` is in the set (a Relaxed reading).
    pub fn contains(&self, core: usize) -> bool {
        let (word, bit) = position(core);
        self.words.get(word).is_some_and(|w| w.load(Ordering::Relaxed) & bit != 0)
    }

    /// Whether no core is in the set (Relaxed readings, word by word).
    pub fn is_empty(&self) -> bool {
        self.words.iter().all(|w| w.load(Ordering::Relaxed) == 0)
    }

    /// The set as it reads now (Relaxed readings, word by word).
    pub fn load(&self) -> CoreBits<WORDS> {
        CoreBits { words: core::array::from_fn(|i| self.words[i].load(Ordering::Relaxed)) }
    }

    /// Empties the set and returns what it held: each word swapped with zero, with `ordering`.
    /// A core added concurrently is either in the result or stays in the set, never lost.
    pub fn take_all(&self, ordering: Ordering) -> CoreBits<WORDS> {
        CoreBits { words: core::array::from_fn(|i| self.words[i].swap(0, ordering)) }
    }
}

impl<const WORDS: usize> Default for AtomicCoreSet<WORDS> {
    fn default() -> Self {
        Self::new()
    }
}

/// A plain (not shared) set of core ids below `64 * WORDS`: a snapshot of an [`AtomicCoreSet`],
/// or the cores a process may run on ([`CoreMask`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CoreBits<const WORDS: usize> {
    words: [u64; WORDS],
}

/// The cores a process may run on: any set of the kernel's cores (ids below [`MAX_CORES`]).
/// `SpawnOptions::allowed_cores` takes one; `bound_to(core)` is the one-core mask.
///
/// # Examples
///
/// ```
/// use beamcore_core_set::CoreMask;
///
/// let mask = CoreMask::of(&[1, 3, 6]); // not contiguous: any set will do
/// assert!(mask.contains(3) && !mask.contains(2));
/// assert_eq!(mask.intersection(CoreMask::first_cores(4)), CoreMask::of(&[1, 3]));
/// ```
pub type CoreMask = CoreBits<CORE_SET_WORDS>;

impl<const WORDS: usize> CoreBits<WORDS> {
    /// The empty set.
    pub const EMPTY: Self = CoreBits { words: [0; WORDS] };
    /// Every id the set can hold.
    pub const ALL: Self = CoreBits { words: [u64::MAX; WORDS] };

    /// The set of the cores in `cores`. Panics on an id the set cannot hold (a caller's bug
    /// caught where it is made, not a mask that silently lacks a core).
    pub const fn of(cores: &[usize]) -> Self {
        let mut set = Self::EMPTY;
        let mut i = 0;
        while i < cores.len() {
            set = set.with(cores[i]);
            i += 1;
        }
        set
    }

    /// The set of one core.
    pub const fn single(core: usize) -> Self {
        Self::EMPTY.with(core)
    }

    /// Cores `0..count` (all of them when `count` is the capacity or more).
    pub const fn first_cores(count: usize) -> Self {
        let mut set = Self::EMPTY;
        let mut word = 0;
        while word < WORDS {
            let below = count.saturating_sub(word * WORD_BITS);
            set.words[word] = if below >= WORD_BITS { u64::MAX } else { (1u64 << below) - 1 };
            word += 1;
        }
        set
    }

    /// The first word of the set, as a bit mask (cores 0..64): the form a bootarg or a test
    /// writes a mask in.
    pub const fn from_low_word(bits: u64) -> Self {
        let mut set = Self::EMPTY;
        set.words[0] = bits;
        set
    }

    /// This set with `core` added. Panics if `core` is not below `64 * WORDS`.
    pub const fn with(mut self, core: usize) -> Self {
        assert!(core < WORDS * WORD_BITS, "core id beyond the set's capacity");
        self.words[core / WORD_BITS] |= 1u64 << (core % WORD_BITS);
        self
    }

    /// The cores in both sets.
    pub fn intersection(self, other: Self) -> Self {
        CoreBits { words: core::array::from_fn(|i| self.words[i] & other.words[i]) }
    }

    /// The lowest core in the set.
    pub fn first(&self) -> Option<usize> {
        self.iter().next()
    }

    /// Whether `core` is in the set.
    pub fn contains(&self, core: usize) -> bool {
        let (word, bit) = position(core);
        self.words.get(word).is_some_and(|w| w & bit != 0)
    }

    /// Whether the set is empty.
    pub fn is_empty(&self) -> bool {
        self.words.iter().all(|&w| w == 0)
    }

    /// How many cores are in the set.
    pub fn len(&self) -> usize {
        self.words.iter().map(|w| w.count_ones() as usize).sum()
    }

    /// The lowest core in the set other than `me`, if any.
    pub fn first_other_than(&self, me: usize) -> Option<usize> {
        self.iter().find(|&core| core != me)
    }

    /// The cores in the set, lowest first.
    pub fn iter(&self) -> impl Iterator<Item = usize> + '_ {
        self.words.iter().enumerate().flat_map(|(index, &word)| {
            let mut rest = word;
            core::iter::from_fn(move || {
                if rest == 0 {
                    return None;
                }
                let bit = rest.trailing_zeros() as usize;
                rest &= rest - 1;
                Some(index * WORD_BITS + bit)
            })
        })
    }
}

/// A [`CoreMask`] that one core writes and any core reads, word by word (Relaxed): a process's
/// allowed cores in its control block. Not cache-line aligned, unlike [`AtomicCoreSet`]: it is
/// written once per spawn and lives inside the control block, whose size is counted.
pub struct CoreMaskCell {
    words: [AtomicU64; CORE_SET_WORDS],
}

impl CoreMaskCell {
    /// Every core allowed.
    pub const fn all() -> Self {
        CoreMaskCell { words: [const { AtomicU64::new(u64::MAX) }; CORE_SET_WORDS] }
    }

    /// Replaces the mask. Relaxed: whoever reads it gets the process through a lock or a queue
    /// that orders this store before the reading.
    pub fn store(&self, mask: CoreMask) {
        for (word, bits) in self.words.iter().zip(mask.words) {
            word.store(bits, Ordering::Relaxed);
        }
    }

    /// The mask (Relaxed readings, see [`Self::store`]).
    pub fn load(&self) -> CoreMask {
        CoreBits { words: core::array::from_fn(|i| self.words[i].load(Ordering::Relaxed)) }
    }

    /// Whether `core` is in the mask (one Relaxed reading; false beyond the capacity).
    #[inline]
    pub fn contains(&self, core: usize) -> bool {
        let (word, bit) = position(core);
        self.words.get(word).is_some_and(|w| w.load(Ordering::Relaxed) & bit != 0)
    }
}

#[cfg(test)]
mod tests;
