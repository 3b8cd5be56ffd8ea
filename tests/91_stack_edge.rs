//! A process at the edge of its stack never freezes the machine. For every margin from 4 KiB
//! down to 0 bytes left (every 128 bytes), a process moves its stack pointer to that margin
//! above its stack's limit and there panics, prints a line, faults, overflows a 1 KiB frame, or
//! makes kernel calls (spawn, monitor, send, receive with a timeout, yield). Each one either
//! does what it asked (prints, returns) or ends with its `ended:` line and the reason its
//! monitor receives, while a ring of bystanders passes a token throughout and finishes; the
//! machine never stops (no `PANIC`) and never hangs (the deadline). At 4 KiB every action does
//! what it asked, and at 0 bytes every one ends with a stack overflow, so the sweep crosses
//! the edge for each of them. Run at 1 and at 4 cores.
//! qemu-test: configs=a72-smp1,a72-smp4
//! qemu-test: expect=^test: stack edge: 165 cases
//! qemu-test: expect-count=said:ended ^process <\d+\.\d+> on core \d+ ended:
//! qemu-test: forbid=PANIC
//! qemu-test: timeout=300

#![no_std]
#![no_main]

extern crate alloc;

use alloc::boxed::Box;
use core::sync::atomic::{AtomicU64, Ordering};

use beamcore::mm::layout::slot_stack_top;
use beamcore::sched::{self, ExitReason, Message, Pid, SpawnOptions};
use beamcore::{ExitCode, println};
use beamcore_apps::ensure;
use beamcore_apps::testing::down_must_arrive;

/// Every case's stack: small enough for a slot's own stretch, so its limit is known exactly.
const STACK_BYTES: usize = 16 * 1024;
/// The margins tried: 4096, 3968, ..., 128, 0 bytes left above the limit.
const MARGIN_STEP: usize = 128;
const MOST_MARGIN: usize = 4096;
const MARGINS: usize = MOST_MARGIN / MARGIN_STEP + 1;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Panic,
    Println,
    Fault,
    Overflow,
    KernelCalls,
}

const KINDS: [Kind; 5] = [Kind::Panic, Kind::Println, Kind::Fault, Kind::Overflow, Kind::KernelCalls];

impl Kind {
    /// What the action does when it has the room it needs.
    fn asked(self) -> ExitReason {
        match self {
            Kind::Panic => ExitReason::Panic,
            Kind::Fault => ExitReason::Fault { class: 0x25, address: 0x10 },
            Kind::Println | Kind::Overflow | Kind::KernelCalls => ExitReason::Normal,
        }
    }
}

/// Bystanders' token hops, counted to show the others went on.
static HOPS: AtomicU64 = AtomicU64::new(0);
const BYSTANDERS: usize = 4;

/// Each action is a function of its own, so its frame is only what it needs (one function
/// holding all of them would carry the overflow's kilobyte into every case).
#[inline(never)]
fn action(kind: usize, margin: usize) {
    match KINDS[kind] {
        Kind::Panic => do_panic(margin),
        Kind::Println => do_println(margin),
        Kind::Fault => do_fault(),
        Kind::Overflow => do_overflow(margin),
        Kind::KernelCalls => kernel_calls(),
    }
}

#[inline(never)]
fn do_panic(margin: usize) {
    panic!("stack-edge panic with {margin} bytes left");
}

#[inline(never)]
fn do_println(margin: usize) {
    println!("stack-edge: a process prints with {margin} bytes of stack left");
}

#[inline(never)]
fn do_fault() {
    // SAFETY: none: the load is meant to fault (address 0x10 is unmapped).
    let _ = unsafe { (0x10 as *const u64).read_volatile() };
}

#[inline(never)]
fn do_overflow(margin: usize) {
    let frame = core::hint::black_box([margin as u8; 1024]);
    core::hint::black_box(&frame);
}

#[inline(never)]
fn kernel_calls() {
    let me = sched::self_pid().expect("a process");
    let child = sched::spawn(move || {
        let _ = sched::send(me, Message::Word(7));
    })
    .expect("spawn");
    sched::monitor(child).expect("monitor");
    sched::yield_now();
    let mut got = 0;
    while got < 2 {
        match sched::receive_timeout(5_000_000) {
            Some(_) => got += 1,
            None => panic!("kernel calls: no reply and no Down from {child}"),
        }
    }
    sched::send(me, Message::Word(1)).expect("send to self");
    let _ = sched::receive();
}

extern "C" fn trampoline(kind: usize, margin: usize) {
    action(kind, margin);
}

/// Calls `trampoline(kind, margin)` with the stack pointer at `sp`, then restores it.
fn call_at(sp: usize, kind: usize, margin: usize) {
    let function: extern "C" fn(usize, usize) = trampoline;
    // SAFETY: `sp` is 16-byte aligned and lies in this process's own stack, below every frame in
    // use (the process has barely started, near its top), so the callee's frames overwrite
    // nothing; the pages between are mapped by the stack-growth fault on first touch. x20 is
    // callee-saved and keeps the old stack pointer across the call; the rest the "C" ABI may
    // clobber is declared.
    unsafe {
        core::arch::asm!(
            "mov x20, sp",
            "mov sp, {sp}",
            "blr {function}",
            "mov sp, x20",
            sp = in(reg) sp,
            function = in(reg) function,
            in("x0") kind,
            in("x1") margin,
            out("x20") _,
            clobber_abi("C"),
        )
    };
}

fn case(kind: usize, margin: usize) -> impl FnOnce() + Send + 'static {
    move || {
        let _go = sched::receive();
        let me = sched::self_pid().expect("a process");
        let limit = slot_stack_top(me.index()) - STACK_BYTES;
        call_at(limit + margin, kind, margin);
    }
}

/// A member of the ring: told its successor first, then passes every token on until a 0.
fn bystander() {
    let next = match sched::receive() {
        Message::Boxed(boxed) => *boxed.downcast::<Pid>().expect("the successor's pid"),
        other => panic!("bystander: expected its successor, got {other:?}"),
    };
    loop {
        match sched::receive() {
            Message::Word(0) => return,
            Message::Word(hops) => {
                HOPS.fetch_add(1, Ordering::Relaxed);
                let _ = sched::send(next, Message::Word(hops + 1));
            }
            _ => {}
        }
    }
}

fn main() -> ExitCode {
    let mut bystanders = [None; BYSTANDERS];
    for slot in bystanders.iter_mut() {
        *slot = Some(sched::spawn(bystander).expect("spawn bystander"));
    }
    let bystanders = bystanders.map(Option::unwrap);
    for (i, pid) in bystanders.iter().enumerate() {
        let next = bystanders[(i + 1) % BYSTANDERS];
        ensure!(sched::send(*pid, Message::Boxed(Box::new(next))).is_ok(), "tell {pid} its successor");
    }
    let _ = sched::send(bystanders[0], Message::Word(1));

    let mut abnormal = 0u32;
    let mut cases = 0u32;
    // Per kind: the fewest bytes left at which it still did what it asked, and the most at
    // which it ended with a stack overflow.
    let mut lowest_asked = [None; KINDS.len()];
    let mut highest_overflow = [None; KINDS.len()];
    for (kind, &name) in KINDS.iter().enumerate() {
        for step in 0..MARGINS {
            let margin = MOST_MARGIN - step * MARGIN_STEP;
            let options = SpawnOptions::default().stack_bytes(STACK_BYTES);
            let pid = sched::spawn_with(options, case(kind, margin));
            ensure!(pid.is_ok(), "spawn {name:?} at {margin}");
            let pid = pid.unwrap();
            ensure!(sched::monitor(pid).is_ok(), "monitor {pid}");
            ensure!(sched::send(pid, Message::Word(0)).is_ok(), "go {pid}");
            let Some(reason) = down_must_arrive(pid) else {
                ensure!(false, "{name:?} at {margin} bytes left: no Down within 20 s");
                unreachable!()
            };
            cases += 1;
            let allowed = reason == name.asked() || reason == ExitReason::StackOverflow;
            ensure!(
                allowed,
                "{name:?} at {margin} bytes left ended {reason}, expected {} or stack overflow",
                name.asked()
            );
            if margin == MOST_MARGIN {
                ensure!(reason == name.asked(), "{name:?} with 4 KiB left must do what it asked, ended {reason}");
            }
            if margin == 0 {
                ensure!(reason == ExitReason::StackOverflow, "{name:?} with 0 bytes left ended {reason}");
            }
            if reason != ExitReason::Normal {
                abnormal += 1;
            }
            if reason == name.asked() {
                lowest_asked[kind] = Some(margin);
            } else if highest_overflow[kind].is_none() {
                highest_overflow[kind] = Some(margin);
            }
        }
        println!(
            "stack edge: {name:?} did what it asked down to {} bytes left; stack overflow from {} bytes left",
            lowest_asked[kind].unwrap_or(usize::MAX),
            highest_overflow[kind].unwrap_or(usize::MAX)
        );
    }
    let hops_during = HOPS.load(Ordering::Relaxed);
    for pid in bystanders.iter() {
        ensure!(sched::monitor(*pid).is_ok(), "monitor bystander {pid}");
        ensure!(sched::send(*pid, Message::Word(0)).is_ok(), "stop bystander {pid}");
    }
    let mut stopped = 0;
    while stopped < BYSTANDERS {
        match sched::receive_timeout(20_000_000) {
            Some(Message::Down { reason: ExitReason::Normal, .. }) => stopped += 1,
            Some(Message::Down { pid, reason, .. }) => ensure!(false, "bystander {pid} ended {reason}"),
            Some(_) => {}
            None => ensure!(false, "bystanders did not all stop"),
        }
    }
    ensure!(hops_during > 0, "the bystanders' token never moved");
    println!("said-count ended: {abnormal}");
    println!(
        "test: stack edge: {cases} cases ({} kinds x {MARGINS} margins), {abnormal} ended abnormally, each with its \
         line; bystanders passed the token {hops_during} times and stopped normally",
        KINDS.len()
    );
    ExitCode::Success
}

beamcore::entry!(main);
