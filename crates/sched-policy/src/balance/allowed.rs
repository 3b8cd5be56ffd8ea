//! Where a process may run (its allowed cores) and where a new one starts.
//!
//! Every "may this process run on that core" question about its set, at spawn, in a thief's
//! steal, in push rebalancing, when a leaving core hands its processes over, goes through
//! [`may_run_on`]; the kernel's `offline::may_run_here` adds that the core schedules (is not
//! offline), so both conditions hold for every move at once.

use core::fmt;

use beamcore_core_set::CoreMask;

/// Why a new process has no core to start on (each a caller's mistake, reported by `spawn`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PlaceError {
    /// The options name a core that is not online.
    NoSuchCore(usize),
    /// The allowed set holds no core that schedules.
    NoAllowedCore,
    /// The options name a core to start on that the allowed set leaves out.
    NotAllowed(usize),
    /// The options name a core that is offline (`sched::take_offline`).
    CoreOffline(usize),
}

impl fmt::Display for PlaceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PlaceError::NoSuchCore(core) => write!(f, "no online core {core}"),
            PlaceError::NoAllowedCore => write!(f, "the allowed cores include no core that schedules"),
            PlaceError::NotAllowed(core) => write!(f, "core {core} is not among the allowed cores"),
            PlaceError::CoreOffline(core) => write!(f, "core {core} is offline"),
        }
    }
}

/// May a process whose allowed cores are `allowed` run on `core`? The one check every mover
/// applies (see the module comment).
#[inline]
pub fn may_run_on(allowed: &CoreMask, core: usize) -> bool {
    allowed.contains(core)
}

/// The core a new process starts on. `schedulable` are the cores that schedule now (online and
/// not taken offline), all below `online`. `requested` (the core the options name), if given,
/// must be online, allowed and schedulable; else `preferred` (the spawning core, or the
/// `placement=` choice) if allowed and schedulable, else the lowest allowed schedulable core.
#[inline]
pub fn place(
    allowed: &CoreMask,
    schedulable: &CoreMask,
    online: usize,
    requested: Option<usize>,
    preferred: usize,
) -> Result<usize, PlaceError> {
    // The usual spawn first: the core named, or else the preferred one, allowed and scheduling.
    let core = requested.unwrap_or(preferred);
    if core < online && may_run_on(allowed, core) && schedulable.contains(core) {
        return Ok(core);
    }
    place_checked(allowed, schedulable, online, requested)
}

/// [`place`] for every other case.
#[cold]
fn place_checked(
    allowed: &CoreMask,
    schedulable: &CoreMask,
    online: usize,
    requested: Option<usize>,
) -> Result<usize, PlaceError> {
    if let Some(core) = requested {
        return Err(if core >= online {
            PlaceError::NoSuchCore(core)
        } else if !may_run_on(allowed, core) {
            PlaceError::NotAllowed(core)
        } else {
            PlaceError::CoreOffline(core)
        });
    }
    allowed
        .intersection(*schedulable)
        .intersection(CoreMask::first_cores(online))
        .first()
        .ok_or(PlaceError::NoAllowedCore)
}

/// Whether a process with these allowed cores is pinned: kept in its core's private queue, out
/// of thieves' sight, because it has one core to run on. That is a one-core set (`bound_to`),
/// and on a machine with more than one core any set with at most one online core. On one core
/// nothing is pinned: there are no thieves, and the stealable queue is the owner's faster path.
pub fn pinned(allowed: &CoreMask, online: usize) -> bool {
    if *allowed == CoreMask::ALL {
        return false;
    }
    allowed.len() == 1 || (online > 1 && allowed.intersection(CoreMask::first_cores(online)).len() <= 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    const FOUR: CoreMask = CoreMask::first_cores(4);

    #[test]
    fn the_preferred_core_when_allowed_else_the_lowest_allowed() {
        let set = CoreMask::of(&[1, 3]);
        assert_eq!(place(&set, &FOUR, 4, None, 3), Ok(3));
        assert_eq!(place(&set, &FOUR, 4, None, 0), Ok(1), "core 0 is not allowed: the lowest allowed");
        assert_eq!(place(&set, &FOUR, 4, Some(3), 0), Ok(3));
        assert_eq!(place(&CoreMask::ALL, &FOUR, 4, None, 2), Ok(2));
    }

    #[test]
    fn bad_options_are_refused_with_their_reason() {
        let set = CoreMask::of(&[1, 3]);
        assert_eq!(place(&set, &FOUR, 4, Some(2), 0), Err(PlaceError::NotAllowed(2)));
        assert_eq!(place(&set, &FOUR, 4, Some(7), 0), Err(PlaceError::NoSuchCore(7)));
        assert_eq!(
            place(&CoreMask::of(&[5, 6]), &FOUR, 4, None, 0),
            Err(PlaceError::NoAllowedCore),
            "only absent cores"
        );
        assert_eq!(place(&CoreMask::EMPTY, &FOUR, 4, None, 0), Err(PlaceError::NoAllowedCore));
        assert_eq!(place(&CoreMask::single(9), &FOUR, 4, Some(9), 0), Err(PlaceError::NoSuchCore(9)), "bound_to(9)");
        // A set that reaches past the online cores keeps its online part.
        assert_eq!(place(&CoreMask::of(&[2, 40]), &FOUR, 4, None, 0), Ok(2));
    }

    #[test]
    fn offline_cores_are_skipped_or_refused() {
        let without_1 = CoreMask::of(&[0, 2, 3]);
        assert_eq!(place(&CoreMask::single(1), &without_1, 4, Some(1), 0), Err(PlaceError::CoreOffline(1)));
        assert_eq!(place(&CoreMask::of(&[1, 3]), &without_1, 4, None, 0), Ok(3), "1 is offline: the next allowed");
        assert_eq!(place(&CoreMask::of(&[1]), &without_1, 4, None, 0), Err(PlaceError::NoAllowedCore));
        assert_eq!(place(&CoreMask::ALL, &without_1, 4, None, 1), Ok(0), "a placement choice that went offline");
    }

    #[test]
    fn each_refusal_says_what_was_wrong() {
        let said = |error: PlaceError| {
            use core::fmt::Write;
            let mut text = heapless::String::<64>::new();
            write!(text, "{error}").unwrap();
            text
        };
        assert_eq!(said(PlaceError::NoSuchCore(7)), "no online core 7");
        assert_eq!(said(PlaceError::NoAllowedCore), "the allowed cores include no core that schedules");
        assert_eq!(said(PlaceError::NotAllowed(2)), "core 2 is not among the allowed cores");
        assert_eq!(said(PlaceError::CoreOffline(3)), "core 3 is offline");
    }

    #[test]
    fn one_core_to_run_on_is_pinned() {
        assert!(pinned(&CoreMask::single(2), 4), "bound_to");
        assert!(pinned(&CoreMask::single(0), 1), "bound_to, even on one core");
        assert!(pinned(&CoreMask::of(&[2, 9]), 4), "the other core is offline");
        assert!(!pinned(&CoreMask::of(&[0, 3]), 4));
        assert!(!pinned(&CoreMask::ALL, 4));
        assert!(!pinned(&CoreMask::ALL, 1), "one core: the owner's fast stealable queue");
        assert!(!pinned(&CoreMask::of(&[0, 1]), 1), "one core online, a set of two: no thieves to hide from");
    }

    #[test]
    fn may_run_on_is_membership() {
        let set = CoreMask::of(&[0, 2, 5]);
        let allowed: Vec<usize> = (0..8).filter(|&c| may_run_on(&set, c)).collect();
        assert_eq!(allowed, [0, 2, 5]);
    }
}
