//! Property test: random sequences of every operation against a model, a `BTreeMap` keyed by
//! (deadline, insertion number), whose first entry is by construction the next to fire.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::vec::Vec;

use proptest::prelude::*;

use crate::{Handle, STALE_FLOOR, TimerHeap};

#[derive(Clone, Debug)]
enum Op {
    Insert(u64),
    /// Cancels a handle this run was given (pending, fired or cancelled), chosen by position.
    CancelIssued(usize),
    /// Cancels a made-up handle: out of range, stale, or by chance a pending one.
    CancelMadeUp(u32, u32),
    Deadline(usize),
    PopExpired(u64),
    Earliest,
    /// Cancels the latest timer and inserts another later one (the idle-timeout re-arm), which
    /// is what piles up stale entries and drives the rebuild.
    Rearm(u64),
    DrainAll,
}

/// Sequences of up to `len` operations; `rearm` weighs the re-arm against the others' 20.
fn ops(rearm: u32, len: usize) -> impl Strategy<Value = Vec<Op>> {
    let op = prop_oneof![
        8 => (0..40u64).prop_map(Op::Insert),
        3 => any::<usize>().prop_map(Op::CancelIssued),
        1 => (0..48u32, 0..4u32).prop_map(|(index, generation)| Op::CancelMadeUp(index, generation)),
        1 => any::<usize>().prop_map(Op::Deadline),
        3 => (0..40u64).prop_map(Op::PopExpired),
        1 => Just(Op::Earliest),
        rearm => (40..80u64).prop_map(Op::Rearm),
        1 => Just(Op::DrainAll),
    ];
    proptest::collection::vec(op, 0..len)
}

/// The model: pending timers by (deadline, insertion number), and each pending handle's key.
#[derive(Default)]
struct Model {
    by_time: BTreeMap<(u64, u64), (Handle, u64)>,
    by_handle: HashMap<Handle, (u64, u64)>,
}

impl Model {
    fn cancel(&mut self, handle: Handle) -> Option<(u64, u64)> {
        let key = self.by_handle.remove(&handle)?;
        self.by_time.remove(&key).map(|(_, value)| (key.0, value))
    }
}

/// Runs `ops` on a table and on the model, checking every answer and, after every operation,
/// the counts, the earliest deadline and the memory bound.
fn agrees_with_model(ops: Vec<Op>) -> Result<(), TestCaseError> {
    let mut timers = TimerHeap::new();
    let mut model = Model::default();
    let mut issued: Vec<Handle> = Vec::new();
    let mut inserted = 0u64;
    let mut ever_issued = HashSet::new();
    let mut insert = |timers: &mut TimerHeap<u64>, model: &mut Model, issued: &mut Vec<Handle>, deadline| {
        let handle = timers.insert(deadline, inserted).unwrap();
        prop_assert!(ever_issued.insert(handle), "{:?} was given out before (a reused slot, same generation)", handle);
        model.by_time.insert((deadline, inserted), (handle, inserted));
        model.by_handle.insert(handle, (deadline, inserted));
        issued.push(handle);
        inserted += 1;
        Ok(())
    };
    for op in ops {
        match op {
            Op::Insert(deadline) => insert(&mut timers, &mut model, &mut issued, deadline)?,
            Op::CancelIssued(pick) => {
                if !issued.is_empty() {
                    let handle = issued[pick % issued.len()];
                    prop_assert_eq!(timers.cancel(handle), model.cancel(handle));
                }
            }
            Op::CancelMadeUp(index, generation) => {
                let handle = Handle::from_parts(index, generation);
                prop_assert_eq!(timers.cancel(handle), model.cancel(handle));
            }
            Op::Deadline(pick) => {
                if !issued.is_empty() {
                    let handle = issued[pick % issued.len()];
                    prop_assert_eq!(timers.deadline(handle), model.by_handle.get(&handle).map(|key| key.0));
                }
            }
            Op::PopExpired(now) => {
                let due = model.by_time.first_key_value().is_some_and(|(key, _)| key.0 <= now);
                let expected = if due { model.by_time.pop_first() } else { None };
                let expected = expected.map(|((deadline, _), (handle, value))| {
                    model.by_handle.remove(&handle);
                    (handle, deadline, value)
                });
                prop_assert_eq!(timers.pop_expired(now), expected);
            }
            Op::Earliest => {}
            Op::Rearm(deadline) => {
                if let Some(&handle) = issued.last() {
                    prop_assert_eq!(timers.cancel(handle), model.cancel(handle));
                }
                insert(&mut timers, &mut model, &mut issued, deadline)?;
            }
            Op::DrainAll => {
                let expected: Vec<(u64, u64)> =
                    model.by_time.iter().map(|(&(deadline, _), &(_, value))| (deadline, value)).collect();
                model = Model::default();
                prop_assert_eq!(timers.drain_all(), expected);
            }
        }
        // After every operation: the counts, the earliest deadline, and the memory bound.
        prop_assert_eq!(timers.len(), model.by_time.len());
        prop_assert_eq!(timers.is_empty(), model.by_time.is_empty());
        prop_assert_eq!(timers.earliest(), model.by_time.first_key_value().map(|(key, _)| key.0));
        let live = timers.len();
        prop_assert!(timers.heap_entries() <= live + live.max(STALE_FLOOR));
    }
    Ok(())
}

proptest! {
    #[test]
    fn behaves_like_an_ordered_map(ops in ops(6, 300)) {
        agrees_with_model(ops)?;
    }

    /// Mostly re-arms: enough stale entries pile up beneath the live ones to drive rebuilds.
    #[test]
    fn rearming_behaves_like_an_ordered_map(ops in ops(200, 600)) {
        agrees_with_model(ops)?;
    }
}
