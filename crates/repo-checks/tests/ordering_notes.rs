//! Keeps the `// ORDERING:` convention true: every non-Relaxed atomic ordering
//! (`Ordering::Acquire`, `Release`, `AcqRel`, `SeqCst`) and every `dmb`/`dsb`/`isb` in the
//! repository's own sources must have a comment containing `ORDERING:` on its line or within the
//! [`WINDOW`] lines above it, naming what it pairs with (or the architectural rule it
//! satisfies). Scanned: every `.rs` and `.S` file under `kernel/`, `boot/` and `crates/`, except the
//! `tests/` directories. Comment lines themselves are not scanned (they may mention `isb`).
//!
//! [`KNOWN_UNNOTED`] lists the sites other engineers still have to annotate, in files this
//! check's author could not edit at the time; it must only shrink: an entry that no longer
//! matches an unnoted site fails the check too, so fixing a site means deleting its entry.

#![cfg(not(loom))]

use std::path::{Path, PathBuf};

/// How many lines above a site its `ORDERING:` note may start.
const WINDOW: usize = 10;

/// Sites without a note yet, as (path from the repository root, the site's line trimmed). Owners of
/// these files: add the note, then delete the entry. Empty it; never add to it.
const KNOWN_UNNOTED: &[(&str, &str)] = &[];

/// A site lacking a note: (line number from 1, the line trimmed).
type Finding = (usize, String);

/// True if the code part of `line` (before a `//` comment) uses a non-Relaxed ordering or a
/// barrier instruction.
fn is_site(line: &str) -> bool {
    let code = line.split("//").next().unwrap_or("");
    ["Ordering::Acquire", "Ordering::Release", "Ordering::AcqRel", "Ordering::SeqCst"]
        .iter()
        .any(|ordering| code.contains(ordering))
        || code
            .split(|c: char| !c.is_ascii_alphanumeric() && c != '_')
            .any(|word| matches!(word, "dmb" | "dsb" | "isb"))
}

/// The sites in `source` with no `ORDERING:` on their line or the `WINDOW` lines above.
fn unnoted_sites(source: &str) -> Vec<Finding> {
    let lines: Vec<&str> = source.lines().collect();
    let mut findings = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let trimmed = line.trim_start();
        if trimmed.starts_with("//") || !is_site(line) {
            continue;
        }
        let noted = lines[i.saturating_sub(WINDOW)..=i].iter().any(|l| l.contains("ORDERING:"));
        if !noted {
            findings.push((i + 1, line.trim().to_string()));
        }
    }
    findings
}

fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
        .map(|entry| entry.expect("directory entry").path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            if path.file_name().is_some_and(|name| name != "tests") {
                sources(&path, out);
            }
        } else if path.extension().is_some_and(|ext| ext == "rs" || ext == "S") && !path.ends_with("ordering_notes.rs")
        {
            out.push(path);
        }
    }
}

#[test]
fn every_barrier_and_non_relaxed_atomic_has_an_ordering_note() {
    // This package is crates/repo-checks/ in the repository; the notes are checked repository-wide.
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).ancestors().nth(2).expect("crates/repo-checks/ has a grandparent");
    let mut files = Vec::new();
    sources(&root.join("kernel"), &mut files);
    sources(&root.join("boot"), &mut files);
    // The pure crates the kernel runs (the deque, the trace ring, the core set) keep it too.
    sources(&root.join("crates"), &mut files);
    // The programs (workloads, soak, benchmarks) use atomics too.
    sources(&root.join("apps"), &mut files);
    assert!(files.len() > 20, "found only {} source files under {}", files.len(), root.display());
    let mut missing = Vec::new();
    let mut allowlisted = vec![false; KNOWN_UNNOTED.len()];
    for file in &files {
        let relative = file.strip_prefix(root).expect("under the repository root").to_string_lossy().replace('\\', "/");
        let source = std::fs::read_to_string(file).expect("readable source");
        for (line, text) in unnoted_sites(&source) {
            match KNOWN_UNNOTED.iter().position(|&(path, site)| path == relative && site == text) {
                Some(index) => allowlisted[index] = true,
                None => missing.push(format!("{relative}:{line}: {text}")),
            }
        }
    }
    assert!(
        missing.is_empty(),
        "these sites need an `// ORDERING:` comment within {WINDOW} lines above, naming the operation \
         they pair with (or the architectural rule they satisfy):\n  {}",
        missing.join("\n  ")
    );
    let stale: Vec<String> = KNOWN_UNNOTED
        .iter()
        .zip(&allowlisted)
        .filter(|(_, found)| !**found)
        .map(|((path, site), _)| format!("{path}: {site}"))
        .collect();
    assert!(
        stale.is_empty(),
        "KNOWN_UNNOTED entries that no longer match an unnoted site (annotated or changed): delete them:\n  {}",
        stale.join("\n  ")
    );
}

/// The check itself can fail: it finds unnoted sites and accepts noted ones.
#[test]
fn the_check_finds_unnoted_sites() {
    let source = "\
fn f() {
    let a = X.load(Ordering::Acquire);
    // A comment mentioning dsb is no site.
    let b = X.load(Ordering::Relaxed);
    // ORDERING: pairs with the Release store in g.
    let c = X.load(Ordering::Acquire);
    unsafe { asm!(\"dsb ish\") };
    unsafe { asm!(\"isb\") }; // ORDERING: on its own line counts too.
}
";
    let findings = unnoted_sites(source);
    assert_eq!(findings, vec![(2, "let a = X.load(Ordering::Acquire);".to_string())]);
    let far = format!("// ORDERING: too far\n{}x.store(1, Ordering::Release);\n", "\n".repeat(WINDOW));
    assert_eq!(unnoted_sites(&far).len(), 1);
    assert!(is_site("    dmb ish") && is_site("barrier::isb(barrier::SY);") && !is_site("    isbn(x)"));
}
