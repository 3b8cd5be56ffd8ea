//! A small JSON writer for the one-line `report: {json}` the console contract promises.
//!
//! Writes straight into any `fmt::Write` (the console, or a `String` in tests) without
//! building a tree: the kernel reports from fixed-size counters and needs no allocation.
//!
//! A crate of its own because it is pure formatting: nothing in it touches hardware, so it is
//! tested on the host with a plain `cargo test`, and the kernel links the very same code.

#![cfg_attr(not(test), no_std)]
#![forbid(unsafe_code)]

use core::fmt::{self, Write};

/// Writes one JSON object; nested objects and arrays through [`JsonObject::object`] and
/// [`JsonObject::array`].
pub struct JsonObject<'w, W: Write> {
    out: &'w mut W,
    first: bool,
}

impl<'w, W: Write> JsonObject<'w, W> {
    /// Opens an object on `out`; [`JsonObject::end`] closes it.
    pub fn begin(out: &'w mut W) -> Result<Self, fmt::Error> {
        out.write_char('{')?;
        Ok(JsonObject { out, first: true })
    }

    fn key(&mut self, key: &str) -> fmt::Result {
        if !self.first {
            self.out.write_char(',')?;
        }
        self.first = false;
        write_string(self.out, key)?;
        self.out.write_char(':')
    }

    pub fn uint(&mut self, key: &str, value: u64) -> Result<&mut Self, fmt::Error> {
        self.key(key)?;
        write!(self.out, "{value}")?;
        Ok(self)
    }

    pub fn float(&mut self, key: &str, value: f64) -> Result<&mut Self, fmt::Error> {
        self.key(key)?;
        if value.is_finite() {
            write!(self.out, "{value:.4}")?;
        } else {
            self.out.write_str("null")?;
        }
        Ok(self)
    }

    pub fn boolean(&mut self, key: &str, value: bool) -> Result<&mut Self, fmt::Error> {
        self.key(key)?;
        self.out.write_str(if value { "true" } else { "false" })?;
        Ok(self)
    }

    pub fn string(&mut self, key: &str, value: &str) -> Result<&mut Self, fmt::Error> {
        self.key(key)?;
        write_string(self.out, value)?;
        Ok(self)
    }

    /// An array of numbers.
    pub fn uint_array(&mut self, key: &str, values: &[u64]) -> Result<&mut Self, fmt::Error> {
        self.key(key)?;
        self.out.write_char('[')?;
        for (i, value) in values.iter().enumerate() {
            if i > 0 {
                self.out.write_char(',')?;
            }
            write!(self.out, "{value}")?;
        }
        self.out.write_char(']')?;
        Ok(self)
    }

    /// A nested object written by `body`.
    pub fn object(
        &mut self,
        key: &str,
        body: impl FnOnce(&mut JsonObject<'_, W>) -> fmt::Result,
    ) -> Result<&mut Self, fmt::Error> {
        self.key(key)?;
        let mut inner = JsonObject::begin(self.out)?;
        body(&mut inner)?;
        inner.end()?;
        Ok(self)
    }

    /// An array of `count` objects, the i-th written by `element(i, ..)`.
    pub fn array(
        &mut self,
        key: &str,
        count: usize,
        mut element: impl FnMut(usize, &mut JsonObject<'_, W>) -> fmt::Result,
    ) -> Result<&mut Self, fmt::Error> {
        self.key(key)?;
        self.out.write_char('[')?;
        for i in 0..count {
            if i > 0 {
                self.out.write_char(',')?;
            }
            let mut inner = JsonObject::begin(self.out)?;
            element(i, &mut inner)?;
            inner.end()?;
        }
        self.out.write_char(']')?;
        Ok(self)
    }

    pub fn end(self) -> fmt::Result {
        self.out.write_char('}')
    }
}

fn write_string<W: Write>(out: &mut W, text: &str) -> fmt::Result {
    out.write_char('"')?;
    for c in text.chars() {
        match c {
            '"' => out.write_str("\\\"")?,
            '\\' => out.write_str("\\\\")?,
            '\n' => out.write_str("\\n")?,
            c if (c as u32) < 0x20 => write!(out, "\\u{:04x}", c as u32)?,
            c => out.write_char(c)?,
        }
    }
    out.write_char('"')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_nested_objects_and_arrays_as_valid_json() {
        let mut out = String::new();
        let mut o = JsonObject::begin(&mut out).unwrap();
        o.uint("cores", 2).unwrap().string("name", "a \"q\"\n").unwrap();
        o.array("per_core", 2, |i, e| e.uint("core", i as u64).map(|_| ())).unwrap();
        o.object("x", |e| e.boolean("ok", true).map(|_| ())).unwrap();
        o.float("ratio", 1.25).unwrap();
        o.uint_array("h", &[1, 2]).unwrap();
        o.end().unwrap();
        assert_eq!(
            out,
            r#"{"cores":2,"name":"a \"q\"\n","per_core":[{"core":0},{"core":1}],"x":{"ok":true},"ratio":1.2500,"h":[1,2]}"#
        );
    }
}
