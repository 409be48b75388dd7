//! One Redis connection per filter object, opened on first use and opened
//! again after it broke.

use rotabloom::connect::{Connection, Target, TlsOptions};
use std::sync::{Mutex, PoisonError};

/// Where Redis is, and the connection to it while it works.
pub struct Link {
    target: Target,
    // A filter object may be shared by threads; the connection is not.
    conn: Mutex<Option<Connection>>,
}

impl Link {
    /// Parses `url` (every form the command-line tool accepts).
    pub fn new(url: &str, tls: TlsOptions) -> Result<Link, String> {
        Ok(Link {
            target: Target::parse(url, tls)?,
            conn: Mutex::new(None),
        })
    }

    /// The same target, without the connection: for a handle that talks
    /// to it otherwise (the async classes).
    pub fn detached(&self) -> Link {
        Link {
            target: self.target.clone(),
            conn: Mutex::new(None),
        }
    }

    /// Where Redis is.
    pub fn target(&self) -> &Target {
        &self.target
    }

    /// The URL without credentials.
    pub fn shown(&self) -> String {
        self.target.to_string()
    }

    /// `text` without any of this target's passwords.
    pub fn redact(&self, text: &str) -> String {
        rotabloom::redact_urls(&self.target.secrets().redact(text))
    }

    /// Runs `op` on the connection. A connection that failed is dropped so
    /// that the next call connects again; the failed call is not repeated,
    /// since a write may have reached the server before the reply was lost.
    pub fn run<T>(
        &self,
        op: impl FnOnce(&mut Connection) -> rotabloom::Result<T>,
    ) -> rotabloom::Result<T> {
        // A panic while the lock was held leaves at worst a broken
        // connection, which the error path below replaces.
        let mut guard = self.conn.lock().unwrap_or_else(PoisonError::into_inner);
        let conn = match guard.as_mut() {
            Some(conn) => conn,
            None => guard.insert(self.target.connect()?),
        };
        let out = op(conn);
        if let Err(e) = &out {
            if broken(e) {
                *guard = None;
            }
        }
        out
    }
}

/// Whether the connection itself is suspect after `e` (as opposed to an
/// error reply on a working connection).
pub fn broken(e: &rotabloom::Error) -> bool {
    matches!(e, rotabloom::Error::Redis(r) if connection_failed(r.inner()))
}

/// Whether `e` is about the connection rather than a command.
pub fn connection_failed(e: &redis::RedisError) -> bool {
    e.is_io_error()
        || e.is_timeout()
        || e.is_connection_dropped()
        || e.is_connection_refusal()
        || e.is_unrecoverable_error()
}
