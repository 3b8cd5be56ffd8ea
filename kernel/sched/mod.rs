//! Scheduling: the per-core work-stealing deque (and, later, processes, run queues and the
//! load balancer). Everything here is pure and compiles for the host as well.

pub mod deque;
