//! Where functions were inlined: the part of the table that lets a backtrace name a program's
//! function that LTO folded into another (a process's closure into the kernel's
//! `sched::entry::call_in_place`), as `llvm-addr2line -i` would, with no ELF at hand.
//!
//! `scripts/ksyms.py` documents the format: the code split into segments, each with the innermost
//! inlined function (a node), each node with the node it was itself inlined into. A lookup is one
//! binary search over the segment starts, then a walk up the nodes.

use super::{Name, u32_at, u64_at};

const MAGIC: &[u8; 8] = b"BCKINLN1";
const HEADER_BYTES: usize = 32;
const NONE: u32 = u32::MAX;
/// The deepest chain a walk follows: a damaged table with a cycle in its parents ends here.
const MAX_DEPTH: usize = 32;

/// The inline part of a symbol table (empty when the image had no debug information).
#[derive(Clone, Copy, Debug)]
pub struct InlineTable<'a> {
    base: u64,
    end: u64,
    starts: &'a [u8],
    innermost: &'a [u8],
    nodes: &'a [u8],
    offsets: &'a [u8],
    names: &'a [u8],
}

impl<'a> InlineTable<'a> {
    /// A table with no inlines.
    pub const EMPTY: InlineTable<'static> =
        InlineTable { base: 0, end: 0, starts: &[], innermost: &[], nodes: &[], offsets: &[], names: &[] };

    /// Reads the inline part at the start of `bytes`; `end` is where code ends (the last
    /// segment's end). `None` if `bytes` holds no inline part or its parts do not fit.
    pub fn parse(bytes: &'a [u8], end: u64) -> Option<InlineTable<'a>> {
        if bytes.get(..8)? != MAGIC {
            return None;
        }
        let base = u64_at(bytes, 8)?;
        let segments = u32_at(bytes, 16)? as usize;
        let nodes = u32_at(bytes, 20)? as usize;
        let names = u32_at(bytes, 24)? as usize;
        let names_len = u32_at(bytes, 28)? as usize;
        let innermost_at = HEADER_BYTES.checked_add(segments.checked_mul(4)?)?;
        let nodes_at = innermost_at.checked_add(segments.checked_mul(4)?)?;
        let offsets_at = nodes_at.checked_add(nodes.checked_mul(8)?)?;
        let names_at = offsets_at.checked_add(names.checked_add(1)?.checked_mul(4)?)?;
        let names_end = names_at.checked_add(names_len)?;
        Some(InlineTable {
            base,
            end,
            starts: bytes.get(HEADER_BYTES..innermost_at)?,
            innermost: bytes.get(innermost_at..nodes_at)?,
            nodes: bytes.get(nodes_at..offsets_at)?,
            offsets: bytes.get(offsets_at..names_at)?,
            names: bytes.get(names_at..names_end)?,
        })
    }

    fn segments(&self) -> usize {
        self.starts.len() / 4
    }

    /// The innermost node at `address`, if a function was inlined there.
    fn node_at(&self, address: u64) -> Option<u32> {
        if address < self.base || address >= self.end {
            return None;
        }
        let offset = u32::try_from(address - self.base).ok()?;
        // The first segment starting above `offset`; the one before it holds it.
        let (mut low, mut high) = (0, self.segments());
        while low < high {
            let middle = low + (high - low) / 2;
            if u32_at(self.starts, middle * 4)? <= offset {
                low = middle + 1;
            } else {
                high = middle;
            }
        }
        let node = u32_at(self.innermost, low.checked_sub(1)? * 4)?;
        (node != NONE).then_some(node)
    }

    fn name(&self, index: u32) -> Option<Name<'a>> {
        let index = index as usize;
        let from = u32_at(self.offsets, index * 4)? as usize;
        let to = u32_at(self.offsets, (index + 1) * 4)? as usize;
        Some(Name(core::str::from_utf8(self.names.get(from..to)?).ok()?))
    }

    /// The functions inlined at `address`, innermost first.
    pub fn at(&self, address: u64) -> Inlined<'a> {
        Inlined { table: *self, next: self.node_at(address), left: MAX_DEPTH }
    }
}

/// The chain of functions inlined at one address, innermost first.
pub struct Inlined<'a> {
    table: InlineTable<'a>,
    next: Option<u32>,
    left: usize,
}

impl<'a> Iterator for Inlined<'a> {
    type Item = Name<'a>;

    fn next(&mut self) -> Option<Name<'a>> {
        let node = self.next.take()? as usize;
        self.left = self.left.checked_sub(1)?;
        let name = u32_at(self.table.nodes, node * 8)?;
        let parent = u32_at(self.table.nodes, node * 8 + 4)?;
        self.next = (parent != NONE).then_some(parent);
        self.table.name(name)
    }
}
