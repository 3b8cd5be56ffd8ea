//! Single-threaded behaviour: FIFO order, the word's states, close, marks and selective removal.

use std::boxed::Box;
use std::rc::Rc;
use std::vec::Vec;

use super::Consumer;
use crate::{Cancel, Mark, Node, Portable, Pushed, SignalQueue, Wait};

type Queue = SignalQueue<u32, Portable>;

fn pushed(queue: &Queue, value: u32) -> Pushed {
    queue.push(Node::boxed(value)).expect("open")
}

fn push(queue: &Queue, value: u32) {
    let _ = pushed(queue, value);
}

/// The consumer of a unit test's queue: the test is single-threaded.
fn consumer<T>(queue: &SignalQueue<T, Portable>) -> Consumer<'_, T, Portable> {
    // SAFETY: each unit test runs on one thread, which is thus the only consumer.
    #[allow(unsafe_code)]
    unsafe {
        Consumer::new(queue)
    }
}

fn pop(queue: &Queue) -> Option<u32> {
    consumer(queue).pop().map(Node::into_value)
}

fn drain(queue: &Queue) -> Vec<u32> {
    core::iter::from_fn(|| pop(queue)).collect()
}

#[test]
fn pops_in_push_order_across_takes() {
    let queue = Queue::new();
    assert_eq!(pop(&queue), None);
    for value in 0..3 {
        assert_eq!(pushed(&queue, value), Pushed::Queued);
    }
    assert_eq!(pop(&queue), Some(0));
    // Pushed while the consumer's list still holds 1 and 2: they come after.
    push(&queue, 3);
    push(&queue, 4);
    assert_eq!(drain(&queue), [1, 2, 3, 4]);
    assert_eq!(pop(&queue), None);
}

#[test]
fn len_counts_both_lists() {
    let queue = Queue::new();
    assert!(consumer(&queue).is_empty());
    push(&queue, 1);
    assert!(!consumer(&queue).is_empty());
    push(&queue, 2);
    assert_eq!(consumer(&queue).len(), 2);
    push(&queue, 3);
    assert_eq!(consumer(&queue).len(), 3);
    pop(&queue);
    assert_eq!(consumer(&queue).len(), 2);
}

#[test]
fn wait_then_push_claims_the_wake_once() {
    let queue = Queue::new();
    assert_eq!(consumer(&queue).prepare_wait(), Wait::Blocked);
    assert_eq!(consumer(&queue).prepare_wait(), Wait::Blocked, "a repeated call still waits");
    assert_eq!(pushed(&queue, 7), Pushed::Wake);
    assert_eq!(pushed(&queue, 8), Pushed::Queued, "only the first push wakes");
    assert_eq!(consumer(&queue).cancel_wait(), Cancel::WakeClaimed);
    assert_eq!(drain(&queue), [7, 8]);
    // Woken, drained, waits again: the next push wakes again.
    assert_eq!(consumer(&queue).prepare_wait(), Wait::Blocked);
    assert_eq!(pushed(&queue, 9), Pushed::Wake);
}

#[test]
fn prepare_wait_refuses_when_something_is_queued() {
    let queue = Queue::new();
    push(&queue, 1);
    assert_eq!(consumer(&queue).prepare_wait(), Wait::NotEmpty, "on the producers' list");
    push(&queue, 2);
    assert_eq!(pop(&queue), Some(1));
    assert_eq!(consumer(&queue).prepare_wait(), Wait::NotEmpty, "on the consumer's list");
    assert_eq!(pop(&queue), Some(2));
    assert_eq!(consumer(&queue).prepare_wait(), Wait::Blocked);
}

#[test]
fn cancel_wait_before_any_push_needs_no_wake() {
    let queue = Queue::new();
    assert_eq!(consumer(&queue).prepare_wait(), Wait::Blocked);
    assert_eq!(consumer(&queue).cancel_wait(), Cancel::Cancelled);
    assert_eq!(pushed(&queue, 1), Pushed::Queued, "the wait was taken back");
    assert_eq!(drain(&queue), [1]);
}

#[test]
fn close_returns_everything_in_order_and_refuses_pushes() {
    let queue = Queue::new();
    for value in 0..3 {
        push(&queue, value);
    }
    assert_eq!(pop(&queue), Some(0));
    push(&queue, 3);
    let closed = consumer(&queue).close();
    assert_eq!(closed.len(), 3);
    assert_eq!(closed.map(Node::into_value).collect::<Vec<_>>(), [1, 2, 3]);
    assert!(queue.is_closed());
    let refused = queue.push(Node::boxed(4)).expect_err("closed");
    assert_eq!(refused.into_value(), 4);
    assert_eq!(pop(&queue), None);
    assert_eq!(consumer(&queue).prepare_wait(), Wait::Closed);
    assert_eq!(consumer(&queue).cancel_wait(), Cancel::Cancelled);
    assert!(consumer(&queue).close().is_empty(), "closing again returns nothing");
}

#[test]
fn close_while_waiting() {
    let queue = Queue::new();
    assert_eq!(consumer(&queue).prepare_wait(), Wait::Blocked);
    assert!(consumer(&queue).close().is_empty());
    assert!(queue.push(Node::boxed(1)).is_err());
}

#[test]
fn a_claim_takes_the_wake_from_everyone_else() {
    let queue = Queue::new();
    assert!(!queue.claim_wake(), "not waiting: nothing to claim");
    assert_eq!(consumer(&queue).prepare_wait(), Wait::Blocked);
    assert!(queue.is_waiting());
    assert!(queue.claim_wake());
    assert!(!queue.is_waiting());
    assert!(!queue.claim_wake(), "claimed once only");
    assert_eq!(consumer(&queue).cancel_wait(), Cancel::WakeClaimed, "the claimer's wake is on its way");
    assert_eq!(pushed(&queue, 1), Pushed::Queued, "the claim took the wake");
    assert_eq!(drain(&queue), [1]);
    // A push first: the claim finds no wait left to take.
    assert_eq!(consumer(&queue).prepare_wait(), Wait::Blocked);
    assert_eq!(pushed(&queue, 2), Pushed::Wake);
    assert!(!queue.claim_wake());
    assert_eq!(drain(&queue), [2]);
}

#[test]
fn reopen_after_close_takes_pushes_again() {
    let queue = Queue::new();
    consumer(&queue).reopen();
    push(&queue, 1);
    drop(consumer(&queue).close());
    assert!(queue.push(Node::boxed(2)).is_err());
    consumer(&queue).reopen();
    assert!(!queue.is_closed());
    assert_eq!(consumer(&queue).prepare_wait(), Wait::Blocked);
    assert_eq!(pushed(&queue, 3), Pushed::Wake);
    assert_eq!(drain(&queue), [3]);
}

/// Counts drops, to show the queue frees every node it still holds.
struct Counted {
    _alive: Rc<()>,
}

#[test]
fn dropping_the_queue_or_a_closed_list_drops_the_nodes() {
    let alive = Rc::new(());
    {
        let queue = SignalQueue::<Counted, Portable>::new();
        for _ in 0..3 {
            let _ = queue.push(Node::boxed(Counted { _alive: Rc::clone(&alive) }));
        }
        drop(consumer(&queue).pop());
        let _ = queue.push(Node::boxed(Counted { _alive: Rc::clone(&alive) }));
        assert_eq!(Rc::strong_count(&alive), 4);
    }
    assert_eq!(Rc::strong_count(&alive), 1);
    let queue = SignalQueue::<Counted, Portable>::new();
    for _ in 0..3 {
        let _ = queue.push(Node::boxed(Counted { _alive: Rc::clone(&alive) }));
    }
    let mut closed = consumer(&queue).close();
    drop(closed.next());
    assert_eq!(Rc::strong_count(&alive), 3);
    drop(closed);
    assert_eq!(Rc::strong_count(&alive), 1);
}

#[test]
fn take_first_matching_resumes_after_the_mark() {
    let queue = Queue::new();
    for value in [1, 3, 5] {
        push(&queue, value);
    }
    let even = |value: &u32| value.is_multiple_of(2);
    let mark = consumer(&queue).take_first_matching(Mark::START, even).expect_err("no even value");
    assert!(!mark.is_start());
    assert_eq!(consumer(&queue).mark(), mark, "the scan's mark is the end");
    push(&queue, 7);
    push(&queue, 8);
    push(&queue, 10);
    // Resumes after 5: sees 7 and 8 only up to the match.
    let mut seen = Vec::new();
    let found = {
        consumer(&queue).take_first_matching(mark, |value| {
            seen.push(*value);
            even(value)
        })
    };
    assert_eq!(found.expect("8").into_value(), 8);
    assert_eq!(seen, [7, 8]);
    assert_eq!(drain(&queue), [1, 3, 5, 7, 10]);
}

#[test]
fn a_removal_makes_a_mark_scan_from_the_start() {
    let queue = Queue::new();
    for value in [1, 2, 3] {
        push(&queue, value);
    }
    let mark = consumer(&queue).mark();
    // Removes the marked node itself (3) and frees it.
    assert_eq!(consumer(&queue).remove_first(|value| *value == 3).expect("3").into_value(), 3);
    push(&queue, 4);
    let mut seen = Vec::new();
    let found = {
        consumer(&queue).take_first_matching(mark, |value| {
            seen.push(*value);
            *value == 4
        })
    };
    assert_eq!(found.expect("4").into_value(), 4);
    assert_eq!(seen, [1, 2, 4], "the stale mark counted as the start");
}

#[test]
fn remove_first_takes_the_oldest_match_anywhere() {
    let queue = Queue::new();
    for value in [1, 2, 3, 2, 4] {
        push(&queue, value);
    }
    assert_eq!(consumer(&queue).remove_first(|value| *value == 2).map(Node::into_value), Some(2));
    assert_eq!(consumer(&queue).remove_first(|value| *value == 4).map(Node::into_value), Some(4), "the last");
    assert_eq!(consumer(&queue).remove_first(|value| *value == 9).map(Node::into_value), None);
    // The last node was removed: a push must link after the new last one.
    push(&queue, 5);
    assert_eq!(consumer(&queue).remove_first(|value| *value == 1).map(Node::into_value), Some(1), "the first");
    assert_eq!(drain(&queue), [3, 2, 5]);
}

#[test]
fn an_empty_scan_marks_the_start() {
    let queue = Queue::new();
    let mark = consumer(&queue).take_first_matching(Mark::START, |_| true).expect_err("empty");
    assert!(mark.is_start());
    push(&queue, 1);
    assert_eq!(consumer(&queue).take_first_matching(mark, |_| true).expect("1").into_value(), 1);
}

#[test]
fn node_boxes_round_trip() {
    let queue = Queue::new();
    let node: Box<Node<u32>> = Node::boxed(5);
    let address = &*node as *const Node<u32>;
    push(&queue, 0);
    let _ = queue.push(node);
    pop(&queue);
    let back = consumer(&queue).pop().expect("node");
    assert_eq!(&*back as *const Node<u32>, address, "the same allocation comes back");
}
