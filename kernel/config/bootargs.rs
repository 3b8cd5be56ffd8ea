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
use crate::sched::balance::{BalanceConfig, StealAmount, Strategy};

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
    /// How idle cores choose whom to steal from.
    pub strategy: Strategy,
    /// Thresholds, cooldown, migration limit, amount, protection, rebalancing.
    pub balance: BalanceConfig,
    /// What `make run` runs.
    pub workload: Workload,
    /// Record scheduling events per core and dump them at the end of the run.
    pub trace: bool,
}

/// The demo workloads of `make run` (bootarg `workload=`); each checks its own result.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Workload {
    /// Every process spawned on core 0: only stealing spreads the work.
    #[default]
    Imbalanced,
    /// Recursive fork-join: each process spawns two children and waits for their results.
    Fib,
    /// A token passed around a ring of processes.
    Ring,
    /// All four priorities, some processes bound to cores.
    Mixed,
    /// N-queens: one process per placement of the first two queens; counts the solutions.
    Nqueens,
    /// Unbalanced tree search (binomial): a process per tree node, counting the nodes.
    Uts,
    /// Many senders, one receiver (Erlang's "bang" benchmark).
    Bang,
    /// All-to-all ping-pong among many processes (Erlang's "big" benchmark).
    Big,
}

impl Workload {
    pub const ALL: [Workload; 8] = [
        Workload::Imbalanced,
        Workload::Fib,
        Workload::Ring,
        Workload::Mixed,
        Workload::Nqueens,
        Workload::Uts,
        Workload::Bang,
        Workload::Big,
    ];

    pub fn name(self) -> &'static str {
        WORKLOADS[self as usize]
    }
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
            workload: Workload::Imbalanced,
            trace: false,
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
             cooldown={} max_migrations={} steal={} protect_max={} rebalance={} rebalance_ratio={} workload={} trace={}",
            self.slice_us,
            self.maxcpus,
            self.ticks,
            self.reductions,
            self.strategy,
            b.min_steal,
            b.imbalance,
            b.retries,
            b.cooldown_cycles,
            b.max_migrations,
            if b.amount == StealAmount::One { "one" } else { "half" },
            on_off(b.protect_max),
            on_off(b.rebalance),
            b.rebalance_ratio,
            self.workload.name(),
            on_off(self.trace)
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
    /// The value is not one of the setting's names.
    NotOneOf(&'static [&'static str]),
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
            RejectReason::NotOneOf(names) => {
                write!(f, "expected one of ")?;
                for (i, name) in names.iter().enumerate() {
                    write!(f, "{}{name}", if i == 0 { "" } else { "|" })?;
                }
                Ok(())
            }
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

enum Value {
    Number {
        min: u64,
        max: u64,
        apply: fn(&mut Config, u64),
    },
    /// One of `names`; `apply` gets the index of the one given.
    Choice {
        names: &'static [&'static str],
        apply: fn(&mut Config, usize),
    },
}

struct Setting {
    key: &'static str,
    value: Value,
}

const fn number(key: &'static str, min: u64, max: u64, apply: fn(&mut Config, u64)) -> Setting {
    Setting { key, value: Value::Number { min, max, apply } }
}

const fn choice(key: &'static str, names: &'static [&'static str], apply: fn(&mut Config, usize)) -> Setting {
    Setting { key, value: Value::Choice { names, apply } }
}

const ON_OFF: &[&str] = &["off", "on"];
const STRATEGIES: &[&str] = &["random", "load", "locality", "p2c", "adaptive"];
const WORKLOADS: &[&str] = &["imbalanced", "fib", "ring", "mixed", "nqueens", "uts", "bang", "big"];

const SETTINGS: &[Setting] = &[
    number("slice_us", 100, 1_000_000, |c, v| c.slice_us = v as u32),
    number("maxcpus", 1, MAX_CORES as u64, |c, v| c.maxcpus = v as usize),
    number("ticks", 1, 100_000, |c, v| c.ticks = v as u32),
    number("reductions", 1, 1_000_000, |c, v| c.reductions = v as u32),
    choice("strategy", STRATEGIES, |c, i| c.strategy = Strategy::ALL[i]),
    number("min_steal", 1, 1_000, |c, v| c.balance.min_steal = v as usize),
    number("imbalance", 0, 1_000_000, |c, v| c.balance.imbalance = v),
    number("retries", 1, 64, |c, v| c.balance.retries = v as u32),
    number("cooldown", 0, 1 << 40, |c, v| c.balance.cooldown_cycles = v),
    number("max_migrations", 0, 1_000_000, |c, v| c.balance.max_migrations = v as u32),
    choice("steal", &["one", "half"], |c, i| c.balance.amount = [StealAmount::One, StealAmount::Half][i]),
    choice("protect_max", ON_OFF, |c, i| c.balance.protect_max = i == 1),
    choice("rebalance", ON_OFF, |c, i| c.balance.rebalance = i == 1),
    number("rebalance_ratio", 2, 1_000, |c, v| c.balance.rebalance_ratio = v),
    choice("workload", WORKLOADS, |c, i| c.workload = Workload::ALL[i]),
    choice("trace", ON_OFF, |c, i| c.trace = i == 1),
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
    match setting.value {
        Value::Number { min, max, apply } => {
            let number = parse_number(value).ok_or(RejectReason::NotANumber)?;
            if !(min..=max).contains(&number) {
                return Err(RejectReason::OutOfRange { min, max });
            }
            apply(config, number);
        }
        Value::Choice { names, apply } => {
            let index = names.iter().position(|&name| name == value).ok_or(RejectReason::NotOneOf(names))?;
            apply(config, index);
        }
    }
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
            "bootargs: bogus=1 ignored: unknown key (known: slice_us, maxcpus, ticks, reductions, strategy, min_steal, \
             imbalance, retries, cooldown, max_migrations, steal, protect_max, rebalance, rebalance_ratio, workload, trace)"
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
            format!(
                "slice_us=1000 maxcpus={MAX_CORES} ticks=10 reductions=4000 strategy=load min_steal=2 imbalance=2 \
                 retries=3 cooldown=10000 max_migrations=100 steal=one protect_max=off rebalance=on rebalance_ratio=4 \
                 workload=imbalanced trace=off"
            )
        );
    }

    #[test]
    fn balancer_settings_parse_and_bad_names_are_rejected() {
        let parsed =
            parse("strategy=p2c steal=half protect_max=on rebalance=off cooldown=5000 workload=fib strategy=busy");
        let c = parsed.config;
        assert_eq!(c.strategy, Strategy::P2c);
        assert_eq!(c.balance.amount, StealAmount::Half);
        assert!(c.balance.protect_max && !c.balance.rebalance);
        assert_eq!(c.balance.cooldown_cycles, 5000);
        assert_eq!(c.workload, Workload::Fib);
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
}
