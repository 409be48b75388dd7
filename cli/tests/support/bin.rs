//! The `rotabloom` binary run from a test: arguments, environment and
//! standard input in; exit code and output out.
#![allow(dead_code)]

use std::io::Write;
use std::process::{Command, Stdio};

/// What one run of the binary did.
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl std::fmt::Debug for Run {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "exit {}\n[stdout]\n{}[stderr]\n{}",
            self.code, self.stdout, self.stderr
        )
    }
}

impl Run {
    /// Asserts success.
    pub fn ok(self) -> Run {
        assert_eq!(self.code, 0, "{self:?}");
        self
    }

    /// Asserts exit code `code`, nothing on standard output and one line
    /// on standard error; returns that line.
    pub fn failed(&self, code: i32) -> &str {
        assert_eq!(self.code, code, "{self:?}");
        assert!(self.stdout.is_empty(), "{self:?}");
        let lines: Vec<&str> = self.stderr.lines().collect();
        assert_eq!(lines.len(), 1, "{self:?}");
        assert!(lines[0].starts_with("rotabloom: "), "{self:?}");
        lines[0]
    }
}

/// Runs `rotabloom ARGS` with the environment variables `env` added (and
/// no `REDIS_URL` nor `ROTABLOOM_TLS_*` of the caller's), feeding `stdin`.
pub fn rotabloom(args: &[&str], env: &[(&str, &str)], stdin: &[u8]) -> Run {
    let mut c = Command::new(env!("CARGO_BIN_EXE_rotabloom"));
    c.args(args);
    for var in [
        "REDIS_URL",
        "ROTABLOOM_TLS_CA",
        "ROTABLOOM_TLS_CERT",
        "ROTABLOOM_TLS_KEY",
        "ROTABLOOM_TLS_INSECURE",
    ] {
        c.env_remove(var);
    }
    c.envs(env.iter().copied())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = c.spawn().expect("spawn rotabloom");
    let mut input = child.stdin.take().unwrap();
    let data = stdin.to_vec();
    let writer = std::thread::spawn(move || {
        let _ = input.write_all(&data);
    });
    let o = child.wait_with_output().expect("wait for rotabloom");
    writer.join().unwrap();
    Run {
        code: o.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
    }
}

/// The number N in an at-least-once run's warning "the answers of N
/// lines (items) were lost with a reply", if it gave one.
pub fn lost_answers(stderr: &str) -> Option<u64> {
    let at = stderr.find("the answers of ")?;
    stderr[at + "the answers of ".len()..]
        .split(' ')
        .next()?
        .replace(',', "")
        .parse()
        .ok()
}

/// A running `rotabloom --redis URL EXTRA... filter NAME --batch 250`, its
/// three streams piped, for tests that feed it and read it as it goes.
pub fn spawn_filter(url: &str, extra: &[&str], name: &str) -> std::process::Child {
    let mut args = vec!["--redis", url];
    args.extend_from_slice(extra);
    args.extend_from_slice(&["filter", name, "--batch", "250"]);
    Command::new(env!("CARGO_BIN_EXE_rotabloom"))
        .args(&args)
        .env_remove("REDIS_URL")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn rotabloom filter")
}

/// `rotabloom ARGS` with no extra environment and empty input.
pub fn rb(args: &[&str]) -> Run {
    rotabloom(args, &[], b"")
}

/// `rotabloom --config DIR/rotabloom.toml ARGS`, the file holding `toml`.
pub fn with_config(dir: &std::path::Path, toml: &str, args: &[&str]) -> Run {
    let cfg = dir.join("rotabloom.toml");
    std::fs::write(&cfg, toml).unwrap();
    let mut all = vec!["--config", cfg.to_str().unwrap()];
    all.extend_from_slice(args);
    rb(&all)
}

/// The part of every subcommand a test of a deployment runs: create each
/// kind, add, check, filter, load, status (text and JSON), rotate (by hand
/// and as due), drop. `base` goes before every command's arguments
/// (`--redis URL`, TLS flags...).
pub fn every_subcommand(base: &[&str], dir: &std::path::Path) {
    let run = |args: &[&str]| {
        let mut all = base.to_vec();
        all.extend_from_slice(args);
        rb(&all)
    };
    let run_in = |args: &[&str], stdin: &[u8]| {
        let mut all = base.to_vec();
        all.extend_from_slice(args);
        rotabloom(&all, &[], stdin)
    };
    // Several names, so that a cluster holds filters on several nodes.
    let names = ["b0", "b1", "b2", "b3", "b4", "b5"];
    for name in names {
        run(&["create", name, "--kind", "bloom", "--capacity", "1000"]).ok();
    }
    run(&["create", "grow", "--kind", "expanding", "--capacity", "100"]).ok();
    run(&[
        "create",
        "circ",
        "--kind",
        "circular",
        "--generations",
        "2",
        "--capacity",
        "10000",
        "--every",
        "daily@00:00",
    ])
    .ok();
    let out = run(&["add", "b0", "x", "y"]).ok();
    assert!(out.stderr.is_empty(), "{out:?}");
    let out = run(&["check", "b0", "x", "z"]).ok();
    assert_eq!(out.stdout, "x\n");
    assert_eq!(run(&["check", "b0", "z"]).code, 1);
    let out = run_in(&["filter", "grow"], b"a\nb\na\nc\n").ok();
    assert_eq!(out.stdout, "a\nb\nc\n");
    let file = dir.join("items.txt");
    let items: String = (0..500).map(|i| format!("item-{i}\n")).collect();
    std::fs::write(&file, items).unwrap();
    let out = run(&["load", "circ", file.to_str().unwrap()]).ok();
    assert!(out.stdout.contains("loaded 500 items"), "{out:?}");
    let out = run(&["check", "--absent", "circ", "item-1", "new"]).ok();
    assert_eq!(out.stdout, "new\n");
    let out = run(&["status"]).ok();
    for name in names.iter().chain(&["grow", "circ"]) {
        assert!(out.stdout.contains(name), "{name}: {out:?}");
    }
    let out = run(&["status", "--json"]).ok();
    let json: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(json["filters"].as_array().map(Vec::len), Some(8), "{json}");
    run(&["rotate", "circ"]).ok();
    run(&["rotate", "--if-due"]).ok();
    run(&["drop", "b1", "--yes"]).ok();
    let out = run(&["status", "--json"]).ok();
    let json: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(json["filters"].as_array().map(Vec::len), Some(7), "{json}");
}

/// `rotabloom --redis URL create NAME SETTINGS...`, which must succeed.
pub fn create(url: &str, name: &str, settings: &[&str]) {
    let mut args = vec!["--redis", url, "create", name];
    args.extend_from_slice(settings);
    rb(&args).ok();
}

/// Creates base filter `name` for a million items at 1e-6 behind `url`:
/// room enough that a test's lines are never taken for one another.
pub fn create_roomy(url: &str, name: &str) {
    create_roomy_with(url, name, &[]);
}

/// [`create_roomy`] with `more` settings (`--shards 6`...).
pub fn create_roomy_with(url: &str, name: &str, more: &[&str]) {
    let settings = ["--kind", "bloom", "--capacity", "1M"];
    create(
        url,
        name,
        &[&settings[..], &["--error-rate", "0.000001"], more].concat(),
    );
}

/// A running `rotabloom ARGS`, its three streams piped, for tests that
/// feed it and read it as it goes.
pub fn spawn(args: &[&str]) -> std::process::Child {
    Command::new(env!("CARGO_BIN_EXE_rotabloom"))
        .args(args)
        .env_remove("REDIS_URL")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn rotabloom")
}

/// Waits for `child` and returns what it did.
pub fn finish(child: std::process::Child) -> Run {
    let o = child.wait_with_output().expect("wait for rotabloom");
    Run {
        code: o.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
    }
}

/// Waits until `ready` holds, failing the test after `secs` seconds.
pub fn wait_until(secs: u64, what: &str, mut ready: impl FnMut() -> bool) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(secs);
    while !ready() {
        assert!(
            std::time::Instant::now() < deadline,
            "no {what} within {secs} s"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}
