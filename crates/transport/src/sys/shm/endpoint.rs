//! The endpoint: one end of a connection (its send ring and its receive ring), waiting and bells,
//! peer liveness, and the [`Endpoint`] operations built from the ring's and the large-message
//! path's steps, with fast paths for a small message that fits.
//!
//! Why it looks like this:
//! - **Blocking mode** sleeps on a per-side futex "bell". Whoever changes state the other side
//!   may wait for (data published, space freed, rendezvous completed) rings the peer's bell when
//!   the peer says it is asleep; Dekker-style SeqCst fences close the lost-wakeup race.
//! - **Peer death** is seen through a pidfd (readable once the process exits) and a `closed`
//!   flag set on drop; both are checked only on the slow path of a wait.

use crate::backoff::{Backoff, Stopped, WaitStop};
use crate::endpoint::copy_into;
use crate::{
    Endpoint, EndpointConfig, EndpointInfo, Fragment, RecvInfo, Side, Tag, TransportError,
};
use commperf_core::{Mode, TransportKind};
use std::sync::atomic::{fence, Ordering};
use std::time::{Duration, Instant};

use super::cq::CqPoster;
use super::ring::{Incoming, Rec, KIND_WHOLE, SIDE_FLAG};
use super::segment::{
    attach, pidfd_open, process_alive, Control, Mapping, ShmOptions, ShmSegment, SideCtrl,
};
use super::{futex_wait, futex_wake};

/// One end of a shared-memory connection.
#[derive(Debug)]
pub struct ShmEndpoint {
    pub(super) map: Mapping,
    pub(super) side: usize,
    pub(super) key: u64,
    pub(super) cap: u64,
    /// The largest piece a record carries (the segment's bound, which the receiver checks).
    pub(super) frag: usize,
    /// The fragment size this end sends each message length in.
    pub(super) plan: crate::FragmentPlan,
    /// Messages up to this length go whole in one record (`plan`'s short path, at most `frag`).
    pub(super) whole_max: usize,
    pub(super) tx: *mut u8,
    pub(super) rx: *mut u8,
    pub(super) tail: u64,
    pub(super) peer_head_cache: u64,
    pub(super) head: u64,
    pub(super) rndv_sent: u64,
    pub(super) single_copy_from: usize,
    pub(super) peer_pid: i32,
    pub(super) pidfd: Option<i32>,
    pub(super) info: EndpointInfo,
    pub(super) cfg: EndpointConfig,
    pub(super) scratch: Vec<u8>,
    /// Where every published record is also announced, with this endpoint's key.
    pub(super) notify: Option<CqPoster>,
}

// SAFETY: the raw ring pointers point into `map`, which the endpoint owns; an endpoint is used by
// one thread at a time (all methods take &mut self).
unsafe impl Send for ShmEndpoint {}

impl Drop for ShmEndpoint {
    fn drop(&mut self) {
        let c = self.map.ctrl();
        c.hdr.0.closed[self.side].store(1, Ordering::SeqCst);
        self.ring_peer_always();
        if let Some(fd) = self.pidfd.take() {
            // SAFETY: fd is ours.
            unsafe { libc::close(fd) };
        }
    }
}

impl ShmEndpoint {
    pub(super) fn new(
        map: Mapping,
        side: usize,
        peer_pid: i32,
        cfg: EndpointConfig,
        opts: ShmOptions,
    ) -> Result<Self, TransportError> {
        let key = map.ctrl().hdr.0.key;
        let ring = opts.ring_bytes;
        let tx = map.ring(side, ring);
        let rx = map.ring(1 - side, ring);
        let me = std::process::id() as i32;
        let peer = if peer_pid == me {
            format!("shm peer in this process ({me})")
        } else {
            format!("local peer process {peer_pid} (shm)")
        };
        let pidfd = if peer_pid > 0 && peer_pid != me {
            pidfd_open(peer_pid)
        } else {
            None
        };
        Ok(ShmEndpoint {
            key,
            cap: ring as u64,
            frag: opts.frag_bytes,
            plan: opts
                .fragments
                .unwrap_or(crate::FragmentPlan::fixed(opts.frag_bytes)),
            whole_max: opts.fragments.map_or(opts.frag_bytes, |p| {
                p.whole_up_to.min(opts.frag_bytes as u64) as usize
            }),
            tx,
            rx,
            tail: 0,
            peer_head_cache: 0,
            head: 0,
            rndv_sent: 0,
            single_copy_from: opts.single_copy_from.unwrap_or(usize::MAX),
            peer_pid,
            pidfd,
            info: EndpointInfo {
                transport: TransportKind::Shm,
                mode: cfg.mode,
                peer,
                max_message: cfg.max_message,
            },
            cfg,
            scratch: Vec::new(),
            notify: None,
            map,
            side,
        })
    }

    /// Announces every record this endpoint publishes on a completion queue (`None`: stop).
    pub fn set_notify(&mut self, poster: Option<CqPoster>) {
        self.notify = poster;
    }

    /// Sets the fragment size per message length this end sends in (`None`: the segment's
    /// fragment size for every message). Sizes beyond the segment's bound are cut to it.
    pub fn set_fragments(&mut self, plan: Option<crate::FragmentPlan>) {
        self.plan = plan.unwrap_or(crate::FragmentPlan::fixed(self.frag));
        self.whole_max = plan.map_or(self.frag, |p| p.whole_up_to.min(self.frag as u64) as usize);
    }

    /// The fragment size of a message of `len` bytes (`len`: it goes whole).
    #[inline]
    pub(super) fn frag_for(&self, len: usize) -> usize {
        if len <= self.whole_max {
            return len;
        }
        self.plan.for_len(len).clamp(super::ring::LINE, self.frag)
    }

    /// Sets the size from which `send` goes single-copy (`None`: never). Both ends may differ.
    pub fn set_single_copy_from(&mut self, from: Option<usize>) {
        self.single_copy_from = from.unwrap_or(usize::MAX);
    }

    #[inline]
    pub(super) fn ctrl(&self) -> &Control {
        self.map.ctrl()
    }

    #[inline]
    pub(super) fn me(&self) -> &SideCtrl {
        &self.ctrl().side[self.side]
    }

    #[inline]
    pub(super) fn peer(&self) -> &SideCtrl {
        &self.ctrl().side[1 - self.side]
    }

    /// Liveness probe for the slow path: Err names how the peer went away.
    pub(super) fn check_peer(&self, mid_message: bool) -> Result<(), TransportError> {
        if self.ctrl().hdr.0.closed[1 - self.side].load(Ordering::Acquire) != 0 {
            return Err(TransportError::PeerClosed {
                peer: self.info.peer.clone(),
                mid_message,
            });
        }
        if let Some(fd) = self.pidfd {
            let mut p = libc::pollfd {
                fd,
                events: libc::POLLIN,
                revents: 0,
            };
            // SAFETY: one valid pollfd, zero timeout.
            if unsafe { libc::poll(&mut p, 1, 0) } > 0 {
                return Err(TransportError::PeerDied {
                    peer: self.info.peer.clone(),
                    mid_message,
                });
            }
        } else if self.peer_pid > 0 && !process_alive(self.peer_pid) {
            return Err(TransportError::PeerDied {
                peer: self.info.peer.clone(),
                mid_message,
            });
        }
        Ok(())
    }

    /// Waits until `ready()` holds, spinning then yielding (poll) or sleeping on our bell (block).
    #[inline]
    pub(super) fn wait_until(
        &self,
        mid_message: bool,
        mut ready: impl FnMut(&Self) -> bool,
    ) -> Result<(), TransportError> {
        if ready(self) {
            return Ok(());
        }
        match self.cfg.mode {
            Mode::Poll => {
                let mut b = Backoff::new(self.cfg.idle_timeout);
                while !ready(self) {
                    match b.snooze_checked(|| self.check_peer(mid_message)) {
                        Ok(()) => {}
                        Err(Stopped::Gone(e)) => return Err(e),
                        Err(Stopped::TimedOut) => return Err(self.timeout_error()),
                    }
                }
                Ok(())
            }
            Mode::Block => {
                for _ in 0..self.cfg.block_spins {
                    if ready(self) {
                        return Ok(());
                    }
                    std::hint::spin_loop();
                }
                self.sleep_until(mid_message, ready)
            }
        }
    }

    #[cold]
    pub(super) fn sleep_until(
        &self,
        mid_message: bool,
        mut ready: impl FnMut(&Self) -> bool,
    ) -> Result<(), TransportError> {
        let start = Instant::now();
        let (bell, sleeping) = (&self.me().bell.0 .0, &self.me().bell.0 .1);
        loop {
            let seen = bell.load(Ordering::SeqCst);
            sleeping.store(1, Ordering::SeqCst);
            fence(Ordering::SeqCst);
            if ready(self) {
                sleeping.store(0, Ordering::Relaxed);
                return Ok(());
            }
            futex_wait(bell, seen, Duration::from_millis(50));
            sleeping.store(0, Ordering::Relaxed);
            if ready(self) {
                return Ok(());
            }
            if bell.load(Ordering::SeqCst) == seen {
                // Timed out (or spurious): the slow checks.
                self.check_peer(mid_message)?;
                if start.elapsed() > self.cfg.idle_timeout {
                    return Err(self.timeout_error());
                }
            }
        }
    }

    pub(super) fn timeout_error(&self) -> TransportError {
        TransportError::Timeout {
            peer: self.info.peer.clone(),
            secs: self.cfg.idle_timeout.as_secs(),
        }
    }

    /// After a state change the peer may be sleeping on: ring its bell (blocking mode only).
    #[inline]
    pub(super) fn ring_peer(&self) {
        if self.cfg.mode == Mode::Block {
            fence(Ordering::SeqCst);
            self.ring_peer_always_if_sleeping();
        }
    }

    pub(super) fn ring_peer_always_if_sleeping(&self) {
        let (bell, sleeping) = (&self.peer().bell.0 .0, &self.peer().bell.0 .1);
        if sleeping.load(Ordering::SeqCst) != 0 {
            bell.fetch_add(1, Ordering::SeqCst);
            futex_wake(bell);
        }
    }

    pub(super) fn ring_peer_always(&self) {
        fence(Ordering::SeqCst);
        let bell = &self.peer().bell.0 .0;
        bell.fetch_add(1, Ordering::SeqCst);
        futex_wake(bell);
    }

    pub(super) fn check_send_len(&self, len: usize) -> Result<(), TransportError> {
        if len > self.cfg.max_message {
            return Err(TransportError::SendTooLarge {
                len,
                max: self.cfg.max_message,
            });
        }
        Ok(())
    }

    pub(super) fn recv_into(
        &mut self,
        inc: Incoming,
        buf: &mut [u8],
    ) -> Result<RecvInfo, TransportError> {
        let cap = buf.len();
        let info = match inc {
            Incoming::Rndv {
                total,
                tag,
                addr,
                rec_bytes,
                ..
            } => {
                self.rndv_into(addr, total, rec_bytes, buf)?;
                RecvInfo { tag, len: total }
            }
            Incoming::Ring(p) => self.drain_ring_message(p, &mut |f| copy_into(buf, &f))?.0,
        };
        if info.len > cap {
            return Err(TransportError::Truncated { len: info.len, cap });
        }
        Ok(info)
    }
}

impl Endpoint for ShmEndpoint {
    fn send_with<F: FnMut(usize, &mut [u8])>(
        &mut self,
        tag: Tag,
        len: usize,
        fill: F,
    ) -> Result<(), TransportError> {
        self.check_send_len(len)?;
        self.ring_send(tag, len, fill, None::<fn() -> Side>)
    }

    #[inline]
    fn send(&mut self, tag: Tag, data: &[u8]) -> Result<(), TransportError> {
        // Fast path: a small message that fits before the ring end with room known to be free.
        let len = data.len();
        if len <= self.whole_max && len <= self.cfg.max_message {
            let rec = Self::record_bytes(len);
            let off = self.tail & (self.cap - 1);
            if rec <= self.cap - off && self.cap - (self.tail - self.peer_head_cache) >= rec {
                let r = Rec {
                    ptr: self.tx_at(off),
                };
                Self::write_header(r, len, tag, KIND_WHOLE, len);
                // SAFETY: the record has room for len payload bytes and is ours until published.
                unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), r.payload(len), len) };
                self.publish(r, rec);
                return Ok(());
            }
        }
        self.send_slow(tag, data)
    }

    fn recv(&mut self, buf: &mut [u8]) -> Result<RecvInfo, TransportError> {
        // Fast path: the next record is a whole small message that fits `buf`.
        if self.poll_ready()? {
            let r = self.rx_rec();
            let w2 = r.word(2);
            let total = r.word(1) as usize;
            if (w2 >> 32) as u32 == KIND_WHOLE && total <= self.frag && total <= buf.len() {
                // SAFETY: a published whole record holds `total` payload bytes.
                unsafe { std::ptr::copy_nonoverlapping(r.payload(total), buf.as_mut_ptr(), total) };
                self.release(Self::record_bytes(total));
                return Ok(RecvInfo {
                    tag: w2 as u32,
                    len: total,
                });
            }
        }
        let inc = self.next_incoming(false)?;
        self.recv_into(inc, buf)
    }
    #[inline]
    fn recv_with<F: FnMut(Fragment<'_>)>(
        &mut self,
        mut sink: F,
    ) -> Result<RecvInfo, TransportError> {
        // Decorators (`Emulated`, `Monitored`) receive this way, so without the fast path
        // they would pay the general path's bookkeeping on every small message.
        if let Some((info, _)) = self.lend_whole(false, &mut sink)? {
            return Ok(info);
        }
        self.recv_with_side_inner(sink).map(|(info, _)| info)
    }

    fn sendrecv(
        &mut self,
        tag: Tag,
        data: &[u8],
        buf: &mut [u8],
    ) -> Result<RecvInfo, TransportError> {
        self.sendrecv_inner(tag, data, None, buf)
            .map(|(info, _)| info)
    }

    fn info(&self) -> &EndpointInfo {
        &self.info
    }
}

/// The side value travels in the header's spare half line (see `payload_offset_for` in
/// `ring.rs`); only the last record of a fragmented message carries it, and a rendezvous record
/// carries it.
impl crate::SideBand for ShmEndpoint {
    fn send_with_side<F: FnMut(usize, &mut [u8]), S: FnOnce() -> Side>(
        &mut self,
        tag: Tag,
        len: usize,
        fill: F,
        side: S,
    ) -> Result<(), TransportError> {
        self.check_send_len(len)?;
        // Fast path, as `send`'s: a whole message that fits before the ring end with room known
        // to be free (a monitored stream of small messages takes it every time).
        if len <= self.whole_max {
            let rec = Self::record_bytes_for(len, true);
            let off = self.tail & (self.cap - 1);
            if rec <= self.cap - off && self.cap - (self.tail - self.peer_head_cache) >= rec {
                let r = Rec {
                    ptr: self.tx_at(off),
                };
                Self::write_header(r, len, tag, KIND_WHOLE | SIDE_FLAG, len);
                // SAFETY: the record has room for len payload bytes after the side value and is
                // ours until published.
                let piece =
                    unsafe { std::slice::from_raw_parts_mut(r.payload_for(len, true), len) };
                let mut fill = fill;
                fill(0, piece);
                r.set_side(side());
                self.publish(r, rec);
                return Ok(());
            }
        }
        self.ring_send(tag, len, fill, Some(side))
    }

    fn recv_with_side<F: FnMut(Fragment<'_>)>(
        &mut self,
        mut sink: F,
    ) -> Result<(RecvInfo, Option<Side>), TransportError> {
        if let Some(got) = self.lend_whole(true, &mut sink)? {
            return Ok(got);
        }
        self.recv_with_side_inner(sink)
    }

    fn sendrecv_side(
        &mut self,
        tag: Tag,
        data: &[u8],
        side: Side,
        buf: &mut [u8],
    ) -> Result<(RecvInfo, Option<Side>), TransportError> {
        self.sendrecv_inner(tag, data, Some(side), buf)
    }
}

impl ShmEndpoint {
    /// The receive fast paths' wait: in poll mode spins (with back-off) until a record is
    /// ready at the head and returns true; false sends the caller the general way (block mode
    /// and nothing ready yet). The peer gone with a record left still delivers it; the peer
    /// gone with nothing left is its error.
    #[inline]
    pub(super) fn poll_ready(&mut self) -> Result<bool, TransportError> {
        let mut b = None;
        loop {
            if self.rx_ready() {
                return Ok(true);
            }
            if self.cfg.mode == Mode::Block {
                return Ok(false);
            }
            let bo = b.get_or_insert_with(|| Backoff::new(self.cfg.idle_timeout));
            match bo.snooze(|| self.check_peer(false).is_ok()) {
                Ok(()) => {}
                Err(WaitStop::TimedOut) => return Err(self.timeout_error()),
                Err(WaitStop::PeerGone) => {
                    // Deliver what the peer managed to send before it went; else say it went.
                    if self.rx_ready() {
                        return Ok(true);
                    }
                    self.check_peer(false)?;
                }
            }
        }
    }

    /// The fast path of `recv_with` and `recv_with_side`, as `recv`'s: if the next record is
    /// a whole small message (carrying a side value when `side`), lends it to `sink` straight
    /// from the ring and releases it; None sends the caller the general way.
    #[inline]
    fn lend_whole<F: FnMut(Fragment<'_>)>(
        &mut self,
        side: bool,
        sink: &mut F,
    ) -> Result<Option<(RecvInfo, Option<Side>)>, TransportError> {
        if !self.poll_ready()? {
            return Ok(None);
        }
        let r = self.rx_rec();
        let w2 = r.word(2);
        let total = r.word(1) as usize;
        let rec = Self::record_bytes_for(total, side);
        let kind = if side {
            KIND_WHOLE | SIDE_FLAG
        } else {
            KIND_WHOLE
        };
        if (w2 >> 32) as u32 != kind
            || total > self.frag
            || total > self.cfg.max_message
            || (side && r.word(3) as usize != total)
            || (self.head & (self.cap - 1)) + rec > self.cap
        {
            return Ok(None);
        }
        let value = side.then(|| r.side());
        // SAFETY: a published whole record holds `total` payload bytes (after its side value
        // when it has one), inside the ring (checked above).
        let data = unsafe { std::slice::from_raw_parts(r.payload_for(total, side), total) };
        let tag = w2 as u32;
        sink(Fragment {
            tag,
            total_len: total,
            offset: 0,
            data,
        });
        self.release(rec);
        Ok(Some((RecvInfo { tag, len: total }, value)))
    }

    pub(super) fn recv_with_side_inner<F: FnMut(Fragment<'_>)>(
        &mut self,
        mut sink: F,
    ) -> Result<(RecvInfo, Option<Side>), TransportError> {
        match self.next_incoming(false)? {
            Incoming::Rndv {
                total,
                tag,
                addr,
                rec_bytes,
                side,
            } => {
                const CHUNK: usize = 1 << 20;
                if self.scratch.len() < CHUNK.min(total) {
                    self.scratch.resize(CHUNK.min(total), 0);
                }
                let mut scratch = std::mem::take(&mut self.scratch);
                let mut off = 0;
                let mut res = Ok(());
                loop {
                    let n = (total - off).min(CHUNK);
                    if let Err(e) = self.cma_read(addr, off, &mut scratch[..n]) {
                        res = Err(e);
                        break;
                    }
                    sink(Fragment {
                        tag,
                        total_len: total,
                        offset: off,
                        data: &scratch[..n],
                    });
                    off += n;
                    if off >= total {
                        break;
                    }
                }
                self.scratch = scratch;
                self.finish_rndv(rec_bytes);
                res.map(|()| (RecvInfo { tag, len: total }, side))
            }
            Incoming::Ring(p) => self.drain_ring_message(p, &mut sink),
        }
    }

    /// The duplex call, with an optional side value on the outgoing message; returns the
    /// incoming message's side value.
    pub(super) fn sendrecv_inner(
        &mut self,
        tag: Tag,
        data: &[u8],
        side: Option<Side>,
        buf: &mut [u8],
    ) -> Result<(RecvInfo, Option<Side>), TransportError> {
        self.check_send_len(data.len())?;
        let has_side = side.is_some();
        let mut side_fn = side.map(|v| move || v);
        let mut got_side = None;
        let rndv = data.len() >= self.single_copy_from;
        let mut sent = 0usize;
        let mut send_done = false;
        let mut posted = false;
        let mut got: Option<RecvInfo> = None;
        let mut recv_off = 0usize;
        let mut recv_meta: Option<(Tag, usize)> = None;
        let cap = buf.len();
        let mut truncated = false;
        loop {
            let mut progressed = false;
            // Outgoing: one piece per turn, so the incoming side keeps draining.
            if !send_done {
                if rndv {
                    if !posted {
                        posted = self.try_post_rndv(tag, data, side);
                        progressed |= posted;
                    }
                    if posted && self.rndv_complete() {
                        send_done = true;
                        progressed = true;
                    }
                } else if let Some(n) = self.try_put_piece(
                    tag,
                    data.len(),
                    sent,
                    &mut |off, piece: &mut [u8]| {
                        piece.copy_from_slice(&data[off..off + piece.len()])
                    },
                    &mut side_fn,
                ) {
                    sent += n;
                    send_done = sent >= data.len();
                    progressed = true;
                }
            }
            // Incoming: one record per turn.
            if got.is_none() {
                if let Some(inc) = self.try_incoming(recv_meta.is_some())? {
                    progressed = true;
                    match inc {
                        Incoming::Rndv {
                            total,
                            tag,
                            addr,
                            rec_bytes,
                            side,
                        } => {
                            self.rndv_into(addr, total, rec_bytes, buf)?;
                            truncated = total > cap;
                            got = Some(RecvInfo { tag, len: total });
                            got_side = side;
                        }
                        Incoming::Ring(p) => {
                            let (t, total) = (p.tag, p.total);
                            got_side = p.side;
                            recv_off += self
                                .take_piece(p, recv_meta, recv_off, &mut |f| copy_into(buf, &f))?;
                            if recv_off >= total {
                                truncated = total > cap;
                                got = Some(RecvInfo { tag: t, len: total });
                            } else {
                                recv_meta = Some((t, total));
                            }
                        }
                    }
                }
            }
            if send_done {
                if let Some(info) = got {
                    if truncated {
                        return Err(TransportError::Truncated { len: info.len, cap });
                    }
                    return Ok((info, got_side));
                }
            }
            if !progressed {
                let (tail, c, sent_now, frag) =
                    (self.tail, self.cap, sent, self.frag_for(data.len()));
                let dlen = data.len();
                let rs = self.rndv_sent;
                let mid = recv_meta.is_some() || sent > 0;
                let recv_pending = got.is_none();
                self.wait_until(mid, |s| {
                    if recv_pending && s.rx_ready() {
                        return true;
                    }
                    if send_done {
                        return false;
                    }
                    if rndv {
                        return if posted {
                            s.peer().rndv_done.0.load(Ordering::Acquire) >= rs
                        } else {
                            let need = s.room_needed(Self::record_bytes_for(8, has_side));
                            c - (tail - s.peer().head.0.load(Ordering::Acquire)) >= need
                        };
                    }
                    let n = if dlen <= frag {
                        dlen
                    } else {
                        (dlen - sent_now).min(frag)
                    };
                    let last = has_side && sent_now + n >= dlen;
                    let need = s.room_needed(Self::record_bytes_for(n, last));
                    c - (tail - s.peer().head.0.load(Ordering::Acquire)) >= need
                })?;
            }
        }
    }
}

/// Gathers the parts straight into transport memory (the ring, for shm): no packing buffer.
impl crate::VectoredSend for ShmEndpoint {
    fn send_vectored(&mut self, tag: Tag, parts: &[&[u8]]) -> Result<(), TransportError> {
        let len = parts.iter().map(|p| p.len()).sum();
        self.send_with(tag, len, |off, piece| crate::gather(parts, off, piece))
    }
}

/// A record published at the read position: one load of the stamp's cache line.
impl crate::Readiness for ShmEndpoint {
    fn readable_now(&self) -> Result<bool, TransportError> {
        Ok(self.rx_ready())
    }

    fn check_alive(&self) -> Result<(), TransportError> {
        self.check_peer(false)
    }
}

impl crate::SwitchMode for ShmEndpoint {
    fn set_mode(&mut self, mode: Mode, block_spins: u32) -> Result<(), TransportError> {
        (self.cfg.mode, self.cfg.block_spins, self.info.mode) = (mode, block_spins, mode);
        Ok(())
    }
}

/// Both ends of a connection in this process (for tests and in-process use).
pub fn pair(
    cfg: EndpointConfig,
    opts: ShmOptions,
) -> Result<(ShmEndpoint, ShmEndpoint), TransportError> {
    let seg = ShmSegment::create(opts, cfg.max_message)?;
    let name = seg.name().to_string();
    let mut b = attach(&name, cfg)?;
    let mut a = seg.accept(cfg, Duration::from_secs(5))?;
    a.set_single_copy_from(opts.single_copy_from);
    b.set_single_copy_from(opts.single_copy_from);
    Ok((a, b))
}
