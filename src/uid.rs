//! Filter instance ids: 16 hex digits, unique per creation, so that keys of
//! a dropped and re-created filter never collide with the old ones and a
//! client holding a view of the old instance is refused.

use md5::{Digest, Md5};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

static COUNTER: AtomicU64 = AtomicU64::new(0);

pub(crate) fn new_uid() -> String {
    let mut h = Md5::new();
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    h.update(nanos.to_le_bytes());
    h.update(std::process::id().to_le_bytes());
    h.update(COUNTER.fetch_add(1, Ordering::Relaxed).to_le_bytes());
    h.update(format!("{:?}", std::thread::current().id()).as_bytes());
    let local = 0u8;
    h.update((&local as *const u8 as usize).to_le_bytes());
    h.finalize()[..8]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn uids_differ() {
        let a = super::new_uid();
        let b = super::new_uid();
        assert_eq!(a.len(), 16);
        assert_ne!(a, b);
    }
}
