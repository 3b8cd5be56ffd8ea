//! BCM2711 GPIO (BCM2711 ARM Peripherals, chapter 5): only what routing the console UART to
//! its header pins needs.

use tock_registers::interfaces::ReadWriteable;
use tock_registers::registers::ReadWrite;
use tock_registers::{register_bitfields, register_structs};

register_bitfields! [u32,
    /// Function select for GPIO10-19 (5.2, GPFSEL1): three bits per pin.
    GPFSEL1 [
        FSEL15 OFFSET(15) NUMBITS(3) [Input = 0b000, Output = 0b001, Alt0 = 0b100],
        FSEL14 OFFSET(12) NUMBITS(3) [Input = 0b000, Output = 0b001, Alt0 = 0b100]
    ],
    /// Pull-up/down for GPIO0-15 (5.2, GPIO_PUP_PDN_CNTRL_REG0): two bits per pin.
    PUP_PDN_CNTRL_REG0 [
        PIN15 OFFSET(30) NUMBITS(2) [NoResistor = 0b00, PullUp = 0b01, PullDown = 0b10],
        PIN14 OFFSET(28) NUMBITS(2) [NoResistor = 0b00, PullUp = 0b01, PullDown = 0b10]
    ]
];

register_structs! {
    Registers {
        (0x00 => _gpfsel0),
        /// GPIO function select 1 (5.2).
        (0x04 => gpfsel1: ReadWrite<u32, GPFSEL1::Register>),
        (0x08 => _reserved0),
        /// GPIO pull-up/pull-down control 0 (5.2; BCM2711 replaces the BCM2835's GPPUD dance).
        (0xe4 => pup_pdn_cntrl_reg0: ReadWrite<u32, PUP_PDN_CNTRL_REG0::Register>),
        (0xe8 => @END),
    }
}

/// The GPIO block at a fixed MMIO address.
pub struct Gpio {
    registers: &'static Registers,
}

impl Gpio {
    /// # Safety
    /// `base` is the BCM2711 GPIO block's address, mapped as device memory, and nothing else
    /// changes these pins' configuration concurrently.
    pub unsafe fn new(base: usize) -> Gpio {
        // SAFETY: per the contract, `base` points at the device's registers for 'static.
        Gpio { registers: unsafe { &*(base as *const Registers) } }
    }

    /// GPIO14 = TXD0 and GPIO15 = RXD0 (ALT0, UART0 = the PL011), pulled up like an idle line.
    pub fn route_uart0_to_pins_14_15(&self) {
        self.registers.gpfsel1.modify(GPFSEL1::FSEL14::Alt0 + GPFSEL1::FSEL15::Alt0);
        self.registers.pup_pdn_cntrl_reg0.modify(PUP_PDN_CNTRL_REG0::PIN14::PullUp + PUP_PDN_CNTRL_REG0::PIN15::PullUp);
    }
}
