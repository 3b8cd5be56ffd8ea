//! Stopping one child in order, as OTP's supervisor does: monitor it, unlink it, signal it, wait
//! for its end, and kill it if it takes too long.
//!
//! Why a monitor and not the link: the wait must end exactly once, with the child's end, and
//! must not be mistaken later for a crash. After the unlink no exit signal from the child can
//! arrive (one queued before it is taken out here, the child had ended already), so the
//! supervisor's loop never sees this end; the monitor's `Down`, exactly once, is what the wait
//! looks for.

use beamcore::sched::{self, ExitReason, Message, Pid, Ref};

use super::spec::Shutdown;

/// Stops `pid`, a child linked to the calling supervisor, and returns once it has ended.
pub(super) fn terminate(pid: Pid, shutdown: Shutdown) {
    let monitor = sched::monitor(pid);
    sched::unlink(pid);
    let exited = |message: &Message| matches!(message, Message::Exit { from, .. } if *from == pid);
    if sched::receive_matching_timeout(0, exited).is_some() {
        // It had ended before the unlink: nothing to stop.
        if let Ok(reference) = monitor {
            sched::demonitor(reference, true);
        }
        return;
    }
    let Ok(reference) = monitor else {
        // No memory to watch it end: no orderly stop can be waited for, so it goes at once.
        let _ = sched::kill(pid);
        return;
    };
    match shutdown {
        Shutdown::Brutal => {
            let _ = sched::kill(pid);
        }
        Shutdown::Timeout(us) => {
            let _ = sched::send_exit(pid, ExitReason::Shutdown);
            if wait_down(reference, Some(us)) {
                return;
            }
            let _ = sched::kill(pid);
        }
        Shutdown::Infinity => {
            let _ = sched::send_exit(pid, ExitReason::Shutdown);
        }
    }
    wait_down(reference, None);
}

/// Waits for the `Down` of `reference` (`None`: as long as it takes); true if it came.
fn wait_down(reference: Ref, timeout_us: Option<u64>) -> bool {
    let down = |message: &Message| matches!(message, Message::Down { reference: r, .. } if *r == reference);
    match timeout_us {
        Some(us) => sched::receive_matching_timeout(us, down).is_some(),
        None => {
            sched::receive_matching(down);
            true
        }
    }
}
