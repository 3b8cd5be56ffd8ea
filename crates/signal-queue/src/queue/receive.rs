//! Selective receive: [`Mark`], a resume point in the consumer's list, and the removals that
//! scan from one. Apart from the plain `pop` because the mark's soundness argument (any
//! removal makes it the start) is the one subtle part of the consumer's side.

use alloc::boxed::Box;
use core::fmt;
use core::ptr;

use super::list::node_at;
use super::{Node, SignalQueue};
use crate::primitives::HeadAtomics;

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

impl<T, A: HeadAtomics> SignalQueue<T, A> {
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
}
