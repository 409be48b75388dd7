//! The allocator's thresholds, set once at start. By default glibc's
//! malloc hands the free top of a heap back to the kernel once it exceeds
//! a threshold that starts at 128 KiB, and serves blocks above another
//! with mmap of their own. A batch's command and reply buffers, hundreds of
//! KiB made and freed by every batch on several threads, were so returned
//! and faulted in again, zeroed, for every batch: about a quarter of an
//! at-least-once `filter` run's CPU went to the kernel
//! (docs/BENCHMARKS.md). Fixed thresholds keep them; the peak memory is
//! the same, as the largest batch needs it anyway.

/// Keeps freed batch buffers in the process (see the module's docs).
#[cfg(all(target_os = "linux", target_env = "gnu"))]
pub fn keep_batch_buffers() {
    use nix::libc::{mallopt, M_MMAP_THRESHOLD, M_TRIM_THRESHOLD};
    // 32 MiB is the largest mmap threshold glibc takes on 64-bit systems;
    // up to twice that may stay free at the top of a heap.
    // SAFETY: mallopt only sets the allocator's parameters; it is called
    // first thing in main, before any other thread exists.
    unsafe {
        mallopt(M_MMAP_THRESHOLD, 32 << 20);
        mallopt(M_TRIM_THRESHOLD, 64 << 20);
    }
}

/// Other allocators keep their buffers as they see fit.
#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
pub fn keep_batch_buffers() {}
