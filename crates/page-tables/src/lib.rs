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

mod builder;
mod descriptor;
mod walk;

#[cfg(test)]
mod tests;

pub use builder::{MapError, PageTables};
pub use descriptor::{
    MAIR_VALUE, MemoryKind, Table, VA_BITS, page_address, page_descriptor, table_address, table_descriptor, table_index,
};
pub use walk::{ReadTables, Translation, translate};
