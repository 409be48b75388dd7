//! Small helpers shared by the examples (not an example itself: Cargo only
//! builds `examples/*.rs` and `examples/*/main.rs`).
#![allow(dead_code)]

use std::time::{SystemTime, UNIX_EPOCH};

/// A tiny deterministic pseudo-random generator (SplitMix64), so every run
/// of an example sees the same data and prints the same numbers.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (n > 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }

    /// Picks one element of a non-empty slice.
    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len() as u64) as usize]
    }
}

/// A filter name for this run. On the private server the examples start,
/// the plain `tag` is used; on a shared server (`REDIS_URL`) the name gets
/// the process id and a timestamp so concurrent runs do not collide.
pub fn filter_name(tag: &str, private: bool) -> String {
    if private {
        return tag.to_string();
    }
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    format!("{tag}-{}-{nanos}", std::process::id())
}

/// `1536` -> `"1.5 KiB"`.
pub fn human_bytes(bytes: f64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = bytes;
    let mut unit = 0;
    while v >= 1024.0 && unit + 1 < UNITS.len() {
        v /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{v:.0} {}", UNITS[0])
    } else {
        format!("{v:.1} {}", UNITS[unit])
    }
}

/// Where the example's Redis is, for the first line of output.
pub fn describe_redis(url: &str, private: bool) -> String {
    if private {
        format!("private redis-server started for this example at {url} (stopped on exit)")
    } else {
        format!(
            "using REDIS_URL={} (keys are named uniquely and deleted at the end)",
            rotabloom::redact_urls(url)
        )
    }
}

/// `1234567` -> `"1,234,567"`.
pub fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}
