//! The URL forms of a cluster and of Sentinels, parsed into the kind of
//! deployment and its addresses (a single server's URL is the `redis`
//! crate's to parse).

use redis::{ConnectionAddr, ConnectionInfo, IntoConnectionInfo};

const REDIS_PORT: u16 = 6379;
const SENTINEL_PORT: u16 = 26379;

pub(super) const NOT_A_URL: &str = "not a Redis URL (expected redis://HOST:PORT/DB, rediss://..., unix:///PATH, \
redis+cluster://HOST:PORT,HOST:PORT or redis+sentinel://HOST:PORT,HOST:PORT/MASTER; a password goes \
before the host as :PASSWORD@)";

/// What kind of deployment, and its addresses.
#[derive(Clone, Debug)]
pub(super) enum Deployment {
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

impl Deployment {
    pub(super) fn passwords(&self) -> Vec<String> {
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

pub(super) fn cluster(rest: &str, tls: bool) -> Result<Deployment, String> {
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

pub(super) fn sentinel(rest: &str, tls: bool) -> Result<Deployment, String> {
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
