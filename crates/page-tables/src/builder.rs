//! The builder: [`PageTables`] owns a root and a pool of tables, maps ranges with the largest
//! blocks they allow, splits a block when a later mapping needs finer attributes, and refuses
//! what it cannot do with a [`MapError`]. Everything here writes only its own tables.

use core::fmt;

use beamcore_mem_layout::PROCESS_REGION_START;

use crate::descriptor::{
    ADDRESS_MASK, ATTRIBUTE_MASK, PAGE, TABLE_OR_PAGE, Table, VA_BITS, VALID, page_descriptor, table_address,
    table_descriptor, table_index,
};
use crate::{MemoryKind, ReadTables, Translation, translate};

/// Why a mapping could not be made.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MapError {
    /// Address, size not 4 KiB aligned.
    Unaligned { address: u64 },
    /// The range reaches beyond the 39-bit address space.
    OutOfRange { address: u64 },
    /// The pool of translation tables is used up.
    OutOfTables,
    /// A device lies in the process region (`PROCESS_REGION_START` and up), whose addresses the
    /// kernel maps itself.
    InProcessRegion { address: u64 },
    /// A table descriptor on the way points at a table that is not one of these tables (linked
    /// in by someone else): the builder writes only its own tables.
    ForeignTable { address: u64 },
}

impl fmt::Display for MapError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MapError::Unaligned { address } => write!(f, "address {address:#x} is not page aligned"),
            MapError::OutOfRange { address } => {
                write!(f, "address {address:#x} is beyond the {VA_BITS}-bit address space")
            }
            MapError::OutOfTables => write!(f, "the translation table pool is exhausted"),
            MapError::InProcessRegion { address } => {
                write!(f, "device at {address:#x} lies in the process region (from {PROCESS_REGION_START:#x})")
            }
            MapError::ForeignTable { address } => {
                write!(f, "a table descriptor points at {address:#x}, which is not one of the tables being built")
            }
        }
    }
}

/// A level-1 root table plus a pool of `N` tables for levels 2 and 3.
#[repr(C)]
pub struct PageTables<const N: usize> {
    pub(crate) root: Table,
    pool: [Table; N],
    used: usize,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Granularity {
    Largest,
    Pages,
}

impl<const N: usize> Default for PageTables<N> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const N: usize> ReadTables for PageTables<N> {
    fn descriptor(&self, table: u64, index: usize) -> Option<u64> {
        let table = match self.pool_index(table)? {
            None => &self.root,
            Some(index) => &self.pool[index],
        };
        table.0.get(index).copied()
    }
}

impl<const N: usize> PageTables<N> {
    pub const fn new() -> Self {
        PageTables { root: Table::EMPTY, pool: [Table::EMPTY; N], used: 0 }
    }

    /// Address of the root table, for TTBR0_EL1.
    pub fn root_address(&self) -> u64 {
        &self.root as *const Table as u64
    }

    /// Tables taken from the pool so far.
    pub fn tables_used(&self) -> usize {
        self.used
    }

    /// The memory the tables occupy, `(start, bytes)`, for cache maintenance after writing them.
    pub fn memory(&self) -> (u64, usize) {
        (self as *const Self as u64, core::mem::size_of::<Self>())
    }

    /// Which of our tables lies at `address`: `Some(None)` the root, `Some(Some(i))` pool table
    /// `i` (one taken already), `None` none of them.
    fn pool_index(&self, address: u64) -> Option<Option<usize>> {
        if address == self.root_address() {
            return Some(None);
        }
        let offset = address.checked_sub(self.pool.as_ptr() as u64)?;
        let index = usize::try_from(offset / PAGE).ok()?;
        (offset % PAGE == 0 && index < self.used).then_some(Some(index))
    }

    /// Our table at `address`, to write.
    fn table_mut(&mut self, address: u64) -> Result<&mut Table, MapError> {
        match self.pool_index(address) {
            Some(None) => Ok(&mut self.root),
            Some(Some(index)) => Ok(&mut self.pool[index]),
            None => Err(MapError::ForeignTable { address }),
        }
    }

    /// Maps `[virt, virt + bytes)` to `[phys, phys + bytes)` as `kind`, replacing what was there.
    pub fn map(&mut self, virt: u64, phys: u64, bytes: u64, kind: MemoryKind) -> Result<(), MapError> {
        self.set_range(virt, bytes, Some((phys, kind)), Granularity::Largest)
    }

    /// Like [`map`](Self::map), but always with 4 KiB pages, so that single pages of the range
    /// can later be unmapped and remapped while other cores use the rest, without splitting a
    /// live block (which would need break-before-make).
    pub fn map_pages(&mut self, virt: u64, phys: u64, bytes: u64, kind: MemoryKind) -> Result<(), MapError> {
        self.set_range(virt, bytes, Some((phys, kind)), Granularity::Pages)
    }

    /// Makes `[virt, virt + bytes)` fault on any access (guard pages).
    pub fn unmap(&mut self, virt: u64, bytes: u64) -> Result<(), MapError> {
        self.set_range(virt, bytes, None, Granularity::Largest)
    }

    /// Sets one existing level-3 page entry: maps `virt` as `kind` (identity) or unmaps it.
    /// Returns false, changing nothing, when `virt` is not covered by a level-3 table of these
    /// tables (the range was not mapped with [`map_pages`](Self::map_pages)): a live block is
    /// never split here.
    pub fn set_page(&mut self, virt: u64, kind: Option<MemoryKind>) -> bool {
        let mut table = self.root_address();
        for level in 1..=2u32 {
            let Some(entry) = self.descriptor(table, table_index(virt, level)) else {
                return false;
            };
            match table_address(entry) {
                Some(next) => table = next,
                None => return false,
            }
        }
        let page = virt & !(PAGE - 1);
        match self.table_mut(table) {
            Ok(level3) => {
                level3.0[table_index(virt, 3)] = kind.map_or(0, |kind| page_descriptor(page, kind));
                true
            }
            Err(_) => false,
        }
    }

    fn set_range(
        &mut self,
        virt: u64,
        bytes: u64,
        target: Option<(u64, MemoryKind)>,
        granularity: Granularity,
    ) -> Result<(), MapError> {
        for address in [virt, bytes, target.map_or(0, |(phys, _)| phys)] {
            if address % PAGE != 0 {
                return Err(MapError::Unaligned { address });
            }
        }
        let end = virt.checked_add(bytes).ok_or(MapError::OutOfRange { address: virt })?;
        if end > 1 << VA_BITS {
            return Err(MapError::OutOfRange { address: end - 1 });
        }
        let mut offset = 0;
        while offset < bytes {
            let va = virt + offset;
            let pa = target.map(|(phys, kind)| (phys + offset, kind));
            offset += self.set_one(va, pa, bytes - offset, granularity)?;
        }
        Ok(())
    }

    /// Writes the largest block at `va` that fits in `remaining`; returns its size.
    fn set_one(
        &mut self,
        va: u64,
        target: Option<(u64, MemoryKind)>,
        remaining: u64,
        granularity: Granularity,
    ) -> Result<u64, MapError> {
        let mut table = self.root_address();
        for level in 1..=3u32 {
            let shift = 39 - 9 * level;
            let block = 1u64 << shift;
            let index = table_index(va, level);
            let aligned = va.is_multiple_of(block) && target.is_none_or(|(pa, _)| pa.is_multiple_of(block));
            if level == 3 || (granularity == Granularity::Largest && aligned && remaining >= block) {
                let page_bit = if level == 3 { TABLE_OR_PAGE } else { 0 };
                self.table_mut(table)?.0[index] = match target {
                    Some((pa, kind)) => pa | kind.attributes() | VALID | page_bit,
                    None => 0,
                };
                return Ok(block);
            }
            table = self.next_table(table, index, level)?;
        }
        unreachable!("level 3 always writes a page")
    }

    /// The table entry `index` of `table` (at `level`) points to, creating it (and splitting a
    /// block into it) if needed.
    fn next_table(&mut self, table: u64, index: usize, level: u32) -> Result<u64, MapError> {
        let entry = self.table_mut(table)?.0[index];
        if let Some(next) = table_address(entry) {
            return Ok(next);
        }
        if self.used == N {
            return Err(MapError::OutOfTables);
        }
        let new = &mut self.pool[self.used];
        self.used += 1;
        *new = Table::EMPTY;
        if entry & VALID != 0 {
            // Split a block: the new table reproduces it in next-level pieces.
            let child_bytes = 1u64 << (39 - 9 * (level + 1));
            let base = entry & ADDRESS_MASK;
            let attributes = entry & ATTRIBUTE_MASK;
            let page_bit = if level + 1 == 3 { TABLE_OR_PAGE } else { 0 };
            for (i, child) in new.0.iter_mut().enumerate() {
                *child = (base + i as u64 * child_bytes) | attributes | VALID | page_bit;
            }
        }
        let address = new as *const Table as u64;
        self.table_mut(table)?.0[index] = table_descriptor(address);
        Ok(address)
    }

    /// Walks these tables as the MMU would (see [`translate`]).
    pub fn translate(&self, va: u64) -> Option<Translation> {
        translate(self, self.root_address(), va)
    }
}
