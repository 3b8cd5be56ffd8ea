//! supervision-tree: a root supervisor over a registered server (the tally), a pool of workers
//! that crash at random and a fragile subtree (src/lib.rs draws the tree). The program runs the
//! jobs through the crashing pool, causes one outage that the fragile subtree cannot ride out,
//! then checks that the tree reacted as OTP's would, stops it, prints its verdict and exits
//! with it.

#![no_std]
#![no_main]

extern crate alloc;

use alloc::format;
use alloc::string::String;

use beamcore::sched::{self, ExitReason, Message, Pid};
use beamcore::{ExitCode, println, smp, time};
use beamcore_otp::supervisor;
use supervision_tree::fragile::{self, Device};
use supervision_tree::pool::Crashes;
use supervision_tree::tally::{self, Summary};
use supervision_tree::{jobs, tree};

/// Jobs the pool does.
const JOBS: u32 = 256;
/// Workers in the pool.
const WORKERS: usize = 8;
/// How long a wait for something that must come may take (guest time).
const MUST_ARRIVE_US: u64 = 60_000_000;

static CRASHES: Crashes = Crashes::new();
static DEVICE: Device = Device::new();

/// Returns early from `run` with the reason, formatted, if the condition does not hold.
macro_rules! check {
    ($condition:expr, $($why:tt)+) => {
        if !$condition {
            return Err(format!($($why)+));
        }
    };
}

fn main() -> ExitCode {
    let started = time::now_count();
    match run() {
        Ok(figures) => {
            let ms = time::counts_to_us(time::now_count() - started) / 1000;
            println!("supervision-tree: ok: {figures}; {ms} ms");
            ExitCode::Success
        }
        Err(why) => {
            println!("supervision-tree: FAILED: {why}");
            ExitCode::Failure(1)
        }
    }
}

/// The whole run; its figures, or why it failed.
fn run() -> Result<String, String> {
    // The root is linked to us: trapping exits, its end is a message here instead of ours.
    sched::trap_exits(true);
    let baseline = sched::process_count();
    let expected = jobs::expected_total(JOBS);

    let config = tree::Config { jobs: JOBS, workers: WORKERS, crashes: &CRASHES, device: &DEVICE };
    let root = tree::start_link(config).map_err(|error| format!("the tree did not start: {error}"))?;
    let tally = sched::whereis(tally::NAME).ok_or("the tally is not registered")?;
    let pool = tree::child(root, "pool").ok_or("the pool does not run")?;
    println!("supervision-tree: root {root} started tally {tally}, pool {pool} ({WORKERS} workers) and fragile");

    // While the pool works, an outage the fragile subtree cannot ride out.
    outage(root)?;
    let summary = tally::await_done(MUST_ARRIVE_US).map_err(|error| format!("waiting for the jobs: {error}"))?;
    check_jobs(&summary, expected)?;
    let crashes = check_pool(pool, &summary)?;
    check_root(root, tally, pool)?;

    stop(root)?;
    check!(
        tree::back_to(baseline),
        "{} processes alive after the stop, {baseline} before the start",
        sched::process_count()
    );
    check!(sched::whereis(tally::NAME).is_none(), "the name {} is still registered", tally::NAME);

    Ok(format!(
        "{JOBS} jobs summed to {:#x} on {}, each counted once, while {WORKERS} workers crashed {crashes} times \
         ({} panics, {} faults) and were restarted, their jobs re-issued; the device refused {} connections, \
         the fragile supervisor gave up, the root restarted it once; tally {tally} kept its pid; \
         no process left over ({baseline} alive, as before the start); {}",
        summary.sum,
        cores(smp::cores_online()),
        CRASHES.panics(),
        CRASHES.faults(),
        DEVICE.refused(),
        match sched::heap_not_reclaimed_bytes() {
            Ok(bytes) => format!("{bytes} heap bytes left by the faults (panics unwind)"),
            Err(not) => format!("heap bytes left by the faults: {not}"),
        },
    ))
}

/// The outage: the device refuses one connection more than the fragile supervisor has restarts
/// in it, so flaky's crashes exceed its intensity; it must end with `Shutdown` and the root must
/// start it afresh.
fn outage(root: Pid) -> Result<(), String> {
    let before = tree::child(root, "fragile").ok_or("the fragile supervisor does not run")?;
    let watch = sched::monitor(before).map_err(|_| "no memory for a monitor")?;
    let refusals = fragile::INTENSITY.max_restarts + 1;
    DEVICE.outage(refusals);
    fragile::reconnect(before)?;
    let reason = down(watch).ok_or("the fragile supervisor did not end")?;
    check!(reason == ExitReason::Shutdown, "the fragile supervisor ended with {reason}, not shutdown");
    check!(DEVICE.refused() == refusals, "the device refused {} connections, not {refusals}", DEVICE.refused());
    // The root had the fragile supervisor's exit signal before we had its `Down` (the kernel
    // tells the links first) and answers our query after it: by then it has restarted it.
    let after = tree::child(root, "fragile").ok_or("the root did not restart the fragile supervisor")?;
    check!(after != before, "the fragile supervisor kept its pid {before}");
    println!(
        "supervision-tree: the device refused {refusals} connections; fragile {before} gave up ({reason}), \
         the root restarted it as {after}"
    );
    Ok(())
}

/// Every job counted exactly once, to the total computed alone.
fn check_jobs(summary: &Summary, expected: u64) -> Result<(), String> {
    check!(summary.duplicates == 0, "{} results were counted twice", summary.duplicates);
    check!(summary.counted == JOBS, "{} of {JOBS} jobs counted", summary.counted);
    check!(summary.sum == expected, "the tally's sum is {:#x}, alone it is {expected:#x}", summary.sum);
    Ok(())
}

/// The pool restarted one worker per crash, and the tally re-issued one job per crash (a
/// worker crashes only while it holds a job); returns the crashes.
fn check_pool(pool: Pid, summary: &Summary) -> Result<u32, String> {
    let crashes = CRASHES.panics() + CRASHES.faults();
    let restarts = supervisor::restart_count(pool).map_err(|error| format!("the pool's restarts: {error}"))?;
    check!(crashes > 0, "no worker crashed (1 in 8 jobs should)");
    check!(restarts == u64::from(crashes), "the pool made {restarts} restarts for {crashes} crashes");
    check!(summary.reissued == crashes, "the tally re-issued {} jobs for {crashes} crashes", summary.reissued);
    Ok(crashes)
}

/// The root restarted the fragile supervisor, once, and nothing else: the tally and the pool
/// kept their pids, and the new fragile supervisor needed no restart.
fn check_root(root: Pid, tally: Pid, pool: Pid) -> Result<(), String> {
    let restarts = supervisor::restart_count(root).map_err(|error| format!("the root's restarts: {error}"))?;
    check!(restarts == 1, "the root made {restarts} restarts, not 1");
    check!(sched::whereis(tally::NAME) == Some(tally), "the tally's name moved from {tally}");
    check!(tree::child(root, "tally") == Some(tally), "the tally is no longer {tally}");
    check!(tree::child(root, "pool") == Some(pool), "the pool is no longer {pool}");
    let fragile = tree::child(root, "fragile").ok_or("the fragile supervisor does not run")?;
    let restarts = supervisor::restart_count(fragile).map_err(|error| format!("fragile's restarts: {error}"))?;
    check!(restarts == 0, "the new fragile supervisor made {restarts} restarts");
    Ok(())
}

/// Stops the tree as its parent does: an exit signal `Shutdown`. The root stops its children,
/// the last started first, each subtree its own the same way, then ends.
fn stop(root: Pid) -> Result<(), String> {
    sched::send_exit(root, ExitReason::Shutdown).map_err(|error| format!("stopping the root: {error}"))?;
    let exited = |message: &Message| matches!(message, Message::Exit { from, .. } if *from == root);
    match sched::receive_matching_timeout(MUST_ARRIVE_US, exited) {
        Some(Message::Exit { reason: ExitReason::Shutdown, .. }) => Ok(()),
        Some(Message::Exit { reason, .. }) => Err(format!("the root ended with {reason}, not shutdown")),
        _ => Err(String::from("the root did not end")),
    }
}

fn cores(count: usize) -> String {
    if count == 1 { String::from("1 core") } else { format!("{count} cores") }
}

/// The `Down` of the monitor `watch`: its reason.
fn down(watch: sched::Ref) -> Option<ExitReason> {
    let ours = |message: &Message| matches!(message, Message::Down { reference, .. } if *reference == watch);
    match sched::receive_matching_timeout(MUST_ARRIVE_US, ours)? {
        Message::Down { reason, .. } => Some(reason),
        _ => None,
    }
}

beamcore::entry!(main);
