//! One pass over the command line: split into words, each applied to the kernel's
//! configuration, offered to the program, skipped as another program's, or rejected. The
//! order of those tries is the one rule of the command line, so it is written in one place.

use beamcore_platform::MAX_BOOTARGS_BYTES;

use crate::config::SETTINGS;
use crate::table::apply_value;
use crate::{Config, ProgramWords, RejectReason, Rejection};

/// Most rejections kept: as many words as a command line of [`MAX_BOOTARGS_BYTES`] can hold
/// (one byte and a space each), so on the kernel's command line every rejected word is kept
/// and reported. A longer line given to [`parse`] has the rest counted in
/// [`Parsed::rejections_not_kept`].
pub const MAX_REJECTIONS: usize = MAX_BOOTARGS_BYTES.div_ceil(2);

/// The result of parsing: the effective configuration and what was ignored.
#[derive(Debug)]
pub struct Parsed<'a> {
    pub config: Config,
    /// The words not applied, in the order given.
    pub rejections: heapless::Vec<Rejection<'a>, MAX_REJECTIONS>,
    /// Rejected words after the first [`MAX_REJECTIONS`] (only a line longer than
    /// [`MAX_BOOTARGS_BYTES`] has any): counted, so a report can say how many it does not show.
    pub rejections_not_kept: usize,
}

/// Keys that belong to other software sharing the command line (Linux-style console and root
/// settings the Pi firmware writes); they are skipped silently.
const FOREIGN_KEYS: &[&str] = &["console", "earlycon", "root", "rootfstype", "rootwait", "fsck.repair", "quiet"];

/// Parses a command line (raw bytes, words separated by ASCII whitespace) into the kernel's
/// [`Config`], offering every word whose key the kernel does not know to `program`. Later words
/// override earlier ones for the same key. `last_word_cut`: the line is the beginning of a longer one,
/// cut inside its last word (see [`beamcore_platform::BootargsCut::InWord`]); that word is
/// rejected, not applied.
pub fn parse<'a>(command_line: &'a [u8], last_word_cut: bool, program: &mut dyn ProgramWords) -> Parsed<'a> {
    let mut parsed = Parsed { config: Config::default(), rejections: heapless::Vec::new(), rejections_not_kept: 0 };
    let mut words = command_line.split(u8::is_ascii_whitespace).filter(|word| !word.is_empty()).peekable();
    while let Some(word) = words.next() {
        let outcome = if last_word_cut && words.peek().is_none() {
            Err(RejectReason::CutOff)
        } else {
            core::str::from_utf8(word)
                .map_err(|_| RejectReason::NotUtf8)
                .and_then(|text| apply_word(&mut parsed.config, program, text))
        };
        if let Err(reason) = outcome {
            let rejection = Rejection { word, reason };
            if parsed.rejections.push(rejection).is_err() {
                parsed.rejections_not_kept += 1;
            }
        }
    }
    parsed
}

fn apply_word(config: &mut Config, program: &mut dyn ProgramWords, word: &str) -> Result<(), RejectReason> {
    let (key, value) = match word.split_once('=') {
        Some((key, value)) if !key.is_empty() => (key, value),
        _ if FOREIGN_KEYS.contains(&word) => return Ok(()),
        _ => return Err(RejectReason::NotKeyValue),
    };
    if let Some(setting) = SETTINGS.iter().find(|s| s.key == key) {
        return apply_value(&setting.value, config, value);
    }
    if let Some(outcome) = program.apply(key, value) {
        return outcome;
    }
    // `module.param=value` words are for Linux modules; skip them like foreign keys.
    if FOREIGN_KEYS.contains(&key) || key.contains('.') {
        Ok(())
    } else {
        Err(RejectReason::UnknownKey { program_keys: program.keys() })
    }
}
