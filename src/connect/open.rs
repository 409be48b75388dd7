//! Opening a connection to a [`Target`]: the client of each kind of
//! deployment, the first `PING` that proves a Redis server, and the
//! error, in words and without credentials, when it fails.

use super::deployment::Deployment;
#[cfg(feature = "async")]
use super::AsyncConnection;
use super::{Connection, Target};
#[cfg(feature = "cluster")]
use redis::cluster::{ClusterClient, ClusterClientBuilder};
use redis::sentinel::{SentinelClientBuilder, SentinelServerType};
use redis::{Client, ConnectionAddr, ConnectionInfo, RedisResult, TlsMode, Value};

impl Target {
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
    fn failed(&self, e: &redis::RedisError) -> crate::error::Error {
        if e.is_timeout() {
            return crate::error::Error::TimedOut {
                target: self.shown.clone(),
                after: self.connect_timeout,
            };
        }
        let reason = crate::error::plain(e).unwrap_or_else(|| e.to_string());
        let reason = reason.split_whitespace().collect::<Vec<_>>().join(" ");
        crate::error::Error::Connect {
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
    fn unsupported(&self, feature: &str) -> crate::error::Error {
        crate::error::Error::Connect {
            target: self.shown.clone(),
            reason: format!(
                "this build of rotabloom has no support for it: enable the crate's `{feature}` feature"
            ),
        }
    }

    /// Opens a blocking connection.
    pub fn connect(&self) -> Result<Connection, crate::error::Error> {
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

    /// Opens a blocking connection to the cluster node at `addr`
    /// (`host:port`, as [`ShardedFilter::group_masters`](crate::ShardedFilter::group_masters)
    /// names it) with the target's credentials, TLS and timeouts: a plain
    /// connection, which pipelines, where a cluster connection sends every
    /// command alone. It follows no redirection: a key the node does not
    /// serve is refused with `MOVED`, unapplied. Any other target opens
    /// its usual connection.
    pub fn connect_to(&self, addr: &str) -> Result<Connection, crate::error::Error> {
        let Deployment::Cluster(nodes) = &self.deployment else {
            return self.connect();
        };
        let bad = || crate::error::Error::InvalidParameter {
            name: "addr",
            reason: format!("{addr:?} is not host:port"),
        };
        let (host, port) = addr.rsplit_once(':').ok_or_else(bad)?;
        let port: u16 = port.parse().map_err(|_| bad())?;
        let host = host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_string();
        let first = nodes.first().ok_or_else(bad)?;
        let at = match first.addr().clone() {
            ConnectionAddr::TcpTls {
                insecure,
                tls_params,
                ..
            } => ConnectionAddr::TcpTls {
                host,
                port,
                insecure,
                tls_params,
            },
            _ => ConnectionAddr::Tcp(host, port),
        };
        let conn = self.client(first.clone().set_addr(at)).and_then(|client| {
            let mut conn = client.get_connection_with_timeout(self.connect_timeout)?;
            self.ping(&mut conn)?;
            Ok(Connection::Single(conn))
        });
        conn.map_err(|e| self.failed(&e))
    }

    /// Opens an async (tokio) connection.
    #[cfg(feature = "async")]
    pub async fn connect_async(&self) -> Result<AsyncConnection, crate::error::Error> {
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
        // Without the `cluster-async` feature a connection is always
        // single, and the pattern cannot fail.
        #[cfg_attr(not(feature = "cluster-async"), allow(irrefutable_let_patterns))]
        if let AsyncConnection::Single(c) = &mut conn {
            // The response timeout of the connection bounds the PING.
            let pong = redis::aio::ConnectionLike::req_packed_command(c, &redis::cmd("PING")).await;
            check_pong(pong).map_err(|e| self.failed(&e))?;
        }
        Ok(conn)
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
