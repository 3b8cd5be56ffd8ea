//! ARM PrimeCell PL011 UART (DDI 0183): transmit only, polled.

use tock_registers::interfaces::{Readable, Writeable};
use tock_registers::registers::{ReadOnly, ReadWrite, WriteOnly};
use tock_registers::{register_bitfields, register_structs};

register_bitfields! [u32,
    FR [
        /// Transmit FIFO full.
        TXFF OFFSET(5) NUMBITS(1) [],
        /// UART busy transmitting.
        BUSY OFFSET(3) NUMBITS(1) []
    ],
    LCR_H [
        /// Word length: 0b11 = 8 bits.
        WLEN OFFSET(5) NUMBITS(2) [EightBit = 0b11],
        /// FIFOs enabled.
        FEN OFFSET(4) NUMBITS(1) []
    ],
    CR [
        RXE OFFSET(9) NUMBITS(1) [],
        TXE OFFSET(8) NUMBITS(1) [],
        UARTEN OFFSET(0) NUMBITS(1) []
    ]
];

register_structs! {
    Registers {
        /// Data register (PL011 TRM 3.3.1).
        (0x00 => dr: ReadWrite<u32>),
        (0x04 => _reserved0),
        /// Flag register (3.3.3).
        (0x18 => fr: ReadOnly<u32, FR::Register>),
        (0x1c => _reserved1),
        /// Integer baud rate divisor (3.3.6).
        (0x24 => ibrd: ReadWrite<u32>),
        /// Fractional baud rate divisor (3.3.7).
        (0x28 => fbrd: ReadWrite<u32>),
        /// Line control (3.3.8).
        (0x2c => lcr_h: ReadWrite<u32, LCR_H::Register>),
        /// Control (3.3.9).
        (0x30 => cr: ReadWrite<u32, CR::Register>),
        (0x34 => _reserved2),
        /// Interrupt clear (3.3.13).
        (0x44 => icr: WriteOnly<u32>),
        (0x48 => @END),
    }
}

/// A PL011 at a fixed MMIO address.
pub struct Pl011 {
    registers: &'static Registers,
}

impl Pl011 {
    /// # Safety
    /// `base` is the address of a PL011's register block, mapped as device memory (or the MMU
    /// is off), and nothing else drives the device concurrently except through this value.
    pub const unsafe fn new(base: usize) -> Pl011 {
        // SAFETY: per the contract, `base` points at the device's registers for 'static.
        Pl011 { registers: unsafe { &*(base as *const Registers) } }
    }

    /// Programs 8N1 with FIFOs at `baud` from a reference clock of `clock_hz`. QEMU works
    /// without this; real hardware needs it (the Pi's firmware leaves the divisors unknown).
    pub fn init(&self, clock_hz: u32, baud: u32) {
        while self.registers.fr.is_set(FR::BUSY) {}
        self.registers.cr.set(0);
        self.registers.icr.set(0x7ff);
        // Divisor = clock / (16 * baud), as 16.6 fixed point, rounded.
        let divisor_x64 = (u64::from(clock_hz) * 4 + u64::from(baud) / 2) / u64::from(baud);
        self.registers.ibrd.set((divisor_x64 >> 6) as u32);
        self.registers.fbrd.set((divisor_x64 & 0x3f) as u32);
        self.registers.lcr_h.write(LCR_H::WLEN::EightBit + LCR_H::FEN::SET);
        self.registers.cr.write(CR::UARTEN::SET + CR::TXE::SET + CR::RXE::SET);
    }

    pub fn write_byte(&self, byte: u8) {
        while self.registers.fr.is_set(FR::TXFF) {
            core::hint::spin_loop();
        }
        self.registers.dr.set(u32::from(byte));
    }

    /// Writes `text`, turning `\n` into `\r\n` for terminals.
    pub fn write_str(&self, text: &str) {
        for byte in text.bytes() {
            if byte == b'\n' {
                self.write_byte(b'\r');
            }
            self.write_byte(byte);
        }
    }

    /// Waits until every byte has left the transmitter.
    pub fn flush(&self) {
        while self.registers.fr.is_set(FR::BUSY) {
            core::hint::spin_loop();
        }
    }
}
