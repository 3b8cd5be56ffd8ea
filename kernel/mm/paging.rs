//! AArch64 stage-1 translation tables (4 KiB granule, 39-bit addresses, levels 1 to 3), built
//! from a fixed pool so they can be written before there is a heap.
//!
//! Pure: the tables are ordinary memory and descriptors hold their addresses, so the builder and
//! the walker run (and are tested) on the host too. The kernel's map uses identity translation,
//! and [`PageTables::map`] picks the largest block each piece allows (1 GiB, 2 MiB, 4 KiB),
//! splitting a block into a next-level table when a later mapping needs finer attributes.
//!
//! ```text
//!  VA[38:30] -> level 1 (1 GiB blocks) -> VA[29:21] level 2 (2 MiB) -> VA[20:12] level 3 (4 KiB)
//! ```

use core::fmt;

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
    /// A device lies in the process region (`layout::PROCESS_REGION_START` and up), whose
    /// addresses the kernel maps itself.
    InProcessRegion { address: u64 },
}

impl fmt::Display for MapError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MapError::Unaligned { address } => write!(f, "address {address:#x} is not page aligned"),
            MapError::OutOfRange { address } => {
                write!(f, "address {address:#x} is beyond the {VA_BITS}-bit address space")
            }
            MapError::OutOfTables => write!(f, "the translation table pool is exhausted"),
            MapError::InProcessRegion { address } => write!(
                f,
                "device at {address:#x} lies in the process region (from {:#x})",
                crate::mm::layout::PROCESS_REGION_START
            ),
        }
    }
}

/// One translation table: 512 descriptors, aligned to its size as the architecture requires.
#[repr(C, align(4096))]
#[derive(Clone, Copy)]
pub struct Table([u64; ENTRIES]);

impl Table {
    pub const EMPTY: Table = Table([0; ENTRIES]);
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
    /// Returns false, changing nothing, when `virt` is not covered by a level-3 table (the range
    /// was not mapped with [`map_pages`](Self::map_pages)): a live block is never split here.
    pub fn set_page(&mut self, virt: u64, kind: Option<MemoryKind>) -> bool {
        let mut table: *mut Table = &mut self.root;
        for level in 1..=2u32 {
            let shift = 39 - 9 * level;
            // SAFETY: as in `set_one`: descriptors only point at tables of `self`.
            let entry = unsafe { (*table).0[((virt >> shift) & 0x1ff) as usize] };
            if entry & (VALID | TABLE_OR_PAGE) != VALID | TABLE_OR_PAGE {
                return false;
            }
            table = (entry & ADDRESS_MASK) as *mut Table;
        }
        let page = virt & !(PAGE - 1);
        // SAFETY: `table` is a level-3 table of `self` (walked above).
        let entry = unsafe { &mut (*table).0[((virt >> 12) & 0x1ff) as usize] };
        *entry = kind.map_or(0, |kind| page | kind.attributes() | VALID | TABLE_OR_PAGE);
        true
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
        let mut table: *mut Table = &mut self.root;
        for level in 1..=3u32 {
            let shift = 39 - 9 * level;
            let block = 1u64 << shift;
            let index = ((va >> shift) & 0x1ff) as usize;
            let aligned = va.is_multiple_of(block) && target.is_none_or(|(pa, _)| pa.is_multiple_of(block));
            // SAFETY: `table` points at the root or at a pool table of `self`, which we borrow
            // mutably; descriptors only ever hold addresses of those tables.
            let entry = unsafe { &mut (*table).0[index] };
            if level == 3 || (granularity == Granularity::Largest && aligned && remaining >= block) {
                let page_bit = if level == 3 { TABLE_OR_PAGE } else { 0 };
                *entry = match target {
                    Some((pa, kind)) => pa | kind.attributes() | VALID | page_bit,
                    None => 0,
                };
                return Ok(block);
            }
            table = self.next_table(entry, level)?;
        }
        unreachable!("level 3 always writes a page")
    }

    /// The table an entry points to, creating it (and splitting a block into it) if needed.
    fn next_table(&mut self, entry: &mut u64, level: u32) -> Result<*mut Table, MapError> {
        if *entry & (VALID | TABLE_OR_PAGE) == VALID | TABLE_OR_PAGE {
            return Ok((*entry & ADDRESS_MASK) as *mut Table);
        }
        if self.used == N {
            return Err(MapError::OutOfTables);
        }
        let new = &mut self.pool[self.used];
        self.used += 1;
        *new = Table::EMPTY;
        if *entry & VALID != 0 {
            // Split a block: the new table reproduces it in next-level pieces.
            let child_bytes = 1u64 << (39 - 9 * (level + 1));
            let base = *entry & ADDRESS_MASK;
            let attributes = *entry & ATTRIBUTE_MASK;
            let page_bit = if level + 1 == 3 { TABLE_OR_PAGE } else { 0 };
            for (i, child) in new.0.iter_mut().enumerate() {
                *child = (base + i as u64 * child_bytes) | attributes | VALID | page_bit;
            }
        }
        let address = new as *mut Table;
        *entry = address as u64 | VALID | TABLE_OR_PAGE;
        Ok(address)
    }

    /// Walks the tables as the MMU would.
    pub fn translate(&self, va: u64) -> Option<Translation> {
        if va >= 1 << VA_BITS {
            return None;
        }
        let mut table: *const Table = &self.root;
        for level in 1..=3u32 {
            let shift = 39 - 9 * level;
            // SAFETY: as in `set_one`: descriptors only point at tables of `self`.
            let entry = unsafe { (*table).0[((va >> shift) & 0x1ff) as usize] };
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
            table = (entry & ADDRESS_MASK) as *const Table;
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GIB: u64 = 1 << 30;
    const MIB: u64 = 1 << 20;

    fn tables() -> Box<PageTables<16>> {
        // The tables are large: build them on the heap, not the test thread's stack.
        let mut boxed: Box<core::mem::MaybeUninit<PageTables<16>>> = Box::new_uninit();
        // SAFETY: all-zero bytes are a valid, empty `PageTables` (arrays of zero u64, used = 0).
        unsafe {
            boxed.as_mut_ptr().write_bytes(0, 1);
            boxed.assume_init()
        }
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

    #[test]
    fn descriptors_built_by_hand_walk_like_the_builders() {
        let mut t = tables();
        let va = 300 * GIB + 5 * MIB + 3 * PAGE;
        let (mut level2, mut level3) = (Box::new(Table::EMPTY), Box::new(Table::EMPTY));
        t.root.0[table_index(va, 1)] = table_descriptor(&*level2 as *const Table as u64);
        level2.0[table_index(va, 2)] = table_descriptor(&*level3 as *const Table as u64);
        level3.0[table_index(va, 3)] = page_descriptor(0x4123_4000, MemoryKind::ReadWrite);
        let tr = t.translate(va + 0x18).unwrap();
        assert_eq!(tr, Translation { physical: 0x4123_4018, kind: MemoryKind::ReadWrite, block_bytes: PAGE });
        assert_eq!(table_address(level2.0[table_index(va, 2)]), Some(&*level3 as *const Table as u64));
        assert_eq!(page_address(level3.0[table_index(va, 3)]), Some(0x4123_4000));
        assert_eq!(page_address(0), None);
        assert_eq!(table_address(page_descriptor(0x1000, MemoryKind::ReadWrite) & !TABLE_OR_PAGE), None);
        assert!(t.translate(va + PAGE).is_none());
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
}
