#!/usr/bin/env python3
"""The linker of every bare-metal build (`.cargo/config.toml`: `make kernel`, `make run`, the
test kernels, the Pi 4 images, the benchmarks, the soak): rust-lld, twice, so the image carries
a table of its own functions (scripts/ksyms.py) that the kernel reads to name the frames of a
backtrace on its console.

1. Link as asked. linker.ld's `.kallsyms` output section, after `.rodata`, is empty.
2. Read that image's code symbols and write the table as an object file whose only section is
   `.kallsyms`.
3. Link again with that object added. The table lies after all code, so no function moves:
   the table describes the image it is in. This is checked (scripts/ksyms.py `check`); should
   the code have moved all the same, the table of the new image is linked in once more (as
   Linux's kallsyms does), and the link fails if it still does not hold.

rustc calls this with the arguments it would give rust-lld (`-flavor gnu ...`) and with the
toolchain's own bin directory, which holds rust-lld, first on PATH.

When the link fails for one of the usual mistakes of a program, rust-lld's errors are followed
by a `beamcore:` line saying what to change (`HINTS`): no `entry!`, two of them, no linker
script (`-Tbeamcore.ld`), or no kernel to find it in. A link without any `-T` is refused
before rust-lld runs.
"""

import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import ksyms  # noqa: E402


def rust_lld() -> str:
    found = shutil.which("rust-lld")
    if found:
        return found
    sysroot = subprocess.run(["rustc", "--print", "sysroot"], capture_output=True, text=True, check=True).stdout.strip()
    candidates = sorted(Path(sysroot, "lib", "rustlib").glob("*/bin/rust-lld"))
    if not candidates:
        sys.exit("link-kallsyms: rust-lld not found on PATH or in the toolchain")
    return str(candidates[0])


def expanded(args):
    """The arguments with any `@file` (a response file, which rustc uses for a command line too
    long for the system) replaced by the arguments it holds, one a line, backslash-escaped."""
    for arg in args:
        if arg.startswith("@") and Path(arg[1:]).is_file():
            for line in Path(arg[1:]).read_text().splitlines():
                yield re.sub(r"\\(.)", r"\1", line)
        else:
            yield arg


def output_path(args) -> Path:
    args = list(expanded(args))
    for i, arg in enumerate(args):
        if arg == "-o" and i + 1 < len(args):
            return Path(args[i + 1])
        if arg.startswith("-o") and len(arg) > 2:
            return Path(arg[2:])
    sys.exit("link-kallsyms: no -o in the linker arguments")


# Links with a table in all: the second normally; a third only if the code moved.
TABLE_LINKS = 2

# Symbols linker.ld defines: undefined, they mean the image was linked without it.
SCRIPT_SYMBOLS = ("__kernel_start", "__kernel_end", "__text_end", "__rodata_start", "__rodata_end",
                  "__kallsyms_start", "__kallsyms_end", "__data_start", "__data_end", "__bss_start",
                  "__bss_end", "__boot_stacks_start", "__boot_stacks_end")

# (pattern in rust-lld's errors, what to tell the user). Each hint is printed once.
HINTS = (
    (re.compile(r"undefined symbol: (__beamcore_main|BEAMCORE_ENTRY__ONE_PER_PROGRAM__NOT_IN_A_LIBRARY)\b"),
     "beamcore: this program has no entry point. Name its main function in its source file\n"
     "          (src/main.rs, or the test's file in tests/):\n"
     "              fn main() -> beamcore::ExitCode { ... }\n"
     "              beamcore::entry!(main);"),
    (re.compile(r"duplicate symbol: (__beamcore_main|BEAMCORE_ENTRY__ONE_PER_PROGRAM__NOT_IN_A_LIBRARY)\b"),
     "beamcore: this program has two entry points: `beamcore::entry!` appears in two crates it links\n"
     "          (the `>>> defined at` lines above say where). Keep one, in the program's own crate;\n"
     "          a library shared by several programs should not name an entry."),
    (re.compile(r"undefined symbol: (" + "|".join(SCRIPT_SYMBOLS) + r")\b"),
     "beamcore: the program was linked without the kernel's linker script. Link with\n"
     "          `-C link-arg=-Tbeamcore.ld` (rustflags in .cargo/config.toml, as template/ has; note\n"
     "          that RUSTFLAGS in the environment replaces those rustflags)."),
    (re.compile(r"cannot find linker script:? beamcore\.ld"),
     "beamcore: beamcore.ld is written by the kernel package's build script and found on the link\n"
     "          search path it sets: the program must depend on `beamcore` (the checkout's kernel/)\n"
     "          and be built for aarch64-unknown-none."),
)


def has_linker_script(args) -> bool:
    return any(arg.startswith("-T") or arg.startswith("--script") or arg == "-script" for arg in expanded(args))


def hints_for(output: str) -> list:
    """The hints that apply to rust-lld's output, in HINTS order."""
    return [hint for pattern, hint in HINTS if pattern.search(output)]


def link(lld: str, args) -> int:
    """Runs rust-lld, passing its output on; after a failure, adds the hints that apply."""
    result = subprocess.run([lld, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, errors="replace")
    sys.stdout.write(result.stdout)
    sys.stderr.write(result.stderr)
    if result.returncode != 0:
        hints = hints_for(result.stdout + result.stderr)
        if hints:
            print("\n" + "\n\n".join(hints), file=sys.stderr)
    sys.stderr.flush()
    return result.returncode


def main():
    args = sys.argv[1:]
    if not has_linker_script(args):
        sys.exit("beamcore: no linker script on the link line. A beamcore program links with\n"
                 "          `-C link-arg=-Tbeamcore.ld` (rustflags in .cargo/config.toml, as template/ has;\n"
                 "          RUSTFLAGS in the environment replaces those rustflags: add it there too).")
    lld = rust_lld()
    status = link(lld, args)
    if status != 0:
        sys.exit(status)
    out = output_path(args)
    for _ in range(TABLE_LINKS):
        table = ksyms.table_of(out)
        # Not beside the output: scripts look for kernels by name in deps/ (`ls -t name-*`).
        with tempfile.TemporaryDirectory(prefix="kallsyms-") as scratch:
            obj = Path(scratch) / "kallsyms.o"
            obj.write_bytes(ksyms.relocatable_object(table))
            status = link(lld, [*args, str(obj)])
        if status != 0:
            sys.exit(status)
        problems = ksyms.check(out)
        if not problems:
            return
    for problem in problems:
        print(f"link-kallsyms: {problem}", file=sys.stderr)
    os.unlink(out)
    sys.exit(1)


if __name__ == "__main__":
    main()
