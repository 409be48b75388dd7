//! Closed lists of words as messages say them.

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
}
