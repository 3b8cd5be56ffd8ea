//! The tables' host tests (unit, and property tests against a plain model with proptest):
//! `cargo test` in crates/page-tables/. In a folder of their own so the builder's files hold
//! only the builder.

mod unit;
