#!/usr/bin/env bash
# Shows that the shared-queue test (tests/90_shared_queue.rs, `queues=shared`) catches a process
# resumed before its registers were saved, and that the kernel does not do it. With
# `queues=shared` a waker on another core queues a process that blocked in `receive` as soon as
# it claims the wake-up from the process's signal queue (a push or a claim that reads WAITING),
# which the process's own core writes just before it saves the registers;
# the core that takes it from the shared queue must wait for them (`Process::registers_live`).
# The window is a few dozen instructions, so both builds here widen it to 50 us
# (`--cfg sched_widen_block_window`):
#   1. with the wait: every run must pass;
#   2. without it (`--cfg sched_omit_register_wait`): some run must fail, or the test could not
#      catch the bug.
set -euo pipefail
cd "$(dirname "$0")/.."
attempts=${ATTEMPTS:-5}
variants=("queues=shared" "queues=shared placement=round_robin")

# A run with the wait ends in a few seconds; one without it may hang for good (the bug it must
# show), and each such hang costs this timeout, so it is kept short.
run() {
    timeout 40 python3 scripts/qemu.py --smp 4 --icount --append="$2" "$1" 2>&1 || true
}

echo "shared-wake: building tests/90 with the receive window widened"
kernel=$(scripts/build-test-with-cfg.sh shared-wake 90_shared_queue "--cfg sched_widen_block_window")
for variant in "${variants[@]}"; do
    output=$(run "$kernel" "$variant")
    if ! grep -q "^test: shared queue: ok" <<<"$output"; then
        echo "$output" | tail -20
        echo "shared-wake: FAILED with the wait in place ($variant)"
        exit 1
    fi
    echo "shared-wake: with the wait: ok ($variant)"
done

echo "shared-wake: building it again without the wait for saved registers"
kernel=$(scripts/build-test-with-cfg.sh shared-wake-omit 90_shared_queue \
    "--cfg sched_widen_block_window --cfg sched_omit_register_wait")
for attempt in $(seq 1 "$attempts"); do
    for variant in "${variants[@]}"; do
        output=$(run "$kernel" "$variant")
        if ! grep -q "^test: shared queue: ok" <<<"$output"; then
            why=$(grep -E "^test failed|PANIC|panic|ended: fault" <<<"$output" | head -1 || true)
            why=${why:-"no verdict line (hung until the 40 s timeout, or cut short)"}
            echo "shared-wake: without the wait the test failed ($variant, attempt $attempt): $why"
            exit 0
        fi
    done
done
echo "shared-wake: $attempts rounds without the wait and no run failed: the test did not show the bug"
exit 1
