//! Where Redis is: URLs whose password never shows, and the environment
//! variable a configuration may name instead of writing one down.

use crate::redact::Secrets;
use std::fmt;

/// A Redis URL whose password is never shown: `Display` and `Debug` print
/// it with the credentials replaced by `***`. Use
/// [`expose`](Self::expose) only to connect.
///
/// ```
/// use rotabloom::config::RedisUrl;
/// let url = RedisUrl::new("redis://:hunter2@db:6379/0").unwrap();
/// assert_eq!(url.to_string(), "redis://***@db:6379/0");
/// assert!(!format!("{url:?}").contains("hunter2"));
/// assert!(RedisUrl::new("http://db").is_err());
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct RedisUrl(String);

impl RedisUrl {
    /// Checks that `url` is a URL the `redis` crate can connect to. The
    /// error message does not repeat the URL.
    pub fn new(url: impl Into<String>) -> Result<RedisUrl, String> {
        let url = url.into().trim().to_string();
        crate::connect::Target::parse(&url, Default::default())?;
        Ok(RedisUrl(url))
    }

    /// The target this URL names, with TLS settings `tls`.
    pub fn target(
        &self,
        tls: crate::connect::TlsOptions,
    ) -> Result<crate::connect::Target, String> {
        crate::connect::Target::parse(&self.0, tls)
    }

    /// The URL with its password, to connect. Never print it.
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// The password in the URL, if any (the data nodes'), so a program
    /// can scrub it from text it did not produce itself.
    pub fn password(&self) -> Option<String> {
        let info = redis::IntoConnectionInfo::into_connection_info(self.0.as_str()).ok()?;
        info.redis_settings()
            .password()
            .map(str::to_string)
            .filter(|p| !p.is_empty())
    }

    /// The secrets of this URL, to scrub from messages of servers and
    /// libraries that may echo them outside the URL.
    ///
    /// ```
    /// use rotabloom::config::RedisUrl;
    /// let url = RedisUrl::new("redis://:hunter2@db:6379/0").unwrap();
    /// assert_eq!(url.secrets().redact("bad password hunter2"), "bad password ***");
    /// ```
    pub fn secrets(&self) -> Secrets {
        self.target(Default::default())
            .map(|t| t.secrets().clone())
            .unwrap_or_default()
    }
}

/// `text` with the credentials of every URL in it replaced by `***`,
/// including `pass=` / `password=` query parameters.
///
/// ```
/// use rotabloom::config::redact;
/// assert_eq!(redact("redis://u:pw@h/0"), "redis://***@h/0");
/// assert_eq!(redact("unix:///tmp/r.sock?db=1&pass=pw"), "unix:///tmp/r.sock?db=1&pass=***");
/// ```
pub fn redact(text: &str) -> String {
    crate::redact::redact_urls(text)
}

impl fmt::Display for RedisUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&redact(&self.0))
    }
}

impl fmt::Debug for RedisUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "RedisUrl({:?})", redact(&self.0))
    }
}

/// Where the configuration says Redis is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RedisSetting {
    /// `redis_url`: the URL itself.
    Url(RedisUrl),
    /// `redis_url_env`: the name of an environment variable holding it.
    Env(String),
}

impl RedisSetting {
    /// `redis_url_env = NAME`, if NAME can name a variable.
    pub(super) fn env(name: String) -> Result<RedisSetting, String> {
        if name.is_empty() || name.contains(['=', '\0']) {
            return Err(format!("{name:?} is not an environment variable name"));
        }
        Ok(RedisSetting::Env(name))
    }

    /// The URL, read from the environment when the setting names a
    /// variable; the error does not repeat the variable's value.
    pub(super) fn resolve(&self) -> Result<RedisUrl, String> {
        let var = match self {
            RedisSetting::Url(u) => return Ok(u.clone()),
            RedisSetting::Env(var) => var,
        };
        match std::env::var(var) {
            Ok(v) if !v.trim().is_empty() => RedisUrl::new(v)
                .map_err(|m| format!("environment variable {var} holds a value that is {m}")),
            Ok(_) => Err(format!("environment variable {var} is empty")),
            Err(std::env::VarError::NotPresent) => {
                Err(format!("environment variable {var} is not set"))
            }
            Err(std::env::VarError::NotUnicode(_)) => {
                Err(format!("environment variable {var} is not UTF-8"))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::RedisUrl;

    #[test]
    fn debug_hides_the_password() {
        assert_eq!(
            format!("{:?}", RedisUrl::new("redis://:pw@h:1/").unwrap()),
            "RedisUrl(\"redis://***@h:1/\")"
        );
        assert_eq!(
            RedisUrl::new("redis://h:1/").unwrap().secrets(),
            Default::default()
        );
    }
}
