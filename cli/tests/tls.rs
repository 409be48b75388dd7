//! TLS: the library's functional suites and the command line over
//! `rediss://`, with a CA file, the system's trust store
//! (`SSL_CERT_FILE`) and mutual TLS; certificate failures are one line,
//! exit code 3.

#[path = "support/bin.rs"]
mod bin;
#[path = "../../tests/support/harness.rs"]
mod harness;
#[path = "../../tests/support/suite.rs"]
mod suite;

use bin::{rb, rotabloom};
use harness::{RedisServer, TlsFiles};
use rotabloom::connect::{Target, TlsOptions};

fn options(files: &TlsFiles, client_cert: bool) -> TlsOptions {
    TlsOptions {
        ca_file: Some(files.ca.clone()),
        cert_file: client_cert.then(|| files.client_cert.clone()),
        key_file: client_cert.then(|| files.client_key.clone()),
        insecure: false,
    }
}

#[test]
fn library_over_mutual_tls() {
    let files = TlsFiles::make();
    let server = RedisServer::start_tls(&files, true, &[]);
    let target = Target::parse(&server.url(), options(&files, true)).unwrap();
    assert!(target.is_tls());
    suite::suites_over(&target, "tls");

    // No client certificate, or a CA that did not sign the server's.
    let no_cert = Target::parse(&server.url(), options(&files, false)).unwrap();
    let e = no_cert.connect().unwrap_err().to_string();
    assert!(
        e.starts_with("cannot connect to rediss://127.0.0.1:"),
        "{e}"
    );
    let wrong_ca = TlsOptions {
        ca_file: Some(files.other_ca.clone()),
        ..options(&files, true)
    };
    let e = Target::parse(&server.url(), wrong_ca)
        .unwrap()
        .connect()
        .unwrap_err()
        .to_string();
    assert!(e.contains("certificate"), "{e}");
}

#[test]
fn command_line_over_tls() {
    let files = TlsFiles::make();
    let path = |p: &std::path::Path| p.to_str().unwrap().to_string();
    let (ca, cert, key) = (
        path(&files.ca),
        path(&files.client_cert),
        path(&files.client_key),
    );

    // Server certificates only: the CA from a flag, from the system's trust
    // store (SSL_CERT_FILE), from the configuration.
    let server = RedisServer::start_tls(&files, false, &[]);
    let url = server.url();
    let dir = tempdir(&files);
    bin::every_subcommand(&["--redis", &url, "--tls-ca", &ca], &dir);
    let out = rotabloom(&["--redis", &url, "status"], &[("SSL_CERT_FILE", &ca)], b"").ok();
    assert!(out.stdout.contains("b0"), "{out:?}");
    let toml = format!("[defaults]\nredis_url = \"{url}\"\ntls_ca_file = \"{ca}\"\n");
    bin::with_config(&dir, &toml, &["check", "b0", "x"]).ok();

    // A CA that did not sign the server's certificate; a plain-text URL
    // to a TLS port; insecure mode warns on every run.
    let other = path(&files.other_ca);
    let out = rb(&["--redis", &url, "--tls-ca", &other, "status"]);
    let line = out.failed(3);
    assert!(
        line.starts_with(&format!("rotabloom: cannot connect to {url}: ")),
        "{line}"
    );
    assert!(line.contains("certificate"), "{line}");
    let out = rb(&["--redis", &url, "--tls-insecure", "check", "b0", "x"]).ok();
    assert!(
        out.stderr.starts_with("rotabloom: warning: insecure TLS"),
        "{out:?}"
    );
    // Once a run, however many connections it makes (one per worker here).
    let args = ["--redis", &url, "--tls-insecure", "--in-flight", "3"];
    let out = rotabloom(
        &[&args[..], &["load", "b0", "-"]].concat(),
        &[],
        b"a\nb\nc\n",
    )
    .ok();
    assert_eq!(out.stderr.matches("insecure TLS").count(), 1, "{out:?}");
    let out = rb(&[
        "--redis",
        &url.replace("rediss", "redis"),
        "--tls-ca",
        &ca,
        "status",
    ]);
    assert!(out.failed(2).contains("use rediss://"), "{out:?}");

    // Mutual TLS: the client certificate from flags, or from the
    // environment; without it, one line and exit 3.
    let mtls = RedisServer::start_tls(&files, true, &[]);
    let url = mtls.url();
    let flags = [
        "--redis",
        &url,
        "--tls-ca",
        &ca,
        "--tls-cert",
        &cert,
        "--tls-key",
        &key,
    ];
    let mut args = flags.to_vec();
    args.extend(["create", "m", "--kind", "bloom", "--capacity", "100"]);
    rb(&args).ok();
    let env = [
        ("ROTABLOOM_TLS_CA", ca.as_str()),
        ("ROTABLOOM_TLS_CERT", cert.as_str()),
        ("ROTABLOOM_TLS_KEY", key.as_str()),
    ];
    rotabloom(&["--redis", &url, "add", "m", "item"], &env, b"").ok();
    let out = rotabloom(&["--redis", &url, "check", "m", "item"], &env, b"").ok();
    assert_eq!(out.stdout, "item\n");
    let out = rb(&["--redis", &url, "--tls-ca", &ca, "check", "m", "item"]);
    let line = out.failed(3);
    assert!(
        line.starts_with(&format!("rotabloom: cannot connect to {url}: ")),
        "{line}"
    );
    let mut args = flags[..6].to_vec();
    args.push("status");
    let out = rb(&args);
    assert!(out.failed(2).contains("needs its key"), "{out:?}");
}

/// A directory for the test's own files, inside the certificates' one.
fn tempdir(files: &TlsFiles) -> std::path::PathBuf {
    let dir = files.ca.parent().unwrap().join("work");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}
