//! AArch64 stage-1 translation tables (4 KiB granule, 39-bit addresses, levels 1 to 3), built
//! from a fixed pool so they can be written before there is a heap.
//!
//! [`PageTables::map`] picks the largest block each piece allows (1 GiB, 2 MiB, 4 KiB),
//! splitting a block into a next-level table when a later mapping needs finer attributes.
//!
//! ```text
//!  VA[38:30] -> level 1 (1 GiB blocks) -> VA[29:21] level 2 (2 MiB) -> VA[20:12] level 3 (4 KiB)
//! ```
//!
//! **Why this is safe code.** A descriptor holds the physical address of the next table, and the
//! MMU needs exactly that, so the tables cannot hold indices instead. But the builder never has
//! to turn such an address back into a pointer: every table it writes is one of its own
//! ([`PageTables`] owns the root and a pool of `N` tables), so an address is resolved by
//! comparing it with the addresses of its own tables, which taking is safe. An address that is
//! none of them (a table someone else linked in) is [`MapError::ForeignTable`], not a wild
//! write. Reading tables that are not the builder's own (the kernel's process region adds
//! tables made from free frames) goes through the [`ReadTables`] seam: [`translate`] walks
//! any memory that can say what descriptor lies at "table X, index i", and the kernel
//! implements that one read for its identity-mapped RAM. So this crate holds the algorithm and
//! the kernel only the unsafe read and the system-register writes.
//!
//! The tables must not move once linked: a descriptor holds its table's address. The kernel's
//! are a `static`; tests keep theirs in a `Box`.

#![cfg_attr(not(test), no_std)]
#![forbid(unsafe_code)]

use core::fmt;

use beamcore_mem_layout::PROCESS_REGION_START;

/// Bits of virtual address the tables translate (TCR_EL1.T0SZ = 64 - 39).
pub const VA_BITS: u32 = 39;
const ENTRIES: usize = 512;
const PAGE: u64 = 4096;

/// MAIR_EL1 attribute indices the descriptors use; [`MAIR_VALUE`] defines them.
const ATTR_NORMAL: u64 = 0;
const ATTR_DEVICE: u64 = 1;
/// MAIR_EL1: index 0 Normal write-back read/write-allocate (inner and outer), index 1
/// Device-nGnRE (no gathering, no reordering, early write acknowledgement).
pub const MAIR_VALUE: u64 = 0xff | (0x04 << 8);

const VALID: u64 = 1 << 0;
const TABLE_OR_PAGE: u64 = 1 << 1;
const AP_READ_ONLY: u64 = 1 << 7;
const SH_INNER: u64 = 3 << 8;
const ACCESS_FLAG: u64 = 1 << 10;
const PXN: u64 = 1 << 53;
const UXN: u64 = 1 << 54;
const ADDRESS_MASK: u64 = 0x0000_ffff_ffff_f000;
const ATTRIBUTE_MASK: u64 = !ADDRESS_MASK & !(VALID | TABLE_OR_PAGE);

/// What a range of memory is used for; decides its attributes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MemoryKind {
    /// Kernel code: Normal cacheable, read-only, executable at EL1.
    Code,
    /// Constants: Normal cacheable, read-only, never executable.
    ReadOnly,
    /// Data, stacks, heap: Normal cacheable inner-shareable, read-write, never executable.
    /// Exclusives (LDXR/STXR) between cores are architecturally reliable only on such memory.
    ReadWrite,
    /// MMIO: Device-nGnRE, read-write, never executable.
    Device,
}

impl MemoryKind {
    fn attributes(self) -> u64 {
        let common = ACCESS_FLAG | UXN;
        match self {
            MemoryKind::Code => common | SH_INNER | (ATTR_NORMAL << 2) | AP_READ_ONLY,
            MemoryKind::ReadOnly => common | SH_INNER | (ATTR_NORMAL << 2) | AP_READ_ONLY | PXN,
            MemoryKind::ReadWrite => common | SH_INNER | (ATTR_NORMAL << 2) | PXN,
            MemoryKind::Device => common | (ATTR_DEVICE << 2) | PXN,
        }
    }

    fn from_attributes(attributes: u64) -> Option<MemoryKind> {
        [MemoryKind::Code, MemoryKind::ReadOnly, MemoryKind::ReadWrite, MemoryKind::Device]
            .into_iter()
            .find(|kind| kind.attributes() == attributes & ATTRIBUTE_MASK)
    }
}

/// The level-3 descriptor that maps the 4 KiB page at `physical` as `kind`.
pub fn page_descriptor(physical: u64, kind: MemoryKind) -> u64 {
    (physical & ADDRESS_MASK) | kind.attributes() | VALID | TABLE_OR_PAGE
}

/// The level-1 or level-2 descriptor that points at the next-level table at `physical`.
pub fn table_descriptor(physical: u64) -> u64 {
    (physical & ADDRESS_MASK) | VALID | TABLE_OR_PAGE
}

/// The table a level-1 or level-2 descriptor points at, if it is a table descriptor.
pub fn table_address(descriptor: u64) -> Option<u64> {
    (descriptor & (VALID | TABLE_OR_PAGE) == VALID | TABLE_OR_PAGE).then_some(descriptor & ADDRESS_MASK)
}

/// The address a valid level-3 page descriptor maps, or `None` for an invalid one.
pub fn page_address(descriptor: u64) -> Option<u64> {
    (descriptor & VALID != 0).then_some(descriptor & ADDRESS_MASK)
}

/// The index of `va` in its level-`level` table (1 to 3).
pub fn table_index(va: u64, level: u32) -> usize {
    ((va >> (39 - 9 * level)) & 0x1ff) as usize
}

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

/// One translation table: 512 descriptors, aligned to its size as the architecture requires.
#[repr(C, align(4096))]
#[derive(Clone, Copy)]
pub struct Table([u64; ENTRIES]);

impl Table {
    pub const EMPTY: Table = Table([0; ENTRIES]);

    /// Descriptor `index` (below 512).
    pub fn descriptor(&self, index: usize) -> u64 {
        self.0[index]
    }

    /// Sets descriptor `index` (below 512).
    pub fn set_descriptor(&mut self, index: usize, descriptor: u64) {
        self.0[index] = descriptor;
    }
}

/// Memory holding translation tables, read the way the MMU reads it: "the descriptor at index
/// `index` of the table at physical address `table`". [`translate`] walks any such memory; the
/// kernel implements it for its identity-mapped RAM, [`PageTables`] for its own tables.
pub trait ReadTables {
    /// Descriptor `index` (below 512) of the table at `table`, or `None` when no table this
    /// memory knows lies there.
    fn descriptor(&self, table: u64, index: usize) -> Option<u64>;
}

/// A level-1 root table plus a pool of `N` tables for levels 2 and 3.
#[repr(C)]
pub struct PageTables<const N: usize> {
    root: Table,
    pool: [Table; N],
    used: usize,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Granularity {
    Largest,
    Pages,
}

/// Result of translating one address.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Translation {
    pub physical: u64,
    pub kind: MemoryKind,
    /// Size of the block or page that maps it.
    pub block_bytes: u64,
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

#[cfg(test)]
mod tests {
    use super::*;

    const GIB: u64 = 1 << 30;
    const MIB: u64 = 1 << 20;

    fn tables() -> Box<PageTables<16>> {
        // Boxed: descriptors hold the tables' addresses, so they must not move once linked.
        Box::default()
    }

    #[test]
    fn large_aligned_range_uses_gib_blocks_and_no_tables() {
        let mut t = tables();
        t.map(GIB, GIB, 2 * GIB, MemoryKind::ReadWrite).unwrap();
        assert_eq!(t.tables_used(), 0);
        let tr = t.translate(GIB + 12345).unwrap();
        assert_eq!(tr, Translation { physical: GIB + 12345, kind: MemoryKind::ReadWrite, block_bytes: GIB });
        assert!(t.translate(3 * GIB).is_none());
    }

    #[test]
    fn kernel_sections_get_page_granular_attributes_inside_a_block() {
        let mut t = tables();
        t.map(GIB, GIB, GIB, MemoryKind::ReadWrite).unwrap();
        let text = GIB + 2 * MIB;
        t.map(text, text, 3 * PAGE, MemoryKind::Code).unwrap();
        t.map(text + 3 * PAGE, text + 3 * PAGE, PAGE, MemoryKind::ReadOnly).unwrap();
        t.unmap(text + 8 * PAGE, PAGE).unwrap();
        assert_eq!(t.translate(text + 5).unwrap().kind, MemoryKind::Code);
        assert_eq!(t.translate(text + 3 * PAGE).unwrap().kind, MemoryKind::ReadOnly);
        assert_eq!(t.translate(text + 4 * PAGE).unwrap().kind, MemoryKind::ReadWrite);
        assert!(t.translate(text + 8 * PAGE + 100).is_none(), "guard page must be unmapped");
        assert_eq!(t.translate(text + 9 * PAGE).unwrap().kind, MemoryKind::ReadWrite);
        // The split keeps the rest of the GiB as it was, in 2 MiB blocks where it can.
        let far = t.translate(GIB + 600 * MIB).unwrap();
        assert_eq!((far.physical, far.kind, far.block_bytes), (GIB + 600 * MIB, MemoryKind::ReadWrite, 2 * MIB));
        assert_eq!(t.tables_used(), 2);
    }

    #[test]
    fn page_granular_ranges_can_toggle_single_pages_without_new_tables() {
        let mut t = tables();
        t.map(GIB, GIB, GIB, MemoryKind::ReadWrite).unwrap();
        let pool = GIB + 64 * MIB;
        t.map_pages(pool, pool, 4 * MIB, MemoryKind::ReadWrite).unwrap();
        let used = t.tables_used();
        assert_eq!(t.translate(pool).unwrap().block_bytes, PAGE);
        assert!(t.set_page(pool + 5 * PAGE, None));
        assert!(t.translate(pool + 5 * PAGE).is_none());
        assert!(t.set_page(pool + 5 * PAGE + 8, Some(MemoryKind::ReadWrite)));
        assert_eq!(t.translate(pool + 5 * PAGE).unwrap().physical, pool + 5 * PAGE);
        assert!(!t.set_page(GIB + 512 * MIB, None), "a 2 MiB block must not be split by set_page");
        assert_eq!(t.translate(GIB + 512 * MIB).unwrap().block_bytes, 2 * MIB);
        assert_eq!(t.tables_used(), used);
    }

    #[test]
    fn devices_are_device_memory_and_unaligned_input_is_rejected() {
        let mut t = tables();
        t.map(0x0900_0000, 0x0900_0000, PAGE, MemoryKind::Device).unwrap();
        assert_eq!(t.translate(0x0900_0018).unwrap().kind, MemoryKind::Device);
        assert!(t.translate(0x0900_1000).is_none());
        assert_eq!(t.map(0x100, 0x100, PAGE, MemoryKind::Device), Err(MapError::Unaligned { address: 0x100 }));
        assert!(matches!(t.map(1 << 39, 1 << 39, PAGE, MemoryKind::Device), Err(MapError::OutOfRange { .. })));
    }

    #[test]
    fn pool_exhaustion_is_an_error() {
        let mut t = tables();
        let mut result = Ok(());
        for i in 0..40u64 {
            result = t.map(i * GIB, i * GIB, PAGE, MemoryKind::ReadWrite);
            if result.is_err() {
                break;
            }
        }
        assert_eq!(result, Err(MapError::OutOfTables));
    }

    /// Tables at made-up physical addresses, as the kernel's process region links frames into
    /// its root: the walk only needs [`ReadTables`].
    struct HandBuilt(Vec<(u64, Table)>);

    impl ReadTables for HandBuilt {
        fn descriptor(&self, table: u64, index: usize) -> Option<u64> {
            self.0.iter().find(|(address, _)| *address == table).map(|(_, t)| t.descriptor(index))
        }
    }

    #[test]
    fn descriptors_built_by_hand_walk_like_the_builders() {
        let va = 300 * GIB + 5 * MIB + 3 * PAGE;
        let (root, level2, level3) = (0x4000_0000u64, 0x4000_1000u64, 0x4000_7000u64);
        let (mut t1, mut t2, mut t3) = (Table::EMPTY, Table::EMPTY, Table::EMPTY);
        t1.set_descriptor(table_index(va, 1), table_descriptor(level2));
        t2.set_descriptor(table_index(va, 2), table_descriptor(level3));
        t3.set_descriptor(table_index(va, 3), page_descriptor(0x4123_4000, MemoryKind::ReadWrite));
        let memory = HandBuilt(vec![(root, t1), (level2, t2), (level3, t3)]);
        let tr = translate(&memory, root, va + 0x18).unwrap();
        assert_eq!(tr, Translation { physical: 0x4123_4018, kind: MemoryKind::ReadWrite, block_bytes: PAGE });
        assert_eq!(table_address(t2.descriptor(table_index(va, 2))), Some(level3));
        assert_eq!(page_address(t3.descriptor(table_index(va, 3))), Some(0x4123_4000));
        assert_eq!(page_address(0), None);
        assert_eq!(table_address(page_descriptor(0x1000, MemoryKind::ReadWrite) & !TABLE_OR_PAGE), None);
        assert!(translate(&memory, root, va + PAGE).is_none());
        assert!(translate(&memory, 0x5000_0000, va).is_none(), "a root the memory does not hold");
    }

    #[test]
    fn a_table_linked_in_from_outside_is_read_by_nobody_and_never_written() {
        let mut t = tables();
        let va = 300 * GIB;
        let foreign = 0x4000_7000;
        t.root.set_descriptor(table_index(va, 1), table_descriptor(foreign));
        assert_eq!(t.translate(va), None, "the builder's own walk does not follow it");
        assert_eq!(t.map(va, va, PAGE, MemoryKind::ReadWrite), Err(MapError::ForeignTable { address: foreign }));
        assert!(!t.set_page(va, None));
        assert_eq!(t.tables_used(), 0);
        assert!(MapError::ForeignTable { address: foreign }.to_string().contains("0x40007000"));
    }

    #[test]
    fn every_kind_round_trips_through_its_attributes() {
        for kind in [MemoryKind::Code, MemoryKind::ReadOnly, MemoryKind::ReadWrite, MemoryKind::Device] {
            assert_eq!(MemoryKind::from_attributes(kind.attributes() | VALID), Some(kind));
        }
        assert_ne!(MemoryKind::Code.attributes() & PXN, PXN, "code must be executable");
        for kind in [MemoryKind::ReadOnly, MemoryKind::ReadWrite, MemoryKind::Device] {
            assert_eq!(kind.attributes() & PXN, PXN, "{kind:?} must not be executable");
        }
    }

    /// Property tests: the tables agree with a plain model (the last mapping of an address wins)
    /// after any sequence of maps, page maps and unmaps, and bad input is refused with its error
    /// and changes nothing.
    mod properties {
        use super::*;
        use proptest::prelude::*;

        #[derive(Clone, Copy, Debug)]
        enum Op {
            Map { virt: u64, phys: u64, bytes: u64, kind: MemoryKind, pages: bool },
            Unmap { virt: u64, bytes: u64 },
        }

        impl Op {
            /// What the model says `va` maps to after this operation, if it covers `va`.
            fn covers(&self, va: u64) -> Option<Option<(u64, MemoryKind)>> {
                let (virt, bytes) = match *self {
                    Op::Map { virt, bytes, .. } | Op::Unmap { virt, bytes } => (virt, bytes),
                };
                (virt..virt + bytes).contains(&va).then(|| match *self {
                    Op::Map { phys, kind, .. } => Some((phys + (va - virt), kind)),
                    Op::Unmap { .. } => None,
                })
            }
        }

        fn kind() -> impl Strategy<Value = MemoryKind> {
            prop_oneof![
                Just(MemoryKind::Code),
                Just(MemoryKind::ReadOnly),
                Just(MemoryKind::ReadWrite),
                Just(MemoryKind::Device)
            ]
        }

        /// Page-aligned starts in the first 4 GiB, often on 2 MiB or 1 GiB boundaries so that
        /// blocks are used (and later split).
        fn start() -> impl Strategy<Value = u64> {
            (0u64..4, 0u64..512, prop_oneof![Just(0u64), 0u64..512])
                .prop_map(|(g, m, p)| g * GIB + m * 2 * MIB + p * PAGE)
        }

        fn op() -> impl Strategy<Value = Op> {
            let large = (0u64..2, 0u64..512, 0u64..16).prop_map(|(g, m, p)| g * GIB + m * 2 * MIB + (p + 1) * PAGE);
            let offset = prop_oneof![Just(0u64), Just(PAGE), Just(2 * MIB), Just(GIB)];
            prop_oneof![
                (start(), large.clone(), offset.clone(), kind()).prop_map(|(virt, bytes, offset, kind)| Op::Map {
                    virt,
                    phys: virt + offset,
                    bytes,
                    kind,
                    pages: false
                }),
                // Page granular: small ranges, or the pool would run out of level-3 tables.
                (start(), 1u64..1024, offset, kind()).prop_map(|(virt, pages, offset, kind)| Op::Map {
                    virt,
                    phys: virt + offset,
                    bytes: pages * PAGE,
                    kind,
                    pages: true
                }),
                (start(), large).prop_map(|(virt, bytes)| Op::Unmap { virt, bytes }),
            ]
        }

        /// A page number times the page size, half the time plus an offset that unaligns it.
        fn address(pages: impl Strategy<Value = u64>) -> impl Strategy<Value = u64> {
            (pages, prop_oneof![Just(0u64), 1u64..PAGE]).prop_map(|(page, offset)| page * PAGE + offset)
        }

        fn apply(t: &mut PageTables<64>, op: Op) -> Result<(), MapError> {
            match op {
                Op::Map { virt, phys, bytes, kind, pages: false } => t.map(virt, phys, bytes, kind),
                Op::Map { virt, phys, bytes, kind, pages: true } => t.map_pages(virt, phys, bytes, kind),
                Op::Unmap { virt, bytes } => t.unmap(virt, bytes),
            }
        }

        fn model(ops: &[Op], va: u64) -> Option<(u64, MemoryKind)> {
            ops.iter().rev().find_map(|op| op.covers(va)).flatten()
        }

        proptest! {
            #[test]
            fn translation_matches_the_last_mapping_of_every_address(
                ops in proptest::collection::vec(op(), 1..7),
                probes in proptest::collection::vec(0u64..(6 * GIB), 32),
            ) {
                let mut t: Box<PageTables<64>> = Box::default();
                for &op in &ops {
                    let result = apply(&mut t, op);
                    prop_assume!(result != Err(MapError::OutOfTables));
                    prop_assert_eq!(result, Ok(()));
                }
                let edges = ops.iter().flat_map(|op| {
                    let (virt, bytes) = match *op {
                        Op::Map { virt, bytes, .. } | Op::Unmap { virt, bytes } => (virt, bytes),
                    };
                    [virt.saturating_sub(1), virt, virt + bytes / 2, virt + bytes - 1, virt + bytes]
                });
                for va in edges.chain(probes) {
                    let found = t.translate(va);
                    prop_assert_eq!(found.map(|tr| (tr.physical, tr.kind)), model(&ops, va), "at {:#x}", va);
                    if let Some(tr) = found {
                        prop_assert!([PAGE, 2 * MIB, GIB].contains(&tr.block_bytes));
                    }
                }
            }

            #[test]
            fn unaligned_or_out_of_range_input_is_refused_and_changes_nothing(
                virt in address(prop_oneof![0u64..1 << 27, (1u64 << 27) - (1 << 20)..1 << 27]),
                phys in address(0u64..1 << 27),
                bytes in address(0u64..1 << 20),
                probes in proptest::collection::vec(0u64..(2 * GIB), 8),
            ) {
                let mut t = tables();
                t.map(0, 0, GIB + 2 * MIB + PAGE, MemoryKind::ReadWrite).unwrap();
                let used = t.tables_used();
                let before: Vec<_> = probes.iter().map(|&va| t.translate(va)).collect();
                let result = t.map(virt, phys, bytes, MemoryKind::Device);
                let first_unaligned = [virt, bytes, phys].into_iter().find(|a| a % PAGE != 0);
                if let Some(address) = first_unaligned {
                    prop_assert_eq!(result, Err(MapError::Unaligned { address }));
                } else if virt + bytes > 1 << VA_BITS {
                    prop_assert_eq!(result, Err(MapError::OutOfRange { address: virt + bytes - 1 }));
                } else {
                    prop_assume!(false);
                }
                prop_assert_eq!(t.tables_used(), used);
                let after: Vec<_> = probes.iter().map(|&va| t.translate(va)).collect();
                prop_assert_eq!(before, after);
            }
        }
    }
}
