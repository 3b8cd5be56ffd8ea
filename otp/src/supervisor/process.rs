//! The supervisor's process: its children and the decisions it makes when one ends. It is a
//! [`Server`] (OTP's supervisor is a `gen_server` too), so it gets the synchronous start, the
//! calls that answer queries and the orderly stop on its parent's exit signal from there, and
//! this file holds only what is the supervisor's own.

use alloc::vec::Vec;

use beamcore::sched::{self, ExitReason, Message, Pid};

use super::intensity::RestartWindow;
use super::spec::{ChildSpec, Intensity, Restart, Strategy};
use super::terminate::terminate;
use super::{ChildCounts, ChildInfo};
use crate::server::{Answer, Caller, Control, Server};

/// A child and the process running it (`None` while it is not running: it ended and is not to be
/// restarted, or its restart failed and is to be tried again).
struct Child {
    spec: ChildSpec,
    pid: Option<Pid>,
    /// Names the child for a retry sent through the queue, where an index would go stale
    /// (temporary children leave the list).
    key: u64,
}

/// A restart that failed, to try again from the loop: through the queue, so that what came
/// meanwhile (the parent's exit signal, a query) is served between the attempts, and each
/// attempt counts against the intensity, which ends a supervisor whose child cannot start.
#[derive(Clone, Copy)]
struct Retry(u64);

/// What a supervisor is asked.
pub(super) enum Query {
    WhichChildren,
    Count,
    Restarts,
}

/// Its answers, one per [`Query`].
pub(super) enum Report {
    Children(Vec<ChildInfo>),
    Count(ChildCounts),
    Restarts(u64),
}

/// A supervisor's state.
pub(super) struct Supervisor {
    strategy: Strategy,
    window: RestartWindow,
    children: Vec<Child>,
    restarts: u64,
}

impl Supervisor {
    pub(super) fn new(strategy: Strategy, intensity: Intensity, specs: Vec<ChildSpec>) -> Supervisor {
        let children = specs.into_iter().zip(0..).map(|(spec, key)| Child { spec, pid: None, key }).collect();
        Supervisor { strategy, window: RestartWindow::new(intensity), children, restarts: 0 }
    }

    /// Starts the child at `index`; false if its start failed.
    fn start_child(&mut self, index: usize) -> bool {
        let child = &mut self.children[index];
        match (child.spec.start)() {
            Ok(pid) => {
                // Linking twice is linking once: this only matters for a start function that
                // did not link, whose child would otherwise end unseen.
                let _ = sched::link(pid);
                child.pid = Some(pid);
                true
            }
            Err(_) => false,
        }
    }

    /// Stops every running child, the last started first.
    fn terminate_all(&mut self) {
        for child in self.children.iter_mut().rev() {
            if let Some(pid) = child.pid.take() {
                terminate(pid, child.spec.shutdown);
            }
        }
    }

    /// A child's process ended with `reason`: restart it (and its dependants) if its policy
    /// says so.
    fn child_ended(&mut self, pid: Pid, reason: ExitReason) -> Control {
        // Not a child's: one stopped in order (its exit signal was taken out) cannot be here,
        // so it is a start that failed after linking, or a process linked by hand; ignored.
        let Some(index) = self.children.iter().position(|child| child.pid == Some(pid)) else {
            return Control::Continue;
        };
        self.children[index].pid = None;
        match self.children[index].spec.restart {
            Restart::Temporary => {
                self.children.remove(index);
                Control::Continue
            }
            Restart::Transient if matches!(reason, ExitReason::Normal | ExitReason::Shutdown) => Control::Continue,
            Restart::Transient | Restart::Permanent => self.restart(index),
        }
    }

    /// Restarts the child at `index` by the strategy, if the intensity allows another restart.
    fn restart(&mut self, index: usize) -> Control {
        if !self.window.allow() {
            return Control::Stop(ExitReason::Shutdown);
        }
        self.restarts += 1;
        let range = match self.strategy {
            Strategy::OneForOne => index..index + 1,
            Strategy::OneForAll => 0..self.children.len(),
            Strategy::RestForOne => index..self.children.len(),
        };
        let keys: Vec<u64> = self.children[range.clone()].iter().map(|child| child.key).collect();
        for child in self.children[range].iter_mut().rev() {
            if let Some(pid) = child.pid.take() {
                terminate(pid, child.spec.shutdown);
            }
        }
        // Temporary children stopped for a sibling's sake are not restarted: forgotten, as OTP
        // does (the one that ended is not among them: a temporary child is never restarted).
        self.children.retain(|child| !(child.spec.restart == Restart::Temporary && keys.contains(&child.key)));
        for index in 0..self.children.len() {
            if !keys.contains(&self.children[index].key) {
                continue;
            }
            if !self.start_child(index) {
                // The rest waits for the retry, which restarts by the strategy again.
                let me = sched::self_pid().expect("the supervisor is a process");
                if sched::send_value(me, Retry(self.children[index].key)).is_err() {
                    // Without memory for the retry, the tree cannot be kept whole.
                    return Control::Stop(ExitReason::Shutdown);
                }
                break;
            }
        }
        Control::Continue
    }

    /// A retry of a failed restart: still needed if the child exists and does not run.
    fn retry(&mut self, key: u64) -> Control {
        match self.children.iter().position(|child| child.key == key && child.pid.is_none()) {
            Some(index) => self.restart(index),
            None => Control::Continue,
        }
    }
}

impl Server for Supervisor {
    type Call = Query;
    type Reply = Report;
    type Cast = core::convert::Infallible;

    /// Traps exits (its children's ends arrive as messages) and starts the children in order;
    /// if one fails to start, the ones started are stopped and the supervisor does not start.
    fn init(&mut self) -> Result<(), ExitReason> {
        sched::trap_exits(true);
        for index in 0..self.children.len() {
            if !self.start_child(index) {
                self.terminate_all();
                return Err(ExitReason::Shutdown);
            }
        }
        Ok(())
    }

    fn handle_call(&mut self, query: Query, _caller: Caller<Report>) -> Answer<Report> {
        Answer::Reply(match query {
            Query::WhichChildren => Report::Children(
                self.children.iter().map(|child| ChildInfo { id: child.spec.id.clone(), pid: child.pid }).collect(),
            ),
            Query::Count => Report::Count(ChildCounts {
                specs: self.children.len(),
                active: self.children.iter().filter(|child| child.pid.is_some()).count(),
            }),
            Query::Restarts => Report::Restarts(self.restarts),
        })
    }

    fn handle_info(&mut self, message: Message) -> Control {
        match message {
            Message::Exit { from, reason } => self.child_ended(from, reason),
            other => match other.take::<Retry>() {
                Ok(Retry(key)) => self.retry(key),
                // Nobody else should write to a supervisor; dropped, so it does not pile up.
                Err(_) => Control::Continue,
            },
        }
    }

    /// Stops the children, the last started first, before the supervisor itself ends: its
    /// parent sees it end only once nothing below it runs.
    fn terminate(&mut self, _reason: ExitReason) {
        self.terminate_all();
    }
}
