#!/usr/bin/env bash
# Runs the in-QEMU deque stress test (tests/29_deque_stress.rs) with store-exclusive fault
# injection: built with `--cfg deque_inject_stxr_failure` (in its own target directory, so the
# ordinary build is not rebuilt), every 8th compare-and-swap on `top` of a core has its STLXR
# skipped and failed as a lost reservation would be. The failure path (Pop::Retry, Steal::Retry)
# then happens tens of thousands of times per run instead of almost never. The run must pass
# (every item taken exactly once, sums match) and report a non-zero count of injected failures
# (the test itself asserts that too; the check here also catches a build where the cfg did not
# reach the deque, which would print "injection off"). Then the scheduler: the `make run` kernel
# built the same way runs workload=imbalanced on 4 cores; its own check (every worker reports
# once) must pass, and the report must show the owner's bounded take_oldest retrying
# (take_oldest_retries > 0 summed over cores). A cfg rather than a cargo feature: the
# option must never be reachable from `cargo build --features ...` of a shipped kernel, and it
# follows `deque_omit_pop_barrier` (scripts/deque-barrier-check.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
configs=${CONFIGS:-"cortex-a72:4 max:4"}
echo "deque-stxr-failure: building tests/29_deque_stress.rs with --cfg deque_inject_stxr_failure"
kernel=$(scripts/build-test-with-cfg.sh inject-stxr 29_deque_stress "--cfg deque_inject_stxr_failure")
for config in $configs; do
    cpu=${config%%:*}
    smp=${config##*:}
    status=0
    output=$(timeout 120 python3 scripts/qemu.py --cpu "$cpu" --smp "$smp" "$kernel" 2>&1) || status=$?
    echo "$output" | grep -E "^deque stress|^test" | sed "s/^/deque-stxr-failure: [$cpu smp$smp] /" || true
    if [ "$status" -ne 0 ] || grep -q PANIC <<<"$output"; then
        echo "deque-stxr-failure: FAIL on $cpu smp$smp: exit status $status"
        exit 1
    fi
    if ! grep -qE "^deque stress: store-exclusive injection on: [0-9]+ CAS calls, [1-9][0-9]* stores failed by injection" <<<"$output"; then
        echo "deque-stxr-failure: FAIL on $cpu smp$smp: no injected store-exclusive failure reported"
        exit 1
    fi
done
echo "deque-stxr-failure: building the kernel with --cfg deque_inject_stxr_failure"
CARGO_TARGET_DIR=target/inject-stxr RUSTFLAGS="--cfg deque_inject_stxr_failure -C force-frame-pointers=yes" \
    cargo build --release --bin beamcore 2>&1 | tail -1
status=0
output=$(timeout 120 python3 scripts/qemu.py --smp 4 --append="workload=imbalanced" \
    target/inject-stxr/aarch64-unknown-none/release/beamcore 2>&1) || status=$?
echo "$output" | grep -E "^workload " | sed "s/^/deque-stxr-failure: [scheduler] /" || true
retries=$(echo "$output" | sed -n 's/^report: //p' | python3 -c '
import json, sys
per_core = json.load(sys.stdin)["per_core"]
print(sum(c["take_oldest_retries"] for c in per_core), sum(c["take_oldest_gave_up"] for c in per_core))' || true)
echo "deque-stxr-failure: [scheduler] take_oldest retries, give-ups: ${retries:-none}"
if [ "$status" -ne 0 ] || grep -q PANIC <<<"$output" || ! grep -q "^workload imbalanced: ok" <<<"$output"; then
    echo "deque-stxr-failure: FAIL: the imbalanced workload did not pass with injection (exit status $status)"
    exit 1
fi
if [ -z "$retries" ] || [ "${retries%% *}" -eq 0 ]; then
    echo "deque-stxr-failure: FAIL: the scheduler's take_oldest never retried"
    exit 1
fi
echo "deque-stxr-failure: every run passed with injected store-exclusive failures"
