//! What a function's language-specific data area (LSDA, its `.gcc_except_table` entry) says about
//! one of its call sites: whether an unwind passing through that call has code to run there
//! (a landing pad: a destructor, a guard's release) or none. It answers as Rust's own
//! personality routine reads the table (`library/std/src/sys/personality/dwarf/eh.rs`), so that
//! the kernel's quick decision and the unwinder never disagree; any form it does not know is an
//! error, never a guess.
//!
//! The format (the Itanium C++ ABI's, as GCC and LLVM emit it): a header (where landing pads
//! are counted from, the type table's offset, the call-site entries' encoding and their total
//! length) then one entry per range of call instructions, sorted by address: start and length
//! (from the function's start), landing pad (0 for none) and an action index.

/// What an unwind through a call site finds there.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    /// The call is listed with no landing pad: the unwind passes this frame running nothing.
    Nothing,
    /// The call has a landing pad at this address: the unwind runs code there.
    LandingPad(u64),
    /// The call is in no listed range: Rust's personality routine then stops the unwind (a call
    /// that must not unwind), so the unwind would not simply pass.
    Unlisted,
}

/// Why the table could not be read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LsdaError {
    /// The table ends before a field it announces.
    Truncated,
    /// A pointer encoding this reader does not take (`DW_EH_PE_*`, the byte given): indirect,
    /// aligned, data- or text-relative ones, which Rust's code does not emit here.
    Encoding(u8),
}

impl core::fmt::Display for LsdaError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            LsdaError::Truncated => write!(f, "the exception table ends inside a field"),
            LsdaError::Encoding(e) => write!(f, "pointer encoding {e:#04x} is not supported"),
        }
    }
}

/// `DW_EH_PE_omit`: the field is absent.
const OMIT: u8 = 0xff;

/// A cursor over the table's bytes, which lie at address `base` in memory (for pc-relative
/// pointers).
struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
    base: u64,
}

impl Reader<'_> {
    fn u8(&mut self) -> Result<u8, LsdaError> {
        let byte = *self.bytes.get(self.at).ok_or(LsdaError::Truncated)?;
        self.at += 1;
        Ok(byte)
    }

    fn fixed<const N: usize>(&mut self) -> Result<[u8; N], LsdaError> {
        let end = self.at.checked_add(N).ok_or(LsdaError::Truncated)?;
        let bytes = self.bytes.get(self.at..end).ok_or(LsdaError::Truncated)?;
        self.at = end;
        let mut out = [0; N];
        out.copy_from_slice(bytes);
        Ok(out)
    }

    fn uleb128(&mut self) -> Result<u64, LsdaError> {
        let mut value = 0u64;
        let mut shift = 0u32;
        loop {
            let byte = self.u8()?;
            if shift < 64 {
                value |= u64::from(byte & 0x7f) << shift;
            }
            shift += 7;
            if byte & 0x80 == 0 {
                return Ok(value);
            }
        }
    }

    fn sleb128(&mut self) -> Result<i64, LsdaError> {
        let mut value = 0i64;
        let mut shift = 0u32;
        loop {
            let byte = self.u8()?;
            if shift < 64 {
                value |= i64::from(byte & 0x7f) << shift;
            }
            shift += 7;
            if byte & 0x80 == 0 {
                if shift < 64 && byte & 0x40 != 0 {
                    value |= -1i64 << shift;
                }
                return Ok(value);
            }
        }
    }

    /// A value in `encoding`'s format, then its application: absolute, or pc-relative (from
    /// where the value itself lies).
    fn pointer(&mut self, encoding: u8) -> Result<u64, LsdaError> {
        let here = self.base.wrapping_add(self.at as u64);
        let value = match encoding & 0x0f {
            0x00 | 0x04 => u64::from_le_bytes(self.fixed::<8>()?),
            0x01 => self.uleb128()?,
            0x02 => u64::from(u16::from_le_bytes(self.fixed::<2>()?)),
            0x03 => u64::from(u32::from_le_bytes(self.fixed::<4>()?)),
            0x09 => self.sleb128()? as u64,
            0x0a => i64::from(i16::from_le_bytes(self.fixed::<2>()?)) as u64,
            0x0b => i64::from(i32::from_le_bytes(self.fixed::<4>()?)) as u64,
            0x0c => i64::from_le_bytes(self.fixed::<8>()?) as u64,
            _ => return Err(LsdaError::Encoding(encoding)),
        };
        match encoding & 0xf0 {
            0x00 => Ok(value),
            0x10 => Ok(here.wrapping_add(value)),
            _ => Err(LsdaError::Encoding(encoding)),
        }
    }

    /// A call-site field: an offset from the function's start, so only its format counts
    /// (Rust's personality routine refuses any application but absolute here, and so do we).
    fn offset(&mut self, encoding: u8) -> Result<u64, LsdaError> {
        if encoding & 0xf0 != 0 {
            return Err(LsdaError::Encoding(encoding));
        }
        self.pointer(encoding)
    }
}

/// What the LSDA in `table` (lying at address `table_address`) of the function starting at
/// `function_start` says about the call whose instruction is at `ip` (a return address minus
/// one, as the personality routine takes it). `table` may run past the LSDA's end (the kernel
/// cannot know its length before reading its header).
pub fn action_at(table: &[u8], table_address: u64, function_start: u64, ip: u64) -> Result<Action, LsdaError> {
    let mut reader = Reader { bytes: table, at: 0, base: table_address };
    let landing_pad_base_encoding = reader.u8()?;
    let landing_pad_base =
        if landing_pad_base_encoding == OMIT { function_start } else { reader.pointer(landing_pad_base_encoding)? };
    let type_table_encoding = reader.u8()?;
    if type_table_encoding != OMIT {
        reader.uleb128()?;
    }
    let call_site_encoding = reader.u8()?;
    let table_length = reader.uleb128()?;
    let table_end = usize::try_from(table_length)
        .ok()
        .and_then(|length| reader.at.checked_add(length))
        .filter(|end| *end <= table.len())
        .ok_or(LsdaError::Truncated)?;
    while reader.at < table_end {
        let start = reader.offset(call_site_encoding)?;
        let length = reader.offset(call_site_encoding)?;
        let landing_pad = reader.offset(call_site_encoding)?;
        reader.uleb128()?;
        if reader.at > table_end {
            return Err(LsdaError::Truncated);
        }
        let range_start = function_start.wrapping_add(start);
        if ip < range_start {
            break;
        }
        if ip < range_start.wrapping_add(length) {
            return Ok(if landing_pad == 0 {
                Action::Nothing
            } else {
                Action::LandingPad(landing_pad_base.wrapping_add(landing_pad))
            });
        }
    }
    Ok(Action::Unlisted)
}
