//! What a rejected word says: why it was ignored, and the word itself shown safely. Apart from
//! the parser because the messages are the contract the console and the tests read, and the
//! escaping is what keeps a hostile command line off the terminal.

use core::fmt::{self, Write};

use beamcore_platform::MAX_BOOTARGS_BYTES;

use crate::config::SETTINGS;

/// Why a word of the command line was ignored.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RejectReason {
    /// Not of the form `key=value`.
    NotKeyValue,
    /// Neither the kernel nor the program has a setting of this name; `program_keys` are the
    /// program's (the kernel's are listed too when the rejection is shown).
    UnknownKey { program_keys: &'static [&'static str] },
    /// The value is not a decimal number.
    NotANumber,
    /// A decimal number, but too large even to hold (more than `u64::MAX`); `max` is the
    /// setting's largest value.
    TooLarge { max: u64 },
    /// The number is outside the setting's range.
    OutOfRange { min: u64, max: u64 },
    /// The value is not one of the setting's names.
    NotOneOf(&'static [&'static str]),
    /// The word holds bytes that are not UTF-8.
    NotUtf8,
    /// The word is the last one kept of a command line longer than [`MAX_BOOTARGS_BYTES`], and
    /// the limit cut it: what is left may be valid and mean something else.
    CutOff,
}

impl fmt::Display for RejectReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RejectReason::NotKeyValue => write!(f, "expected key=value"),
            RejectReason::UnknownKey { program_keys } => {
                write!(f, "unknown key (known: {KnownKeys}")?;
                for key in program_keys.iter() {
                    write!(f, ", {key}")?;
                }
                write!(f, ")")
            }
            RejectReason::NotANumber => write!(f, "not a decimal number"),
            RejectReason::TooLarge { max } => write!(f, "number too large (at most {max})"),
            RejectReason::OutOfRange { min, max } => write!(f, "out of range {min}..={max}"),
            RejectReason::NotOneOf(names) => {
                write!(f, "expected one of ")?;
                for (i, name) in names.iter().enumerate() {
                    write!(f, "{}{name}", if i == 0 { "" } else { "|" })?;
                }
                Ok(())
            }
            RejectReason::NotUtf8 => write!(f, "not valid UTF-8"),
            RejectReason::CutOff => write!(f, "cut off at the {MAX_BOOTARGS_BYTES}-byte command-line limit"),
        }
    }
}

/// A word of the command line that was not applied.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rejection<'a> {
    /// The word's raw bytes (not necessarily UTF-8).
    pub word: &'a [u8],
    pub reason: RejectReason,
}

impl fmt::Display for Rejection<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "bootargs: {} ignored: {}", Escaped(self.word), self.reason)
    }
}

/// Shows bytes from the command line safely on a terminal: printable ASCII as it is, and every
/// other byte (controls, DEL, anything above 0x7f, UTF-8 or not) as `\xNN`, a backslash as
/// `\\`. No byte of the command line then reaches the terminal raw: no escape sequence, and
/// no Unicode that changes how the line reads (a right-to-left override, U+202E, would show
/// the rest of the line reversed); what is shown can always be told apart from what was typed.
pub struct Escaped<'a>(pub &'a [u8]);

impl fmt::Display for Escaped<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for &byte in self.0 {
            match byte {
                b'\\' => f.write_str("\\\\")?,
                b' '..=b'~' => f.write_char(char::from(byte))?,
                _ => write!(f, "\\x{byte:02x}")?,
            }
        }
        Ok(())
    }
}

struct KnownKeys;

impl fmt::Display for KnownKeys {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, setting) in SETTINGS.iter().enumerate() {
            let separator = if i == 0 { "" } else { ", " };
            write!(f, "{separator}{}", setting.key)?;
        }
        Ok(())
    }
}
