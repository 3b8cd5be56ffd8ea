#!/usr/bin/env bash
# Runs the kernel's message tests with the signal queue's store-exclusive failure injection:
# built with `--cfg signal_queue_inject_stxr_failure` (in a target directory of its own, so the
# ordinary build is not rebuilt), every operation on a process's signal-queue word (push, take,
# compare-and-swap, close) has its first STXR skipped and failed as a lost reservation would
# be, so every retry path of the hand-written exclusives runs on every call, under real
# concurrency. tests/23 (messages in order across cores, stale pids refused) and tests/98 (the
# signal races: links, monitors, exit signals and slot reuse, each counted exactly) must pass on
# 4 cores. A cfg rather than a cargo feature, as for the deque (scripts/deque-stxr-failure-check.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
flags="--cfg signal_queue_inject_stxr_failure"
for test in 23_messages:"test: .*stale pid refused after slot reuse" 98_signal_races:"test: signal races ok"; do
    name=${test%%:*}
    expect=${test#*:}
    echo "signal-queue-stxr-failure: building tests/$name.rs with $flags"
    kernel=$(scripts/build-test-with-cfg.sh inject-signal-queue "$name" "$flags")
    status=0
    output=$(timeout 300 python3 scripts/qemu.py --smp 4 "$kernel" 2>&1) || status=$?
    echo "$output" | grep -E "^test" | sed "s/^/signal-queue-stxr-failure: [$name] /" || true
    if [ "$status" -ne 0 ] || grep -q PANIC <<<"$output" || ! grep -qE "^$expect" <<<"$output"; then
        echo "$output" | tail -20
        echo "signal-queue-stxr-failure: FAIL: $name with injection (exit status $status)"
        exit 1
    fi
done
echo "signal-queue-stxr-failure: every run passed with injected store-exclusive failures"
