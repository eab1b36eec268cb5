//! Page-aligned message buffers, as OSU aligns its buffers: copy speed on these CPUs depends
//! heavily on the relative alignment of source and destination, so buffers that land wherever
//! malloc puts them would make results vary from run to run for no reason a user could see.

use std::alloc::{alloc_zeroed, dealloc, Layout};
use std::ops::{Deref, DerefMut};
use std::ptr::NonNull;

const PAGE: usize = 4096;

/// A zeroed, page-aligned byte buffer.
#[derive(Debug)]
pub struct PageBuf {
    ptr: NonNull<u8>,
    len: usize,
}

// SAFETY: PageBuf owns its allocation exclusively, like a Vec<u8>.
unsafe impl Send for PageBuf {}

impl PageBuf {
    /// Allocates `len` zeroed bytes on a page boundary. Aborts like `Vec` if memory runs out.
    pub fn new(len: usize) -> Self {
        let layout = Layout::from_size_align(len.max(1), PAGE).expect("buffer size fits a layout");
        // SAFETY: the layout has a non-zero size.
        let p = unsafe { alloc_zeroed(layout) };
        let ptr = NonNull::new(p).unwrap_or_else(|| std::alloc::handle_alloc_error(layout));
        PageBuf { ptr, len }
    }
}

impl Deref for PageBuf {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        // SAFETY: ptr is valid for len initialized (zeroed) bytes for our lifetime.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

impl DerefMut for PageBuf {
    fn deref_mut(&mut self) -> &mut [u8] {
        // SAFETY: as above, and &mut self gives exclusive access.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }
}

impl Drop for PageBuf {
    fn drop(&mut self) {
        let layout = Layout::from_size_align(self.len.max(1), PAGE).expect("same layout as new");
        // SAFETY: allocated in `new` with this layout.
        unsafe { dealloc(self.ptr.as_ptr(), layout) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffers_are_page_aligned_zeroed_and_writable() {
        for len in [0, 1, 4095, 4096, 1 << 20] {
            let mut b = PageBuf::new(len);
            assert_eq!(b.as_ptr() as usize % PAGE, 0);
            assert_eq!(b.len(), len);
            assert!(b.iter().all(|&x| x == 0));
            b.fill(7);
            assert!(b.iter().all(|&x| x == 7));
        }
    }
}
