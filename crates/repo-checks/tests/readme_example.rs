//! README.md must show the API example exactly as `tests/26_readme_example.rs` runs it, so the
//! example a reader copies is one the in-QEMU suite boots.

#![cfg(not(loom))]

#[test]
fn readme_shows_the_tested_example() {
    let test = include_str!("../../../tests/26_readme_example.rs");
    let begin = test.find("// README-EXAMPLE-BEGIN\n").expect("begin marker") + "// README-EXAMPLE-BEGIN\n".len();
    let end = test.find("// README-EXAMPLE-END").expect("end marker");
    let example = &test[begin..end];
    let readme = include_str!("../../../README.md");
    assert!(readme.contains(example), "README.md's example differs from tests/26_readme_example.rs:\n{example}");
}
