#!/usr/bin/env bash
# Builds one in-QEMU test kernel with extra rustc flags (the `--cfg` switches the checks that
# show a test can fail use: deque_omit_pop_barrier, deque_inject_stxr_failure,
# signal_queue_inject_stxr_failure, sched_widen_block_window, sched_omit_register_wait) in a
# target directory of its own, so the ordinary build is not rebuilt, and prints the path of the
# kernel it built.
# Usage: build-test-with-cfg.sh TARGET_DIR_NAME TEST_NAME "RUSTFLAGS"
set -euo pipefail
cd "$(dirname "$0")/.."
dir=$1 test=$2 flags=$3
# RUSTFLAGS replaces .cargo/config.toml's rustflags: the frame pointers backtraces walk are
# asked for again.
CARGO_TARGET_DIR="target/$dir" RUSTFLAGS="$flags -C force-frame-pointers=yes" \
    cargo test --release --no-run --test "$test" 2>&1 | tail -1 >&2
ls -t "target/$dir/aarch64-unknown-none/release/deps/$test"-* | grep -v '\.d$' | head -1
