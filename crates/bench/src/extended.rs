//! Support for the extended suite of Kutluğ (2000) chapter 3: each test is the latency test with
//! one thing changed, reported with its cost over the standard latency measured in the same run.

use crate::buf::PageBuf;

const PAGE: usize = 4096;

/// Size of the last-level cache (from sysfs; 32 MiB when it cannot be read).
pub fn llc_bytes() -> usize {
    let mut best = 0;
    for i in 0..8 {
        let dir = format!("/sys/devices/system/cpu/cpu0/cache/index{i}");
        let Ok(size) = std::fs::read_to_string(format!("{dir}/size")) else {
            break;
        };
        let t = size.trim();
        let (num, mult) = match t.as_bytes().last() {
            Some(b'K') => (&t[..t.len() - 1], 1 << 10),
            Some(b'M') => (&t[..t.len() - 1], 1 << 20),
            _ => (t, 1),
        };
        best = best.max(num.parse::<usize>().unwrap_or(0) * mult);
    }
    if best == 0 {
        32 << 20
    } else {
        best
    }
}

/// Send and receive pools for the buffer-management test, and the stride between buffers: a
/// whole number of pages plus one page, so no two buffers share a page, and enough buffers that
/// each pool is at least twice the last-level cache (a buffer is never still cached when its
/// turn comes again). Pages are written when allocated ([`PageBuf::new`]), so the timed loop pays
/// for address translation and cache misses, not for first-touch page faults.
pub fn fresh_pools(size: usize) -> (PageBuf, PageBuf, usize) {
    let (count, stride) = pool_layout(size);
    let send = PageBuf::new(count * stride);
    let recv = PageBuf::new(count * stride);
    (send, recv, stride)
}

/// Buffers per pool and the stride between them, for messages of `size` bytes.
fn pool_layout(size: usize) -> (usize, usize) {
    let stride = size.div_ceil(PAGE) * PAGE + PAGE;
    let count = (2 * llc_bytes()).div_ceil(stride).max(2);
    (count, stride)
}

/// Memory of [`fresh_pools`] for messages of `size` bytes (both pools).
pub fn fresh_pools_bytes(size: u64) -> u64 {
    let (count, stride) = pool_layout(size as usize);
    2 * count as u64 * stride as u64
}

/// Memory of [`scattered`] for `size` bytes in `k` segments.
pub fn scattered_bytes(size: u64, k: u32) -> u64 {
    let (k, stride) = scattered_layout(size as usize, k as usize);
    k as u64 * stride as u64
}

/// Segments (at least one, at most one per byte) and the stride between their starts.
fn scattered_layout(size: usize, k: usize) -> (usize, usize) {
    let k = k.clamp(1, size.max(1));
    let seg = size.div_ceil(k).max(1);
    (k, seg.div_ceil(PAGE) * PAGE + PAGE)
}

/// A message of `size` bytes as `k` segments scattered in memory: each segment starts on a page
/// of its own, a page after the previous one ends. Returns the memory and each segment's range.
pub fn scattered(size: usize, k: usize) -> (PageBuf, Vec<std::ops::Range<usize>>) {
    let (k, stride) = scattered_layout(size, k);
    let seg = size.div_ceil(k).max(1);
    let mut ranges = Vec::with_capacity(k);
    let mut left = size;
    for i in 0..k {
        let n = seg.min(left);
        ranges.push(i * stride..i * stride + n);
        left -= n;
    }
    let mem = PageBuf::new(k * stride);
    (mem, ranges)
}

/// Endpoint counts the conns test tries: 1, 2, 4 … up to `max`.
pub fn conn_counts(max: u32) -> Vec<u32> {
    (0..=20)
        .map(|p| 1u32 << p)
        .take_while(|&n| n <= max.max(1))
        .collect()
}

/// Open-file limit of this process (soft).
pub fn open_file_limit() -> u64 {
    let mut r = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit fills the struct we own.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut r) } != 0 {
        return 1024;
    }
    r.rlim_cur
}

/// Most segments a noncontig message is split into (the peer refuses more).
pub use commperf_transport::bounds::MAX_SEGMENTS;

/// Segment counts the noncontig test tries for a message of `size` bytes: 1, 2, 4 …
/// [`MAX_SEGMENTS`], as long as every segment keeps at least one byte.
pub fn segment_counts(size: u64) -> Vec<u32> {
    (0..=MAX_SEGMENTS.ilog2())
        .map(|p| 1u32 << p)
        .filter(|&k| k as u64 <= size.max(1))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scattered_segments_cover_the_size_on_pages_of_their_own() {
        let (mem, r) = scattered(10_000, 4);
        assert_eq!(r.iter().map(|x| x.len()).sum::<usize>(), 10_000);
        assert_eq!(r.len(), 4);
        assert!(r
            .windows(2)
            .all(|w| w[1].start >= w[0].end.div_ceil(PAGE) * PAGE + PAGE));
        assert!(r.iter().all(|x| x.start % PAGE == 0 && x.end <= mem.len()));
        assert_eq!(segment_counts(1), vec![1]);
        assert_eq!(segment_counts(5), vec![1, 2, 4]);
        assert_eq!(segment_counts(1 << 20), vec![1, 2, 4, 8, 16, 32, 64]);
    }

    #[test]
    fn pools_outgrow_the_cache_and_never_share_pages() {
        let llc = llc_bytes();
        assert!(llc >= 1 << 20, "an LLC of {llc} B is implausible");
        let (s, r, stride) = fresh_pools(100);
        assert_eq!(stride, 2 * PAGE);
        assert!(s.len() >= 2 * llc && r.len() == s.len());
        let (_, _, stride) = fresh_pools(8192);
        assert_eq!(stride, 3 * PAGE, "8 KiB buffers one page apart");
        assert_eq!(fresh_pools_bytes(100), (s.len() + r.len()) as u64);
        // What the session bound counts is what is allocated.
        let (mem, _) = scattered(10_000, 4);
        assert_eq!(scattered_bytes(10_000, 4), mem.len() as u64);
        assert_eq!(
            scattered_bytes(1 << 30, 64),
            64 * ((16 << 20) + PAGE as u64)
        );
    }
}
