use crate::descriptor::{PAGE, PXN, TABLE_OR_PAGE, VALID};
use crate::*;

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
        (0u64..4, 0u64..512, prop_oneof![Just(0u64), 0u64..512]).prop_map(|(g, m, p)| g * GIB + m * 2 * MIB + p * PAGE)
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
