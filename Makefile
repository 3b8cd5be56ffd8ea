# beamcore — build, run and test the kernel. `make help` lists the targets.

SMP          ?= 4
CPU          ?= cortex-a72
MACHINE_OPTS ?=
MEM          ?= 128M
ARGS         ?=
TIMEOUT      ?= 120
TEST         ?=
CONFIG       ?=
BENCH        ?=

KERNEL_ELF := target/aarch64-unknown-none/release/beamcore
HOST_TARGET := $(shell rustc -vV | sed -n 's/^host: //p')
SETUP_STAMP := target/.setup-done

export SMP CPU MACHINE_OPTS MEM ARGS TIMEOUT

.PHONY: help setup kernel run gdb test test-host test-qemu test-deque-barrier bench check fmt clippy clean

help:
	@echo "make kernel      build the kernel ELF ($(KERNEL_ELF))"
	@echo "make run         boot it in QEMU virt (SMP=$(SMP) CPU=$(CPU) MACHINE_OPTS=... MEM=$(MEM) ARGS='bootargs')"
	@echo "make test        host tests + in-QEMU suite (TEST=name filter, CONFIG=config filter)"
	@echo "make test-host   unit, property and model tests of the pure modules on the host"
	@echo "make test-qemu   the in-QEMU suite on every configuration"
	@echo "make test-deque-barrier  the deque stress test must catch a deque built without its pop barrier"
	@echo "make bench       benchmarks into bench/results.json (BENCH=prefix runs a part)"
	@echo "make gdb         QEMU waiting for gdb-multiarch on :1234"
	@echo "make check       cargo fmt --check and clippy -D warnings (kernel and host)"
	@echo "make setup       install the Rust target, QEMU >= 9, dtc (run automatically when missing)"

# Installs what is missing (QEMU from bookworm-backports, the Rust target) once per checkout.
$(SETUP_STAMP): scripts/setup.sh
	@echo "==> setup: checking tools"
	@scripts/setup.sh
	@mkdir -p target && touch $@

setup: $(SETUP_STAMP)

kernel: $(SETUP_STAMP)
	@echo "==> kernel: building $(KERNEL_ELF)"
	cargo build --release

run: kernel
	@echo "==> run: QEMU virt$(if $(MACHINE_OPTS),$(comma)$(MACHINE_OPTS)) cpu=$(CPU) smp=$(SMP)"
	scripts/qemu-run.sh $(KERNEL_ELF)

gdb: kernel
	@echo "==> gdb: attach with: gdb-multiarch $(KERNEL_ELF) -ex 'target remote :1234'"
	GDB=1 scripts/qemu-run.sh $(KERNEL_ELF)

test: test-host test-qemu test-deque-barrier

test-host: $(SETUP_STAMP)
	@echo "==> test-host: pure modules on $(HOST_TARGET)"
	cargo test --lib --target $(HOST_TARGET)
	@echo "==> test-host: loom model checks of the deque (release, --cfg loom)"
	RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom cargo test --lib --release --target $(HOST_TARGET) sched::deque

test-qemu: $(SETUP_STAMP)
	@echo "==> test-qemu: in-QEMU suite"
	python3 scripts/test-qemu.py $(foreach t,$(TEST),--test $(t)) $(foreach c,$(CONFIG),--config $(c))

bench: $(SETUP_STAMP)
	@echo "==> bench: $(if $(BENCH),$(BENCH),all suites)"
	python3 scripts/bench.py $(if $(BENCH),--bench $(BENCH))

# Shows the deque stress test can fail: without the full barrier in pop it must catch a
# double take or a loss (scripts/deque-barrier-check.sh).
test-deque-barrier: $(SETUP_STAMP)
	@echo "==> test-deque-barrier: the stress test against a deque without its pop barrier"
	scripts/deque-barrier-check.sh

check: fmt clippy

fmt:
	cargo fmt --check

clippy:
	cargo clippy --all-targets -- -D warnings
	cargo clippy --lib --profile test --target $(HOST_TARGET) -- -D warnings

clean:
	cargo clean

comma := ,
