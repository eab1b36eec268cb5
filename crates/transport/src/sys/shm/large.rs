//! The large-message path: fragmenting a message through the ring and reassembling it, and the
//! single-copy rendezvous.
//!
//! Why it looks like this:
//! - **Large messages** either pipeline through the ring in fragments (two copies, overlapped on
//!   two cores) or go single-copy: the sender posts a rendezvous record with its buffer address
//!   and the receiver pulls the bytes with `process_vm_readv` (Linux CMA), then bumps a
//!   completion counter the sender waits on.

use crate::{Fragment, RecvInfo, Side, Tag, TransportError};
use std::io;
use std::sync::atomic::Ordering;

use super::endpoint::ShmEndpoint;
use super::ring::{Incoming, Piece, KIND_FRAG, KIND_RNDV, KIND_WHOLE, SIDE_FLAG};

impl ShmEndpoint {
    /// Payload bytes of the piece of a `total`-byte message that starts at `off`, and the size
    /// of its record (with the side value when `side` and it is the last piece).
    pub(super) fn piece_plan(&self, total: usize, off: usize, side: bool) -> (usize, u64) {
        let frag = self.frag_for(total);
        let n = if total <= frag {
            total
        } else {
            (total - off).min(frag)
        };
        (n, Self::record_bytes_for(n, side && off + n >= total))
    }

    /// Tries to put the next piece of an outgoing ring message; returns bytes written or None.
    /// The last piece carries the side value, if any, computed just before it is published.
    pub(super) fn try_put_piece<S: FnOnce() -> Side>(
        &mut self,
        tag: Tag,
        total: usize,
        off: usize,
        fill: &mut impl FnMut(usize, &mut [u8]),
        side: &mut Option<S>,
    ) -> Option<usize> {
        let whole = total <= self.frag_for(total);
        let (n, rec) = self.piece_plan(total, off, side.is_some());
        let with_side = side.is_some() && off + n >= total;
        let need = self.room_needed(rec);
        if !self.has_room(need) {
            return None;
        }
        let r = self.reserve(rec);
        let kind = if whole { KIND_WHOLE } else { KIND_FRAG };
        let flag = if with_side { SIDE_FLAG } else { 0 };
        Self::write_header(r, total, tag, kind | flag, n);
        // SAFETY: the reserved record has room for n payload bytes; we own it until publish.
        let piece = unsafe { std::slice::from_raw_parts_mut(r.payload_for(n, with_side), n) };
        fill(off, piece);
        if with_side {
            if let Some(f) = side.take() {
                r.set_side(f());
            }
        }
        self.publish(r, rec);
        Some(n)
    }

    pub(super) fn ring_send<S: FnOnce() -> Side>(
        &mut self,
        tag: Tag,
        len: usize,
        mut fill: impl FnMut(usize, &mut [u8]),
        mut side: Option<S>,
    ) -> Result<(), TransportError> {
        let mut off = 0;
        loop {
            match self.try_put_piece(tag, len, off, &mut fill, &mut side) {
                Some(n) => {
                    off += n;
                    if off >= len {
                        return Ok(());
                    }
                }
                None => {
                    let (_, rec) = self.piece_plan(len, off, side.is_some());
                    let need = self.room_needed(rec);
                    let (tail, cap) = (self.tail, self.cap);
                    self.wait_until(off > 0, |s| {
                        cap - (tail - s.peer().head.0.load(Ordering::Acquire)) >= need
                    })?;
                }
            }
        }
    }

    /// Posts a rendezvous record for `data`; the caller then waits for `rndv_done`.
    pub(super) fn try_post_rndv(&mut self, tag: Tag, data: &[u8], side: Option<Side>) -> bool {
        let rec = Self::record_bytes_for(8, side.is_some());
        let need = self.room_needed(rec);
        if !self.has_room(need) {
            return false;
        }
        let r = self.reserve(rec);
        let flag = if side.is_some() { SIDE_FLAG } else { 0 };
        Self::write_header(r, data.len(), tag, KIND_RNDV | flag, 8);
        let at = r.payload_for(8, side.is_some());
        // SAFETY: 8 payload bytes reserved at `at`.
        unsafe { std::ptr::write_unaligned(at as *mut u64, data.as_ptr() as u64) };
        if let Some(v) = side {
            r.set_side(v);
        }
        self.rndv_sent += 1;
        self.publish(r, rec);
        true
    }

    pub(super) fn rndv_complete(&self) -> bool {
        self.peer().rndv_done.0.load(Ordering::Acquire) >= self.rndv_sent
    }

    /// Delivers the ring message whose first record is `first`, piece by piece; returns the
    /// side value its last record carried, if any.
    pub(super) fn drain_ring_message(
        &mut self,
        first: Piece,
        sink: &mut impl FnMut(Fragment<'_>),
    ) -> Result<(RecvInfo, Option<Side>), TransportError> {
        let (tag, total) = (first.tag, first.total);
        let mut side = first.side;
        let mut off = self.take_piece(first, None, 0, sink)?;
        while off < total {
            let Incoming::Ring(p) = self.next_incoming(true)? else {
                unreachable!("try_incoming refuses a rendezvous in the middle of a message")
            };
            side = p.side;
            off += self.take_piece(p, Some((tag, total)), off, sink)?;
        }
        Ok((RecvInfo { tag, len: total }, side))
    }

    pub(super) fn cma_read(
        &self,
        addr: u64,
        off: usize,
        dst: &mut [u8],
    ) -> Result<(), TransportError> {
        let mut done = 0;
        while done < dst.len() {
            let local = libc::iovec {
                // SAFETY: within dst.
                iov_base: unsafe { dst.as_mut_ptr().add(done) }.cast(),
                iov_len: dst.len() - done,
            };
            let remote = libc::iovec {
                iov_base: (addr as usize + off + done) as *mut libc::c_void,
                iov_len: dst.len() - done,
            };
            // SAFETY: local iovec is our writable memory; the remote one is read by the kernel
            // from the peer, which keeps the buffer alive until we bump rndv_done.
            let n = unsafe { libc::process_vm_readv(self.peer_pid, &local, 1, &remote, 1, 0) };
            if n <= 0 {
                let e = io::Error::last_os_error();
                if e.raw_os_error() == Some(libc::ESRCH) {
                    return Err(TransportError::PeerDied {
                        peer: self.info.peer.clone(),
                        mid_message: true,
                    });
                }
                self.check_peer(true)?;
                return Err(TransportError::io(
                    format!(
                        "single-copy read from {} (process_vm_readv; use --shm-single-copy never \
                         where the kernel forbids it)",
                        self.info.peer
                    ),
                    e,
                ));
            }
            done += n as usize;
        }
        Ok(())
    }

    pub(super) fn finish_rndv(&mut self, rec_bytes: u64) {
        let c = &self.me().rndv_done.0;
        c.store(c.load(Ordering::Relaxed) + 1, Ordering::Release);
        self.release(rec_bytes);
    }

    /// Completes an incoming rendezvous into `buf` if it fits (else just acknowledges it).
    pub(super) fn rndv_into(
        &mut self,
        addr: u64,
        total: usize,
        rec_bytes: u64,
        buf: &mut [u8],
    ) -> Result<(), TransportError> {
        let r = if total <= buf.len() {
            self.cma_read(addr, 0, &mut buf[..total])
        } else {
            Ok(())
        };
        self.finish_rndv(rec_bytes);
        r
    }

    pub(super) fn send_slow(&mut self, tag: Tag, data: &[u8]) -> Result<(), TransportError> {
        self.check_send_len(data.len())?;
        if data.len() >= self.single_copy_from {
            while !self.try_post_rndv(tag, data, None) {
                let need = self.room_needed(Self::record_bytes(8));
                let (tail, cap) = (self.tail, self.cap);
                self.wait_until(false, |s| {
                    cap - (tail - s.peer().head.0.load(Ordering::Acquire)) >= need
                })?;
            }
            return self.wait_until(true, |s| s.rndv_complete());
        }
        self.ring_send(
            tag,
            data.len(),
            |off, piece| piece.copy_from_slice(&data[off..off + piece.len()]),
            None::<fn() -> Side>,
        )
    }
}
