//! Every rejected word of the command line gets its own line, in order, whatever their number
//! (40 here, and the rest of the line still applies), and no byte of a rejected word reaches
//! the terminal unless it is printable ASCII: a right-to-left override (U+202E), a right-to-left
//! mark (U+200F), printable non-ASCII text and an escape sequence are all shown as `\xNN`.
//! qemu-test: configs=a72-smp1
//! qemu-test: append=bad1 bad2 bad3 bad4 bad5 bad6 bad7 bad8 bad9 bad10 bad11 bad12 bad13 bad14 bad15 bad16 bad17 bad18 bad19 bad20 bad21 bad22 bad23 bad24 bad25 bad26 bad27 bad28 bad29 bad30 bad31 bad32 bad33 bad34 bad35 bad36 bad37 bad38 bad39 bad40 x\xe2\x80\xaey=1 \xe2\x80\x8fz w\xc3\xb6rd=1 \x1b[31mred=1 ticks=3
//! qemu-test: expect-count=40 ^bootargs: bad\d+ ignored: expected key=value$
//! qemu-test: expect-order=^bootargs: bad1 ignored
//! qemu-test: expect-order=^bootargs: bad20 ignored
//! qemu-test: expect-order=^bootargs: bad40 ignored
//! qemu-test: expect-order=^bootargs: x\\xe2\\x80\\xaey=1 ignored: unknown key
//! qemu-test: expect-order=^bootargs: \\xe2\\x80\\x8fz ignored: expected key=value$
//! qemu-test: expect-order=^bootargs: w\\xc3\\xb6rd=1 ignored: unknown key
//! qemu-test: expect-order=^bootargs: \\x1b\[31mred=1 ignored: unknown key
//! qemu-test: expect=^config: .*ticks=3
//! qemu-test: forbid=[^\x20-\x7e]
//! qemu-test: forbid=too many words|not shown

#![no_std]
#![no_main]

use beamcore::{ExitCode, println};

fn main() -> ExitCode {
    println!("test: the command line's rejected words were each reported");
    ExitCode::Success
}

beamcore::entry!(main);
