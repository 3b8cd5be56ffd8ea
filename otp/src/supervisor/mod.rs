//! OTP's supervisor: a process that starts its children, restarts them by a policy when they
//! end, and gives up (stops them all and ends with `Shutdown`) when restarts come too often,
//! so that a crash is handled where the state that caused it can be thrown away.
//!
//! A supervisor is linked to its parent and to each child, and traps exits: a child's end
//! arrives as a `Message::Exit`, the parent's exit signal stops the tree in order (the children
//! in reverse start order, each as its [`Shutdown`] says), and the supervisor's own end reaches
//! the parent through the link. A supervisor can be another's child
//! ([`ChildSpec::supervisor`]), which makes a tree.
//!
//! The queries ([`which_children`], [`count_children`], [`restart_count`]) are calls to the
//! supervisor's process: answered between two of its decisions, never in the middle of one.

mod intensity;
mod process;
mod spec;
mod terminate;

use alloc::borrow::Cow;
use alloc::vec::Vec;

use beamcore::sched::{Pid, SpawnOptions};

use self::process::{Query, Report, Supervisor};
use crate::server::{self, CallError};
use crate::start::StartError;

pub use spec::{ChildSpec, Intensity, Restart, Shutdown, StartFn, Strategy};

/// A child as [`which_children`] reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChildInfo {
    /// Its id ([`ChildSpec::id`]).
    pub id: Cow<'static, str>,
    /// Its process, `None` while it does not run (it ended and is not restarted, or its
    /// restart failed and waits to be tried again).
    pub pid: Option<Pid>,
}

/// How many children a supervisor has.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ChildCounts {
    /// Children it knows (temporary ones leave when they end).
    pub specs: usize,
    /// Children running now.
    pub active: usize,
}

/// Starts a supervisor linked to the caller, which starts `children` in order before this
/// returns. Fails with `StartError::Init(Shutdown)` if a child fails to start (the ones
/// started are stopped first), `DuplicateChildId` if two children share an id.
pub fn start_link(strategy: Strategy, intensity: Intensity, children: Vec<ChildSpec>) -> Result<Pid, StartError> {
    start_link_with(SpawnOptions::default(), strategy, intensity, children)
}

/// [`start_link`] with the supervisor's own spawn options (its core, its priority).
pub fn start_link_with(
    options: SpawnOptions,
    strategy: Strategy,
    intensity: Intensity,
    children: Vec<ChildSpec>,
) -> Result<Pid, StartError> {
    let duplicate = children.iter().enumerate().any(|(i, a)| children[..i].iter().any(|b| a.id == b.id));
    if duplicate {
        return Err(StartError::DuplicateChildId);
    }
    server::start_link(Supervisor::new(strategy, intensity, children), options)
}

/// Each child's id and process, in start order (Erlang's `supervisor:which_children`).
pub fn which_children(supervisor: Pid) -> Result<Vec<ChildInfo>, CallError> {
    match server::call::<Supervisor>(supervisor, Query::WhichChildren, None)? {
        Report::Children(children) => Ok(children),
        _ => unreachable!("a supervisor answers a query with its report"),
    }
}

/// How many children the supervisor knows and how many run (Erlang's
/// `supervisor:count_children`).
pub fn count_children(supervisor: Pid) -> Result<ChildCounts, CallError> {
    match server::call::<Supervisor>(supervisor, Query::Count, None)? {
        Report::Count(counts) => Ok(counts),
        _ => unreachable!("a supervisor answers a query with its report"),
    }
}

/// Restarts the supervisor has made since it started, the count the intensity limits: one per
/// child's end that its policy restarted (a `OneForAll` restart of every child is one), and one
/// per retry of a restart whose start failed.
pub fn restart_count(supervisor: Pid) -> Result<u64, CallError> {
    match server::call::<Supervisor>(supervisor, Query::Restarts, None)? {
        Report::Restarts(count) => Ok(count),
        _ => unreachable!("a supervisor answers a query with its report"),
    }
}
