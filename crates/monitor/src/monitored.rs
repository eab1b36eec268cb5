//! [`Monitored<E>`]: the monitoring scenario adapter (EPOS, Fröhlich et al. 2000, §2.2) over any
//! endpoint, in the shape of smoltcp's `Tracer<D>`: `new(inner, config)`, `get_ref`, `get_mut`,
//! `into_inner`, and every capability the inner endpoint has, forwarded.
//!
//! What the application sees is unchanged: the same tags, lengths, bytes and errors. On the wire
//! each message carries a 24-byte trailer that the receiving `Monitored` strips (both ends must
//! be monitored; a message without one is refused as a protocol error naming the peer). A
//! trailer rather than a header because pieces are written in order: the stamp goes into the
//! last bytes, written just before the transport publishes them, which is as close to the send
//! call's hand-over as a decorator can see (for shm the ring publish follows it by a store; for
//! sockets the write system call follows it, so the kernel's copy counts as net). And the
//! receiver's offsets stay the caller's offsets.
//!
//! On a transport with the [`SideBand`] capability (shm), [`Monitored::with_sideband`] carries
//! the same stamp in the transport's own record header instead ([`SideBandWire`]): the header's
//! spare half line holds it, so a small message occupies no more cache lines monitored than
//! unmonitored, where the trailer spills a 64-byte message onto a third line of the ring. The
//! stamp is taken at the same point (just before the last piece is published). Both ends must
//! use the same wire: a message arriving without the stamp the receiver expects is refused.
//!
//! Recording is a few clock reads, integer arithmetic and one histogram add per message, into
//! memory this endpoint owns: no locks, no logging, no allocation once a (key, size bin) has
//! been seen. Pausing ([`Monitor::pause`]) keeps the trailer (the peer still strips it) but skips
//! clock reads and recording. [`Parts`] switches the sender's part, the receiver's part and the
//! clock on one at a time (Liao et al. 1998, Figures 7–10), to attribute the cost. A receive's
//! conversions and histogram adds wait for the endpoint's next call (see `Pending`), so a
//! ping-pong's answer does not wait for them.

use crate::clock::{self, Correction, LocalClock, OffsetSample, SyncPolicy, TscClock};
use crate::hist::{Histograms, MsgKind, Protocol};
use crate::trace::{TraceEvent, TraceOp, TraceRing};
use crate::MonitorError;
use commperf_transport::{
    Endpoint, EndpointInfo, Fragment, Readiness, RecvInfo, Side, SideBand, SwitchMode, Tag,
    TransportError, VectoredSend,
};
use std::marker::PhantomData;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Bytes the monitor adds to every message on the wire.
pub const TRAILER: usize = 24;
const MAGIC: u16 = 0xC0F1;
const STAMPED: u8 = 1;

/// The start/stop switch (Liao et al. 1998, §2.1): one handle shared by every endpoint of a
/// program, so the program can bracket the phase it wants to look at. Cloning shares the switch.
#[derive(Debug, Clone)]
pub struct Monitor(Arc<AtomicBool>);

impl Monitor {
    /// A switch, on or off from the start.
    pub fn new(enabled: bool) -> Self {
        Monitor(Arc::new(AtomicBool::new(enabled)))
    }
    pub fn pause(&self) {
        self.0.store(false, Ordering::Relaxed)
    }
    pub fn resume(&self) {
        self.0.store(true, Ordering::Relaxed)
    }
    #[inline(always)]
    pub fn is_enabled(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }
}

impl Default for Monitor {
    fn default() -> Self {
        Monitor::new(true)
    }
}

/// Which of the monitor's parts run: Liao et al. (1998) Figures 7–10 switch them on one at a time
/// to attribute the monitor's cost.
///
/// * `send`: the sender's part: its clock reads (call entry, stamp at the hand-over, call
///   exit), the stamp, and the source stage into the histograms.
/// * `recv`: the receiver's part: its clock reads (call entry, arrival, delivery) and the
///   destination, late-sender-wait and (when the message carries a stamp) net stages.
/// * `clock`: the clock alone: both sides read the clock and stamp exactly as with every part
///   on, and convert to global time, but record nothing (the values are discarded).
///
/// A part that is off costs a predicted branch: no clock read, no stamp, no histogram add. With
/// every part off the stamp's place still travels (flagged unstamped), so the peer's wire
/// agrees.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Parts {
    pub send: bool,
    pub recv: bool,
    pub clock: bool,
}

impl Parts {
    /// Everything: the monitor as it normally runs.
    pub const ALL: Parts = Parts {
        send: true,
        recv: true,
        clock: true,
    };
    /// Nothing recorded, nothing read (the decorator and its stamp's place only).
    pub const OFF: Parts = Parts {
        send: false,
        recv: false,
        clock: false,
    };
    pub const SEND: Parts = Parts {
        send: true,
        recv: false,
        clock: false,
    };
    pub const RECV: Parts = Parts {
        send: false,
        recv: true,
        clock: false,
    };
    pub const CLOCK: Parts = Parts {
        send: false,
        recv: false,
        clock: true,
    };

    /// Whether the sending side reads its clock and stamps.
    #[inline(always)]
    fn send_reads(self) -> bool {
        self.send || self.clock
    }
    /// Whether the receiving side reads its clock.
    #[inline(always)]
    fn recv_reads(self) -> bool {
        self.recv || self.clock
    }
}

impl Default for Parts {
    fn default() -> Self {
        Parts::ALL
    }
}

/// How an endpoint is monitored; separate from its state, as in smoltcp.
#[derive(Debug, Clone)]
pub struct MonitorConfig {
    /// This end's rank and the peer's (rank 0's clock is global time).
    pub rank: u32,
    pub peer_rank: u32,
    /// Program tag stamped into every message (Liao et al. 1998, §2.5).
    pub program: u32,
    pub switch: Monitor,
    /// Messages of at least this many bytes are recorded as rendezvous (e.g. shm's single-copy
    /// threshold); `None`: all eager.
    pub rendezvous_from: Option<usize>,
    /// Per-message trace records kept (0: none). Bounded: beyond it records are dropped and
    /// counted, never waited for.
    pub trace_capacity: usize,
    pub sync: SyncPolicy,
    /// Which parts run ([`Parts::ALL`] unless a cost measurement switches some off).
    pub parts: Parts,
}

impl MonitorConfig {
    pub fn new(rank: u32, peer_rank: u32) -> Self {
        MonitorConfig {
            rank,
            peer_rank,
            program: 0,
            switch: Monitor::default(),
            rendezvous_from: None,
            trace_capacity: 0,
            sync: SyncPolicy::default(),
            parts: Parts::ALL,
        }
    }
}

/// Call names stamped into the trailer (one byte) and recorded as the message type.
const CALLS: [&str; 4] = ["send", "send_with", "sendrecv", "send_vectored"];
const SEND: u8 = 0;
const SEND_WITH: u8 = 1;
const SENDRECV: u8 = 2;
const SEND_VECTORED: u8 = 3;

/// How a [`Monitored`] endpoint carries its stamp on the wire; chosen by the constructor.
pub trait Wire<E: Endpoint>: Sized {
    /// Bytes the stamp adds to every message inside the inner endpoint's maximum.
    const OVERHEAD: usize;
    #[doc(hidden)]
    fn send_call<C: LocalClock, F: FnMut(usize, &mut [u8])>(
        m: &mut Monitored<E, C, Self>,
        call: u8,
        tag: Tag,
        len: usize,
        fill: F,
    ) -> Result<(), TransportError>;
    #[doc(hidden)]
    fn recv_with<C: LocalClock, F: FnMut(Fragment<'_>)>(
        m: &mut Monitored<E, C, Self>,
        sink: F,
    ) -> Result<RecvInfo, TransportError>;
    #[doc(hidden)]
    fn sendrecv<C: LocalClock>(
        m: &mut Monitored<E, C, Self>,
        tag: Tag,
        data: &[u8],
        buf: &mut [u8],
    ) -> Result<RecvInfo, TransportError>;
}

/// The stamp as a 24-byte trailer after the user's bytes: works over any endpoint.
#[derive(Debug, Clone, Copy, Default)]
pub struct TrailerWire;

/// The stamp in the transport's own header ([`SideBand`]): no bytes added to the message.
#[derive(Debug, Clone, Copy, Default)]
pub struct SideBandWire;

impl<E: Endpoint> Wire<E> for TrailerWire {
    const OVERHEAD: usize = TRAILER;
    #[inline]
    fn send_call<C: LocalClock, F: FnMut(usize, &mut [u8])>(
        m: &mut Monitored<E, C, Self>,
        call: u8,
        tag: Tag,
        len: usize,
        fill: F,
    ) -> Result<(), TransportError> {
        m.trailer_send_call(call, tag, len, fill)
    }
    #[inline]
    fn recv_with<C: LocalClock, F: FnMut(Fragment<'_>)>(
        m: &mut Monitored<E, C, Self>,
        sink: F,
    ) -> Result<RecvInfo, TransportError> {
        m.trailer_recv_with(sink)
    }
    #[inline]
    fn sendrecv<C: LocalClock>(
        m: &mut Monitored<E, C, Self>,
        tag: Tag,
        data: &[u8],
        buf: &mut [u8],
    ) -> Result<RecvInfo, TransportError> {
        m.trailer_sendrecv(tag, data, buf)
    }
}

impl<E: Endpoint + SideBand> Wire<E> for SideBandWire {
    const OVERHEAD: usize = 0;
    #[inline]
    fn send_call<C: LocalClock, F: FnMut(usize, &mut [u8])>(
        m: &mut Monitored<E, C, Self>,
        call: u8,
        tag: Tag,
        len: usize,
        fill: F,
    ) -> Result<(), TransportError> {
        m.side_send_call(call, tag, len, fill)
    }
    #[inline]
    fn recv_with<C: LocalClock, F: FnMut(Fragment<'_>)>(
        m: &mut Monitored<E, C, Self>,
        sink: F,
    ) -> Result<RecvInfo, TransportError> {
        m.side_recv_with(sink)
    }
    #[inline]
    fn sendrecv<C: LocalClock>(
        m: &mut Monitored<E, C, Self>,
        tag: Tag,
        data: &[u8],
        buf: &mut [u8],
    ) -> Result<RecvInfo, TransportError> {
        m.side_sendrecv(tag, data, buf)
    }
}

/// A monitored endpoint.
#[derive(Debug)]
pub struct Monitored<E, C = TscClock, W = TrailerWire> {
    inner: E,
    cfg: MonitorConfig,
    clock: C,
    corr: Correction,
    info: EndpointInfo,
    hist: Histograms,
    trace: TraceRing,
    send_seq: u32,
    last_sync_local_ns: f64,
    scratch_out: Vec<u8>,
    scratch_in: Vec<u8>,
    /// The histogram slot of the last key recorded on each side, so that a stream of like
    /// messages neither builds, hashes nor compares its key (see [`SlotCache`]).
    send_slot: SlotCache,
    recv_slot: SlotCache,
    /// The last receive's readings, recorded at this endpoint's next call (see [`Pending`]).
    pending: Option<Pending>,
    wire: PhantomData<W>,
}

/// A receive's raw readings, kept for a moment: the clock conversions and histogram adds of a
/// receive are done at the endpoint's next call (after a send's hand-over, or before the next
/// receive's entry), not before the receive returns. The receive's result then reaches the
/// application (which in a ping-pong answers at once) without the bookkeeping on the critical
/// path, while the readings, and so the stages, are the same.
#[derive(Debug, Clone, Copy)]
struct Pending {
    tag: Tag,
    len: usize,
    tr: Trailer,
    stamped: bool,
    entry: f64,
    arrival: Option<f64>,
    delivered: f64,
}

/// The last (call, protocol, program) recorded on one side and its histogram slot. On one
/// endpoint the sender and receiver ranks are fixed, so these three fields are the whole key.
#[derive(Debug, Clone, Copy, Default)]
struct SlotCache(Option<(u8, bool, u32, usize)>);

#[derive(Debug, Clone, Copy)]
struct Trailer {
    handoff_global_ns: i64,
    entry_delta_ns: u32,
    program: u32,
    seq: u32,
    call: u8,
    flags: u8,
}

impl Trailer {
    fn encode(&self) -> [u8; TRAILER] {
        let mut t = [0u8; TRAILER];
        t[0..8].copy_from_slice(&self.handoff_global_ns.to_le_bytes());
        t[8..12].copy_from_slice(&self.entry_delta_ns.to_le_bytes());
        t[12..16].copy_from_slice(&self.program.to_le_bytes());
        t[16..20].copy_from_slice(&self.seq.to_le_bytes());
        t[20] = self.call;
        t[21] = self.flags;
        t[22..24].copy_from_slice(&MAGIC.to_le_bytes());
        t
    }

    /// The same fields as a side value: `[handoff, entry delta | program << 32,
    /// seq | call << 32 | flags << 40 | magic << 48]`.
    fn to_side(self) -> Side {
        [
            self.handoff_global_ns as u64,
            self.entry_delta_ns as u64 | (self.program as u64) << 32,
            self.seq as u64
                | (self.call as u64) << 32
                | (self.flags as u64) << 40
                | (MAGIC as u64) << 48,
        ]
    }

    fn from_side(s: &Side) -> Option<Trailer> {
        ((s[2] >> 48) as u16 == MAGIC).then(|| Trailer {
            handoff_global_ns: s[0] as i64,
            entry_delta_ns: s[1] as u32,
            program: (s[1] >> 32) as u32,
            seq: s[2] as u32,
            call: (s[2] >> 32) as u8,
            flags: (s[2] >> 40) as u8,
        })
    }

    fn decode(t: &[u8; TRAILER]) -> Option<Trailer> {
        (u16::from_le_bytes([t[22], t[23]]) == MAGIC).then(|| Trailer {
            handoff_global_ns: i64::from_le_bytes(t[0..8].try_into().unwrap()),
            entry_delta_ns: u32::from_le_bytes(t[8..12].try_into().unwrap()),
            program: u32::from_le_bytes(t[12..16].try_into().unwrap()),
            seq: u32::from_le_bytes(t[16..20].try_into().unwrap()),
            call: t[20],
            flags: t[21],
        })
    }
}

/// Copies the trailer bytes that fall into the piece `[off, off + piece.len())` of a message
/// whose user part is `user` bytes long.
#[inline]
fn put_trailer(tr: &[u8; TRAILER], user: usize, off: usize, piece: &mut [u8]) {
    let end = off + piece.len();
    if end > user {
        let from = off.max(user);
        piece[from - off..].copy_from_slice(&tr[from - user..end - user]);
    }
}

impl<E: Endpoint> Monitored<E, TscClock> {
    /// Monitors `inner` with a freshly calibrated TSC clock.
    pub fn new(inner: E, cfg: MonitorConfig) -> Self {
        Self::with_clock(inner, cfg, TscClock::calibrate())
    }
}

impl<E: Endpoint + SideBand> Monitored<E, TscClock, SideBandWire> {
    /// Monitors `inner` with the stamp in its own header ([`SideBandWire`]) and a freshly
    /// calibrated TSC clock. The peer must be monitored the same way.
    pub fn with_sideband(inner: E, cfg: MonitorConfig) -> Self {
        Self::with_sideband_clock(inner, cfg, TscClock::calibrate())
    }
}

impl<E: Endpoint + SideBand, C: LocalClock> Monitored<E, C, SideBandWire> {
    /// [`Monitored::with_sideband`] reading time from `clock`.
    pub fn with_sideband_clock(inner: E, cfg: MonitorConfig, clock: C) -> Self {
        Self::build(inner, cfg, clock)
    }
}

impl<E: Endpoint, C: LocalClock> Monitored<E, C, TrailerWire> {
    /// Monitors `inner`, reading time from `clock` (a virtual or deliberately skewed one in
    /// tests). The inner endpoint's maximum message must leave room for the trailer.
    pub fn with_clock(inner: E, cfg: MonitorConfig, clock: C) -> Self {
        Self::build(inner, cfg, clock)
    }
}

impl<E: Endpoint, C: LocalClock, W: Wire<E>> Monitored<E, C, W> {
    fn build(inner: E, cfg: MonitorConfig, clock: C) -> Self {
        let mut info = inner.info().clone();
        info.max_message = info.max_message.saturating_sub(W::OVERHEAD);
        let trace = TraceRing::new(cfg.trace_capacity);
        Monitored {
            inner,
            cfg,
            clock,
            corr: Correction::default(),
            info,
            hist: Histograms::new(),
            trace,
            send_seq: 0,
            last_sync_local_ns: f64::NEG_INFINITY,
            scratch_out: Vec::new(),
            scratch_in: Vec::new(),
            send_slot: SlotCache::default(),
            recv_slot: SlotCache::default(),
            pending: None,
            wire: PhantomData,
        }
    }

    pub fn get_ref(&self) -> &E {
        &self.inner
    }
    pub fn get_mut(&mut self) -> &mut E {
        &mut self.inner
    }
    pub fn into_inner(self) -> E {
        self.inner
    }
    pub fn config(&self) -> &MonitorConfig {
        &self.cfg
    }
    pub fn clock(&self) -> &C {
        &self.clock
    }

    /// Stops recording (this endpoint and every other sharing its switch).
    pub fn pause(&self) {
        self.cfg.switch.pause()
    }
    pub fn resume(&self) {
        self.cfg.switch.resume()
    }

    /// What was recorded so far (the last receive included).
    pub fn histograms(&mut self) -> &Histograms {
        self.settle();
        &self.hist
    }

    /// Records the last receive's readings, if not yet recorded.
    #[inline]
    fn settle(&mut self) {
        if let Some(p) = self.pending.take() {
            self.received(
                p.tag,
                p.len,
                &p.tr,
                p.stamped,
                p.entry,
                p.arrival,
                p.delivered,
            );
        }
    }

    /// Switches the monitor's parts (see [`Parts`]); both ends of a measurement switch alike.
    pub fn set_parts(&mut self, parts: Parts) {
        // A receive still pending is recorded as the parts of its time say.
        self.settle();
        self.cfg.parts = parts;
    }

    /// Puts `h` in place of what was recorded so far and hands that over (a measurement that
    /// keeps only some blocks' records swaps its set out around the others).
    pub fn replace_histograms(&mut self, h: Histograms) -> Histograms {
        self.settle();
        self.send_slot = SlotCache::default();
        self.recv_slot = SlotCache::default();
        std::mem::replace(&mut self.hist, h)
    }

    /// Hands over what was recorded so far and starts afresh.
    pub fn take_histograms(&mut self) -> Histograms {
        self.settle();
        // The cached slots index the set handed over.
        self.send_slot = SlotCache::default();
        self.recv_slot = SlotCache::default();
        std::mem::take(&mut self.hist)
    }

    /// Hands over the trace records so far and how many were dropped (bounded buffer full).
    pub fn take_trace(&mut self) -> (Vec<TraceEvent>, u64) {
        self.settle();
        self.trace.take()
    }

    pub fn correction(&self) -> &Correction {
        &self.corr
    }
    pub fn set_correction(&mut self, c: Correction) {
        // A receive still pending converts with the correction of its time.
        self.settle();
        self.corr = c;
    }

    /// Whether the policy's re-synchronization interval has passed since the last sync.
    pub fn resync_due(&self) -> bool {
        self.clock.now_ns() - self.last_sync_local_ns >= self.cfg.sync.interval.as_nanos() as f64
    }

    /// Rank 0's side of a global synchronization with this endpoint's peer. Both ends call
    /// their side at the same point of the program; the messages travel unmonitored.
    pub fn sync_as_master(&mut self) -> Result<OffsetSample, MonitorError> {
        // A receive still pending converts with the correction of its time.
        self.settle();
        let peer = self.cfg.peer_rank;
        let t = clock::sync_master(&mut [&mut self.inner], &[peer], &self.clock, &self.cfg.sync)?;
        self.last_sync_local_ns = self.clock.now_ns();
        Ok(t[0])
    }

    /// A peer's side of a global synchronization: updates this endpoint's correction.
    pub fn sync_as_follower(&mut self) -> Result<OffsetSample, MonitorError> {
        // A receive still pending converts with the correction of its time.
        self.settle();
        let s = clock::sync_follower(&mut self.inner, &self.clock, self.cfg.rank, &mut self.corr)?;
        self.last_sync_local_ns = self.clock.now_ns();
        Ok(s)
    }

    #[inline(always)]
    fn global(&self, local: f64) -> f64 {
        self.corr.to_global(local)
    }

    /// Whether this call's sending side reads the clock and stamps (switch on, a part needing it).
    #[inline(always)]
    fn send_on(&self) -> bool {
        self.cfg.parts.send_reads() && self.cfg.switch.is_enabled()
    }
    /// Whether this call's receiving side reads the clock.
    #[inline(always)]
    fn recv_on(&self) -> bool {
        self.cfg.parts.recv_reads() && self.cfg.switch.is_enabled()
    }

    #[inline]
    fn rendezvous(&self, bytes: usize) -> bool {
        matches!(self.cfg.rendezvous_from, Some(r) if bytes >= r)
    }

    /// The histogram slot of a message's key: the cached one when the key is the last one this
    /// side recorded (the common case), else a lookup that refreshes the cache.
    #[inline]
    fn slot(&mut self, receiving: bool, call: u8, bytes: usize, program: u32) -> usize {
        let rndv = self.rendezvous(bytes);
        let cache = if receiving {
            self.recv_slot
        } else {
            self.send_slot
        };
        if let Some((c, r, p, slot)) = cache.0 {
            if (c, r, p) == (call, rndv, program) {
                return slot;
            }
        }
        self.slot_miss(receiving, call, rndv, program)
    }

    #[cold]
    fn slot_miss(&mut self, receiving: bool, call: u8, rndv: bool, program: u32) -> usize {
        let protocol = if rndv {
            Protocol::Rendezvous
        } else {
            Protocol::Eager
        };
        let kind = MsgKind::p2p(protocol, CALLS.get(call as usize).copied().unwrap_or("?"));
        let (src, dst) = if receiving {
            (self.cfg.peer_rank, self.cfg.rank)
        } else {
            (self.cfg.rank, self.cfg.peer_rank)
        };
        let slot = self.hist.key_slot(src, dst, program, &kind);
        let c = SlotCache(Some((call, rndv, program, slot)));
        if receiving {
            self.recv_slot = c;
        } else {
            self.send_slot = c;
        }
        slot
    }

    fn check_len(&self, len: usize) -> Result<(), TransportError> {
        if len > self.info.max_message {
            return Err(TransportError::SendTooLarge {
                len,
                max: self.info.max_message,
            });
        }
        Ok(())
    }

    /// Records the sender's half of a message (source = `exit` − `entry`).
    #[inline]
    fn sent(&mut self, tag: Tag, len: usize, call: u8, entry: f64, exit: f64) {
        // The last receive first (after this send's hand-over: off the critical path, and in
        // program order for the trace).
        self.settle();
        let source = (exit - entry).round() as i64;
        if !self.cfg.parts.send {
            // The clock part alone: read and computed, not recorded.
            std::hint::black_box(source);
            return;
        }
        let slot = self.slot(false, call, len, self.cfg.program);
        self.hist
            .record_at(slot, len as u64, [Some(source), None, None, None]);
        if self.trace.enabled() {
            let (s, e) = (self.global(entry), self.global(exit));
            self.trace.push(TraceEvent {
                op: TraceOp::Send,
                peer: self.cfg.peer_rank,
                tag,
                bytes: len as u64,
                start_ns: s.round() as i64,
                end_ns: e.round() as i64,
            });
        }
    }

    fn trailer_send_call<F: FnMut(usize, &mut [u8])>(
        &mut self,
        call: u8,
        tag: Tag,
        len: usize,
        mut fill: F,
    ) -> Result<(), TransportError> {
        self.check_len(len)?;
        let on = self.send_on();
        let entry = if on { self.clock.now_ns() } else { 0.0 };
        let seq = self.send_seq;
        self.send_seq = seq.wrapping_add(1);
        let (clock, corr, program) = (&self.clock, self.corr, self.cfg.program);
        let mut tr: Option<[u8; TRAILER]> = None;
        self.inner.send_with(tag, len + TRAILER, |off, piece| {
            if off < len {
                let n = piece.len().min(len - off);
                fill(off, &mut piece[..n]);
            }
            if off + piece.len() > len {
                // The first trailer byte: stamp now, just before the last piece is handed over.
                let t = tr.get_or_insert_with(|| {
                    stamp(on, clock, &corr, entry, program, seq, call).encode()
                });
                put_trailer(t, len, off, piece);
            }
        })?;
        if on {
            // Source ends at the call's return, not at the stamp: a transport may do real work
            // after the last piece is filled (a socket's write, the model's o_s), and source is
            // defined as the time inside the send call.
            let exit = self.clock.now_ns();
            self.sent(tag, len, call, entry, exit);
        }
        Ok(())
    }

    /// Records the receiver's half of a message. `stamped`: the sender's part stamped it (else
    /// there is no net stage and no late-sender wait, only destination).
    #[inline]
    #[allow(clippy::too_many_arguments)]
    fn received(
        &mut self,
        tag: Tag,
        len: usize,
        tr: &Trailer,
        stamped: bool,
        entry: f64,
        arrival: Option<f64>,
        delivered: f64,
    ) {
        let handoff = tr.handoff_global_ns;
        let send_entry = handoff - tr.entry_delta_ns as i64;
        let entry_g = self.global(entry).round() as i64;
        // Arrival unknown (the duplex call): noticed at the latest when the call returned.
        let arr_g = self.global(arrival.unwrap_or(delivered)).round() as i64;
        let net = stamped.then_some(arr_g - handoff);
        let dest = arrival.map(|a| (delivered - a).round() as i64);
        let wait = stamped.then_some((send_entry - entry_g).max(0));
        if !self.cfg.parts.recv {
            // The clock part alone: read and computed, not recorded.
            std::hint::black_box((net, dest, wait));
            return;
        }
        let slot = self.slot(true, tr.call, len, tr.program);
        self.hist
            .record_at(slot, len as u64, [None, net, dest, wait]);
        if self.trace.enabled() {
            let d = self.global(delivered).round() as i64;
            self.trace.push(TraceEvent {
                op: TraceOp::Recv,
                peer: self.cfg.peer_rank,
                tag,
                bytes: len as u64,
                start_ns: entry_g,
                end_ns: d,
            });
        }
    }

    fn no_stamp(&self, len: usize) -> TransportError {
        TransportError::Protocol {
            peer: self.info.peer.clone(),
            what: format!(
                "a {len}-byte message without the monitor's side-band stamp: both ends must be \
                 monitored, the same way"
            ),
        }
    }

    fn no_trailer(&self, len: usize) -> TransportError {
        TransportError::Protocol {
            peer: self.info.peer.clone(),
            what: format!(
                "a {len}-byte message without the monitor's trailer: both ends must be monitored"
            ),
        }
    }
}

impl<E: Endpoint, C: LocalClock, W: Wire<E>> Endpoint for Monitored<E, C, W> {
    fn send_with<F: FnMut(usize, &mut [u8])>(
        &mut self,
        tag: Tag,
        len: usize,
        fill: F,
    ) -> Result<(), TransportError> {
        W::send_call(self, SEND_WITH, tag, len, fill)
    }

    fn send(&mut self, tag: Tag, data: &[u8]) -> Result<(), TransportError> {
        W::send_call(self, SEND, tag, data.len(), |off, piece| {
            piece.copy_from_slice(&data[off..off + piece.len()])
        })
    }

    fn recv_with<F: FnMut(Fragment<'_>)>(&mut self, sink: F) -> Result<RecvInfo, TransportError> {
        W::recv_with(self, sink)
    }

    fn sendrecv(
        &mut self,
        tag: Tag,
        data: &[u8],
        buf: &mut [u8],
    ) -> Result<RecvInfo, TransportError> {
        W::sendrecv(self, tag, data, buf)
    }

    fn info(&self) -> &EndpointInfo {
        &self.info
    }
}

impl<E: Endpoint, C: LocalClock, W: Wire<E>> Monitored<E, C, W> {
    fn trailer_recv_with<F: FnMut(Fragment<'_>)>(
        &mut self,
        mut sink: F,
    ) -> Result<RecvInfo, TransportError> {
        self.settle();
        let on = self.recv_on();
        let clock = &self.clock;
        let entry = if on { clock.now_ns() } else { 0.0 };
        let mut arrival = None;
        let mut tr = [0u8; TRAILER];
        let mut first = true;
        let info = self.inner.recv_with(|f| {
            if first && on {
                arrival = Some(clock.now_ns());
            }
            let Some(user) = f.total_len.checked_sub(TRAILER) else {
                first = false;
                return;
            };
            if f.offset < user || (user == 0 && first) {
                let n = f.data.len().min(user - f.offset.min(user));
                sink(Fragment {
                    tag: f.tag,
                    total_len: user,
                    offset: f.offset,
                    data: &f.data[..n],
                });
            }
            first = false;
            let end = f.offset + f.data.len();
            if end > user {
                let from = f.offset.max(user);
                tr[from - user..end - user].copy_from_slice(&f.data[from - f.offset..]);
            }
        })?;
        let Some(user) = info.len.checked_sub(TRAILER) else {
            return Err(self.no_trailer(info.len));
        };
        let Some(t) = Trailer::decode(&tr) else {
            return Err(self.no_trailer(user));
        };
        if on {
            let delivered = self.clock.now_ns();
            let stamped = t.flags & STAMPED != 0;
            self.pending = Some(Pending {
                tag: info.tag,
                len: user,
                tr: t,
                stamped,
                entry,
                arrival,
                delivered,
            });
        }
        Ok(RecvInfo {
            tag: info.tag,
            len: user,
        })
    }

    /// The duplex call sends `data` with the trailer from a scratch buffer and receives into
    /// another, so it costs a copy of each message under monitoring (the scratch buffers grow to
    /// the largest message once, then are reused). Its receive's arrival is not visible inside
    /// the call: it counts as noticed when the call returns (net includes the rest of the call;
    /// destination is unknown).
    fn trailer_sendrecv(
        &mut self,
        tag: Tag,
        data: &[u8],
        buf: &mut [u8],
    ) -> Result<RecvInfo, TransportError> {
        self.settle();
        self.check_len(data.len())?;
        let (on_s, on_r) = (self.send_on(), self.recv_on());
        let on = on_s || on_r;
        let entry = if on { self.clock.now_ns() } else { 0.0 };
        let seq = self.send_seq;
        self.send_seq = seq.wrapping_add(1);
        let mut out = std::mem::take(&mut self.scratch_out);
        let mut inb = std::mem::take(&mut self.scratch_in);
        out.clear();
        out.extend_from_slice(data);
        let (handoff, delta, flags) = if on_s {
            let h = self.clock.now_ns();
            (self.global(h), (h - entry).max(0.0) as u32, STAMPED)
        } else {
            (0.0, 0, 0)
        };
        out.extend_from_slice(
            &Trailer {
                handoff_global_ns: handoff.round() as i64,
                entry_delta_ns: delta,
                program: self.cfg.program,
                seq,
                call: SENDRECV,
                flags,
            }
            .encode(),
        );
        inb.resize(buf.len() + TRAILER, 0);
        let r = self.inner.sendrecv(tag, &out, &mut inb);
        let result = match r {
            Ok(info) => {
                let exit = if on { self.clock.now_ns() } else { 0.0 };
                match info.len.checked_sub(TRAILER) {
                    None => Err(self.no_trailer(info.len)),
                    Some(user) => {
                        let tr: &[u8; TRAILER] = inb[user..user + TRAILER].try_into().unwrap();
                        match Trailer::decode(tr) {
                            None => Err(self.no_trailer(user)),
                            Some(t) => {
                                buf[..user].copy_from_slice(&inb[..user]);
                                if on_s {
                                    self.sent(tag, data.len(), SENDRECV, entry, exit);
                                }
                                if on_r {
                                    let stamped = t.flags & STAMPED != 0;
                                    self.received(info.tag, user, &t, stamped, entry, None, exit);
                                }
                                Ok(RecvInfo {
                                    tag: info.tag,
                                    len: user,
                                })
                            }
                        }
                    }
                }
            }
            Err(TransportError::Truncated { len, cap }) => Err(TransportError::Truncated {
                len: len.saturating_sub(TRAILER),
                cap: cap - TRAILER,
            }),
            Err(e) => Err(e),
        };
        self.scratch_out = out;
        self.scratch_in = inb;
        result
    }
}

/// Forwarded to the inner endpoint's own gather, with the trailer as one more part. The stamp
/// is taken just before the call (a gather hands everything over inside it), so net starts at
/// the call's entry here.
impl<E: Endpoint + VectoredSend, C: LocalClock> VectoredSend for Monitored<E, C, TrailerWire> {
    fn send_vectored(&mut self, tag: Tag, parts: &[&[u8]]) -> Result<(), TransportError> {
        let len: usize = parts.iter().map(|p| p.len()).sum();
        self.check_len(len)?;
        let on = self.send_on();
        let entry = if on { self.clock.now_ns() } else { 0.0 };
        let seq = self.send_seq;
        self.send_seq = seq.wrapping_add(1);
        let tr = Trailer {
            handoff_global_ns: if on {
                self.global(entry).round() as i64
            } else {
                0
            },
            entry_delta_ns: 0,
            program: self.cfg.program,
            seq,
            call: SEND_VECTORED,
            flags: if on { STAMPED } else { 0 },
        }
        .encode();
        // Up to 15 parts on the stack; more (rare) cost one allocation of the list of parts.
        const STACK: usize = 16;
        if parts.len() < STACK {
            let mut all: [&[u8]; STACK] = [&[]; STACK];
            all[..parts.len()].copy_from_slice(parts);
            all[parts.len()] = &tr;
            self.inner.send_vectored(tag, &all[..=parts.len()])?;
        } else {
            let mut all: Vec<&[u8]> = Vec::with_capacity(parts.len() + 1);
            all.extend_from_slice(parts);
            all.push(&tr);
            self.inner.send_vectored(tag, &all)?;
        }
        if on {
            let exit = self.clock.now_ns();
            self.sent(tag, len, SEND_VECTORED, entry, exit);
        }
        Ok(())
    }
}

/// The stamp taken at the hand-over: `entry` is the send call's entry on the local clock.
#[inline]
fn stamp<C: LocalClock>(
    on: bool,
    clock: &C,
    corr: &Correction,
    entry: f64,
    program: u32,
    seq: u32,
    call: u8,
) -> Trailer {
    let (handoff, delta, flags) = if on {
        let h = clock.now_ns();
        (corr.to_global(h), (h - entry).max(0.0) as u32, STAMPED)
    } else {
        (0.0, 0, 0)
    };
    Trailer {
        handoff_global_ns: handoff.round() as i64,
        entry_delta_ns: delta,
        program,
        seq,
        call,
        flags,
    }
}

/// The side-band wire: the same stamp, taken at the same points, carried by the transport.
impl<E: Endpoint + SideBand, C: LocalClock> Monitored<E, C, SideBandWire> {
    fn side_send_call<F: FnMut(usize, &mut [u8])>(
        &mut self,
        call: u8,
        tag: Tag,
        len: usize,
        fill: F,
    ) -> Result<(), TransportError> {
        let on = self.send_on();
        let entry = if on { self.clock.now_ns() } else { 0.0 };
        let seq = self.send_seq;
        self.send_seq = seq.wrapping_add(1);
        let (clock, corr, program) = (&self.clock, &self.corr, self.cfg.program);
        // The transport calls this after the last piece is filled, just before publishing it:
        // the point where the trailer path stamps too.
        let side = || stamp(on, clock, corr, entry, program, seq, call).to_side();
        self.inner.send_with_side(tag, len, fill, side)?;
        if on {
            // Source ends at the call's return (see the trailer path).
            let exit = self.clock.now_ns();
            self.sent(tag, len, call, entry, exit);
        }
        Ok(())
    }

    fn side_recv_with<F: FnMut(Fragment<'_>)>(
        &mut self,
        mut sink: F,
    ) -> Result<RecvInfo, TransportError> {
        self.settle();
        let on = self.recv_on();
        let clock = &self.clock;
        let entry = if on { clock.now_ns() } else { 0.0 };
        let mut arrival = None;
        let (info, side) = self.inner.recv_with_side(|f| {
            if on && arrival.is_none() {
                arrival = Some(clock.now_ns());
            }
            sink(f)
        })?;
        let Some(t) = side.as_ref().and_then(Trailer::from_side) else {
            return Err(self.no_stamp(info.len));
        };
        if on {
            let delivered = self.clock.now_ns();
            let stamped = t.flags & STAMPED != 0;
            self.pending = Some(Pending {
                tag: info.tag,
                len: info.len,
                tr: t,
                stamped,
                entry,
                arrival,
                delivered,
            });
        }
        Ok(info)
    }

    /// No scratch copies here (the stamp does not travel in the bytes). The stamp is the
    /// call's entry: nothing happens between the two that the trailer path's separate read
    /// would see (there it follows the copy into the scratch buffer), so one read is saved.
    fn side_sendrecv(
        &mut self,
        tag: Tag,
        data: &[u8],
        buf: &mut [u8],
    ) -> Result<RecvInfo, TransportError> {
        self.settle();
        self.check_len(data.len())?;
        let (on_s, on_r) = (self.send_on(), self.recv_on());
        let on = on_s || on_r;
        let entry = if on { self.clock.now_ns() } else { 0.0 };
        let seq = self.send_seq;
        self.send_seq = seq.wrapping_add(1);
        let tr = Trailer {
            handoff_global_ns: if on_s {
                self.global(entry).round() as i64
            } else {
                0
            },
            entry_delta_ns: 0,
            program: self.cfg.program,
            seq,
            call: SENDRECV,
            flags: if on_s { STAMPED } else { 0 },
        };
        let (info, side) = self.inner.sendrecv_side(tag, data, tr.to_side(), buf)?;
        let Some(t) = side.as_ref().and_then(Trailer::from_side) else {
            return Err(self.no_stamp(info.len));
        };
        if on {
            let exit = self.clock.now_ns();
            if on_s {
                self.sent(tag, data.len(), SENDRECV, entry, exit);
            }
            if on_r {
                let stamped = t.flags & STAMPED != 0;
                self.received(info.tag, info.len, &t, stamped, entry, None, exit);
            }
        }
        Ok(info)
    }
}

/// The inner endpoint gathers into its own memory, stamped at the hand-over like `send_with`.
impl<E: Endpoint + VectoredSend + SideBand, C: LocalClock> VectoredSend
    for Monitored<E, C, SideBandWire>
{
    fn send_vectored(&mut self, tag: Tag, parts: &[&[u8]]) -> Result<(), TransportError> {
        let len: usize = parts.iter().map(|p| p.len()).sum();
        self.check_len(len)?;
        self.side_send_call(SEND_VECTORED, tag, len, |off, piece| {
            commperf_transport::gather(parts, off, piece)
        })
    }
}

impl<E: SwitchMode, C, W> SwitchMode for Monitored<E, C, W> {
    fn set_mode(
        &mut self,
        mode: commperf_transport::Mode,
        block_spins: u32,
    ) -> Result<(), TransportError> {
        self.inner.set_mode(mode, block_spins)?;
        self.info.mode = mode;
        Ok(())
    }
}

impl<E: Readiness, C, W> Readiness for Monitored<E, C, W> {
    #[inline]
    fn readable_now(&self) -> Result<bool, TransportError> {
        self.inner.readable_now()
    }
    fn check_alive(&self) -> Result<(), TransportError> {
        self.inner.check_alive()
    }
}

impl<E: std::os::fd::AsRawFd, C, W> std::os::fd::AsRawFd for Monitored<E, C, W> {
    /// The inner endpoint's descriptor, so a monitored socket endpoint joins a completion queue
    /// ([`commperf_transport::cq`]) like an unmonitored one.
    fn as_raw_fd(&self) -> std::os::fd::RawFd {
        self.inner.as_raw_fd()
    }
}
