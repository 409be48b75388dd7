//! Closed lists of words: as messages say them, and read back.

use crate::error::{Error, Result};

/// A value of a closed list (a kind, a mode, a backend): its stored name
/// and the shorter words a user may type for it.
pub(crate) trait Choice: Copy + 'static {
    /// The setting it is a value of, as errors name it.
    const SETTING: &'static str;
    /// Every value, in the order messages list them.
    const ALL: &'static [Self];
    /// Its name, as stored and printed.
    fn name(self) -> &'static str;
    /// Other words read as it.
    fn aliases(self) -> &'static [&'static str] {
        &[]
    }
}

/// The value `s` names (by its name or an alias); anything else is
/// [`Error::InvalidParameter`] listing the names.
pub(crate) fn parse<T: Choice>(s: &str) -> Result<T> {
    T::ALL
        .iter()
        .copied()
        .find(|t| t.name() == s || t.aliases().contains(&s))
        .ok_or_else(|| Error::InvalidParameter {
            name: T::SETTING,
            reason: format!("{s:?} is not {}", choices::<T>()),
        })
}

/// `"a, b or c"` of every value's name.
pub(crate) fn choices<T: Choice>() -> String {
    one_of(T::ALL.iter().map(|t| t.name()))
}

/// `"a, b or c"`: the words of a closed list, for messages.
pub(crate) fn one_of<'a>(words: impl IntoIterator<Item = &'a str>) -> String {
    let words: Vec<&str> = words.into_iter().collect();
    match words.split_last() {
        Some((last, [])) => (*last).to_string(),
        Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn lists_read_as_a_sentence() {
        assert_eq!(super::one_of(["a"]), "a");
        assert_eq!(super::one_of(["a", "b"]), "a or b");
        assert_eq!(super::one_of(["a", "b", "c"]), "a, b or c");
        assert_eq!(super::one_of([]), "");
    }

    #[test]
    fn a_choice_is_read_by_its_name_or_an_alias_and_nothing_else() {
        use crate::circular::Mode;
        use crate::metadata::Kind;
        use crate::store::generation::Backend;
        assert_eq!(super::parse::<Backend>("bf").unwrap(), Backend::RedisBloom);
        assert_eq!(super::parse::<Backend>("bitmap").unwrap(), Backend::Bitmap);
        assert_eq!(
            super::parse::<Mode>("query-oldest").unwrap(),
            Mode::InsertAllQueryOldest
        );
        let e = super::parse::<Kind>("ring").unwrap_err().to_string();
        assert!(
            e.contains("kind") && e.contains("\"ring\" is not bloom, expanding or circular"),
            "{e}"
        );
        // An alias of one list is not a word of another.
        assert!(super::parse::<Kind>("bf").is_err());
    }
}
