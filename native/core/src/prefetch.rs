//! A hint to the CPU to start loading memory that is about to be used, so that several cache (and
//! TLB) misses overlap instead of each stalling in turn. The commit log needs it where it touches
//! memory scattered far apart: a read by LMQ visits records spread over the whole log, an append
//! updates the index of a different queue for each record.

/// Starts loading the cache line holding `address` into every cache level. Never faults and never
/// reads Rust-visible memory, so any address will do (a wrong one only wastes the hint); a no-op
/// where the architecture has no such instruction in stable Rust.
#[inline(always)]
pub fn prefetch(address: *const u8) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: PREFETCHT0 is in SSE, part of every x86-64 CPU; it is a hint that cannot fault or
    // change memory, whatever the address.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(address.cast());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = address;
}

/// Prefetches the cache lines of `bytes` from `start`, at most `limit` bytes of them.
#[inline]
pub fn prefetch_range(bytes: &[u8], start: usize, limit: usize) {
    const LINE: usize = 64;
    let end = bytes.len().min(start.saturating_add(limit));
    let mut at = start - start % LINE;
    while at < end {
        prefetch(bytes[at..].as_ptr());
        at += LINE;
    }
}
