//! A setting's slot: the [`FilterParams`](super::FilterParams) field a
//! row of the settings table points to, and how a value written on a
//! command line is stored there.

use super::values::{parse_bytes, parse_count, parse_kind, parse_number};
use crate::{
    circular::Mode, error::Error, metadata::Kind, schedule::Schedule, store::generation::Backend,
};

/// Where a setting's value goes, which also decides what values it takes.
pub(super) enum Slot<'a> {
    /// An integer, at least 0.
    Count(&'a mut Option<u64>),
    /// An integer from 0 to 2^32 - 1.
    Small(&'a mut Option<u32>),
    /// A number, integer or not.
    Number(&'a mut Option<f64>),
    /// `true` or `false`; on the command line, a flag without a value.
    Switch(&'a mut Option<bool>),
    /// A size in bytes: an integer, or a string with a unit (`"4GiB"`).
    Bytes(&'a mut Option<u64>),
    /// A word the library parses (a kind, a mode, a schedule, ...).
    Word(&'a mut dyn WordSlot),
}

impl Slot<'_> {
    pub(super) fn is_set(&self) -> bool {
        match self {
            Slot::Count(v) | Slot::Bytes(v) => v.is_some(),
            Slot::Small(v) => v.is_some(),
            Slot::Number(v) => v.is_some(),
            Slot::Switch(v) => v.is_some(),
            Slot::Word(v) => v.is_set(),
        }
    }

    /// Takes `from`'s value, if it has one: `from` is the same setting's
    /// slot in other parameters (so of the same variant).
    pub(super) fn take_from(self, from: Slot<'_>) {
        fn take<T>(to: &mut Option<T>, from: &mut Option<T>) {
            if from.is_some() {
                *to = from.take();
            }
        }
        match (self, from) {
            (Slot::Count(a), Slot::Count(b)) | (Slot::Bytes(a), Slot::Bytes(b)) => take(a, b),
            (Slot::Small(a), Slot::Small(b)) => take(a, b),
            (Slot::Number(a), Slot::Number(b)) => take(a, b),
            (Slot::Switch(a), Slot::Switch(b)) => take(a, b),
            (Slot::Word(a), Slot::Word(b)) => a.take_word(b.as_any()),
            // One setting's row gives one variant: never met.
            _ => {}
        }
    }

    /// Stores `text`, a value as written on a command line.
    pub(super) fn set_text(self, text: &str) -> Result<(), String> {
        match self {
            Slot::Count(v) => *v = Some(parse_count(text)?),
            Slot::Small(v) => {
                *v = Some(
                    u32::try_from(parse_count(text)?)
                        .map_err(|_| format!("{text:?} is too large"))?,
                )
            }
            Slot::Number(v) => *v = Some(parse_number(text)?),
            Slot::Switch(v) => {
                *v = Some(
                    text.parse()
                        .map_err(|_| format!("{text:?} is not true or false"))?,
                )
            }
            Slot::Bytes(v) => *v = Some(parse_bytes(text)?),
            Slot::Word(v) => v.set_word(text)?,
        }
        Ok(())
    }
}

/// A value the library parses from a word.
pub(super) trait Word: Sized {
    fn parse_word(s: &str) -> Result<Self, String>;

    /// The words it takes, or examples of them where they are open-ended,
    /// for completion and help.
    fn words() -> Vec<&'static str>;
}

/// The reason of an `InvalidParameter`, which already names the value;
/// the setting's key is added by whoever reports it.
fn reason(e: Error) -> String {
    match e {
        Error::InvalidParameter { reason, .. } => reason,
        e => e.to_string(),
    }
}

impl Word for Kind {
    fn parse_word(s: &str) -> Result<Self, String> {
        parse_kind(s)
    }

    fn words() -> Vec<&'static str> {
        Kind::ALL.iter().map(|k| k.as_str()).collect()
    }
}

impl Word for Mode {
    fn parse_word(s: &str) -> Result<Self, String> {
        s.parse().map_err(reason)
    }

    fn words() -> Vec<&'static str> {
        Mode::ALL.iter().map(|m| m.as_str()).collect()
    }
}

impl Word for Schedule {
    fn parse_word(s: &str) -> Result<Self, String> {
        s.parse().map_err(reason)
    }

    fn words() -> Vec<&'static str> {
        vec![
            "30d", "7d", "1d", "6h", "hourly", "daily", "weekly", "monthly",
        ]
    }
}

impl Word for Backend {
    fn parse_word(s: &str) -> Result<Self, String> {
        s.parse().map_err(reason)
    }

    fn words() -> Vec<&'static str> {
        Backend::ALL.iter().map(|b| b.as_str()).collect()
    }
}

/// A [`FilterParams`](super::FilterParams) field holding a [`Word`], whatever
/// its type.
pub(super) trait WordSlot {
    fn set_word(&mut self, s: &str) -> Result<(), String>;
    /// Takes the value of `from`, the same field of other parameters.
    fn take_word(&mut self, from: &mut dyn std::any::Any);
    fn as_any(&mut self) -> &mut dyn std::any::Any;
    fn is_set(&self) -> bool;
    fn words(&self) -> Vec<&'static str>;
}

impl<T: Word + 'static> WordSlot for Option<T> {
    fn set_word(&mut self, s: &str) -> Result<(), String> {
        *self = Some(T::parse_word(s)?);
        Ok(())
    }

    fn take_word(&mut self, from: &mut dyn std::any::Any) {
        if let Some(from) = from.downcast_mut::<Option<T>>().filter(|f| f.is_some()) {
            *self = from.take();
        }
    }

    fn as_any(&mut self) -> &mut dyn std::any::Any {
        self
    }

    fn is_set(&self) -> bool {
        self.is_some()
    }

    fn words(&self) -> Vec<&'static str> {
        T::words()
    }
}
