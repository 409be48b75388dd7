//! Reaching Redis: one server, a cluster, or the primary a set of Sentinels
//! names, with or without TLS.
//!
//! A [`Target`] is parsed once, from a URL and [`TlsOptions`], and cannot
//! hold a bad value: every address parses, every certificate file has been
//! read. [`Target::connect`] and [`Target::connect_async`] then open a
//! connection every filter handle accepts.
//!
//! URL forms:
//!
//! * `redis://[[USER]:PASSWORD@]HOST[:PORT][/DB]`, `rediss://...` (TLS),
//!   `unix:///PATH[?db=N&pass=PASSWORD]`: one server;
//! * `redis+cluster://[[USER]:PASSWORD@]HOST:PORT[,HOST:PORT...]`,
//!   `rediss+cluster://...`: a Redis Cluster, from its seed nodes;
//! * `redis+sentinel://[[USER]:PASSWORD@]HOST:PORT[,HOST:PORT...]/MASTER[/DB][?sentinel_username=U&sentinel_password=P]`,
//!   `rediss+sentinel://...`: the primary that Sentinels (default port
//!   26379) name `MASTER`. The credentials before `@` are the data nodes';
//!   the Sentinels' own go in the query.
//!
//! ```
//! use rotabloom::connect::{Target, TlsOptions};
//! let t = Target::parse("redis+cluster://:pw@10.0.0.1:7000,10.0.0.2:7000", TlsOptions::default()).unwrap();
//! assert_eq!(t.to_string(), "redis+cluster://***@10.0.0.1:7000,10.0.0.2:7000");
//! let t = Target::parse("redis+sentinel://s1,s2:26380/mymaster", TlsOptions::default()).unwrap();
//! assert_eq!(t.kind(), "sentinel");
//! assert!(Target::parse("redis+sentinel://s1:26379", TlsOptions::default()).is_err());
//! ```
//!
//! TLS verifies the server against the system's trust store (which
//! honours `SSL_CERT_FILE` and `SSL_CERT_DIR`), or against
//! [`TlsOptions::ca_file`] when given.

// First, so that the documentation of Target lists parsing and settings
// before connecting.
mod target;

mod connection;
mod deployment;
mod open;
mod tls;

use std::time::Duration;

#[cfg(feature = "async")]
pub use connection::AsyncConnection;
pub use connection::Connection;
pub use target::Target;
pub use tls::TlsOptions;

/// How long opening a connection may take, by default.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// How long one reply may take, by default (a big batch on a slow server).
pub const DEFAULT_RESPONSE_TIMEOUT: Duration = Duration::from_secs(120);
