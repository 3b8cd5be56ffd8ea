//! The descriptor format: the bits of an AArch64 stage-1 descriptor, the memory kinds they
//! encode, and one table of 512 of them. Both the builder and the walk read and write these
//! bits, so the format is written once, apart from either.

/// Bits of virtual address the tables translate (TCR_EL1.T0SZ = 64 - 39).
pub const VA_BITS: u32 = 39;
pub(crate) const ENTRIES: usize = 512;
pub(crate) const PAGE: u64 = 4096;

/// MAIR_EL1 attribute indices the descriptors use; [`MAIR_VALUE`] defines them.
const ATTR_NORMAL: u64 = 0;
const ATTR_DEVICE: u64 = 1;
/// MAIR_EL1: index 0 Normal write-back read/write-allocate (inner and outer), index 1
/// Device-nGnRE (no gathering, no reordering, early write acknowledgement).
pub const MAIR_VALUE: u64 = 0xff | (0x04 << 8);

pub(crate) const VALID: u64 = 1 << 0;
pub(crate) const TABLE_OR_PAGE: u64 = 1 << 1;
const AP_READ_ONLY: u64 = 1 << 7;
const SH_INNER: u64 = 3 << 8;
const ACCESS_FLAG: u64 = 1 << 10;
pub(crate) const PXN: u64 = 1 << 53;
const UXN: u64 = 1 << 54;
pub(crate) const ADDRESS_MASK: u64 = 0x0000_ffff_ffff_f000;
pub(crate) const ATTRIBUTE_MASK: u64 = !ADDRESS_MASK & !(VALID | TABLE_OR_PAGE);

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
    pub(crate) fn attributes(self) -> u64 {
        let common = ACCESS_FLAG | UXN;
        match self {
            MemoryKind::Code => common | SH_INNER | (ATTR_NORMAL << 2) | AP_READ_ONLY,
            MemoryKind::ReadOnly => common | SH_INNER | (ATTR_NORMAL << 2) | AP_READ_ONLY | PXN,
            MemoryKind::ReadWrite => common | SH_INNER | (ATTR_NORMAL << 2) | PXN,
            MemoryKind::Device => common | (ATTR_DEVICE << 2) | PXN,
        }
    }

    pub(crate) fn from_attributes(attributes: u64) -> Option<MemoryKind> {
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

/// One translation table: 512 descriptors, aligned to its size as the architecture requires.
#[repr(C, align(4096))]
#[derive(Clone, Copy)]
pub struct Table(pub(crate) [u64; ENTRIES]);

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
