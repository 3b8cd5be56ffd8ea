//! Parses the kernel command line (`key=value` words separated by spaces) into a typed
//! [`Config`].
//!
//! The command line comes from QEMU's `-append`, the device tree's `/chosen/bootargs` or, on the
//! Pi, `cmdline.txt`, as raw bytes: nothing guarantees UTF-8. Parsing never fails as a whole: the
//! line is split into words at ASCII whitespace, and a word that is not understood (not UTF-8,
//! cut off at the command-line limit, unknown, out of range, ...) is reported as a [`Rejection`]
//! (printed as `bootargs: <what> ignored: <why>`, with control characters and bytes that are
//! not UTF-8 escaped) and the setting keeps its default, so a typo costs a warning, not a boot.
//! Words that name another program's setting (`console=…`, `module.param=…`, which the Pi's
//! firmware adds) are recognised and skipped.
//!
//! Pure code: tested on the host.

#![cfg_attr(not(test), no_std)]
#![forbid(unsafe_code)]

use core::fmt::{self, Write};

use beamcore_limits::{MAX_CORES, MAX_PROCESSES};
use beamcore_platform::MAX_BOOTARGS_BYTES;
use beamcore_sched_policy::balance::{BalanceConfig, DEFAULT_COOLDOWN_NS, StealAmount, Strategy};
use beamcore_sched_policy::placement::{QueueMode, SpawnPlacement};

/// Settings chosen at boot. `Default` gives the documented defaults.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Config {
    /// Period of the per-core timer tick in microseconds (the scheduler's time slice).
    pub slice_us: u32,
    /// Most cores to bring up, counting the boot core (like Linux's `maxcpus=`).
    pub maxcpus: usize,
    /// Timer ticks every core waits in the boot workload before reporting (at most [`MAX_TICKS`]).
    pub ticks: u32,
    /// Reductions (units of work) a process may spend in one slice before it must yield.
    pub reductions: u32,
    /// How idle cores choose whom to steal from.
    pub strategy: Strategy,
    /// Thresholds, migration limit, amount, protection, rebalancing (its durations in counts of
    /// the counter are set by the kernel from `cooldown_ns` and the counter's frequency).
    pub balance: BalanceConfig,
    /// No steal from the same victim within this many nanoseconds of the last success.
    pub cooldown_ns: u64,
    /// Record scheduling events per core and dump them at the end of the run.
    pub trace: bool,
    /// Most processes alive at once: `spawn` fails with `TableFull` beyond (like ERTS's `+P`).
    pub max_processes: usize,
    /// Where runnable processes wait: per-core deques (with stealing) or one shared queue.
    pub queues: QueueMode,
    /// On which core a new free process starts when its spawner names none.
    pub placement: SpawnPlacement,
    /// Seeds every core's random choices (victims, backoff and search jitter): the same seed
    /// gives the same choices, another seed others, so a run under `-icount` can be repeated
    /// with different luck. 0: each core seeds from the counter at boot.
    pub seed: u64,
    /// Instructions (`nop`s) the boot core executes before it starts the other cores. Under
    /// `-icount` a few instructions more at boot redraw how QEMU shares its turns among the
    /// vCPUs, as any small change to the kernel does; the calibration samples that on purpose
    /// (docs/simulator.md). 0 by default, and then not printed.
    pub boot_jitter: u32,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            slice_us: 1000,
            maxcpus: MAX_CORES,
            ticks: 10,
            reductions: 4000,
            strategy: Strategy::Load,
            balance: BalanceConfig::default(),
            cooldown_ns: DEFAULT_COOLDOWN_NS,
            trace: false,
            max_processes: MAX_PROCESSES,
            queues: QueueMode::PerCore,
            placement: SpawnPlacement::Local,
            seed: 0,
            boot_jitter: 0,
        }
    }
}

impl fmt::Display for Config {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let b = &self.balance;
        let on_off = |on: bool| if on { "on" } else { "off" };
        write!(
            f,
            "slice_us={} maxcpus={} ticks={} reductions={} strategy={} min_steal={} imbalance={} retries={} \
             cooldown={} max_migrations={} steal={} protect_max={} rebalance={} rebalance_ratio={} trace={} max_processes={} \
             queues={} placement={} seed={}",
            self.slice_us,
            self.maxcpus,
            self.ticks,
            self.reductions,
            self.strategy,
            b.min_steal,
            b.imbalance,
            b.retries,
            self.cooldown_ns,
            b.max_migrations,
            if b.amount == StealAmount::One { "one" } else { "half" },
            on_off(b.protect_max),
            on_off(b.rebalance),
            b.rebalance_ratio,
            on_off(self.trace),
            self.max_processes,
            self.queues,
            self.placement,
            self.seed
        )?;
        if self.boot_jitter != 0 {
            write!(f, " boot_jitter={}", self.boot_jitter)?;
        }
        Ok(())
    }
}

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

/// What a setting's value must be, and how it changes the configuration `C` it belongs to.
pub enum Value<C> {
    /// A decimal number in `min..=max`.
    Number { min: u64, max: u64, apply: fn(&mut C, u64) },
    /// One of `names`; `apply` gets the index of the one given.
    Choice { names: &'static [&'static str], apply: fn(&mut C, usize) },
}

/// One `key=value` setting of the configuration `C`.
pub struct Setting<C> {
    pub key: &'static str,
    pub value: Value<C>,
}

/// A numeric setting: `key=<min..=max>`.
pub const fn number<C>(key: &'static str, min: u64, max: u64, apply: fn(&mut C, u64)) -> Setting<C> {
    Setting { key, value: Value::Number { min, max, apply } }
}

/// A setting naming one of `names`.
pub const fn choice<C>(key: &'static str, names: &'static [&'static str], apply: fn(&mut C, usize)) -> Setting<C> {
    Setting { key, value: Value::Choice { names, apply } }
}

/// A program's settings: the words of the command line that the kernel does not know and the
/// program does (the demo workloads' `workload=`, `rounds=`, ...). The kernel parses them in the
/// same pass as its own, so a word that neither knows is still reported, with one message.
pub struct Table<C: 'static> {
    settings: &'static [Setting<C>],
    keys: &'static [&'static str],
}

impl<C> Table<C> {
    /// `keys` must be `settings`' keys in order (they name the program's keys in the message
    /// for an unknown key). Checked here, so a `static` table that disagrees does not compile.
    pub const fn new(settings: &'static [Setting<C>], keys: &'static [&'static str]) -> Self {
        assert!(settings.len() == keys.len(), "a program's settings and its key list differ in length");
        let mut i = 0;
        while i < keys.len() {
            assert!(same_str(settings[i].key, keys[i]), "a program's key list does not follow its settings");
            i += 1;
        }
        Table { settings, keys }
    }

    /// The empty table: a program with no settings of its own.
    pub const EMPTY: Table<C> = Table { settings: &[], keys: &[] };

    pub fn keys(&self) -> &'static [&'static str] {
        self.keys
    }
}

const fn same_str(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

/// The program's side of a parse: the words whose key the kernel does not know are offered here.
pub trait ProgramWords {
    /// Applies `key=value` if `key` is one of the program's settings; `None` if it is not.
    fn apply(&mut self, key: &str, value: &str) -> Option<Result<(), RejectReason>>;
    /// The program's keys (for the message naming every known key).
    fn keys(&self) -> &'static [&'static str];
}

/// A program's configuration `C` being parsed with its [`Table`].
pub struct TableWords<C: 'static> {
    pub table: &'static Table<C>,
    pub config: C,
}

impl<C> ProgramWords for TableWords<C> {
    fn apply(&mut self, key: &str, value: &str) -> Option<Result<(), RejectReason>> {
        let setting = self.table.settings.iter().find(|s| s.key == key)?;
        Some(apply_value(&setting.value, &mut self.config, value))
    }

    fn keys(&self) -> &'static [&'static str] {
        self.table.keys
    }
}

/// A program with no settings of its own.
pub struct NoProgramWords;

impl ProgramWords for NoProgramWords {
    fn apply(&mut self, _key: &str, _value: &str) -> Option<Result<(), RejectReason>> {
        None
    }

    fn keys(&self) -> &'static [&'static str] {
        &[]
    }
}

const STRATEGIES: &[&str] = &["random", "load", "locality", "p2c", "adaptive"];
/// `on|off` (the index is 1 for `on`).
pub const ON_OFF: &[&str] = &["off", "on"];

const SETTINGS: &[Setting<Config>] = &[
    number("slice_us", 100, 1_000_000, |c, v| c.slice_us = v as u32),
    number("maxcpus", 1, MAX_CORES as u64, |c, v| c.maxcpus = v as usize),
    number("ticks", 1, MAX_TICKS, |c, v| c.ticks = v as u32),
    number("reductions", 1, 1_000_000, |c, v| c.reductions = v as u32),
    choice("strategy", STRATEGIES, |c, i| c.strategy = Strategy::ALL[i]),
    number("min_steal", 1, 1_000, |c, v| c.balance.min_steal = v as usize),
    number("imbalance", 0, 1_000_000, |c, v| c.balance.imbalance = v),
    number("retries", 1, 64, |c, v| c.balance.retries = v as u32),
    number("cooldown", 0, 1 << 40, |c, v| c.cooldown_ns = v),
    number("max_migrations", 0, 1_000_000, |c, v| c.balance.max_migrations = v as u32),
    choice("steal", &["one", "half"], |c, i| c.balance.amount = [StealAmount::One, StealAmount::Half][i]),
    choice("protect_max", ON_OFF, |c, i| c.balance.protect_max = i == 1),
    choice("rebalance", ON_OFF, |c, i| c.balance.rebalance = i == 1),
    number("rebalance_ratio", 2, 1_000, |c, v| c.balance.rebalance_ratio = v),
    choice("trace", ON_OFF, |c, i| c.trace = i == 1),
    number("max_processes", 1, MAX_PROCESSES as u64, |c, v| c.max_processes = v as usize),
    choice("queues", QueueMode::NAMES, |c, i| c.queues = QueueMode::ALL[i]),
    choice("placement", SpawnPlacement::NAMES, |c, i| c.placement = SpawnPlacement::ALL[i]),
    number("seed", 0, u64::MAX, |c, v| c.seed = v),
    number("boot_jitter", 0, MAX_BOOT_JITTER, |c, v| c.boot_jitter = v as u32),
];

/// Largest `boot_jitter=`: a million instructions, a millisecond of guest time under `-icount`.
pub const MAX_BOOT_JITTER: u64 = 1_000_000;

/// Largest `ticks=`: the boot check of `make run` waits this many ticks with no progress line,
/// so at the default 1 ms tick at most 10 s.
pub const MAX_TICKS: u64 = 10_000;

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

fn apply_value<C>(value: &Value<C>, config: &mut C, text: &str) -> Result<(), RejectReason> {
    match *value {
        Value::Number { min, max, apply } => {
            let number = parse_number(text).map_err(|error| match error {
                NumberError::NotDecimal => RejectReason::NotANumber,
                NumberError::Overflow => RejectReason::TooLarge { max },
            })?;
            if !(min..=max).contains(&number) {
                return Err(RejectReason::OutOfRange { min, max });
            }
            apply(config, number);
        }
        Value::Choice { names, apply } => {
            let index = names.iter().position(|&name| name == text).ok_or(RejectReason::NotOneOf(names))?;
            apply(config, index);
        }
    }
    Ok(())
}

/// Why a value is not a number.
enum NumberError {
    /// Empty, or a character other than a digit or `_`.
    NotDecimal,
    /// Digits only, but more than `u64::MAX`.
    Overflow,
}

/// A decimal number; `_` may group digits (`10_000`).
fn parse_number(text: &str) -> Result<u64, NumberError> {
    let mut digits = text.bytes().filter(|&b| b != b'_').peekable();
    if digits.peek().is_none() || !text.bytes().all(|b| b == b'_' || b.is_ascii_digit()) {
        return Err(NumberError::NotDecimal);
    }
    digits.try_fold(0u64, |value, digit| {
        value.checked_mul(10).and_then(|v| v.checked_add(u64::from(digit - b'0'))).ok_or(NumberError::Overflow)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A whole command line given as text.
    fn parse(line: &str) -> Parsed<'_> {
        super::parse(line.as_bytes(), false, &mut NoProgramWords)
    }

    fn words<'a>(parsed: &Parsed<'a>) -> Vec<(&'a [u8], RejectReason)> {
        parsed.rejections.iter().map(|r| (r.word, r.reason)).collect()
    }

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
        assert_eq!(
            words(&parsed),
            vec![
                (&b"slice_us=fast"[..], RejectReason::NotANumber),
                (b"maxcpus=0", RejectReason::OutOfRange { min: 1, max: MAX_CORES as u64 }),
                (b"bogus=1", RejectReason::UnknownKey { program_keys: &[] }),
                (b"ticks", RejectReason::NotKeyValue),
                (b"justtext", RejectReason::NotKeyValue),
                (b"=3", RejectReason::NotKeyValue),
            ]
        );
        assert_eq!(parsed.rejections[0].to_string(), "bootargs: slice_us=fast ignored: not a decimal number");
        assert_eq!(
            parsed.rejections[2].to_string(),
            "bootargs: bogus=1 ignored: unknown key (known: slice_us, maxcpus, ticks, reductions, strategy, min_steal, \
             imbalance, retries, cooldown, max_migrations, steal, protect_max, rebalance, rebalance_ratio, trace, max_processes, \
             queues, placement, seed, boot_jitter)"
        );
    }

    #[test]
    fn firmware_words_are_skipped_silently() {
        let parsed = parse("coherent_pool=1M 8250.nr_uarts=1 console=ttyS0,115200 quiet ticks=3");
        assert_eq!(parsed.config.ticks, 3);
        assert_eq!(parsed.rejections.len(), 1, "coherent_pool is unknown to us and not foreign");
    }

    #[test]
    fn huge_numbers_and_many_words_do_not_panic() {
        let parsed = parse("ticks=99999999999999999999999999999");
        assert_eq!(parsed.rejections[0].reason, RejectReason::TooLarge { max: MAX_TICKS });
        let many = "x ".repeat(100);
        let parsed = parse(&many);
        assert_eq!(parsed.rejections.len(), 100, "every rejected word is kept");
        assert_eq!(parsed.rejections_not_kept, 0);
    }

    #[test]
    fn the_seed_takes_any_u64_and_zero_is_the_default() {
        assert_eq!(Config::default().seed, 0);
        assert_eq!(parse("seed=7").config.seed, 7);
        assert_eq!(parse("seed=18446744073709551615").config.seed, u64::MAX);
        let too_big = parse("seed=18446744073709551616");
        assert_eq!(too_big.config.seed, 0, "a seed beyond u64 is refused and the default stays");
        assert_eq!(too_big.rejections.len(), 1);
        assert!(parse("seed=7").config.to_string().ends_with(" seed=7"));
        let jittered = parse("boot_jitter=3 seed=7").config;
        assert_eq!(jittered.boot_jitter, 3);
        assert!(jittered.to_string().ends_with(" seed=7 boot_jitter=3"), "printed when set");
        assert_eq!(
            parse("boot_jitter=1000001").rejections[0].reason,
            RejectReason::OutOfRange { min: 0, max: 1_000_000 }
        );
    }

    #[test]
    fn config_prints_every_setting() {
        assert_eq!(
            Config::default().to_string(),
            format!(
                "slice_us=1000 maxcpus={MAX_CORES} ticks=10 reductions=4000 strategy=load min_steal=2 imbalance=2 \
                 retries=3 cooldown=10000 max_migrations=100 steal=one protect_max=off rebalance=on rebalance_ratio=4 \
                 trace=off max_processes={MAX_PROCESSES} queues=percore placement=local seed=0"
            )
        );
    }

    #[test]
    fn balancer_settings_parse_and_bad_names_are_rejected() {
        let parsed = parse("strategy=p2c steal=half protect_max=on rebalance=off cooldown=5000 strategy=busy");
        let c = parsed.config;
        assert_eq!(c.strategy, Strategy::P2c);
        assert_eq!(c.balance.amount, StealAmount::Half);
        assert!(c.balance.protect_max && !c.balance.rebalance);
        assert_eq!(c.cooldown_ns, 5000);
        assert_eq!(parsed.rejections.len(), 1);
        assert_eq!(
            parsed.rejections[0].to_string(),
            "bootargs: strategy=busy ignored: expected one of random|load|locality|p2c|adaptive"
        );
        let parsed = parse("min_steal=-1 retries=1000");
        assert_eq!(parsed.config, Config::default());
        assert_eq!(parsed.rejections[0].reason, RejectReason::NotANumber);
        assert_eq!(parsed.rejections[1].reason, RejectReason::OutOfRange { min: 1, max: 64 });
    }

    /// Every on/off setting: `on` sets it, `off` clears it (later words win), whatever its default.
    #[test]
    fn on_off_settings_follow_the_last_word() {
        let on = parse("trace=on protect_max=on rebalance=on").config;
        assert!(on.trace && on.balance.protect_max && on.balance.rebalance);
        let off = parse("trace=on protect_max=on rebalance=on trace=off protect_max=off rebalance=off").config;
        assert!(!off.trace && !off.balance.protect_max && !off.balance.rebalance);
    }

    #[test]
    fn the_peers_policy_fits_the_ranges() {
        // What Go's and Tokio's schedulers do: a random victim, half its queue, no cooldown, no
        // thresholds (scripts/bench.py's `peers` policy).
        let parsed = parse("strategy=random steal=half cooldown=0 min_steal=1 imbalance=0");
        assert!(parsed.rejections.is_empty(), "{:?}", words(&parsed));
        let c = parsed.config;
        assert_eq!(c.strategy, Strategy::Random);
        assert_eq!(c.balance.amount, StealAmount::Half);
        assert_eq!((c.cooldown_ns, c.balance.min_steal, c.balance.imbalance), (0, 1, 0));
        assert_eq!(c.balance.retries, Config::default().balance.retries);
    }

    #[test]
    fn queue_and_placement_settings_parse_and_bad_values_are_rejected() {
        let parsed = parse("queues=shared placement=round_robin");
        assert!(parsed.rejections.is_empty());
        assert_eq!((parsed.config.queues, parsed.config.placement), (QueueMode::Shared, SpawnPlacement::RoundRobin));
        let parsed = parse("queues=shared queues=percore placement=round_robin placement=local");
        assert_eq!(parsed.config, Config::default(), "later words win");
        let parsed = parse("queues=global placement=roundrobin queues= placement=Local");
        assert_eq!(parsed.config, Config::default(), "bad values keep the defaults");
        let rejected: Vec<String> = parsed.rejections.iter().map(|r| r.to_string()).collect();
        assert_eq!(
            rejected,
            [
                "bootargs: queues=global ignored: expected one of percore|shared",
                "bootargs: placement=roundrobin ignored: expected one of local|round_robin",
                "bootargs: queues= ignored: expected one of percore|shared",
                "bootargs: placement=Local ignored: expected one of local|round_robin",
            ]
        );
        assert_eq!(parsed.rejections[0].reason, RejectReason::NotOneOf(QueueMode::NAMES));
        assert_eq!(parsed.rejections[1].reason, RejectReason::NotOneOf(SpawnPlacement::NAMES));
    }

    #[test]
    fn process_settings_parse_within_their_ranges() {
        let parsed = parse("max_processes=500");
        assert!(parsed.rejections.is_empty());
        assert_eq!(parsed.config.max_processes, 500);
        let parsed = parse("max_processes=0 max_processes=2097153");
        assert_eq!(parsed.config, Config::default());
        let range = RejectReason::OutOfRange { min: 1, max: MAX_PROCESSES as u64 };
        assert_eq!(words(&parsed)[..2], [(&b"max_processes=0"[..], range), (b"max_processes=2097153", range)]);
    }

    #[test]
    fn a_word_that_is_not_utf8_is_reported_and_the_others_apply() {
        let parsed = super::parse(b"ticks=7 bad\xffword=1 maxcpus=2 \xc3", false, &mut NoProgramWords);
        assert_eq!(parsed.config, Config { ticks: 7, maxcpus: 2, ..Config::default() });
        assert_eq!(
            words(&parsed),
            vec![(&b"bad\xffword=1"[..], RejectReason::NotUtf8), (b"\xc3", RejectReason::NotUtf8)]
        );
        assert_eq!(parsed.rejections[0].to_string(), "bootargs: bad\\xffword=1 ignored: not valid UTF-8");
        assert_eq!(parsed.rejections[1].to_string(), "bootargs: \\xc3 ignored: not valid UTF-8");
        // A valid value followed by a bad byte is not applied either.
        let parsed = super::parse(b"ticks=5\x80", false, &mut NoProgramWords);
        assert_eq!(parsed.config, Config::default());
        assert_eq!(parsed.rejections[0].reason, RejectReason::NotUtf8);
    }

    #[test]
    fn a_word_cut_at_the_limit_is_reported_not_applied() {
        let parsed = super::parse(b"ticks=7 slice_us=100", true, &mut NoProgramWords);
        assert_eq!(parsed.config, Config { ticks: 7, ..Config::default() }, "slice_us=100 must not apply");
        assert_eq!(words(&parsed), vec![(&b"slice_us=100"[..], RejectReason::CutOff)]);
        assert_eq!(
            parsed.rejections[0].to_string(),
            "bootargs: slice_us=100 ignored: cut off at the 512-byte command-line limit"
        );
        // Not cut: the same last word applies.
        assert_eq!(super::parse(b"ticks=7 slice_us=100", false, &mut NoProgramWords).config.slice_us, 100);
        // Trailing whitespace does not make another word the last one.
        assert_eq!(
            words(&super::parse(b"ticks=7  ", true, &mut NoProgramWords)),
            vec![(&b"ticks=7"[..], RejectReason::CutOff)]
        );
    }

    #[test]
    fn bootargs_from_a_tree_that_are_not_utf8_keep_their_valid_words() {
        // The bytes beamcore-platform reads from tests/data/virt-el2-smp4.dtb with one byte of
        // "bogus" made invalid UTF-8 (its `bootargs_that_are_not_utf8_are_kept_as_bytes`).
        let parsed = super::parse(b"ticks=5 \xffogus", false, &mut NoProgramWords);
        assert_eq!(parsed.config.ticks, 5);
        assert_eq!(parsed.rejections[0].to_string(), "bootargs: \\xffogus ignored: not valid UTF-8");
    }

    #[test]
    fn the_limit_cuts_a_long_command_line_in_a_word_and_that_word_is_ignored() {
        // The way the kernel gets there: the platform keeps 512 bytes and says where it cut.
        let mut line = Vec::new();
        while line.len() < MAX_BOOTARGS_BYTES - "slice_us=100".len() {
            line.extend_from_slice(b"x.pad=1 ");
        }
        line.truncate(MAX_BOOTARGS_BYTES - "slice_us=100".len() - 1);
        line.extend_from_slice(b" slice_us=1000000 ticks=3");
        let mut kept = heapless::Vec::<u8, MAX_BOOTARGS_BYTES>::new();
        let cut = beamcore_platform::copy_command_line(&mut kept, &line);
        assert_eq!(cut, beamcore_platform::BootargsCut::InWord);
        assert!(kept.ends_with(b" slice_us=100"));
        let parsed = super::parse(&kept, cut == beamcore_platform::BootargsCut::InWord, &mut NoProgramWords);
        assert_eq!(parsed.config.slice_us, 1000, "the cut word must not apply as slice_us=100");
        assert_eq!(words(&parsed).last(), Some(&(&b"slice_us=100"[..], RejectReason::CutOff)));
    }

    #[test]
    fn control_characters_and_backslashes_are_escaped_in_rejections() {
        let parsed = super::parse(b"\x1b[2Jbogus=1 a\\b \x7f=1 k=\xc2\x85 w\xc3\xb6rd", false, &mut NoProgramWords);
        let shown: Vec<String> = parsed.rejections.iter().map(|r| r.to_string()).collect();
        assert!(shown[0].starts_with("bootargs: \\x1b[2Jbogus=1 ignored: unknown key"), "{}", shown[0]);
        assert_eq!(shown[1], "bootargs: a\\\\b ignored: expected key=value");
        assert!(shown[2].starts_with("bootargs: \\x7f=1 ignored: unknown key"), "{}", shown[2]);
        // U+0085 (a C1 control) and printable non-ASCII text alike are escaped byte by byte.
        assert!(shown[3].starts_with("bootargs: k=\\xc2\\x85 ignored: unknown key"), "{}", shown[3]);
        assert_eq!(shown[4], "bootargs: w\\xc3\\xb6rd ignored: expected key=value");
        for line in &shown {
            assert!(line.bytes().all(|b| (b' '..=b'~').contains(&b)), "{line:?}");
        }
    }

    #[test]
    fn a_right_to_left_override_never_reaches_the_terminal() {
        let parsed = super::parse("a\u{202e}b=1 \u{200f}x".as_bytes(), false, &mut NoProgramWords);
        let shown: Vec<String> = parsed.rejections.iter().map(|r| r.to_string()).collect();
        assert!(shown[0].starts_with("bootargs: a\\xe2\\x80\\xaeb=1 ignored: unknown key"), "{}", shown[0]);
        assert_eq!(shown[1], "bootargs: \\xe2\\x80\\x8fx ignored: expected key=value");
    }

    #[test]
    fn every_rejected_word_of_a_full_command_line_is_kept_in_order() {
        // The most words a kernel command line holds: one byte and a space each.
        let line = "x ".repeat(MAX_BOOTARGS_BYTES / 2);
        let parsed = parse(&line);
        assert_eq!(parsed.rejections.len(), MAX_BOOTARGS_BYTES / 2);
        assert_eq!(parsed.rejections_not_kept, 0);
        let forty: String = (1..=40).map(|i| format!("bad{i} ")).collect::<String>() + "ticks=3";
        let parsed = parse(forty.as_str());
        assert_eq!(parsed.config.ticks, 3);
        let words: Vec<String> =
            parsed.rejections.iter().map(|r| String::from_utf8(r.word.to_vec()).unwrap()).collect();
        let expected: Vec<String> = (1..=40).map(|i| format!("bad{i}")).collect();
        assert_eq!(words, expected, "each of the 40 words is reported once, in order, under its own name");
        // A line longer than the kernel's limit (only a caller other than the kernel has one).
        let long = "x ".repeat(MAX_REJECTIONS + 7);
        let parsed = parse(&long);
        assert_eq!((parsed.rejections.len(), parsed.rejections_not_kept), (MAX_REJECTIONS, 7));
    }

    #[test]
    fn ticks_has_an_upper_bound() {
        let parsed = parse("ticks=10000 ticks=10001");
        assert_eq!(parsed.config.ticks, 10_000);
        assert_eq!(parsed.rejections[0].to_string(), "bootargs: ticks=10001 ignored: out of range 1..=10000");
        assert_eq!(parse("ticks=100000").config.ticks, Config::default().ticks);
    }

    #[test]
    fn numbers_beyond_u64_are_too_large_not_malformed() {
        let parsed = parse(
            "slice_us=18446744073709551616 cooldown=1_000_000_000_000_000_000_000 ticks=9x9999999999999999999999",
        );
        assert_eq!(
            words(&parsed),
            vec![
                (&b"slice_us=18446744073709551616"[..], RejectReason::TooLarge { max: 1_000_000 }),
                (b"cooldown=1_000_000_000_000_000_000_000", RejectReason::TooLarge { max: 1 << 40 }),
                (b"ticks=9x9999999999999999999999", RejectReason::NotANumber),
            ]
        );
        assert_eq!(
            parsed.rejections[0].to_string(),
            "bootargs: slice_us=18446744073709551616 ignored: number too large (at most 1000000)"
        );
        // u64::MAX itself is a number: out of the setting's range, not too large to read.
        assert_eq!(
            parse("ticks=18446744073709551615").rejections[0].reason,
            RejectReason::OutOfRange { min: 1, max: MAX_TICKS }
        );
        assert_eq!(parse("ticks=_").rejections[0].reason, RejectReason::NotANumber);
    }

    /// Bytes that are never whitespace, with at least one that cannot start or continue UTF-8.
    fn garbage_word() -> impl proptest::strategy::Strategy<Value = Vec<u8>> {
        use proptest::prelude::*;
        (
            proptest::collection::vec(any::<u8>().prop_filter("not whitespace", |b| !b.is_ascii_whitespace()), 0..24),
            0..24usize,
        )
            .prop_map(|(mut bytes, at)| {
                bytes.insert(at.min(bytes.len()), 0xff);
                bytes
            })
    }

    proptest::proptest! {
        /// Whatever the bytes: no panic, every rejection prints without control characters.
        #[test]
        fn arbitrary_bytes_never_panic_and_print_safely(
            line in proptest::collection::vec(proptest::num::u8::ANY, 0..600),
            cut in proptest::bool::ANY,
        ) {
            let parsed = super::parse(&line, cut, &mut NoProgramWords);
            for rejection in &parsed.rejections {
                let shown = rejection.to_string();
                proptest::prop_assert!(!shown.chars().any(char::is_control), "{:?}", shown);
            }
        }

        /// A word that is not UTF-8 never stops the valid words around it from applying, and is
        /// the one reported.
        #[test]
        fn valid_words_apply_around_a_word_that_is_not_utf8(garbage in garbage_word()) {
            let mut line = b"ticks=7 ".to_vec();
            line.extend_from_slice(&garbage);
            line.extend_from_slice(b" maxcpus=2");
            let parsed = super::parse(&line, false, &mut NoProgramWords);
            proptest::prop_assert_eq!(parsed.config, Config { ticks: 7, maxcpus: 2, ..Config::default() });
            proptest::prop_assert_eq!(words(&parsed), vec![(&garbage[..], RejectReason::NotUtf8)]);
        }
    }

    /// A program's settings, as a program adds them (the demo workloads' crate has the real ones).
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    struct Demo {
        rounds: u32,
        mode: usize,
    }

    static DEMO: Table<Demo> = Table::new(
        &[number("rounds", 1, 9, |c, v| c.rounds = v as u32), choice("mode", ON_OFF, |c, i| c.mode = i)],
        &["rounds", "mode"],
    );

    #[test]
    fn a_programs_words_apply_to_it_and_unknown_words_name_both_key_lists() {
        let mut program = TableWords { table: &DEMO, config: Demo::default() };
        let parsed = super::parse(b"ticks=3 rounds=4 mode=on rounds=10 mode=maybe bogus=1", false, &mut program);
        assert_eq!(parsed.config, Config { ticks: 3, ..Config::default() }, "the kernel's words stay the kernel's");
        assert_eq!(program.config, Demo { rounds: 4, mode: 1 });
        assert_eq!(
            words(&parsed),
            vec![
                (&b"rounds=10"[..], RejectReason::OutOfRange { min: 1, max: 9 }),
                (b"mode=maybe", RejectReason::NotOneOf(ON_OFF)),
                (b"bogus=1", RejectReason::UnknownKey { program_keys: &["rounds", "mode"] }),
            ]
        );
        assert!(parsed.rejections[2].to_string().ends_with("queues, placement, seed, boot_jitter, rounds, mode)"));
        // Without the program, its words are unknown keys.
        let alone = parse("rounds=4");
        assert_eq!(words(&alone), vec![(&b"rounds=4"[..], RejectReason::UnknownKey { program_keys: &[] })]);
    }

    #[test]
    #[should_panic(expected = "key list does not follow")]
    fn a_table_whose_key_list_disagrees_is_refused() {
        static ONE: [Setting<Demo>; 1] = [number("rounds", 1, 9, |c, v| c.rounds = v as u32)];
        let _ = Table::<Demo>::new(&ONE, &["round"]);
    }
}
