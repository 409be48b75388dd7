//! A filter of any kind, chosen by the `kind` stored in Redis.

use chrono::{DateTime, Utc};
use redis::Connection;
use rotabloom::config::{FilterDef, FilterSpec};
use rotabloom::{
    BloomFilter, CircularFilter, Error, ExpandingFilter, FilterName, Info, Keys, Kind, Opened,
    Result, Rotation,
};

/// One handle, whatever the kind; every method forwards to the library.
#[derive(Clone, Debug)]
pub enum AnyFilter {
    Bloom(BloomFilter),
    Expanding(ExpandingFilter),
    Circular(CircularFilter),
}

macro_rules! each {
    ($self:expr, $f:ident => $body:expr) => {
        match $self {
            AnyFilter::Bloom($f) => $body,
            AnyFilter::Expanding($f) => $body,
            AnyFilter::Circular($f) => $body,
        }
    };
}

impl AnyFilter {
    /// Opens an existing filter: reads its `kind` (HGET), then opens it with
    /// the matching type.
    pub fn open(conn: &mut Connection, name: &str) -> Result<AnyFilter> {
        let keys = Keys::new(FilterName::new(name)?);
        let kind: Option<String> = match redis::cmd("HGET").arg(keys.meta()).arg("kind").query(conn)
        {
            Ok(k) => k,
            Err(e) if e.code() == Some("WRONGTYPE") => {
                let found: String = redis::cmd("TYPE").arg(keys.meta()).query(conn)?;
                return Err(Error::WrongType {
                    key: keys.meta().to_string(),
                    found,
                    expected: "hash",
                });
            }
            Err(e) => return Err(e.into()),
        };
        let Some(kind) = kind else {
            return Err(Error::NotFound {
                name: name.to_string(),
            });
        };
        match kind.parse::<Kind>() {
            Ok(Kind::Bloom) => BloomFilter::open(conn, name).map(AnyFilter::Bloom),
            Ok(Kind::Expanding) => ExpandingFilter::open(conn, name).map(AnyFilter::Expanding),
            Ok(Kind::Circular) => CircularFilter::open(conn, name).map(AnyFilter::Circular),
            Err(_) => Err(Error::CorruptMetadata {
                name: name.to_string(),
                field: "kind".into(),
                reason: format!("{kind:?} is not a kind this program knows"),
            }),
        }
    }

    /// Creates the filter `def` describes, or opens it when it exists with
    /// the same parameters.
    pub fn create_or_open(conn: &mut Connection, def: &FilterDef) -> Result<(AnyFilter, Opened)> {
        Ok(match def.spec() {
            FilterSpec::Bloom(s) => {
                let (f, how) = s.create_or_open(conn)?;
                (AnyFilter::Bloom(f), how)
            }
            FilterSpec::Expanding(s) => {
                let (f, how) = s.create_or_open(conn)?;
                (AnyFilter::Expanding(f), how)
            }
            FilterSpec::Circular(s) => {
                let (f, how) = s.create_or_open(conn)?;
                (AnyFilter::Circular(f), how)
            }
        })
    }

    pub fn kind(&self) -> Kind {
        match self {
            AnyFilter::Bloom(_) => Kind::Bloom,
            AnyFilter::Expanding(_) => Kind::Expanding,
            AnyFilter::Circular(_) => Kind::Circular,
        }
    }

    pub fn insert_many(&self, conn: &mut Connection, items: &[Vec<u8>]) -> Result<Vec<bool>> {
        each!(self, f => f.insert_many(conn, items))
    }

    pub fn contains_many(&self, conn: &mut Connection, items: &[Vec<u8>]) -> Result<Vec<bool>> {
        each!(self, f => f.contains_many(conn, items))
    }

    pub fn check_and_insert_many(
        &self,
        conn: &mut Connection,
        items: &[Vec<u8>],
    ) -> Result<Vec<bool>> {
        each!(self, f => f.check_and_insert_many(conn, items))
    }

    pub fn info(&self, conn: &mut Connection) -> Result<Info> {
        each!(self, f => f.info(conn))
    }

    pub fn drop_filter(&self, conn: &mut Connection) -> Result<bool> {
        each!(self, f => f.drop(conn))
    }

    /// The circular filter, if this is one.
    pub fn circular(&self) -> Option<&CircularFilter> {
        match self {
            AnyFilter::Circular(f) => Some(f),
            _ => None,
        }
    }

    /// When the next scheduled rotation is due (circular filters with a
    /// schedule), as last read from Redis.
    pub fn next_rotation_at(&self) -> Option<DateTime<Utc>> {
        self.circular().and_then(CircularFilter::next_rotation_at)
    }

    /// A rotation: manual, or the ones owed by the schedule at `now` (the
    /// server's clock when `None`).
    pub fn rotate(
        f: &CircularFilter,
        conn: &mut Connection,
        if_due: bool,
        now: Option<DateTime<Utc>>,
    ) -> Result<Rotation> {
        match (if_due, now) {
            (false, _) => f.rotate(conn),
            (true, None) => f.rotate_if_due(conn),
            (true, Some(now)) => f.rotate_if_due_at(conn, now),
        }
    }
}
