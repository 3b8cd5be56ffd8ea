//! The work: jobs numbered 0..n, each a small CPU-bound sum. A job's result depends on its
//! number only, so the total the tally arrives at can be checked against the one main computes
//! alone, however often a job had to be done again.

use beamcore::sched;

/// Numbers summed per job.
const ITEMS_PER_JOB: u64 = 1024;
/// Numbers between two `bump_reductions` calls: a worker accounts for its work as it goes, so
/// the other processes on its core get their turns.
const BATCH: u64 = 256;

/// splitmix64's output function: a 64-bit hash of `x`.
pub fn hash(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Job `job`'s result: the top 24 bits of the hashes of its numbers, summed.
pub fn work(job: u32) -> u64 {
    let start = u64::from(job) * ITEMS_PER_JOB;
    let mut sum = 0;
    for from in (start..start + ITEMS_PER_JOB).step_by(BATCH as usize) {
        sum += (from..from + BATCH).map(|i| hash(i) >> 40).sum::<u64>();
        sched::bump_reductions(BATCH as u32);
    }
    sum
}

/// What the results of jobs 0..jobs add up to, computed by the calling process alone.
pub fn expected_total(jobs: u32) -> u64 {
    (0..jobs).map(work).sum()
}

/// A seeded pseudo-random generator (splitmix64: the hash of a counter): each worker draws its
/// crashes from one of its own, so which worker crashes when looks random but follows from the
/// seeds.
pub struct Rng(u64);

impl Rng {
    /// Seeds 0, 1, 2, ... start far apart in the sequence: their draws do not overlap.
    pub fn new(seed: u64) -> Rng {
        Rng(hash(seed))
    }

    /// A number in 0..n.
    pub fn below(&mut self, n: u64) -> u64 {
        self.0 = self.0.wrapping_add(1);
        hash(self.0) % n
    }
}
