//! The root of the tree: a one_for_one supervisor over the tally, the pool and the fragile
//! subtree, started in that order (the workers need the tally's name) and stopped in the
//! reverse one (no worker outlives the tally it reports to).

use alloc::vec;

use beamcore::sched::{Pid, SpawnOptions};
use beamcore_otp::server;
use beamcore_otp::start::StartError;
use beamcore_otp::supervisor::{self, ChildSpec, Intensity, Strategy};

use crate::fragile::{self, Device};
use crate::pool::{self, Crashes};
use crate::tally::Tally;

/// The root's patience: OTP's default, 1 restart in 5 s. A subtree that gives up once is
/// restarted; a second time within 5 s, and the root gives up too (tests/escalation.rs).
pub const INTENSITY: Intensity = Intensity { max_restarts: 1, period_us: 5_000_000 };

/// What the tree is made with.
#[derive(Clone, Copy)]
pub struct Config {
    /// Jobs the tally hands out.
    pub jobs: u32,
    /// Workers in the pool.
    pub workers: usize,
    /// Where the workers count their crashes.
    pub crashes: &'static Crashes,
    /// The device the fragile subtree's child needs.
    pub device: &'static Device,
}

/// Starts the tree, linked to the caller; returns the root supervisor once every child runs.
pub fn start_link(config: Config) -> Result<Pid, StartError> {
    let Config { jobs, workers, crashes, device } = config;
    let children = vec![
        ChildSpec::worker("tally", move || server::start_link(Tally::new(jobs), SpawnOptions::default())),
        ChildSpec::supervisor("pool", move || pool::start_link(workers, crashes)),
        ChildSpec::supervisor("fragile", move || fragile::start_link(device)),
    ];
    supervisor::start_link(Strategy::OneForOne, INTENSITY, children)
}

/// The pid of `supervisor`'s child `id`, if it runs.
pub fn child(supervisor: Pid, id: &str) -> Option<Pid> {
    let children = supervisor::which_children(supervisor).ok()?;
    children.into_iter().find(|child| child.id == id)?.pid
}

/// Waits (a second at most) until as many processes are alive as `baseline`: a tree that was
/// told to stop ends its processes one by one, and the last ends a little after the root's
/// `Down` (each process is counted out when it has ended, after its signals went).
pub fn back_to(baseline: usize) -> bool {
    for _ in 0..1_000 {
        if beamcore::sched::process_count() == baseline {
            return true;
        }
        beamcore::sched::sleep(1_000);
    }
    false
}
