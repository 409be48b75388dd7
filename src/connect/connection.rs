//! The connections a [`Target`](super::Target) opens: one server or a
//! cluster behind one type that every filter handle accepts.

use redis::{RedisResult, Value};
use std::fmt;

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

    #[test]
    fn primaries_of_cluster_nodes() {
        let text = "id1 127.0.0.1:7000@17000 myself,master - 0 0 1 connected 0-5460\n\
                    id2 127.0.0.1:7001@17001 slave id1 0 0 1 connected\n\
                    id3 127.0.0.1:7002@17002 master,fail - 0 0 1 connected\n";
        assert_eq!(primaries(text), vec![("127.0.0.1".to_string(), 7000)]);
    }
}
