//! The kernel's own `memcpy` (kernel/hal/arch/aarch64/memcpy.S) copies exactly the bytes asked for:
//! every source and destination offset within 16 bytes (so every relative alignment, the word
//! path and the byte path), every length up to 300 and lengths around 4 KiB, the bytes on each
//! side of the destination untouched. The copies go through `memcpy` itself: their length is
//! hidden from the compiler, and the reference reads and writes are volatile byte accesses the
//! compiler cannot turn into a `memcpy` call.
//! qemu-test: configs=a72-smp1
//! qemu-test: expect=^test: memcpy checked \d+ copies, every byte right$
//! qemu-test: forbid=PANIC

#![no_std]
#![no_main]

extern crate alloc;

use alloc::vec;
use beamcore::{ExitCode, println};

const GUARD: u8 = 0xA5;

fn pattern(i: usize) -> u8 {
    (i.wrapping_mul(0x9E37_79B9) >> 7) as u8 ^ (i as u8)
}

/// Copies `len` bytes from `src[src_off..]` to `dst[dst_off..]` with `memcpy` and checks every
/// byte of `dst`, returning the first wrong index.
fn check(src: &[u8], dst: &mut [u8], src_off: usize, dst_off: usize, len: usize) -> Result<(), usize> {
    for byte in dst.iter_mut() {
        // SAFETY: a valid `&mut u8`.
        unsafe { core::ptr::write_volatile(byte, GUARD) };
    }
    let len = core::hint::black_box(len);
    // SAFETY: both ranges lie inside their slices (the callers size them), and the slices are
    // distinct allocations, so they do not overlap.
    unsafe { core::ptr::copy_nonoverlapping(src.as_ptr().add(src_off), dst.as_mut_ptr().add(dst_off), len) };
    for (i, byte) in dst.iter().enumerate() {
        // SAFETY: a valid `&u8`.
        let got = unsafe { core::ptr::read_volatile(byte) };
        let want = if (dst_off..dst_off + len).contains(&i) { pattern(src_off + i - dst_off) } else { GUARD };
        if got != want {
            return Err(i);
        }
    }
    Ok(())
}

fn main() -> ExitCode {
    let max = 4096 + 80;
    let mut src = vec![0u8; max + 32];
    for (i, byte) in src.iter_mut().enumerate() {
        // SAFETY: a valid `&mut u8`.
        unsafe { core::ptr::write_volatile(byte, pattern(i)) };
    }
    let mut dst = vec![0u8; max + 32];
    let lengths = (0..=300).chain(4096 - 70..=4096 + 70);
    let mut copies = 0u32;
    for len in lengths {
        for src_off in 0..16 {
            for dst_off in 0..16 {
                if let Err(at) = check(&src, &mut dst[..len + 32], src_off, dst_off, len) {
                    println!("test failed: memcpy of {len} bytes from offset {src_off} to {dst_off}: byte {at} wrong");
                    return ExitCode::Failure(1);
                }
                copies += 1;
            }
        }
    }
    println!("test: memcpy checked {copies} copies, every byte right");
    ExitCode::Success
}

beamcore::entry!(main);
