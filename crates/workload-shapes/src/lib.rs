//! The shapes of the demo workloads' problems: the n-queens search and the binomial unbalanced
//! tree (uts), as pure functions.
//!
//! Why a crate: the workloads in `apps/` spawn a process per task of these problems, and the host
//! simulator (`sim/`) must give its simulated processes exactly the same tasks, in the same
//! order, with the same sizes. With one copy of the code the two cannot drift apart.

#![no_std]
#![forbid(unsafe_code)]

/// Solutions and nodes visited below an n-queens board state: `columns` holds the columns
/// taken, `left` and `right` the squares attacked diagonally in the next row.
pub fn queens_below(n: u32, columns: u32, left: u32, right: u32) -> (u64, u64) {
    let full = (1u32 << n) - 1;
    if columns == full {
        return (1, 1);
    }
    let (mut solutions, mut nodes) = (0, 1);
    let mut free = full & !(columns | left | right);
    while free != 0 {
        let bit = free & free.wrapping_neg();
        free &= free - 1;
        let (s, k) = queens_below(n, columns | bit, ((left | bit) << 1) & full, (right | bit) >> 1);
        solutions += s;
        nodes += k;
    }
    (solutions, nodes)
}

/// Nodes per work unit a queens task credits (`apps/workloads.rs`: a unit of the other workloads
/// is about 10,000 instructions; 16 nodes of the search are about as many).
pub const QUEENS_NODES_PER_UNIT: u64 = 16;
/// A queens task credits its progress in whole chunks of this many nodes (64 units, about 45 us
/// on virt): far below a 1 ms slice, so a task preempted and moved credits each core about what
/// it computed.
pub const QUEENS_CREDIT_NODES: u64 = 1024;

/// Units a queens task that visits `nodes` nodes credits in all.
pub fn queens_units(nodes: u64) -> u64 {
    nodes / QUEENS_NODES_PER_UNIT + 1
}

/// How a queens task of `nodes` nodes credits its units: `(chunks, last)`, `chunks` whole chunks
/// of `QUEENS_CREDIT_NODES / QUEENS_NODES_PER_UNIT` units as it goes, then `last` at its end. The
/// simulator credits the chunks one at a time; [`queens_below_crediting`] credits them at the ends
/// of its subtrees, so one credit may hold several chunks (a subtree has up to 2,289 nodes).
pub fn queens_credit_chunks(nodes: u64) -> (u64, u64) {
    let chunks = nodes / QUEENS_CREDIT_NODES;
    (chunks, queens_units(nodes % QUEENS_CREDIT_NODES))
}

/// Board rows below a task's own that [`queens_below_crediting`] walks itself before it hands
/// each subtree to [`queens_below`]: 2, so for 13 queens a subtree has at most 2,289 nodes (700
/// at the median), well under a slice, and the search below pays nothing for the crediting.
const QUEENS_CREDITED_ROWS: u32 = 2;

/// [`queens_below`], crediting its progress while it searches: after each subtree
/// `QUEENS_CREDITED_ROWS` rows down, the units of every whole `QUEENS_CREDIT_NODES` nodes visited
/// so far, and the rest at the end: [`queens_units`] in all, in the chunks
/// [`queens_credit_chunks`] counts. Why: a task may be preempted and moved to another core
/// midway; credited only at its end, all its work would count for the core that finished it,
/// not for the cores that did it.
pub fn queens_below_crediting(n: u32, columns: u32, left: u32, right: u32, mut credit: impl FnMut(u64)) -> (u64, u64) {
    let mut pending = 0;
    let result = crediting_walk(n, columns, left, right, QUEENS_CREDITED_ROWS, &mut pending, &mut credit);
    credit(queens_units(pending));
    result
}

fn crediting_walk(
    n: u32,
    columns: u32,
    left: u32,
    right: u32,
    rows: u32,
    pending: &mut u64,
    credit: &mut impl FnMut(u64),
) -> (u64, u64) {
    let full = (1u32 << n) - 1;
    if rows == 0 || columns == full {
        let (solutions, nodes) = queens_below(n, columns, left, right);
        *pending += nodes;
        if *pending >= QUEENS_CREDIT_NODES {
            credit(*pending / QUEENS_CREDIT_NODES * (QUEENS_CREDIT_NODES / QUEENS_NODES_PER_UNIT));
            *pending %= QUEENS_CREDIT_NODES;
        }
        return (solutions, nodes);
    }
    *pending += 1;
    let (mut solutions, mut nodes) = (0, 1);
    let mut free = full & !(columns | left | right);
    while free != 0 {
        let bit = free & free.wrapping_neg();
        free &= free - 1;
        let (s, k) =
            crediting_walk(n, columns | bit, ((left | bit) << 1) & full, (right | bit) >> 1, rows - 1, pending, credit);
        solutions += s;
        nodes += k;
    }
    (solutions, nodes)
}

/// Calls `each` with the board state after every legal placement of the first two queens of an
/// `n` x `n` board, in row order: the tasks of the `nqueens` workload, in the order it spawns
/// them. Stops early when `each` returns false; returns whether it went through all of them.
pub fn queens_two_placed(n: u32, mut each: impl FnMut(u32, u32, u32) -> bool) -> bool {
    let full = (1u32 << n) - 1;
    for first in 0..n {
        let (c1, l1, r1) = (1u32 << first, ((1u32 << first) << 1) & full, (1u32 << first) >> 1);
        for second in 0..n {
            let bit = 1u32 << second;
            if (c1 | l1 | r1) & bit != 0 {
                continue;
            }
            if !each(c1 | bit, ((l1 | bit) << 1) & full, (r1 | bit) >> 1) {
                return false;
            }
        }
    }
    true
}

/// Calls `each` with the board state after every legal placement of the next queen below the
/// state `columns`, `left`, `right`, in column order: the children a task of the `nqueens`
/// workload spawns while fewer than its `split` queens are placed. Stops early when `each`
/// returns false; returns whether it went through all of them.
pub fn queens_next_placed(
    n: u32,
    columns: u32,
    left: u32,
    right: u32,
    mut each: impl FnMut(u32, u32, u32) -> bool,
) -> bool {
    let full = (1u32 << n) - 1;
    let mut free = full & !(columns | left | right);
    while free != 0 {
        let bit = free & free.wrapping_neg();
        free &= free - 1;
        if !each(columns | bit, ((left | bit) << 1) & full, (right | bit) >> 1) {
            return false;
        }
    }
    true
}

/// Is a task of `nqueens(n, split)` with `placed` queens on the board a leaf, one that searches
/// below its state itself? When `split` queens are placed, or the board is full.
pub fn queens_is_leaf(n: u32, split: u32, placed: u32, columns: u32) -> bool {
    placed >= split || columns == (1u32 << n) - 1
}

/// A grain task credits its work in chunks of at most this many ns (50 us, a twentieth of a
/// slice): a task of 1 ms is usually preempted once and may finish on another core, and each
/// core should be credited what it computed.
pub const GRAIN_CREDIT_NS: u64 = 50_000;

/// The chunks a grain task of `grain_ns` computes and credits, in order: whole
/// [`GRAIN_CREDIT_NS`] chunks, then the rest (a task of 0 ns computes one empty chunk).
pub fn grain_chunks(grain_ns: u64) -> impl Iterator<Item = u64> {
    let chunks = grain_ns.div_ceil(GRAIN_CREDIT_NS).max(1);
    (0..chunks).map(move |i| (grain_ns - i * GRAIN_CREDIT_NS).min(GRAIN_CREDIT_NS))
}

/// A uts node's number of children: `children` with probability `percent`%, else none, decided
/// by a hash of the node's id (so the tree is the same every run).
pub fn uts_children(id: u64, children: u64, percent: u64) -> u64 {
    let mut x = id.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^= x >> 31;
    if x % 100 < percent { children } else { 0 }
}

/// The id of a uts node's `index`th child.
pub fn uts_child_id(parent: u64, index: u64) -> u64 {
    parent.wrapping_mul(31).wrapping_add(index + 1).rotate_left(17) ^ parent
}

/// Nodes of the uts subtree below `id` at `depth` (counted sequentially: the reference answer).
/// The tree stops at depth 64.
pub fn uts_count(id: u64, children: u64, percent: u64, depth: u32) -> u64 {
    if depth > 64 {
        return 1;
    }
    let n = uts_children(id, children, percent);
    1 + (0..n).map(|i| uts_count(uts_child_id(id, i), children, percent, depth + 1)).sum::<u64>()
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;
    use std::vec::Vec;

    #[test]
    fn queens_counts_match_the_known_solutions() {
        for (n, known) in [(4u32, 2u64), (6, 4), (8, 92), (10, 724)] {
            let mut total = 0;
            assert!(queens_two_placed(n, |c, l, r| {
                total += queens_below(n, c, l, r).0;
                true
            }));
            assert_eq!(total, known, "{n}-queens");
        }
    }

    /// Splitting deeper finds the same solutions: the leaves of `nqueens(n, split)` (one task per
    /// placement of the first `split` queens, or a full board) search exactly the whole board.
    #[test]
    fn a_deeper_split_covers_the_same_search() {
        fn below(n: u32, split: u32, placed: u32, c: u32, l: u32, r: u32, leaves: &mut u64) -> u64 {
            if queens_is_leaf(n, split, placed, c) {
                *leaves += 1;
                return queens_below(n, c, l, r).0;
            }
            let mut sum = 0;
            assert!(queens_next_placed(n, c, l, r, |c, l, r| {
                sum += below(n, split, placed + 1, c, l, r, leaves);
                true
            }));
            sum
        }
        for (n, known) in [(6u32, 4u64), (8, 92), (10, 724)] {
            let mut tasks = Vec::new();
            queens_two_placed(n, |c, l, r| {
                tasks.push((c, l, r));
                true
            });
            for split in 2..=n + 1 {
                let mut leaves = 0;
                let total: u64 = tasks.iter().map(|&(c, l, r)| below(n, split, 2, c, l, r, &mut leaves)).sum();
                assert_eq!(total, known, "{n}-queens split {split}");
                if split == 2 {
                    assert_eq!(leaves, tasks.len() as u64, "split 2 is one leaf per task");
                }
            }
        }
        assert!(!queens_next_placed(8, 0, 0, 0, |_, _, _| false), "stops when told");
    }

    #[test]
    fn crediting_search_credits_every_node_once_and_finds_the_same() {
        queens_two_placed(12, |c, l, r| {
            let plain = queens_below(12, c, l, r);
            let mut credits = Vec::new();
            let crediting = queens_below_crediting(12, c, l, r, |units| credits.push(units));
            assert_eq!(crediting, plain);
            assert_eq!(credits.iter().sum::<u64>(), queens_units(plain.1));
            let (chunks, last) = queens_credit_chunks(plain.1);
            let (&at_end, as_it_went) = credits.split_last().unwrap();
            assert_eq!(at_end, last);
            assert_eq!(as_it_went.iter().sum::<u64>(), chunks * (QUEENS_CREDIT_NODES / QUEENS_NODES_PER_UNIT));
            assert!(as_it_went.iter().all(|&u| u > 0 && u % (QUEENS_CREDIT_NODES / QUEENS_NODES_PER_UNIT) == 0));
            true
        });
    }

    #[test]
    fn grain_chunks_add_up_to_the_task() {
        for ns in [0, 1, 49_999, 50_000, 50_001, 1_000_000, 1_234_567] {
            let chunks: Vec<u64> = grain_chunks(ns).collect();
            assert_eq!(chunks.iter().sum::<u64>(), ns, "{ns}: {chunks:?}");
            assert!(chunks.iter().all(|&c| c <= GRAIN_CREDIT_NS), "{ns}: {chunks:?}");
            assert!(chunks[..chunks.len() - 1].iter().all(|&c| c == GRAIN_CREDIT_NS), "{ns}: {chunks:?}");
        }
        assert_eq!(grain_chunks(1_000_000).count(), 20);
    }

    #[test]
    fn thirteen_queens_has_the_workloads_132_tasks() {
        let mut tasks = 0;
        queens_two_placed(13, |_, _, _| {
            tasks += 1;
            true
        });
        assert_eq!(tasks, 132);
    }

    #[test]
    fn stopping_early_stops() {
        let mut seen = 0;
        assert!(!queens_two_placed(8, |_, _, _| {
            seen += 1;
            seen < 5
        }));
        assert_eq!(seen, 5);
    }

    #[test]
    fn the_uts_tree_is_fixed_by_its_ids() {
        assert_eq!(uts_children(7, 4, 0), 0);
        assert_eq!(uts_children(7, 4, 100), 4);
        // The workload's tree (1000 roots, 4 children at 20%): 4,377 nodes with its root, as the
        // README's benchmark section says.
        let nodes = 1 + (0..1000).map(|i| uts_count(uts_child_id(0, i), 4, 20, 1)).sum::<u64>();
        assert_eq!(nodes, 4377);
    }
}
