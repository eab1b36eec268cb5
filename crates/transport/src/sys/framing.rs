//! [`super::socket`]'s framing as every realization over a byte stream speaks it (the plain
//! socket calls of [`super::socket`] and the io_uring of [`super::uring`]).
//!
//! A [`RecvBuf`] holds the bytes read from the stream and not yet consumed; it parses headers,
//! lends payloads piece by piece and feeds the duplex receive of `sendrecv`. How bytes get into
//! it is the realization's: a [`ReadMore`] source reads "at least one more byte" into the free
//! part of the buffer (a `recv(2)` for sockets, a `READ_FIXED` on a registered buffer for
//! io_uring), and reads the rest of a large message straight into the caller's memory.
//!
//! The send side: [`send_chunked`] is the lending path (the header and the first chunk of the
//! payload in one buffer, so a small message is one send, then chunk after chunk), and
//! [`send_gathered`] the copying one (header and the caller's slices as one iovec list).
//!
//! Everything is generic over the source or the send call and `#[inline]`, so each realization
//! gets its own copy with its calls inlined: nothing is dispatched at run time.

use super::socket::{
    advance_iovecs, encode_header, header_and_parts, parse_header, EMPTY_IOV, HEADER_LEN, MAX_IOV,
};
use crate::{Fragment, RecvInfo, Tag, TransportError};

/// Where a stream's bytes come from: the realization's half of the receive path.
pub(crate) trait ReadMore {
    /// Reads at least one byte into `buf` (non-empty, the free part of the receive buffer) and
    /// returns how many; end of stream is an error. `waitall` says a whole buffer of the current
    /// message is still to come (a blocking socket may fill it in one wake-up); `mid` says part
    /// of a message has already been read (for the error when the peer is gone).
    fn read_more(
        &mut self,
        buf: &mut [u8],
        waitall: bool,
        mid: bool,
    ) -> Result<usize, TransportError>;

    /// Reads exactly `buf.len()` bytes of the current message straight into `buf`.
    fn read_rest(&mut self, buf: &mut [u8]) -> Result<(), TransportError>;

    /// The largest message a header may announce, and the peer (for errors).
    fn limits(&self) -> (usize, &str);
}

/// The receive buffer of a framed stream: `buf[pos..end]` holds bytes read but not consumed.
pub(crate) struct RecvBuf {
    buf: Box<[u8]>,
    pos: usize,
    end: usize,
}

/// Where the receive half of a `sendrecv` stands.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Rx {
    Header,
    Payload { tag: Tag, len: usize, got: usize },
    Done { tag: Tag, len: usize },
}

impl Rx {
    /// The outcome of a finished duplex receive into a `cap`-byte buffer: a message that did
    /// not fit was drained and is reported as truncated.
    #[inline]
    pub(crate) fn finish(self, cap: usize) -> Result<RecvInfo, TransportError> {
        let Rx::Done { tag, len } = self else {
            unreachable!("the loop ends only when the receive is done")
        };
        if len > cap {
            return Err(TransportError::Truncated { len, cap });
        }
        Ok(RecvInfo { tag, len })
    }
}

impl RecvBuf {
    /// An empty buffer of `len` bytes, allocated once, here.
    pub(crate) fn new(len: usize) -> Self {
        RecvBuf {
            buf: vec![0u8; len].into_boxed_slice(),
            pos: 0,
            end: 0,
        }
    }

    /// The whole buffer as an iovec, to register with a kernel (its memory never moves).
    pub(crate) fn as_iovec(&mut self) -> libc::iovec {
        libc::iovec {
            iov_base: self.buf.as_mut_ptr().cast(),
            iov_len: self.buf.len(),
        }
    }

    /// Size of the buffer.
    #[inline]
    pub(crate) fn capacity(&self) -> usize {
        self.buf.len()
    }

    /// Bytes read but not yet consumed.
    #[inline]
    pub(crate) fn buffered(&self) -> usize {
        self.end - self.pos
    }

    /// The free part after the buffered bytes, where the next read goes.
    #[inline]
    pub(crate) fn free(&mut self) -> &mut [u8] {
        &mut self.buf[self.end..]
    }

    /// Counts `n` bytes just read into [`RecvBuf::free`] as buffered.
    #[inline]
    pub(crate) fn filled(&mut self, n: usize) {
        self.end += n;
    }

    /// Forgets the (consumed) contents: the next read goes to the front.
    #[inline]
    pub(crate) fn reset(&mut self) {
        self.pos = 0;
        self.end = 0;
    }

    /// Makes room for a header at `pos`: resets an empty buffer, moves a partial header to the
    /// front when it would not fit before the end.
    #[inline]
    pub(crate) fn make_room_for_header(&mut self) {
        if self.pos == self.end {
            self.reset();
        } else if self.buf.len() - self.pos < HEADER_LEN {
            self.buf.copy_within(self.pos..self.end, 0);
            self.end -= self.pos;
            self.pos = 0;
        }
    }

    /// Parses and consumes the header at `pos` (at least `HEADER_LEN` bytes are buffered).
    #[inline]
    pub(crate) fn take_header(
        &mut self,
        max: usize,
        peer: &str,
    ) -> Result<(Tag, usize), TransportError> {
        let h = &self.buf[self.pos..self.pos + HEADER_LEN];
        self.pos += HEADER_LEN;
        parse_header(h, max, peer)
    }

    /// Waits for and consumes the next header.
    #[inline]
    pub(crate) fn read_header<R: ReadMore>(
        &mut self,
        src: &mut R,
    ) -> Result<(Tag, usize), TransportError> {
        while self.buffered() < HEADER_LEN {
            self.make_room_for_header();
            let mid = self.end > self.pos;
            let n = src.read_more(&mut self.buf[self.end..], false, mid)?;
            self.end += n;
        }
        let (max, peer) = src.limits();
        self.take_header(max, peer)
    }

    /// Lends the `len`-byte payload of the current message to `sink`, piece by piece.
    #[inline]
    pub(crate) fn lend_payload<R: ReadMore, F: FnMut(Fragment<'_>)>(
        &mut self,
        src: &mut R,
        tag: Tag,
        len: usize,
        sink: &mut F,
    ) -> Result<(), TransportError> {
        let mut off = 0;
        while off < len {
            if self.pos == self.end {
                self.reset();
                // A whole buffer of this message is still to come: let a blocking socket fill
                // it in one wake-up.
                let waitall = len - off >= self.buf.len();
                self.end = src.read_more(&mut self.buf[..], waitall, true)?;
            }
            let take = (self.end - self.pos).min(len - off);
            sink(Fragment {
                tag,
                total_len: len,
                offset: off,
                data: &self.buf[self.pos..self.pos + take],
            });
            self.pos += take;
            off += take;
        }
        Ok(())
    }

    /// [`crate::Endpoint::recv_with`]: lends the next message (an empty one as one empty
    /// fragment).
    #[inline]
    pub(crate) fn recv_with<R: ReadMore, F: FnMut(Fragment<'_>)>(
        &mut self,
        src: &mut R,
        mut sink: F,
    ) -> Result<RecvInfo, TransportError> {
        let (tag, len) = self.read_header(src)?;
        if len == 0 {
            sink(Fragment {
                tag,
                total_len: 0,
                offset: 0,
                data: &[],
            });
        } else {
            self.lend_payload(src, tag, len, &mut sink)?;
        }
        Ok(RecvInfo { tag, len })
    }

    /// [`crate::Endpoint::recv`]: copies what is buffered, then reads the rest of the message
    /// straight into `buf` ([`ReadMore::read_rest`]). A message too large for `buf` is drained
    /// and reported as truncated.
    #[inline]
    pub(crate) fn recv<R: ReadMore>(
        &mut self,
        src: &mut R,
        buf: &mut [u8],
    ) -> Result<RecvInfo, TransportError> {
        let (tag, len) = self.read_header(src)?;
        if len > buf.len() {
            self.lend_payload(src, tag, len, &mut |_| {})?;
            return Err(TransportError::Truncated {
                len,
                cap: buf.len(),
            });
        }
        let avail = self.buffered().min(len);
        buf[..avail].copy_from_slice(&self.buf[self.pos..self.pos + avail]);
        self.pos += avail;
        if avail < len {
            src.read_rest(&mut buf[avail..len])?;
        }
        Ok(RecvInfo { tag, len })
    }

    /// Consumes buffered bytes into the duplex receive of `sendrecv`: the header, then payload
    /// bytes (copied into `buf` when the message fits, else dropped). Makes no call. Leaves room
    /// for a header when one is still missing, and an empty buffer reset when payload is. Returns
    /// whether any byte was consumed.
    #[inline]
    pub(crate) fn rx_buffered(
        &mut self,
        rx: &mut Rx,
        buf: &mut [u8],
        max: usize,
        peer: &str,
    ) -> Result<bool, TransportError> {
        let mut progress = false;
        loop {
            match *rx {
                Rx::Header => {
                    if self.buffered() < HEADER_LEN {
                        self.make_room_for_header();
                        return Ok(progress);
                    }
                    let (tag, len) = self.take_header(max, peer)?;
                    *rx = Rx::Payload { tag, len, got: 0 };
                    progress = true;
                }
                Rx::Payload { tag, len, got } if got == len => *rx = Rx::Done { tag, len },
                Rx::Payload { tag, len, got } => {
                    let avail = self.buffered().min(len - got);
                    if avail == 0 {
                        self.reset();
                        return Ok(progress);
                    }
                    if len <= buf.len() {
                        buf[got..got + avail]
                            .copy_from_slice(&self.buf[self.pos..self.pos + avail]);
                    }
                    self.pos += avail;
                    *rx = Rx::Payload {
                        tag,
                        len,
                        got: got + avail,
                    };
                    progress = true;
                }
                Rx::Done { .. } => return Ok(progress),
            }
        }
    }
}

/// The gathering send: the header of a `len`-byte message and `parts` (fewer than [`MAX_IOV`])
/// as one iovec list, sent by as many `send(msg, mid)` calls as it takes, each sending what is
/// left and returning how many bytes went; `mid` says some already have. Nothing is packed: the
/// kernel reads the caller's memory.
#[inline]
pub(crate) fn send_gathered<S>(
    tag: Tag,
    len: usize,
    parts: &[&[u8]],
    mut send: S,
) -> Result<(), TransportError>
where
    S: FnMut(&libc::msghdr, bool) -> Result<usize, TransportError>,
{
    let hdr = encode_header(tag, len);
    let mut iov = [EMPTY_IOV; MAX_IOV];
    let n = header_and_parts(&hdr, parts, &mut iov);
    let (mut first, mut left) = (0, HEADER_LEN + len);
    while left > 0 {
        // SAFETY: msghdr is a plain C struct for which all-zero is a valid value.
        let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
        msg.msg_iov = iov[first..n].as_mut_ptr();
        msg.msg_iovlen = (n - first) as _;
        // `msg`, `iov`, `hdr` and `parts` outlive the call, which only reads through them.
        let k = send(&msg, left < HEADER_LEN + len)?;
        left -= k;
        advance_iovecs(&mut iov[..n], &mut first, k);
    }
    Ok(())
}

/// The lending send ([`crate::Endpoint::send_with`]) through `buf`: the header and the first
/// piece of the payload leave together (a small message is one send), then the rest piece by
/// piece, each a prefix of `buf` that `fill` wrote and `send(chunk, mid)` sends whole.
#[inline]
pub(crate) fn send_chunked<F, S>(
    buf: &mut [u8],
    tag: Tag,
    len: usize,
    mut fill: F,
    mut send: S,
) -> Result<(), TransportError>
where
    F: FnMut(usize, &mut [u8]),
    S: FnMut(&[u8], bool) -> Result<(), TransportError>,
{
    buf[..HEADER_LEN].copy_from_slice(&encode_header(tag, len));
    let first = len.min(buf.len() - HEADER_LEN);
    if first > 0 {
        fill(0, &mut buf[HEADER_LEN..HEADER_LEN + first]);
    }
    send(&buf[..HEADER_LEN + first], false)?;
    let mut off = first;
    while off < len {
        let n = buf.len().min(len - off);
        fill(off, &mut buf[..n]);
        send(&buf[..n], true)?;
        off += n;
    }
    Ok(())
}
