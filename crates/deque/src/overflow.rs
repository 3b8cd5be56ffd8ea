//! `WorkQueue`: a core's deque plus a locked overflow queue, so a full deque never loses work.
//!
//! ```text
//!   owner push ──> deque (lock-free) ──full──> overflow (spin::Mutex<VecDeque>) ──┐
//!   owner pop / take_oldest <── deque; when it is empty, refill it from the overflow <──┘
//!   thief steal <── deque top (lock-free); when it is empty, overflow front (locked)
//! ```
//!
//! Invariant: every item in the overflow is newer than every item in the deque. Pushes keep it
//! by going to the overflow while the overflow is non-empty; the owner keeps it by refilling the
//! deque, oldest first, only when the deque is empty. So items leave the overflow in the order
//! they spilled, none of them waits behind a deque that keeps being refilled by new pushes, and
//! after a refill they are stealable without the lock again.
//!
//! The lock is taken only while items are spilled (or a thief finds the deque empty while the
//! overflow's length hint is non-zero), so the ordinary path stays lock-free. It is a spin lock:
//! the owner's core must not be interrupted by code that uses the same queue while holding it
//! (the scheduler runs with interrupts masked).

#![forbid(unsafe_code)]

use alloc::collections::VecDeque;
use core::fmt;

use super::chase_lev::{Stealer, Worker};
use super::outcome::{CapacityError, Full, Pop, Steal};
use super::portable::Portable;
use super::primitives::DequeAtomics;
use super::shim::{Arc, AtomicUsize, Mutex, Ordering};

/// Where a pushed item went.
#[must_use]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PushedTo {
    /// Into the lock-free deque.
    Deque,
    /// Into the overflow queue: the deque was full, or earlier items were still spilled.
    Overflow,
}

/// The spilled items and a lock-free hint of how many there are.
struct Overflow {
    /// `items.len()`, stored only while holding the lock and read Relaxed without it. The owner
    /// is the only one that makes it grow, so the owner's unlocked read is never below the true
    /// length (a zero read by the owner is exact); a thief's unlocked read is only a hint.
    len_hint: AtomicUsize,
    items: Mutex<VecDeque<u64>>,
}

impl Overflow {
    fn publish_len(&self, items: &VecDeque<u64>) {
        // Relaxed: written under the lock, which orders it with every other write; readers
        // outside the lock use it only to decide whether to take the lock.
        self.len_hint.store(items.len(), Ordering::Relaxed);
    }

    fn len(&self) -> usize {
        // Relaxed: a hint, see the field.
        self.len_hint.load(Ordering::Relaxed)
    }
}

/// A core's run queue of word-sized items: the owner's end of a [`Worker`] deque plus an
/// overflow queue. `Send`, not `Sync`, like the `Worker`.
pub struct WorkQueue<A: DequeAtomics = Portable> {
    deque: Worker<A>,
    /// The owner's own handle on the deque's top, for [`WorkQueue::take_oldest`].
    deque_top: Stealer<A>,
    overflow: Arc<Overflow>,
}

/// A thief's end of a [`WorkQueue`]: steals from the deque, then from the overflow.
pub struct WorkQueueStealer<A: DequeAtomics = Portable> {
    deque: Stealer<A>,
    overflow: Arc<Overflow>,
}

impl<A: DequeAtomics> WorkQueue<A> {
    /// A new empty queue whose lock-free part holds `deque_capacity` items (a power of two).
    pub fn new(deque_capacity: usize) -> Result<Self, CapacityError> {
        let deque = Worker::new(deque_capacity)?;
        Ok(WorkQueue {
            deque_top: deque.stealer(),
            deque,
            overflow: Arc::new(Overflow { len_hint: AtomicUsize::new(0), items: Mutex::new(VecDeque::new()) }),
        })
    }

    /// A thief's handle on this queue.
    pub fn stealer(&self) -> WorkQueueStealer<A> {
        WorkQueueStealer { deque: self.deque.stealer(), overflow: Arc::clone(&self.overflow) }
    }

    /// The capacity of the lock-free deque (the queue as a whole is unbounded).
    pub fn deque_capacity(&self) -> usize {
        self.deque.capacity()
    }

    /// Items in the queue, deque and overflow (exact when no thief is active).
    #[inline]
    pub fn len(&self) -> usize {
        self.deque.len() + self.overflow.len()
    }

    /// Whether the queue looked empty.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Items currently spilled to the overflow.
    pub fn overflow_len(&self) -> usize {
        self.overflow.len()
    }

    /// Pushes `item`; it is never lost and never refused. The usual case (nothing spilled, room
    /// in the deque) inlines into the owner's push; spilling is out of line.
    #[inline]
    pub fn push(&self, item: u64) -> PushedTo {
        if self.overflow.len() != 0 {
            return self.push_behind_spilled(item);
        }
        self.push_or_spill(item)
    }

    /// Pushes `item` into the lock-free deque if it can go there now (nothing spilled, room in
    /// the deque); otherwise does nothing and hands it back, for [`push`](Self::push). For a
    /// caller that must not make an out-of-line call on its fast path (the scheduler's hand-off
    /// from one process to the next, which then needs no register saves): no path of this
    /// function calls anything.
    #[inline(always)]
    pub fn try_push(&self, item: u64) -> Result<(), u64> {
        if self.overflow.len() != 0 {
            return Err(item);
        }
        self.deque.push(item).map_err(|Full(item)| item)
    }

    /// Into the deque, or the overflow when the deque is full.
    #[inline(always)]
    fn push_or_spill(&self, item: u64) -> PushedTo {
        match self.deque.push(item) {
            Ok(()) => PushedTo::Deque,
            Err(Full(item)) => self.spill(item),
        }
    }

    /// `push` while items are spilled: behind them, to keep the order (into the deque if the
    /// overflow emptied meanwhile).
    #[cold]
    #[inline(never)]
    fn push_behind_spilled(&self, item: u64) -> PushedTo {
        let mut items = self.overflow.items.lock();
        if !items.is_empty() {
            items.push_back(item);
            self.overflow.publish_len(&items);
            return PushedTo::Overflow;
        }
        drop(items);
        self.push_or_spill(item)
    }

    /// `push` into a full deque: the item goes to the overflow.
    #[cold]
    #[inline(never)]
    fn spill(&self, item: u64) -> PushedTo {
        let mut items = self.overflow.items.lock();
        items.push_back(item);
        self.overflow.publish_len(&items);
        PushedTo::Overflow
    }

    /// Pops an item: the deque's newest first; when the deque is empty, it is refilled with the
    /// oldest spilled items and popped again. [`Pop::Empty`] or [`Pop::LostRace`] only when the
    /// overflow is empty too; [`Pop::Retry`] (the `Aarch64Asm` store-exclusive kept failing)
    /// leaves the item in place for the next call.
    pub fn pop(&self) -> Pop {
        loop {
            let from_deque = self.deque.pop();
            match from_deque {
                Pop::Item(_) | Pop::Retry => return from_deque,
                Pop::Empty | Pop::LostRace => {
                    // The owner's read of the hint is never below the true length.
                    if self.overflow.len() == 0 {
                        return from_deque;
                    }
                    let mut items = self.overflow.items.lock();
                    if items.is_empty() {
                        return from_deque;
                    }
                    self.refill_deque(&mut items);
                }
            }
        }
    }

    /// Takes the *oldest* item, as a thief would but from the owner's core: the deque's top
    /// first; when the deque is empty, it is refilled with the oldest spilled items and taken
    /// from again. For a FIFO run queue (a LIFO `pop` would run a yielding process again at
    /// once). [`Steal::Retry`] when a thief won the race for the top item (trying again may
    /// succeed); [`Steal::Empty`] only when the overflow is empty too.
    #[inline]
    pub fn take_oldest(&self) -> Steal {
        match self.deque_top.steal() {
            Steal::Empty => self.take_oldest_spilled(),
            other => other,
        }
    }

    /// [`take_oldest`](Self::take_oldest) from the lock-free deque only: [`Steal::Empty`] when the
    /// deque is empty, though items may be spilled (then `take_oldest` refills it). No path of
    /// this function calls anything (see [`try_push`](Self::try_push)).
    #[inline(always)]
    pub fn take_oldest_in_deque(&self) -> Steal {
        self.deque_top.steal()
    }

    /// `take_oldest` when the deque is empty: refills it from the overflow, if anything is
    /// spilled, and takes again.
    #[cold]
    #[inline(never)]
    fn take_oldest_spilled(&self) -> Steal {
        loop {
            // The owner's read of the hint is never below the true length.
            if self.overflow.len() == 0 {
                return Steal::Empty;
            }
            let mut items = self.overflow.items.lock();
            if items.is_empty() {
                return Steal::Empty;
            }
            self.refill_deque(&mut items);
            drop(items);
            match self.deque_top.steal() {
                Steal::Empty => {}
                other => return other,
            }
        }
    }

    /// Moves the oldest spilled items into the (empty) deque, as many as fit, oldest first, so
    /// they are back in the lock-free part. Called with the overflow locked.
    fn refill_deque(&self, items: &mut VecDeque<u64>) {
        while let Some(item) = items.pop_front() {
            if let Err(Full(item)) = self.deque.push(item) {
                items.push_front(item);
                break;
            }
        }
        self.overflow.publish_len(items);
    }
}

impl<A: DequeAtomics> WorkQueueStealer<A> {
    /// Steals the oldest item of the deque; when the deque is empty, the oldest spilled item.
    /// [`Steal::Retry`] when the thief lost a race on the deque (the overflow is not tried then:
    /// the deque still had items).
    pub fn steal(&self) -> Steal {
        match self.deque.steal() {
            Steal::Empty => {}
            other => return other,
        }
        if self.overflow.len() == 0 {
            return Steal::Empty;
        }
        let mut items = self.overflow.items.lock();
        let taken = items.pop_front();
        self.overflow.publish_len(&items);
        taken.map_or(Steal::Empty, Steal::Success)
    }

    /// Items in the queue, as a hint.
    pub fn len(&self) -> usize {
        self.deque.len() + self.overflow.len()
    }

    /// Whether the queue looked empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl<A: DequeAtomics> Clone for WorkQueueStealer<A> {
    fn clone(&self) -> Self {
        WorkQueueStealer { deque: self.deque.clone(), overflow: Arc::clone(&self.overflow) }
    }
}

impl<A: DequeAtomics> fmt::Debug for WorkQueue<A> {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter
            .debug_struct("WorkQueue")
            .field("deque", &self.deque)
            .field("overflow_len", &self.overflow_len())
            .finish()
    }
}

impl<A: DequeAtomics> fmt::Debug for WorkQueueStealer<A> {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter
            .debug_struct("WorkQueueStealer")
            .field("deque", &self.deque)
            .field("overflow_len", &self.overflow.len())
            .finish()
    }
}
