//! Device drivers: the PL011 UART, the GICv2/GICv3 interrupt controllers and (Pi 4) the
//! BCM2711 GPIO pins of the console UART.
//!
//! MMIO goes through tock-registers only; each device has one `unsafe` constructor taking its
//! base address, called from board bring-up with an address from the platform description.

#[cfg(feature = "board-rpi4")]
pub mod bcm2711_gpio;
pub mod gic;
pub mod pl011;
