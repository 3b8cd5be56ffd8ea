//! The `nqueens(n, split)` workload's tasks (`apps/workloads.rs`): main spawns one task per
//! placement of the first two queens on core 0; a task with fewer than `split` queens placed
//! spawns one child per placement of the next queen (on its own core), receives their counts and
//! sends one up; a task with `split` placed searches the rest, crediting as it goes. The board
//! states and the search come from `crates/workload-shapes`, the code the kernel runs.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, OnceLock};

use beamcore_sched_policy::Priority;
use beamcore_workload_shapes::{
    QUEENS_CREDIT_NODES, QUEENS_NODES_PER_UNIT, queens_below, queens_credit_chunks, queens_is_leaf, queens_next_placed,
    queens_two_placed, queens_units,
};

use super::{Ctx, Op, Placement, Program, Spawn};

/// A board state: the columns taken and the squares attacked diagonally in the next row.
pub type Board = (u32, u32, u32);

/// The trees searched so far, by `(n, split)`.
type Searched = Mutex<BTreeMap<(u32, u32), Arc<QueensTree>>>;

/// The whole task tree of one `nqueens(n, split)`, searched once per simulator process (a
/// larger board takes seconds).
#[derive(Debug)]
pub struct QueensTree {
    /// The tasks main spawns, in its order.
    pub top: Vec<Board>,
    /// The nodes each leaf's search visits.
    leaves: HashMap<Board, u64>,
    /// Every task, inner and leaf (main not included).
    pub processes: u64,
    /// Units the leaves credit in all.
    pub units: u64,
}

impl QueensTree {
    /// The tree of `nqueens(n, split)`.
    pub fn of(n: u32, split: u32) -> Arc<QueensTree> {
        static SEARCHED: OnceLock<Searched> = OnceLock::new();
        let searched = SEARCHED.get_or_init(|| Mutex::new(BTreeMap::new()));
        if let Some(tree) = searched.lock().expect("no search panicked").get(&(n, split)) {
            return tree.clone();
        }
        let mut tree = QueensTree { top: Vec::new(), leaves: HashMap::new(), processes: 0, units: 0 };
        queens_two_placed(n, |c, l, r| {
            tree.top.push((c, l, r));
            true
        });
        for board in tree.top.clone() {
            tree.walk(n, split, 2, board);
        }
        let tree = Arc::new(tree);
        searched.lock().expect("no search panicked").insert((n, split), tree.clone());
        tree
    }

    fn walk(&mut self, n: u32, split: u32, placed: u32, (c, l, r): Board) {
        self.processes += 1;
        if queens_is_leaf(n, split, placed, c) {
            let nodes = queens_below(n, c, l, r).1;
            self.units += queens_units(nodes);
            self.leaves.insert((c, l, r), nodes);
            return;
        }
        queens_next_placed(n, c, l, r, |c, l, r| {
            self.walk(n, split, placed + 1, (c, l, r));
            true
        });
    }

    /// The nodes a leaf with this board visits.
    pub fn leaf_nodes(&self, board: Board) -> u64 {
        self.leaves[&board]
    }
}

/// One task of `nqueens(n, split)` and where it is in its program.
#[derive(Debug)]
pub struct QueensTask {
    pub n: u32,
    pub split: u32,
    /// Queens placed on `board`.
    pub placed: u32,
    pub board: Board,
    pub parent: u32,
    pub pc: u32,
    /// An inner task: children spawned so far, and counts received.
    pub spawned: u32,
    pub received: u32,
}

impl QueensTask {
    pub fn new(n: u32, split: u32, placed: u32, board: Board, parent: u32) -> QueensTask {
        QueensTask { n, split, placed, board, parent, pc: 0, spawned: 0, received: 0 }
    }

    pub fn next(&mut self, ctx: &mut Ctx<'_>) -> Op {
        let (c, l, r) = self.board;
        if queens_is_leaf(self.n, self.split, self.placed, c) {
            return self.leaf_next(ctx);
        }
        if self.pc == 0 {
            let mut k = 0;
            let mut child = None;
            queens_next_placed(self.n, c, l, r, |c, l, r| {
                if k == self.spawned {
                    child = Some((c, l, r));
                    return false;
                }
                k += 1;
                true
            });
            if let Some(board) = child {
                self.spawned += 1;
                let task = QueensTask::new(self.n, self.split, self.placed + 1, board, ctx.me);
                let program = Program::Queens(task);
                return Op::Spawn(Box::new(Spawn { program, priority: Priority::Normal, placement: Placement::Here }));
            }
            self.pc = 1;
        }
        if self.pc == 1 {
            if self.received < self.spawned {
                self.received += 1;
                return Op::Receive;
            }
            self.pc = 2;
            return Op::Send { to: self.parent, word: 0 };
        }
        Op::Exit
    }

    /// A leaf: as the kernel's task credits (`queens_below_crediting`): its whole chunks of
    /// QUEENS_CREDIT_NODES nodes as it goes, then the rest, then its count to its parent. The
    /// kernel credits at the end of a subtree, up to 2,289 nodes later than a chunk's end; the
    /// model at it.
    fn leaf_next(&mut self, ctx: &mut Ctx<'_>) -> Op {
        self.pc += 1;
        let nodes = QueensTree::of(self.n, self.split).leaf_nodes(self.board);
        let (chunks, last) = queens_credit_chunks(nodes);
        let chunk = QUEENS_CREDIT_NODES / QUEENS_NODES_PER_UNIT;
        let compute = |units: u64| Op::Compute { ns: units * ctx.costs.nqueens_unit, units, reductions: 0 };
        match u64::from(self.pc) {
            k if k <= chunks => compute(chunk),
            k if k == chunks + 1 => compute(last),
            k if k == chunks + 2 => Op::Send { to: self.parent, word: 0 },
            _ => Op::Exit,
        }
    }
}
