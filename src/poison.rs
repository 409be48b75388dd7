//! Taking a lock whoever panicked while holding it.
//!
//! The library's locks guard values that are replaced whole or kept
//! consistent by their own methods (the latest view, the mirror's index,
//! a test clock), so a thread that panicked holding one cannot have left
//! it half-written: the value is used rather than the panic spread to
//! every other thread of the crawler.

use std::sync::{Mutex, MutexGuard};

/// The guard of `m`, poisoned or not.
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    #[test]
    fn a_poisoned_lock_still_gives_its_value() {
        let m = Arc::new(Mutex::new(7));
        let m2 = Arc::clone(&m);
        let _ = std::thread::spawn(move || {
            let _g = m2.lock().unwrap();
            panic!("poison it");
        })
        .join();
        assert!(m.is_poisoned());
        assert_eq!(*super::lock(&m), 7);
    }
}
