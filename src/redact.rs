//! Keeping credentials out of every message the crate and its command
//! produce. [`redact`] is the only scrubber: the library's errors, the
//! configuration and the command line all go through it, so a pattern
//! added here protects all of them.

use std::fmt;

/// What replaces a credential.
const MASK: &str = "***";

/// Shorter secrets are not scrubbed by value: replacing every `ab` of a
/// message would garble it and hide nothing worth hiding.
const MIN_SECRET_LEN: usize = 3;

/// Secrets known to be in use (the password of the Redis URL a program
/// connects with), to be scrubbed wherever they appear: a server or a
/// library may echo a password outside any URL, where the URL patterns
/// cannot see it. `Debug` never shows them.
///
/// ```
/// use rotabloom::config::Secrets;
/// let secrets = Secrets::default().with("hunter2");
/// assert_eq!(
///     secrets.redact("WRONGPASS for hunter2 via redis://:hunter2@db/0"),
///     "WRONGPASS for *** via redis://***@db/0"
/// );
/// assert!(!format!("{secrets:?}").contains("hunter2"));
/// ```
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Secrets(Vec<String>);

impl Secrets {
    /// These secrets and `secret` too (ignored when shorter than 3 bytes).
    pub fn with(mut self, secret: impl Into<String>) -> Secrets {
        let secret = secret.into();
        if secret.len() >= MIN_SECRET_LEN && !self.0.contains(&secret) {
            self.0.push(secret);
        }
        self
    }

    /// `text` without these secrets nor the credentials of any URL in it.
    pub fn redact(&self, text: &str) -> String {
        redact(text, self)
    }
}

impl fmt::Debug for Secrets {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Secrets({} hidden)", self.0.len())
    }
}

/// Replaces the password (and user) of every `scheme://user:pass@host` in
/// `text` with `***`, and the value of every `pass=` / `password=` query
/// parameter.
///
/// ```
/// assert_eq!(
///     rotabloom::redact_urls("connect redis://:hunter2@db:6379/0 failed"),
///     "connect redis://***@db:6379/0 failed"
/// );
/// assert_eq!(rotabloom::redact_urls("redis://db:6379"), "redis://db:6379");
/// assert_eq!(
///     rotabloom::redact_urls("unix:///tmp/r.sock?db=1&pass=pw"),
///     "unix:///tmp/r.sock?db=1&pass=***"
/// );
/// ```
pub fn redact_urls(text: &str) -> String {
    redact(text, &Secrets::default())
}

/// `text` with the credentials of every URL in it and every known secret
/// replaced by `***`.
pub(crate) fn redact(text: &str, secrets: &Secrets) -> String {
    let mut out = redact_userinfo(text);
    for param in ["pass=", "password=", "sentinel_password="] {
        out = redact_query_param(&out, param);
    }
    for secret in &secrets.0 {
        out = out.replace(secret.as_str(), MASK);
    }
    out
}

fn redact_userinfo(text: &str) -> String {
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
                out.push_str(MASK);
                out.push_str(&authority[at..]);
            }
            None => out.push_str(authority),
        }
        rest = &tail[end..];
    }
    out.push_str(rest);
    out
}

/// Masks the value of query parameter `param` (`pass=`), only where it
/// starts a parameter (after `?` or `&`, or at the very start): prose such
/// as `password=...` in a sentence is not a URL's.
fn redact_query_param(text: &str, param: &str) -> String {
    let mut out = text.to_string();
    let mut from = 0;
    while let Some(i) = out[from..].find(param) {
        let start = from + i;
        let value = start + param.len();
        let preceded = start == 0 || matches!(out.as_bytes()[start - 1], b'?' | b'&');
        // Already masked: redacting twice changes nothing (the `:` after a
        // masked value at the end of a URL stays).
        if !preceded || out[value..].starts_with(MASK) {
            from = value;
            continue;
        }
        let end = out[value..]
            .find(|c: char| c == '&' || c == '#' || c.is_whitespace() || c == '"' || c == '\'')
            .map_or(out.len(), |j| value + j);
        out.replace_range(value..end, MASK);
        from = value + MASK.len();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::{redact_urls, Secrets};

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
        assert_eq!(redact_urls("x password=abc&y"), "x password=abc&y");
    }

    #[test]
    fn redacts_unencoded_slash_in_password() {
        assert_eq!(redact_urls("redis://:pa/ss@h:1/0"), "redis://***@h:1/0");
    }

    #[test]
    fn redacts_query_parameters() {
        assert_eq!(redact_urls("u?password=abc&y"), "u?password=***&y");
        assert_eq!(
            redact_urls("\"unix:///s?pass=a b\" and ?password=c#f"),
            "\"unix:///s?pass=*** b\" and ?password=***#f"
        );
    }

    #[test]
    fn redacting_twice_changes_nothing() {
        let url = redact_urls("redis+sentinel://:pw@h/m?sentinel_password=sp");
        assert_eq!(url, "redis+sentinel://***@h/m?sentinel_password=***");
        let line = format!("cannot connect to {url}: refused");
        assert_eq!(redact_urls(&line), line);
    }

    #[test]
    fn known_secrets_are_scrubbed_anywhere() {
        let s = Secrets::default().with("s3cret").with("s3cret").with("ab");
        assert_eq!(s.redact("auth s3cret: ab"), "auth ***: ab");
        assert_eq!(format!("{s:?}"), "Secrets(1 hidden)");
        assert_eq!(Secrets::default().redact("s3cret"), "s3cret");
    }
}
