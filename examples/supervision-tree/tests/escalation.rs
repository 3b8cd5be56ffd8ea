//! The intensity reaction in isolation: the tree with no jobs (its workers wait, none crashes)
//! and three outages of the fragile subtree's device, each checked as OTP's supervisors would
//! react:
//! 1. 2 refused connections: the fragile supervisor restarts flaky twice and carries on;
//! 2. 1 more within its period: its third restart is one too many, so it stops flaky and ends
//!    with `Shutdown`; the root restarts it alone (the tally and the pool keep their pids);
//! 3. 3 more, so the new fragile supervisor gives up too, within the root's 5 s: the root's own
//!    intensity (1 restart) is exceeded; it stops the pool and the tally and ends with
//!    `Shutdown`, leaving no process of the tree and the tally's name free.

#![no_std]
#![no_main]

extern crate alloc;

use alloc::format;
use alloc::string::String;

use beamcore::sched::{self, ExitReason, Message, Pid};
use beamcore::{ExitCode, println, smp};
use beamcore_otp::supervisor;
use supervision_tree::fragile::{self, Device};
use supervision_tree::pool::Crashes;
use supervision_tree::{tally, tree};

const MUST_ARRIVE_US: u64 = 60_000_000;

static CRASHES: Crashes = Crashes::new();
static DEVICE: Device = Device::new();

macro_rules! check {
    ($condition:expr, $($why:tt)+) => {
        if !$condition {
            return Err(format!($($why)+));
        }
    };
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => {
            println!("test escalation: ok (cores online: {})", smp::cores_online());
            ExitCode::Success
        }
        Err(why) => {
            println!("test escalation: FAILED: {why}");
            ExitCode::Failure(1)
        }
    }
}

fn run() -> Result<(), String> {
    sched::trap_exits(true);
    let baseline = sched::process_count();
    let config = tree::Config { jobs: 0, workers: 4, crashes: &CRASHES, device: &DEVICE };
    let root = tree::start_link(config).map_err(|error| format!("the tree did not start: {error}"))?;
    let tally = sched::whereis(tally::NAME).ok_or("the tally is not registered")?;
    let pool = tree::child(root, "pool").ok_or("no pool")?;

    // 1. Within the fragile supervisor's patience.
    let fragile = tree::child(root, "fragile").ok_or("no fragile supervisor")?;
    DEVICE.outage(2);
    fragile::reconnect(fragile)?;
    check!(wait_for_restarts(fragile, 2), "the fragile supervisor did not restart flaky twice");
    let flaky = tree::child(fragile, "flaky").ok_or("flaky does not run after two restarts")?;
    check!(sched::is_alive(flaky), "flaky {flaky} has ended after two restarts");
    check!(DEVICE.refused() == 2, "{} connections refused, not 2", DEVICE.refused());
    println!("test escalation: 2 refusals: fragile {fragile} restarted flaky twice: ok");

    // 2. One more: the fragile supervisor gives up, the root restarts it.
    let reason = outage_ends(fragile, 1)?;
    check!(reason == ExitReason::Shutdown, "the fragile supervisor ended with {reason}");
    let second = tree::child(root, "fragile").ok_or("the root did not restart the fragile supervisor")?;
    check!(second != fragile, "the fragile supervisor kept its pid");
    check!(supervisor::restart_count(root) == Ok(1), "the root's restarts are not 1");
    check!(tree::child(root, "tally") == Some(tally), "the tally was restarted");
    check!(tree::child(root, "pool") == Some(pool), "the pool was restarted");
    println!("test escalation: 1 more: fragile gave up ({reason}), the root restarted it as {second}: ok");

    // 3. The new one gives up too, within 5 s: so does the root.
    let reason = outage_ends(second, fragile::INTENSITY.max_restarts + 1)?;
    check!(reason == ExitReason::Shutdown, "the second fragile supervisor ended with {reason}");
    let root_reason = exit_of(root).ok_or("the root did not end")?;
    check!(root_reason == ExitReason::Shutdown, "the root ended with {root_reason}");
    check!(!sched::is_alive(tally) && !sched::is_alive(pool), "the tally or the pool outlived the root");
    check!(sched::whereis(tally::NAME).is_none(), "the tally's name is still registered");
    check!(tree::back_to(baseline), "{} processes alive, {baseline} before the tree", sched::process_count());
    println!("test escalation: fragile gave up again within 5 s: the root gave up ({root_reason}): ok");
    Ok(())
}

/// An outage of `refusals` connections for the flaky child of `fragile`, which must end the
/// fragile supervisor: its reason.
fn outage_ends(fragile: Pid, refusals: u32) -> Result<ExitReason, String> {
    let watch = sched::monitor(fragile).map_err(|_| "no memory for a monitor")?;
    DEVICE.outage(refusals);
    fragile::reconnect(fragile)?;
    let ours = |message: &Message| matches!(message, Message::Down { reference, .. } if *reference == watch);
    match sched::receive_matching_timeout(MUST_ARRIVE_US, ours) {
        Some(Message::Down { reason, .. }) => Ok(reason),
        _ => Err(String::from("the fragile supervisor did not end")),
    }
}

/// Waits (a second at most) until `supervisor` has made `restarts` restarts.
fn wait_for_restarts(supervisor: Pid, restarts: u64) -> bool {
    for _ in 0..1_000 {
        if supervisor::restart_count(supervisor) == Ok(restarts) {
            return true;
        }
        sched::sleep(1_000);
    }
    false
}

/// The exit signal of `from` (we trap exits): its reason.
fn exit_of(from: Pid) -> Option<ExitReason> {
    let theirs = |message: &Message| matches!(message, Message::Exit { from: f, .. } if *f == from);
    match sched::receive_matching_timeout(MUST_ARRIVE_US, theirs)? {
        Message::Exit { reason, .. } => Some(reason),
        _ => None,
    }
}

beamcore::entry!(main);
