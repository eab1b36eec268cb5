//! The timed loops. Each comes in two roles: the initiator (the side that times) and the
//! responder. Buffers are allocated by the caller before the loop and reused; inside the loop
//! there is only the measured transfer, a clock read per sample, and (with validation) the
//! pattern fill and check that `--validate` asks for.

use crate::extended::MAX_SEGMENTS;
use commperf_transport::backoff::{Backoff, Stopped};
use commperf_transport::conformance::{fill, first_mismatch, pattern};
use commperf_transport::{clock::Clock, Endpoint, Readiness, TransportError, VectoredSend};
use std::ops::Range;

/// Tag of benchmark payloads and acknowledgements.
const DATA: u32 = 1;
const ACK: u32 = 2;

/// A transfer failed at iteration `iteration` (counting warm-up).
#[derive(Debug)]
pub struct LoopError {
    pub iteration: u64,
    pub source: TransportError,
}

/// The first corrupted byte `--validate` found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Mismatch {
    pub iteration: u64,
    pub offset: usize,
    pub expected: u8,
    pub got: u8,
}

type LoopResult<T> = Result<T, LoopError>;

fn at(iteration: u64) -> impl Fn(TransportError) -> LoopError {
    move |source| LoopError { iteration, source }
}

/// Checks a received payload against message `seq`'s pattern; keeps the first mismatch.
#[inline]
pub fn check(buf: &[u8], seq: u64, first: &mut Option<Mismatch>) {
    if first.is_none() {
        if let Some(offset) = first_mismatch(buf, seq) {
            *first = Some(Mismatch {
                iteration: seq,
                offset,
                expected: pattern(seq, buf.len(), offset),
                got: buf[offset],
            });
        }
    }
}

/// How one measurement loops: counts, window and validation. (A test that needs a corrupted
/// message wraps the endpoint in a [`commperf_transport::FaultInjector`].)
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Loop {
    /// Untimed iterations first.
    pub warmup: u64,
    /// Timed iterations.
    pub iters: u64,
    /// Messages per iteration (bw, bibw, mr).
    pub window: u32,
    /// Fill every payload with its pattern and check every received byte.
    pub validate: bool,
}

impl Loop {
    fn total(&self) -> u64 {
        self.warmup.saturating_add(self.iters)
    }
}

/// The buffers a ping-pong sends from and receives into: one pair reused for every message
/// (the standard test), or a pool rotated through so that every message uses a fresh buffer on
/// different pages (the buffer-management test, Kutluğ 2000, §3.3.5).
#[derive(Debug)]
pub struct Buffers<'a> {
    send: &'a mut [u8],
    recv: &'a mut [u8],
    size: usize,
    recv_len: usize,
    stride: usize,
    count: u64,
}

impl<'a> Buffers<'a> {
    /// One send buffer of exactly the message size and one receive buffer, reused.
    pub fn reused(send: &'a mut [u8], recv: &'a mut [u8]) -> Self {
        let (size, recv_len) = (send.len(), recv.len());
        Buffers {
            send,
            recv,
            size,
            recv_len,
            stride: 0,
            count: 1,
        }
    }

    /// Buffers of `size` bytes taken in turn from two pools, each `stride` bytes apart (a whole
    /// number of pages plus one, so consecutive buffers never share a page).
    pub fn rotating(send: &'a mut [u8], recv: &'a mut [u8], size: usize, stride: usize) -> Self {
        assert!(
            stride >= size && stride > 0,
            "stride {stride} below size {size}"
        );
        let count = (send.len().min(recv.len()) / stride).max(1) as u64;
        let recv_len = stride.min(recv.len());
        Buffers {
            send,
            recv,
            size,
            recv_len,
            stride,
            count,
        }
    }

    /// How many distinct buffers are used in turn.
    pub fn count(&self) -> u64 {
        self.count
    }

    #[inline]
    fn pick(&mut self, i: u64) -> (&mut [u8], &mut [u8]) {
        let k = (i % self.count) as usize * self.stride;
        (
            &mut self.send[k..k + self.size],
            &mut self.recv[k..k + self.recv_len],
        )
    }
}

/// Per-iteration round-trip samples with one clock read per round trip: each sample is the time
/// between the ends of two consecutive round trips, which halves the timer's share of the
/// figure. Warm-up laps are read but not kept.
#[derive(Debug)]
pub struct Laps<'a> {
    clock: &'a Clock,
    prev: u64,
    warmup: u64,
    samples: &'a mut [u64],
}

impl<'a> Laps<'a> {
    /// Starts the first lap now; `samples` has one slot per timed iteration.
    pub fn new(clock: &'a Clock, lp: &Loop, samples: &'a mut [u64]) -> Self {
        assert_eq!(
            samples.len() as u64,
            lp.iters,
            "one sample per timed iteration"
        );
        Laps {
            clock,
            prev: clock.now(),
            warmup: lp.warmup,
            samples,
        }
    }

    /// Ends iteration `i`'s lap (kept once `i` is past the warm-up) and starts the next.
    #[inline(always)]
    pub fn lap(&mut self, i: u64) {
        let t = self.clock.now();
        if i >= self.warmup {
            self.samples[(i - self.warmup) as usize] = t - self.prev;
        }
        self.prev = t;
    }
}

/// Ping-pong, initiator side. `samples` receives one round-trip time in ticks per timed
/// iteration (`samples.len()` must equal `lp.iters`).
pub fn latency_initiator<E: Endpoint>(
    ep: &mut E,
    clock: &Clock,
    bufs: &mut Buffers<'_>,
    lp: &Loop,
    samples: &mut [u64],
) -> LoopResult<Option<Mismatch>> {
    let validate = lp.validate;
    let mut bad = None;
    let mut laps = Laps::new(clock, lp, samples);
    for i in 0..lp.total() {
        let (sbuf, rbuf) = bufs.pick(i);
        if validate {
            fill(sbuf, i);
        }
        ep.send(DATA, sbuf).map_err(at(i))?;
        let n = ep.recv(rbuf).map_err(at(i))?;
        laps.lap(i);
        if validate {
            check(&rbuf[..n.len], i, &mut bad);
        }
    }
    Ok(bad)
}

/// Ping-pong, responder side: echoes every message with one of the same size.
pub fn latency_responder<E: Endpoint>(
    ep: &mut E,
    bufs: &mut Buffers<'_>,
    lp: &Loop,
) -> LoopResult<Option<Mismatch>> {
    let mut bad = None;
    for i in 0..lp.total() {
        let (sbuf, rbuf) = bufs.pick(i);
        let n = ep.recv(rbuf).map_err(at(i))?;
        if lp.validate {
            check(&rbuf[..n.len], i, &mut bad);
            fill(sbuf, i);
        }
        ep.send(DATA, sbuf).map_err(at(i))?;
    }
    Ok(bad)
}

/// Fills a piece of message `seq` (of `total` bytes) that starts at `offset` with its pattern.
#[inline]
fn fill_at(piece: &mut [u8], seq: u64, total: usize, offset: usize) {
    for (j, b) in piece.iter_mut().enumerate() {
        *b = pattern(seq, total, offset + j);
    }
}

/// Checks a lent piece of message `seq`; keeps the first mismatch.
#[inline]
fn check_at(f: &commperf_transport::Fragment<'_>, seq: u64, first: &mut Option<Mismatch>) {
    if first.is_some() {
        return;
    }
    if let Some(j) =
        (0..f.data.len()).find(|&j| f.data[j] != pattern(seq, f.total_len, f.offset + j))
    {
        *first = Some(Mismatch {
            iteration: seq,
            offset: f.offset + j,
            expected: pattern(seq, f.total_len, f.offset + j),
            got: f.data[j],
        });
    }
}

/// Ping-pong in the transport's own memory (bufmgmt's registered variant): each message is
/// written where the transport lends its memory (`send_with`) and read where it lends it
/// (`recv_with`), so neither side copies. Without validation nothing is written or read there:
/// the message counts as formed in place by the application (as in registered memory, Kutluğ 2000
/// §2.1.1), and the figure is the transport's hand-over alone. Initiator side.
pub fn in_place_initiator<E: Endpoint>(
    ep: &mut E,
    clock: &Clock,
    size: usize,
    lp: &Loop,
    samples: &mut [u64],
) -> LoopResult<Option<Mismatch>> {
    let validate = lp.validate;
    let mut bad = None;
    let mut laps = Laps::new(clock, lp, samples);
    for i in 0..lp.total() {
        ep.send_with(DATA, size, |off, piece| {
            if validate {
                fill_at(piece, i, size, off)
            }
        })
        .map_err(at(i))?;
        ep.recv_with(|f| {
            if validate {
                check_at(&f, i, &mut bad)
            }
        })
        .map_err(at(i))?;
        laps.lap(i);
    }
    Ok(bad)
}

/// The registered variant's responder: echoes in place.
pub fn in_place_responder<E: Endpoint>(
    ep: &mut E,
    size: usize,
    lp: &Loop,
) -> LoopResult<Option<Mismatch>> {
    let validate = lp.validate;
    let mut bad = None;
    for i in 0..lp.total() {
        ep.recv_with(|f| {
            if validate {
                check_at(&f, i, &mut bad)
            }
        })
        .map_err(at(i))?;
        ep.send_with(DATA, size, |off, piece| {
            if validate {
                fill_at(piece, i, size, off);
            }
        })
        .map_err(at(i))?;
    }
    Ok(bad)
}

/// The error of a wait on `ep` that saw no progress for `idle`.
fn idle_timeout<E: Endpoint>(ep: &E, idle: std::time::Duration) -> TransportError {
    TransportError::Timeout {
        peer: ep.info().peer.clone(),
        secs: idle.as_secs(),
    }
}

/// Ping-pong on `ep` while `others` stay open: every wait for the reply sweeps all endpoints,
/// the others first, as a process holding many connections must find the one with work
/// (Kutluğ 2000, §3.3.6). One sample per round trip, as in the latency test.
#[allow(clippy::too_many_arguments)]
pub fn latency_sweep_initiator<E: Endpoint + Readiness, X: Readiness>(
    ep: &mut E,
    others: &[X],
    clock: &Clock,
    sbuf: &[u8],
    rbuf: &mut [u8],
    lp: &Loop,
    idle: std::time::Duration,
    samples: &mut [u64],
) -> LoopResult<()> {
    let mut laps = Laps::new(clock, lp, samples);
    for i in 0..lp.total() {
        ep.send(DATA, sbuf).map_err(at(i))?;
        let mut backoff = Backoff::new(idle);
        loop {
            for o in others {
                o.readable_now().map_err(at(i))?;
            }
            if ep.readable_now().map_err(at(i))? {
                break;
            }
            match backoff.snooze_checked(|| ep.check_alive()) {
                Ok(()) => {}
                Err(Stopped::Gone(e)) => return Err(at(i)(e)),
                Err(Stopped::TimedOut) => return Err(at(i)(idle_timeout(ep, idle))),
            }
        }
        ep.recv(rbuf).map_err(at(i))?;
        laps.lap(i);
    }
    Ok(())
}

/// Ping-pong on `ep` whose replies are detected through a completion queue over it and the other
/// open endpoints: one wait on the queue per check (0 timeout when polling, the idle timeout when
/// blocking) instead of a check per endpoint. One message is in flight at a time, so nothing
/// can wait unseen in the endpoint's own read-ahead.
#[allow(clippy::too_many_arguments)]
pub fn latency_cq_initiator<E: Endpoint + Readiness, Q: commperf_transport::cq::CompletionQueue>(
    ep: &mut E,
    cq: &mut Q,
    key: u64,
    clock: &Clock,
    sbuf: &[u8],
    rbuf: &mut [u8],
    lp: &Loop,
    idle: std::time::Duration,
    samples: &mut [u64],
) -> LoopResult<()> {
    let block = ep.info().mode == commperf_core::Mode::Block;
    // Blocking waits sleep in slices of at most a second, so that a peer that died (and whose
    // endpoint, on shm, will never post again) is noticed between them.
    let timeout_ms = if block {
        idle.as_millis().clamp(1, 1000) as i32
    } else {
        0
    };
    let mut laps = Laps::new(clock, lp, samples);
    for i in 0..lp.total() {
        ep.send(DATA, sbuf).map_err(at(i))?;
        let mut backoff = Backoff::new(idle);
        let mut slept = std::time::Duration::ZERO;
        loop {
            let timed_out = match cq.wait(timeout_ms).map_err(at(i))? {
                Some(k) if k == key => break,
                Some(_) => false, // traffic on another endpoint: not expected, not ours
                None if block => {
                    ep.check_alive().map_err(at(i))?;
                    slept += std::time::Duration::from_millis(timeout_ms as u64);
                    slept >= idle
                }
                None => match backoff.snooze_checked(|| ep.check_alive()) {
                    Ok(()) => false,
                    Err(Stopped::Gone(e)) => return Err(at(i)(e)),
                    Err(Stopped::TimedOut) => true,
                },
            };
            if timed_out {
                return Err(at(i)(idle_timeout(ep, idle)));
            }
        }
        ep.recv(rbuf).map_err(at(i))?;
        laps.lap(i);
    }
    Ok(())
}

/// Sends one message made of `parts`: gathered by the transport, or first packed into `pack`.
#[inline]
fn send_scattered<E: Endpoint + VectoredSend>(
    ep: &mut E,
    parts: &[&[u8]],
    pack: &mut Option<&mut [u8]>,
) -> Result<(), TransportError> {
    match pack {
        Some(buf) => {
            let mut off = 0;
            for p in parts {
                buf[off..off + p.len()].copy_from_slice(p);
                off += p.len();
            }
            ep.send(DATA, &buf[..off])
        }
        None => ep.send_vectored(DATA, parts),
    }
}

/// One message laid out as segments of `mem` (Kutluğ 2000, §3.3.8): the message is the
/// concatenation of `mem[r]` for each range `r`, in order.
#[derive(Debug)]
pub struct Scattered<'a> {
    mem: &'a mut [u8],
    ranges: &'a [Range<usize>],
    size: usize,
}

impl<'a> Scattered<'a> {
    /// At most [`MAX_SEGMENTS`] ranges, each inside `mem` (the caller's layout, not user input:
    /// the peer refuses larger segment counts before it builds one).
    pub fn new(mem: &'a mut [u8], ranges: &'a [Range<usize>]) -> Self {
        assert!(
            ranges.len() <= MAX_SEGMENTS as usize,
            "{} segments, at most {MAX_SEGMENTS}",
            ranges.len()
        );
        assert!(
            ranges
                .iter()
                .all(|r| r.start <= r.end && r.end <= mem.len()),
            "segments outside their memory"
        );
        let size = ranges.iter().map(|r| r.len()).sum();
        Scattered { mem, ranges, size }
    }

    /// The message's length: the sum of its segments.
    pub fn len(&self) -> usize {
        self.size
    }

    pub fn is_empty(&self) -> bool {
        self.size == 0
    }

    /// The segments, as the transport's vectored send takes them.
    pub fn parts(&self) -> Vec<&[u8]> {
        self.ranges.iter().map(|r| &self.mem[r.clone()]).collect()
    }

    /// The memory the segments lie in (what an MPI derived datatype describes).
    pub fn memory(&self) -> &[u8] {
        self.mem
    }

    /// Copies the segments, in order, to the start of `out` (the hand-packed variant).
    #[inline]
    pub fn pack_into(&self, out: &mut [u8]) {
        let mut off = 0;
        for r in self.ranges {
            out[off..off + r.len()].copy_from_slice(&self.mem[r.clone()]);
            off += r.len();
        }
    }

    /// Writes message `seq`'s pattern across the segments, as if they were one buffer.
    pub fn fill(&mut self, seq: u64) {
        let mut off = 0;
        for r in self.ranges {
            for (j, b) in self.mem[r.clone()].iter_mut().enumerate() {
                *b = pattern(seq, self.size, off + j);
            }
            off += r.len();
        }
    }
}

/// How each outgoing scattered message is produced: the same untouched segments every time, or
/// (validating) message `i`'s pattern written into them first. Two types rather than a branch,
/// so the measured loop without `--validate` is the loop without validation code, as in the
/// other ping-pongs where the only extra work is behind `if validate`.
trait ScatterSource {
    fn send<E: Endpoint + VectoredSend>(
        &mut self,
        ep: &mut E,
        i: u64,
        pack: &mut Option<&mut [u8]>,
    ) -> Result<(), TransportError>;
}

/// Segments sent as they are, their slices built once before the loop.
struct Fixed<'a>(Vec<&'a [u8]>);

impl ScatterSource for Fixed<'_> {
    #[inline]
    fn send<E: Endpoint + VectoredSend>(
        &mut self,
        ep: &mut E,
        _: u64,
        pack: &mut Option<&mut [u8]>,
    ) -> Result<(), TransportError> {
        send_scattered(ep, &self.0, pack)
    }
}

/// Segments refilled with each message's pattern before it leaves.
struct Patterned<'m, 'a> {
    msg: &'m mut Scattered<'a>,
}

impl ScatterSource for Patterned<'_, '_> {
    #[inline]
    fn send<E: Endpoint + VectoredSend>(
        &mut self,
        ep: &mut E,
        i: u64,
        pack: &mut Option<&mut [u8]>,
    ) -> Result<(), TransportError> {
        self.msg.fill(i);
        // The slices must be rebuilt after every fill (the fill borrows the memory mutably);
        // on the stack, because the loop must not allocate.
        let mut slots: [&[u8]; MAX_SEGMENTS as usize] = [&[]; MAX_SEGMENTS as usize];
        let msg = &*self.msg;
        for (s, r) in slots.iter_mut().zip(msg.ranges) {
            *s = &msg.mem[r.clone()];
        }
        send_scattered(ep, &slots[..msg.ranges.len()], pack)
    }
}

/// Ping-pong whose messages (both ways) are sent from scattered segments, vectored or packed
/// (Kutluğ 2000, §3.3.8). Initiator side; one sample per timed round trip, as in the latency test.
/// With `lp.validate` every outgoing message carries its pattern across the segments and every
/// reply (received contiguous) is checked against its own.
pub fn scattered_initiator<E: Endpoint + VectoredSend>(
    ep: &mut E,
    clock: &Clock,
    msg: &mut Scattered<'_>,
    pack: Option<&mut [u8]>,
    rbuf: &mut [u8],
    lp: &Loop,
    samples: &mut [u64],
) -> LoopResult<Option<Mismatch>> {
    if lp.validate {
        let src = Patterned { msg };
        scattered_initiator_loop(ep, clock, src, pack, rbuf, lp, samples)
    } else {
        let src = Fixed(msg.parts());
        scattered_initiator_loop(ep, clock, src, pack, rbuf, lp, samples)
    }
}

fn scattered_initiator_loop<E: Endpoint + VectoredSend, S: ScatterSource>(
    ep: &mut E,
    clock: &Clock,
    mut src: S,
    mut pack: Option<&mut [u8]>,
    rbuf: &mut [u8],
    lp: &Loop,
    samples: &mut [u64],
) -> LoopResult<Option<Mismatch>> {
    let mut bad = None;
    let mut laps = Laps::new(clock, lp, samples);
    for i in 0..lp.total() {
        src.send(ep, i, &mut pack).map_err(at(i))?;
        let n = ep.recv(rbuf).map_err(at(i))?;
        laps.lap(i);
        if lp.validate {
            check(&rbuf[..n.len], i, &mut bad);
        }
    }
    Ok(bad)
}

/// Responder side of [`scattered_initiator`]: checks each message (with `lp.validate`), then
/// answers with message `i` scattered the same way.
pub fn scattered_responder<E: Endpoint + VectoredSend>(
    ep: &mut E,
    msg: &mut Scattered<'_>,
    pack: Option<&mut [u8]>,
    rbuf: &mut [u8],
    lp: &Loop,
) -> LoopResult<Option<Mismatch>> {
    if lp.validate {
        let src = Patterned { msg };
        scattered_responder_loop(ep, src, pack, rbuf, lp)
    } else {
        scattered_responder_loop(ep, Fixed(msg.parts()), pack, rbuf, lp)
    }
}

fn scattered_responder_loop<E: Endpoint + VectoredSend, S: ScatterSource>(
    ep: &mut E,
    mut src: S,
    mut pack: Option<&mut [u8]>,
    rbuf: &mut [u8],
    lp: &Loop,
) -> LoopResult<Option<Mismatch>> {
    let mut bad = None;
    for i in 0..lp.total() {
        let n = ep.recv(rbuf).map_err(at(i))?;
        if lp.validate {
            check(&rbuf[..n.len], i, &mut bad);
        }
        src.send(ep, i, &mut pack).map_err(at(i))?;
    }
    Ok(bad)
}

/// Windowed streaming (bw and mr), sender side: `window` sends, then a 1-byte ack, per
/// iteration. Returns the ticks spent in the timed iterations.
pub fn stream_sender<E: Endpoint>(
    ep: &mut E,
    clock: &Clock,
    sbuf: &mut [u8],
    lp: &Loop,
) -> LoopResult<u64> {
    let window = lp.window as u64;
    let mut ack = [0u8; 1];
    let mut t0 = clock.now();
    for i in 0..lp.total() {
        if i == lp.warmup {
            t0 = clock.now();
        }
        for w in 0..window {
            if lp.validate {
                let seq = i * window + w;
                fill(sbuf, seq);
            }
            ep.send(DATA, sbuf).map_err(at(i))?;
        }
        ep.recv(&mut ack).map_err(at(i))?;
    }
    Ok(clock.now() - t0)
}

/// Windowed streaming, receiver side.
pub fn stream_receiver<E: Endpoint>(
    ep: &mut E,
    rbuf: &mut [u8],
    lp: &Loop,
) -> LoopResult<Option<Mismatch>> {
    let window = lp.window as u64;
    let mut bad = None;
    for i in 0..lp.total() {
        for w in 0..window {
            let n = ep.recv(rbuf).map_err(at(i))?;
            if lp.validate {
                check(&rbuf[..n.len], i * window + w, &mut bad);
            }
        }
        ep.send(ACK, &[0]).map_err(at(i))?;
    }
    Ok(bad)
}

/// Bi-directional streaming: both sides exchange `window` messages per iteration with the
/// duplex primitive. Returns the ticks of the timed iterations (meaningful on the initiator).
pub fn bidir<E: Endpoint>(
    ep: &mut E,
    clock: &Clock,
    sbuf: &mut [u8],
    rbuf: &mut [u8],
    lp: &Loop,
) -> LoopResult<(u64, Option<Mismatch>)> {
    let window = lp.window as u64;
    let mut bad = None;
    let mut t0 = clock.now();
    for i in 0..lp.total() {
        if i == lp.warmup {
            t0 = clock.now();
        }
        for w in 0..window {
            let seq = i * window + w;
            if lp.validate {
                fill(sbuf, seq);
            }
            let n = ep.sendrecv(DATA, sbuf, rbuf).map_err(at(i))?;
            if lp.validate {
                check(&rbuf[..n.len], seq, &mut bad);
            }
        }
    }
    Ok((clock.now() - t0, bad))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rotating_buffers_never_share_a_page() {
        let (mut s, mut r) = (vec![0u8; 10 * 8192], vec![0u8; 10 * 8192]);
        let mut b = Buffers::rotating(&mut s, &mut r, 100, 8192);
        assert_eq!(b.count(), 10);
        let base = b.send.as_ptr() as usize;
        let starts: Vec<usize> = (0..12)
            .map(|i| b.pick(i).0.as_ptr() as usize - base)
            .collect();
        assert_eq!(&starts[..3], &[0, 8192, 16384]);
        assert_eq!(starts[10], 0, "wraps after count buffers");
        assert_eq!(b.pick(3).0.len(), 100);
        assert_eq!(b.pick(3).1.len(), 8192);
    }
    use commperf_transport::sys::uds;
    use commperf_transport::{EndpointConfig, FaultConfig, FaultInjector};

    /// The responder's message `message` leaves with byte `offset` flipped.
    fn fault(message: u64, offset: usize) -> FaultConfig {
        FaultConfig { message, offset }
    }

    #[test]
    fn validation_reports_the_corrupted_byte() {
        let (mut a, mut b) = uds::pair(EndpointConfig::default()).unwrap();
        let clock = Clock::monotonic();
        let h = std::thread::spawn(move || {
            let (mut s, mut r) = (vec![0u8; 100], vec![0u8; 100]);
            let mut b = FaultInjector::new(&mut b, fault(7, 42));
            let lp = Loop {
                warmup: 5,
                iters: 15,
                window: 1,
                validate: true,
            };
            latency_responder(&mut b, &mut Buffers::reused(&mut s, &mut r), &lp).unwrap()
        });
        let (mut s, mut r) = (vec![0u8; 100], vec![0u8; 100]);
        let mut samples = vec![0u64; 15];
        let lp = Loop {
            warmup: 5,
            iters: 15,
            window: 1,
            validate: true,
        };
        let mut bufs = Buffers::reused(&mut s, &mut r);
        let bad = latency_initiator(&mut a, &clock, &mut bufs, &lp, &mut samples).unwrap();
        assert_eq!(h.join().unwrap(), None, "nothing corrupted on the way out");
        let m = bad.expect("corruption must be found");
        assert_eq!((m.iteration, m.offset), (7, 42));
        assert_eq!(m.expected, pattern(7, 100, 42));
        assert_eq!(m.got, pattern(7, 100, 42) ^ 0xFF);
        assert!(samples.iter().all(|&t| t > 0));
    }

    /// The in-place loops check what they lend, across pieces: a 200 000-byte message crosses
    /// many shm ring fragments and io_uring buffer refills.
    fn in_place_catches<E: Endpoint + Send + 'static>(mut a: E, mut b: E) {
        let clock = Clock::monotonic();
        let size = 200_000;
        let lp = Loop {
            warmup: 2,
            iters: 6,
            window: 1,
            validate: true,
        };
        let h = std::thread::spawn(move || {
            let mut b = FaultInjector::new(&mut b, fault(4, 150_001));
            in_place_responder(&mut b, size, &lp).unwrap()
        });
        let mut samples = vec![0u64; 6];
        let bad = in_place_initiator(&mut a, &clock, size, &lp, &mut samples).unwrap();
        assert_eq!(h.join().unwrap(), None, "nothing corrupted on the way out");
        let m = bad.expect("corruption must be found");
        assert_eq!((m.iteration, m.offset), (4, 150_001));
        assert_eq!(m.got, pattern(4, size, 150_001) ^ 0xFF);
    }

    #[test]
    fn in_place_validation_over_shm_and_uring() {
        use commperf_transport::sys::{shm, uring};
        let (a, b) = shm::pair(EndpointConfig::default(), shm::ShmOptions::default()).unwrap();
        in_place_catches(a, b);
        let (a, b) =
            uring::uds_pair(EndpointConfig::default(), uring::UringOptions::default()).unwrap();
        in_place_catches(a, b);
    }

    /// Runs a validated scattered ping-pong of `size` bytes in `k` segments over a uds pair,
    /// the responder corrupting `corruption`; returns what each side found.
    fn scattered_run(
        size: usize,
        k: usize,
        packed: bool,
        corruption: Option<FaultConfig>,
    ) -> (Option<Mismatch>, Option<Mismatch>) {
        let (mut a, mut b) = uds::pair(EndpointConfig::default()).unwrap();
        let lp = Loop {
            warmup: 2,
            iters: 10,
            window: 1,
            validate: true,
        };
        let h = std::thread::spawn(move || {
            let (mut mem, ranges) = crate::extended::scattered(size, k);
            let mut msg = Scattered::new(&mut mem, &ranges);
            let mut pack = packed.then(|| vec![0u8; size]);
            let mut r = vec![0u8; size];
            match corruption {
                Some(c) => {
                    let mut b = FaultInjector::new(&mut b, c);
                    scattered_responder(&mut b, &mut msg, pack.as_deref_mut(), &mut r, &lp)
                }
                None => scattered_responder(&mut b, &mut msg, pack.as_deref_mut(), &mut r, &lp),
            }
            .unwrap()
        });
        let (mut mem, ranges) = crate::extended::scattered(size, k);
        let mut msg = Scattered::new(&mut mem, &ranges);
        let mut pack = packed.then(|| vec![0u8; size]);
        let mut r = vec![0u8; size];
        let mut samples = vec![0u64; 10];
        let mine = scattered_initiator(
            &mut a,
            &Clock::monotonic(),
            &mut msg,
            pack.as_deref_mut(),
            &mut r,
            &lp,
            &mut samples,
        )
        .unwrap();
        assert!(samples.iter().all(|&t| t > 0));
        (mine, h.join().unwrap())
    }

    #[test]
    fn scattered_segments_carry_one_message_pattern() {
        let (mut mem, ranges) = crate::extended::scattered(1000, 4);
        let mut msg = Scattered::new(&mut mem, &ranges);
        assert_eq!(msg.len(), 1000);
        msg.fill(9);
        let joined: Vec<u8> = msg.parts().concat();
        assert_eq!(first_mismatch(&joined, 9), None);
        // The segments really are apart: the bytes between them are not the pattern's.
        assert_eq!(msg.mem[ranges[0].end], crate::buf::PageBuf::FILL);
        // Offset 610 of the joined message is in the third segment (250 bytes each).
        assert_eq!(msg.mem[ranges[2].start + 110], pattern(9, 1000, 610));
        msg.fill(3);
        assert_eq!(first_mismatch(&msg.parts().concat(), 3), None);
    }

    #[test]
    fn scattered_validation_reports_the_corrupted_byte() {
        let c = Some(fault(7, 600));
        for packed in [false, true] {
            assert_eq!(scattered_run(1000, 4, packed, None), (None, None));
            let (mine, theirs) = scattered_run(1000, 4, packed, c);
            assert_eq!(theirs, None, "nothing corrupted on the way out");
            let m = mine.expect("corruption must be found");
            assert_eq!((m.iteration, m.offset), (7, 600), "packed: {packed}");
            assert_eq!(m.expected, pattern(7, 1000, 600));
            assert_eq!(m.got, pattern(7, 1000, 600) ^ 0xFF);
        }
        // One byte in one segment: the smallest message.
        let one = Some(fault(0, 0));
        let (mine, _) = scattered_run(1, 1, false, one);
        assert_eq!(mine.map(|m| (m.iteration, m.offset)), Some((0, 0)));
    }

    #[test]
    fn stream_counts_every_message() {
        let (mut a, mut b) = uds::pair(EndpointConfig::default()).unwrap();
        let clock = Clock::monotonic();
        let lp = Loop {
            warmup: 3,
            iters: 10,
            window: 8,
            validate: true,
        };
        let h = std::thread::spawn(move || {
            let mut r = vec![0u8; 64];
            let bad = stream_receiver(&mut b, &mut r, &lp).unwrap();
            (b, bad)
        });
        let mut s = vec![0u8; 64];
        let t = stream_sender(&mut a, &clock, &mut s, &lp).unwrap();
        let (mut b, bad) = h.join().unwrap();
        assert_eq!(bad, None);
        assert!(t > 0);
        // Everything was consumed: the next message on the stream is the one sent after.
        b.send(5, b"end").unwrap();
        let mut buf = [0u8; 8];
        let info = a.recv(&mut buf).unwrap();
        assert_eq!((info.tag, &buf[..info.len]), (5, &b"end"[..]));
    }
}
