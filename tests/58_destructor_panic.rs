//! A destructor that panics while its process unwinds stops the unwind (what is left is
//! counted), and the process still ends with the reason it was unwinding for, with one `ended:`
//! line for its one end: a panic stays `panic` (its line was printed when the unwind began; the
//! destructor's panic adds a line that is not a second `ended:`), a kill stays `killed`, an exit
//! signal keeps its reason (`shutdown`), and its own `exit(reason)`, whose reason the unwind
//! carried, ends as `panic`. Each case is watched by a monitor, on processes spread over the
//! cores, several rounds, so the right reason and the line count are seen on 1 and 4 cores.
//! qemu-test: configs=a72-smp1,a72-smp4
//! qemu-test: expect=^test: destructor panics: \d+ ends, each with the reason it was unwinding for
//! qemu-test: expect-count=20 ^process <\d+\.\d+> on core \d+ ended:
//! qemu-test: expect-count=20 panic while unwinding
//! qemu-test: forbid=PANIC
//! qemu-test: timeout=120

#![no_std]
#![no_main]

use beamcore::sched::{self, ExitReason, Message, Pid};
use beamcore::{ExitCode, println};
use beamcore_apps::ensure;
use beamcore_apps::testing::{down_must_arrive, spread};

/// Panics when dropped: the destructor an unwind runs.
struct PanicsOnDrop;

impl Drop for PanicsOnDrop {
    fn drop(&mut self) {
        panic!("a destructor panics");
    }
}

#[derive(Clone, Copy, Debug)]
enum How {
    /// It panics itself: `Panic`, and its `ended: panic` line before the destructor's.
    Panic,
    /// It is killed while it waits: `Killed`.
    Kill,
    /// It gets an exit signal it does not trap while it waits: the signal's reason.
    ExitSignal,
    /// It calls `exit(Normal)`: the reason rode on the unwind, lost with it, so `Panic`.
    OwnExit,
}

const HOWS: [How; 4] = [How::Panic, How::Kill, How::ExitSignal, How::OwnExit];
/// Rounds of the four: 20 ends, each with one `ended:` line and one `panic while unwinding`
/// (the header's counts).
const ROUNDS: usize = 5;

impl How {
    fn expected(self) -> ExitReason {
        match self {
            How::Panic | How::OwnExit => ExitReason::Panic,
            How::Kill => ExitReason::Killed,
            How::ExitSignal => ExitReason::Shutdown,
        }
    }
}

/// A process that holds a `PanicsOnDrop`, tells `parent` it holds it, waits for a word, and
/// then does what `how` says (or is ended from outside meanwhile).
fn victim(n: usize, how: How, parent: Pid) -> Pid {
    sched::spawn_with(spread(n), move || {
        let guard = PanicsOnDrop;
        sched::send(parent, Message::Word(1)).expect("tell the parent");
        let _ = sched::receive();
        match how {
            How::Panic => panic!("the victim panics"),
            How::OwnExit => sched::exit(ExitReason::Normal),
            How::Kill | How::ExitSignal => {}
        }
        drop(guard);
    })
    .expect("spawn")
}

fn main() -> ExitCode {
    let me = sched::self_pid().expect("a process");
    let mut ends = 0u32;
    for round in 0..ROUNDS {
        for (i, &how) in HOWS.iter().enumerate() {
            let pid = victim(round * HOWS.len() + i + 1, how, me);
            ensure!(sched::monitor(pid).is_ok(), "monitor {pid}");
            ensure!(matches!(sched::receive(), Message::Word(1)), "{pid} holds its guard");
            match how {
                How::Panic | How::OwnExit => ensure!(sched::send(pid, Message::Word(0)).is_ok(), "go {pid}"),
                How::Kill => ensure!(sched::kill(pid).is_ok(), "kill {pid}"),
                How::ExitSignal => ensure!(sched::send_exit(pid, ExitReason::Shutdown).is_ok(), "exit {pid}"),
            }
            let Some(reason) = down_must_arrive(pid) else {
                ensure!(false, "{how:?}: no Down from {pid} within 20 s");
                unreachable!()
            };
            ensure!(
                reason == how.expected(),
                "{how:?}: {pid} ended {reason}, expected {} (the reason it was unwinding for)",
                how.expected()
            );
            ends += 1;
        }
    }
    println!("test: destructor panics: {ends} ends, each with the reason it was unwinding for");
    ExitCode::Success
}

beamcore::entry!(main);
