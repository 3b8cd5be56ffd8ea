//! The parser's host tests (unit and property, proptest): `cargo test` in crates/bootargs/. In a
//! folder of their own so the parser's files hold only the parser.

mod unit;
