//! A [`Target`]: where Redis is and how to talk to it, parsed once and
//! validated, shown without credentials.

use super::deployment::{cluster, sentinel, Deployment, NOT_A_URL};
use super::tls::TlsOptions;
use super::{DEFAULT_CONNECT_TIMEOUT, DEFAULT_RESPONSE_TIMEOUT};
use crate::redact::Secrets;
use redis::{ConnectionAddr, IntoConnectionInfo, TlsCertificates};
use std::fmt;
use std::time::Duration;

/// Where Redis is and how to talk to it, validated. `Display` shows the
/// URL without credentials.
#[derive(Clone)]
pub struct Target {
    pub(super) deployment: Deployment,
    pub(super) tls: bool,
    pub(super) insecure: bool,
    pub(super) certs: Option<TlsCertificates>,
    pub(super) shown: String,
    pub(super) secrets: Secrets,
    pub(super) connect_timeout: Duration,
    pub(super) response_timeout: Duration,
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

impl Target {
    /// Parses `url` (see the [module](super) for its forms) with TLS
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
}
