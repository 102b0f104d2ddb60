//! Zeroed buffers for large values (a large object, or a read buffer
//! holding one on its way in), backed by transparent huge pages where the
//! kernel offers them.
//!
//! A buffer this big comes fresh from `mmap` (the allocator does not reuse
//! heap for it), so every 4 KiB page of it faults once when first written:
//! 32,768 faults for a 128 MiB value, most of the time a large `set` took
//! (BENCHMARKS.md, "Large values"). With `MADV_HUGEPAGE` the kernel maps
//! 2 MiB pages instead, 512 times fewer faults. Distributions ship THP in
//! `madvise` mode (Debian: `/sys/kernel/mm/transparent_hugepage/enabled`
//! is `always [madvise] never`), where nothing uses huge pages unless asked.
//!
//! The advice covers only the whole 2 MiB extents inside the buffer, so it
//! never makes the process hold memory the buffer does not span: RSS stays
//! what `-m` and the connection budget count.

/// Buffers at least this long are advised (smaller ones hold no whole
/// huge page worth asking for).
const HUGE_PAGE: usize = 2 << 20;

/// `n` zeroed bytes; see the module docs.
pub fn zeroed(n: usize) -> Box<[u8]> {
    let buf = vec![0u8; n].into_boxed_slice();
    if n >= 2 * HUGE_PAGE {
        advise_huge_pages(&buf);
    }
    buf
}

/// Asks the kernel to back the whole huge pages inside `buf` with huge
/// pages. Advice only: on failure (THP disabled, an old kernel) the buffer
/// simply keeps 4 KiB pages.
#[cfg(target_os = "linux")]
fn advise_huge_pages(buf: &[u8]) {
    let start = buf.as_ptr() as usize;
    let first = start.next_multiple_of(HUGE_PAGE);
    let end = (start + buf.len()) / HUGE_PAGE * HUGE_PAGE;
    if end > first {
        // SAFETY: `first..end` lies inside `buf`, a live allocation we own,
        // and is page-aligned as madvise requires. MADV_HUGEPAGE changes how
        // the kernel backs those pages, never their contents (zero until
        // written) or their validity, so no Rust reference is affected.
        unsafe {
            libc::madvise(first as *mut libc::c_void, end - first, libc::MADV_HUGEPAGE);
        }
    }
}

#[cfg(not(target_os = "linux"))]
fn advise_huge_pages(_buf: &[u8]) {}

#[cfg(test)]
mod tests {
    use super::*;

    /// Exercises the `madvise` call: the advised buffer is zeroed, fully
    /// writable and reads back what was written, at sizes and offsets that
    /// put the aligned extent at different places.
    #[test]
    fn advised_buffers_are_zeroed_and_keep_what_is_written() {
        for n in [2 * HUGE_PAGE, 2 * HUGE_PAGE + 4097, 9 * HUGE_PAGE - 1] {
            let mut b = zeroed(n);
            assert_eq!(b.len(), n);
            assert!(b.iter().all(|&x| x == 0), "zeroed");
            for (i, x) in b.iter_mut().enumerate() {
                *x = (i % 251) as u8;
            }
            assert!(b.iter().enumerate().all(|(i, &x)| x == (i % 251) as u8));
        }
        assert_eq!(zeroed(10).len(), 10);
    }
}
