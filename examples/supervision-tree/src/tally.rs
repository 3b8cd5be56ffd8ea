//! The tally: a generic server, registered under [`NAME`], that hands out the jobs and counts
//! their results.
//!
//! Workers come and go (they crash, the pool restarts them); the tally is what must not lose
//! track. It monitors every worker it gives a job to. A worker that crashes sends no report,
//! but its `Down` comes, and its job goes back in the queue for the next worker. The kernel
//! delivers a process's `Down` after every message it sent before it ended, so a report always
//! arrives before its sender's `Down`: a job is never both counted and handed out again.

use alloc::collections::VecDeque;
use alloc::vec;
use alloc::vec::Vec;

use beamcore::sched::{self, ExitReason, Message, Ref};
use beamcore_otp::server::{self, Answer, CallError, Caller, Control, Server};

/// The tally's registered name: workers find it by name, so a restarted tally (a new pid) would
/// be found all the same.
pub const NAME: &str = "tally";

/// What the tally counted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Summary {
    /// Jobs there are.
    pub jobs: u32,
    /// Jobs whose result was counted.
    pub counted: u32,
    /// Their results, added up.
    pub sum: u64,
    /// Jobs handed out again because the worker doing them ended before reporting.
    pub reissued: u32,
    /// Results that came for a job already counted (none, if the monitors work).
    pub duplicates: u32,
}

/// The calls.
#[derive(Debug)]
pub enum Call {
    /// A worker asks for a job; answered when there is one.
    Take,
    /// Answered once every job is counted.
    AwaitDone,
}

/// The answers to [`Call::Take`] and [`Call::AwaitDone`].
#[derive(Debug)]
pub enum Reply {
    Job(u32),
    Done(Summary),
}

/// The cast: a job's result.
#[derive(Debug)]
pub struct Report {
    job: u32,
    result: u64,
}

/// The server's state.
pub struct Tally {
    /// Jobs not handed out, jobs handed out again first.
    queue: VecDeque<u32>,
    /// Jobs handed out: the monitor on the worker doing it, and the job.
    out: Vec<(Ref, u32)>,
    /// Workers waiting for a job: their calls are answered when one is free.
    idle: VecDeque<Caller<Reply>>,
    /// Whether each job's result has been counted.
    counted: Vec<bool>,
    summary: Summary,
    /// Callers of [`await_done`] not answered yet.
    awaiting: Vec<Caller<Reply>>,
}

impl Tally {
    /// A tally of jobs 0..jobs, none handed out.
    pub fn new(jobs: u32) -> Tally {
        Tally {
            queue: (0..jobs).collect(),
            out: Vec::new(),
            idle: VecDeque::new(),
            counted: vec![false; jobs as usize],
            summary: Summary { jobs, ..Summary::default() },
            awaiting: Vec::new(),
        }
    }

    /// Gives the queued jobs to the waiting workers, watching each worker until it reports.
    fn hand_out(&mut self) {
        while !self.queue.is_empty()
            && let Some(worker) = self.idle.pop_front()
        {
            let job = self.queue.pop_front().expect("the queue is not empty");
            // If the worker has ended meanwhile, the monitor's `Down` (NoProc) comes at once
            // and the job is queued again.
            let watch = sched::monitor(worker.pid()).expect("memory for a monitor");
            self.out.push((watch, job));
            let _ = worker.reply(Reply::Job(job));
        }
    }

    /// A job's result: counted once, and the worker no longer watched.
    fn count(&mut self, job: u32, result: u64) {
        if let Some(at) = self.out.iter().position(|&(_, out)| out == job) {
            let (watch, _) = self.out.swap_remove(at);
            sched::demonitor(watch, true);
        }
        if core::mem::replace(&mut self.counted[job as usize], true) {
            self.summary.duplicates += 1;
        } else {
            self.summary.counted += 1;
            self.summary.sum += result;
        }
    }

    /// A worker ended before reporting: its job goes back to the front of the queue.
    fn reissue(&mut self, watch: Ref) {
        if let Some(at) = self.out.iter().position(|&(out, _)| out == watch) {
            let (_, job) = self.out.swap_remove(at);
            self.queue.push_front(job);
            self.summary.reissued += 1;
            self.hand_out();
        }
    }

    fn answer_if_done(&mut self) {
        if self.summary.counted == self.summary.jobs {
            for caller in self.awaiting.drain(..) {
                let _ = caller.reply(Reply::Done(self.summary));
            }
        }
    }
}

impl Server for Tally {
    type Call = Call;
    type Reply = Reply;
    type Cast = Report;

    /// Registers the name before `start_link` returns: the workers, started after the tally,
    /// find it there.
    fn init(&mut self) -> Result<(), ExitReason> {
        let me = sched::self_pid().expect("a server is a process");
        sched::register(NAME, me).map_err(|_| ExitReason::Exit(1))
    }

    /// Neither call is answered here: each waits for something (a free job, the last result).
    fn handle_call(&mut self, call: Call, caller: Caller<Reply>) -> Answer<Reply> {
        match call {
            Call::Take => {
                self.idle.push_back(caller);
                self.hand_out();
            }
            Call::AwaitDone => {
                self.awaiting.push(caller);
                self.answer_if_done();
            }
        }
        Answer::NoReply
    }

    fn handle_cast(&mut self, Report { job, result }: Report) -> Control {
        self.count(job, result);
        self.answer_if_done();
        Control::Continue
    }

    fn handle_info(&mut self, message: Message) -> Control {
        if let Message::Down { reference, .. } = message {
            self.reissue(reference);
        }
        Control::Continue
    }
}

/// A job to do: waits until there is one. Called by a worker.
pub fn take() -> u32 {
    match server::call_named::<Tally>(NAME, Call::Take, None) {
        Ok(Reply::Job(job)) => job,
        other => panic!("no job from the tally: {other:?}"),
    }
}

/// Reports job `job`'s result. A cast: the worker goes on at once.
pub fn report(job: u32, result: u64) {
    // Lost only if the tally is gone, whose successor starts the count afresh anyway.
    let _ = server::cast_named::<Tally>(NAME, Report { job, result });
}

/// Waits until every job is counted (at most `timeout_us`), and returns what the tally counted.
pub fn await_done(timeout_us: u64) -> Result<Summary, CallError> {
    match server::call_named::<Tally>(NAME, Call::AwaitDone, Some(timeout_us))? {
        Reply::Done(summary) => Ok(summary),
        Reply::Job(_) => unreachable!("the tally answers AwaitDone with Done"),
    }
}
