//! Parses the kernel command line (`key=value` words separated by spaces) into a typed
//! [`Config`].
//!
//! The command line comes from QEMU's `-append`, the device tree's `/chosen/bootargs` or, on the
//! Pi, `cmdline.txt`. Parsing never fails as a whole: a word that is not understood is reported
//! as a [`Rejection`] (printed as `bootargs: <what> ignored: <why>`) and the setting keeps its
//! default, so a typo costs a warning, not a boot. Words that name another program's setting
//! (`console=…`, `module.param=…`, which the Pi's firmware adds) are recognised and skipped.
//!
//! Pure code: tested on the host.

use core::fmt;

use crate::mm::layout::MAX_CORES;

/// Settings chosen at boot. `Default` gives the documented defaults.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Config {
    /// Period of the per-core timer tick in microseconds (the scheduler's time slice).
    pub slice_us: u32,
    /// Most cores to bring up, counting the boot core (like Linux's `maxcpus=`).
    pub maxcpus: usize,
    /// Timer ticks every core waits in the boot workload before reporting.
    pub ticks: u32,
    /// Reductions (units of work) a process may spend in one slice before it must yield.
    pub reductions: u32,
}

impl Default for Config {
    fn default() -> Self {
        Config { slice_us: 1000, maxcpus: MAX_CORES, ticks: 10, reductions: 4000 }
    }
}

impl fmt::Display for Config {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "slice_us={} maxcpus={} ticks={} reductions={}",
            self.slice_us, self.maxcpus, self.ticks, self.reductions
        )
    }
}

/// Why a word of the command line was ignored.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RejectReason {
    /// Not of the form `key=value`.
    NotKeyValue,
    /// No setting has this name.
    UnknownKey,
    /// The value is not a decimal number.
    NotANumber,
    /// The number is outside the setting's range.
    OutOfRange { min: u64, max: u64 },
    /// The command line has more words than the kernel keeps track of.
    TooManyWords,
}

impl fmt::Display for RejectReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RejectReason::NotKeyValue => write!(f, "expected key=value"),
            RejectReason::UnknownKey => write!(f, "unknown key (known: {})", KnownKeys),
            RejectReason::NotANumber => write!(f, "not a decimal number"),
            RejectReason::OutOfRange { min, max } => write!(f, "out of range {min}..={max}"),
            RejectReason::TooManyWords => write!(f, "too many words on the command line"),
        }
    }
}

/// A word of the command line that was not applied.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rejection<'a> {
    pub word: &'a str,
    pub reason: RejectReason,
}

impl fmt::Display for Rejection<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "bootargs: {} ignored: {}", self.word, self.reason)
    }
}

/// Most rejections reported; more are summarised in one [`RejectReason::TooManyWords`].
pub const MAX_REJECTIONS: usize = 16;

/// The result of parsing: the effective configuration and what was ignored.
#[derive(Debug)]
pub struct Parsed<'a> {
    pub config: Config,
    pub rejections: heapless::Vec<Rejection<'a>, MAX_REJECTIONS>,
}

struct Setting {
    key: &'static str,
    min: u64,
    max: u64,
    apply: fn(&mut Config, u64),
}

const SETTINGS: &[Setting] = &[
    Setting { key: "slice_us", min: 100, max: 1_000_000, apply: |c, v| c.slice_us = v as u32 },
    Setting { key: "maxcpus", min: 1, max: MAX_CORES as u64, apply: |c, v| c.maxcpus = v as usize },
    Setting { key: "ticks", min: 1, max: 100_000, apply: |c, v| c.ticks = v as u32 },
    Setting { key: "reductions", min: 1, max: 1_000_000, apply: |c, v| c.reductions = v as u32 },
];

/// Keys that belong to other software sharing the command line (Linux-style console and root
/// settings the Pi firmware writes); they are skipped silently.
const FOREIGN_KEYS: &[&str] = &["console", "earlycon", "root", "rootfstype", "rootwait", "fsck.repair", "quiet"];

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

/// Parses a command line. Later words override earlier ones for the same key.
pub fn parse(command_line: &str) -> Parsed<'_> {
    let mut parsed = Parsed { config: Config::default(), rejections: heapless::Vec::new() };
    for word in command_line.split_ascii_whitespace() {
        if let Err(reason) = apply_word(&mut parsed.config, word) {
            let rejection = Rejection { word, reason };
            if parsed.rejections.push(rejection).is_err() {
                let last = parsed.rejections.len() - 1;
                parsed.rejections[last] = Rejection { word, reason: RejectReason::TooManyWords };
            }
        }
    }
    parsed
}

fn apply_word(config: &mut Config, word: &str) -> Result<(), RejectReason> {
    let (key, value) = match word.split_once('=') {
        Some((key, value)) if !key.is_empty() => (key, value),
        _ if FOREIGN_KEYS.contains(&word) => return Ok(()),
        _ => return Err(RejectReason::NotKeyValue),
    };
    let Some(setting) = SETTINGS.iter().find(|s| s.key == key) else {
        // `module.param=value` words are for Linux modules; skip them like foreign keys.
        return if FOREIGN_KEYS.contains(&key) || key.contains('.') { Ok(()) } else { Err(RejectReason::UnknownKey) };
    };
    let number = parse_number(value).ok_or(RejectReason::NotANumber)?;
    if !(setting.min..=setting.max).contains(&number) {
        return Err(RejectReason::OutOfRange { min: setting.min, max: setting.max });
    }
    (setting.apply)(config, number);
    Ok(())
}

/// A decimal number; `_` may group digits (`10_000`).
fn parse_number(text: &str) -> Option<u64> {
    let mut value: u64 = 0;
    let mut digits = 0;
    for c in text.chars().filter(|&c| c != '_') {
        let digit = c.to_digit(10)?;
        value = value.checked_mul(10)?.checked_add(u64::from(digit))?;
        digits += 1;
    }
    (digits > 0).then_some(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_command_line_gives_defaults() {
        let parsed = parse("");
        assert_eq!(parsed.config, Config::default());
        assert!(parsed.rejections.is_empty());
    }

    #[test]
    fn known_keys_are_applied_and_later_words_win() {
        let parsed = parse("  slice_us=250 maxcpus=2\tticks=1_000 slice_us=500 ");
        assert_eq!(parsed.config, Config { slice_us: 500, maxcpus: 2, ticks: 1000, ..Config::default() });
        assert!(parsed.rejections.is_empty());
    }

    #[test]
    fn bad_words_are_reported_and_defaults_stay() {
        let parsed = parse("slice_us=fast maxcpus=0 bogus=1 ticks justtext =3");
        assert_eq!(parsed.config, Config::default());
        let got: Vec<_> = parsed.rejections.iter().map(|r| (r.word, r.reason)).collect();
        assert_eq!(
            got,
            vec![
                ("slice_us=fast", RejectReason::NotANumber),
                ("maxcpus=0", RejectReason::OutOfRange { min: 1, max: MAX_CORES as u64 }),
                ("bogus=1", RejectReason::UnknownKey),
                ("ticks", RejectReason::NotKeyValue),
                ("justtext", RejectReason::NotKeyValue),
                ("=3", RejectReason::NotKeyValue),
            ]
        );
        assert_eq!(parsed.rejections[0].to_string(), "bootargs: slice_us=fast ignored: not a decimal number");
        assert_eq!(
            parsed.rejections[2].to_string(),
            "bootargs: bogus=1 ignored: unknown key (known: slice_us, maxcpus, ticks, reductions)"
        );
    }

    #[test]
    fn firmware_words_are_skipped_silently() {
        let parsed = parse("coherent_pool=1M 8250.nr_uarts=1 console=ttyS0,115200 quiet ticks=3");
        assert_eq!(parsed.config.ticks, 3);
        assert_eq!(parsed.rejections.len(), 1, "coherent_pool is unknown to us and not foreign");
    }

    #[test]
    fn huge_numbers_and_too_many_words_do_not_panic() {
        let parsed = parse("ticks=99999999999999999999999999999");
        assert_eq!(parsed.rejections[0].reason, RejectReason::NotANumber);
        let many = "x ".repeat(100);
        let parsed = parse(&many);
        assert_eq!(parsed.rejections.len(), MAX_REJECTIONS);
        assert_eq!(parsed.rejections[MAX_REJECTIONS - 1].reason, RejectReason::TooManyWords);
    }

    #[test]
    fn config_prints_every_setting() {
        assert_eq!(
            Config::default().to_string(),
            format!("slice_us=1000 maxcpus={MAX_CORES} ticks=10 reductions=4000")
        );
    }
}
