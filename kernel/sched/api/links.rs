//! Links and exit signals, as a program asks for them: `link`, `unlink`, `spawn_link`,
//! `trap_exits`, `send_exit` (Erlang's `link/1`, `unlink/1`, `spawn_link`,
//! `process_flag(trap_exit, _)`, `exit/2`). How the signals travel, and why each is delivered
//! exactly once, is `msg/signals.rs`.

use super::calls::{Relation, exit_if_requested, self_pid, spawn_related};
use crate::msg::signals::{self, ExitOutcome, Via, is_live, lock_pair};
use crate::proc::process::{ExitReason, Pid, SendError, SpawnError, SpawnOptions};
use crate::run::percore::OnCore;
use beamcore_mm::heap::OutOfMemory;

/// The caller's pid; these calls are made by processes.
fn me(call: &str) -> Pid {
    self_pid().unwrap_or_else(|| panic!("{call} is called from a process"))
}

/// Links the calling process and `pid`: when either ends, the other receives an exit signal with
/// its reason (`send_exit`'s rules). Linking twice is linking once. If `pid` has already ended,
/// the caller receives an exit signal from it with reason `NoProc` at once, as in Erlang: it
/// ends with `NoProc` unless it traps exits. `OutOfMemory` if the link tables cannot grow.
pub fn link(pid: Pid) -> Result<(), OutOfMemory> {
    let me = me("link");
    if pid == me {
        return Ok(());
    }
    let mut core = OnCore::enter();
    let linked = if pid.index == me.index {
        false // an earlier occupant of our own slot: long gone
    } else {
        match lock_pair(me.index, pid.index) {
            Some((mut mine, mut theirs)) if is_live(&theirs, pid) => {
                let own = signals::relations(&mut mine)?;
                if !own.links.contains(&pid) {
                    signals::reserve_link(&mut own.links)?;
                    let other = signals::relations(&mut theirs)?;
                    signals::reserve_link(&mut other.links)?;
                    own.links.push(pid);
                    other.links.push(me);
                }
                true
            }
            _ => false,
        }
    };
    if !linked {
        signals::exit_signal(&mut core, me, pid, ExitReason::NoProc, Via::Call);
        exit_if_requested(core);
    }
    Ok(())
}

/// Removes the link between the calling process and `pid`, both ways; no exit signal from
/// `pid` arrives after it (one already queued as a `Message::Exit` stays queued). Unlinking
/// processes that are not linked does nothing.
pub fn unlink(pid: Pid) {
    let me = me("unlink");
    if pid.index == me.index {
        return;
    }
    let _core = OnCore::enter();
    let Some((mut mine, mut theirs)) = lock_pair(me.index, pid.index) else { return };
    if let Some(own) = mine.relations.as_mut() {
        own.links.retain(|p| *p != pid);
    }
    if is_live(&theirs, pid)
        && let Some(other) = theirs.relations.as_mut()
    {
        other.links.retain(|p| *p != me);
    }
}

/// Spawns a process linked to the caller, in one step: it cannot end before the link exists.
pub fn spawn_link<F: FnOnce() + Send + 'static>(options: SpawnOptions, function: F) -> Result<Pid, SpawnError> {
    spawn_related(options, function, Relation::Link(me("spawn_link")))
}

/// Sets whether the calling process traps exits (Erlang's `process_flag(trap_exit, on)`): an
/// exit signal then arrives as `Message::Exit { from, reason }` instead of ending it (but for
/// `kill`, which cannot be trapped). Returns the previous setting.
pub fn trap_exits(on: bool) -> bool {
    let me = me("trap_exits");
    let _core = OnCore::enter();
    let (_, mut shared) = signals::lock_live(me).expect("the calling process is alive");
    core::mem::replace(&mut shared.trap_exits, on)
}

/// Sends an exit signal with `reason` to `pid` without a link (Erlang's `exit(Pid, Reason)`):
/// if `pid` traps exits it receives `Message::Exit { from: caller, reason }`; otherwise it
/// ignores `Normal` and ends with any other reason (at its next safe point: the start of its
/// next turn, or `receive`). To end a process whatever it traps, `kill` it. Sent to the caller
/// itself, `Normal` ends it too, as in Erlang. `NoProc` if `pid` has ended; `OutOfMemory` if
/// the heap has no room left to keep the reason.
pub fn send_exit(pid: Pid, reason: ExitReason) -> Result<(), SendError> {
    let from = self_pid();
    let mut core = OnCore::enter();
    // From outside a process (a kernel job), the signal comes from the target itself.
    let sender = from.unwrap_or(pid);
    let outcome = signals::exit_signal(&mut core, pid, sender, reason, Via::Call);
    match outcome {
        ExitOutcome::NotDelivered => return Err(SendError::NoProc(pid)),
        ExitOutcome::NoMemory => return Err(SendError::OutOfMemory(pid)),
        ExitOutcome::Ignored if from == Some(pid) => {
            // `exit(self(), normal)` ends the caller: marked like any exit, taken below.
            if let Some((process, mut shared)) = signals::lock_live(pid) {
                let wake = signals::request_exit(process, &mut shared, ExitReason::Normal);
                debug_assert!(!wake, "the caller is running");
            }
        }
        _ => {}
    }
    exit_if_requested(core);
    Ok(())
}
