//! The kernel's runtime configuration: typed settings parsed from the kernel command line, and
//! the hand-over of the words the kernel does not know to the program that runs on it.
//!
//! A program with settings of its own (the demo workloads' `workload=`, `rounds=`, ...) names
//! them with `entry!(main, settings = ITS_ARGS)`, where `ITS_ARGS` is a [`ProgramArgs`]. At boot
//! the kernel parses the command line once, with its own table and the program's: each word is
//! applied by whichever knows its key, a word neither knows is reported naming both key lists,
//! and the `config:` line shows the kernel's words in force followed by the program's. The kernel
//! never needs to know what the program's words mean.
//!
//! Pure (the parser is crates/bootargs; this crate is the hand-over), so it is tested on the
//! host; the kernel re-exports it as `beamcore::config`.

#![cfg_attr(not(test), no_std)]
#![forbid(unsafe_code)]

use core::fmt;

pub use beamcore_bootargs as bootargs;

pub use bootargs::{Config, Parsed, RejectReason, Rejection, Table};

/// What the kernel asks of a program's settings at boot (object-safe, so the kernel finds them
/// through one symbol whatever the program's configuration type).
pub trait ProgramSettings: Sync {
    /// Parses the command line with the kernel's settings and the program's; keeps the
    /// program's result and returns the kernel's, with every word that was not applied.
    fn parse<'a>(&self, command_line: &'a [u8], last_word_cut: bool) -> Parsed<'a>;
    /// Writes the program's words in force (after [`ProgramSettings::parse`]), each preceded by
    /// a space; nothing for a program without settings.
    fn write_in_force(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result;
}

/// A program's settings of type `C`, parsed once at boot (before the program's main runs).
pub struct ProgramArgs<C: 'static> {
    table: &'static Table<C>,
    parsed: spin::Once<C>,
}

impl<C: Copy> ProgramArgs<C> {
    pub const fn new(table: &'static Table<C>) -> Self {
        ProgramArgs { table, parsed: spin::Once::new() }
    }

    /// The settings in force. The kernel parses them before the program's main starts, so
    /// from the program they are always there.
    ///
    /// # Panics
    /// If these are not the settings the program named in `entry!` (the kernel never parsed
    /// them): a program error, found on its first run.
    pub fn get(&self) -> C {
        *self
            .parsed
            .get()
            .expect("these settings are not the ones the program's entry! names, so the kernel never parsed them")
    }
}

impl<C: Copy + Default + fmt::Display + Send + Sync> ProgramSettings for ProgramArgs<C> {
    fn parse<'a>(&self, command_line: &'a [u8], last_word_cut: bool) -> Parsed<'a> {
        let mut words = bootargs::TableWords { table: self.table, config: C::default() };
        let parsed = bootargs::parse(command_line, last_word_cut, &mut words);
        self.parsed.call_once(|| words.config);
        parsed
    }

    fn write_in_force(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.parsed.get() {
            Some(config) if !self.table.keys().is_empty() => write!(f, " {config}"),
            _ => Ok(()),
        }
    }
}

/// The settings of a program that has none of its own (`entry!(main)`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NoSettings;

impl fmt::Display for NoSettings {
    fn fmt(&self, _f: &mut fmt::Formatter<'_>) -> fmt::Result {
        Ok(())
    }
}

static NO_SETTINGS_TABLE: Table<NoSettings> = Table::EMPTY;

/// What `entry!(main)` names: a program without settings, so every word the kernel does not
/// know is reported as unknown.
pub static NO_PROGRAM_SETTINGS: ProgramArgs<NoSettings> = ProgramArgs::new(&NO_SETTINGS_TABLE);

/// The kernel's configuration followed by the program's words: the console's `config:` line.
pub struct InForce<'a> {
    pub kernel: &'a Config,
    pub program: &'a dyn ProgramSettings,
}

impl fmt::Display for InForce<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.kernel)?;
        self.program.write_in_force(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bootargs::{ON_OFF, choice};

    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    struct Demo(bool);

    impl fmt::Display for Demo {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            write!(f, "demo={}", if self.0 { "on" } else { "off" })
        }
    }

    static DEMO_TABLE: Table<Demo> = Table::new(&[choice("demo", ON_OFF, |c, i| c.0 = i == 1)], &["demo"]);

    #[test]
    fn the_config_line_shows_the_kernels_words_then_the_programs() {
        let program = ProgramArgs::new(&DEMO_TABLE);
        let parsed = program.parse(b"demo=on ticks=4", false);
        assert!(parsed.rejections.is_empty());
        assert!(program.get().0);
        let line = InForce { kernel: &parsed.config, program: &program }.to_string();
        assert!(line.starts_with("slice_us=1000 maxcpus="), "{line}");
        assert!(line.contains(" ticks=4 "), "{line}");
        assert!(line.ends_with(" placement=local seed=0 demo=on"), "{line}");
    }

    #[test]
    fn without_program_settings_the_line_is_the_kernels_and_its_words_are_unknown() {
        let parsed = NO_PROGRAM_SETTINGS.parse(b"demo=on", false);
        assert_eq!(parsed.rejections[0].reason, RejectReason::UnknownKey { program_keys: &[] });
        let line = InForce { kernel: &parsed.config, program: &NO_PROGRAM_SETTINGS }.to_string();
        assert!(line.ends_with("placement=local seed=0"), "{line}");
    }
}
