#!/usr/bin/env python3
"""Raspberry Pi 4 images of beamcore, for the board and for QEMU's raspi4b machine.

    rpi4.py image         target/rpi4/: kernel8.img (no semihosting, checked) + config.txt
    rpi4.py qemu-image    target/rpi4-qemu/: kernel8.img with semihosting (QEMU exits with the
                          kernel's status) + raspi4b.dtb compiled from kernel/hal/board/rpi4-qemu.dts
    rpi4.py sd-card ELF --out DIR [--cmdline ARGS]
                          DIR/: kernel8.img (checked), config.txt, cmdline.txt and the ELF, from
                          an ELF built elsewhere: a program in a project of its own (template/'s
                          `make rpi4` builds it with `--no-default-features --features board-rpi4`)
    rpi4.py check IMAGE [--elf ELF] [--expect-trap]
                          fails when the flat image holds a semihosting trap (`hlt #0xf000`);
                          with --expect-trap, fails when it does not (shows the check can fail)

The kernel is a release build of `--features board-rpi4` (linked at 0x80000 by build.rs) in
its own cargo target directories, converted to a flat binary with llvm-objcopy: the Pi firmware
and QEMU raspi4b load kernel8.img at 0x80000 and enter it at its first byte, at EL2.
test-qemu.py imports this module for its raspi4b configurations.
"""

import argparse
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# Two cargo target directories: the board build and the semihosting build differ in features,
# and in one directory each would relink over the other every time.
CARGO_TARGET_DIRS = {False: ROOT / "target" / "rpi4-build" / "board", True: ROOT / "target" / "rpi4-build" / "qemu"}
IMAGE_DIR = ROOT / "target" / "rpi4"
QEMU_DIR = ROOT / "target" / "rpi4-qemu"
DTS = ROOT / "kernel" / "hal" / "board" / "rpi4-qemu.dts"
TARGET = "aarch64-unknown-none"

# `hlt #0xf000`, the AArch64 semihosting trap, as the little-endian word the CPU fetches:
# HLT is 0xd440_0000 | imm16 << 5.
SEMIHOSTING_TRAP = 0xD440_0000 | (0xF000 << 5)

CONFIG_TXT = """\
# beamcore on a Raspberry Pi 4: copy this file and kernel8.img to the boot (FAT) partition of
# an SD card that holds the Pi firmware (start4.elf, fixup4.dat, bcm2711-rpi-4-b.dtb, overlays/).
# Console: PL011 UART0 on GPIO14 (TXD, pin 8) / GPIO15 (RXD, pin 10), GND pin 6, 115200 8N1.

# Start the cores in AArch64 and load our image, at the address it is linked for.
arm_64bit=1
kernel=kernel8.img
kernel_address=0x80000

# The firmware's device tree carries the RAM size and cmdline.txt (as /chosen/bootargs).
# Interrupts go through the GIC-400 (the default on the Pi 4; stated for clarity).
enable_gic=1

# UART: enable it, put the PL011 (UART0) on GPIO14/15 instead of the Bluetooth module
# (needs overlays/disable-bt.dtbo), and fix its reference clock at the 48 MHz beamcore
# programs the 115200-baud divisor from.
enable_uart=1
dtoverlay=disable-bt
init_uart_clock=48000000
"""


def run(cmd, **kwargs):
    print("rpi4:", " ".join(str(c) for c in cmd), flush=True)
    return subprocess.run(cmd, cwd=ROOT, check=True, **kwargs)


def cargo_build(semihosting: bool) -> Path:
    """Release build of the kernel for the Pi 4; returns the ELF."""
    features = ["--features", "board-rpi4"] if semihosting else ["--no-default-features", "--features", "board-rpi4"]
    target_dir = CARGO_TARGET_DIRS[semihosting]
    run(["cargo", "build", "--release", "--bin", "beamcore", *features, "--target-dir", target_dir])
    return target_dir / TARGET / "release" / "beamcore"


def flat_binary(elf: Path, out: Path) -> Path:
    out.parent.mkdir(parents=True, exist_ok=True)
    run(["llvm-objcopy", "-O", "binary", elf, out])
    return out


def compile_dtb() -> Path:
    """The QEMU raspi4b device tree: target/rpi4-qemu/raspi4b.dtb."""
    out = QEMU_DIR / "raspi4b.dtb"
    out.parent.mkdir(parents=True, exist_ok=True)
    # -q: dtc's warnings about /soc's missing unit name are about Linux bindings, not the tree.
    run(["dtc", "-q", "-I", "dts", "-O", "dtb", "-o", out, DTS])
    return out


def find_traps(image: Path) -> list:
    """Byte offsets of every 4-aligned `hlt #0xf000` in a flat image (loaded 4-aligned)."""
    data = image.read_bytes()
    return [offset for offset in range(0, len(data) - 3, 4)
            if int.from_bytes(data[offset:offset + 4], "little") == SEMIHOSTING_TRAP]


def disassembled_traps(elf: Path) -> list:
    """`hlt #0xf000` instructions in the ELF's code, as llvm-objdump disassembles them."""
    out = subprocess.run(["llvm-objdump", "-d", "--no-show-raw-insn", str(elf)], cwd=ROOT, check=True,
                         stdout=subprocess.PIPE, text=True).stdout
    return [line.strip() for line in out.splitlines() if "hlt" in line and "#0xf000" in line]


def check(image: Path, elf: Path = None, expect_trap: bool = False) -> bool:
    """True when the image is as expected: free of semihosting traps (or, with expect_trap,
    holding at least one). Prints what it found."""
    offsets = find_traps(image)
    in_code = disassembled_traps(elf) if elf else []
    found = bool(offsets or in_code)
    for offset in offsets:
        print(f"rpi4: {image.name}: hlt #0xf000 at image offset {offset:#x} (address {0x80000 + offset:#x})")
    for line in in_code:
        print(f"rpi4: {elf.name}: {line}")
    if found == expect_trap:
        what = "holds the semihosting trap, as expected" if expect_trap else "holds no semihosting trap (hlt #0xf000)"
        print(f"rpi4: check passed: {image} {what}")
        return True
    what = "holds no semihosting trap, but one was expected" if expect_trap else "holds a semihosting trap"
    print(f"rpi4: check FAILED: {image} {what}", file=sys.stderr)
    return False


def sd_card_files(elf: Path, out_dir: Path, elf_name: str, cmdline: str = None) -> Path:
    """out_dir/: kernel8.img (the flat image of `elf`), config.txt, the ELF as `elf_name` and,
    given `cmdline`, cmdline.txt; fails, removing the image, if semihosting crept in."""
    image = flat_binary(elf, out_dir / "kernel8.img")
    shutil.copyfile(elf, out_dir / elf_name)
    (out_dir / "config.txt").write_text(CONFIG_TXT)
    files = f"kernel8.img ({image.stat().st_size} bytes), config.txt"
    if cmdline is not None:
        (out_dir / "cmdline.txt").write_text(cmdline + "\n")
        files += ", cmdline.txt"
    if not check(image, elf):
        image.unlink()
        sys.exit("rpi4: kernel8.img removed: it would fault on the board at the end of a run "
                 "(build it with --no-default-features --features board-rpi4: no semihosting)")
    print(f"rpi4: {out_dir}/ holds {files} and {elf_name} (symbols, for debugging)")
    return image


def linked_for_rpi4(elf: Path) -> bool:
    """True when the ELF's entry point is the Pi 4's load address (a board-rpi4 build)."""
    out = subprocess.run(["llvm-readelf", "-h", str(elf)], check=True, stdout=subprocess.PIPE, text=True).stdout
    for line in out.splitlines():
        if line.strip().startswith("Entry point address:"):
            return int(line.split(":", 1)[1].strip(), 16) == 0x80000
    return False


def build_image() -> Path:
    """target/rpi4/kernel8.img + config.txt for the SD card; fails if semihosting crept in."""
    elf = cargo_build(semihosting=False)
    return sd_card_files(elf, IMAGE_DIR, "beamcore.elf")


def build_qemu_image() -> (Path, Path):
    """target/rpi4-qemu/kernel8.img (with semihosting) and raspi4b.dtb."""
    elf = cargo_build(semihosting=True)
    image = flat_binary(elf, QEMU_DIR / "kernel8.img")
    shutil.copyfile(elf, QEMU_DIR / "beamcore.elf")
    return image, compile_dtb()


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("image", help="kernel8.img + config.txt for the SD card, in target/rpi4/")
    sub.add_parser("qemu-image", help="kernel8.img with semihosting + raspi4b.dtb, in target/rpi4-qemu/")
    card_parser = sub.add_parser("sd-card", help="kernel8.img, config.txt and cmdline.txt from a board-rpi4 ELF")
    card_parser.add_argument("elf", type=Path, help="a program built with --no-default-features --features board-rpi4")
    card_parser.add_argument("--out", type=Path, required=True, help="directory for the SD-card files")
    card_parser.add_argument("--cmdline", default="", help="bootargs for cmdline.txt (default: none)")
    check_parser = sub.add_parser("check", help="look for semihosting traps in a flat image")
    check_parser.add_argument("image", type=Path)
    check_parser.add_argument("--elf", type=Path, help="also disassemble this ELF's code")
    check_parser.add_argument("--expect-trap", action="store_true", help="fail unless a trap is found")
    args = parser.parse_args()
    if args.command == "image":
        build_image()
    elif args.command == "qemu-image":
        build_qemu_image()
    elif args.command == "sd-card":
        if not args.elf.is_file():
            sys.exit(f"rpi4: {args.elf}: no such file")
        if not linked_for_rpi4(args.elf):
            sys.exit(f"rpi4: {args.elf} is not linked at 0x80000: build it with "
                     "--no-default-features --features board-rpi4")
        sd_card_files(args.elf.resolve(), args.out.resolve(), args.elf.name + ".elf", args.cmdline)
    elif not check(args.image, args.elf, args.expect_trap):
        sys.exit(1)


if __name__ == "__main__":
    main()
