#!/usr/bin/env bash
# Shows that the in-QEMU deque stress test (tests/29_deque_stress.rs) can fail: builds it with
# `--cfg deque_omit_pop_barrier` (the full barrier in `pop` left out) and runs it on 2 cores
# until a run reports a duplicated or lost item. QEMU on an x86 host lets a later load pass an
# earlier store (the reordering that barrier forbids), but only when the owner and a thief run
# at the same moment on two host CPUs, so not every run shows it; this check passes when one of
# up to ATTEMPTS runs does, and fails if none does (the test would then be unable to catch the
# bug). The correct build never reports one (make test-qemu).
set -euo pipefail
cd "$(dirname "$0")/.."
attempts=${ATTEMPTS:-25}
echo "deque-barrier: building tests/29_deque_stress.rs with --cfg deque_omit_pop_barrier"
kernel=$(scripts/build-test-with-cfg.sh omit-barrier 29_deque_stress "--cfg deque_omit_pop_barrier")
for attempt in $(seq 1 "$attempts"); do
    output=$(timeout 120 python3 scripts/qemu.py --smp 2 "$kernel" 2>&1 || true)
    summary=$(echo "$output" | grep -E "^deque stress|^test failed" | tr '\n' ' ' || true)
    echo "deque-barrier: [$attempt/$attempts] $summary"
    if grep -qE "^test failed: .*(taken twice|lost)" <<<"$output"; then
        echo "deque-barrier: without the barrier the stress test caught a double take or a loss (attempt $attempt)"
        exit 0
    fi
done
echo "deque-barrier: $attempts runs without the barrier and no run failed: the stress test did not show the bug"
exit 1
