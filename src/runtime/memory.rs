//! Giving memory back when the team rests. A burst of many workers leaves the allocator
//! holding freed memory it would otherwise keep for the life of the process.

/// Returns freed heap pages to the operating system (glibc keeps them by default).
pub fn release_free_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only walks the allocator's own free lists; it has no
    // preconditions and is safe to call from any thread at any time.
    unsafe {
        libc::malloc_trim(0);
    }
}
