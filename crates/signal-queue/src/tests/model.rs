//! Property test: random single-threaded sequences of every operation against a `VecDeque`
//! model (what is queued, in order; whether the consumer waits; whether the queue is closed).

use std::collections::VecDeque;
use std::vec::Vec;

use proptest::prelude::*;

use super::Consumer;
use crate::{Cancel, Mark, Node, Portable, Pushed, SignalQueue, Wait};

#[derive(Clone, Debug)]
enum Op {
    Push(u8),
    Pop,
    Len,
    PrepareWait,
    CancelWait,
    /// A waker that is not a producer claims the wait (`claim_wake`).
    Claim,
    /// Selective receive of a value `% 4 == k`, from the saved mark or the start.
    TakeMatching {
        residue: u8,
        from_saved: bool,
    },
    /// Selective receive with the saved mark as a cursor (`take_matching_from`).
    TakeMatchingFrom(u8),
    /// A wait for a signal newer than every queued one (`prepare_wait_for_more`).
    PrepareWaitForMore,
    Mark,
    RemoveFirst(u8),
    Close,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => any::<u8>().prop_map(Op::Push),
        3 => Just(Op::Pop),
        1 => Just(Op::Len),
        2 => Just(Op::PrepareWait),
        1 => Just(Op::CancelWait),
        1 => Just(Op::Claim),
        3 => (0..4u8, any::<bool>()).prop_map(|(residue, from_saved)| Op::TakeMatching { residue, from_saved }),
        2 => (0..4u8).prop_map(Op::TakeMatchingFrom),
        1 => Just(Op::PrepareWaitForMore),
        1 => Just(Op::Mark),
        1 => (0..4u8).prop_map(Op::RemoveFirst),
        1 => Just(Op::Close),
    ]
}

/// The model of the head word.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Word {
    Empty,
    Waiting,
    Nodes,
    Closed,
}

/// The model: the queued values in order, split as the queue splits them (the first `inner`
/// are on the consumer's list, the rest on the producers'), the word, and the saved mark as the
/// number of values it covers (`None`: a removal made it count as the start).
struct Model {
    values: VecDeque<u8>,
    inner: usize,
    word: Word,
    saved: Option<usize>,
}

impl Model {
    /// The consumer takes the producers' list.
    fn take(&mut self) {
        if self.word == Word::Nodes {
            self.inner = self.values.len();
            self.word = Word::Empty;
        }
    }

    fn remove(&mut self, position: usize) -> Option<u8> {
        self.inner -= 1;
        self.saved = None;
        self.values.remove(position)
    }
}

proptest! {
    #[test]
    fn behaves_like_a_fifo_with_a_wait_word(ops in proptest::collection::vec(op(), 0..80)) {
        let mut queue = SignalQueue::<u8, Portable>::new();
        let consumer = Consumer::of(&mut queue);
        let mut model = Model { values: VecDeque::new(), inner: 0, word: Word::Empty, saved: Some(0) };
        let mut saved = Mark::START;
        for op in ops {
            match op {
                Op::Push(value) => match consumer.queue.push(Node::boxed(value)) {
                    Ok(pushed) => {
                        prop_assert_ne!(model.word, Word::Closed);
                        prop_assert_eq!(pushed == Pushed::Wake, model.word == Word::Waiting, "Wake exactly when waiting");
                        model.word = Word::Nodes;
                        model.values.push_back(value);
                    }
                    Err(node) => {
                        prop_assert_eq!(model.word, Word::Closed);
                        prop_assert_eq!(node.into_value(), value);
                    }
                },
                Op::Pop => {
                    if model.inner == 0 {
                        model.take();
                    }
                    let expected = if model.inner > 0 { model.remove(0) } else { None };
                    prop_assert_eq!(consumer.pop().map(Node::into_value), expected);
                }
                Op::Len => {
                    model.take();
                    prop_assert_eq!(consumer.len(), model.values.len());
                }
                Op::PrepareWait => {
                    let expected = match model.word {
                        _ if model.inner > 0 => Wait::NotEmpty,
                        Word::Empty | Word::Waiting => {
                            model.word = Word::Waiting;
                            Wait::Blocked
                        }
                        Word::Nodes => Wait::NotEmpty,
                        Word::Closed => Wait::Closed,
                    };
                    prop_assert_eq!(consumer.prepare_wait(), expected);
                }
                Op::CancelWait => {
                    let expected = match model.word {
                        Word::Waiting => {
                            model.word = Word::Empty;
                            Cancel::Cancelled
                        }
                        // EMPTY: a claim took the wait (and, outside the contract, no wait
                        // at all looks the same).
                        Word::Nodes | Word::Empty => Cancel::WakeClaimed,
                        Word::Closed => Cancel::Cancelled,
                    };
                    prop_assert_eq!(consumer.cancel_wait(), expected);
                }
                Op::Claim => {
                    let expected = model.word == Word::Waiting;
                    if expected {
                        model.word = Word::Empty;
                    }
                    prop_assert_eq!(consumer.queue.claim_wake(), expected);
                }
                Op::TakeMatching { residue, from_saved } => {
                    model.take();
                    let from = if from_saved { saved } else { Mark::START };
                    let skip = if from_saved { model.saved.unwrap_or(0) } else { 0 };
                    let position = model.values.iter().skip(skip).position(|v| v % 4 == residue).map(|p| p + skip);
                    match consumer.take_first_matching(from, |v| v % 4 == residue) {
                        Ok(node) => {
                            let position = position.expect("the model has a match");
                            prop_assert_eq!(Some(node.into_value()), model.remove(position));
                        }
                        Err(mark) => {
                            prop_assert_eq!(position, None);
                            if from_saved {
                                saved = mark;
                                model.saved = Some(model.values.len());
                            }
                        }
                    }
                }
                Op::TakeMatchingFrom(residue) => {
                    model.take();
                    let skip = model.saved.unwrap_or(0);
                    let position = model.values.iter().skip(skip).position(|v| v % 4 == residue).map(|p| p + skip);
                    let got = consumer.take_matching_from(&mut saved, |v| v % 4 == residue).map(Node::into_value);
                    match position {
                        Some(position) => {
                            prop_assert_eq!(got, model.remove(position));
                            // The cursor names the match's predecessor, which stays.
                            model.saved = Some(position);
                        }
                        None => {
                            prop_assert_eq!(got, None);
                            model.saved = Some(model.values.len());
                        }
                    }
                }
                Op::PrepareWaitForMore => {
                    let expected = match model.word {
                        Word::Empty | Word::Waiting => {
                            model.word = Word::Waiting;
                            Wait::Blocked
                        }
                        Word::Nodes => Wait::NotEmpty,
                        Word::Closed => Wait::Closed,
                    };
                    prop_assert_eq!(consumer.prepare_wait_for_more(), expected);
                }
                Op::Mark => {
                    model.take();
                    saved = consumer.mark();
                    model.saved = Some(model.values.len());
                }
                Op::RemoveFirst(residue) => {
                    model.take();
                    let expected = model.values.iter().position(|v| v % 4 == residue).and_then(|p| model.remove(p));
                    prop_assert_eq!(consumer.remove_first(|v| v % 4 == residue).map(Node::into_value), expected);
                }
                Op::Close => {
                    let got: Vec<u8> = consumer.close().map(Node::into_value).collect();
                    prop_assert_eq!(got, model.values.drain(..).collect::<Vec<_>>());
                    model.inner = 0;
                    model.word = Word::Closed;
                    model.saved = None;
                }
            }
            prop_assert_eq!(consumer.queue.is_closed(), model.word == Word::Closed);
        }
    }
}
