//! The one trait every realization implements.
//!
//! Three required methods, chosen so that each realization does its natural thing: the lending
//! pair hands out the transport's own memory in pieces (the shm ring, a socket's read buffer), and
//! `sendrecv` is the duplex primitive that lets both sides stream at once without deadlock (which
//! `send` then `recv` cannot guarantee once a message is larger than the pipe between them). The
//! copying `send`/`recv` are conveniences on top; socket realizations override them to avoid a
//! bounce copy.

use crate::TransportError;
use commperf_core::{Mode, TransportKind};
use std::time::Duration;

/// A message tag. Tags travel with each message; messages are delivered in send order.
pub type Tag = u32;

/// What a receive delivered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecvInfo {
    pub tag: Tag,
    pub len: usize,
}

/// A piece of an incoming message, lent to a receive sink. Pieces arrive in order, cover the
/// message exactly once, and a zero-byte message arrives as one empty piece.
#[derive(Debug)]
pub struct Fragment<'a> {
    pub tag: Tag,
    /// Length of the whole message.
    pub total_len: usize,
    /// Where `data` starts within the message.
    pub offset: usize,
    pub data: &'a [u8],
}

/// How an endpoint behaves; fixed when it is created.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EndpointConfig {
    pub mode: Mode,
    /// Largest message either side may send (negotiated before the endpoint exists). A header
    /// announcing more is a protocol error and nothing of that size is allocated.
    pub max_message: usize,
    /// Longest time to wait for the peer to make any progress before giving up.
    pub idle_timeout: Duration,
    /// In [`Mode::Block`]: checks made by spinning before going to sleep (0 = sleep at once).
    /// A spin-then-block hybrid, as MVIA did (Kutluğ 2000, §3.3.7).
    pub block_spins: u32,
}

impl Default for EndpointConfig {
    fn default() -> Self {
        EndpointConfig {
            mode: Mode::Poll,
            max_message: 64 << 20,
            idle_timeout: Duration::from_secs(60),
            block_spins: 0,
        }
    }
}

/// Capability: switching completion detection on a live endpoint, so that polling, blocking
/// and spin-then-block can be compared on one connection. Both ends must switch alike.
pub trait SwitchMode {
    fn set_mode(&mut self, mode: Mode, block_spins: u32) -> Result<(), TransportError>;
}

/// Capability: one message gathered from several pieces of memory by the transport itself
/// (`writev`-style), without the caller packing it into one buffer first.
pub trait VectoredSend {
    fn send_vectored(&mut self, tag: Tag, parts: &[&[u8]]) -> Result<(), TransportError>;
}

impl<E: VectoredSend + ?Sized> VectoredSend for &mut E {
    #[inline]
    fn send_vectored(&mut self, tag: Tag, parts: &[&[u8]]) -> Result<(), TransportError> {
        (**self).send_vectored(tag, parts)
    }
}

/// Copies into `piece` the bytes of the concatenation of `parts` that start at `offset`.
/// The gather step of a vectored send into transport memory.
#[inline]
pub fn gather(parts: &[&[u8]], offset: usize, piece: &mut [u8]) {
    let (mut skip, mut at) = (offset, 0);
    for p in parts {
        if at == piece.len() {
            break;
        }
        if skip >= p.len() {
            skip -= p.len();
            continue;
        }
        let n = (p.len() - skip).min(piece.len() - at);
        piece[at..at + n].copy_from_slice(&p[skip..skip + n]);
        (skip, at) = (0, at + n);
    }
}

/// Capability: asking, without waiting, whether a message has (begun to) arrive. What a
/// process holding many endpoints sweeps to find the one with work (Kutluğ 2000, §3.3.6).
pub trait Readiness {
    fn readable_now(&self) -> Result<bool, TransportError>;

    /// Whether the peer is still there; for the slow path of a sweep (a socket's death shows as
    /// readable end-of-stream, so only transports without one need more).
    fn check_alive(&self) -> Result<(), TransportError> {
        Ok(())
    }
}

/// Words of a side-band value (see [`SideBand`]).
pub const SIDE_WORDS: usize = 3;
/// A small fixed value carried beside a message in the transport's own header.
pub type Side = [u64; SIDE_WORDS];

/// Capability: sending a message together with a small fixed side value that travels in the
/// transport's own record header instead of in the payload, and receiving it back with the
/// message. For a layer that stamps every message (the monitor): where the header has spare
/// bytes on a cache line it writes anyway (shm), a stamp there costs no extra line, while the
/// same bytes appended to the payload can spill a small message onto one more line.
///
/// Both ends must use it alike: a message sent without a side value arrives with `None`.
/// The sizes and offsets seen by the caller are the caller's own (the side value is not part of
/// the message), so the maximum message is unchanged.
pub trait SideBand {
    /// [`Endpoint::send_with`] with a side value. `side` is called once, after the last piece
    /// has been filled and just before that piece is handed over, so a time stamp taken in it
    /// is as late as the transport's hand-over allows.
    fn send_with_side<F: FnMut(usize, &mut [u8]), S: FnOnce() -> Side>(
        &mut self,
        tag: Tag,
        len: usize,
        fill: F,
        side: S,
    ) -> Result<(), TransportError>;

    /// [`Endpoint::recv_with`], returning the message's side value (`None`: sent without one).
    fn recv_with_side<F: FnMut(Fragment<'_>)>(
        &mut self,
        sink: F,
    ) -> Result<(RecvInfo, Option<Side>), TransportError>;

    /// [`Endpoint::sendrecv`] with a side value on the outgoing message, returning the incoming
    /// message's.
    fn sendrecv_side(
        &mut self,
        tag: Tag,
        data: &[u8],
        side: Side,
        buf: &mut [u8],
    ) -> Result<(RecvInfo, Option<Side>), TransportError>;
}

impl<E: SideBand + ?Sized> SideBand for &mut E {
    #[inline]
    fn send_with_side<F: FnMut(usize, &mut [u8]), S: FnOnce() -> Side>(
        &mut self,
        tag: Tag,
        len: usize,
        fill: F,
        side: S,
    ) -> Result<(), TransportError> {
        (**self).send_with_side(tag, len, fill, side)
    }
    #[inline]
    fn recv_with_side<F: FnMut(Fragment<'_>)>(
        &mut self,
        sink: F,
    ) -> Result<(RecvInfo, Option<Side>), TransportError> {
        (**self).recv_with_side(sink)
    }
    #[inline]
    fn sendrecv_side(
        &mut self,
        tag: Tag,
        data: &[u8],
        side: Side,
        buf: &mut [u8],
    ) -> Result<(RecvInfo, Option<Side>), TransportError> {
        (**self).sendrecv_side(tag, data, side, buf)
    }
}

/// Identity of a connected endpoint, used to name the peer in errors and reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EndpointInfo {
    pub transport: TransportKind,
    pub mode: Mode,
    /// Human-readable peer, e.g. `local peer process 4242` or `10.0.0.2:40000`.
    pub peer: String,
    pub max_message: usize,
}

impl EndpointInfo {
    /// What an endpoint of `transport` to `peer` created with `cfg` reports.
    pub(crate) fn new(transport: TransportKind, peer: String, cfg: &EndpointConfig) -> Self {
        EndpointInfo {
            transport,
            mode: cfg.mode,
            peer,
            max_message: cfg.max_message,
        }
    }
}

/// A connected, reliable, ordered, tagged message endpoint to one peer.
pub trait Endpoint {
    /// Sends one message of `len` bytes. `fill(offset, piece)` writes the payload piece by piece,
    /// in order, directly into transport memory where the realization can lend it. Returns when
    /// the message has been handed over (the caller's memory may be reused), as an eager send.
    fn send_with<F: FnMut(usize, &mut [u8])>(
        &mut self,
        tag: Tag,
        len: usize,
        fill: F,
    ) -> Result<(), TransportError>;

    /// Receives the next message, lending it piece by piece to `sink`.
    fn recv_with<F: FnMut(Fragment<'_>)>(&mut self, sink: F) -> Result<RecvInfo, TransportError>;

    /// Sends `data` and receives one message into `buf`, progressing both directions together.
    fn sendrecv(
        &mut self,
        tag: Tag,
        data: &[u8],
        buf: &mut [u8],
    ) -> Result<RecvInfo, TransportError>;

    /// Who is at the other end, and how this end was configured.
    fn info(&self) -> &EndpointInfo;

    /// Sends a copy of `data`.
    fn send(&mut self, tag: Tag, data: &[u8]) -> Result<(), TransportError> {
        self.send_with(tag, data.len(), |off, piece| {
            piece.copy_from_slice(&data[off..off + piece.len()])
        })
    }

    /// Receives the next message into `buf`. A message longer than `buf` is consumed whole (the
    /// stream stays usable) and reported as [`TransportError::Truncated`].
    fn recv(&mut self, buf: &mut [u8]) -> Result<RecvInfo, TransportError> {
        let cap = buf.len();
        let info = self.recv_with(|f| copy_into(buf, &f))?;
        if info.len > cap {
            return Err(TransportError::Truncated { len: info.len, cap });
        }
        Ok(info)
    }
}

/// The copying receive's sink: puts a lent piece where it belongs in `buf`; drops every piece
/// of a message longer than `buf` (whose receive then reports [`TransportError::Truncated`]).
#[inline]
pub fn copy_into(buf: &mut [u8], f: &Fragment<'_>) {
    if f.total_len <= buf.len() {
        buf[f.offset..f.offset + f.data.len()].copy_from_slice(f.data);
    }
}

/// Forwarding impls, so `&mut E` and `Box<E>` are endpoints wherever `E` is.
macro_rules! forward_endpoint {
    ($($wrapper:ty),+) => {$(
        impl<E: Endpoint + ?Sized> Endpoint for $wrapper {
            fn send_with<F: FnMut(usize, &mut [u8])>(
                &mut self,
                tag: Tag,
                len: usize,
                fill: F,
            ) -> Result<(), TransportError> {
                (**self).send_with(tag, len, fill)
            }
            fn recv_with<F: FnMut(Fragment<'_>)>(
                &mut self,
                sink: F,
            ) -> Result<RecvInfo, TransportError> {
                (**self).recv_with(sink)
            }
            fn sendrecv(
                &mut self,
                tag: Tag,
                data: &[u8],
                buf: &mut [u8],
            ) -> Result<RecvInfo, TransportError> {
                (**self).sendrecv(tag, data, buf)
            }
            fn info(&self) -> &EndpointInfo {
                (**self).info()
            }
            fn send(&mut self, tag: Tag, data: &[u8]) -> Result<(), TransportError> {
                (**self).send(tag, data)
            }
            fn recv(&mut self, buf: &mut [u8]) -> Result<RecvInfo, TransportError> {
                (**self).recv(buf)
            }
        }
    )+};
}

forward_endpoint!(&mut E, Box<E>);

#[cfg(test)]
mod tests {
    use super::gather;

    #[test]
    fn gather_takes_the_right_bytes_across_part_boundaries() {
        let parts: [&[u8]; 3] = [b"abc", b"", b"defgh"];
        let mut piece = [0u8; 4];
        gather(&parts, 2, &mut piece);
        assert_eq!(&piece, b"cdef");
        let mut all = [0u8; 8];
        gather(&parts, 0, &mut all);
        assert_eq!(&all, b"abcdefgh");
        let mut tail = [0u8; 2];
        gather(&parts, 6, &mut tail);
        assert_eq!(&tail, b"gh");
    }
}
