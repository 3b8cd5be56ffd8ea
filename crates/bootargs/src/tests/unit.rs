use beamcore_limits::{MAX_CORES, MAX_PROCESSES};
use beamcore_platform::MAX_BOOTARGS_BYTES;
use beamcore_sched_policy::balance::{StealAmount, Strategy};
use beamcore_sched_policy::placement::{QueueMode, SpawnPlacement};

use crate::*;

/// A whole command line given as text.
fn parse(line: &str) -> Parsed<'_> {
    crate::parse(line.as_bytes(), false, &mut NoProgramWords)
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
         imbalance, retries, cooldown, max_migrations, steal, protect_max, rebalance, rebalance_ratio, trace, \
         trace_events, telemetry, max_processes, queues, placement, seed, boot_jitter)"
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
    assert_eq!(parse("boot_jitter=1000001").rejections[0].reason, RejectReason::OutOfRange { min: 0, max: 1_000_000 });
}

#[test]
fn config_prints_every_setting() {
    assert_eq!(
        Config::default().to_string(),
        format!(
            "slice_us=1000 maxcpus={MAX_CORES} ticks=10 reductions=4000 strategy=load min_steal=2 imbalance=2 \
             retries=3 cooldown=10000 max_migrations=100 steal=one protect_max=off rebalance=on rebalance_ratio=4 \
             trace=off telemetry=full max_processes={MAX_PROCESSES} queues=percore placement=local seed=0"
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
fn telemetry_levels_parse_and_an_unknown_level_is_a_typed_error() {
    assert_eq!(parse("").config.telemetry, Telemetry::Full);
    for (word, level) in [("full", Telemetry::Full), ("counters", Telemetry::Counters), ("off", Telemetry::Off)] {
        let line = format!("telemetry={word}");
        let parsed = parse(&line);
        assert_eq!(parsed.config.telemetry, level, "{word}");
        assert!(parsed.rejections.is_empty(), "{word}");
        assert!(parsed.config.to_string().contains(&format!(" telemetry={word} ")), "{}", parsed.config);
    }
    let parsed = parse("telemetry=off telemetry=counters");
    assert_eq!(parsed.config.telemetry, Telemetry::Counters, "the last word wins");
    let parsed = parse("telemetry=off telemetry=none telemetry= telemetry=Full");
    assert_eq!(parsed.config.telemetry, Telemetry::Off, "a rejected word keeps what was in force");
    assert_eq!(parsed.rejections.len(), 3);
    for rejection in &parsed.rejections {
        assert_eq!(rejection.reason, RejectReason::NotOneOf(Telemetry::NAMES));
    }
    assert_eq!(parsed.rejections[0].to_string(), "bootargs: telemetry=none ignored: expected one of full|counters|off");
}

#[test]
fn each_telemetry_level_collects_what_it_says_and_names_itself_when_not() {
    let collected = |t: Telemetry| (t.queue_wait().is_ok(), t.heap_accounting().is_ok(), t.take_counts().is_ok());
    assert_eq!(collected(Telemetry::Full), (true, true, true));
    assert_eq!(collected(Telemetry::Counters), (false, false, true));
    assert_eq!(collected(Telemetry::Off), (false, false, false));
    assert_eq!(Telemetry::Counters.queue_wait().unwrap_err().to_string(), "not collected (telemetry=counters)");
    assert_eq!(Telemetry::Off.heap_accounting(), Err(NotCollected(Telemetry::Off)));
    assert_eq!(Telemetry::Off.take_counts().unwrap_err().to_string(), "not collected (telemetry=off)");
    for (i, level) in Telemetry::ALL.iter().enumerate() {
        assert_eq!(level.name(), Telemetry::NAMES[i]);
        assert_eq!(*level as usize, i, "NAMES and ALL are indexed by the discriminant");
    }
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
fn the_trace_buffer_size_parses_within_its_range_and_prints_only_when_set() {
    let parsed = parse("trace=on trace_events=65536");
    assert!(parsed.rejections.is_empty());
    assert_eq!(parsed.config.trace_events, 65536);
    assert!(parsed.config.to_string().ends_with(" trace_events=65536"));
    assert!(!Config::default().to_string().contains("trace_events"), "the default is not printed");
    let parsed = parse("trace_events=15 trace_events=262145");
    assert_eq!(parsed.config.trace_events, crate::DEFAULT_TRACE_EVENTS);
    let range = RejectReason::OutOfRange { min: 16, max: crate::MAX_TRACE_EVENTS };
    assert_eq!(words(&parsed)[..2], [(&b"trace_events=15"[..], range), (b"trace_events=262145", range)]);
}

#[test]
fn a_word_that_is_not_utf8_is_reported_and_the_others_apply() {
    let parsed = crate::parse(b"ticks=7 bad\xffword=1 maxcpus=2 \xc3", false, &mut NoProgramWords);
    assert_eq!(parsed.config, Config { ticks: 7, maxcpus: 2, ..Config::default() });
    assert_eq!(words(&parsed), vec![(&b"bad\xffword=1"[..], RejectReason::NotUtf8), (b"\xc3", RejectReason::NotUtf8)]);
    assert_eq!(parsed.rejections[0].to_string(), "bootargs: bad\\xffword=1 ignored: not valid UTF-8");
    assert_eq!(parsed.rejections[1].to_string(), "bootargs: \\xc3 ignored: not valid UTF-8");
    // A valid value followed by a bad byte is not applied either.
    let parsed = crate::parse(b"ticks=5\x80", false, &mut NoProgramWords);
    assert_eq!(parsed.config, Config::default());
    assert_eq!(parsed.rejections[0].reason, RejectReason::NotUtf8);
}

#[test]
fn a_word_cut_at_the_limit_is_reported_not_applied() {
    let parsed = crate::parse(b"ticks=7 slice_us=100", true, &mut NoProgramWords);
    assert_eq!(parsed.config, Config { ticks: 7, ..Config::default() }, "slice_us=100 must not apply");
    assert_eq!(words(&parsed), vec![(&b"slice_us=100"[..], RejectReason::CutOff)]);
    assert_eq!(
        parsed.rejections[0].to_string(),
        "bootargs: slice_us=100 ignored: cut off at the 512-byte command-line limit"
    );
    // Not cut: the same last word applies.
    assert_eq!(crate::parse(b"ticks=7 slice_us=100", false, &mut NoProgramWords).config.slice_us, 100);
    // Trailing whitespace does not make another word the last one.
    assert_eq!(
        words(&crate::parse(b"ticks=7  ", true, &mut NoProgramWords)),
        vec![(&b"ticks=7"[..], RejectReason::CutOff)]
    );
}

#[test]
fn bootargs_from_a_tree_that_are_not_utf8_keep_their_valid_words() {
    // The bytes beamcore-platform reads from tests/data/virt-el2-smp4.dtb with one byte of
    // "bogus" made invalid UTF-8 (its `bootargs_that_are_not_utf8_are_kept_as_bytes`).
    let parsed = crate::parse(b"ticks=5 \xffogus", false, &mut NoProgramWords);
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
    let parsed = crate::parse(&kept, cut == beamcore_platform::BootargsCut::InWord, &mut NoProgramWords);
    assert_eq!(parsed.config.slice_us, 1000, "the cut word must not apply as slice_us=100");
    assert_eq!(words(&parsed).last(), Some(&(&b"slice_us=100"[..], RejectReason::CutOff)));
}

#[test]
fn control_characters_and_backslashes_are_escaped_in_rejections() {
    let parsed = crate::parse(b"\x1b[2Jbogus=1 a\\b \x7f=1 k=\xc2\x85 w\xc3\xb6rd", false, &mut NoProgramWords);
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
    let parsed = crate::parse("a\u{202e}b=1 \u{200f}x".as_bytes(), false, &mut NoProgramWords);
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
    let words: Vec<String> = parsed.rejections.iter().map(|r| String::from_utf8(r.word.to_vec()).unwrap()).collect();
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
    let parsed =
        parse("slice_us=18446744073709551616 cooldown=1_000_000_000_000_000_000_000 ticks=9x9999999999999999999999");
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
        let parsed = crate::parse(&line, cut, &mut NoProgramWords);
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
        let parsed = crate::parse(&line, false, &mut NoProgramWords);
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
    let parsed = crate::parse(b"ticks=3 rounds=4 mode=on rounds=10 mode=maybe bogus=1", false, &mut program);
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

#[test]
#[should_panic(expected = "key list does not follow")]
fn a_key_list_of_the_right_lengths_but_other_letters_is_refused() {
    // Same length, one letter apart: only the letter-by-letter comparison can tell.
    static ONE: [Setting<Demo>; 1] = [number("rounds", 1, 9, |c, v| c.rounds = v as u32)];
    let _ = Table::<Demo>::new(&ONE, &["roundz"]);
}

#[test]
fn a_table_names_its_keys_and_the_empty_one_none() {
    assert_eq!(DEMO.keys(), &["rounds", "mode"]);
    assert_eq!(Table::<Demo>::EMPTY.keys(), &[] as &[&str]);
    assert_eq!(NoProgramWords.keys(), &[] as &[&str]);
}
