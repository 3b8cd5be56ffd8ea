#!/usr/bin/env bash
# Boots a beamcore kernel in QEMU and exits with QEMU's status (the kernel's semihosting exit).
# Also the cargo runner for the bare-metal target, so `cargo run` and `cargo test --test X` boot.
# The command line itself is scripts/qemu.py's, the one QEMU launcher; this adds the environment
# and the deadline.
#
#   scripts/qemu-run.sh <kernel> [extra qemu arguments...]
#
# BOARD=virt (default): <kernel> is the ELF, booted on -M virt.
# BOARD=rpi4: <kernel> is a flat kernel8.img (scripts/rpi4.py qemu-image), booted on -M raspi4b
#   with the device tree RPI4_DTB (default target/rpi4-qemu/raspi4b.dtb), so ARGS reach the
#   kernel as /chosen/bootargs, the way the Pi firmware passes cmdline.txt. raspi4b's hardware is
#   fixed (4 Cortex-A72 cores, 2 GiB): SMP, CPU, MEM and MACHINE_OPTS do not apply.
#
# Environment: BOARD, SMP (4), CPU (cortex-a72), MACHINE_OPTS (appended to -M virt, e.g.
# gic-version=3 or virtualization=on), MEM (128M), ARGS (kernel command line), ICOUNT=1 (under
# -icount shift=0,sleep=off), TIMEOUT (seconds before QEMU is killed; 0 = none; default 120),
# GDB=1 (wait for gdb on :1234).
set -euo pipefail

kernel=${1:?usage: qemu-run.sh <kernel.elf> [qemu args...]}
shift

launcher="$(dirname "$0")/qemu.py"
board=${BOARD:-virt}
smp=${SMP:-4}
cpu=${CPU:-cortex-a72}
mem=${MEM:-128M}
timeout_s=${TIMEOUT:-120}

case "$board" in
virt)
    opts=(--board virt --machine-opts="${MACHINE_OPTS:-}" --cpu "$cpu" --smp "$smp" --mem "$mem")
    ;;
rpi4)
    if [ "$smp" != 4 ] || [ "$cpu" != cortex-a72 ] || [ -n "${MACHINE_OPTS:-}" ]; then
        echo "qemu-run: raspi4b always has 4 Cortex-A72 cores; SMP, CPU and MACHINE_OPTS are ignored" >&2
    fi
    opts=(--board rpi4 --dtb "${RPI4_DTB:-target/rpi4-qemu/raspi4b.dtb}")
    ;;
*)
    echo "qemu-run: unknown BOARD=$board (known: virt, rpi4)" >&2
    exit 2
    ;;
esac

if [ -n "${ICOUNT:-}" ] && [ "${ICOUNT}" != 0 ]; then opts+=(--icount); fi
if [ -n "${ARGS:-}" ]; then opts+=(--append="$ARGS"); fi
if [ "${GDB:-0}" = 1 ]; then
    opts+=(--gdb)
    echo "qemu-run: waiting for gdb on localhost:1234 (gdb-multiarch $kernel -ex 'target remote :1234')" >&2
    timeout_s=0
fi
if [ "${QEMU_RUN_QUIET:-0}" != 1 ]; then opts+=(--echo qemu-run); fi
# python3 replaces itself with QEMU (exec): the deadline's signal reaches QEMU.
cmd=(python3 "$launcher" "${opts[@]}" "$kernel" -- "$@")

if [ "$timeout_s" = 0 ]; then
    exec "${cmd[@]}"
fi
set +e
timeout --foreground -k 5 "$timeout_s" "${cmd[@]}"
status=$?
set -e
if [ $status -eq 124 ]; then
    echo "qemu-run: deadline of ${timeout_s}s passed; QEMU killed" >&2
fi
exit $status
