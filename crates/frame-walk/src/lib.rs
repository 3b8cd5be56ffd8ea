//! Walking a chain of AArch64 frame records, safely.
//!
//! With frame pointers kept (`-C force-frame-pointers=yes`), every function stores a frame
//! record `[x29 of its caller, return address]` and points x29 at it; following x29 gives the
//! return addresses of every active call. The chain may be broken: code without frame
//! pointers, a corrupted stack, a fault in a prologue. So each record is checked before it is
//! read: 8-aligned, wholly inside one of the stacks the walk may read (unmapped memory would
//! fault), higher than the previous record on the same stack (a loop would never end), and
//! holding a return address into the kernel's code. The walk stops at the first record that
//! fails, at a zero frame pointer (the outermost frame, set up by boot.S and
//! `context_process_start`) and after [`MAX_FRAMES`].
//!
//! Pure: memory is read through a closure, so the host tests walk made-up stacks; the kernel's
//! closure reads the running core's stacks (`beamcore::debug::backtrace`).

#![cfg_attr(not(test), no_std)]
#![forbid(unsafe_code)]

use core::ops::Range;

/// Most return addresses one walk collects.
pub const MAX_FRAMES: usize = 32;

/// Why a walk ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stop {
    /// A zero frame pointer or return address: the outermost frame.
    End,
    /// [`MAX_FRAMES`] collected; the chain may go on.
    DepthLimit,
    /// A frame pointer that is not 8-aligned.
    Misaligned(u64),
    /// A frame record not wholly inside any stack the walk may read.
    OutsideStack(u64),
    /// A frame record at or below the previous one on the same stack.
    NotAscending(u64),
    /// A return address outside the kernel's code.
    NotCode(u64),
}

/// The return addresses of a chain of frame records, innermost first, and why the walk
/// stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Walk {
    pub frames: [u64; MAX_FRAMES],
    pub len: usize,
    pub stop: Stop,
}

impl Walk {
    /// The return addresses collected.
    pub fn frames(&self) -> &[u64] {
        &self.frames[..self.len]
    }
}

/// Follows the frame records from `fp`. `stacks` are the address ranges the walk may read
/// (empty ranges are ignored); `read` loads the 8-byte word at an address inside one of them;
/// `is_code` says whether a return address lies in the kernel's code.
pub fn walk(fp: u64, stacks: &[Range<usize>], read: impl Fn(usize) -> u64, is_code: impl Fn(u64) -> bool) -> Walk {
    let mut result = Walk { frames: [0; MAX_FRAMES], len: 0, stop: Stop::End };
    let mut fp = fp;
    let mut previous: Option<(usize, u64)> = None;
    loop {
        if fp == 0 {
            result.stop = Stop::End;
            break;
        }
        if result.len == MAX_FRAMES {
            result.stop = Stop::DepthLimit;
            break;
        }
        if !fp.is_multiple_of(8) {
            result.stop = Stop::Misaligned(fp);
            break;
        }
        let record = fp as usize;
        let Some(stack) =
            stacks.iter().position(|s| s.start <= record && record.checked_add(16).is_some_and(|end| end <= s.end))
        else {
            result.stop = Stop::OutsideStack(fp);
            break;
        };
        if previous.is_some_and(|(on, below)| on == stack && fp <= below) {
            result.stop = Stop::NotAscending(fp);
            break;
        }
        let (caller_fp, return_address) = (read(record), read(record + 8));
        if return_address == 0 {
            result.stop = Stop::End;
            break;
        }
        if !is_code(return_address) {
            result.stop = Stop::NotCode(return_address);
            break;
        }
        result.frames[result.len] = return_address;
        result.len += 1;
        previous = Some((stack, fp));
        fp = caller_fp;
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A made-up stack of 8-byte words at `base`; `read` panics outside it, so a walk that
    /// reads beyond what it checked fails the test.
    struct Memory {
        base: usize,
        words: Vec<u64>,
    }

    impl Memory {
        fn new(base: usize, words: usize) -> Memory {
            Memory { base, words: vec![0; words] }
        }
        fn range(&self) -> Range<usize> {
            self.base..self.base + self.words.len() * 8
        }
        fn record(&mut self, at: usize, caller_fp: u64, return_address: u64) {
            self.words[(at - self.base) / 8] = caller_fp;
            self.words[(at - self.base) / 8 + 1] = return_address;
        }
        fn read(&self, at: usize) -> u64 {
            assert!(self.range().contains(&at), "read of {at:#x} outside the stack");
            self.words[(at - self.base) / 8]
        }
    }

    fn code(address: u64) -> bool {
        (0x4000_0000..0x4010_0000).contains(&address)
    }

    #[test]
    fn follows_the_chain_to_the_outermost_frame() {
        let mut stack = Memory::new(0x8000, 64);
        stack.record(0x8010, 0x8040, 0x4000_0100);
        stack.record(0x8040, 0x8100, 0x4000_0200);
        stack.record(0x8100, 0, 0x4000_0300);
        let walk = walk(0x8010, &[stack.range()], |a| stack.read(a), code);
        assert_eq!(walk.frames(), &[0x4000_0100, 0x4000_0200, 0x4000_0300]);
        assert_eq!(walk.stop, Stop::End);
    }

    #[test]
    fn stops_at_records_it_may_not_read_or_trust() {
        let mut stack = Memory::new(0x8000, 64);
        stack.record(0x8010, 0x8044, 0x4000_0100);
        let w = walk(0x8010, &[stack.range()], |a| stack.read(a), code);
        assert_eq!((w.frames(), w.stop), (&[0x4000_0100][..], Stop::Misaligned(0x8044)));

        stack.record(0x8010, 0x9000, 0x4000_0100);
        let w = walk(0x8010, &[stack.range()], |a| stack.read(a), code);
        assert_eq!(w.stop, Stop::OutsideStack(0x9000));

        // The last record of a stack must fit whole: 0x81f8 + 16 runs past its end.
        stack.record(0x8010, 0x81f8, 0x4000_0100);
        let w = walk(0x8010, &[stack.range()], |a| stack.read(a), code);
        assert_eq!(w.stop, Stop::OutsideStack(0x81f8));

        stack.record(0x8010, 0x8040, 0x4000_0100);
        stack.record(0x8040, 0x8010, 0x4000_0200);
        let w = walk(0x8010, &[stack.range()], |a| stack.read(a), code);
        assert_eq!((w.len, w.stop), (2, Stop::NotAscending(0x8010)), "a loop ends");

        stack.record(0x8040, 0x8100, 0x1234);
        let w = walk(0x8010, &[stack.range()], |a| stack.read(a), code);
        assert_eq!((w.len, w.stop), (1, Stop::NotCode(0x1234)));

        let w = walk(0x7000, &[stack.range()], |a| stack.read(a), code);
        assert_eq!((w.len, w.stop), (0, Stop::OutsideStack(0x7000)));
        let w = walk(0, &[stack.range()], |a| stack.read(a), code);
        assert_eq!((w.len, w.stop), (0, Stop::End));
        let top = !7u64;
        let w = walk(top, &[stack.range()], |a| stack.read(a), code);
        assert_eq!(w.stop, Stop::OutsideStack(top), "no overflow at the top of memory");
    }

    #[test]
    fn a_long_chain_stops_at_the_depth_limit() {
        let mut stack = Memory::new(0x8000, 256);
        for i in 0..100 {
            stack.record(0x8000 + i * 16, (0x8000 + (i + 1) * 16) as u64, 0x4000_0000 + i as u64 * 4);
        }
        let w = walk(0x8000, &[stack.range()], |a| stack.read(a), code);
        assert_eq!((w.len, w.stop), (MAX_FRAMES, Stop::DepthLimit));
    }

    #[test]
    fn crosses_from_one_stack_to_another() {
        // An exception on the kernel's stack whose record leads into the interrupted
        // process's stack, which lies below it in memory.
        let mut kernel = Memory::new(0x10_0000, 64);
        let mut process = Memory::new(0x8000, 64);
        kernel.record(0x10_0010, 0x8020, 0x4000_0100);
        process.record(0x8020, 0x8080, 0x4000_0200);
        process.record(0x8080, 0, 0x4000_0300);
        let read = |a: usize| if kernel.range().contains(&a) { kernel.read(a) } else { process.read(a) };
        let w = walk(0x10_0010, &[kernel.range(), process.range()], read, code);
        assert_eq!(w.frames(), &[0x4000_0100, 0x4000_0200, 0x4000_0300]);
        assert_eq!(w.stop, Stop::End);
        let w = walk(0x10_0010, &[kernel.range(), 0..0], |a| kernel.read(a), code);
        assert_eq!((w.len, w.stop), (1, Stop::OutsideStack(0x8020)), "only the stacks it is given");
    }
}
