//! Device drivers: the PL011 UART and the GICv2/GICv3 interrupt controllers.
//!
//! MMIO goes through tock-registers only; each device has one `unsafe` constructor taking its
//! base address, called from board bring-up with an address from the platform description.

pub mod gic;
pub mod pl011;
