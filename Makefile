# beamcore — build, run and test the kernel. `make help` lists the targets.

BOARD        ?= virt
SMP          ?= 4
CPU          ?= cortex-a72
MACHINE_OPTS ?=
MEM          ?= 128M
ARGS         ?=
TIMEOUT      ?= 120
TEST         ?=
CONFIG       ?=
BENCH        ?=
# ICOUNT=1: QEMU under -icount shift=0,sleep=off (`make run`, `make trace`): guest time advances
# one nanosecond per instruction and the cores run in turn, so a run repeats exactly whatever the
# host's load (and runs slower). ICOUNT=0 or empty: plain QEMU, every core a host thread.
ICOUNT       ?=

comma := ,
# Non-empty when ICOUNT asks for -icount; `make run` and `make trace` hand ICOUNT to
# scripts/qemu-run.sh, which asks the launcher (scripts/qemu.py) for it.
ICOUNT_ON := $(filter-out 0,$(ICOUNT))

KERNEL_ELF := target/aarch64-unknown-none/release/beamcore
# BOARD=rpi4: the raspi4b image with semihosting (QEMU exits with the kernel's status).
RPI4_QEMU_IMAGE := target/rpi4-qemu/kernel8.img
# RUN_ELF: the symbols of what `make run` boots (for gdb).
ifeq ($(BOARD),rpi4)
RUN_KERNEL := $(RPI4_QEMU_IMAGE)
RUN_ELF := target/rpi4-qemu/beamcore.elf
else ifeq ($(BOARD),virt)
RUN_KERNEL := $(KERNEL_ELF)
RUN_ELF := $(KERNEL_ELF)
else
$(error unknown BOARD=$(BOARD); known: virt, rpi4)
endif
HOST_TARGET := $(shell rustc -vV | sed -n 's/^host: //p')
# The pure crates (crates/): no_std libraries the kernel depends on, tested on the host. Read from
# the workspace's members in Cargo.toml (scripts/packages.py), never listed here.
PURE_CRATES := $(shell python3 scripts/packages.py pure-crates)
ifeq ($(strip $(PURE_CRATES)),)
$(error scripts/packages.py found no pure crate among the workspace members of Cargo.toml)
endif
PURE_CRATE_ARGS := $(foreach c,$(PURE_CRATES),-p $(c))
# The kernel's stack of crates (kernel/, its layers, boot/; docs/layout.md), read the same way.
KERNEL_CRATE_ARGS := $(foreach c,$(shell python3 scripts/packages.py kernel-crates),-p $(c))
SETUP_STAMP := target/.setup-done
# The Python that has matplotlib, for the charting tools (scripts/mpl-python.sh says why it may
# not be `python3`). Recursive: looked up when a recipe runs, after setup has installed it.
MPL_PYTHON = $(or $(shell scripts/mpl-python.sh),python3)

export BOARD SMP CPU MACHINE_OPTS MEM ARGS TIMEOUT

.PHONY: sim-policy structure layers packages test-packages help setup kernel rpi4 run gdb debug test test-host test-qemu test-deque-barrier test-deque-stxr-failure test-signal-queue-stxr-failure test-shared-wake bench mutants check fmt clippy clean sim sim-build sim-calibrate test-sim test-calibration test-calibration-full test-handoff test-let-it-crash

help:
	@echo "make kernel      build the kernel ELF ($(KERNEL_ELF)); BOARD=rpi4: $(RPI4_QEMU_IMAGE)"
	@echo "make run         boot it in QEMU virt (SMP=$(SMP) CPU=$(CPU) MACHINE_OPTS=... MEM=$(MEM) ARGS='bootargs')"
	@echo "                 ICOUNT=1: under -icount shift=0,sleep=off, so the run repeats exactly"
	@echo "                 BOARD=rpi4: on QEMU raspi4b (4 cores) with a device tree carrying ARGS"
	@echo "make rpi4        target/rpi4/kernel8.img + config.txt for a Raspberry Pi 4's SD card"
	@echo "make test        host tests + in-QEMU suite (TEST=name filter, CONFIG=config filter)"
	@echo "make test-host   unit, property and model tests of the pure crates (crates/) and the repository checks"
	@echo "make test-qemu   the in-QEMU suite on every configuration"
	@echo "make test-deque-barrier  the deque stress test must catch a deque built without its pop barrier"
	@echo "make test-deque-stxr-failure  the deque stress test with injected store-exclusive failures"
	@echo "make test-signal-queue-stxr-failure  the message tests with the signal queue's store-exclusives failed on purpose"
	@echo "make test-calibration  the simulator against the kernel in QEMU (-icount, 4 and 8 cores): the regression gate"
	@echo "                 against bench/calibration-reference.json, and its self-test on four simulator bugs"
	@echo "                 and two harmless variants (make test-calibration-full: all five)"
	@echo "make profile     where the instructions of make bench BENCH=sched go, per function: bench/sched-profile.md"
	@echo "make bench       benchmarks into bench/results.json (BENCH=prefix runs a part; BENCH=deque.host:"
	@echo "                 the criterion comparison with crossbeam-deque on the host; BENCH=peers: the sched"
	@echo "                 figures against Erlang, Go and Tokio under qemu-aarch64, installs them on first use)"
	@echo "make mutants     cargo-mutants over the pure code (balancer, priorities, deque, bootargs, time) with the"
	@echo "                 host tests (MUTANTS_JOBS=2); mutants.* into bench/results.json; installs cargo-mutants"
	@echo "make trace       scheduling trace of WORKLOAD=name (default imbalanced) into target/trace/"
	@echo "                 (.json for ui.perfetto.dev, .png timeline by matplotlib); ICOUNT=1 runs under -icount"
	@echo "make soak        every workload and strategy at 4 and 8 cores, exactly-once checked (SOAK_S=200 s per boot, boots until 10^6 steals)"
	@echo "                 figures into bench/results.json (soak.steals, soak.processes, soak.lost, soak.duplicated)"
	@echo "make plot        charts of bench/results.json into bench/plots/ (matplotlib, SVG)"
	@echo "make sim         host simulator: every workload and policy at 1..1024 cores (SEED=1); table in bench/sim.md,"
	@echo "                 sim.* into bench/results.json, plots bench/plots/sim_*.svg (docs/simulator.md)"
	@echo "make sim-calibrate  the simulator against the kernel in QEMU under -icount at 4 and 8 cores"
	@echo "make gdb         QEMU waiting for gdb-multiarch on :1234 (BOARD=rpi4 too)"
	@echo "make debug       QEMU plus gdb-multiarch attached, stopped at boot_core_entry, one thread per core"
	@echo "                 (console in target/debug/console.log; BOARD=rpi4 too; docs/debugging.md)"
	@echo "make check       cargo fmt --check and clippy -D warnings (kernel, programs, pure crates on host and bare metal, host benchmarks),"
	@echo "                 the structure checks and each package directory's default target"
	@echo "make test-packages  cargo test inside every package directory (part of make test)"
	@echo "make setup       install the Rust target, QEMU >= 9, dtc, llvm tools, gdb-multiarch, matplotlib (run automatically when missing)"
	@echo "make new NAME=x  a new program: a Cargo project of its own in DIR/NAME (DIR=.. by default) made from template/,"
	@echo "                 depending on this checkout by path; its make run / make test / make rpi4 work as here"
	@echo "make test-examples  every project in examples/ and a fresh make new project, each copied out of the"
	@echo "                 checkout, built, booted at 1 and 4 cores and tested"
	@echo "make test-tutorial  docs/tutorial.md's commands and files run in order in a fresh directory, its output checked"

# Installs what is missing (QEMU from bookworm-backports, the Rust target) once per checkout.
$(SETUP_STAMP): scripts/setup.sh
	@echo "==> setup: checking tools"
	@scripts/setup.sh
	@mkdir -p target && touch $@

setup: $(SETUP_STAMP)

kernel: $(SETUP_STAMP)
ifeq ($(BOARD),rpi4)
	@echo "==> kernel: building $(RPI4_QEMU_IMAGE) (raspi4b, with semihosting) and its device tree"
	python3 scripts/rpi4.py qemu-image
else
	@echo "==> kernel: building $(KERNEL_ELF)"
	cargo build --release
endif

# The Pi 4 SD-card files: kernel8.img without semihosting (checked: no hlt #0xf000) and config.txt.
rpi4: $(SETUP_STAMP)
	@echo "==> rpi4: kernel8.img and config.txt in target/rpi4/"
	python3 scripts/rpi4.py image

run: kernel
ifeq ($(BOARD),rpi4)
	@echo "==> run: QEMU raspi4b, 4 cores, device tree target/rpi4-qemu/raspi4b.dtb"
else
	@echo "==> run: QEMU virt$(if $(MACHINE_OPTS),$(comma)$(MACHINE_OPTS)) cpu=$(CPU) smp=$(SMP)$(if $(ICOUNT_ON), under -icount)"
endif
	ICOUNT=$(ICOUNT) scripts/qemu-run.sh $(RUN_KERNEL)

gdb: kernel
	@echo "==> gdb: QEMU stopped at the first instruction; attach with: gdb-multiarch $(RUN_ELF) -ex 'target remote :1234' (or use make debug)"
	GDB=1 scripts/qemu-run.sh $(RUN_KERNEL)

# QEMU waiting for gdb and gdb-multiarch attached with the symbols, stopped at the first Rust
# function (scripts/debug.py; GDB_PORT=1234 by default). tests/55 runs the same set-up in batch.
debug: kernel
	@echo "==> debug: QEMU ($(BOARD)) and gdb-multiarch on $(RUN_ELF)"
	python3 scripts/debug.py $(RUN_ELF) $(RUN_KERNEL)

test: test-host test-packages test-qemu test-examples test-tutorial test-deque-barrier test-deque-stxr-failure test-signal-queue-stxr-failure test-shared-wake test-calibration test-handoff

test-host: $(SETUP_STAMP)
	@echo "==> test-host: the pure crates (crates/) on $(HOST_TARGET): unit and property tests, and the repository checks"
	cargo test $(PURE_CRATE_ARGS) --target $(HOST_TARGET)
	@echo "==> test-host: the host tools (trace, plot, bench figures, symbol table)"
	$(MPL_PYTHON) scripts/test_tools.py
	@echo "==> test-host: the scripts' own tests (scripts/test_*.py: the QEMU launcher, ...)"
	for test in $(filter-out scripts/test_tools.py,$(wildcard scripts/test_*.py)); do python3 $$test || exit 1; done
	@echo "==> test-host: the host benchmarks, each run once as a test (criterion's test mode)"
	cargo test -p beamcore-host-bench --benches --target $(HOST_TARGET)
	@echo "==> test-host: the simulator (sim/): property tests against the kernel's own policy code"
	$(MAKE) --no-print-directory test-sim
	@echo "==> test-host: loom model checks: deque, signal queue, trace ring, kill against slot reuse, link/exit and monitors (release, --cfg loom)"
	RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom cargo test -p beamcore-deque -p beamcore-signal-queue -p beamcore-trace-ring -p beamcore-repo-checks --lib --test kill_model --test link_exit_model --release --target $(HOST_TARGET)

test-qemu: $(SETUP_STAMP)
	@echo "==> test-qemu: in-QEMU suite"
	python3 scripts/test-qemu.py $(foreach t,$(TEST),--test $(t)) $(foreach c,$(CONFIG),--config $(c))

bench: $(SETUP_STAMP)
	@echo "==> bench: $(if $(BENCH),$(BENCH),all suites)"
	python3 scripts/bench.py $(if $(BENCH),--bench $(BENCH))

# A scheduling trace of one workload (bootarg trace=on): the console goes to
# target/trace/$(WORKLOAD).log (shown here without its event lines), then scripts/trace.py writes
# target/trace/$(WORKLOAD).json (Perfetto/Chrome trace) and .png (timeline, drawn by matplotlib).
# ICOUNT=1 runs QEMU under -icount shift=0,sleep=off, so the times no longer depend on how the
# host schedules QEMU.
WORKLOAD ?= imbalanced
.PHONY: trace plot profile
trace: $(SETUP_STAMP) kernel
	@mkdir -p target/trace
	@echo "==> trace: workload=$(WORKLOAD)$(if $(ICOUNT_ON), under -icount), console in target/trace/$(WORKLOAD).log"
	@status=0; ARGS="workload=$(WORKLOAD) trace=on $(ARGS)" ICOUNT=$(ICOUNT) scripts/qemu-run.sh $(KERNEL_ELF) \
		> target/trace/$(WORKLOAD).log || status=$$?; \
	grep -v '^trace: ev ' target/trace/$(WORKLOAD).log || true; \
	if [ $$status -ne 0 ]; then echo "trace: QEMU exited with status $$status"; exit $$status; fi
	$(MPL_PYTHON) scripts/trace.py target/trace/$(WORKLOAD).log -o target/trace/$(WORKLOAD)
	@echo "==> trace: open target/trace/$(WORKLOAD).json in https://ui.perfetto.dev (or chrome://tracing);"
	@echo "           target/trace/$(WORKLOAD).png is the same timeline as a picture"

# The soak (scripts/soak.py): apps/soak.rs booted at 4 and 8 cores for SOAK_S seconds each.
SOAK_S ?= 200
.PHONY: soak
soak: $(SETUP_STAMP)
	@echo "==> soak: $(SOAK_S) s at 4 and at 8 cores"
	python3 scripts/soak.py --seconds $(SOAK_S)

# Mutation testing of the pure code (scripts/mutants.py, scope in .cargo/mutants.toml): every
# mutant the host tests miss must be listed in docs/mutants-equivalent.md with its reason.
# cargo-mutants is installed here on demand, not by `make setup` (CI's `make test` skips this).
MUTANTS_JOBS ?= 2
mutants:
	@echo "==> mutants: cargo-mutants over the pure code with the host tests, $(MUTANTS_JOBS) at a time"
	@scripts/setup.sh --mutants
	python3 scripts/mutants.py --jobs $(MUTANTS_JOBS)

# Charts of the benchmark figures (scripts/plot.py, matplotlib): bench/results.json ->
# bench/plots/*.svg.
# Where the scheduler's instructions go: the bench-sched kernel with every executed instruction
# counted (QEMU -d exec, one instruction per block, streamed through a pipe), per benchmark and
# function, into bench/sched-profile.md (scripts/profile.py; about a minute).
profile: $(SETUP_STAMP)
	@echo "==> profile: the instructions of make bench BENCH=sched, function by function"
	cargo build --release --bin bench-sched
	python3 scripts/profile.py

plot: $(SETUP_STAMP)
	@echo "==> plot: charts of bench/results.json into bench/plots/"
	$(MPL_PYTHON) scripts/plot.py

# Shows the deque stress test can fail: without the full barrier in pop it must catch a
# double take or a loss (scripts/deque-barrier-check.sh).
test-deque-barrier: $(SETUP_STAMP)
	@echo "==> test-deque-barrier: the stress test against a deque without its pop barrier"
	scripts/deque-barrier-check.sh

# The deque's store-exclusive failure path (Pop::Retry, Steal::Retry) under load: the stress test
# built with --cfg deque_inject_stxr_failure must pass and report injected failures
# (scripts/deque-stxr-failure-check.sh).
test-shared-wake: $(SETUP_STAMP)
	@echo "==> test-shared-wake: queues=shared with the receive window widened, with and without the wait for saved registers"
	scripts/shared-wake-check.sh

test-deque-stxr-failure: $(SETUP_STAMP)
	@echo "==> test-deque-stxr-failure: the stress test with injected store-exclusive failures"
	scripts/deque-stxr-failure-check.sh

# The message tests (tests/23, 98) on a kernel whose signal queues fail every operation's first
# store-exclusive on purpose (`--cfg signal_queue_inject_stxr_failure`): every retry path runs.
test-signal-queue-stxr-failure: $(SETUP_STAMP)
	@echo "==> test-signal-queue-stxr-failure: the message tests with injected store-exclusive failures"
	scripts/signal-queue-stxr-failure-check.sh

# The host simulator (sim/, docs/simulator.md): a crate of its own, built for the host only
# (the kernel's default target is aarch64-unknown-none), in target/sim.
SEED     ?= 1
SIM_JOBS ?= 2
SIM_CARGO_ARGS := --manifest-path sim/Cargo.toml --target $(HOST_TARGET) --target-dir target/sim
SIM_BIN := target/sim/$(HOST_TARGET)/release/beamcore-sim

sim-build:
	cargo build --release $(SIM_CARGO_ARGS)

sim: $(SETUP_STAMP) sim-build
	@echo "==> sim: every workload and policy at 1, 2, 4, ..., 1024 cores, seed $(SEED)"
	$(SIM_BIN) sweep --seed $(SEED) --jobs $(SIM_JOBS) --out target/sim/sweep.json
	$(MPL_PYTHON) scripts/sim.py --sweep target/sim/sweep.json

sim-calibrate: $(SETUP_STAMP) kernel sim-build
	@echo "==> sim-calibrate: the simulator against the kernel in QEMU under -icount, 4 and 8 cores"
	python3 scripts/sim-calibrate.py

# The same build as a plain `cargo test` in sim/ (make test-packages runs one): both use the
# dev profile, optimised in sim/Cargo.toml, so the second finds everything built.
test-sim:
	cargo test $(SIM_CARGO_ARGS)

# The calibration as a test (docs/simulator.md, "The calibration gate"): every observable (work
# max/mean, steals, attempts, migrations: simulator against QEMU under -icount, paired by seed)
# within 4 standard errors or its floor of bench/calibration-reference.json, the absolute gap's
# 95% interval not wholly beyond 0.1, the gate failing on each of four deliberate simulator
# bugs (its power, on the same QEMU runs) and passing on harmless variants of the runs
# (bootargs padding, boot instructions: each redraws QEMU's turns). Records nothing. make test
# tries two of the five variants, chosen by the kernel image (each variant is 200 QEMU runs);
# test-calibration-full tries all five.
test-calibration: $(SETUP_STAMP) kernel sim-build
	@echo "==> test-calibration: the simulator against the kernel in QEMU under -icount, 4 and 8 cores, and the gate's self-test"
	python3 scripts/sim-calibrate.py --no-record --self-test --harmless 2

test-calibration-full: $(SETUP_STAMP) kernel sim-build
	@echo "==> test-calibration-full: the calibration gate with all five harmless variants"
	python3 scripts/sim-calibrate.py --no-record --self-test --harmless

# tests/56 at the count the let-it-crash promise is made for: 100,000 restarts per way of dying
# (a panic, a kill in `receive`, a kill in a `bump_reductions` loop), memory back to the page.
# On one core: 7 minutes here under -icount, where QEMU runs the vCPUs in turn on one thread,
# so four cores would take about four times as long for the same restarts. Not part of
# `make test`, which runs 1,000 restarts on 1 and 4 cores.
test-let-it-crash: $(SETUP_STAMP)
	@echo "==> test-let-it-crash: tests/56 with 100,000 restarts per way of dying, on one core"
	LET_IT_CRASH_RESTARTS=100000 python3 scripts/test-qemu.py --test 56_let_it_crash --config a72-smp1

# The hand-off from one process to the next keeps its shape: no callee-saved register saved, no
# call out of line but a panic (scripts/check-handoff.py says why).
test-handoff: $(SETUP_STAMP) kernel
	@echo "==> test-handoff: next_turn_from_process saves no registers and calls nothing out of line"
	python3 scripts/check-handoff.py

check: fmt clippy structure layers sim-policy packages

# The quick form of test-packages: a plain cargo in each package directory builds for the
# package's own target (host packages for the host, the kernel's for bare metal, with no test a
# host would try to run); scripts/packages.py says how.
packages:
	python3 scripts/packages.py targets

# `cargo test` inside every package directory, as someone who cds there would run it (the root:
# `--no-run`, its tests are the in-QEMU suite); examples/ and template/ are covered by
# test-examples, which runs `make test` in filled-in copies.
test-packages: $(SETUP_STAMP)
	@echo "==> test-packages: cargo test in every package directory"
	python3 scripts/packages.py test

# The simulator models the machine and calls the kernel's policy: no restated constant, no
# policy decision of its own (scripts/check-sim-policy.py says why).
sim-policy:
	python3 scripts/check-sim-policy.py

# The tree's shape: no import cycle in kernel/sched/, no Rust file over 400 lines outside tests
# (but the few scripts/check-structure.py allows, with why), exception vectors that name no
# scheduler or SMP item.
structure:
	python3 scripts/check-structure.py

# The kernel's stack of crates: each depends only on the layers under it (scripts/check-layers.py;
# scripts/test_layers.py shows it failing on deliberate violations).
layers:
	python3 scripts/check-layers.py

fmt:
	cargo fmt --all --check
	cargo fmt --check --manifest-path sim/Cargo.toml

clippy:
	cargo clippy --all-targets -- -D warnings
	cargo clippy $(KERNEL_CRATE_ARGS) --lib -- -D warnings
	cargo clippy $(PURE_CRATE_ARGS) --all-targets --target $(HOST_TARGET) -- -D warnings
	cargo clippy $(PURE_CRATE_ARGS) --lib -- -D warnings
	cargo clippy -p beamcore-host-bench --all-targets --target $(HOST_TARGET) -- -D warnings
	cargo clippy --all-targets --features board-rpi4 --target-dir target/rpi4-build/qemu -- -D warnings
	cargo clippy --lib --bins --no-default-features --features board-rpi4 --target-dir target/rpi4-build/board -- -D warnings
	cargo clippy --all-targets $(SIM_CARGO_ARGS) -- -D warnings

clean:
	cargo clean

# A new program (scripts/new-program.sh): template/ copied to $(DIR)/$(NAME) with this checkout's
# path filled in. Refuses to write over an existing directory.
DIR ?= ..
.PHONY: new test-examples test-tutorial
new:
	@scripts/new-program.sh "$(NAME)" "$(DIR)"

# Programs built as a user builds them (scripts/test-examples.sh): each of examples/ and a fresh
# `make new` project, copied to a temporary directory outside the checkout, built (one shared
# target directory, target/examples), booted at 1 and 4 cores and tested. Part of `make test`.
test-examples: $(SETUP_STAMP)
	@echo "==> test-examples: examples/ and a new project, built and run from outside the checkout"
	scripts/test-examples.sh

# The tutorial as a reader follows it (scripts/test-tutorial.sh): docs/tutorial.md's sh blocks run
# in order in a fresh directory outside the checkout, its files written, each text block's lines
# checked in the output; built in test-examples' target directory. Part of `make test`.
test-tutorial: $(SETUP_STAMP)
	@echo "==> test-tutorial: docs/tutorial.md followed step by step in a fresh directory"
	scripts/test-tutorial.sh
