//! Filter instance ids: 16 hex digits, unique per creation, so that keys of
//! a dropped and re-created filter never collide with the old ones and a
//! client holding a view of the old instance is refused.

use md5::{Digest, Md5};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

static COUNTER: AtomicU64 = AtomicU64::new(0);

/// 64 random bits from the operating system, as 16 lowercase hex digits.
pub(crate) fn new_uid() -> String {
    let bits = getrandom::u64().unwrap_or_else(|_| fallback());
    format!("{bits:016x}")
}

/// Where the operating system has no random source: the time, the process,
/// a counter and the thread, hashed.
fn fallback() -> u64 {
    let mut h = Md5::new();
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    h.update(nanos.to_le_bytes());
    h.update(std::process::id().to_le_bytes());
    h.update(COUNTER.fetch_add(1, Ordering::Relaxed).to_le_bytes());
    h.update(format!("{:?}", std::thread::current().id()).as_bytes());
    let mut first = [0u8; 8];
    first.copy_from_slice(&h.finalize()[..8]);
    u64::from_le_bytes(first)
}

#[cfg(test)]
mod tests {
    #[test]
    fn uids_differ() {
        let a = super::new_uid();
        let b = super::new_uid();
        for u in [&a, &b] {
            assert_eq!(u.len(), 16);
            assert!(
                u.bytes().all(|c| matches!(c, b'0'..=b'9' | b'a'..=b'f')),
                "{u}"
            );
        }
        assert_ne!(a, b);
        let f = format!("{:016x}", super::fallback());
        assert_eq!(f.len(), 16);
        assert_ne!(super::fallback(), super::fallback());
    }
}
