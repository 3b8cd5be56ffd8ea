//! The balancer on 64 cores (the kernel's MAX_CORES, four GICv3 clusters of 16): `imbalanced`
//! (everything spawned on core 0) spreads to every core with the busiest within 2x the mean (QEMU's own -icount share spread is 1.84x at 8 cores),
//! and `mixed` keeps every rule (bound processes stay, limits hold), under the default strategy
//! and thresholds; `locality` walks the four clusters. Test 30's checks, at 64 cores: victim
//! walks past 32 cores, sleeping-core sets past one 32-bit word, wake-ups of cores 32-63.
//! qemu-test: configs=gicv3-smp64
//! qemu-test: qemu-args=-icount shift=0,sleep=off
//! qemu-test: variants=workload=imbalanced;workload=mixed;workload=mixed strategy=locality
//! qemu-test: expect-count=64 ^core \d+ online el=1 mpidr=0x[0-9a-f]+$
//! qemu-test: forbid=PANIC|did not come online
//! qemu-test: timeout=300

#![no_std]
#![no_main]

use beamcore::ExitCode;

fn main() -> ExitCode {
    beamcore_apps::testing::run_configured_and_check()
}

beamcore::entry!(main, settings = beamcore_apps::config::ARGS);
