//! Where the Redis URL comes from: `--redis`, the configuration or
//! `$REDIS_URL`, else the default; a connection error says which.

use super::fail::Fail;
use rotabloom::config::{Config, RedisUrl};
use rotabloom::Error;

const DEFAULT_URL: &str = "redis://127.0.0.1:6379";

/// Where clap found the Redis URL, if anywhere: the `--redis` flag or
/// the `REDIS_URL` environment variable (clap reads both, and shows the
/// variable in `--help`).
pub enum RedisUrlFrom {
    Flag(Option<String>),
    Env(Option<String>),
}

/// Where the Redis URL in use came from.
#[derive(Clone, Debug, PartialEq)]
pub enum Origin {
    Flag,
    Config(String),
    Env,
    Default,
}

impl std::fmt::Display for Origin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Origin::Flag => f.write_str("the URL of --redis"),
            Origin::Config(file) => write!(f, "the URL of the configuration {file}"),
            Origin::Env => f.write_str("the URL of $REDIS_URL"),
            Origin::Default => {
                f.write_str("the default URL: no --redis, configuration or $REDIS_URL named one")
            }
        }
    }
}

/// A connection error, and where its URL came from: a URL nobody chose
/// (the default), or a $REDIS_URL left for another tool, is then plain.
/// The library's error stays in the chain, for the exit code and retries.
#[derive(Debug)]
pub struct FromUrl {
    pub error: Error,
    pub origin: Origin,
}

impl std::fmt::Display for FromUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({})", self.error, self.origin)
    }
}

impl std::error::Error for FromUrl {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.error)
    }
}

/// The first of `--redis`, the configuration's URL and `$REDIS_URL`, else
/// the default: what is named on this command line beats what is in the
/// environment. Also says which it was.
pub fn redis_url(from: RedisUrlFrom, config: Option<&Config>) -> (Result<RedisUrl, Fail>, Origin) {
    let bad = |message: String| Fail { code: 2, message };
    let env = match from {
        RedisUrlFrom::Flag(Some(u)) => {
            return (
                RedisUrl::new(u).map_err(|m| bad(format!("--redis: {m}"))),
                Origin::Flag,
            )
        }
        RedisUrlFrom::Flag(None) => None,
        RedisUrlFrom::Env(u) => u,
    };
    if let Some(c) = config {
        let origin = Origin::Config(c.file().to_string());
        match c.redis_url() {
            Ok(Some(u)) => return (Ok(u), origin),
            Ok(None) => {}
            Err(e) => return (Err(bad(e.to_string())), origin),
        }
    }
    match env {
        Some(u) if !u.trim().is_empty() => (
            RedisUrl::new(u).map_err(|m| bad(format!("$REDIS_URL: {m}"))),
            Origin::Env,
        ),
        _ => (RedisUrl::new(DEFAULT_URL).map_err(bad), Origin::Default),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_url_says_where_it_came_from() {
        let (url, origin) = redis_url(RedisUrlFrom::Flag(None), None);
        assert!(url.is_ok());
        assert_eq!(origin, Origin::Default);
        assert_eq!(
            origin.to_string(),
            "the default URL: no --redis, configuration or $REDIS_URL named one"
        );
        let from_env = |v: &str| redis_url(RedisUrlFrom::Env(Some(v.into())), None).1;
        assert_eq!(from_env("redis://h:1/"), Origin::Env);
        // An empty variable is no URL.
        assert_eq!(from_env("  "), Origin::Default);
        let (_, origin) = redis_url(RedisUrlFrom::Flag(Some("redis://h:1/".into())), None);
        assert_eq!(origin.to_string(), "the URL of --redis");
        let e = FromUrl {
            error: Error::Connect {
                target: "redis://127.0.0.1:6379".into(),
                reason: "Connection refused".into(),
            },
            origin: Origin::Default,
        };
        assert_eq!(
            e.to_string(),
            "cannot connect to redis://127.0.0.1:6379: Connection refused (the default URL: \
             no --redis, configuration or $REDIS_URL named one)"
        );
    }
}
