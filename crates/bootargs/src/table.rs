//! A table of settings, for the kernel's configuration and a program's alike: what a value must
//! be, how it applies, and the program's side of a parse ([`ProgramWords`]). Generic over the
//! configuration, so the kernel's words and a program's go through the same checks and
//! messages.

use crate::RejectReason;

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

pub(crate) fn apply_value<C>(value: &Value<C>, config: &mut C, text: &str) -> Result<(), RejectReason> {
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
