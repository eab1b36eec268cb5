//! io_uring realization over a connected TCP or Unix-domain stream socket.
//!
//! The wire format is [`super::socket`]'s (a 16-byte header, then the payload), so a uring end
//! could talk to a plain socket end; only the way the process hands work to the kernel changes.
//! One ring per endpoint, set up once:
//!
//! * **Fixed file.** The socket is registered in slot 0 and every submission names it by index,
//!   sparing the kernel a descriptor lookup per operation.
//! * **Registered buffers.** A send buffer (index 0) and a receive buffer (index 1) are pinned at
//!   creation. The lending path works in them: [`Endpoint::send_with`] has the caller write the
//!   message into the registered send buffer and submits `WRITE_FIXED`; [`Endpoint::recv_with`]
//!   lends the message from the registered receive buffer, filled by `READ_FIXED`. The copying
//!   path uses plain memory: [`Endpoint::send`] and [`crate::VectoredSend`] submit one `SENDMSG`
//!   straight from the caller's slices, [`Endpoint::recv`] submits `RECV` straight into the
//!   caller's buffer. The `bufmgmt` benchmark compares the two (Kutluğ 2000, §3.2.4).
//! * **Completion.** [`Mode::Poll`] reaps the completion queue in user space, spinning (no
//!   syscall to find a completion). [`Mode::Block`] sleeps in `io_uring_enter(GETEVENTS)` with
//!   the idle timeout as the wait's own timeout; `block_spins` reaps first (spin-then-block).
//! * **SQPOLL** ([`UringOptions::sqpoll`]): a kernel thread polls the submission queue, so that
//!   submitting costs no syscall either. It occupies a core while it polls (it sleeps after
//!   [`SQPOLL_IDLE_MS`] without work), which on a 2-core machine competes with the two polling
//!   processes: off by default.
//!
//! **Soundness.** A submitted operation reads or writes memory until its completion arrives, so
//! no method returns while one of its operations is in flight, errors included: when a wait gives
//! up (idle timeout) or one direction fails while the other is pending, the socket is shut down,
//! which completes every pending operation, and the completions are reaped before returning. The
//! endpoint is unusable afterwards, as a socket endpoint is after such an error.
//!
//! `WRITE_FIXED` on a socket whose peer has gone raises `SIGPIPE` (a `write`, unlike `sendmsg`,
//! cannot say `MSG_NOSIGNAL`); Rust programs ignore `SIGPIPE` from their start, so this shows as
//! `EPIPE` and then [`TransportError::PeerClosed`].
//!
//! Where the kernel refuses io_uring (built without it, `kernel.io_uring_disabled`, a seccomp
//! filter as in many containers, or too little locked memory for the registered buffers), creating
//! the endpoint fails with a message saying which and what to use instead.

use super::framing::{send_chunked, send_gathered, ReadMore, RecvBuf, Rx};
use super::socket::{
    advance_iovecs, check_send_len, encode_header, peer_closed, poll_readable, set_nonblocking,
    socket_error, timed_out, HEADER_LEN, MAX_IOV,
};
use crate::backoff::Backoff;
use crate::{Endpoint, EndpointConfig, EndpointInfo, Fragment, RecvInfo, Tag, TransportError};
use commperf_core::{Mode, TransportKind};
use io_uring::{opcode, squeue, types, IoUring};
use std::fmt;
use std::io;
use std::os::fd::{AsRawFd, RawFd};
use std::time::{Duration, Instant};

/// Submission-queue entries per ring: at most two operations (one per direction) are ever in
/// flight, so a small ring suffices.
const RING_ENTRIES: u32 = 8;
/// How long the SQPOLL thread polls without work before it sleeps.
pub const SQPOLL_IDLE_MS: u32 = 1000;
/// Registered buffer indices.
const SEND_BUF: u16 = 0;
const RECV_BUF: u16 = 1;
/// `user_data` of the two kinds of operation.
const SEND_OP: u64 = 1;
const RECV_OP: u64 = 2;
/// Longest wait for pending operations to complete after the socket was shut down.
const DRAIN_LIMIT: Duration = Duration::from_secs(10);

/// How a uring endpoint is set up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UringOptions {
    /// A kernel thread polls the submission queue (`IORING_SETUP_SQPOLL`).
    pub sqpoll: bool,
    /// Size of the registered send buffer: the largest piece `send_with` fills at once.
    pub send_buf_bytes: usize,
    /// Size of the registered receive buffer.
    pub recv_buf_bytes: usize,
}

impl Default for UringOptions {
    fn default() -> Self {
        UringOptions {
            sqpoll: false,
            send_buf_bytes: 256 << 10,
            recv_buf_bytes: 64 << 10,
        }
    }
}

impl UringOptions {
    /// Small buffers, for endpoints that are only held open (the `conns` benchmark opens a
    /// thousand of them, and registered memory is pinned).
    pub fn small() -> Self {
        UringOptions {
            sqpoll: false,
            send_buf_bytes: 4 << 10,
            recv_buf_bytes: 4 << 10,
        }
    }
}

/// A connected stream socket driven through its own io_uring.
pub struct UringEndpoint<S> {
    io: Io,
    /// Owns the descriptor; all I/O goes through the ring's fixed-file slot 0.
    stream: S,
    sqpoll: bool,
    /// Registered send buffer (index [`SEND_BUF`]).
    sbuf: Box<[u8]>,
    /// Registered receive buffer (index [`RECV_BUF`]): bytes read, not consumed.
    rbuf: RecvBuf,
}

/// The ring and configuration, kept apart from the buffers so both can be borrowed at once.
struct Io {
    ring: IoUring,
    fd: RawFd,
    cfg: EndpointConfig,
    info: EndpointInfo,
    /// Operations submitted and not yet reaped.
    inflight: u32,
}

impl<S> fmt::Debug for UringEndpoint<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("UringEndpoint")
            .field("fd", &self.io.fd)
            .field("info", &self.io.info)
            .field("sqpoll", &self.sqpoll)
            .field("buffered", &self.rbuf.buffered())
            .finish()
    }
}

/// Why the kernel refused a ring, in words a user can act on.
fn refused(e: io::Error, sqpoll: bool) -> TransportError {
    let disabled = std::fs::read_to_string("/proc/sys/kernel/io_uring_disabled")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "unknown".into());
    let why = match e.raw_os_error() {
        Some(libc::ENOSYS) => "this kernel has no io_uring (built without CONFIG_IO_URING)".into(),
        Some(libc::EPERM | libc::EACCES) if sqpoll => format!(
            "the kernel refuses an SQPOLL ring to this process (it needs CAP_SYS_NICE before \
             Linux 5.11; kernel.io_uring_disabled = {disabled}); run without --uring-sqpoll"
        ),
        Some(libc::EPERM | libc::EACCES) if disabled == "0" => {
            "the kernel refuses io_uring to this process: a seccomp filter forbids \
             io_uring_setup (as container runtimes often install; kernel.io_uring_disabled is 0)"
                .to_string()
        }
        Some(libc::EPERM | libc::EACCES) => format!(
            "the kernel refuses io_uring to this process: kernel.io_uring_disabled = {disabled} \
             (0 allows everyone, 1 only root and kernel.io_uring_group, 2 no one), or a seccomp \
             filter forbids io_uring_setup"
        ),
        Some(libc::ENOMEM) => {
            "not enough locked memory for the rings (raise `ulimit -l`)".to_string()
        }
        _ => "the kernel refused to create an io_uring".to_string(),
    };
    TransportError::io(
        format!("io_uring_setup: {why}; transports tcp and uds need no io_uring"),
        e,
    )
}

impl<S: AsRawFd> UringEndpoint<S> {
    /// Wraps a connected stream socket: creates the ring, registers the socket as a fixed file
    /// and pins the two buffers. The socket is made blocking (io_uring waits for readiness
    /// itself; a non-blocking socket would hand `EAGAIN` back instead).
    pub fn new(
        stream: S,
        cfg: EndpointConfig,
        transport: TransportKind,
        peer: String,
        opts: UringOptions,
    ) -> Result<Self, TransportError> {
        let fd = stream.as_raw_fd();
        set_nonblocking(fd, false)?;
        let mut b = IoUring::builder();
        if opts.sqpoll {
            b.setup_sqpoll(SQPOLL_IDLE_MS);
        } else {
            // Completions run as task work of this process. Without these flags the kernel
            // interrupts the process to run it; with them it only raises a flag in the ring,
            // which the polling loop checks and answers with one io_uring_enter.
            b.setup_coop_taskrun().setup_taskrun_flag();
        }
        let ring = b.build(RING_ENTRIES).map_err(|e| refused(e, opts.sqpoll))?;
        ring.submitter()
            .register_files(&[fd])
            .map_err(|e| TransportError::io("io_uring: register the socket as a fixed file", e))?;
        let send_len = opts.send_buf_bytes.max(HEADER_LEN + 1);
        let mut sbuf = vec![0u8; send_len].into_boxed_slice();
        let mut rbuf = RecvBuf::new(opts.recv_buf_bytes.max(HEADER_LEN));
        let iov = [
            libc::iovec {
                iov_base: sbuf.as_mut_ptr().cast(),
                iov_len: sbuf.len(),
            },
            rbuf.as_iovec(),
        ];
        // SAFETY: both iovecs describe heap buffers owned by the endpoint that returns them
        // together with the ring: they stay allocated (boxed slices never move their contents)
        // for as long as the ring exists, which is the registration's requirement.
        unsafe { ring.submitter().register_buffers(&iov) }.map_err(|e| {
            TransportError::io(
                format!(
                    "io_uring: register {} KiB of buffers (pinned memory counts against \
                     `ulimit -l`)",
                    (sbuf.len() + rbuf.capacity()) >> 10
                ),
                e,
            )
        })?;
        Ok(UringEndpoint {
            io: Io {
                ring,
                fd,
                cfg,
                info: EndpointInfo::new(transport, peer, &cfg),
                inflight: 0,
            },
            stream,
            sqpoll: opts.sqpoll,
            sbuf,
            rbuf,
        })
    }
}

impl<S> UringEndpoint<S> {
    /// The underlying socket.
    pub fn get_ref(&self) -> &S {
        &self.stream
    }

    /// Whether a kernel thread polls this endpoint's submission queue.
    pub fn sqpoll(&self) -> bool {
        self.sqpoll
    }
}

impl Io {
    /// Queues `e`. The caller guarantees that the memory `e` names stays valid until its
    /// completion is reaped, which every method ensures by reaping before it returns.
    #[inline]
    fn push(&mut self, e: squeue::Entry) -> Result<(), TransportError> {
        // SAFETY: see above; at most two operations are in flight and the ring has eight
        // entries, so the push cannot fail for lack of room (it is still checked).
        if unsafe { self.ring.submission().push(&e) }.is_err() {
            let e = TransportError::io(
                "io_uring: submission queue full",
                io::Error::from(io::ErrorKind::WouldBlock),
            );
            return Err(self.bail(e));
        }
        self.inflight += 1;
        Ok(())
    }

    #[inline]
    fn reap(&mut self) -> Option<(u64, i32)> {
        let c = self.ring.completion().next()?;
        self.inflight -= 1;
        Some((c.user_data(), c.result()))
    }

    fn submit_now(&mut self) -> Result<(), TransportError> {
        if self.ring.submission().is_empty() {
            return Ok(());
        }
        loop {
            match self.ring.submit() {
                Ok(_) => return Ok(()),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if e.raw_os_error() == Some(libc::EBUSY) => return Ok(()),
                Err(e) => return Err(self.bail(TransportError::io("io_uring_enter", e))),
            }
        }
    }

    /// Submits what is queued and waits for the next completion, as the mode says. When the
    /// wait fails, pending operations are completed and reaped before the error is returned.
    #[inline]
    fn next_cqe(&mut self) -> Result<(u64, i32), TransportError> {
        if let Some(c) = self.reap() {
            return Ok(c);
        }
        match self.cfg.mode {
            Mode::Poll => {
                self.submit_now()?;
                let mut backoff = Backoff::new(self.cfg.idle_timeout);
                loop {
                    if let Some(c) = self.reap() {
                        return Ok(c);
                    }
                    if self.ring.submission().taskrun() {
                        let _ = self.ring.submit();
                        continue;
                    }
                    // A dead peer completes the pending operation with 0 or an error, so
                    // there is nothing to probe.
                    if backoff.snooze(|| true).is_err() {
                        let e = self.timeout();
                        return Err(self.bail(e));
                    }
                }
            }
            Mode::Block => {
                if self.cfg.block_spins > 0 {
                    self.submit_now()?;
                    for _ in 0..self.cfg.block_spins {
                        if let Some(c) = self.reap() {
                            return Ok(c);
                        }
                        std::hint::spin_loop();
                    }
                }
                self.wait_kernel(self.cfg.idle_timeout)
            }
        }
    }

    /// Sleeps in `io_uring_enter` until a completion arrives or `limit` passes.
    #[cold]
    fn wait_kernel(&mut self, limit: Duration) -> Result<(u64, i32), TransportError> {
        let start = Instant::now();
        loop {
            let left = limit.saturating_sub(start.elapsed());
            let ts = types::Timespec::from(left.max(Duration::from_micros(1)));
            let args = types::SubmitArgs::new().timespec(&ts);
            match self.ring.submitter().submit_with_args(1, &args) {
                Ok(_) => {}
                Err(e) if e.raw_os_error() == Some(libc::ETIME) => {}
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(self.bail(TransportError::io("io_uring_enter", e))),
            }
            if let Some(c) = self.reap() {
                return Ok(c);
            }
            if start.elapsed() >= limit {
                let e = self.timeout();
                return Err(self.bail(e));
            }
        }
    }

    /// Waits for the completion of the one operation in flight.
    #[inline]
    fn complete(&mut self, op: u64) -> Result<i32, TransportError> {
        let (ud, res) = self.next_cqe()?;
        debug_assert_eq!(ud, op, "one operation in flight");
        Ok(res)
    }

    /// Before returning `e` with operations in flight: shuts the socket down, which completes
    /// them, and reaps them, so none outlives the memory it names.
    #[cold]
    fn bail(&mut self, e: TransportError) -> TransportError {
        if self.inflight == 0 {
            return e;
        }
        // SAFETY: shutdown on a descriptor the endpoint owns; no memory is involved.
        unsafe { libc::shutdown(self.fd, libc::SHUT_RDWR) };
        let start = Instant::now();
        while self.inflight > 0 {
            if self.reap().is_some() {
                continue;
            }
            if start.elapsed() > DRAIN_LIMIT {
                // An operation that survives its socket's shutdown would write into memory
                // about to be freed; stopping is the only safe answer to that kernel bug.
                eprintln!(
                    "commperf: io_uring operations on the connection to {} did not complete \
                     after shutdown; aborting",
                    self.info.peer
                );
                std::process::abort();
            }
            let ts = types::Timespec::new().nsec(100_000_000);
            let args = types::SubmitArgs::new().timespec(&ts);
            let _ = self.ring.submitter().submit_with_args(1, &args);
        }
        e
    }

    #[cold]
    fn timeout(&self) -> TransportError {
        timed_out(&self.info.peer, self.cfg.idle_timeout)
    }

    #[cold]
    fn closed(&self, mid: bool) -> TransportError {
        peer_closed(&self.info.peer, mid)
    }

    /// The error a failed or empty completion stands for.
    #[cold]
    fn failed(&self, op: &str, res: i32, mid: bool) -> TransportError {
        if res == 0 {
            if op == "recv" {
                return self.closed(mid);
            }
            return TransportError::io(
                format!("send to {}", self.info.peer),
                io::Error::from(io::ErrorKind::WriteZero),
            );
        }
        socket_error(&self.info.peer, op, io::Error::from_raw_os_error(-res), mid)
    }

    /// Sends `chunk` (a prefix of the registered send buffer) whole with `WRITE_FIXED`.
    fn send_fixed(&mut self, chunk: &[u8], mid: bool) -> Result<(), TransportError> {
        let len = chunk.len();
        let mut done = 0;
        while done < len {
            let ptr = chunk[done..].as_ptr();
            let e = opcode::WriteFixed::new(types::Fixed(0), ptr, (len - done) as u32, SEND_BUF)
                .build()
                .user_data(SEND_OP);
            self.push(e)?;
            let r = self.complete(SEND_OP)?;
            if r <= 0 {
                return Err(self.failed("send", r, mid || done > 0));
            }
            done += r as usize;
        }
        Ok(())
    }

    /// Sends a header and `parts` with `SENDMSG` straight from the caller's memory.
    fn send_plain(&mut self, tag: Tag, len: usize, parts: &[&[u8]]) -> Result<(), TransportError> {
        send_gathered(tag, len, parts, |msg, mid| {
            // `msg` and what it names outlive the operation: it is reaped just below.
            self.push(sendmsg(msg))?;
            let r = self.complete(SEND_OP)?;
            if r <= 0 {
                return Err(self.failed("send", r, mid));
            }
            Ok(r as usize)
        })
    }

    #[inline]
    fn check_send_len(&self, len: usize) -> Result<(), TransportError> {
        check_send_len(len, self.cfg.max_message)
    }
}

/// The `SENDMSG` of `msg` on the fixed socket; a dead peer is `EPIPE`, not `SIGPIPE`.
#[inline]
fn sendmsg(msg: &libc::msghdr) -> squeue::Entry {
    opcode::SendMsg::new(types::Fixed(0), msg)
        .flags(libc::MSG_NOSIGNAL as u32)
        .build()
        .user_data(SEND_OP)
}

/// `READ_FIXED` into the registered receive buffer; the rest of a large message by `RECV`
/// straight into the caller's memory.
impl ReadMore for Io {
    /// Reads at least one byte into `buf`, part of the registered receive buffer, with
    /// `READ_FIXED` (the ring waits as the mode says, whatever `waitall`).
    fn read_more(
        &mut self,
        buf: &mut [u8],
        _waitall: bool,
        mid: bool,
    ) -> Result<usize, TransportError> {
        debug_assert!(!buf.is_empty());
        let e = opcode::ReadFixed::new(
            types::Fixed(0),
            buf.as_mut_ptr(),
            buf.len() as u32,
            RECV_BUF,
        )
        .build()
        .user_data(RECV_OP);
        self.push(e)?;
        let r = self.complete(RECV_OP)?;
        if r <= 0 {
            return Err(self.failed("recv", r, mid));
        }
        Ok(r as usize)
    }

    /// Receives `buf.len()` bytes with `RECV(MSG_WAITALL)` straight into the caller's memory.
    fn read_rest(&mut self, buf: &mut [u8]) -> Result<(), TransportError> {
        let mut got = 0;
        while got < buf.len() {
            let rest = &mut buf[got..];
            let e = opcode::Recv::new(types::Fixed(0), rest.as_mut_ptr(), rest.len() as u32)
                .flags(libc::MSG_WAITALL)
                .build()
                .user_data(RECV_OP);
            self.push(e)?;
            let r = self.complete(RECV_OP)?;
            if r <= 0 {
                return Err(self.failed("recv", r, true));
            }
            got += r as usize;
        }
        Ok(())
    }

    #[inline]
    fn limits(&self) -> (usize, &str) {
        (self.cfg.max_message, &self.info.peer)
    }
}

impl<S> Endpoint for UringEndpoint<S> {
    /// Fills the registered send buffer and submits `WRITE_FIXED`: the registered-buffer path.
    fn send_with<F: FnMut(usize, &mut [u8])>(
        &mut self,
        tag: Tag,
        len: usize,
        fill: F,
    ) -> Result<(), TransportError> {
        let Self { io, sbuf, .. } = self;
        io.check_send_len(len)?;
        send_chunked(sbuf, tag, len, fill, |chunk, mid| io.send_fixed(chunk, mid))
    }

    /// Lends the message from the registered receive buffer, filled by `READ_FIXED`.
    fn recv_with<F: FnMut(Fragment<'_>)>(&mut self, sink: F) -> Result<RecvInfo, TransportError> {
        let Self { io, rbuf, .. } = self;
        rbuf.recv_with(io, sink)
    }

    /// One `SENDMSG` and the receive in flight together; whichever completes is resubmitted
    /// until both messages are through, so two peers exchanging large messages never deadlock.
    fn sendrecv(
        &mut self,
        tag: Tag,
        data: &[u8],
        buf: &mut [u8],
    ) -> Result<RecvInfo, TransportError> {
        let Self { io, rbuf, .. } = self;
        io.check_send_len(data.len())?;
        let hdr = encode_header(tag, data.len());
        let mut iov = [
            libc::iovec {
                iov_base: hdr.as_ptr() as *mut libc::c_void,
                iov_len: HEADER_LEN,
            },
            libc::iovec {
                iov_base: data.as_ptr() as *mut libc::c_void,
                iov_len: data.len(),
            },
        ];
        let n = if data.is_empty() { 1 } else { 2 };
        // SAFETY: msghdr is a plain C struct for which all-zero is a valid value.
        let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
        let (mut first, total_out, mut sent) = (0, HEADER_LEN + data.len(), 0);
        let (mut send_busy, mut recv_busy) = (false, false);
        let mut rx = Rx::Header;
        loop {
            // Buffered bytes change only when a receive completes, and a receive in flight
            // writes at `rend`: the buffer is reorganized only while none is.
            if !recv_busy {
                if let Err(e) = rbuf.rx_buffered(&mut rx, buf, io.cfg.max_message, &io.info.peer) {
                    return Err(io.bail(e));
                }
            }
            if sent < total_out && !send_busy {
                msg.msg_iov = iov[first..n].as_mut_ptr();
                msg.msg_iovlen = (n - first) as _;
                // Everything the operation names lives until the loop has reaped it.
                io.push(sendmsg(&msg))?;
                send_busy = true;
            }
            if !matches!(rx, Rx::Done { .. }) && !recv_busy {
                let e = match rx {
                    Rx::Payload { len, got, .. } if len <= buf.len() => {
                        let rest = &mut buf[got..len];
                        opcode::Recv::new(types::Fixed(0), rest.as_mut_ptr(), rest.len() as u32)
                            .flags(libc::MSG_WAITALL)
                            .build()
                    }
                    _ => {
                        let free = rbuf.free();
                        opcode::ReadFixed::new(
                            types::Fixed(0),
                            free.as_mut_ptr(),
                            free.len() as u32,
                            RECV_BUF,
                        )
                        .build()
                    }
                };
                io.push(e.user_data(RECV_OP))?;
                recv_busy = true;
            }
            if !send_busy && !recv_busy {
                break;
            }
            let (op, res) = io.next_cqe()?;
            if op == SEND_OP {
                send_busy = false;
                if res <= 0 {
                    let e = io.failed("send", res, sent > 0);
                    return Err(io.bail(e));
                }
                sent += res as usize;
                advance_iovecs(&mut iov[..n], &mut first, res as usize);
            } else {
                recv_busy = false;
                let mid = !matches!(rx, Rx::Header) || rbuf.buffered() > 0;
                if res <= 0 {
                    let e = io.failed("recv", res, mid);
                    return Err(io.bail(e));
                }
                match &mut rx {
                    Rx::Payload { len, got, .. } if *len <= buf.len() => *got += res as usize,
                    _ => rbuf.filled(res as usize),
                }
            }
        }
        rx.finish(buf.len())
    }

    fn info(&self) -> &EndpointInfo {
        &self.io.info
    }

    /// One `SENDMSG` from the caller's (plain, unregistered) memory.
    fn send(&mut self, tag: Tag, data: &[u8]) -> Result<(), TransportError> {
        self.io.check_send_len(data.len())?;
        self.io.send_plain(tag, data.len(), &[data])
    }

    /// What is buffered is copied; the rest arrives by `RECV` straight into `buf`.
    fn recv(&mut self, buf: &mut [u8]) -> Result<RecvInfo, TransportError> {
        let Self { io, rbuf, .. } = self;
        rbuf.recv(io, buf)
    }
}

/// One `SENDMSG` with an iovec per part; more than 128 parts are gathered into the registered
/// send buffer instead.
impl<S> crate::VectoredSend for UringEndpoint<S> {
    fn send_vectored(&mut self, tag: Tag, parts: &[&[u8]]) -> Result<(), TransportError> {
        let len: usize = parts.iter().map(|p| p.len()).sum();
        self.io.check_send_len(len)?;
        if parts.len() >= MAX_IOV {
            return self.send_with(tag, len, |off, piece| crate::gather(parts, off, piece));
        }
        self.io.send_plain(tag, len, parts)
    }
}

/// Bytes already buffered, or a zero-timeout `poll(2)` on the socket.
impl<S> crate::Readiness for UringEndpoint<S> {
    fn readable_now(&self) -> Result<bool, TransportError> {
        Ok(self.rbuf.buffered() > 0 || poll_readable(self.io.fd, &self.io.info.peer)?)
    }
}

/// Completion detection is the endpoint's own choice (spin on the queue or sleep in the
/// kernel); the socket is untouched.
impl<S> crate::SwitchMode for UringEndpoint<S> {
    fn set_mode(&mut self, mode: Mode, block_spins: u32) -> Result<(), TransportError> {
        self.io.cfg.mode = mode;
        self.io.cfg.block_spins = block_spins;
        self.io.info.mode = mode;
        Ok(())
    }
}

impl<S> AsRawFd for UringEndpoint<S> {
    fn as_raw_fd(&self) -> RawFd {
        self.io.fd
    }
}

/// Two connected uring endpoints over a Unix socketpair, for tests.
pub fn uds_pair(
    cfg: EndpointConfig,
    opts: UringOptions,
) -> Result<
    (
        UringEndpoint<std::os::unix::net::UnixStream>,
        UringEndpoint<std::os::unix::net::UnixStream>,
    ),
    TransportError,
> {
    let (a, b) =
        std::os::unix::net::UnixStream::pair().map_err(|e| TransportError::io("socketpair", e))?;
    Ok((
        UringEndpoint::new(
            a,
            cfg,
            TransportKind::UringUds,
            "socketpair end b".into(),
            opts,
        )?,
        UringEndpoint::new(
            b,
            cfg,
            TransportKind::UringUds,
            "socketpair end a".into(),
            opts,
        )?,
    ))
}
