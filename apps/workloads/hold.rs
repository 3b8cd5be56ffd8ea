//! `hold`: as many processes alive at once as asked (or as memory allows), each blocked in
//! `receive` until it answers its token, and what it measured ([`HoldRun`]): the peak, memory
//! per process and the times to spawn and to end them.

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicU64, Ordering};

use beamcore::sched::{self, Message, Pid, SpawnOptions};
use beamcore::smp;

use super::{END_GRACE_US, Outcome, end_all, wait_for_processes_to_end};

/// What the hold workload measured (for the report line of `make run`).
#[derive(Clone, Copy, Debug)]
pub struct HoldRun {
    /// Processes alive at once at the peak (the workload's own; main not counted).
    pub peak: u64,
    /// RAM in use at the peak over RAM in use before, per process (`sched::memory_in_use`).
    pub bytes_per_process: u64,
    /// Guest time to spawn them all and see each blocked in `receive`, and then to message
    /// every one, collect its answer and see all of them ended, in µs.
    pub spawn_us: u64,
    pub end_us: u64,
    /// Why spawning stopped before the count asked for (or, with `processes=0`, at all).
    pub spawn_error: Option<sched::SpawnError>,
    /// Processes that answered their token correctly (each once), and whether all of them had
    /// ended in time afterwards.
    pub answered: u64,
    pub all_ended: bool,
}

static LAST_HOLD: spin::Mutex<Option<HoldRun>> = spin::Mutex::new(None);

/// The last hold run's measurements, if any.
pub fn last_hold() -> Option<HoldRun> {
    *LAST_HOLD.lock()
}

/// The token main sends process `i`, and the answer it expects back.
fn hold_token(i: u64) -> u64 {
    i.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 32
}

fn hold_answer(i: u64, token: u64) -> u64 {
    i << 32 | (token ^ 0xa5a5_a5a5)
}

/// `workload=hold`: `processes` processes alive at once (0: as many as memory allows), spread
/// over the cores, each blocked in `receive` (default options: the default stack, of which one
/// page is mapped); then each is sent a token and must answer it, exactly once, and end. When
/// spawning fails first (memory, or `max_processes`), the workload goes on with the processes
/// it has: it reports the count it reached and why it stopped, and fails unless `processes=0`
/// asked for as many as fit. Reports the peak, the memory per process and the times.
pub fn hold(processes: usize) -> Outcome {
    static READY: AtomicU64 = AtomicU64::new(0);
    let me = sched::self_pid().expect("run from a process");
    let cores = smp::cores_online();
    let baseline = sched::process_count();
    let memory_before = sched::memory_in_use();
    let started = beamcore::time::now_count();
    READY.store(0, Ordering::Relaxed);
    let wanted = if processes == 0 { usize::MAX } else { processes };
    let mut pids: Vec<Pid> = Vec::new();
    if processes > 0 && pids.try_reserve_exact(processes).is_err() {
        return Outcome { ok: false, detail: format!("hold: no memory to record {processes} pids"), processes: 0 };
    }
    let mut spawn_error = None;
    let mut bookkeeping_full = false;
    while pids.len() < wanted {
        if pids.len() == pids.capacity() && pids.try_reserve(pids.len().max(4096)).is_err() {
            bookkeeping_full = true;
            break;
        }
        let i = pids.len() as u64;
        let options = SpawnOptions::default().on_core(pids.len() % cores);
        let spawned = sched::spawn_with(options, move || {
            READY.fetch_add(1, Ordering::Relaxed);
            let Message::Word(token) = sched::receive() else { return };
            // Main's mailbox may be full for the moment (the kernel keeps its reserve): main
            // keeps draining it, so try again after letting others run.
            while let Err(sched::SendError::OutOfMemory(_)) = sched::send(me, Message::Word(hold_answer(i, token))) {
                sched::yield_now();
            }
        });
        match spawned {
            Ok(pid) => pids.push(pid),
            Err(error) => {
                spawn_error = Some(error);
                break;
            }
        }
    }
    let peak = pids.len();
    let alive = sched::process_count() - baseline;
    // Every process blocked in `receive`: the state whose memory is measured.
    let deadline = beamcore::time::now_count() + beamcore::time::us_to_counts(120_000_000);
    while (READY.load(Ordering::Relaxed) as usize) < peak && beamcore::time::now_count() < deadline {
        sched::yield_now();
    }
    let ready = READY.load(Ordering::Relaxed) as usize;
    let memory_at_peak = sched::memory_in_use();
    let spawned_at = beamcore::time::now_count();
    let bytes_per_process = (memory_at_peak.saturating_sub(memory_before) / peak.max(1)) as u64;

    // Message every one, collecting answers as they come (every 256 sends), so main's mailbox
    // holds a few hundred answers at a time rather than all of them.
    let mut answered: Vec<u8> = Vec::new();
    if answered.try_reserve_exact(peak).is_err() {
        end_all(&pids);
        return Outcome {
            ok: false,
            detail: format!("hold: no memory to check {peak} answers"),
            processes: peak as u64,
        };
    }
    answered.resize(peak, 0);
    let (mut count, mut problems, mut unsent) = (0usize, 0u64, 0u64);
    let mut take = |message: Message, count: &mut usize, problems: &mut u64| match message {
        Message::Word(word) => {
            let i = (word >> 32) as usize;
            if i < peak && word == hold_answer(i as u64, hold_token(i as u64)) && answered[i] == 0 {
                answered[i] = 1;
                *count += 1;
            } else {
                *problems += 1;
            }
        }
        _ => *problems += 1,
    };
    for (i, &pid) in pids.iter().enumerate() {
        if sched::send(pid, Message::Word(hold_token(i as u64))).is_err() {
            unsent += 1;
        }
        if i % 256 == 255 {
            while let Some(message) = sched::receive_timeout(0) {
                take(message, &mut count, &mut problems);
            }
        }
    }
    while count + ((problems + unsent) as usize) < peak {
        match sched::receive_timeout(120_000_000) {
            Some(message) => take(message, &mut count, &mut problems),
            None => break,
        }
    }
    let ended = wait_for_processes_to_end(baseline, END_GRACE_US);
    let end_us = beamcore::time::counts_to_us(beamcore::time::now_count() - spawned_at);
    let spawn_us = beamcore::time::counts_to_us(spawned_at - started);
    *LAST_HOLD.lock() = Some(HoldRun {
        peak: peak as u64,
        bytes_per_process,
        spawn_us,
        end_us,
        spawn_error,
        answered: count as u64,
        all_ended: ended.is_ok(),
    });
    let each = if peak > 0 { format!(", {bytes_per_process} bytes each") } else { String::new() };
    let mut detail = format!(
        "held {peak} processes alive at once{each}; spawned and blocked in {} ms, messaged, answered and ended in {} \
         ms",
        spawn_us / 1000,
        end_us / 1000
    );
    let mut ok = true;
    if let Some(error) = spawn_error {
        detail += &format!("; spawn {} failed: {error}", peak + 1);
        ok &= processes == 0 && matches!(error, sched::SpawnError::OutOfMemory(_) | sched::SpawnError::TableFull);
    }
    if bookkeeping_full {
        detail += "; stopped: no memory to record another pid";
        ok &= processes == 0;
    }
    if alive != peak || ready != peak {
        detail += &format!("; {alive} alive and {ready} blocked in receive at the peak, expected {peak}");
        ok = false;
    }
    if count != peak || problems != 0 || unsent != 0 {
        detail += &format!("; {count} of {peak} answered, {problems} wrong or repeated answers, {unsent} not sent");
        ok = false;
    }
    if let Err(why) = ended {
        detail += &format!("; {why}");
        ok = false;
    }
    Outcome { ok, detail, processes: peak as u64 }
}
