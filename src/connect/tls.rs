//! The TLS settings beyond a URL's `rediss`, and the certificate files
//! they name, read and checked when a target is parsed.

use redis::TlsCertificates;
use std::path::{Path, PathBuf};

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
    pub(super) fn is_set(&self) -> bool {
        self.ca_file.is_some()
            || self.cert_file.is_some()
            || self.key_file.is_some()
            || self.insecure
    }

    /// The files read, checked for what they must hold.
    pub(super) fn load(&self) -> Result<Option<TlsCertificates>, String> {
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
