//! Where a key or a table header is in a configuration's text, by line
//! and column: the TOML parser gives a byte span and no key, and an error
//! should name both the place and the dotted key. A best effort on the
//! text itself, apart from the reading of its values.

use super::error::Location;
use std::ops::Range;

/// The location of `key` whose value spans `span`: the start of the key
/// when it is on the value's line, else the start of the value.
pub(super) fn key_location(text: &str, key: &str, span: &Range<usize>) -> Location {
    let mut start = span.start.min(text.len());
    while !text.is_char_boundary(start) {
        start -= 1;
    }
    let line_start = text[..start].rfind('\n').map_or(0, |i| i + 1);
    let offset = match text[line_start..start].rfind(key) {
        Some(i) => line_start + i,
        None => start,
    };
    Location::of_offset(text, offset)
}

/// The parts of a table header line (`[filter."a b"]` -> `filter`, `a b`).
fn header_parts(line: &str) -> Option<Vec<String>> {
    let inner = line.trim_start().strip_prefix('[')?;
    let inner = inner
        .trim_start_matches('[')
        .split(']')
        .next()
        .unwrap_or("");
    Some(
        inner
            .split('.')
            .map(|p| p.trim().trim_matches('"').trim_matches('\'').to_string())
            .collect(),
    )
}

/// The dotted key at byte `offset` of a TOML document: the table header
/// above it plus the key on its line (a best effort, for error messages of
/// the TOML parser, which give a span but no key).
pub(super) fn key_at(text: &str, offset: usize) -> Option<String> {
    let offset = offset.min(text.len());
    let mut table = String::new();
    let mut line_start = 0;
    for line in text.split_inclusive('\n') {
        let line_end = line_start + line.len();
        let on_this_line = offset >= line_start && (offset < line_end || line_end == text.len());
        if let Some(parts) = header_parts(line) {
            table = parts.join(".");
            if on_this_line {
                return Some(table);
            }
        } else if on_this_line {
            if let Some((k, _)) = line.split_once('=') {
                let k = k.trim().trim_matches('"');
                if !k.is_empty() && !k.starts_with('#') {
                    return Some(if table.is_empty() {
                        k.to_string()
                    } else {
                        format!("{table}.{k}")
                    });
                }
            }
            return (!table.is_empty()).then_some(table);
        }
        line_start = line_end;
    }
    (!table.is_empty()).then_some(table)
}

/// Locates the `[filter.NAME]` header of a filter in the text.
pub(super) fn find_filter_header(text: &str, name: &str) -> Option<Location> {
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        if let Some(parts) = header_parts(line) {
            if parts.len() == 2 && parts[0] == "filter" && parts[1] == name {
                let indent = line.len() - line.trim_start().len();
                return Some(Location::of_offset(text, offset + indent));
            }
        }
        offset += line.len();
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_at_offsets() {
        let t = "[defaults]\nredis_url = 1\n\n[filter.a]\nkind = 2\n";
        assert_eq!(key_at(t, 12).as_deref(), Some("defaults.redis_url"));
        assert_eq!(key_at(t, 40).as_deref(), Some("filter.a.kind"));
        assert_eq!(key_at(t, 28).as_deref(), Some("filter.a"));
    }

    #[test]
    fn headers() {
        let t = "x = 1\n  [filter.\"a\"]\n";
        assert_eq!(
            find_filter_header(t, "a"),
            Some(Location { line: 2, column: 3 })
        );
        assert_eq!(find_filter_header(t, "b"), None);
    }
}
