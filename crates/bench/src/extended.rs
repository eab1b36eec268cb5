//! Support for the extended suite of seed 004 chapter 3: each test is the latency test with one
//! thing changed, reported with its cost over the standard latency measured in the same run.

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
/// turn comes again). Pages are touched here, so the timed loop pays for address translation and
/// cache misses, not for first-touch page faults.
pub fn fresh_pools(size: usize) -> (PageBuf, PageBuf, usize) {
    let stride = size.div_ceil(PAGE) * PAGE + PAGE;
    let count = (2 * llc_bytes()).div_ceil(stride).max(2);
    let mut send = PageBuf::new(count * stride);
    let mut recv = PageBuf::new(count * stride);
    send.fill(0x5A);
    recv.fill(0xA5);
    (send, recv, stride)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pools_outgrow_the_cache_and_never_share_pages() {
        let llc = llc_bytes();
        assert!(llc >= 1 << 20, "an LLC of {llc} B is implausible");
        let (s, r, stride) = fresh_pools(100);
        assert_eq!(stride, 2 * PAGE);
        assert!(s.len() >= 2 * llc && r.len() == s.len());
        let (_, _, stride) = fresh_pools(8192);
        assert_eq!(stride, 3 * PAGE, "8 KiB buffers one page apart");
    }
}
