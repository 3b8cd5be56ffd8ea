//! ATAGs: the boot-information list a loader passes instead of a device tree (QEMU `raspi4b`
//! without `-dtb`, at x0 = 0x100). beamcore reads the RAM (`ATAG_MEM`) and the kernel command
//! line (`ATAG_CMDLINE`, where QEMU puts `-append`) from it; the rest comes from board defaults.
//!
//! The list is a run of little-endian 32-bit words, one tag after another (Linux
//! `Documentation/arch/arm/setup.rst`, `arch/arm/include/uapi/asm/setup.h`):
//!
//! ```text
//!  tag:  size (in words, this header included) | tag id | size - 2 words of data
//!  ATAG_CORE    0x5441_0001  first, size 2 (no data) or 5 (flags, page size, root device)
//!  ATAG_MEM     0x5441_0002  size 4: bytes, start address (one per RAM bank)
//!  ATAG_CMDLINE 0x5441_0009  NUL-terminated command line, padded to a whole word
//!  ATAG_NONE    0x0000_0000  size 0: the end of the list
//! ```
//!
//! Pure: it reads a byte slice, so it is tested on the host.

use core::fmt;

use super::{MAX_MEMORY_REGIONS, Region};

pub const ATAG_NONE: u32 = 0;
pub const ATAG_CORE: u32 = 0x5441_0001;
pub const ATAG_MEM: u32 = 0x5441_0002;
pub const ATAG_CMDLINE: u32 = 0x5441_0009;

/// Header of a tag: its size in words and its id.
const HEADER_WORDS: usize = 2;

/// What beamcore takes from an ATAG list.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BootTags<'a> {
    /// RAM banks, in list order (beyond [`MAX_MEMORY_REGIONS`] they are dropped).
    pub memory: heapless::Vec<Region, MAX_MEMORY_REGIONS>,
    /// The command line without its terminating NUL, if the list has one. Raw bytes: a word
    /// that is not UTF-8 is the bootargs parser's to report, not a reason to drop the list.
    pub cmdline: Option<&'a [u8]>,
}

/// Why bytes are not a usable ATAG list.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AtagsError {
    /// The first tag is not `ATAG_CORE` with size 2 or 5: these are not ATAGs.
    NotAtags,
    /// A tag claims fewer words than its header, or `ATAG_MEM` has the wrong size.
    BadTag { offset_bytes: usize, tag: u32, size_words: u32 },
    /// The list runs past the bytes given before its `ATAG_NONE`.
    Truncated { limit_bytes: usize },
}

impl fmt::Display for AtagsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            AtagsError::NotAtags => write!(f, "no ATAG_CORE tag: not an ATAG list"),
            AtagsError::BadTag { offset_bytes, tag, size_words } => {
                write!(f, "ATAG {tag:#x} at byte {offset_bytes} has a bad size of {size_words} words")
            }
            AtagsError::Truncated { limit_bytes } => {
                write!(f, "ATAG list runs past {limit_bytes} bytes without ATAG_NONE")
            }
        }
    }
}

fn word(bytes: &[u8], index: usize) -> Option<u32> {
    let start = index.checked_mul(4)?;
    let chunk = bytes.get(start..start.checked_add(4)?)?;
    Some(u32::from_le_bytes([chunk[0], chunk[1], chunk[2], chunk[3]]))
}

/// True when `bytes` start with an `ATAG_CORE` tag: worth parsing as ATAGs.
pub fn looks_like_atags(bytes: &[u8]) -> bool {
    matches!((word(bytes, 0), word(bytes, 1)), (Some(2 | 5), Some(ATAG_CORE)))
}

/// Parses the ATAG list at the start of `bytes` (which may extend beyond the list's end).
pub fn parse(bytes: &[u8]) -> Result<BootTags<'_>, AtagsError> {
    if !looks_like_atags(bytes) {
        return Err(AtagsError::NotAtags);
    }
    let truncated = AtagsError::Truncated { limit_bytes: bytes.len() };
    let mut tags = BootTags { memory: heapless::Vec::new(), cmdline: None };
    let mut at = 0usize; // in words
    loop {
        let (Some(size), Some(tag)) = (word(bytes, at), word(bytes, at + 1)) else {
            return Err(truncated);
        };
        if tag == ATAG_NONE {
            return Ok(tags);
        }
        let bad = AtagsError::BadTag { offset_bytes: at * 4, tag, size_words: size };
        let size_words = size as usize;
        if size_words < HEADER_WORDS {
            return Err(bad);
        }
        let end_bytes = at.checked_add(size_words).and_then(|end| end.checked_mul(4)).ok_or(truncated)?;
        if end_bytes > bytes.len() {
            return Err(truncated);
        }
        let data = &bytes[(at + HEADER_WORDS) * 4..end_bytes];
        match tag {
            ATAG_MEM => {
                let (Some(region_bytes), Some(start), 4) = (word(data, 0), word(data, 1), size_words) else {
                    return Err(bad);
                };
                if region_bytes > 0 {
                    // Banks beyond MAX_MEMORY_REGIONS are not used.
                    let _ = tags.memory.push(Region { base: u64::from(start), bytes: u64::from(region_bytes) });
                }
            }
            ATAG_CMDLINE => {
                tags.cmdline = Some(data.split(|&b| b == 0).next().unwrap_or_default());
            }
            _ => {}
        }
        at += size_words;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Builds an ATAG list from (tag, data words) pairs, as a loader lays it out.
    fn list(tags: &[(u32, Vec<u32>)]) -> Vec<u8> {
        let mut words = Vec::new();
        for (tag, data) in tags {
            words.push((data.len() + HEADER_WORDS) as u32);
            words.push(*tag);
            words.extend(data);
        }
        words.extend([0, ATAG_NONE]);
        words.iter().flat_map(|w| w.to_le_bytes()).collect()
    }

    fn cmdline_words(text: &str) -> Vec<u32> {
        let mut bytes = text.as_bytes().to_vec();
        bytes.push(0);
        while !bytes.len().is_multiple_of(4) {
            bytes.push(0);
        }
        bytes.chunks(4).map(|c| u32::from_le_bytes(c.try_into().unwrap())).collect()
    }

    /// The list QEMU's arm boot code writes for `raspi4b -append 'ticks=5 maxcpus=2'` (2 GiB
    /// machine, 960 MiB for the ARM): ATAG_CORE with data, ATAG_MEM, ATAG_CMDLINE.
    fn qemu_like(cmdline: &str) -> Vec<u8> {
        list(&[(ATAG_CORE, vec![1, 4096, 0]), (ATAG_MEM, vec![960 << 20, 0]), (ATAG_CMDLINE, cmdline_words(cmdline))])
    }

    #[test]
    fn reads_memory_and_command_line() {
        let bytes = qemu_like("ticks=5 maxcpus=2");
        let tags = parse(&bytes).unwrap();
        assert_eq!(tags.memory.as_slice(), &[Region { base: 0, bytes: 960 << 20 }]);
        assert_eq!(tags.cmdline, Some(&b"ticks=5 maxcpus=2"[..]));
    }

    #[test]
    fn command_line_of_every_length_mod_4_loses_nothing() {
        for text in ["", "a", "ab", "abc", "abcd", "abcde"] {
            let bytes = qemu_like(text);
            assert_eq!(parse(&bytes).unwrap().cmdline, Some(text.as_bytes()), "{text:?}");
        }
    }

    #[test]
    fn bytes_after_the_list_are_ignored() {
        let mut bytes = qemu_like("x=1");
        bytes.extend([0xff; 64]);
        assert_eq!(parse(&bytes).unwrap().cmdline, Some(&b"x=1"[..]));
    }

    #[test]
    fn minimal_list_has_nothing() {
        let bytes = list(&[(ATAG_CORE, vec![])]);
        assert_eq!(parse(&bytes), Ok(BootTags { memory: heapless::Vec::new(), cmdline: None }));
    }

    #[test]
    fn several_banks_and_unknown_tags() {
        let bytes = list(&[
            (ATAG_CORE, vec![]),
            (0x5441_0004, vec![7, 7]), // ATAG_RAMDISK: skipped
            (ATAG_MEM, vec![1 << 20, 0x1000_0000]),
            (ATAG_MEM, vec![2 << 20, 0]),
        ]);
        let tags = parse(&bytes).unwrap();
        assert_eq!(
            tags.memory.as_slice(),
            &[Region { base: 0x1000_0000, bytes: 1 << 20 }, Region { base: 0, bytes: 2 << 20 }]
        );
    }

    #[test]
    fn a_device_tree_or_zeroes_are_not_atags() {
        assert_eq!(parse(&[0xd0, 0x0d, 0xfe, 0xed, 0, 0, 0x10, 0]), Err(AtagsError::NotAtags));
        assert_eq!(parse(&[0; 64]), Err(AtagsError::NotAtags));
        assert_eq!(parse(&[]), Err(AtagsError::NotAtags));
        assert!(!looks_like_atags(&[0; 8]));
    }

    #[test]
    fn cut_list_is_truncated() {
        let bytes = qemu_like("ticks=5");
        // Without the ATAG_NONE terminator, and cut in the middle of the command line.
        for cut in [bytes.len() - 8, bytes.len() - 10, 30] {
            assert_eq!(parse(&bytes[..cut]), Err(AtagsError::Truncated { limit_bytes: cut }), "cut at {cut}");
        }
    }

    #[test]
    fn bad_sizes_are_rejected() {
        let mut words: Vec<u32> = vec![2, ATAG_CORE, 1, ATAG_MEM, 0, 0];
        let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
        assert_eq!(parse(&bytes), Err(AtagsError::BadTag { offset_bytes: 8, tag: ATAG_MEM, size_words: 1 }));
        words = vec![2, ATAG_CORE, 3, ATAG_MEM, 5, 0, ATAG_NONE];
        let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
        assert_eq!(parse(&bytes), Err(AtagsError::BadTag { offset_bytes: 8, tag: ATAG_MEM, size_words: 3 }));
    }

    #[test]
    fn huge_size_does_not_overflow() {
        let words: Vec<u32> = vec![2, ATAG_CORE, u32::MAX, ATAG_CMDLINE, 0, 0];
        let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
        assert_eq!(parse(&bytes), Err(AtagsError::Truncated { limit_bytes: 24 }));
    }

    proptest::proptest! {
        /// Whatever the bytes, parsing ends with a result (no panic, no endless loop).
        #[test]
        fn arbitrary_bytes_never_panic(mut words in proptest::collection::vec(proptest::num::u32::ANY, 0..64)) {
            if words.len() >= 2 {
                words[0] = 5;
                words[1] = ATAG_CORE;
            }
            let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
            let _ = parse(&bytes);
        }
    }

    #[test]
    fn non_utf8_command_line_is_kept_as_bytes_with_the_memory() {
        // Bytes ff 80 'a' NUL: not UTF-8; the list (and its RAM bank) stays usable.
        let bytes = list(&[(ATAG_CORE, vec![]), (ATAG_MEM, vec![1 << 20, 0]), (ATAG_CMDLINE, vec![0x0061_80ff])]);
        let tags = parse(&bytes).unwrap();
        assert_eq!(tags.cmdline, Some(&[0xff, 0x80, b'a'][..]));
        assert_eq!(tags.memory.as_slice(), &[Region { base: 0, bytes: 1 << 20 }]);
    }
}
