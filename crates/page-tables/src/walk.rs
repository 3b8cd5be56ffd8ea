//! The walk: what an address translates to, read the way the MMU reads it. Apart from the
//! builder because it reads any tables through [`ReadTables`], the kernel's process region
//! included, not only the ones the builder owns.

use crate::MemoryKind;
use crate::descriptor::{ADDRESS_MASK, TABLE_OR_PAGE, VA_BITS, VALID, table_index};

/// Memory holding translation tables, read the way the MMU reads it: "the descriptor at index
/// `index` of the table at physical address `table`". [`translate`] walks any such memory; the
/// kernel implements it for its identity-mapped RAM, [`PageTables`] for its own tables.
///
/// [`PageTables`]: crate::PageTables
pub trait ReadTables {
    /// Descriptor `index` (below 512) of the table at `table`, or `None` when no table this
    /// memory knows lies there.
    fn descriptor(&self, table: u64, index: usize) -> Option<u64>;
}

/// Result of translating one address.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Translation {
    pub physical: u64,
    pub kind: MemoryKind,
    /// Size of the block or page that maps it.
    pub block_bytes: u64,
}

/// Walks the tables from the root at `root` as the MMU would: what `va` maps to, or `None` when
/// an access to it would fault (or a table on the way is one `memory` does not know).
pub fn translate(memory: &impl ReadTables, root: u64, va: u64) -> Option<Translation> {
    if va >= 1 << VA_BITS {
        return None;
    }
    let mut table = root;
    for level in 1..=3u32 {
        let shift = 39 - 9 * level;
        let entry = memory.descriptor(table, table_index(va, level))?;
        if entry & VALID == 0 {
            return None;
        }
        let is_table = entry & TABLE_OR_PAGE != 0 && level < 3;
        if !is_table {
            let block_bytes = 1u64 << shift;
            let physical = (entry & ADDRESS_MASK & !(block_bytes - 1)) | (va & (block_bytes - 1));
            let kind = MemoryKind::from_attributes(entry)?;
            return Some(Translation { physical, kind, block_bytes });
        }
        table = entry & ADDRESS_MASK;
    }
    None
}
