//! A cache of per-call-site words, two ways per set, for the kernel's quick-end walks.
//!
//! Each word names the return address it is for (the caller says how: [`Key`]), so an entry is
//! right or it is another address's, never stale, and cores may fill it concurrently with
//! single-word stores. Two ways, because one way per set (what the kernel had first) made a
//! layout cliff: two call sites on one hot path whose addresses are a multiple of the cache's
//! span apart evicted each other, and every end through that path read the unwind tables again
//! (`sched.link_exit` went from 1,691 to 11,103 instructions when unrelated code moved). With
//! two ways it takes three call sites in one set. For 60 call sites spread over 1,024 sets,
//! about what the kernel's hot ends cross between them, one way expects 1.7 pairs that evict
//! each other; two ways expect 0.03 triples, so about one layout in 30 has a single set that
//! does.
//!
//! A new word goes to way 0 and way 0's word to way 1, so a third address evicts the older of
//! the two: the cache of a set is the last two addresses learnt there.

use core::sync::atomic::{AtomicU64, Ordering};

/// Which return address a word is for (an empty entry's word is 0, which names no call site:
/// no code lies at address 0).
pub trait Key {
    fn address(word: u64) -> u64;
}

/// Words holding a return address with a tag in its two low bits (return addresses are
/// 4-aligned): the frame-record walk's.
pub struct TaggedAddress;
impl Key for TaggedAddress {
    fn address(word: u64) -> u64 {
        word & !3
    }
}

/// Words holding a return address in their high half and anything in the low (code below
/// 4 GiB only): the row walk's, with a [`CompactRow`](crate::compact::CompactRow) below.
pub struct HighHalf;
impl Key for HighHalf {
    fn address(word: u64) -> u64 {
        word >> 32
    }
}

/// `SETS` sets of two words.
pub struct CallSites<const SETS: usize> {
    sets: [[AtomicU64; 2]; SETS],
}

impl<const SETS: usize> Default for CallSites<SETS> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const SETS: usize> CallSites<SETS> {
    pub const fn new() -> Self {
        CallSites { sets: [const { [AtomicU64::new(0), AtomicU64::new(0)] }; SETS] }
    }

    /// The set of a return address (they are 4-aligned).
    fn set(&self, return_address: u64) -> &[AtomicU64; 2] {
        &self.sets[(return_address >> 2) as usize % SETS]
    }

    /// Way 0's word for `return_address`'s set, which may be another address's: the walks'
    /// common step compares it with the word they hope for and takes [`Self::find`] only if it
    /// is not.
    #[inline(always)]
    pub fn first(&self, return_address: u64) -> u64 {
        // ORDERING: Relaxed: a word names its own address, so any word seen is a true fact of
        // the image or another address's; nothing else is published with it.
        self.set(return_address)[0].load(Ordering::Relaxed)
    }

    /// The word kept for `return_address`: way 0's if it is for that address, else way 1's
    /// (which may be another address's too: the caller checks).
    #[inline(always)]
    pub fn find<K: Key>(&self, return_address: u64) -> u64 {
        let set = self.set(return_address);
        // ORDERING: Relaxed: see `first`.
        let first = set[0].load(Ordering::Relaxed);
        if K::address(first) == return_address { first } else { set[1].load(Ordering::Relaxed) }
    }

    /// Keeps `word` (for `return_address`): in way 0 if that holds the same address or nothing,
    /// else in way 0 with way 0's word moved to way 1, so that way 1 always holds the older of
    /// the two and a third address evicts the earlier kept. Concurrent keeps of one set may lose
    /// a word or keep one twice; a lost word is learnt again, and a copy is as right as the
    /// original.
    pub fn keep<K: Key>(&self, return_address: u64, word: u64) {
        let set = self.set(return_address);
        // ORDERING: Relaxed: see `first`.
        let first = set[0].load(Ordering::Relaxed);
        if first != 0 && K::address(first) != return_address {
            set[1].store(first, Ordering::Relaxed);
        }
        set[0].store(word, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use TaggedAddress as Low;
    use proptest::prelude::*;
    use std::collections::HashSet;

    const SETS: usize = 256;
    /// Addresses this far apart share a set.
    const SPAN: u64 = 4 * SETS as u64;

    fn lookup(cache: &CallSites<SETS>, address: u64) -> Option<u64> {
        let word = cache.find::<Low>(address);
        (Low::address(word) == address && word != 0).then_some(word & 3)
    }

    #[test]
    fn two_sites_of_one_set_are_both_kept() {
        // The cliff one way had: 0x1000 and 0x1000 + SPAN evicted each other.
        let cache = CallSites::<SETS>::new();
        let (a, b) = (0x4008_1000, 0x4008_1000 + SPAN);
        cache.keep::<Low>(a, a | 2);
        cache.keep::<Low>(b, b | 3);
        assert_eq!(lookup(&cache, a), Some(2));
        assert_eq!(lookup(&cache, b), Some(3));
        // Learning them again in any order changes nothing.
        cache.keep::<Low>(a, a | 2);
        cache.keep::<Low>(b, b | 3);
        assert_eq!((lookup(&cache, a), lookup(&cache, b)), (Some(2), Some(3)));
    }

    #[test]
    fn a_third_site_evicts_the_earliest_and_way_zero_holds_the_newest() {
        let cache = CallSites::<SETS>::new();
        let [a, b, c] = [0, 1, 2].map(|i| 0x4008_0000 + i * SPAN);
        for site in [a, b, c] {
            cache.keep::<Low>(site, site | 1);
        }
        assert_eq!(Low::address(cache.first(c)), c);
        assert_eq!(lookup(&cache, a), None);
        assert_eq!(lookup(&cache, b), Some(1));
    }

    #[test]
    fn a_verdict_learnt_again_replaces_its_own_word() {
        let cache = CallSites::<SETS>::new();
        let (a, b) = (0x4008_0010, 0x4008_0010 + SPAN);
        cache.keep::<Low>(a, a | 1);
        cache.keep::<Low>(b, b | 1);
        cache.keep::<Low>(b, b);
        assert_eq!((lookup(&cache, a), lookup(&cache, b)), (Some(1), Some(0)));
    }

    proptest! {
        /// Whatever was kept, a lookup gives either nothing or the word last kept for that very
        /// address; and the last two distinct addresses kept in a set are both found.
        #[test]
        fn lookups_are_true_and_the_last_two_of_a_set_stay(
            keeps in proptest::collection::vec((0u64..6, 0u64..4, 0u64..4), 1..60),
        ) {
            let cache = CallSites::<SETS>::new();
            let mut last = std::collections::HashMap::new();
            let mut order: Vec<(u64, u64)> = Vec::new();
            for &(site, set, verdict) in &keeps {
                let address = 0x4000_0000 + set * 4 + site * SPAN;
                cache.keep::<Low>(address, address | verdict);
                last.insert(address, verdict);
                order.retain(|&(s, a)| !(s == set && a == address));
                order.push((set, address));
            }
            for (&address, &verdict) in &last {
                if let Some(found) = lookup(&cache, address) {
                    prop_assert_eq!(found, verdict);
                }
            }
            for set in 0..4 {
                let recent: Vec<u64> = order.iter().rev().filter(|&&(s, _)| s == set).map(|&(_, a)| a).take(2).collect();
                let distinct: HashSet<u64> = recent.iter().copied().collect();
                for address in distinct {
                    prop_assert_eq!(lookup(&cache, address), Some(last[&address]));
                }
            }
        }
    }
}
