//! A typed face on the deque for owned items: `Box<T>` goes in, the same `Box<T>` comes out.
//! Test-only (`cfg(test)`, lib.rs): the kernel queues process ids as plain words and nothing
//! outside this crate's tests used it; the unit and stress tests keep it because owned items
//! are the strictest check of the exactly-once guarantee (a box handed out twice is a double
//! free, one never handed out a leak, both caught by the drop-counting tests).
//!
//! The deque moves 64-bit words; this wrapper turns a box into its address on the way in
//! (`Box::into_raw`, exposing the pointer's provenance) and back on the way out. It relies on
//! the raw deque's guarantee that every pushed word is handed out exactly once (by `pop`,
//! `steal`, or back in `Full`), which the unit, property, stress and loom tests check.

use alloc::boxed::Box;
use core::fmt;
use core::marker::PhantomData;

use super::chase_lev::{Stealer, Worker};
use super::outcome::{CapacityError, Full, Pop, Steal};
use super::portable::Portable;
use super::primitives::DequeAtomics;

/// The owner's end of a deque of `Box<T>`. Dropping it drops every item still in the deque.
pub struct BoxWorker<T, A: DequeAtomics = Portable> {
    raw: Worker<A>,
    /// Owns the boxed items: `Send` only if `T` is.
    _items: PhantomData<Box<T>>,
}

/// A thief's end of a deque of `Box<T>`.
pub struct BoxStealer<T, A: DequeAtomics = Portable> {
    raw: Stealer<A>,
    /// Neither `Send` nor `Sync` by itself; the impls below restore both when `T: Send`.
    _items: PhantomData<*const T>,
}

// SAFETY: a `BoxStealer` gives its holder nothing but whole `Box<T>`s taken out of the deque,
// which move the `T` to the stealing thread; it never hands out `&T`. Moving it to another
// thread is therefore sound exactly when moving a `T` is, as for `Mutex<T>`.
unsafe impl<T: Send, A: DequeAtomics> Send for BoxStealer<T, A> {}
// SAFETY: sharing `&BoxStealer` lets several threads steal, each taking a distinct item by value
// (the deque hands each out once); again only `T: Send` is needed, as for `Mutex<T>: Sync`.
unsafe impl<T: Send, A: DequeAtomics> Sync for BoxStealer<T, A> {}

fn into_word<T>(item: Box<T>) -> u64 {
    Box::into_raw(item).expose_provenance() as u64
}

/// # Safety
///
/// `word` must come from [`into_word::<T>`] and must not have been turned back into a box yet.
unsafe fn from_word<T>(word: u64) -> Box<T> {
    // Addresses fit in `usize`: the word was made from one.
    let pointer = core::ptr::with_exposed_provenance_mut::<T>(word as usize);
    // SAFETY: the caller promises the word is the exposed address of a live `Box<T>`'s
    // allocation that nothing else owns any more, so rebuilding the box takes sole ownership.
    unsafe { Box::from_raw(pointer) }
}

impl<T, A: DequeAtomics> BoxWorker<T, A> {
    /// A new empty deque holding at most `capacity` boxes; `capacity` must be a power of two.
    pub fn new(capacity: usize) -> Result<Self, CapacityError> {
        Ok(BoxWorker { raw: Worker::new(capacity)?, _items: PhantomData })
    }

    /// A thief's handle on this deque.
    pub fn stealer(&self) -> BoxStealer<T, A> {
        BoxStealer { raw: self.raw.stealer(), _items: PhantomData }
    }

    /// The most items the deque holds at once.
    pub fn capacity(&self) -> usize {
        self.raw.capacity()
    }

    /// Items in the deque (exact when no thief is stealing at the same moment).
    pub fn len(&self) -> usize {
        self.raw.len()
    }

    /// Whether the deque looked empty.
    pub fn is_empty(&self) -> bool {
        self.raw.is_empty()
    }

    /// Pushes `item` as the newest, or hands it back when the deque is full.
    pub fn push(&self, item: Box<T>) -> Result<(), Full<Box<T>>> {
        self.raw.push(into_word(item)).map_err(|Full(word)| {
            // SAFETY: `word` was made from `item` just above, and a refused push returns it
            // without the deque keeping a copy anyone could take.
            Full(unsafe { from_word(word) })
        })
    }

    /// Pops the newest item.
    pub fn pop(&self) -> Pop<Box<T>> {
        self.raw.pop().map(|word| {
            // SAFETY: only `push` above puts words into this deque, each made by `into_word`
            // from a box, and the deque hands every word out exactly once: this is its one owner.
            unsafe { from_word(word) }
        })
    }
}

impl<T, A: DequeAtomics> BoxStealer<T, A> {
    /// Steals the oldest item.
    pub fn steal(&self) -> Steal<Box<T>> {
        self.raw.steal().map(|word| {
            // SAFETY: as in `BoxWorker::pop`: every word in the deque came from `into_word`, and
            // a successful steal is the only hand-out of this one.
            unsafe { from_word(word) }
        })
    }

    /// Items in the deque, as a hint.
    pub fn len(&self) -> usize {
        self.raw.len()
    }

    /// Whether the deque looked empty.
    pub fn is_empty(&self) -> bool {
        self.raw.is_empty()
    }
}

impl<T, A: DequeAtomics> Clone for BoxStealer<T, A> {
    fn clone(&self) -> Self {
        BoxStealer { raw: self.raw.clone(), _items: PhantomData }
    }
}

impl<T, A: DequeAtomics> Drop for BoxWorker<T, A> {
    /// Drops every item left. Only the worker pushes, so once its `pop` says the deque is empty
    /// it stays empty: stealers that outlive the worker find nothing, and nothing leaks.
    fn drop(&mut self) {
        loop {
            match self.pop() {
                Pop::Item(item) => drop(item),
                Pop::Empty => break,
                // A thief took the last one (the next pop says Empty), or the store-exclusive
                // failed and the item is still there: look again. Not bounded on purpose: giving
                // up would leak the items left, and each `Retry` already stands for
                // `STORE_EXCLUSIVE_ATTEMPTS` lost reservations in a row: two in a row would take a
                // broken machine (the test-only injection fails every attempt of one call in 16
                // per core, never two calls in a row).
                Pop::LostRace | Pop::Retry => {}
            }
        }
    }
}

impl<T, A: DequeAtomics> fmt::Debug for BoxWorker<T, A> {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.debug_struct("BoxWorker").field("raw", &self.raw).finish()
    }
}

impl<T, A: DequeAtomics> fmt::Debug for BoxStealer<T, A> {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.debug_struct("BoxStealer").field("raw", &self.raw).finish()
    }
}
