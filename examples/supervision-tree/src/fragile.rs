//! The fragile subtree: a supervisor with little patience (2 restarts in 10 s) over one child,
//! `flaky`, which cannot live without its connection to a device. A short outage is ridden out
//! by restarting flaky; a longer one outlasts the supervisor's patience: it gives up, stops its
//! child and ends with `Shutdown`, leaving the problem to its own supervisor, the root, which
//! starts the subtree afresh.

use alloc::vec;
use core::sync::atomic::{AtomicU32, Ordering};

use beamcore::sched::{self, ExitReason, Message, Pid, SpawnOptions};
use beamcore_otp::start::StartError;
use beamcore_otp::supervisor::{self, ChildSpec, Intensity, Strategy};

/// The fragile supervisor's patience: restarts within the period before it gives up.
pub const INTENSITY: Intensity = Intensity { max_restarts: 2, period_us: 10_000_000 };

/// The word that tells flaky to connect again.
pub const RECONNECT: u64 = 1;

/// A stand-in for a device: it accepts connections, except during an outage.
pub struct Device {
    /// Connections still to be refused.
    outage: AtomicU32,
    attempts: AtomicU32,
    refused: AtomicU32,
}

impl Device {
    pub const fn new() -> Device {
        Device { outage: AtomicU32::new(0), attempts: AtomicU32::new(0), refused: AtomicU32::new(0) }
    }

    /// An outage: the next `connections` connection attempts are refused.
    pub fn outage(&self, connections: u32) {
        // ORDERING: Relaxed: the reconnect message sent after this orders it before the
        // attempts it is meant for.
        self.outage.store(connections, Ordering::Relaxed);
    }

    /// Connection attempts made.
    pub fn attempts(&self) -> u32 {
        // ORDERING: Relaxed: a count for the report.
        self.attempts.load(Ordering::Relaxed)
    }

    /// Connection attempts refused.
    pub fn refused(&self) -> u32 {
        // ORDERING: Relaxed: a count for the report.
        self.refused.load(Ordering::Relaxed)
    }

    /// One attempt to connect: false during an outage.
    fn connect(&self) -> bool {
        // ORDERING: Relaxed: counts; the outage's own order is the message's (see `outage`).
        self.attempts.fetch_add(1, Ordering::Relaxed);
        let refused = self.outage.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1)).is_ok();
        if refused {
            self.refused.fetch_add(1, Ordering::Relaxed);
        }
        !refused
    }
}

impl Default for Device {
    fn default() -> Self {
        Device::new()
    }
}

/// Starts the fragile supervisor, linked to the caller, and flaky under it.
pub fn start_link(device: &'static Device) -> Result<Pid, StartError> {
    let flaky = ChildSpec::worker("flaky", move || start_flaky(device));
    supervisor::start_link(Strategy::OneForOne, INTENSITY, vec![flaky])
}

/// flaky's word to its starter that it has tried the device (and connected, or is about to
/// crash).
struct Attempted;

/// Starts flaky (in the supervisor's process) and returns once it has tried the device, so
/// that "started" means "has connected or crashed": an outage that begins after the start
/// cannot be mistaken for the start's own attempt.
fn start_flaky(device: &'static Device) -> Result<Pid, StartError> {
    let supervisor = sched::self_pid().expect("a supervisor is a process");
    let pid = sched::spawn_link(SpawnOptions::default(), move || flaky(device, supervisor))?;
    match sched::receive_value_timeout::<Attempted>(ATTEMPT_TIMEOUT_US) {
        Some(Attempted) => Ok(pid),
        None => Err(StartError::Init(ExitReason::NoProc)),
    }
}

/// How long flaky's starter waits for its first attempt (guest time).
const ATTEMPT_TIMEOUT_US: u64 = 10_000_000;

/// Connects (telling its starter it has tried), then serves until told to reconnect. A refused
/// connection is a crash: flaky cannot do its work without the device, and a fresh start is its
/// supervisor's business.
fn flaky(device: &'static Device, starter: Pid) {
    let mut starter = Some(starter);
    loop {
        let connected = device.connect();
        if let Some(starter) = starter.take() {
            let _ = sched::send_value(starter, Attempted);
        }
        if !connected {
            panic!("flaky: the device refused the connection");
        }
        sched::receive_matching(|message| matches!(message, Message::Word(RECONNECT)));
    }
}

/// Tells the flaky child of the fragile supervisor `fragile` to connect again.
pub fn reconnect(fragile: Pid) -> Result<(), &'static str> {
    let children = supervisor::which_children(fragile).map_err(|_| "the fragile supervisor does not answer")?;
    let flaky = children.first().and_then(|child| child.pid).ok_or("flaky does not run")?;
    sched::send(flaky, Message::Word(RECONNECT)).map_err(|_| "flaky has ended")
}
