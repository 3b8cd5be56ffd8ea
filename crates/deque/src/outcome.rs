//! What the deque's operations return: results that tell every cause apart.

#![forbid(unsafe_code)]

use core::fmt;

/// What a thief got from [`super::Stealer::steal`].
#[must_use]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Steal<T = u64> {
    /// The thief took the oldest item.
    Success(T),
    /// The deque held nothing when the thief looked.
    Empty,
    /// The thief saw an item but lost the compare-and-swap on `top` to another thief or to the
    /// owner taking the last item (or, with `Aarch64Asm`, the store-exclusive kept failing).
    /// Nothing was taken; trying again may succeed.
    Retry,
}

impl<T> Steal<T> {
    /// The item, if the steal succeeded.
    pub fn success(self) -> Option<T> {
        match self {
            Steal::Success(item) => Some(item),
            Steal::Empty | Steal::Retry => None,
        }
    }

    /// Whether the steal lost a race and may succeed if tried again.
    pub fn is_retry(&self) -> bool {
        matches!(self, Steal::Retry)
    }

    /// Applies `convert` to a stolen item, keeping the other outcomes.
    pub fn map<U>(self, convert: impl FnOnce(T) -> U) -> Steal<U> {
        match self {
            Steal::Success(item) => Steal::Success(convert(item)),
            Steal::Empty => Steal::Empty,
            Steal::Retry => Steal::Retry,
        }
    }
}

/// What the owner got from [`super::Worker::pop`].
#[must_use]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pop<T = u64> {
    /// The owner took the newest item.
    Item(T),
    /// The deque held nothing (any item there was taken by thieves before the owner looked).
    Empty,
    /// One item was left and a thief took it: the owner lost the compare-and-swap on `top`.
    /// The deque is now empty.
    LostRace,
    /// One item was left, and the store-exclusive of the compare-and-swap on `top` kept failing
    /// with the value unchanged (`Aarch64Asm` only, after a bounded number of attempts). The item
    /// is still in the deque; popping again will take it or lose it to a thief.
    Retry,
}

impl<T> Pop<T> {
    /// The item, if the pop took one.
    pub fn item(self) -> Option<T> {
        match self {
            Pop::Item(item) => Some(item),
            Pop::Empty | Pop::LostRace | Pop::Retry => None,
        }
    }

    /// Applies `convert` to a popped item, keeping the other outcomes.
    pub fn map<U>(self, convert: impl FnOnce(T) -> U) -> Pop<U> {
        match self {
            Pop::Item(item) => Pop::Item(convert(item)),
            Pop::Empty => Pop::Empty,
            Pop::LostRace => Pop::LostRace,
            Pop::Retry => Pop::Retry,
        }
    }
}

/// A push found the deque full; the item is handed back untouched.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Full<T = u64>(pub T);

impl<T> Full<T> {
    /// The item that did not fit.
    pub fn into_item(self) -> T {
        self.0
    }
}

impl<T> fmt::Display for Full<T> {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("deque is full; the item was handed back")
    }
}

impl<T: fmt::Debug> core::error::Error for Full<T> {}

/// A deque was asked for a capacity it cannot have.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CapacityError {
    /// Capacities are powers of two (so an index maps to a slot with a mask); zero is not one.
    NotPowerOfTwo {
        /// The capacity that was asked for.
        requested: usize,
    },
}

impl fmt::Display for CapacityError {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CapacityError::NotPowerOfTwo { requested } => {
                write!(formatter, "deque capacity {requested} is not a power of two")
            }
        }
    }
}

impl core::error::Error for CapacityError {}
