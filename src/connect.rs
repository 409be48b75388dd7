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

use crate::redact::Secrets;
#[cfg(feature = "cluster")]
use redis::cluster::{ClusterClient, ClusterClientBuilder};
use redis::sentinel::{SentinelClientBuilder, SentinelServerType};
use redis::{
    Client, ConnectionAddr, ConnectionInfo, IntoConnectionInfo, RedisResult, TlsCertificates,
    TlsMode, Value,
};
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How long opening a connection may take, by default.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// How long one reply may take, by default (a big batch on a slow server).
pub const DEFAULT_RESPONSE_TIMEOUT: Duration = Duration::from_secs(120);
const REDIS_PORT: u16 = 6379;
const SENTINEL_PORT: u16 = 26379;

/// TLS settings beyond the URL's `rediss`: a CA bundle instead of the
/// system's trust store, a client certificate and key (mutual TLS), or no
/// verification at all.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TlsOptions {
    /// PEM file of the certificate authorities to trust.
    pub ca_file: Option<PathBuf>,
    /// PEM file of the client certificate (with `key_file`).
    pub cert_file: Option<PathBuf>,
    /// PEM file of the client certificate's private key.
    pub key_file: Option<PathBuf>,
    /// Accept any server certificate. Only for tests: anyone on the path
    /// can read and change the traffic.
    pub insecure: bool,
}

impl TlsOptions {
    fn is_set(&self) -> bool {
        self.ca_file.is_some()
            || self.cert_file.is_some()
            || self.key_file.is_some()
            || self.insecure
    }

    /// The files read, checked for what they must hold.
    fn load(&self) -> Result<Option<TlsCertificates>, String> {
        if self.insecure && self.ca_file.is_some() {
            return Err("a CA file and insecure TLS exclude each other".into());
        }
        let client_tls = match (&self.cert_file, &self.key_file) {
            (Some(c), Some(k)) => Some(redis::ClientTlsConfig {
                client_cert: read_pem(c, "client certificate", "CERTIFICATE")?,
                client_key: read_pem(k, "client key", "PRIVATE KEY")?,
            }),
            (None, None) => None,
            (Some(_), None) => return Err("a client certificate needs its key file".into()),
            (None, Some(_)) => return Err("a client key needs its certificate file".into()),
        };
        let root_cert = match &self.ca_file {
            Some(p) => Some(read_pem(p, "CA file", "CERTIFICATE")?),
            None => None,
        };
        if client_tls.is_none() && root_cert.is_none() {
            return Ok(None);
        }
        Ok(Some(TlsCertificates {
            client_tls,
            root_cert,
        }))
    }
}

/// The contents of a PEM file, which must hold a `what_pem` block.
fn read_pem(path: &Path, what: &str, what_pem: &str) -> Result<Vec<u8>, String> {
    let shown = path.display();
    let bytes = std::fs::read(path).map_err(|e| {
        let why = match e.kind() {
            std::io::ErrorKind::NotFound => "no such file".to_string(),
            std::io::ErrorKind::PermissionDenied => "permission denied".to_string(),
            _ => e.to_string(),
        };
        format!("cannot read the {what} {shown}: {why}")
    })?;
    let text = String::from_utf8_lossy(&bytes);
    if !text.contains("-----BEGIN") || !text.contains(what_pem) {
        return Err(format!("the {what} {shown} holds no PEM {what_pem}"));
    }
    Ok(bytes)
}

/// What kind of deployment, and its addresses.
#[derive(Clone, Debug)]
enum Deployment {
    Standalone(ConnectionInfo),
    Cluster(Vec<ConnectionInfo>),
    Sentinel {
        sentinels: Vec<ConnectionAddr>,
        master: String,
        /// The data nodes' credentials and database.
        node: redis::RedisConnectionInfo,
        sentinel_user: Option<String>,
        sentinel_password: Option<String>,
    },
}

/// Where Redis is and how to talk to it, validated. `Display` shows the
/// URL without credentials.
#[derive(Clone)]
pub struct Target {
    deployment: Deployment,
    tls: bool,
    insecure: bool,
    certs: Option<TlsCertificates>,
    shown: String,
    secrets: Secrets,
    connect_timeout: Duration,
    response_timeout: Duration,
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.shown)
    }
}

impl fmt::Debug for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Target({:?})", self.shown)
    }
}

const NOT_A_URL: &str = "not a Redis URL (expected redis://HOST:PORT/DB, rediss://..., unix:///PATH, \
redis+cluster://HOST:PORT,HOST:PORT or redis+sentinel://HOST:PORT,HOST:PORT/MASTER; a password goes \
before the host as :PASSWORD@)";

impl Target {
    /// Parses `url` (see the [module](self) for its forms) with TLS
    /// settings `tls`. The error does not repeat the URL.
    pub fn parse(url: &str, tls: TlsOptions) -> Result<Target, String> {
        let url = url.trim();
        let (scheme, rest) = url.split_once("://").ok_or(NOT_A_URL)?;
        let (deployment, secure) = match scheme {
            "redis+cluster" | "rediss+cluster" => (
                cluster(rest, scheme.starts_with("rediss"))?,
                scheme.starts_with("rediss"),
            ),
            "redis+sentinel" | "rediss+sentinel" => (
                sentinel(rest, scheme.starts_with("rediss"))?,
                scheme.starts_with("rediss"),
            ),
            _ => {
                let info = url
                    .into_connection_info()
                    .map_err(|_| NOT_A_URL.to_string())?;
                let secure = matches!(info.addr(), ConnectionAddr::TcpTls { .. });
                (Deployment::Standalone(info), secure)
            }
        };
        if tls.is_set() && !secure {
            return Err(format!(
                "TLS settings need a TLS URL ({scheme}:// is plain text; use {}://)",
                scheme.replacen("redis", "rediss", 1)
            ));
        }
        let certs = tls.load()?;
        let insecure = tls.insecure
            || matches!(&deployment, Deployment::Standalone(info)
                if matches!(info.addr(), ConnectionAddr::TcpTls { insecure: true, .. }));
        let mut secrets = Secrets::default();
        for secret in deployment.passwords() {
            secrets = secrets.with(secret);
        }
        let mut target = Target {
            deployment,
            tls: secure,
            insecure,
            certs,
            shown: crate::redact_urls(url),
            secrets,
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
            response_timeout: DEFAULT_RESPONSE_TIMEOUT,
        };
        if target.insecure {
            if let Deployment::Standalone(info) = &target.deployment {
                if let ConnectionAddr::TcpTls { host, port, .. } = info.addr() {
                    let addr = ConnectionAddr::TcpTls {
                        host: host.clone(),
                        port: *port,
                        insecure: true,
                        tls_params: None,
                    };
                    target.deployment = Deployment::Standalone(info.clone().set_addr(addr));
                }
            }
        }
        Ok(target)
    }

    /// How long opening a connection may take (the server answering its
    /// first command included: a server that accepts and never answers is
    /// [`Error::TimedOut`](crate::Error::TimedOut) after `connect`), and how
    /// long one reply may take afterwards (else a retryable error). Both
    /// at least a millisecond; the defaults are
    /// [`DEFAULT_CONNECT_TIMEOUT`] and [`DEFAULT_RESPONSE_TIMEOUT`].
    ///
    /// ```
    /// use rotabloom::connect::{Target, TlsOptions};
    /// use std::time::Duration;
    /// let t = Target::parse("redis://127.0.0.1:6379", TlsOptions::default())
    ///     .unwrap()
    ///     .with_timeouts(Duration::from_secs(2), Duration::from_secs(30));
    /// assert_eq!(t.timeouts(), (Duration::from_secs(2), Duration::from_secs(30)));
    /// ```
    pub fn with_timeouts(mut self, connect: Duration, response: Duration) -> Target {
        let least = Duration::from_millis(1);
        self.connect_timeout = connect.max(least);
        self.response_timeout = response.max(least);
        self
    }

    /// The connect and response timeouts.
    pub fn timeouts(&self) -> (Duration, Duration) {
        (self.connect_timeout, self.response_timeout)
    }

    /// `standalone`, `cluster` or `sentinel`.
    pub fn kind(&self) -> &'static str {
        match self.deployment {
            Deployment::Standalone(_) => "standalone",
            Deployment::Cluster(_) => "cluster",
            Deployment::Sentinel { .. } => "sentinel",
        }
    }

    /// Whether the connection is encrypted.
    pub fn is_tls(&self) -> bool {
        self.tls
    }

    /// Whether the server's certificate goes unchecked.
    pub fn is_insecure(&self) -> bool {
        self.insecure
    }

    /// The passwords this target uses, to scrub from any text.
    pub fn secrets(&self) -> &Secrets {
        &self.secrets
    }

    fn tls_mode(&self) -> Option<TlsMode> {
        match (self.tls, self.insecure) {
            (false, _) => None,
            (true, false) => Some(TlsMode::Secure),
            (true, true) => Some(TlsMode::Insecure),
        }
    }

    fn client(&self, info: ConnectionInfo) -> RedisResult<Client> {
        // No `CLIENT SETINFO` when connecting: a server that never answers
        // would make each of its two replies wait the whole connect
        // timeout; the connection's first command is `PING` instead.
        let settings = info.redis_settings().clone().set_skip_set_lib_name();
        let info = info.set_redis_settings(settings);
        match &self.certs {
            Some(certs) => Client::build_with_tls(info, certs.clone()),
            None => Client::open(info),
        }
    }

    #[cfg(feature = "cluster")]
    fn cluster_client(&self, nodes: &[ConnectionInfo]) -> RedisResult<ClusterClient> {
        let mut b = ClusterClientBuilder::new(nodes.to_vec())
            .connection_timeout(self.connect_timeout)
            .response_timeout(self.response_timeout);
        if let Some(mode) = self.tls_mode() {
            b = b.tls(mode);
        }
        if let Some(certs) = &self.certs {
            b = b.certs(certs.clone());
        }
        if let Some(first) = nodes.first() {
            let s = first.redis_settings();
            if let Some(u) = s.username() {
                b = b.username(u);
            }
            if let Some(p) = s.password() {
                b = b.password(p);
            }
        }
        b.build()
    }

    /// The client of the primary the Sentinels name now.
    fn primary_client(&self) -> RedisResult<Client> {
        let Deployment::Sentinel {
            sentinels,
            master,
            node,
            sentinel_user,
            sentinel_password,
        } = &self.deployment
        else {
            unreachable!("only for sentinel targets")
        };
        let mut b =
            SentinelClientBuilder::new(sentinels.clone(), master, SentinelServerType::Master)?
                .set_client_to_redis_db(node.db());
        if let Some(u) = node.username() {
            b = b.set_client_to_redis_username(u);
        }
        if let Some(p) = node.password() {
            b = b.set_client_to_redis_password(p);
        }
        if let Some(u) = sentinel_user {
            b = b.set_client_to_sentinel_username(u);
        }
        if let Some(p) = sentinel_password {
            b = b.set_client_to_sentinel_password(p);
        }
        if let Some(mode) = self.tls_mode() {
            b = b
                .set_client_to_redis_tls_mode(mode)
                .set_client_to_sentinel_tls_mode(mode);
        }
        if let Some(certs) = &self.certs {
            b = b
                .set_client_to_redis_certificates(certs.clone())
                .set_client_to_sentinel_certificates(certs.clone());
        }
        b.build()?.get_client()
    }

    /// The error of a connection that could not be opened: one line,
    /// without credentials, saying why in words (authentication, not a
    /// Redis server, timed out...).
    fn failed(&self, e: &redis::RedisError) -> crate::Error {
        if e.is_timeout() {
            return crate::Error::TimedOut {
                target: self.shown.clone(),
                after: self.connect_timeout,
            };
        }
        let reason = crate::error::plain(e).unwrap_or_else(|| e.to_string());
        let reason = reason.split_whitespace().collect::<Vec<_>>().join(" ");
        crate::Error::Connect {
            target: self.shown.clone(),
            reason: self.secrets.redact(&reason),
        }
    }

    /// A connection's first command, with the connect timeout: `PONG`
    /// proves a Redis server that lets this client in. An error reply that
    /// only a Redis server gives (an ACL without `PING`, a server still
    /// loading) is no reason to refuse the connection.
    fn ping(&self, conn: &mut redis::Connection) -> RedisResult<()> {
        conn.set_read_timeout(Some(self.connect_timeout))?;
        conn.set_write_timeout(Some(self.connect_timeout))?;
        check_pong(redis::ConnectionLike::req_command(
            conn,
            &redis::cmd("PING"),
        ))?;
        conn.set_read_timeout(Some(self.response_timeout))?;
        conn.set_write_timeout(Some(self.response_timeout))
    }

    /// The error of a deployment this build was compiled without.
    #[allow(dead_code)] // Used only when a feature is off.
    fn unsupported(&self, feature: &str) -> crate::Error {
        crate::Error::Connect {
            target: self.shown.clone(),
            reason: format!(
                "this build of rotabloom has no support for it: enable the crate's `{feature}` feature"
            ),
        }
    }

    /// Opens a blocking connection.
    pub fn connect(&self) -> Result<Connection, crate::Error> {
        let single = |client: Client| -> RedisResult<Connection> {
            let mut conn = client.get_connection_with_timeout(self.connect_timeout)?;
            self.ping(&mut conn)?;
            Ok(Connection::Single(conn))
        };
        let conn = match &self.deployment {
            Deployment::Standalone(info) => self.client(info.clone()).and_then(single),
            #[cfg(feature = "cluster")]
            Deployment::Cluster(nodes) => self
                .cluster_client(nodes)
                .and_then(|c| c.get_connection())
                .map(|c| Connection::Cluster(Box::new(c))),
            #[cfg(not(feature = "cluster"))]
            Deployment::Cluster(_) => return Err(self.unsupported("cluster")),
            Deployment::Sentinel { .. } => self.primary_client().and_then(single),
        };
        conn.map_err(|e| self.failed(&e))
    }

    /// Opens an async (tokio) connection.
    #[cfg(feature = "async")]
    pub async fn connect_async(&self) -> Result<AsyncConnection, crate::Error> {
        let config = redis::AsyncConnectionConfig::new()
            .set_connection_timeout(Some(self.connect_timeout))
            .set_response_timeout(Some(self.response_timeout));
        let conn = match &self.deployment {
            Deployment::Standalone(info) => match self.client(info.clone()) {
                Ok(c) => c
                    .get_multiplexed_async_connection_with_config(&config)
                    .await
                    .map(AsyncConnection::Single),
                Err(e) => Err(e),
            },
            #[cfg(feature = "cluster-async")]
            Deployment::Cluster(nodes) => match self.cluster_client(nodes) {
                Ok(c) => c
                    .get_async_connection()
                    .await
                    .map(|c| AsyncConnection::Cluster(Box::new(c))),
                Err(e) => Err(e),
            },
            #[cfg(not(feature = "cluster-async"))]
            Deployment::Cluster(_) => return Err(self.unsupported("cluster-async")),
            Deployment::Sentinel { .. } => {
                // Asking the Sentinels is a few short blocking round trips.
                match self.primary_client() {
                    Ok(c) => c
                        .get_multiplexed_async_connection_with_config(&config)
                        .await
                        .map(AsyncConnection::Single),
                    Err(e) => Err(e),
                }
            }
        };
        let mut conn = conn.map_err(|e| self.failed(&e))?;
        if let AsyncConnection::Single(c) = &mut conn {
            // The response timeout of the connection bounds the PING.
            let pong = redis::aio::ConnectionLike::req_packed_command(c, &redis::cmd("PING")).await;
            check_pong(pong).map_err(|e| self.failed(&e))?;
        }
        Ok(conn)
    }
}

impl Deployment {
    fn passwords(&self) -> Vec<String> {
        match self {
            Deployment::Standalone(info) => info
                .redis_settings()
                .password()
                .map(str::to_string)
                .into_iter()
                .collect(),
            Deployment::Cluster(nodes) => nodes
                .iter()
                .filter_map(|n| n.redis_settings().password().map(str::to_string))
                .collect(),
            Deployment::Sentinel {
                node,
                sentinel_password,
                ..
            } => node
                .password()
                .map(str::to_string)
                .into_iter()
                .chain(sentinel_password.clone())
                .collect(),
        }
    }
}

/// `[USERINFO@]HOSTS` and what follows the hosts.
fn split_authority(rest: &str) -> (Option<&str>, &str, &str) {
    let (auth, tail) = match rest.find(['/', '?']) {
        Some(i) => rest.split_at(i),
        None => (rest, ""),
    };
    match auth.rfind('@') {
        Some(at) => (Some(&auth[..at]), &auth[at + 1..], tail),
        None => (None, auth, tail),
    }
}

/// `HOST[:PORT]` items separated by commas.
fn hosts(list: &str, default_port: u16) -> Result<Vec<(String, u16)>, String> {
    let mut out = Vec::new();
    for item in list.split(',').map(str::trim) {
        let (host, port) = match item.rsplit_once(':') {
            Some((h, p)) if !h.contains(':') || h.ends_with(']') => {
                let port = p
                    .parse::<u16>()
                    .ok()
                    .filter(|&p| p != 0)
                    .ok_or_else(|| format!("{p:?} is not a port number"))?;
                (h, port)
            }
            _ => (item, default_port),
        };
        let host = host.trim_start_matches('[').trim_end_matches(']');
        if host.is_empty() || host.contains(['/', '@', '?', '#', ' ']) {
            return Err(format!("{item:?} is not HOST:PORT"));
        }
        out.push((host.to_string(), port));
    }
    Ok(out)
}

/// A `redis://` URL for one node, for the redis crate to parse (it
/// percent-decodes the credentials).
fn node_url(userinfo: Option<&str>, host: &str, port: u16, db: &str) -> String {
    let host = if host.contains(':') {
        format!("[{host}]")
    } else {
        host.to_string()
    };
    match userinfo {
        Some(u) => format!("redis://{u}@{host}:{port}/{db}"),
        None => format!("redis://{host}:{port}/{db}"),
    }
}

fn cluster(rest: &str, tls: bool) -> Result<Deployment, String> {
    let (userinfo, list, tail) = split_authority(rest);
    if !tail.trim_matches('/').is_empty() {
        return Err(
            "a cluster URL has no database nor options: redis+cluster://HOST:PORT,HOST:PORT".into(),
        );
    }
    let mut nodes = Vec::new();
    for (host, port) in hosts(list, REDIS_PORT)? {
        let info = node_url(userinfo, &host, port, "0")
            .into_connection_info()
            .map_err(|_| NOT_A_URL.to_string())?;
        let info = if tls {
            info.set_addr(ConnectionAddr::TcpTls {
                host,
                port,
                insecure: false,
                tls_params: None,
            })
        } else {
            info
        };
        nodes.push(info);
    }
    Ok(Deployment::Cluster(nodes))
}

fn sentinel(rest: &str, tls: bool) -> Result<Deployment, String> {
    let (userinfo, list, tail) = split_authority(rest);
    let (path, query) = tail.split_once('?').unwrap_or((tail, ""));
    let mut parts = path.trim_start_matches('/').split('/');
    let master = parts.next().unwrap_or("").to_string();
    if master.is_empty() {
        return Err(
            "a Sentinel URL names the master: redis+sentinel://HOST:PORT,HOST:PORT/MASTER".into(),
        );
    }
    let db = parts.next().filter(|d| !d.is_empty()).unwrap_or("0");
    if parts.next().is_some_and(|p| !p.is_empty()) {
        return Err("a Sentinel URL's path is /MASTER or /MASTER/DB".into());
    }
    let node = node_url(userinfo, "localhost", REDIS_PORT, db)
        .into_connection_info()
        .map_err(|_| NOT_A_URL.to_string())?
        .redis_settings()
        .clone();
    let (mut sentinel_user, mut sentinel_password) = (None, None);
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        let v = percent_decode(v)?;
        match k {
            "sentinel_username" => sentinel_user = Some(v),
            "sentinel_password" => sentinel_password = Some(v),
            _ => {
                return Err(format!(
                "unknown Sentinel URL option {k:?} (expected sentinel_username, sentinel_password)"
            ))
            }
        }
    }
    let sentinels = hosts(list, SENTINEL_PORT)?
        .into_iter()
        .map(|(host, port)| match tls {
            true => ConnectionAddr::TcpTls {
                host,
                port,
                insecure: false,
                tls_params: None,
            },
            false => ConnectionAddr::Tcp(host, port),
        })
        .collect();
    Ok(Deployment::Sentinel {
        sentinels,
        master,
        node,
        sentinel_user,
        sentinel_password,
    })
}

fn percent_decode(s: &str) -> Result<String, String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = s
                .get(i + 1..i + 3)
                .and_then(|h| u8::from_str_radix(h, 16).ok())
                .ok_or("a bad %-escape in a Sentinel URL option")?;
            out.push(hex);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|_| "a Sentinel URL option is not UTF-8".to_string())
}

/// A blocking connection to one server or to a cluster. Filter handles
/// take it like any [`redis::ConnectionLike`].
pub enum Connection {
    /// One server (standalone, or the primary a Sentinel named).
    Single(redis::Connection),
    /// A cluster.
    #[cfg(feature = "cluster")]
    Cluster(Box<redis::cluster::ClusterConnection>),
}

impl fmt::Debug for Connection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Connection::Single(_) => "Connection::Single",
            #[cfg(feature = "cluster")]
            Connection::Cluster(_) => "Connection::Cluster",
        })
    }
}

impl Connection {
    /// Every key matching `pattern` (a `SCAN MATCH` pattern), on every
    /// primary of a cluster: `SCAN` walks one node only.
    pub fn scan_match(&mut self, pattern: &str) -> RedisResult<Vec<Vec<u8>>> {
        #[cfg(feature = "cluster")]
        use redis::cluster_routing::{RoutingInfo, SingleNodeRoutingInfo};
        let nodes: Vec<Option<(String, u16)>> = match self {
            Connection::Single(_) => vec![None],
            #[cfg(feature = "cluster")]
            Connection::Cluster(c) => {
                let text: String = redis::cmd("CLUSTER").arg("NODES").query(c.as_mut())?;
                primaries(&text).into_iter().map(Some).collect()
            }
        };
        let mut keys = Vec::new();
        for node in nodes {
            let mut cursor: u64 = 0;
            loop {
                let mut cmd = redis::cmd("SCAN");
                cmd.arg(cursor)
                    .arg("MATCH")
                    .arg(pattern)
                    .arg("COUNT")
                    .arg(1000);
                let reply = match (&mut *self, &node) {
                    #[cfg(feature = "cluster")]
                    (Connection::Cluster(c), Some((host, port))) => c.route_command(
                        &cmd,
                        RoutingInfo::SingleNode(SingleNodeRoutingInfo::ByAddress {
                            host: host.clone(),
                            port: *port,
                        }),
                    )?,
                    (c, _) => redis::ConnectionLike::req_command(c, &cmd)?,
                };
                // An error reply (NOAUTH, NOPERM...) is the error, not a
                // reply of the wrong shape.
                if let Value::ServerError(e) = reply {
                    return Err(e.into());
                }
                let (next, batch): (u64, Vec<Vec<u8>>) = redis::from_redis_value(reply)?;
                keys.extend(batch);
                if next == 0 {
                    break;
                }
                cursor = next;
            }
        }
        Ok(keys)
    }
}

/// `Ok` for `PONG`, or an error reply only a Redis server gives; the
/// error for anything else: no password given, or a server that does not
/// speak Redis (an echo, an HTTP server...).
fn check_pong(reply: RedisResult<Value>) -> RedisResult<()> {
    match reply {
        Ok(Value::SimpleString(s)) if s == "PONG" => Ok(()),
        Ok(Value::ServerError(e)) => check_pong(Err(e.into())),
        Err(e) if e.code() == Some("NOAUTH") || e.code().is_none() => Err(e),
        Err(_) => Ok(()),
        Ok(_) => Err(redis::RedisError::from((
            redis::ErrorKind::Parse,
            "not a Redis server",
            "it answered PING with something else than PONG".to_string(),
        ))),
    }
}

/// The addresses of the primaries in `CLUSTER NODES` output.
#[cfg_attr(not(feature = "cluster"), allow(dead_code))]
fn primaries(nodes: &str) -> Vec<(String, u16)> {
    nodes
        .lines()
        .filter_map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let flags = fields.get(2)?;
            if !flags.split(',').any(|f| f == "master") || flags.contains("fail") {
                return None;
            }
            let addr = fields.get(1)?.split(['@', ',']).next()?;
            let (host, port) = addr.rsplit_once(':')?;
            Some((host.to_string(), port.parse().ok()?))
        })
        .collect()
}

impl redis::ConnectionLike for Connection {
    fn req_packed_command(&mut self, cmd: &[u8]) -> RedisResult<Value> {
        match self {
            Connection::Single(c) => c.req_packed_command(cmd),
            #[cfg(feature = "cluster")]
            Connection::Cluster(c) => c.req_packed_command(cmd),
        }
    }

    fn req_packed_commands(
        &mut self,
        cmd: &[u8],
        offset: usize,
        count: usize,
    ) -> RedisResult<Vec<Value>> {
        match self {
            Connection::Single(c) => c.req_packed_commands(cmd, offset, count),
            #[cfg(feature = "cluster")]
            Connection::Cluster(c) => c.req_packed_commands(cmd, offset, count),
        }
    }

    fn req_command(&mut self, cmd: &redis::Cmd) -> RedisResult<Value> {
        match self {
            Connection::Single(c) => c.req_command(cmd),
            #[cfg(feature = "cluster")]
            Connection::Cluster(c) => c.req_command(cmd),
        }
    }

    fn get_db(&self) -> i64 {
        match self {
            Connection::Single(c) => c.get_db(),
            #[cfg(feature = "cluster")]
            Connection::Cluster(c) => c.get_db(),
        }
    }

    fn supports_pipelining(&self) -> bool {
        match self {
            Connection::Single(c) => c.supports_pipelining(),
            #[cfg(feature = "cluster")]
            Connection::Cluster(c) => c.supports_pipelining(),
        }
    }

    fn check_connection(&mut self) -> bool {
        match self {
            Connection::Single(c) => c.check_connection(),
            #[cfg(feature = "cluster")]
            Connection::Cluster(c) => c.check_connection(),
        }
    }

    fn is_open(&self) -> bool {
        match self {
            Connection::Single(c) => c.is_open(),
            #[cfg(feature = "cluster")]
            Connection::Cluster(c) => c.is_open(),
        }
    }
}

/// An async connection to one server or to a cluster; cheap to clone.
#[cfg(feature = "async")]
#[derive(Clone)]
pub enum AsyncConnection {
    /// One server.
    Single(redis::aio::MultiplexedConnection),
    /// A cluster.
    #[cfg(feature = "cluster-async")]
    Cluster(Box<redis::cluster_async::ClusterConnection>),
}

#[cfg(feature = "async")]
impl redis::aio::ConnectionLike for AsyncConnection {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a redis::Cmd) -> redis::RedisFuture<'a, Value> {
        match self {
            AsyncConnection::Single(c) => c.req_packed_command(cmd),
            #[cfg(feature = "cluster-async")]
            AsyncConnection::Cluster(c) => c.req_packed_command(cmd),
        }
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        cmd: &'a redis::Pipeline,
        offset: usize,
        count: usize,
    ) -> redis::RedisFuture<'a, Vec<Value>> {
        match self {
            AsyncConnection::Single(c) => c.req_packed_commands(cmd, offset, count),
            #[cfg(feature = "cluster-async")]
            AsyncConnection::Cluster(c) => c.req_packed_commands(cmd, offset, count),
        }
    }

    fn get_db(&self) -> i64 {
        match self {
            AsyncConnection::Single(c) => c.get_db(),
            #[cfg(feature = "cluster-async")]
            AsyncConnection::Cluster(c) => c.get_db(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(url: &str) -> Result<Target, String> {
        Target::parse(url, TlsOptions::default())
    }

    #[test]
    fn forms() {
        assert_eq!(parse("redis://h:1/0").unwrap().kind(), "standalone");
        assert!(parse("rediss://h:1/0").unwrap().is_tls());
        let c = parse("rediss+cluster://u:pw1@a:1,b:2").unwrap();
        assert_eq!((c.kind(), c.is_tls()), ("cluster", true));
        assert_eq!(c.to_string(), "rediss+cluster://***@a:1,b:2");
        assert_eq!(c.secrets().redact("x pw1"), "x ***");
        let s = parse("redis+sentinel://:pw2@a,b:2/m/3?sentinel_password=sp%41").unwrap();
        assert!(s.to_string().ends_with("sentinel_password=***"), "{s}");
        assert_eq!(s.secrets().redact("pw2 spA"), "*** ***");
        let Deployment::Sentinel {
            sentinels, node, ..
        } = &s.deployment
        else {
            panic!()
        };
        assert_eq!(sentinels.len(), 2);
        assert_eq!(node.db(), 3);
    }

    #[test]
    fn bad_values() {
        for bad in [
            "http://h",
            "redis+cluster://a:x",
            "redis+cluster://a:1/0",
            "redis+sentinel://a:1",
            "redis+sentinel://a:1/m?x=1",
            "redis+cluster://,",
        ] {
            assert!(parse(bad).is_err(), "{bad}");
        }
        let tls = TlsOptions {
            insecure: true,
            ..TlsOptions::default()
        };
        assert!(Target::parse("redis://h", tls.clone())
            .unwrap_err()
            .contains("rediss://"));
        assert!(Target::parse("rediss://h", tls).unwrap().is_insecure());
        let missing = TlsOptions {
            ca_file: Some("/nonexistent/ca.pem".into()),
            ..TlsOptions::default()
        };
        assert_eq!(
            Target::parse("rediss://h", missing).unwrap_err(),
            "cannot read the CA file /nonexistent/ca.pem: no such file"
        );
    }

    #[test]
    fn primaries_of_cluster_nodes() {
        let text = "id1 127.0.0.1:7000@17000 myself,master - 0 0 1 connected 0-5460\n\
                    id2 127.0.0.1:7001@17001 slave id1 0 0 1 connected\n\
                    id3 127.0.0.1:7002@17002 master,fail - 0 0 1 connected\n";
        assert_eq!(primaries(text), vec![("127.0.0.1".to_string(), 7000)]);
    }
}
