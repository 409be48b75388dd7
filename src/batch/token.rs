//! The check of a batch token given by the caller: the token names the
//! batch's record key, so what it may hold is what keeps that key in the
//! filter's hash slot and out of any key pattern.

use crate::error::{Error, Result};

/// The longest token
/// [`IdempotentBatch::with_token`](crate::IdempotentBatch::with_token) takes.
const MAX_TOKEN: usize = 64;

/// A token names a key (the record, in the filter's hash slot): letters,
/// digits, `-` and `_` only, so that it can never change the key's slot
/// (`{`, `}`) nor its pattern (`*`, `?`, `[`).
pub(super) fn check_token(token: &str) -> Result<()> {
    let bad = |reason: String| {
        Err(Error::InvalidParameter {
            name: "token",
            reason,
        })
    };
    if token.is_empty() || token.len() > MAX_TOKEN {
        return bad(format!(
            "a token is 1 to {MAX_TOKEN} characters, this one has {}",
            token.len()
        ));
    }
    match token
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || *c == '-' || *c == '_'))
    {
        Some(c) => bad(format!(
            "{c:?} is not allowed in a token (ASCII letters, digits, '-' and '_' only)"
        )),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::check_token;

    #[test]
    fn tokens_are_checked() {
        for ok in ["a", "0123456789abcdef", "run-7_batch-12", &"x".repeat(64)] {
            assert!(check_token(ok).is_ok(), "{ok}");
        }
        for bad in ["", "a b", "a{b}", "a*", "é", "a:b", &"x".repeat(65)] {
            assert!(check_token(bad).is_err(), "{bad:?}");
        }
    }
}
