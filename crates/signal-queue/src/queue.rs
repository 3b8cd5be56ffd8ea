//! The signal queue: producers' one-word Treiber push, the consumer's private FIFO, the wait
//! hand-shake in the same word, and selective removal from a mark.

use alloc::boxed::Box;
use core::cell::UnsafeCell;
use core::fmt;
use core::marker::PhantomData;
use core::ptr;

use super::primitives::{CLOSED, EMPTY, HeadAtomics, WAITING, is_node};
use super::shim::{AtomicUsize, Ordering};

/// One queued signal. The caller allocates it (the kernel from its constant-time size-class
/// heap) so that a push never allocates and cannot fail for want of memory; the queue links
/// nodes through `next` and hands back the same box.
///
/// `repr(C)` with `next` first: the hand-written push stores the link at the node's own
/// address, with no offset to compute.
#[repr(C)]
pub struct Node<T> {
    /// The link: the node pushed before this one while on the producers' list, the next older
    /// one on the consumer's list, EMPTY outside any queue (so a push onto an empty queue need
    /// not write it). Atomic (Relaxed accesses only, plain LDR/STR) so that loom sees every
    /// read and write of it; what orders them is the head word.
    next: AtomicUsize,
    /// The signal itself.
    pub value: T,
}

// The tags 1 and 2 in the head word must never be node addresses.
const _: () = assert!(align_of::<AtomicUsize>() >= 4);

impl<T> Node<T> {
    /// A node not yet in any queue.
    #[inline]
    pub fn new(value: T) -> Self {
        Node { next: AtomicUsize::new(EMPTY), value }
    }

    /// A boxed node, ready to push.
    #[inline]
    pub fn boxed(value: T) -> Box<Self> {
        Box::new(Node::new(value))
    }

    /// The signal, out of its node (freeing the node).
    #[inline]
    #[allow(clippy::boxed_local, reason = "takes the box the queue hands back, and frees it")]
    pub fn into_value(self: Box<Self>) -> T {
        self.value
    }
}

impl<T: fmt::Debug> fmt::Debug for Node<T> {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.debug_struct("Node").field("value", &self.value).finish_non_exhaustive()
    }
}

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

/// What [`SignalQueue::prepare_wait`] found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[must_use]
pub enum Wait {
    /// The word now says WAITING: the consumer may block; the next push will claim the wake.
    Blocked,
    /// A signal is queued: do not block, receive it.
    NotEmpty,
    /// The queue is closed: nothing will ever arrive.
    Closed,
}

/// What [`SignalQueue::cancel_wait`] found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[must_use]
pub enum Cancel {
    /// No wake-up is on its way (the word said WAITING and is EMPTY again).
    Cancelled,
    /// A producer already pushed onto WAITING and got [`Pushed::Wake`] (its signal is queued),
    /// or a waker claimed the wait with [`SignalQueue::claim_wake`]: a wake-up is on its way
    /// (or done). The kernel must absorb that wake-up.
    WakeClaimed,
}

/// A position in the consumer's list: selective receive resumes its scan after it, skipping
/// signals a previous scan already rejected.
///
/// A mark is the address of the last node scanned plus the count of removals the queue had
/// made when it was taken. Nodes are only ever appended behind it, so it stays exact until the
/// consumer removes a node; any removal (pop, a match, `remove_first`, `close`) might have
/// removed and freed that very node, so the queue then treats the mark as the start. That is
/// always sound for a receive: scanning from the start is what an unoptimised receive does, the
/// mark only saves work. It needs no per-node sequence number and no pointer fix-up on removal.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Mark {
    /// Address of the last node before the resume point; 0: the start.
    after: usize,
    /// The queue's removal count when the mark was taken (wrapping: a mark kept unused across
    /// 2^32 removals by its own consumer would be taken for a fresh one, so a consumer must not
    /// keep one that long).
    removals: u32,
}

impl Mark {
    /// The start of the queue: always valid.
    pub const START: Mark = Mark { after: 0, removals: 0 };

    /// Whether this mark is the start (also what a stale mark is treated as).
    pub fn is_start(&self) -> bool {
        self.after == 0
    }
}

impl fmt::Debug for Mark {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_start() {
            formatter.write_str("Mark(start)")
        } else {
            write!(formatter, "Mark(after {:#x}, removals {})", self.after, self.removals)
        }
    }
}

/// A FIFO of owned nodes linked through `next`. Holds raw pointers, so every method is
/// `unsafe`: the caller must own every node in it exclusively.
struct List<T> {
    first: *mut Node<T>,
    last: *mut Node<T>,
    /// 32 bits, as `removals`, so that the queue fits a process control block's budget: a list
    /// of 2^32 nodes of at least 16 bytes would not fit in a 64 GiB address space anyway.
    len: u32,
    /// Nodes unlinked so far, wrapping (the consumer's: a mark taken at another count may
    /// name a freed node). Here rather than beside the list, where it would cost 8 bytes.
    removals: u32,
}

fn node_at<T>(word: usize) -> *mut Node<T> {
    ptr::with_exposed_provenance_mut(word)
}

impl<T> List<T> {
    const fn new() -> Self {
        List { first: ptr::null_mut(), last: ptr::null_mut(), len: 0, removals: 0 }
    }

    /// Appends a producers' list (newest first, ending in a 0 link), oldest first.
    ///
    /// # Safety
    ///
    /// `newest` must be the head of a list of nodes pushed by `SignalQueue::push` and now owned
    /// by the caller alone (taken from the word by an acquire `take` or `close`).
    unsafe fn append_reversed(&mut self, newest: usize) {
        let batch_last = node_at::<T>(newest);
        let mut reversed: *mut Node<T> = ptr::null_mut();
        let mut node = batch_last;
        let mut count: u32 = 0;
        while !node.is_null() {
            // SAFETY: `node` is in the caller's list (the first from `newest`, then each link),
            // a live node the caller owns; the acquire that handed it over ordered its push's
            // stores before this read.
            let node_ref = unsafe { &*node };
            let older = node_ref.next.load(Ordering::Relaxed);
            node_ref.next.store(reversed.expose_provenance(), Ordering::Relaxed);
            reversed = node;
            node = node_at(older);
            count += 1;
        }
        if reversed.is_null() {
            return;
        }
        if self.last.is_null() {
            self.first = reversed;
        } else {
            // SAFETY: `last` is a node of this list, owned by the caller.
            unsafe { &*self.last }.next.store(reversed.expose_provenance(), Ordering::Relaxed);
        }
        self.last = batch_last;
        self.len += count;
    }

    /// Unlinks the node after `previous` (the first node when `previous` is null).
    ///
    /// # Safety
    ///
    /// The caller owns the list's nodes; `previous` is null or a node of this list that has a
    /// successor.
    unsafe fn unlink_after(&mut self, previous: *mut Node<T>) -> Box<Node<T>> {
        let node = if previous.is_null() {
            self.first
        } else {
            // SAFETY: `previous` is a live node of this list (the caller's contract).
            node_at(unsafe { &*previous }.next.load(Ordering::Relaxed))
        };
        // SAFETY: `node` is the first node or `previous`'s successor, so a live node of this
        // list; unlinked below, it is owned by nothing else, and it came from `Box::into_raw`
        // in `push`, so it is rebuilt into that box once.
        let node = unsafe { Box::from_raw(node) };
        let following = node.next.load(Ordering::Relaxed);
        if previous.is_null() {
            self.first = node_at(following);
        } else {
            // SAFETY: as above.
            unsafe { &*previous }.next.store(following, Ordering::Relaxed);
        }
        if following == EMPTY {
            self.last = previous;
        }
        self.len -= 1;
        self.removals = self.removals.wrapping_add(1);
        node.next.store(EMPTY, Ordering::Relaxed);
        node
    }

    /// Finds the first node after `start` (from the first when null) whose value matches;
    /// returns its predecessor (null: the first node), or `Err(last node scanned)`.
    ///
    /// # Safety
    ///
    /// The caller owns the list's nodes; `start` is null or a node of this list.
    unsafe fn find_after(
        &self,
        start: *mut Node<T>,
        matches: &mut impl FnMut(&T) -> bool,
    ) -> Result<*mut Node<T>, *mut Node<T>> {
        let mut previous = start;
        let mut node =
            // SAFETY: `start` is a live node of this list when not null.
            if start.is_null() { self.first } else { node_at(unsafe { &*start }.next.load(Ordering::Relaxed)) };
        while !node.is_null() {
            // SAFETY: `node` is reached from the list's first node or a member's link: a live
            // node of this list.
            let node_ref = unsafe { &*node };
            if matches(&node_ref.value) {
                return Ok(previous);
            }
            previous = node;
            node = node_at(node_ref.next.load(Ordering::Relaxed));
        }
        Err(previous)
    }
}

/// Nodes handed back by [`SignalQueue::close`], oldest first. Dropping it drops the rest.
pub struct NodeList<T> {
    list: List<T>,
}

impl<T> NodeList<T> {
    /// How many nodes are left.
    pub fn len(&self) -> usize {
        self.list.len as usize
    }

    /// Whether none are left.
    pub fn is_empty(&self) -> bool {
        self.list.len == 0
    }
}

impl<T> Iterator for NodeList<T> {
    type Item = Box<Node<T>>;

    fn next(&mut self) -> Option<Box<Node<T>>> {
        if self.list.first.is_null() {
            return None;
        }
        // SAFETY: a `NodeList` owns its nodes (moved out of a closed queue), and it is not
        // empty.
        Some(unsafe { self.list.unlink_after(ptr::null_mut()) })
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.list.len as usize, Some(self.list.len as usize))
    }
}

impl<T> ExactSizeIterator for NodeList<T> {}

impl<T> Drop for NodeList<T> {
    fn drop(&mut self) {
        self.for_each(drop);
    }
}

// SAFETY: a `NodeList` owns its nodes as `Box`es would; sending it sends the `T`s.
unsafe impl<T: Send> Send for NodeList<T> {}
// SAFETY: `&NodeList` gives access to nothing but its length.
unsafe impl<T: Sync> Sync for NodeList<T> {}

impl<T> fmt::Debug for NodeList<T> {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.debug_struct("NodeList").field("len", &self.list.len).finish()
    }
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

    /// Before blocking on an empty queue: sets the word to WAITING unless something is queued
    /// or the queue is closed. After [`Wait::Blocked`] the consumer may sleep: the first push
    /// from now on returns [`Pushed::Wake`] to exactly one producer. A producer racing this
    /// call either lands before it (then `NotEmpty`) or after it (then it claims the wake):
    /// both are read-modify-writes of one word, so there is no gap in which a push goes
    /// unseen.
    ///
    /// # Safety
    ///
    /// The consumer contract.
    pub unsafe fn prepare_wait(&self) -> Wait {
        // SAFETY: the consumer contract is ours to pass on.
        if !unsafe { self.inner() }.list.first.is_null() {
            return Wait::NotEmpty;
        }
        match A::compare_exchange(&self.head, EMPTY, WAITING) {
            // Already WAITING: a repeated call; still no wake claimed.
            Ok(()) | Err(WAITING) => Wait::Blocked,
            Err(CLOSED) => Wait::Closed,
            Err(_) => Wait::NotEmpty,
        }
    }

    /// Before blocking for a signal newer than every one queued now (a selective receive that
    /// found no match, or a sleep): as [`prepare_wait`](Self::prepare_wait), but signals in the
    /// consumer's list do not count, only the producers' word, because the consumer has looked
    /// at all of them already. `NotEmpty`: a signal came in that it has not looked at.
    ///
    /// # Safety
    ///
    /// The consumer contract.
    pub unsafe fn prepare_wait_for_more(&self) -> Wait {
        match A::compare_exchange(&self.head, EMPTY, WAITING) {
            Ok(()) | Err(WAITING) => Wait::Blocked,
            Err(CLOSED) => Wait::Closed,
            Err(_) => Wait::NotEmpty,
        }
    }

    /// Gives up a wait (a timeout, or any reason to run without a signal): WAITING back to
    /// EMPTY. If a producer or a [`claim_wake`](Self::claim_wake) got there first, the wake-up
    /// is already claimed and cannot be taken back: [`Cancel::WakeClaimed`] tells the kernel to
    /// expect it (a producer's signal is queued: a `pop` finds it).
    ///
    /// # Safety
    ///
    /// The consumer contract, and the consumer's last call on the word was a
    /// [`prepare_wait`](Self::prepare_wait) that returned [`Wait::Blocked`]: only then does
    /// EMPTY mean that a claim took the wait (rather than that there was none).
    pub unsafe fn cancel_wait(&self) -> Cancel {
        match A::compare_exchange(&self.head, WAITING, EMPTY) {
            Ok(()) => Cancel::Cancelled,
            // CLOSED: nothing will ever wake it (only the consumer closes, so not while it
            // waits; kept for robustness).
            Err(CLOSED) => Cancel::Cancelled,
            // A node: a push claimed it. EMPTY: a `claim_wake` did (after `prepare_wait` only a
            // claim writes EMPTY; the consumer's own `take` is not running).
            Err(_) => Cancel::WakeClaimed,
        }
    }

    /// Claims a wake-up for someone who is not a producer (a timeout, a kill, an exit signal):
    /// WAITING back to EMPTY, as [`cancel_wait`](Self::cancel_wait) does, but callable by
    /// anyone, since it touches only the head word. True: the word said WAITING and this call,
    /// and no push or other claim, took the consumer's wake-up; the caller must wake it (a
    /// `cancel_wait` after it says [`Cancel::WakeClaimed`]). False: the consumer was not
    /// blocked, or a push (or another claim, or the consumer's own `cancel_wait`) got there
    /// first. Every wake-up is claimed by exactly one read-modify-write
    /// of the word: a push that reads WAITING, this, or `cancel_wait`.
    ///
    /// No ordering of its own (what the claimer must see of the consumer is the kernel's to
    /// order, as for [`Pushed::Wake`]).
    pub fn claim_wake(&self) -> bool {
        A::compare_exchange(&self.head, WAITING, EMPTY).is_ok()
    }

    /// Whether the consumer is blocked and nobody has claimed its wake-up yet (a Relaxed look:
    /// a report, not a guarantee).
    pub fn is_waiting(&self) -> bool {
        self.head.load(Ordering::Relaxed) == WAITING
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

    /// The position after every signal queued now, for a later
    /// [`take_first_matching`](Self::take_first_matching) to start from.
    ///
    /// # Safety
    ///
    /// The consumer contract.
    pub unsafe fn mark(&self) -> Mark {
        // SAFETY: the consumer contract is ours to pass on.
        let inner = unsafe { self.inner() };
        // SAFETY: as above.
        unsafe { self.drain_outer(inner) };
        Mark { after: inner.list.last.expose_provenance(), removals: inner.list.removals }
    }

    /// Removes the oldest signal after `from` whose value satisfies `matches` (a selective
    /// receive). Signals pushed before the call are all seen. `Err` carries the mark after
    /// the last signal scanned, to resume from once more have arrived. A mark made stale by a
    /// removal counts as [`Mark::START`].
    ///
    /// `matches` runs on the consumer's thread with a shared reference; it must not call this
    /// queue's consumer methods (it may push).
    ///
    /// # Safety
    ///
    /// The consumer contract, and `from` is [`Mark::START`] or a mark made by this queue (a
    /// mark names a node by address: another queue's would be followed into that queue).
    pub unsafe fn take_first_matching(
        &self,
        from: Mark,
        mut matches: impl FnMut(&T) -> bool,
    ) -> Result<Box<Node<T>>, Mark> {
        // SAFETY: the consumer contract is ours to pass on.
        let inner = unsafe { self.inner() };
        // SAFETY: as above.
        unsafe { self.drain_outer(inner) };
        let start = if from.removals == inner.list.removals { node_at(from.after) } else { ptr::null_mut() };
        // SAFETY: the consumer owns the list; `start` is null or the mark's node, which no
        // removal since the mark was taken can have freed (the count is unchanged), so it is
        // still in the list.
        match unsafe { inner.list.find_after(start, &mut matches) } {
            Ok(previous) => {
                // SAFETY: `previous` is null or a node of the list whose successor matched.
                Ok(unsafe { inner.list.unlink_after(previous) })
            }
            Err(last) => Err(Mark { after: last.expose_provenance(), removals: inner.list.removals }),
        }
    }

    /// [`take_first_matching`](Self::take_first_matching) with the mark as a cursor: it moves
    /// past every signal scanned, and after a match it names the matched signal's predecessor,
    /// which the removal leaves in place, so the next scan from it (for a later signal of the
    /// same exchange, say) is still exact instead of starting over.
    ///
    /// # Safety
    ///
    /// As for `take_first_matching`.
    pub unsafe fn take_matching_from(
        &self,
        mark: &mut Mark,
        mut matches: impl FnMut(&T) -> bool,
    ) -> Option<Box<Node<T>>> {
        // SAFETY: the consumer contract is ours to pass on.
        let inner = unsafe { self.inner() };
        // SAFETY: as above.
        unsafe { self.drain_outer(inner) };
        let start = if mark.removals == inner.list.removals { node_at(mark.after) } else { ptr::null_mut() };
        // SAFETY: as in `take_first_matching`.
        match unsafe { inner.list.find_after(start, &mut matches) } {
            Ok(previous) => {
                // SAFETY: `previous` is null or a node of the list whose successor matched.
                let node = unsafe { inner.list.unlink_after(previous) };
                // `previous` stays in the list (only its successor went): exact at the new count.
                *mark = Mark { after: previous.expose_provenance(), removals: inner.list.removals };
                Some(node)
            }
            Err(last) => {
                *mark = Mark { after: last.expose_provenance(), removals: inner.list.removals };
                None
            }
        }
    }

    /// Removes the oldest queued signal satisfying `matches` (flushing a monitor's Down, say).
    ///
    /// # Safety
    ///
    /// The consumer contract; `matches` as for `take_first_matching`.
    pub unsafe fn remove_first(&self, matches: impl FnMut(&T) -> bool) -> Option<Box<Node<T>>> {
        // SAFETY: the consumer contract is ours to pass on.
        unsafe { self.take_first_matching(Mark::START, matches) }.ok()
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
