//! Stream-socket realization of [`Endpoint`], shared by TCP and Unix-domain stream sockets.
//!
//! A byte stream has no message boundaries, so every message is framed by a 16-byte header
//! `{len: u64 LE, tag: u32 LE, magic: u32 LE = 0x43504D31 ("CPM1")}` followed by `len` payload
//! bytes. The code is shaped by what sockperf-class latency measurements need:
//!
//! * **One syscall per send.** Header and payload leave in one `sendmsg(2)` with a two-element
//!   iovec, straight from the caller's slice (the overridden [`Endpoint::send`]); `MSG_NOSIGNAL`
//!   turns a dead peer into `EPIPE` instead of a `SIGPIPE` that would kill the benchmark.
//! * **Ideally one syscall per receive.** Reads go into a 64 KiB buffer owned by the endpoint
//!   (allocated once, at construction), so a header and a small payload, and often several small
//!   messages, arrive in one `recv(2)`. For a large message, once the buffered bytes are consumed,
//!   the copying [`Endpoint::recv`] reads the rest directly into the caller's buffer (no bounce
//!   copy), while [`Endpoint::recv_with`] lends the message piece by piece from the 64 KiB buffer
//!   and never allocates anything of the message's size.
//! * **No allocation in steady state.** `send_with` fills a bounded scratch buffer (256 KiB, also
//!   allocated at construction) chunk by chunk; error paths may allocate (they name the peer).
//! * **Two completion modes.** [`Mode::Poll`]: the socket is `O_NONBLOCK` and every `EAGAIN` is
//!   waited out with [`Backoff`] (bounded spin, then yield, idle timeout on the slow path).
//!   [`Mode::Block`]: the socket blocks in the kernel with `SO_RCVTIMEO`/`SO_SNDTIMEO` set to the
//!   idle timeout, so a silent peer yields [`TransportError::Timeout`] instead of a hang.
//! * **Duplex without deadlock.** [`Endpoint::sendrecv`] makes non-blocking progress on both
//!   directions (`MSG_DONTWAIT`) and, when neither can move, spins (Poll) or sleeps in `poll(2)`
//!   on `POLLIN|POLLOUT` (Block), so two peers exchanging 64 MiB each never both wait on a full
//!   socket buffer.
//!
//! A header with a bad magic is [`TransportError::Protocol`]; one announcing more than
//! `max_message` is [`TransportError::TooLarge`]. Both leave the stream out of sync: the endpoint
//! should be dropped. End of stream and `ECONNRESET`/`EPIPE` are
//! [`TransportError::PeerClosed`], with `mid_message` telling whether part of a message had
//! already been read or written.

use super::framing::{send_chunked, send_gathered, ReadMore, RecvBuf, Rx};
use crate::backoff::{Backoff, WaitStop};
use crate::{Endpoint, EndpointConfig, EndpointInfo, Fragment, RecvInfo, Tag, TransportError};
use commperf_core::{Mode, TransportKind};
use std::fmt;
use std::io;
use std::os::fd::{AsRawFd, RawFd};
use std::time::Duration;

/// Bytes in a message header.
pub const HEADER_LEN: usize = 16;
/// The header's magic number, `"CPM1"` read as a big-endian word; sent little-endian.
pub const MAGIC: u32 = 0x4350_4D31;
/// Size of the receive buffer every endpoint owns.
pub const READ_BUF_LEN: usize = 64 << 10;
/// Largest scratch buffer `send_with` fills before handing a chunk to the kernel.
pub const SEND_CHUNK: usize = 256 << 10;

/// Encodes the header of a `len`-byte message with `tag`.
#[inline]
pub fn encode_header(tag: Tag, len: usize) -> [u8; HEADER_LEN] {
    let mut h = [0u8; HEADER_LEN];
    h[0..8].copy_from_slice(&(len as u64).to_le_bytes());
    h[8..12].copy_from_slice(&tag.to_le_bytes());
    h[12..16].copy_from_slice(&MAGIC.to_le_bytes());
    h
}

/// Parses a header: checks the magic and that the announced length is within `max` (nothing of
/// an unchecked size is ever allocated), and names `peer` when it is not.
#[inline]
pub(crate) fn parse_header(
    h: &[u8],
    max: usize,
    peer: &str,
) -> Result<(Tag, usize), TransportError> {
    let len = u64::from_le_bytes(h[0..8].try_into().expect("8 bytes"));
    let tag = u32::from_le_bytes(h[8..12].try_into().expect("4 bytes"));
    let magic = u32::from_le_bytes(h[12..16].try_into().expect("4 bytes"));
    if magic != MAGIC {
        return Err(TransportError::Protocol {
            peer: peer.to_string(),
            what: format!(
                "bad magic 0x{magic:08x} in message header (expected 0x{MAGIC:08x}, \"CPM1\")"
            ),
        });
    }
    if len > max as u64 {
        return Err(TransportError::TooLarge {
            peer: peer.to_string(),
            len,
            max,
        });
    }
    Ok((tag, len as usize))
}

/// Refuses to send a `len`-byte message over an endpoint whose limit is `max`.
#[inline]
pub(crate) fn check_send_len(len: usize, max: usize) -> Result<(), TransportError> {
    if len > max {
        return Err(TransportError::SendTooLarge { len, max });
    }
    Ok(())
}

/// Whether `fd` is readable now: a zero-timeout `poll(2)`, one syscall.
pub(crate) fn poll_readable(fd: RawFd, peer: &str) -> Result<bool, TransportError> {
    let mut p = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one valid pollfd, zero timeout.
    let r = unsafe { libc::poll(&mut p, 1, 0) };
    if r < 0 {
        return Err(socket_error(
            peer,
            "poll",
            io::Error::last_os_error(),
            false,
        ));
    }
    Ok(r > 0)
}

/// The idle timeout `t` passed without the peer `peer` moving.
#[cold]
pub(crate) fn timed_out(peer: &str, t: Duration) -> TransportError {
    TransportError::Timeout {
        peer: peer.to_string(),
        secs: t.as_secs(),
    }
}

/// End of stream from `peer`; `mid` says part of a message had already been read.
#[cold]
pub(crate) fn peer_closed(peer: &str, mid: bool) -> TransportError {
    TransportError::PeerClosed {
        peer: peer.to_string(),
        mid_message: mid,
    }
}

/// Maps a socket error: a reset or broken connection is the peer closing, an unreachable one the
/// peer dying; anything else keeps its cause, with the operation and the peer named.
#[cold]
pub(crate) fn socket_error(peer: &str, op: &str, e: io::Error, mid: bool) -> TransportError {
    match e.raw_os_error() {
        Some(
            libc::ECONNRESET | libc::EPIPE | libc::ECONNABORTED | libc::ENOTCONN | libc::ESHUTDOWN,
        ) => TransportError::PeerClosed {
            peer: peer.to_string(),
            mid_message: mid,
        },
        Some(libc::ETIMEDOUT | libc::EHOSTUNREACH | libc::ENETUNREACH) => {
            TransportError::PeerDied {
                peer: peer.to_string(),
                mid_message: mid,
            }
        }
        _ => {
            let dir = match op {
                "recv" => "from",
                "send" => "to",
                _ => "with",
            };
            TransportError::io(format!("{op} {dir} peer {peer}"), e)
        }
    }
}

/// Drops the first `k` bytes from the iovecs `iov[*first..]`: whole ones, then the sent front of
/// a partial one. What a short `sendmsg` leaves to send.
#[inline]
pub(crate) fn advance_iovecs(iov: &mut [libc::iovec], first: &mut usize, mut k: usize) {
    while k > 0 && *first < iov.len() {
        let v = &mut iov[*first];
        if k >= v.iov_len {
            k -= v.iov_len;
            *first += 1;
        } else {
            // SAFETY: advancing within the same slice by fewer bytes than it has.
            v.iov_base = unsafe { (v.iov_base as *mut u8).add(k) }.cast();
            v.iov_len -= k;
            k = 0;
        }
    }
}

/// A connected stream socket (TCP or Unix-domain) speaking commperf's framing.
///
/// `S` is the owned socket (`TcpStream`, `UnixStream`, or anything else that owns a connected
/// stream socket's descriptor); it is kept only to own and eventually close the descriptor: all
/// I/O goes through the raw descriptor so that the flags above can be used.
pub struct StreamEndpoint<S> {
    stream: S,
    link: Link,
    /// Receive buffer: bytes read but not yet consumed.
    rbuf: RecvBuf,
    /// Scratch for `send_with`: header plus payload chunks.
    scratch: Box<[u8]>,
}

/// The descriptor and configuration, kept apart from the buffers so both can be borrowed at once.
struct Link {
    fd: RawFd,
    cfg: EndpointConfig,
    info: EndpointInfo,
    /// Most payload bytes one `sendmsg` of `send` hands the kernel, per message length (`None`:
    /// the whole message in one call, which the kernel cuts as its buffers fill).
    fragments: Option<crate::FragmentPlan>,
}

impl<S> fmt::Debug for StreamEndpoint<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StreamEndpoint")
            .field("fd", &self.link.fd)
            .field("info", &self.link.info)
            .field("idle_timeout", &self.link.cfg.idle_timeout)
            .field("buffered", &self.rbuf.buffered())
            .finish()
    }
}

impl<S: AsRawFd> StreamEndpoint<S> {
    /// Wraps a connected stream socket. Puts it in the configured mode: `O_NONBLOCK` for
    /// [`Mode::Poll`]; blocking with `SO_RCVTIMEO`/`SO_SNDTIMEO` = `idle_timeout` for
    /// [`Mode::Block`]. Allocates the receive and send scratch buffers once, here.
    pub fn new(
        stream: S,
        cfg: EndpointConfig,
        transport: TransportKind,
        peer: String,
    ) -> Result<Self, TransportError> {
        let fd = stream.as_raw_fd();
        match cfg.mode {
            Mode::Poll => set_nonblocking(fd, true)?,
            Mode::Block => {
                set_nonblocking(fd, false)?;
                set_timeout(fd, libc::SO_RCVTIMEO, cfg.idle_timeout)?;
                set_timeout(fd, libc::SO_SNDTIMEO, cfg.idle_timeout)?;
            }
        }
        let scratch_len = SEND_CHUNK.min(HEADER_LEN.saturating_add(cfg.max_message));
        Ok(StreamEndpoint {
            stream,
            link: Link {
                fd,
                cfg,
                info: EndpointInfo::new(transport, peer, &cfg),
                fragments: None,
            },
            rbuf: RecvBuf::new(READ_BUF_LEN),
            scratch: vec![0u8; scratch_len].into_boxed_slice(),
        })
    }
}

/// Most iovecs handed to one `sendmsg` (Linux's UIO_MAXIOV is 1024).
pub(crate) const MAX_IOV: usize = 129;

pub(crate) const EMPTY_IOV: libc::iovec = libc::iovec {
    iov_base: std::ptr::null_mut(),
    iov_len: 0,
};

/// Fills `iov` with the header and then every non-empty part (fewer than [`MAX_IOV`] parts);
/// returns how many iovecs it used. The gather list of one vectored send.
#[inline]
pub(crate) fn header_and_parts(hdr: &[u8], parts: &[&[u8]], iov: &mut [libc::iovec]) -> usize {
    let mut n = 0;
    for p in std::iter::once(hdr)
        .chain(parts.iter().copied())
        .filter(|p| !p.is_empty())
    {
        iov[n] = libc::iovec {
            iov_base: p.as_ptr() as *mut libc::c_void,
            iov_len: p.len(),
        };
        n += 1;
    }
    n
}

/// One `sendmsg` with an iovec per part (header first): the kernel gathers, nothing is packed.
/// More than 128 parts are gathered through the send scratch buffer instead.
impl<S> crate::VectoredSend for StreamEndpoint<S> {
    fn send_vectored(&mut self, tag: Tag, parts: &[&[u8]]) -> Result<(), TransportError> {
        let len: usize = parts.iter().map(|p| p.len()).sum();
        check_send_len(len, self.link.cfg.max_message)?;
        if parts.len() >= MAX_IOV {
            return self.send_with(tag, len, |off, piece| crate::gather(parts, off, piece));
        }
        let link = &self.link;
        let mut backoff: Option<Backoff> = None;
        send_gathered(tag, len, parts, |msg, mid| loop {
            // SAFETY: the iovecs of `msg` describe the header and `parts`, live and readable for
            // the call; sendmsg only reads through them.
            let r = unsafe { libc::sendmsg(link.fd, msg, libc::MSG_NOSIGNAL) };
            if r < 0 {
                let e = io::Error::last_os_error();
                match e.kind() {
                    io::ErrorKind::Interrupted => continue,
                    _ if is_would_block(&e) => link.wait(&mut backoff)?,
                    _ => return Err(link.fail("send", e, mid)),
                }
                continue;
            }
            backoff = None;
            return Ok(r as usize);
        })
    }
}

/// Bytes already buffered, or a zero-timeout `poll(2)` on the socket: one syscall per check.
impl<S> StreamEndpoint<S> {
    /// Cuts what `send` hands the kernel into calls of at most the plan's fragment size for the
    /// message's length (the pipeline benchmark's chunked sends); `None`: one call per message.
    pub fn set_fragments(&mut self, plan: Option<crate::FragmentPlan>) {
        self.link.fragments = plan;
    }
}

impl<S> crate::Readiness for StreamEndpoint<S> {
    fn readable_now(&self) -> Result<bool, TransportError> {
        Ok(self.rbuf.buffered() > 0 || poll_readable(self.link.fd, &self.link.info.peer)?)
    }
}

impl<S> crate::SwitchMode for StreamEndpoint<S> {
    fn set_mode(&mut self, mode: Mode, block_spins: u32) -> Result<(), TransportError> {
        let fd = self.link.fd;
        match mode {
            Mode::Poll => set_nonblocking(fd, true)?,
            Mode::Block => {
                set_nonblocking(fd, false)?;
                set_timeout(fd, libc::SO_RCVTIMEO, self.link.cfg.idle_timeout)?;
                set_timeout(fd, libc::SO_SNDTIMEO, self.link.cfg.idle_timeout)?;
            }
        }
        self.link.cfg.mode = mode;
        self.link.cfg.block_spins = block_spins;
        self.link.info.mode = mode;
        Ok(())
    }
}

impl<S> StreamEndpoint<S> {
    /// The configuration this endpoint was created with.
    pub fn config(&self) -> &EndpointConfig {
        &self.link.cfg
    }

    /// The underlying socket.
    pub fn get_ref(&self) -> &S {
        &self.stream
    }

    /// Gives the socket back. Bytes already read into the endpoint's buffer are lost, and the
    /// socket keeps the mode (non-blocking or timeouts) it was put in.
    pub fn into_inner(self) -> S {
        self.stream
    }

    /// Bytes received from the socket but not yet consumed by a receive.
    pub fn buffered(&self) -> usize {
        self.rbuf.buffered()
    }

    /// One non-blocking step of the receive side of `sendrecv`: consumes what is buffered and
    /// makes at most one `recv` call. Returns whether anything moved.
    fn rx_step(&mut self, rx: &mut Rx, buf: &mut [u8]) -> Result<bool, TransportError> {
        let Self { link, rbuf, .. } = self;
        let progress = rbuf.rx_buffered(rx, buf, link.cfg.max_message, &link.info.peer)?;
        match *rx {
            Rx::Done { .. } => Ok(progress),
            Rx::Header => {
                // Room for the header was made.
                let mid = rbuf.buffered() > 0;
                match sys_recv(link.fd, rbuf.free(), libc::MSG_DONTWAIT) {
                    Ok(0) => return Err(link.closed(mid)),
                    Ok(n) => rbuf.filled(n),
                    Err(e) if is_would_block(&e) => return Ok(progress),
                    Err(e) => return Err(link.fail("recv", e, mid)),
                }
                // Parse what arrived, but make no second call in this step.
                if rbuf.buffered() >= HEADER_LEN {
                    let (tag, len) = rbuf.take_header(link.cfg.max_message, &link.info.peer)?;
                    *rx = Rx::Payload { tag, len, got: 0 };
                }
                Ok(true)
            }
            Rx::Payload { tag, len, got } => {
                // Nothing buffered (the buffer was reset) and more to come: one call, straight
                // into the caller's buffer when the message fits, else into ours to be
                // discarded.
                let fits = len <= buf.len();
                let r = if fits {
                    sys_recv(link.fd, &mut buf[got..len], libc::MSG_DONTWAIT)
                } else {
                    sys_recv(link.fd, rbuf.free(), libc::MSG_DONTWAIT)
                };
                match r {
                    Ok(0) => return Err(link.closed(true)),
                    Ok(n) if fits => {
                        let got = got + n;
                        *rx = if got == len {
                            Rx::Done { tag, len }
                        } else {
                            Rx::Payload { tag, len, got }
                        };
                    }
                    Ok(n) => rbuf.filled(n),
                    Err(e) if is_would_block(&e) => return Ok(progress),
                    Err(e) => return Err(link.fail("recv", e, true)),
                }
                Ok(true)
            }
        }
    }
}

impl<S> Endpoint for StreamEndpoint<S> {
    fn send_with<F: FnMut(usize, &mut [u8])>(
        &mut self,
        tag: Tag,
        len: usize,
        fill: F,
    ) -> Result<(), TransportError> {
        check_send_len(len, self.link.cfg.max_message)?;
        let Self { link, scratch, .. } = self;
        send_chunked(scratch, tag, len, fill, |chunk, mid| {
            link.send_all(chunk, &[], mid)
        })
    }

    fn recv_with<F: FnMut(Fragment<'_>)>(&mut self, sink: F) -> Result<RecvInfo, TransportError> {
        let Self { link, rbuf, .. } = self;
        rbuf.recv_with(link, sink)
    }

    fn sendrecv(
        &mut self,
        tag: Tag,
        data: &[u8],
        buf: &mut [u8],
    ) -> Result<RecvInfo, TransportError> {
        check_send_len(data.len(), self.link.cfg.max_message)?;
        let hdr = encode_header(tag, data.len());
        let total_out = HEADER_LEN + data.len();
        let mut sent = 0usize;
        let mut rx = Rx::Header;
        let mut backoff: Option<Backoff> = None;
        // Set when the send side found the peer gone: what it may still have sent us is read
        // before reporting, so `mid_message` says whether either message was cut short.
        let mut send_gone: Option<TransportError> = None;
        loop {
            let mut progress = false;
            if send_gone.is_none() && sent < total_out {
                let (a, b) = remaining(&hdr, data, sent);
                match sys_sendv(self.link.fd, a, b, libc::MSG_DONTWAIT) {
                    Ok(n) => {
                        sent += n;
                        progress |= n > 0;
                    }
                    Err(e) if is_would_block(&e) => {}
                    Err(e) => {
                        let err = self.link.fail("send", e, sent > 0);
                        if !err.is_peer_gone() {
                            return Err(err);
                        }
                        send_gone = Some(err);
                    }
                }
            }
            let send_mid = sent > 0 && sent < total_out;
            match self.rx_step(&mut rx, buf) {
                Ok(p) => progress |= p,
                Err(e) => return Err(or_mid(e, send_mid)),
            }
            let recv_done = matches!(rx, Rx::Done { .. });
            if let Some(err) = send_gone.take() {
                if recv_done || !progress {
                    let recv_mid =
                        !recv_done && (self.rbuf.buffered() > 0 || !matches!(rx, Rx::Header));
                    return Err(or_mid(err, recv_mid));
                }
                send_gone = Some(err);
                continue;
            }
            if recv_done && sent == total_out {
                break;
            }
            if progress {
                backoff = None;
            } else {
                self.link
                    .wait_duplex(&mut backoff, !recv_done, sent < total_out)?;
            }
        }
        rx.finish(buf.len())
    }

    fn info(&self) -> &EndpointInfo {
        &self.link.info
    }

    /// One `sendmsg` of header and `data`, straight from the caller's slice.
    fn send(&mut self, tag: Tag, data: &[u8]) -> Result<(), TransportError> {
        check_send_len(data.len(), self.link.cfg.max_message)?;
        self.link
            .send_all(&encode_header(tag, data.len()), data, false)
    }

    /// Copies what is buffered, then reads the rest of the message directly into `buf`.
    fn recv(&mut self, buf: &mut [u8]) -> Result<RecvInfo, TransportError> {
        let Self { link, rbuf, .. } = self;
        rbuf.recv(link, buf)
    }
}

impl<S> AsRawFd for StreamEndpoint<S> {
    fn as_raw_fd(&self) -> RawFd {
        self.link.fd
    }
}

/// Plain `recv(2)` calls, waiting as the mode says.
impl ReadMore for Link {
    #[inline]
    fn read_more(
        &mut self,
        buf: &mut [u8],
        waitall: bool,
        mid: bool,
    ) -> Result<usize, TransportError> {
        self.recv_some(buf, waitall, mid)
    }

    /// Asks a blocking socket to fill `buf` in one call (`MSG_WAITALL`).
    #[inline]
    fn read_rest(&mut self, buf: &mut [u8]) -> Result<(), TransportError> {
        let mut got = 0;
        while got < buf.len() {
            got += self.recv_some(&mut buf[got..], true, true)?;
        }
        Ok(())
    }

    #[inline]
    fn limits(&self) -> (usize, &str) {
        (self.cfg.max_message, &self.info.peer)
    }
}

impl Link {
    /// Receives at least one byte into `buf` (non-empty), waiting as the mode says. End of
    /// stream is `PeerClosed`. `waitall` asks a blocking socket to fill `buf` in one call.
    #[inline]
    fn recv_some(&self, buf: &mut [u8], waitall: bool, mid: bool) -> Result<usize, TransportError> {
        debug_assert!(!buf.is_empty());
        let flags = match self.cfg.mode {
            Mode::Block if waitall => libc::MSG_WAITALL,
            _ => 0,
        };
        if self.cfg.mode == Mode::Block {
            // Spin-then-block: non-blocking checks first, then the blocking call.
            for _ in 0..self.cfg.block_spins {
                match sys_recv(self.fd, buf, libc::MSG_DONTWAIT) {
                    Ok(0) => return Err(self.closed(mid)),
                    Ok(n) => return Ok(n),
                    Err(e) if is_would_block(&e) => std::hint::spin_loop(),
                    Err(e) => return Err(self.fail("recv", e, mid)),
                }
            }
        }
        let mut backoff: Option<Backoff> = None;
        loop {
            match sys_recv(self.fd, buf, flags) {
                Ok(0) => return Err(self.closed(mid)),
                Ok(n) => return Ok(n),
                Err(e) if is_would_block(&e) => self.wait(&mut backoff)?,
                Err(e) => return Err(self.fail("recv", e, mid)),
            }
        }
    }

    /// Sends all of `a` then `b`, in as few `sendmsg` calls as the kernel allows.
    #[inline]
    fn send_all(&self, a: &[u8], b: &[u8], mid: bool) -> Result<(), TransportError> {
        let total = a.len() + b.len();
        let chunk = self
            .fragments
            .map_or(usize::MAX, |p| p.for_len(b.len()).max(1));
        let mut sent = 0;
        let mut backoff: Option<Backoff> = None;
        while sent < total {
            let (x, y) = remaining(a, b, sent);
            let y = &y[..y.len().min(chunk)];
            match sys_sendv(self.fd, x, y, 0) {
                Ok(0) => {
                    return Err(TransportError::io(
                        format!("send to {}", self.info.peer),
                        io::Error::from(io::ErrorKind::WriteZero),
                    ))
                }
                Ok(n) => {
                    sent += n;
                    backoff = None;
                }
                Err(e) if is_would_block(&e) => self.wait(&mut backoff)?,
                Err(e) => return Err(self.fail("send", e, mid || sent > 0)),
            }
        }
        Ok(())
    }

    /// A single-direction call found nothing to do. In Poll mode, wait a little; in Block mode
    /// the kernel already waited the whole idle timeout (`SO_RCVTIMEO`/`SO_SNDTIMEO`).
    #[inline]
    fn wait(&self, backoff: &mut Option<Backoff>) -> Result<(), TransportError> {
        match self.cfg.mode {
            Mode::Poll => self.snooze(backoff),
            Mode::Block => Err(self.timeout()),
        }
    }

    #[inline]
    fn snooze(&self, backoff: &mut Option<Backoff>) -> Result<(), TransportError> {
        let timeout = self.cfg.idle_timeout;
        // End of stream tells a socket's death, so the liveness probe has nothing to add.
        match backoff
            .get_or_insert_with(|| Backoff::new(timeout))
            .snooze(|| true)
        {
            Ok(()) => Ok(()),
            Err(WaitStop::TimedOut) => Err(self.timeout()),
            Err(WaitStop::PeerGone) => Err(TransportError::PeerDied {
                peer: self.info.peer.clone(),
                mid_message: true,
            }),
        }
    }

    /// Neither direction of a `sendrecv` could move: spin (Poll) or sleep in `poll(2)` (Block).
    fn wait_duplex(
        &self,
        backoff: &mut Option<Backoff>,
        want_in: bool,
        want_out: bool,
    ) -> Result<(), TransportError> {
        match self.cfg.mode {
            Mode::Poll => self.snooze(backoff),
            Mode::Block => {
                let mut events = 0;
                if want_in {
                    events |= libc::POLLIN;
                }
                if want_out {
                    events |= libc::POLLOUT;
                }
                let mut pfd = libc::pollfd {
                    fd: self.fd,
                    events,
                    revents: 0,
                };
                let ms = self.cfg.idle_timeout.as_millis();
                let ms = if ms > i32::MAX as u128 { -1 } else { ms as i32 };
                // SAFETY: `pfd` is a valid, initialized pollfd array of length 1 that lives
                // for the whole call.
                let r = unsafe { libc::poll(&mut pfd, 1, ms) };
                match r {
                    0 => Err(self.timeout()),
                    r if r > 0 => Ok(()),
                    _ => {
                        let e = io::Error::last_os_error();
                        if e.kind() == io::ErrorKind::Interrupted {
                            Ok(())
                        } else {
                            Err(self.fail("poll", e, true))
                        }
                    }
                }
            }
        }
    }

    #[cold]
    fn timeout(&self) -> TransportError {
        timed_out(&self.info.peer, self.cfg.idle_timeout)
    }

    #[cold]
    fn closed(&self, mid: bool) -> TransportError {
        peer_closed(&self.info.peer, mid)
    }

    #[cold]
    fn fail(&self, op: &str, e: io::Error, mid: bool) -> TransportError {
        socket_error(&self.info.peer, op, e, mid)
    }
}

/// Marks a peer-gone error as mid-message when `mid` says a message was cut short.
fn or_mid(e: TransportError, mid: bool) -> TransportError {
    match e {
        TransportError::PeerClosed { peer, mid_message } => TransportError::PeerClosed {
            peer,
            mid_message: mid_message || mid,
        },
        TransportError::PeerDied { peer, mid_message } => TransportError::PeerDied {
            peer,
            mid_message: mid_message || mid,
        },
        e => e,
    }
}

/// What is left of `a` followed by `b` after the first `done` bytes.
#[inline]
fn remaining<'a>(a: &'a [u8], b: &'a [u8], done: usize) -> (&'a [u8], &'a [u8]) {
    if done < a.len() {
        (&a[done..], b)
    } else {
        (&[], &b[done - a.len()..])
    }
}

#[inline]
fn is_would_block(e: &io::Error) -> bool {
    e.kind() == io::ErrorKind::WouldBlock
}

/// `recv(2)`, retried on `EINTR`.
#[inline]
fn sys_recv(fd: RawFd, buf: &mut [u8], flags: libc::c_int) -> io::Result<usize> {
    loop {
        // SAFETY: `buf` is valid for writes of `buf.len()` bytes for the duration of the call,
        // and `fd` is owned by the endpoint, which outlives the call.
        let n = unsafe { libc::recv(fd, buf.as_mut_ptr().cast(), buf.len(), flags) };
        if n >= 0 {
            return Ok(n as usize);
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

/// One `sendmsg(2)` of `a` then `b` (either may be empty), with `MSG_NOSIGNAL`, retried on
/// `EINTR`.
#[inline]
fn sys_sendv(fd: RawFd, a: &[u8], b: &[u8], flags: libc::c_int) -> io::Result<usize> {
    let mut iov = [
        libc::iovec {
            iov_base: a.as_ptr() as *mut libc::c_void,
            iov_len: a.len(),
        },
        libc::iovec {
            iov_base: b.as_ptr() as *mut libc::c_void,
            iov_len: b.len(),
        },
    ];
    let (start, count) = match (a.is_empty(), b.is_empty()) {
        (false, false) => (0, 2),
        (false, true) => (0, 1),
        (true, false) => (1, 1),
        (true, true) => return Ok(0),
    };
    // SAFETY: msghdr is a plain C struct for which all-zero is a valid value (no name, no
    // control data).
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = iov[start..].as_mut_ptr();
    msg.msg_iovlen = count as _;
    loop {
        // SAFETY: `msg` points at `count` initialized iovecs that describe `a` and `b`, which
        // are valid for reads for the duration of the call; the kernel only reads through
        // `iov_base` for sendmsg, so the `*mut` casts are never written through.
        let n = unsafe { libc::sendmsg(fd, &msg, flags | libc::MSG_NOSIGNAL) };
        if n >= 0 {
            return Ok(n as usize);
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

pub(crate) fn set_nonblocking(fd: RawFd, on: bool) -> Result<(), TransportError> {
    // SAFETY: F_GETFL takes no argument and only reads the descriptor's flags.
    let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
    if flags < 0 {
        return Err(TransportError::io(
            "fcntl(F_GETFL)",
            io::Error::last_os_error(),
        ));
    }
    let new = if on {
        flags | libc::O_NONBLOCK
    } else {
        flags & !libc::O_NONBLOCK
    };
    if new != flags {
        // SAFETY: F_SETFL with an int flag set only changes the descriptor's status flags.
        if unsafe { libc::fcntl(fd, libc::F_SETFL, new) } < 0 {
            return Err(TransportError::io(
                "fcntl(F_SETFL)",
                io::Error::last_os_error(),
            ));
        }
    }
    Ok(())
}

/// Sets `SO_RCVTIMEO` or `SO_SNDTIMEO`. A zero timeout would mean "forever" to the kernel, so it
/// becomes the smallest positive one.
fn set_timeout(fd: RawFd, opt: libc::c_int, t: Duration) -> Result<(), TransportError> {
    let t = t.max(Duration::from_micros(1));
    let secs = t.as_secs().min(i32::MAX as u64);
    let tv = libc::timeval {
        tv_sec: secs as libc::time_t,
        tv_usec: t.subsec_micros() as libc::suseconds_t,
    };
    // SAFETY: `tv` is a valid timeval that lives for the call, and its exact size is passed.
    let r = unsafe {
        libc::setsockopt(
            fd,
            libc::SOL_SOCKET,
            opt,
            (&tv as *const libc::timeval).cast(),
            std::mem::size_of::<libc::timeval>() as libc::socklen_t,
        )
    };
    if r < 0 {
        let name = if opt == libc::SO_RCVTIMEO {
            "SO_RCVTIMEO"
        } else {
            "SO_SNDTIMEO"
        };
        return Err(TransportError::io(
            format!("setsockopt({name})"),
            io::Error::last_os_error(),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_layout() {
        let h = encode_header(0x0102_0304, 0x1122_3344_5566);
        assert_eq!(&h[0..8], &[0x66, 0x55, 0x44, 0x33, 0x22, 0x11, 0, 0]);
        assert_eq!(&h[8..12], &[4, 3, 2, 1]);
        assert_eq!(&h[12..16], b"1MPC");
    }

    #[test]
    fn remaining_splits() {
        let (a, b) = remaining(b"abc", b"defg", 0);
        assert_eq!((a, b), (&b"abc"[..], &b"defg"[..]));
        let (a, b) = remaining(b"abc", b"defg", 2);
        assert_eq!((a, b), (&b"c"[..], &b"defg"[..]));
        let (a, b) = remaining(b"abc", b"defg", 5);
        assert_eq!((a, b), (&b""[..], &b"fg"[..]));
    }
}
