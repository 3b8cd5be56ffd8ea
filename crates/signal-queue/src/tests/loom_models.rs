//! Loom model checks: every interleaving (and every stale read loom permits) of small scenarios.
//!
//! Each model asserts the queue's contract on every execution: every signal delivered exactly
//! once (popped, returned by `close`, or refused back to its pusher), each sender's signals in
//! the order it sent them, and exactly one `Wake` per successful `prepare_wait` (never none: a
//! lost wake-up; never two), also when a waker that is not a producer claims it (`claim_wake`).
//! Two deliberately weakened head-word implementations must make the models fail, which shows
//! the models can tell. Run with `RUSTFLAGS="--cfg loom" cargo test
//! --release` in crates/signal-queue/.

use std::println;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize as CountCell, Ordering as CountOrdering};
use std::vec::Vec;

use loom::sync::atomic::AtomicBool;
use loom::thread;

use super::Consumer;
use crate::primitives::{CLOSED, EMPTY, HeadAtomics, WAITING};
use crate::shim::{AtomicUsize, Ordering};
use crate::{Cancel, Node, Portable, Pushed, SignalQueue, Wait};

/// A signal: (sender, its sequence number).
type Signal = (usize, u32);

/// Runs `model` under loom with at most `preemption_bound` preemptions per execution (`None`:
/// exhaustive; `LOOM_MAX_PREEMPTIONS` overrides either), and prints how many executions it
/// explored.
fn check(name: &str, preemption_bound: Option<usize>, model: impl Fn() + Sync + Send + 'static) {
    let mut builder = loom::model::Builder::new();
    if builder.preemption_bound.is_none() {
        builder.preemption_bound = preemption_bound;
    }
    // One counter per check: the harness runs checks on several threads at once.
    let executions = Arc::new(CountCell::new(0));
    /// Prints the count when the check ends, also when a failing execution's panic ends it.
    struct Report<'a> {
        name: &'a str,
        bound: Option<usize>,
        executions: Arc<CountCell>,
    }
    impl Drop for Report<'_> {
        fn drop(&mut self) {
            let explored = self.executions.load(CountOrdering::Relaxed);
            let outcome = if std::thread::panicking() { "FAILED after" } else { "passed," };
            println!(
                "loom: {}: {outcome} {explored} executions explored (preemption bound {:?})",
                self.name, self.bound
            );
        }
    }
    let _report = Report { name, bound: builder.preemption_bound, executions: Arc::clone(&executions) };
    builder.check(move || {
        executions.fetch_add(1, CountOrdering::Relaxed);
        model();
    });
}

/// The consumer of a model's queue: the model's main thread, the only one calling consumer
/// methods.
fn consumer<A: HeadAtomics>(queue: &SignalQueue<Signal, A>) -> Consumer<'_, Signal, A> {
    // SAFETY: in every model below only the main thread consumes, and only through this handle.
    #[allow(unsafe_code)]
    unsafe {
        Consumer::new(queue)
    }
}

/// Asserts every signal of `senders` senders sending `per_sender` each was delivered exactly
/// once, and each sender's in order (`delivered` is in delivery order; `refused` were given
/// back by a closed queue, and must be a suffix of their sender's sequence).
fn assert_delivered(senders: usize, per_sender: u32, delivered: &[Signal], refused: &[Signal]) {
    for sender in 0..senders {
        let got: Vec<u32> = delivered.iter().filter(|(s, _)| *s == sender).map(|(_, n)| *n).collect();
        let mut back: Vec<u32> = refused.iter().filter(|(s, _)| *s == sender).map(|(_, n)| *n).collect();
        back.sort_unstable();
        let mut all = got.clone();
        all.extend(&back);
        assert_eq!(all, (0..per_sender).collect::<Vec<_>>(), "sender {sender}: delivered {got:?}, refused {back:?}");
    }
}

/// Drains what is left after all producers joined.
fn drain<A: HeadAtomics>(consumer: &Consumer<'_, Signal, A>, delivered: &mut Vec<Signal>) {
    while let Some(node) = consumer.pop() {
        delivered.push(node.into_value());
    }
}

/// `senders` producers each push `per_sender` numbered signals while the consumer pops `pops`
/// times; then the rest is drained.
fn producers_race_the_consumer<A: HeadAtomics>(senders: usize, per_sender: u32, pops: usize) {
    let queue = Arc::new(SignalQueue::<Signal, A>::new());
    let producers: Vec<_> = (0..senders)
        .map(|sender| {
            let queue = Arc::clone(&queue);
            thread::spawn(move || {
                for n in 0..per_sender {
                    let _ = queue.push(Node::boxed((sender, n))).expect("open");
                }
            })
        })
        .collect();
    let consumer = consumer(&queue);
    let mut delivered = Vec::new();
    for _ in 0..pops {
        if let Some(node) = consumer.pop() {
            delivered.push(node.into_value());
        }
    }
    for producer in producers {
        producer.join().expect("producer");
    }
    drain(&consumer, &mut delivered);
    assert_delivered(senders, per_sender, &delivered, &[]);
}

#[test]
fn loom_two_senders_two_signals_each_exactly_once_in_order() {
    check("2 senders x 2 signals, 2 pops", Some(3), || producers_race_the_consumer::<Portable>(2, 2, 2));
}

#[test]
fn loom_three_senders_exactly_once() {
    check("3 senders x 1 signal, 2 pops", Some(3), || producers_race_the_consumer::<Portable>(3, 1, 2));
}

/// The consumer prepares to wait on an empty queue while `senders` producers push one signal
/// each; with `cancel`, it then takes the wait back (a timeout). Exactly one producer must get
/// `Wake` when (and only when) the consumer blocked and did not cancel in time.
fn wait_races_pushes<A: HeadAtomics>(senders: usize, cancel: bool) {
    let queue = Arc::new(SignalQueue::<Signal, A>::new());
    let producers: Vec<_> = (0..senders)
        .map(|sender| {
            let queue = Arc::clone(&queue);
            thread::spawn(move || queue.push(Node::boxed((sender, 0))).expect("open"))
        })
        .collect();
    let consumer = consumer(&queue);
    let wait = consumer.prepare_wait();
    let cancelled = (cancel && wait == Wait::Blocked).then(|| consumer.cancel_wait());
    let wakes =
        producers.into_iter().map(|p| p.join().expect("producer")).filter(|&pushed| pushed == Pushed::Wake).count();
    let expected_wakes = match (wait, cancelled) {
        (Wait::Blocked, None | Some(Cancel::WakeClaimed)) => 1,
        (Wait::Blocked, Some(Cancel::Cancelled)) | (Wait::NotEmpty, _) => 0,
        (Wait::Closed, _) => panic!("nobody closed the queue"),
    };
    assert_eq!(wakes, expected_wakes, "wakes after {wait:?}, cancel {cancelled:?}");
    let mut delivered = Vec::new();
    drain(&consumer, &mut delivered);
    assert_delivered(senders, 1, &delivered, &[]);
}

#[test]
fn loom_prepare_wait_against_a_push_one_wake_or_not_empty() {
    check("prepare_wait vs 1 push", None, || wait_races_pushes::<Portable>(1, false));
}

#[test]
fn loom_prepare_wait_against_two_pushes_exactly_one_wake() {
    check("prepare_wait vs 2 pushes", None, || wait_races_pushes::<Portable>(2, false));
}

#[test]
fn loom_cancel_wait_against_pushes() {
    check("prepare_wait + cancel_wait vs 2 pushes", None, || wait_races_pushes::<Portable>(2, true));
}

/// The consumer blocks while a producer pushes and a waker that is not a producer (a timeout,
/// a kill) calls `claim_wake`; with `cancel`, the consumer then takes its wait back. Each wait
/// is claimed by exactly one party, never two and never none: the push (`Wake`), the claim
/// (true), or the consumer's own cancel (`Cancelled`).
fn claim_races_push<A: HeadAtomics>(cancel: bool) {
    let queue = Arc::new(SignalQueue::<Signal, A>::new());
    let producer = {
        let queue = Arc::clone(&queue);
        thread::spawn(move || queue.push(Node::boxed((0, 0))).expect("open"))
    };
    let claimer = {
        let queue = Arc::clone(&queue);
        thread::spawn(move || queue.claim_wake())
    };
    let consumer = consumer(&queue);
    let wait = consumer.prepare_wait();
    let cancelled = (cancel && wait == Wait::Blocked).then(|| consumer.cancel_wait());
    let push_woke = producer.join().expect("producer") == Pushed::Wake;
    let claimed = claimer.join().expect("claimer");
    let claims = usize::from(push_woke) + usize::from(claimed) + usize::from(cancelled == Some(Cancel::Cancelled));
    let expected = match wait {
        Wait::Blocked => 1,
        Wait::NotEmpty => 0,
        Wait::Closed => panic!("nobody closed the queue"),
    };
    assert_eq!(claims, expected, "claims after {wait:?}: push {push_woke}, claim {claimed}, cancel {cancelled:?}");
    let mut delivered = Vec::new();
    drain(&consumer, &mut delivered);
    assert_delivered(1, 1, &delivered, &[]);
}

#[test]
fn loom_claim_against_a_push_one_claim_per_wait() {
    check("prepare_wait vs push vs claim_wake", None, || claim_races_push::<Portable>(false));
}

#[test]
fn loom_claim_and_cancel_against_a_push_one_claim_per_wait() {
    check("prepare_wait + cancel_wait vs push vs claim_wake", None, || claim_races_push::<Portable>(true));
}

/// `senders` producers that push one signal each, `(sender, 0)`, and the one whose push returns
/// `Wake` sets `woken`: the model's scheduler queueing the consumer.
fn waking_senders<A: HeadAtomics>(
    queue: &Arc<SignalQueue<Signal, A>>,
    woken: &Arc<AtomicBool>,
    senders: usize,
) -> Vec<thread::JoinHandle<()>> {
    (0..senders)
        .map(|sender| {
            let (queue, woken) = (Arc::clone(queue), Arc::clone(woken));
            thread::spawn(move || {
                if queue.push(Node::boxed((sender, 0))).expect("open") == Pushed::Wake {
                    // ORDERING: the model's scheduler: Release/Acquire so that the wake flag
                    // orders the waker before the woken consumer, as the kernel's run queue does.
                    assert!(!woken.swap(true, Ordering::Release), "two wakes for one wait");
                }
            })
        })
        .collect()
}

/// The whole receive loop: the consumer receives `senders` signals, blocking when the queue is
/// empty, and is woken only by the producer whose push returned `Wake` (a flag it sets). A lost
/// wake-up leaves the consumer waiting forever, which loom reports as a failure (the spin loop
/// yields, so loom sees every thread blocked or finished but it).
fn receive_loop<A: HeadAtomics>(senders: usize) {
    let queue = Arc::new(SignalQueue::<Signal, A>::new());
    let woken = Arc::new(AtomicBool::new(false));
    let producers = waking_senders(&queue, &woken, senders);
    let consumer = consumer(&queue);
    let mut delivered = Vec::new();
    while delivered.len() < senders {
        if let Some(node) = consumer.pop() {
            delivered.push(node.into_value());
            continue;
        }
        if consumer.prepare_wait() == Wait::Blocked {
            // ORDERING: pairs with the waker's Release swap above.
            while !woken.swap(false, Ordering::Acquire) {
                thread::yield_now();
            }
        }
    }
    for producer in producers {
        producer.join().expect("producer");
    }
    assert!(!woken.load(Ordering::Relaxed), "a wake without a wait");
    assert_delivered(senders, 1, &delivered, &[]);
}

#[test]
fn loom_receive_loop_never_loses_a_wake() {
    check("receive loop, 2 senders", None, || receive_loop::<Portable>(2));
}

/// A selective receive: the consumer waits for sender 1's signal while sender 0's (which it
/// skips) and an older one queued before the race stay put. It blocks with
/// `prepare_wait_for_more` whenever a scan from its mark finds no match, and only the producer
/// whose push returned `Wake` wakes it. A lost wake-up leaves it waiting forever; a wrong scan
/// takes the wrong signal or loses the order of the rest.
fn selective_receive_loop<A: HeadAtomics>() {
    let queue = Arc::new(SignalQueue::<Signal, A>::new());
    // The consumer has not waited yet, so nobody is to be woken.
    assert_eq!(queue.push(Node::boxed((9, 0))).expect("open"), Pushed::Queued);
    let woken = Arc::new(AtomicBool::new(false));
    let producers = waking_senders(&queue, &woken, 2);
    let consumer = consumer(&queue);
    let mut from = crate::Mark::START;
    let taken = loop {
        match consumer.take_first_matching(from, |&(sender, _)| sender == 1) {
            Ok(node) => break node.into_value(),
            Err(mark) => from = mark,
        }
        if consumer.prepare_wait_for_more() == Wait::Blocked {
            // ORDERING: pairs with the waker's Release swap above.
            while !woken.swap(false, Ordering::Acquire) {
                thread::yield_now();
            }
        }
    };
    for producer in producers {
        producer.join().expect("producer");
    }
    assert_eq!(taken, (1, 0));
    let rest: Vec<Signal> = core::iter::from_fn(|| consumer.pop().map(|node| node.into_value())).collect();
    assert_eq!(rest, [(9, 0), (0, 0)], "the skipped signals stay, in their order");
    assert!(!woken.load(Ordering::Relaxed), "a wake without a wait");
}

#[test]
fn loom_selective_receive_loop_never_loses_a_wake() {
    check("selective receive loop, 2 senders", Some(3), selective_receive_loop::<Portable>);
}

/// `senders` producers push `per_sender` signals each while the consumer pops once and closes:
/// every signal is popped, returned by `close`, or refused back to its pusher, exactly once.
fn close_races_pushes<A: HeadAtomics>(senders: usize, per_sender: u32) {
    let queue = Arc::new(SignalQueue::<Signal, A>::new());
    let producers: Vec<_> = (0..senders)
        .map(|sender| {
            let queue = Arc::clone(&queue);
            thread::spawn(move || {
                let mut refused = Vec::new();
                for n in 0..per_sender {
                    if let Err(node) = queue.push(Node::boxed((sender, n))) {
                        refused.push(node.into_value());
                    }
                }
                refused
            })
        })
        .collect();
    let consumer = consumer(&queue);
    let mut delivered: Vec<Signal> = consumer.pop().map(Node::into_value).into_iter().collect();
    delivered.extend(consumer.close().map(Node::into_value));
    let mut refused = Vec::new();
    for producer in producers {
        refused.extend(producer.join().expect("producer"));
    }
    assert!(consumer.pop().is_none(), "nothing queued after close");
    assert_delivered(senders, per_sender, &delivered, &refused);
}

#[test]
fn loom_close_against_pushes_each_signal_once() {
    check("close vs 2 senders x 2 signals", Some(3), || close_races_pushes::<Portable>(2, 2));
}

/// `Portable` with the push's Release weakened to Relaxed: the consumer's acquire no longer
/// orders the links, and may read a node's link before its store (its initial 0), losing the
/// older nodes.
#[derive(Debug)]
enum RelaxedPush {}

impl HeadAtomics for RelaxedPush {
    fn push(head: &AtomicUsize, node: usize, next: &AtomicUsize) -> usize {
        let mut old = EMPTY;
        loop {
            match head.compare_exchange_weak(old, node, Ordering::Relaxed, Ordering::Relaxed) {
                Ok(_) => return old,
                Err(CLOSED) => return CLOSED,
                Err(found) => {
                    old = found;
                    next.store(if found == WAITING { EMPTY } else { found }, Ordering::Relaxed);
                }
            }
        }
    }

    fn take(head: &AtomicUsize) -> usize {
        Portable::take(head)
    }

    fn compare_exchange(head: &AtomicUsize, expected: usize, new: usize) -> Result<(), usize> {
        Portable::compare_exchange(head, expected, new)
    }

    fn close(head: &AtomicUsize) -> usize {
        Portable::close(head)
    }
}

/// `Portable` with `compare_exchange` (so `prepare_wait`) as a load and a separate store: a
/// push between them is overwritten by WAITING, its signal lost and its wake never claimed.
#[derive(Debug)]
enum StoreWait {}

impl HeadAtomics for StoreWait {
    fn push(head: &AtomicUsize, node: usize, next: &AtomicUsize) -> usize {
        Portable::push(head, node, next)
    }

    fn take(head: &AtomicUsize) -> usize {
        Portable::take(head)
    }

    fn compare_exchange(head: &AtomicUsize, expected: usize, new: usize) -> Result<(), usize> {
        let found = head.load(Ordering::Relaxed);
        if found != expected {
            return Err(found);
        }
        head.store(new, Ordering::Relaxed);
        Ok(())
    }

    fn close(head: &AtomicUsize) -> usize {
        Portable::close(head)
    }
}

/// Runs a check expected to fail and asserts that it did.
fn must_fail(what: &str, model: impl FnOnce() + std::panic::UnwindSafe) {
    let outcome = std::panic::catch_unwind(model);
    assert!(outcome.is_err(), "the loom model did not catch {what}");
    println!("loom: caught {what}, as it must");
}

#[test]
fn loom_catches_a_relaxed_push() {
    must_fail("a push without release", || {
        check("relaxed push (must fail)", Some(3), || producers_race_the_consumer::<RelaxedPush>(2, 2, 2));
    });
}

#[test]
fn loom_catches_a_wait_that_is_not_a_compare_and_swap() {
    must_fail("prepare_wait as load + store", || {
        check("prepare_wait as load + store (must fail)", None, || wait_races_pushes::<StoreWait>(1, false));
    });
}

#[test]
fn loom_catches_a_lost_wake_in_the_receive_loop() {
    must_fail("a lost wake-up in the receive loop", || {
        check("receive loop, load + store wait (must fail)", None, || receive_loop::<StoreWait>(2));
    });
}

#[test]
fn loom_catches_a_lost_wake_in_the_selective_receive_loop() {
    must_fail("selective receive loop with a load + store wait", || {
        check("selective receive loop, load + store wait (must fail)", Some(3), selective_receive_loop::<StoreWait>);
    });
}

#[test]
fn loom_catches_a_claim_that_is_not_a_compare_and_swap() {
    must_fail("claim_wake as load + store", || {
        check("claim_wake as load + store (must fail)", None, || claim_races_push::<StoreWait>(false));
    });
}
