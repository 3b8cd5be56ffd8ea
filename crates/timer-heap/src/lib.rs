//! One core's table of pending timers (receive timeouts, sleeps, `send_after`): the kernel keeps
//! one per core behind that core's lock, so every operation is short and none is O(n) except
//! amortised. A core may hold 100,000 pending timers, and insert and cancel are on the message
//! path (a server re-arms its idle timeout on every message), so both are measured in
//! instructions.
//!
//! The shape, as Go's runtime timers:
//!
//! * A 4-ary min-heap of small `Copy` entries ordered by (deadline, insertion sequence): shallower
//!   than a binary heap, and a node's four children share a cache line or two, so sifting
//!   touches fewer lines. The sequence makes equal deadlines fire in insertion order.
//! * A slab of slots holding each timer's deadline and value, with a free list. A [`Handle`]
//!   names a slot and the slot's generation, so cancel is a lookup and a compare; it never
//!   searches the heap.
//! * Lazy removal: cancel frees the slot and leaves the heap entry behind, stale. Stale entries
//!   are dropped when they reach the top (so the top is always live and [`TimerHeap::earliest`]
//!   is one load), and when they outnumber the live ones by more than `max(live, 64)` the heap is
//!   rebuilt without them in O(n). Each rebuild is paid for by the cancels that made its stale
//!   entries, so cancel stays O(1) amortised and the heap stays O(live) entries however often
//!   timers are cancelled and re-armed.
//!
//! Whether a heap entry is live is decided by its sequence number (the slot keeps the sequence of
//! its current timer), not by the generation: sequences are 64-bit and never repeat, so no
//! amount of slot reuse can make a stale entry look live. Generations only guard handles.

#![cfg_attr(not(test), no_std)]
#![forbid(unsafe_code)]

extern crate alloc;

use alloc::collections::TryReserveError;
use alloc::vec::Vec;

#[cfg(test)]
mod tests;

/// Children per heap node.
const ARITY: usize = 4;

/// Stale entries tolerated beyond the live count before a rebuild; the floor keeps a table with
/// few timers from rebuilding on nearly every cancel.
const STALE_FLOOR: usize = 64;

/// The end of the free list, and so never a slot index.
const NONE: u32 = u32::MAX;

/// Names one inserted timer; stays unique across reuse of its slot (a generation counter).
///
/// The generation is bumped each time the slot is freed, so a handle kept after its timer fired
/// or was cancelled is refused rather than cancelling whichever timer reuses the slot. It is 32
/// bits and wraps: a handle kept while its slot is reused 2^32 times could name the newest
/// timer there. That needs billions of insertions landing on one slot while the stale handle is
/// held, which the kernel accepts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Handle {
    index: u32,
    generation: u32,
}

impl Handle {
    /// The slot: with [`Handle::generation`], what to store where a handle must be plain words
    /// (a process's control block, a message).
    pub fn index(&self) -> u32 {
        self.index
    }

    /// How many times the slot had been freed when this timer was inserted.
    pub fn generation(&self) -> u32 {
        self.generation
    }

    /// A handle rebuilt from stored words. Any pair is safe: one that names no pending timer of
    /// the table it is given to is refused there.
    pub fn from_parts(index: u32, generation: u32) -> Handle {
        Handle { index, generation }
    }
}

/// A heap entry: small and `Copy`, so sifting moves 24 bytes and never touches the slab.
#[derive(Clone, Copy, Debug)]
struct Entry {
    deadline: u64,
    /// Insertion order: breaks deadline ties (FIFO) and tells a live entry from a stale one.
    sequence: u64,
    index: u32,
    generation: u32,
}

impl Entry {
    /// Whether `self` fires before `other`. Sequences are unique, so this is a total order.
    fn before(&self, other: &Entry) -> bool {
        (self.deadline, self.sequence) < (other.deadline, other.sequence)
    }
}

/// A slab slot: a pending timer, or a link in the free list.
struct Slot<T> {
    /// Bumped on every free, so handles to the slot's earlier timers no longer match.
    generation: u32,
    /// The next free slot (or [`NONE`]); meaningful only while `timer` is `None`.
    next_free: u32,
    /// The sequence of the slot's latest timer: its heap entry is live iff this matches and
    /// `timer` is `Some`.
    sequence: u64,
    /// (deadline, value) while pending.
    timer: Option<(u64, T)>,
}

/// One core's pending timers: insert, cancel by handle, and pop in deadline order.
pub struct TimerHeap<T> {
    heap: Vec<Entry>,
    slots: Vec<Slot<T>>,
    /// Head of the free list of slots ([`NONE`] when empty).
    free: u32,
    /// Pending timers; `heap.len() - live` entries are stale.
    live: usize,
    /// The next insertion's sequence. 64 bits never wrap in practice (2^64 insertions: 584
    /// years at one a nanosecond), so comparisons need not be wrap-aware.
    next_sequence: u64,
}

impl<T> TimerHeap<T> {
    /// An empty table; `const` so a per-core array of them can be a static. Allocates nothing
    /// until the first insert.
    pub const fn new() -> Self {
        TimerHeap { heap: Vec::new(), slots: Vec::new(), free: NONE, live: 0, next_sequence: 0 }
    }

    /// Inserts a timer due at `deadline` (any u64: a counter value). Fails, changing nothing,
    /// only when memory for it cannot be reserved: the kernel runs short of memory under load
    /// and must refuse the one request rather than abort the core. More than `u32::MAX` timers
    /// at once is reported the same way (a capacity overflow).
    ///
    /// O(log n): one sift up a 4-ary heap.
    pub fn insert(&mut self, deadline: u64, value: T) -> Result<Handle, TryReserveError> {
        // Reserve everything before changing anything, so a failure leaves the table as it was.
        self.heap.try_reserve(1)?;
        let reused = self.free != NONE;
        let index = if reused {
            self.free
        } else {
            match u32::try_from(self.slots.len()) {
                Ok(index) if index != NONE => {
                    self.slots.try_reserve(1)?;
                    index
                }
                _ => return Err(indices_exhausted()),
            }
        };
        let sequence = self.next_sequence;
        self.next_sequence = sequence.wrapping_add(1);
        let generation = if reused {
            let slot = &mut self.slots[index as usize];
            self.free = slot.next_free;
            slot.sequence = sequence;
            slot.timer = Some((deadline, value));
            slot.generation
        } else {
            self.slots.push(Slot { generation: 0, next_free: NONE, sequence, timer: Some((deadline, value)) });
            0
        };
        let at = self.heap.len();
        self.heap.push(Entry { deadline, sequence, index, generation });
        sift_up(&mut self.heap, at);
        self.live += 1;
        Ok(Handle { index, generation })
    }

    /// Removes a pending timer: `Some((deadline, value))` if it was still pending, `None` if it
    /// had fired, been cancelled, or the handle is stale, foreign or out of range. A timer racing
    /// its own expiry is normal for the kernel (the message arrived as the timeout fired), so a
    /// handle that no longer names anything is an answer, not an error.
    ///
    /// O(1) here: the heap entry is left behind, stale (see the crate's documentation). Its later
    /// removal is one O(log n) sift if it reaches the top, as when the earliest timer is
    /// cancelled, or an O(1) share of a rebuild.
    pub fn cancel(&mut self, handle: Handle) -> Option<(u64, T)> {
        let timer = self.take(handle.index, handle.generation)?;
        self.settle();
        Some(timer)
    }

    /// The deadline of a pending timer (`None` as for [`TimerHeap::cancel`]).
    pub fn deadline(&self, handle: Handle) -> Option<u64> {
        let slot = self.slots.get(handle.index as usize).filter(|slot| slot.generation == handle.generation)?;
        slot.timer.as_ref().map(|&(deadline, _)| deadline)
    }

    /// The earliest pending deadline, `None` when none is pending: what the core programs its
    /// timer interrupt with. O(1): the top of the heap is always live.
    pub fn earliest(&self) -> Option<u64> {
        self.heap.first().map(|entry| entry.deadline)
    }

    /// Removes and returns the earliest timer if its deadline is `<= now`: (handle, deadline,
    /// value). Timers with equal deadlines come out in insertion order. The caller loops until
    /// `None`, then programs the interrupt with [`TimerHeap::earliest`].
    pub fn pop_expired(&mut self, now: u64) -> Option<(Handle, u64, T)> {
        let top = *self.heap.first().filter(|top| top.deadline <= now)?;
        pop_root(&mut self.heap);
        // The top is live, so this always takes the timer; `?` only guards the invariant.
        let (deadline, value) = self.take(top.index, top.generation)?;
        self.settle();
        Some((Handle { index: top.index, generation: top.generation }, deadline, value))
    }

    /// Pending timers (live ones only).
    pub fn len(&self) -> usize {
        self.live
    }

    /// Whether no timer is pending.
    pub fn is_empty(&self) -> bool {
        self.live == 0
    }

    /// Removes every pending timer, earliest first (a core that goes away hands them over to
    /// another, which re-inserts them). Handles to them are refused afterwards, as after firing.
    /// The returned vector is allocated infallibly, sized for exactly the pending timers.
    pub fn drain_all(&mut self) -> Vec<(u64, T)> {
        let mut drained = Vec::with_capacity(self.live);
        while let Some((_, deadline, value)) = self.pop_expired(u64::MAX) {
            drained.push((deadline, value));
        }
        drained
    }

    /// Entries in the heap, stale ones included: for tests of the memory bound.
    #[doc(hidden)]
    pub fn heap_entries(&self) -> usize {
        self.heap.len()
    }

    /// Takes the timer out of slot `index` if it is pending with `generation`, and frees the slot.
    /// Its heap entry, wherever it is, becomes stale.
    fn take(&mut self, index: u32, generation: u32) -> Option<(u64, T)> {
        let slot = self.slots.get_mut(index as usize).filter(|slot| slot.generation == generation)?;
        let timer = slot.timer.take()?;
        slot.generation = slot.generation.wrapping_add(1);
        slot.next_free = self.free;
        self.free = index;
        self.live -= 1;
        Some(timer)
    }

    /// Restores the invariants after a timer left: the top is live, and stale entries number at
    /// most `max(live, STALE_FLOOR)`.
    fn settle(&mut self) {
        while let Some(top) = self.heap.first() {
            if is_live(&self.slots, top) {
                break;
            }
            pop_root(&mut self.heap);
        }
        if self.heap.len() - self.live > self.live.max(STALE_FLOOR) {
            let slots = &self.slots;
            self.heap.retain(|entry| is_live(slots, entry));
            heapify(&mut self.heap);
        }
    }
}

impl<T> Default for TimerHeap<T> {
    fn default() -> Self {
        Self::new()
    }
}

/// Whether `entry` is its slot's current, pending timer.
fn is_live<T>(slots: &[Slot<T>], entry: &Entry) -> bool {
    let slot = &slots[entry.index as usize];
    slot.sequence == entry.sequence && slot.timer.is_some()
}

/// The error for a table whose slot indices are used up: what a reservation no allocator could
/// satisfy reports (`TryReserveError` has no public constructor).
fn indices_exhausted() -> TryReserveError {
    Vec::<u64>::new().try_reserve(usize::MAX).expect_err("usize::MAX words overflow any capacity")
}

/// Removes the root of a non-empty heap.
fn pop_root(heap: &mut Vec<Entry>) {
    heap.swap_remove(0);
    if !heap.is_empty() {
        sift_down(heap, 0);
    }
}

/// Moves `heap[at]` up to its place. Moves a hole rather than swapping, one write per level.
fn sift_up(heap: &mut [Entry], mut at: usize) {
    let entry = heap[at];
    while at > 0 {
        let parent = (at - 1) / ARITY;
        if !entry.before(&heap[parent]) {
            break;
        }
        heap[at] = heap[parent];
        at = parent;
    }
    heap[at] = entry;
}

/// Moves `heap[at]` down to its place, below any child that fires earlier.
fn sift_down(heap: &mut [Entry], mut at: usize) {
    let entry = heap[at];
    loop {
        let first = at * ARITY + 1;
        if first >= heap.len() {
            break;
        }
        let end = (first + ARITY).min(heap.len());
        let mut least = first;
        for child in first + 1..end {
            if heap[child].before(&heap[least]) {
                least = child;
            }
        }
        if !heap[least].before(&entry) {
            break;
        }
        heap[at] = heap[least];
        at = least;
    }
    heap[at] = entry;
}

/// Makes any arrangement a heap in O(n): sifts down every parent, last first.
fn heapify(heap: &mut [Entry]) {
    if heap.len() > 1 {
        for at in (0..=(heap.len() - 2) / ARITY).rev() {
            sift_down(heap, at);
        }
    }
}
