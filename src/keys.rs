//! Every Redis key name of a filter. Scripts never build key names: the
//! client builds them here and passes them in `KEYS`.
//!
//! All keys of filter `NAME` share the Redis Cluster hash tag `{NAME}`, so
//! one filter lives in one slot and every multi-key script and transaction
//! is legal in a cluster:
//!
//! ```text
//! rotabloom:{NAME}:meta                     metadata hash
//! rotabloom:{NAME}:fence                    string "UID:EPOCH:CLEARED", changed by every structural change and clear
//! rotabloom:{NAME}:gen:UID-SEQ:BLOCK        bitmap of one block of one generation
//! rotabloom:{NAME}:reserved                 room held by guarded transactions in flight
//! ```

use crate::error::{Error, Result};
use std::fmt;
use std::sync::Arc;

/// The prefix of every key rotabloom writes.
pub const KEY_PREFIX: &str = "rotabloom";

/// Longest accepted filter name, in bytes.
pub const MAX_NAME_LEN: usize = 200;

/// A validated filter name: 1 to 200 bytes of printable ASCII without
/// whitespace, `{`, `}` or the glob characters `* ? [ ] \`. `:` is
/// allowed (scrapy-redis's key style).
///
/// ```
/// use rotabloom::FilterName;
/// assert!(FilterName::new("crawl.seen-urls_2026").is_ok());
/// assert!(FilterName::new("myspider:dupefilter").is_ok());
/// assert!(FilterName::new("").is_err());
/// assert!(FilterName::new("a{b}").is_err());
/// assert!(FilterName::new("has space").is_err());
/// // An ACL pattern for filter `a*` would also match filter `ab`.
/// assert!(FilterName::new("a*").is_err());
/// // A filter made by an earlier version with such a name still opens.
/// assert!(FilterName::existing("a*").is_ok());
/// ```
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FilterName(Arc<str>);

impl FilterName {
    /// Validates the name of a filter to create (or to open).
    pub fn new(name: impl AsRef<str>) -> Result<FilterName> {
        let name = Self::existing(name)?;
        if name
            .0
            .bytes()
            .any(|b| matches!(b, b'*' | b'?' | b'[' | b']' | b'\\'))
        {
            return Err(Error::InvalidName {
                name: name.0.to_string(),
                reason: "'*', '?', '[', ']' and '\\' are not allowed: an ACL key pattern for it would match other filters",
            });
        }
        Ok(name)
    }

    /// Validates the name of a filter that may exist already: format 1
    /// writers before the glob rule created names with `* ? [ ] \`, which
    /// stay readable (and can be dropped), but no new one is made.
    pub fn existing(name: impl AsRef<str>) -> Result<FilterName> {
        let name = name.as_ref();
        let bad = |reason| {
            Err(Error::InvalidName {
                name: name.chars().take(MAX_NAME_LEN).collect(),
                reason,
            })
        };
        if name.is_empty() {
            return bad("it is empty");
        }
        if name.len() > MAX_NAME_LEN {
            return bad("it is longer than 200 bytes");
        }
        // Braces would break the cluster hash tag. A key is read up to the
        // first '}', so ':' inside the tag is unambiguous.
        if !name
            .bytes()
            .all(|b| b.is_ascii_graphic() && !matches!(b, b'{' | b'}'))
        {
            return bad("only printable ASCII without whitespace, '{' or '}' is allowed");
        }
        Ok(FilterName(name.into()))
    }

    /// The name as a string.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for FilterName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for FilterName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.0, f)
    }
}

impl std::str::FromStr for FilterName {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        FilterName::new(s)
    }
}

/// The key names of one filter.
///
/// ```
/// use rotabloom::{FilterName, Keys};
/// let keys = Keys::new(FilterName::new("crawl").unwrap());
/// assert_eq!(keys.meta(), "rotabloom:{crawl}:meta");
/// assert_eq!(keys.block("3f2a", 7, 0), "rotabloom:{crawl}:gen:3f2a-7:0");
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Keys {
    name: FilterName,
    meta: Arc<str>,
}

impl Keys {
    /// The keys of the filter called `name`.
    pub fn new(name: FilterName) -> Keys {
        let meta = format!("{KEY_PREFIX}:{{{name}}}:meta").into();
        Keys { name, meta }
    }

    /// The filter's name.
    pub fn name(&self) -> &FilterName {
        &self.name
    }

    /// The metadata hash.
    pub fn meta(&self) -> &str {
        &self.meta
    }

    /// The fence: a string `UID:EPOCH:CLEARED` that every structural change
    /// (create, expand, rotate, convert, drop) and every clear rewrites, so
    /// a transaction that `WATCH`es it is aborted by any of them.
    pub fn fence(&self) -> String {
        format!("{KEY_PREFIX}:{{{}}}:fence", self.name)
    }

    /// One block of one generation. `uid` is the filter instance's id, which
    /// keeps keys of a dropped and re-created filter from ever colliding;
    /// `seq` is the generation's sequence number, never reused within an
    /// instance.
    pub fn block(&self, uid: &str, seq: u64, block: u32) -> String {
        format!("{KEY_PREFIX}:{{{}}}:gen:{uid}-{seq}:{block}", self.name)
    }

    /// The list of block keys of dropped generations still to delete: a
    /// rotation moves them here in its atomic step, and deleting them
    /// follows, one block per command, so that freeing a big generation
    /// never holds the server for long.
    pub fn trash(&self) -> String {
        format!("{KEY_PREFIX}:{{{}}}:trash", self.name)
    }

    /// Whether `key` is a block key of this filter (of any instance and
    /// generation): the only keys the trash may name.
    pub fn is_block(&self, key: &str) -> bool {
        key.strip_prefix(KEY_PREFIX)
            .and_then(|k| k.strip_prefix(":{"))
            .and_then(|k| k.strip_prefix(self.name.as_str()))
            .is_some_and(|k| k.starts_with("}:gen:"))
    }

    /// The room guarded transactions in flight hold in their generations
    /// (a sorted set of `SEQ:ITEMS:ID` scored by deadline), so that
    /// concurrent writers never take a generation past its capacity.
    pub fn reservations(&self) -> String {
        format!("{KEY_PREFIX}:{{{}}}:reserved", self.name)
    }

    /// The record of one idempotent batch's answers (`token`: 16 hex
    /// digits), kept for a short while so that a retry after a lost reply
    /// gets the original answers. In the filter's slot, like every key.
    pub fn record(&self, token: &str) -> String {
        format!("{KEY_PREFIX}:{{{}}}:done:{token}", self.name)
    }

    /// A pattern matching every key of this filter (for SCAN; never used on
    /// a hot path).
    ///
    /// ```
    /// use rotabloom::{FilterName, Keys};
    /// let keys = Keys::new(FilterName::existing("a*").unwrap());
    /// assert_eq!(keys.pattern(), r"rotabloom:{a\*}:*");
    /// ```
    pub fn pattern(&self) -> String {
        // A name's own glob characters are escaped, or the pattern of
        // filter `a*` would match every filter starting with `a`.
        format!("{KEY_PREFIX}:{{{}}}:*", glob_escaped(self.name.as_str()))
    }
}

/// `name` with its glob characters escaped, for a SCAN pattern.
pub(crate) fn glob_escaped(name: &str) -> String {
    name.chars()
        .flat_map(|c| match c {
            '*' | '?' | '[' | ']' | '\\' => vec!['\\', c],
            c => vec![c],
        })
        .collect()
}
