//! The handle's memory of the filter between operations, shared by a handle
//! and its clones: the latest view (a cache for the next operation; every
//! operation keeps its own snapshot), and what it learnt once so as not to
//! do or say it again (the generation allocated ahead of need, the warning
//! given, that the server lets it `WATCH`). Nothing here ever decides an
//! answer: a clear or a rotation elsewhere cannot make it wrong.

use crate::view::View;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

#[derive(Debug)]
pub(crate) struct Memory {
    latest: Mutex<Arc<View>>,
    /// 1 + the seq of the last generation allocated ahead of need.
    preallocated: AtomicU64,
    /// 1 + the seq of the last deciding generation warned about as full.
    warned: AtomicU64,
    /// Whether the server accepted `WATCH`: a transaction is pipelined in
    /// one piece, so a refused `WATCH` would let it run unguarded; the
    /// first one is preceded by a `WATCH` alone.
    watch_ok: AtomicBool,
}

impl Memory {
    pub fn new(view: View) -> Memory {
        Memory {
            latest: Mutex::new(Arc::new(view)),
            preallocated: AtomicU64::new(0),
            warned: AtomicU64::new(0),
            watch_ok: AtomicBool::new(false),
        }
    }

    /// The latest view any clone loaded. A poisoned lock still holds a
    /// valid `Arc`, so it is used rather than propagated as a panic.
    pub fn view(&self) -> Arc<View> {
        Arc::clone(&crate::poison::lock(&self.latest))
    }

    /// Makes `view` the latest.
    pub fn remember(&self, view: Arc<View>) {
        *crate::poison::lock(&self.latest) = view;
    }

    /// Marks generation `seq` as allocated ahead of need; false if it
    /// already was.
    pub fn claim_prealloc(&self, seq: u64) -> bool {
        Self::first(&self.preallocated, seq)
    }

    /// Whether generation `seq` was not warned about yet; from now on it
    /// has been.
    pub fn first_warning(&self, seq: u64) -> bool {
        Self::first(&self.warned, seq)
    }

    pub fn watch_ok(&self) -> bool {
        self.watch_ok.load(Ordering::Relaxed)
    }

    pub fn set_watch_ok(&self) {
        self.watch_ok.store(true, Ordering::Relaxed);
    }

    /// Whether `mark` did not hold `seq` yet; it does afterwards.
    fn first(mark: &AtomicU64, seq: u64) -> bool {
        let m = seq.saturating_add(1);
        mark.swap(m, Ordering::Relaxed) != m
    }
}
