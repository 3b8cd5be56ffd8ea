//! The signal queue: producers' one-word Treiber push, the consumer's private FIFO, the wait
//! hand-shake in the same word, and selective removal from a mark.
//!
//! One file per concern: `node` (the caller-allocated node), `list` (the consumer's FIFO and
//! the pointer work), `wait` (the block/wake hand-shake), `receive` (marks and selective
//! removal); this file holds the queue itself, the push, `pop` and the queue's opening and
//! closing.

mod list;
mod node;
mod receive;
mod wait;

use alloc::boxed::Box;
use core::cell::UnsafeCell;
use core::fmt;
use core::marker::PhantomData;
use core::ptr;

use self::list::List;
pub use self::list::NodeList;
pub use self::node::Node;
pub use self::receive::Mark;
pub use self::wait::{Cancel, Wait};
use crate::primitives::{CLOSED, EMPTY, HeadAtomics, WAITING, is_node};
use crate::shim::{AtomicUsize, Ordering};

/// What a successful push means for the pusher.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[must_use = "a Wake must be acted on, or the consumer sleeps with a signal queued"]
pub enum Pushed {
    /// Queued; the consumer is running, or already being woken by someone else.
    Queued,
    /// Queued, and this push found the consumer blocked: this pusher, and no other, must wake
    /// it. The queue itself orders nothing between the consumer's `prepare_wait` and this
    /// result; the kernel's hand-over of the process (its run queues) must.
    Wake,
}

/// A process's signal queue: any number of producers ([`push`](Self::push), safe), one
/// consumer (every `unsafe` method; see the contract below).
///
/// # The consumer contract
///
/// The consumer methods take `&self`, so the queue can sit in a process control block that
/// every core reaches by shared reference. Each is `unsafe` with one contract: **no two of
/// them run at the same time, and each happens after the previous one** (the kernel: only the
/// core currently running the process, or holding it while it runs nowhere, calls them, and
/// the scheduler's release/acquire hand-over of the process orders one core's calls before the
/// next core's). The consumer's list is plain memory guarded by nothing else.
#[repr(C)]
pub struct SignalQueue<T, A: HeadAtomics = crate::NativeAtomics> {
    /// EMPTY, WAITING, CLOSED or the newest pushed node (`primitives`). First (`repr(C)`): the
    /// exclusives take no offset, so the queue's own address is the word's, with no `ADD`.
    head: AtomicUsize,
    /// The consumer's FIFO, oldest first; touched only under the consumer contract.
    inner: UnsafeCell<Inner<T>>,
    _atomics: PhantomData<fn() -> A>,
}

struct Inner<T> {
    /// The FIFO, and the count of nodes removed from it (`List::removals`).
    list: List<T>,
}

// SAFETY: the queue owns its nodes as `Box<Node<T>>`s would; sending it sends the `T`s.
unsafe impl<T: Send, A: HeadAtomics> Send for SignalQueue<T, A> {}
// SAFETY: through `&SignalQueue` producers only move whole nodes in (`T: Send`), and the
// consumer methods, which move them out and lend `&T` to predicates on the consumer's thread,
// are `unsafe` with the contract that one thread at a time calls them, in happens-before order;
// so shared access needs exactly what `Mutex<T>: Sync` does.
unsafe impl<T: Send, A: HeadAtomics> Sync for SignalQueue<T, A> {}

impl<T, A: HeadAtomics> Default for SignalQueue<T, A> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T, A: HeadAtomics> SignalQueue<T, A> {
    /// An empty, open queue whose consumer is not waiting.
    #[cfg(not(loom))]
    pub const fn new() -> Self {
        SignalQueue {
            head: AtomicUsize::new(EMPTY),
            inner: UnsafeCell::new(Inner { list: List::new() }),
            _atomics: PhantomData,
        }
    }

    /// An empty, open queue whose consumer is not waiting (not `const` under loom, whose
    /// atomics are not).
    #[cfg(loom)]
    pub fn new() -> Self {
        SignalQueue {
            head: AtomicUsize::new(EMPTY),
            inner: UnsafeCell::new(Inner { list: List::new() }),
            _atomics: PhantomData,
        }
    }

    /// Queues `node`, or gives it back when the queue is closed. Lock-free: one read-modify-
    /// write of the head word, retried only when another push (or the consumer) changed the
    /// word meanwhile.
    #[inline]
    pub fn push(&self, node: Box<Node<T>>) -> Result<Pushed, Box<Node<T>>> {
        let node = Box::into_raw(node);
        // SAFETY: `node` came from `Box::into_raw` just above: live, and ours until the push
        // publishes it.
        let next = unsafe { &(*node).next };
        let old = A::push(&self.head, node.expose_provenance(), next);
        // One test for the common case (EMPTY or a node: `old - 1` wraps or is >= 2), then
        // the two tags.
        if old.wrapping_sub(WAITING) >= 2 {
            return Ok(Pushed::Queued);
        }
        match old {
            CLOSED => {
                // Outside a queue a link holds EMPTY (`push`'s precondition, for the next one).
                next.store(EMPTY, Ordering::Relaxed);
                // SAFETY: a refused push wrote nothing to the word: the node was never
                // published, is still ours, and goes back into the box it came from.
                Err(unsafe { Box::from_raw(node) })
            }
            // WAITING: this push claimed the wake.
            _ => Ok(Pushed::Wake),
        }
    }

    /// Whether the queue has been closed (a Relaxed look: a hint, not a guarantee that a push
    /// would succeed).
    pub fn is_closed(&self) -> bool {
        self.head.load(Ordering::Relaxed) == CLOSED
    }

    /// The consumer's state.
    ///
    /// # Safety
    ///
    /// The consumer contract (see the type); the reference must not outlive the calling
    /// consumer method.
    #[allow(clippy::mut_from_ref)]
    unsafe fn inner(&self) -> &mut Inner<T> {
        // SAFETY: the caller is the only consumer running (the contract), so no other
        // reference to `inner` exists.
        unsafe { &mut *self.inner.get() }
    }

    /// Moves everything the producers pushed onto the end of the consumer's list.
    ///
    /// # Safety
    ///
    /// The consumer contract.
    unsafe fn drain_outer(&self, inner: &mut Inner<T>) {
        let list = A::take(&self.head);
        if is_node(list) {
            // SAFETY: `take` replaced the word with EMPTY, with acquire: the list is ours alone
            // (producers only ever see the new word) and its pushes' stores are visible.
            unsafe { inner.list.append_reversed(list) };
        }
    }

    /// The oldest queued signal.
    ///
    /// # Safety
    ///
    /// The consumer contract.
    #[inline]
    pub unsafe fn pop(&self) -> Option<Box<Node<T>>> {
        // SAFETY: the consumer contract is ours to pass on.
        let inner = unsafe { self.inner() };
        if inner.list.first.is_null() {
            // SAFETY: as above.
            unsafe { self.drain_outer(inner) };
            if inner.list.first.is_null() {
                return None;
            }
        }
        // SAFETY: the consumer owns the list's nodes, and it is not empty.
        Some(unsafe { inner.list.unlink_after(ptr::null_mut()) })
    }

    /// How many signals are queued (everything pushed before the call, at least).
    ///
    /// # Safety
    ///
    /// The consumer contract.
    pub unsafe fn len(&self) -> usize {
        // SAFETY: the consumer contract is ours to pass on.
        let inner = unsafe { self.inner() };
        // SAFETY: as above.
        unsafe { self.drain_outer(inner) };
        inner.list.len as usize
    }

    /// Whether no signal is queued.
    ///
    /// # Safety
    ///
    /// The consumer contract.
    pub unsafe fn is_empty(&self) -> bool {
        // SAFETY: the consumer contract is ours to pass on.
        unsafe { self.inner() }.list.first.is_null() && !is_node(self.head.load(Ordering::Relaxed))
    }

    /// Opens a closed queue again, empty, for a new consumer (a process slot reused): the word
    /// goes from CLOSED to EMPTY. A queue that was never closed (new, empty) is left as it is.
    ///
    /// # Safety
    ///
    /// The consumer contract, and the queue is closed or new (no signal is queued, no producer
    /// can have pushed since the close: pushes onto CLOSED are refused).
    pub unsafe fn reopen(&self) {
        debug_assert!(
            matches!(self.head.load(Ordering::Relaxed), CLOSED | EMPTY),
            "reopen of a queue that is not closed"
        );
        // A plain store: a push onto CLOSED writes nothing, so nobody else writes the word until
        // it says EMPTY. ORDERING: Relaxed: whoever pushes next learns of the queue (its
        // process's pid) through the kernel's own publication, which orders this store first.
        self.head.store(EMPTY, Ordering::Relaxed);
        // SAFETY: the consumer contract is ours to pass on.
        debug_assert!(unsafe { self.inner() }.list.first.is_null(), "reopen of a queue with signals");
    }

    /// Closes the queue for good (its process ended): every later push is refused, and every
    /// signal still queued comes back, oldest first, for the caller to drop or deal with.
    /// Closing again returns nothing.
    ///
    /// # Safety
    ///
    /// The consumer contract.
    pub unsafe fn close(&self) -> NodeList<T> {
        // SAFETY: the consumer contract is ours to pass on.
        let inner = unsafe { self.inner() };
        let outer = A::close(&self.head);
        let removals = inner.list.removals.wrapping_add(1);
        let mut list = core::mem::replace(&mut inner.list, List { removals, ..List::new() });
        if is_node(outer) {
            // SAFETY: `close` replaced the word with CLOSED, with acquire: the list is ours.
            unsafe { list.append_reversed(outer) };
        }
        NodeList { list }
    }
}

impl<T, A: HeadAtomics> Drop for SignalQueue<T, A> {
    fn drop(&mut self) {
        // SAFETY: `&mut self`: no other consumer (or producer) can be running.
        drop(unsafe { self.close() });
    }
}

impl<T, A: HeadAtomics> fmt::Debug for SignalQueue<T, A> {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        let word = self.head.load(Ordering::Relaxed);
        let state = match word {
            EMPTY => "empty",
            WAITING => "waiting",
            CLOSED => "closed",
            _ => "pushed",
        };
        formatter.debug_struct("SignalQueue").field("head", &state).finish_non_exhaustive()
    }
}
