//! Stress: real threads (std) on the host, the receive loop as the kernel will run it. Several
//! senders push numbered signals; the consumer pops, blocks when empty (`prepare_wait`, then
//! parks until the sender whose push returned `Wake` unparks it), sometimes gives a wait up
//! (`cancel_wait`, as a timeout would) and sometimes receives selectively. Every signal must
//! arrive exactly once, each sender's in order (selective receives are checked apart), and the
//! wakes claimed must match the waits.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread;
use std::vec::Vec;

use super::Consumer;
use crate::{Cancel, Node, Portable, Pushed, SignalQueue, Wait};

const SENDERS: usize = 3;
/// Signals per sender: fewer under Miri, which interprets every access.
const PER_SENDER: u64 = if cfg!(miri) { 200 } else { 200_000 };

struct Shared {
    queue: SignalQueue<(usize, u64), Portable>,
    /// Set by the waker, cleared by the woken consumer: the kernel's "made runnable".
    woken: AtomicBool,
    wakes: AtomicU64,
}

#[test]
fn stress_senders_and_a_blocking_consumer_exactly_once_in_order() {
    let shared =
        Arc::new(Shared { queue: SignalQueue::new(), woken: AtomicBool::new(false), wakes: AtomicU64::new(0) });
    let consumer_thread = thread::current();
    let senders: Vec<_> = (0..SENDERS)
        .map(|sender| {
            let shared = Arc::clone(&shared);
            let consumer_thread = consumer_thread.clone();
            thread::spawn(move || {
                for n in 0..PER_SENDER {
                    // Bursts with gaps, so the consumer often finds the queue empty and waits.
                    if n % 16 == 0 {
                        for _ in 0..(n % 7) * 300 {
                            core::hint::spin_loop();
                        }
                    }
                    if shared.queue.push(Node::boxed((sender, n))).expect("open") == Pushed::Wake {
                        shared.wakes.fetch_add(1, Ordering::Relaxed);
                        // ORDERING: Release pairs with the consumer's Acquire swap: the kernel's
                        // run queue would order the wake before the consumer runs again.
                        assert!(!shared.woken.swap(true, Ordering::Release), "two wakes for one wait");
                        consumer_thread.unpark();
                    }
                }
            })
        })
        .collect();

    // SAFETY: this thread is the only consumer.
    #[allow(unsafe_code)]
    let consumer = unsafe { Consumer::new(&shared.queue) };
    // Exactly once: each signal marked on arrival, never twice. In order: the signals `pop`
    // delivers rise per sender (a selective receive only leaves a gap).
    let mut seen: Vec<Vec<bool>> = (0..SENDERS).map(|_| std::vec![false; PER_SENDER as usize]).collect();
    let mut arrive = |(sender, n): (usize, u64)| {
        assert!(!core::mem::replace(&mut seen[sender][n as usize], true), "sender {sender}'s {n} twice");
    };
    let mut last_popped: [Option<u64>; SENDERS] = [None; SENDERS];
    let mut selective = 0u64;
    let mut received = 0u64;
    let (mut waits, mut cancelled, mut claimed) = (0u64, 0u64, 0u64);
    let total = SENDERS as u64 * PER_SENDER;
    while received < total {
        // Now and then a selective receive: the first signal of sender 2 whose number is a
        // multiple of 7 (taken out of order relative to the others, so checked apart).
        if received % 1_000 == 999
            && let Ok(node) = consumer.take_first_matching(crate::Mark::START, |(s, n)| *s == 2 && n % 7 == 0)
        {
            arrive(node.into_value());
            selective += 1;
            received += 1;
            continue;
        }
        if let Some(node) = consumer.pop() {
            let (sender, n) = node.into_value();
            assert!(last_popped[sender] < Some(n), "sender {sender}: {n} after {:?}", last_popped[sender]);
            last_popped[sender] = Some(n);
            arrive((sender, n));
            received += 1;
            continue;
        }
        match consumer.prepare_wait() {
            Wait::NotEmpty => {}
            Wait::Closed => unreachable!("nobody closes"),
            Wait::Blocked => {
                waits += 1;
                // Every 8th wait times out at once: cancel, and absorb a claimed wake.
                if waits % 8 == 0 {
                    match consumer.cancel_wait() {
                        Cancel::Cancelled => {
                            cancelled += 1;
                            continue;
                        }
                        Cancel::WakeClaimed => claimed += 1,
                    }
                }
                // ORDERING: pairs with the waker's Release swap.
                while !shared.woken.swap(false, Ordering::Acquire) {
                    thread::park();
                }
            }
        }
    }
    for sender in senders {
        sender.join().expect("sender");
    }
    assert!(consumer.pop().is_none(), "nothing left over");
    assert_eq!(shared.wakes.load(Ordering::Relaxed), waits - cancelled, "one wake per wait not cancelled");
    assert!(!shared.woken.load(Ordering::Relaxed));
    std::println!(
        "stress: {total} signals, {waits} waits ({cancelled} cancelled, {claimed} wakes claimed before cancel), {} selective",
        selective
    );
    assert!(seen.iter().flatten().all(|&arrived| arrived), "every signal arrived");
}
