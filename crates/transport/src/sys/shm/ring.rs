//! The rings: record layout, readiness stamps, indices, and the producer's and consumer's steps
//! on one record.
//!
//! Why it looks like this:
//! - **Records carry their own readiness stamp.** A record's first word is `(position + 1) ^ key`,
//!   written last with release ordering. The consumer polls that word at its own read position,
//!   so a small message costs one cache-line transfer (header and payload share the line), not
//!   two (data, then a separate tail index). The random per-segment `key` makes stale bytes from
//!   an earlier lap practically impossible to mistake for a fresh stamp.
//! - **Indices on their own cache lines** (128 B apart, so the adjacent-line prefetcher does not
//!   pair them). The consumer publishes its head after every record; the producer reads it only
//!   when its cached copy says the ring is full.

use crate::{Fragment, Side, Tag, TransportError, SIDE_WORDS};
use std::sync::atomic::{AtomicU64, Ordering};

use super::endpoint::ShmEndpoint;

pub(super) const LINE: usize = 64;
pub(super) const HDR: usize = 32;

/// Payloads up to this size share the stamp's cache line (one line per small message).
pub(super) const INLINE_MAX: usize = LINE - HDR;

/// Offset of a `len`-byte payload within its record: right after the 32-byte header for small
/// payloads, a full cache line in for larger ones. Copies into and out of the ring then start
/// 64-byte aligned, which matters a great deal: on AMD Zen, `rep movsb` (what memcpy uses for
/// kilobyte sizes) runs an order of magnitude slower when the destination is misaligned
/// relative to the source (measured here: 3 GB/s against 50–80 GB/s).
#[inline]
pub(super) fn payload_offset(len: usize) -> usize {
    if len <= INLINE_MAX {
        HDR
    } else {
        LINE
    }
}

/// Offset of the payload of a record that carries a side value ([`crate::SideBand`]): the side
/// value sits in the header's spare half line (bytes 32..56), so the payload starts a full line
/// in whatever its size. A record of more than 32 payload bytes has that half line unused
/// anyway: the side value costs it no extra cache line.
#[inline]
pub(super) fn payload_offset_for(len: usize, side: bool) -> usize {
    if side {
        LINE
    } else {
        payload_offset(len)
    }
}

/// Where a record's side value starts: right after the 32-byte header.
pub(super) const SIDE_AT: usize = HDR;
const _: () = assert!(SIDE_AT + SIDE_WORDS * 8 <= LINE);

/// Bit of a record's kind word saying that the record carries a side value. Only the last
/// record of a message carries one (where a trailer would be: stamped just before the last
/// piece is published).
pub(super) const SIDE_FLAG: u32 = 1 << 8;

pub(super) const KIND_WHOLE: u32 = 1;
pub(super) const KIND_FRAG: u32 = 2;
pub(super) const KIND_SKIP: u32 = 3;
pub(super) const KIND_RNDV: u32 = 4;

/// A slice of a ring record, as raw pointers (the ring is shared with another process).
#[derive(Clone, Copy)]
pub(super) struct Rec {
    pub(super) ptr: *mut u8,
}

impl Rec {
    #[inline]
    pub(super) fn stamp(&self) -> &AtomicU64 {
        // SAFETY: records are 64-byte aligned inside the mapping.
        unsafe { &*(self.ptr as *const AtomicU64) }
    }
    #[inline]
    pub(super) fn word(&self, i: usize) -> u64 {
        // SAFETY: the header is 32 bytes inside the ring; read after an acquire on the stamp.
        unsafe { std::ptr::read_volatile((self.ptr as *const u64).add(i)) }
    }
    #[inline]
    pub(super) fn set_word(&self, i: usize, v: u64) {
        // SAFETY: the producer owns this record until it publishes the stamp.
        unsafe { std::ptr::write((self.ptr as *mut u64).add(i), v) }
    }
    /// Where a payload of `len` bytes starts (see [`payload_offset`]).
    #[inline]
    pub(super) fn payload(&self, len: usize) -> *mut u8 {
        self.payload_for(len, false)
    }
    /// Where a payload of `len` bytes starts in a record with or without a side value.
    #[inline]
    pub(super) fn payload_for(&self, len: usize, side: bool) -> *mut u8 {
        // SAFETY: the payload lies within the reserved record, whose size counts this offset.
        unsafe { self.ptr.add(payload_offset_for(len, side)) }
    }
    /// Reads the side value of a published record whose kind carries [`SIDE_FLAG`].
    #[inline]
    pub(super) fn side(&self) -> Side {
        std::array::from_fn(|i| self.word(SIDE_AT / 8 + i))
    }
    /// Writes the side value of a record the producer still owns.
    #[inline]
    pub(super) fn set_side(&self, v: Side) {
        for (i, w) in v.into_iter().enumerate() {
            self.set_word(SIDE_AT / 8 + i, w);
        }
    }
}

/// Where an incoming message comes from, for the receive paths.
pub(super) enum Incoming {
    Ring(Piece),
    Rndv {
        total: usize,
        tag: Tag,
        addr: u64,
        rec_bytes: u64,
        side: Option<Side>,
    },
}

/// One published ring record of an incoming message.
#[derive(Clone, Copy)]
pub(super) struct Piece {
    pub(super) total: usize,
    pub(super) tag: Tag,
    pub(super) len: usize,
    pub(super) rec: Rec,
    pub(super) rec_bytes: u64,
    pub(super) kind: u32,
    /// The record's side value, if it carries one (its payload then starts a line in).
    pub(super) side: Option<Side>,
}

impl ShmEndpoint {
    // ---- producer side -------------------------------------------------------------------

    #[inline]
    pub(super) fn record_bytes(payload: usize) -> u64 {
        Self::record_bytes_for(payload, false)
    }

    #[inline]
    pub(super) fn record_bytes_for(payload: usize, side: bool) -> u64 {
        ((payload_offset_for(payload, side) + payload).div_ceil(LINE) * LINE) as u64
    }

    /// Room needed to place a record of `rec` bytes at the tail, counting a skip to the ring end.
    #[inline]
    pub(super) fn room_needed(&self, rec: u64) -> u64 {
        let contig = self.cap - (self.tail & (self.cap - 1));
        if rec > contig {
            contig + rec
        } else {
            rec
        }
    }

    #[inline]
    pub(super) fn has_room(&mut self, need: u64) -> bool {
        if self.cap - (self.tail - self.peer_head_cache) >= need {
            return true;
        }
        self.peer_head_cache = self.peer().head.0.load(Ordering::Acquire);
        self.cap - (self.tail - self.peer_head_cache) >= need
    }

    /// Reserves a record (writing a skip record first if it would cross the ring end).
    /// Requires `has_room(room_needed(rec))`.
    #[inline]
    pub(super) fn reserve(&mut self, rec: u64) -> Rec {
        let off = self.tail & (self.cap - 1);
        let contig = self.cap - off;
        if rec > contig {
            let skip = Rec {
                ptr: self.tx_at(off),
            };
            skip.set_word(1, 0);
            skip.set_word(2, (KIND_SKIP as u64) << 32);
            skip.stamp()
                .store((self.tail + 1) ^ self.key, Ordering::Release);
            self.tail += contig;
            return Rec { ptr: self.tx_at(0) };
        }
        Rec {
            ptr: self.tx_at(off),
        }
    }

    #[inline]
    pub(super) fn tx_at(&self, off: u64) -> *mut u8 {
        // SAFETY: off < cap, inside the tx ring.
        unsafe { self.tx.add(off as usize) }
    }

    #[inline]
    pub(super) fn publish(&mut self, r: Rec, rec: u64) {
        r.stamp()
            .store((self.tail + 1) ^ self.key, Ordering::Release);
        self.tail += rec;
        self.ring_peer();
        if let Some(n) = &self.notify {
            n.post();
        }
    }

    #[inline]
    pub(super) fn write_header(r: Rec, total: usize, tag: Tag, kind: u32, frag_len: usize) {
        r.set_word(1, total as u64);
        r.set_word(2, tag as u64 | (kind as u64) << 32);
        r.set_word(3, frag_len as u64);
    }

    // ---- consumer side -------------------------------------------------------------------

    #[inline]
    pub(super) fn rx_rec(&self) -> Rec {
        // SAFETY: head & (cap-1) < cap, inside the rx ring.
        let ptr = unsafe { self.rx.add((self.head & (self.cap - 1)) as usize) };
        Rec { ptr }
    }

    #[inline]
    pub(super) fn rx_ready(&self) -> bool {
        self.rx_rec().stamp().load(Ordering::Acquire) == (self.head + 1) ^ self.key
    }

    #[inline]
    pub(super) fn release(&mut self, rec_bytes: u64) {
        self.head += rec_bytes;
        self.me().head.0.store(self.head, Ordering::Release);
        self.ring_peer();
    }

    /// Parses the ready record at head (skipping skip records). Returns None if nothing ready.
    pub(super) fn try_incoming(
        &mut self,
        mid_message: bool,
    ) -> Result<Option<Incoming>, TransportError> {
        loop {
            if !self.rx_ready() {
                return Ok(None);
            }
            let r = self.rx_rec();
            let total = r.word(1);
            let w2 = r.word(2);
            let (tag, kind) = (w2 as u32, (w2 >> 32) as u32);
            let (kind, has_side) = (kind & !SIDE_FLAG, kind & SIDE_FLAG != 0);
            let frag_len = r.word(3);
            let off = self.head & (self.cap - 1);
            if kind == KIND_SKIP {
                self.release(self.cap - off);
                continue;
            }
            let proto = |what: String| TransportError::Protocol {
                peer: self.info.peer.clone(),
                what,
            };
            if total > self.cfg.max_message as u64 {
                return Err(TransportError::TooLarge {
                    peer: self.info.peer.clone(),
                    len: total,
                    max: self.cfg.max_message,
                });
            }
            let max_frag = if kind == KIND_RNDV {
                8
            } else {
                self.frag as u64
            };
            let rec_bytes = Self::record_bytes_for(frag_len.min(max_frag) as usize, has_side);
            if frag_len > max_frag || off + rec_bytes > self.cap {
                return Err(proto(format!(
                    "bad shm record: kind {kind}, fragment {frag_len} B"
                )));
            }
            let total = total as usize;
            let side = has_side.then(|| r.side());
            return Ok(Some(match kind {
                KIND_WHOLE | KIND_FRAG if !mid_message || kind == KIND_FRAG => {
                    Incoming::Ring(Piece {
                        total,
                        tag,
                        len: frag_len as usize,
                        rec: r,
                        rec_bytes,
                        kind,
                        side,
                    })
                }
                KIND_RNDV if !mid_message => {
                    let at = r.payload_for(8, has_side);
                    // SAFETY: 8 payload bytes are part of the record, at `at`.
                    let addr = unsafe { std::ptr::read_unaligned(at as *const u64) };
                    Incoming::Rndv {
                        total,
                        tag,
                        addr,
                        rec_bytes,
                        side,
                    }
                }
                _ => return Err(proto(format!("unexpected shm record kind {kind}"))),
            }));
        }
    }

    pub(super) fn next_incoming(&mut self, mid_message: bool) -> Result<Incoming, TransportError> {
        loop {
            if let Some(i) = self.try_incoming(mid_message)? {
                return Ok(i);
            }
            self.wait_until(mid_message, |s| s.rx_ready())?;
        }
    }

    /// Checks that `p` continues the message being received at offset `off` (or starts one,
    /// when `cont` is None), lends its payload to `sink` and frees its record. Returns its length.
    pub(super) fn take_piece(
        &mut self,
        p: Piece,
        cont: Option<(Tag, usize)>,
        off: usize,
        sink: &mut impl FnMut(Fragment<'_>),
    ) -> Result<usize, TransportError> {
        let continues = match cont {
            None => off == 0,
            Some((tag, total)) => tag == p.tag && total == p.total,
        };
        if !continues
            || (p.kind == KIND_WHOLE && p.len != p.total)
            || off + p.len > p.total
            || (p.len == 0 && p.total != 0)
        {
            return Err(TransportError::Protocol {
                peer: self.info.peer.clone(),
                what: format!(
                    "a {}-byte piece of a {}-byte message (tag {}) does not continue the message \
                     being received at offset {off}",
                    p.len, p.total, p.tag
                ),
            });
        }
        // SAFETY: the record holds `p.len` payload bytes, published with release.
        let data = unsafe {
            std::slice::from_raw_parts(p.rec.payload_for(p.len, p.side.is_some()), p.len)
        };
        sink(Fragment {
            tag: p.tag,
            total_len: p.total,
            offset: off,
            data,
        });
        self.release(p.rec_bytes);
        Ok(p.len)
    }
}
