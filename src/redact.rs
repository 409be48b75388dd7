//! Keeping credentials out of every message the crate produces.

/// Replaces the password (and user) of every `scheme://user:pass@host` in
/// `text` with `***`.
///
/// ```
/// assert_eq!(
///     rotabloom::redact_urls("connect redis://:hunter2@db:6379/0 failed"),
///     "connect redis://***@db:6379/0 failed"
/// );
/// assert_eq!(rotabloom::redact_urls("redis://db:6379"), "redis://db:6379");
/// ```
pub fn redact_urls(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find("://") {
        let (head, tail) = rest.split_at(i + 3);
        out.push_str(head);
        // The URL ends at whitespace or a quote. Everything up to its last '@'
        // is treated as credentials, so a password holding '/' or '@' (legal
        // when a user forgets to percent-encode it) is still hidden.
        let end = tail
            .find(|c: char| c.is_whitespace() || c == '"' || c == '\'')
            .unwrap_or(tail.len());
        let authority = &tail[..end];
        match authority.rfind('@') {
            Some(at) => {
                out.push_str("***");
                out.push_str(&authority[at..]);
            }
            None => out.push_str(authority),
        }
        rest = &tail[end..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::redact_urls;

    #[test]
    fn redacts_user_and_password() {
        assert_eq!(
            redact_urls("redis://alice:s3cr%40t@h:1/ and rediss://:p@h2"),
            "redis://***@h:1/ and rediss://***@h2"
        );
    }

    #[test]
    fn leaves_plain_text_alone() {
        assert_eq!(redact_urls("no url here"), "no url here");
        assert_eq!(redact_urls("redis://h:1/2"), "redis://h:1/2");
    }

    #[test]
    fn redacts_unencoded_slash_in_password() {
        assert_eq!(redact_urls("redis://:pa/ss@h:1/0"), "redis://***@h:1/0");
    }
}
