//! What a supervisor is told: its children (how to start each, when to restart it, how to stop
//! it), its strategy and how many restarts it tolerates before it gives up.

use alloc::borrow::Cow;
use alloc::sync::Arc;

use beamcore::sched::Pid;

use crate::start::StartError;

/// Starts a child: a function, not a closure called once, because a restart starts the child
/// again from scratch.
pub type StartFn = Arc<dyn Fn() -> Result<Pid, StartError> + Send + Sync>;

/// One child of a supervisor (OTP's child specification).
#[derive(Clone)]
pub struct ChildSpec {
    /// Names the child among its siblings (in `which_children`); unique within a supervisor.
    pub id: Cow<'static, str>,
    /// Starts the child, in the supervisor's process, and returns its pid. The process must be
    /// linked to the caller (the supervisor): `sched::spawn_link`, `server::start_link`,
    /// `supervisor::start_link`. The supervisor links to it too, to be safe, but a child that
    /// ends before that link exists is only seen to end with `NoProc`, its reason lost.
    ///
    /// It should return once the child is ready, as `server::start_link` does (it waits for
    /// `init`): the next child may depend on it, and a child stopped before it has set
    /// `trap_exits` ends at once, without its cleanup.
    pub start: StartFn,
    /// When the child is restarted.
    pub restart: Restart,
    /// How the child is stopped when the supervisor stops it.
    pub shutdown: Shutdown,
}

impl ChildSpec {
    /// A worker: `Permanent`, given 5 seconds to stop (OTP's defaults for a worker). `start`'s
    /// error may be a `SpawnError` (a plain `sched::spawn_link`) or a `StartError`.
    pub fn worker<F, E>(id: impl Into<Cow<'static, str>>, start: F) -> ChildSpec
    where
        F: Fn() -> Result<Pid, E> + Send + Sync + 'static,
        E: Into<StartError>,
    {
        ChildSpec {
            id: id.into(),
            start: Arc::new(move || start().map_err(Into::into)),
            restart: Restart::Permanent,
            shutdown: Shutdown::Timeout(5_000_000),
        }
    }

    /// A supervisor as a child: `Permanent`, and as long as it needs to stop (`Infinity`, OTP's
    /// default for a supervisor child), since it stops its own children first, each with its own
    /// timeout.
    pub fn supervisor<F, E>(id: impl Into<Cow<'static, str>>, start: F) -> ChildSpec
    where
        F: Fn() -> Result<Pid, E> + Send + Sync + 'static,
        E: Into<StartError>,
    {
        ChildSpec { shutdown: Shutdown::Infinity, ..ChildSpec::worker(id, start) }
    }

    /// The same child with another restart policy.
    pub fn restart(mut self, restart: Restart) -> ChildSpec {
        self.restart = restart;
        self
    }

    /// The same child with another shutdown.
    pub fn shutdown(mut self, shutdown: Shutdown) -> ChildSpec {
        self.shutdown = shutdown;
        self
    }
}

/// When a child that ended is started again.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Restart {
    /// Always: a service that must be there.
    Permanent,
    /// Only if it ended abnormally (any reason but `Normal` and `Shutdown`): a job that may
    /// finish.
    Transient,
    /// Never, and it is forgotten when it ends (it leaves `which_children`): a process the
    /// supervisor only tracks so that it is stopped with the tree.
    Temporary,
}

/// How the supervisor stops a child.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shutdown {
    /// `kill` at once: the child cannot clean up.
    Brutal,
    /// An exit signal `Shutdown`, then `kill` if it has not ended after this many microseconds:
    /// a child that traps exits gets the time to finish, one that hangs cannot hold the tree.
    Timeout(u64),
    /// An exit signal `Shutdown`, and as long a wait as it takes: for a child that is itself a
    /// supervisor, whose own children have their own timeouts.
    Infinity,
}

/// Which children a child's restart takes with it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Strategy {
    /// Only that child: the children do not depend on each other.
    #[default]
    OneForOne,
    /// All children: each depends on all the others. The others are stopped in reverse start
    /// order, then all started in order.
    OneForAll,
    /// That child and the ones started after it: each depends on those before it. The later
    /// ones are stopped in reverse order, then all of them started in order.
    RestForOne,
}

/// How many restarts a supervisor makes before it concludes that restarting does not help:
/// more than `max_restarts` within `period_us`, and it stops all its children and ends with
/// `Shutdown`, leaving the problem to its own supervisor.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Intensity {
    /// Restarts tolerated within the period.
    pub max_restarts: u32,
    /// The period, in microseconds.
    pub period_us: u64,
}

impl Default for Intensity {
    /// OTP's default, 1 restart in 5 seconds: a child that crashes twice in a row is not fixed by
    /// a restart, and the tree above is told soon.
    fn default() -> Self {
        Intensity { max_restarts: 1, period_us: 5_000_000 }
    }
}
