//! [`Emulated<E>`]: the emulation scenario adapter, in the shape of smoltcp's `Tracer<D>`:
//! `new(inner, config)`, `get_ref`, `get_mut`, `into_inner`, and every capability of the inner
//! endpoint forwarded.
//!
//! Two paths besides the pass-through one (every knob zero):
//! - over a real transport, arrivals are stamped with the TSC when the decorator sees them. A
//!   receiver only sees a message when it polls, so whenever the decorator is entered (send,
//!   receive, and all the while it waits for a due time) it drains the transport eagerly into a
//!   preallocated delay queue and stamps each message then (or, what it finds on entering
//!   over shm, dates it by the sender's stamp from the side band plus the transit learnt from
//!   messages it saw arrive); a message is delivered from the queue once
//!   `arrival + ΔL + ΔG·s` has passed. The queue is a byte ring with room for one
//!   largest message beyond its configured size, and a ring of slots: no allocation and no lock
//!   after construction. Only L and G need it; o and g never copy.
//! - over the model transport ([`Probe::exact_arrivals`]), the decorator reads each message's
//!   exact arrival and the sender's NIC schedule in virtual time and moves them, so the
//!   recovered LogGP parameters are exactly the model's plus the knobs.

use crate::knobs::{EmulateConfig, EmulateError, MAX_QUEUE_BYTES};
use crate::probe::Probe;
use commperf_transport::clock::{Clock, Timer};
use commperf_transport::{
    Endpoint, EndpointInfo, Fragment, Readiness, RecvInfo, SwitchMode, Tag, TransportError,
    VectoredSend,
};

#[derive(Debug, Clone, Copy, Default)]
struct Slot {
    tag: Tag,
    len: usize,
    /// Where the message starts in the byte ring.
    at: usize,
    /// Earliest delivery (ns on the timer).
    due: f64,
}

/// The receiver's delay queue: messages drained from the transport, waiting for their due time.
#[derive(Debug)]
struct DelayQueue {
    buf: Box<[u8]>,
    head: usize,
    used: usize,
    slots: Box<[Slot]>,
    first: usize,
    count: usize,
    max_message: usize,
}

impl DelayQueue {
    fn new(cfg: &EmulateConfig, max_message: usize) -> Result<Self, EmulateError> {
        let bytes = cfg.queue_bytes.saturating_add(max_message.max(1));
        if bytes > MAX_QUEUE_BYTES {
            return Err(EmulateError::QueueTooLarge {
                bytes,
                max_message,
                limit: MAX_QUEUE_BYTES,
            });
        }
        Ok(DelayQueue {
            // Zeroed allocation: the pages are mapped on first touch, so room for a largest
            // message costs no memory until one arrives.
            buf: vec![0u8; bytes].into_boxed_slice(),
            head: 0,
            used: 0,
            slots: vec![Slot::default(); cfg.queue_slots.max(1)].into_boxed_slice(),
            first: 0,
            count: 0,
            max_message,
        })
    }

    /// Whether any message the peer may send fits now.
    #[inline]
    fn has_room(&self) -> bool {
        self.count < self.slots.len() && self.buf.len() - self.used >= self.max_message
    }

    #[inline]
    fn tail(&self) -> usize {
        (self.head + self.used) % self.buf.len()
    }

    /// Copies one piece of a message starting at ring offset `at` into the ring, wrapping.
    #[inline]
    fn write(buf: &mut [u8], at: usize, offset: usize, data: &[u8]) {
        let cap = buf.len();
        let p = (at + offset) % cap;
        let n1 = data.len().min(cap - p);
        buf[p..p + n1].copy_from_slice(&data[..n1]);
        buf[..data.len() - n1].copy_from_slice(&data[n1..]);
    }

    fn push(&mut self, s: Slot) {
        let n = self.slots.len();
        self.slots[(self.first + self.count) % n] = s;
        self.count += 1;
        self.used += s.len;
    }

    #[inline]
    fn front(&self) -> Option<Slot> {
        (self.count > 0).then(|| self.slots[self.first])
    }

    /// The message of slot `s` as at most two pieces (it may wrap around the ring's end).
    fn pieces(&self, s: &Slot) -> (&[u8], &[u8]) {
        let n1 = s.len.min(self.buf.len() - s.at);
        (&self.buf[s.at..s.at + n1], &self.buf[..s.len - n1])
    }

    fn pop(&mut self) {
        let s = self.slots[self.first];
        self.head = (self.head + s.len) % self.buf.len();
        self.used -= s.len;
        self.first = (self.first + 1) % self.slots.len();
        self.count -= 1;
        if self.count == 0 {
            // Empty: start again at 0, so the whole ring is one contiguous landing area.
            (self.head, self.used) = (0, 0);
        }
    }
}

/// An endpoint with LogGP knobs added on top of what its transport has.
#[derive(Debug)]
pub struct Emulated<E, T = Clock> {
    inner: E,
    cfg: EmulateConfig,
    timer: T,
    /// Every knob zero: forward and do nothing else.
    pass: bool,
    /// The inner endpoint reports exact arrivals (virtual time).
    exact: bool,
    /// The delay queue (real transports with L or G set).
    queue: Option<DelayQueue>,
    /// When the previous send was handed over (real path) and its size.
    prev_send: Option<(f64, usize)>,
    /// When the previous receive returned and its size: receptions are paced by Δg + ΔG·s
    /// as sends are (LogP's g bounds consecutive receptions too).
    prev_recv: Option<(f64, usize)>,
    /// An error the transport reported while draining (the peer closed after its last
    /// message, say): reported once the messages queued before it have been delivered.
    drain_error: Option<TransportError>,
    /// Sends carry the sender's stamp (the knobs delay delivery and the timer's stamps are
    /// readable by the peer): the peer, with the same knobs, dates arrivals from them.
    stamps: bool,
    /// The least time from a sender's stamp to this receiver seeing the message: the
    /// transport's own transit, learnt from messages that arrived while this end was waiting
    /// inside the decorator (seen as they arrived); 0 until one has.
    transit_ns: f64,
}

impl<E: Probe> Emulated<E, Clock> {
    /// Emulates over `inner` with a freshly calibrated TSC clock (about 30 ms).
    pub fn new(inner: E, cfg: EmulateConfig) -> Result<Self, EmulateError> {
        Self::with_timer(inner, cfg, Clock::calibrate())
    }
}

impl<E: Probe, T: Timer> Emulated<E, T> {
    /// Emulates over `inner`, timing delays on `timer` (the model's virtual timer in tests).
    pub fn with_timer(inner: E, cfg: EmulateConfig, timer: T) -> Result<Self, EmulateError> {
        cfg.knobs.validate()?;
        let exact = inner.exact_arrivals();
        let queue = if !exact && cfg.knobs.delays_delivery() {
            Some(DelayQueue::new(&cfg, inner.info().max_message)?)
        } else {
            None
        };
        let stamps = queue.is_some() && timer.stamp().is_some();
        Ok(Emulated {
            stamps,
            transit_ns: f64::INFINITY,
            pass: cfg.knobs.is_zero(),
            inner,
            cfg,
            timer,
            exact,
            queue,
            prev_send: None,
            prev_recv: None,
            drain_error: None,
        })
    }

    pub fn config(&self) -> &EmulateConfig {
        &self.cfg
    }
    pub fn get_ref(&self) -> &E {
        &self.inner
    }
    pub fn get_mut(&mut self) -> &mut E {
        &mut self.inner
    }
    /// The inner endpoint. Messages still in the delay queue are lost with the decorator.
    pub fn into_inner(self) -> E {
        self.inner
    }

    /// Moves every message the transport has into the delay queue, stamping its arrival now.
    ///
    /// `waiting`: this end has been polling inside the decorator since the last drain, so
    /// what it finds now arrived just now (not while the program was away).
    fn drain(&mut self, waiting: bool) -> Result<(), TransportError> {
        while self.drain_error.is_none() && self.queue.as_ref().is_some_and(DelayQueue::has_room) {
            match self.inner.message_waiting().and_then(|ready| {
                if ready {
                    self.stage(waiting)?;
                }
                Ok(ready)
            }) {
                Ok(true) => {}
                Ok(false) => break,
                Err(e) => self.drain_error = Some(e),
            }
        }
        // Errors wait behind the messages that arrived before them.
        if self.queue.as_ref().is_some_and(|q| q.count == 0) {
            if let Some(e) = self.drain_error.take() {
                return Err(e);
            }
        }
        Ok(())
    }

    /// Receives one message from the transport (waiting for it) into the delay queue.
    ///
    /// Its arrival is when it was seen, or, if the sender stamped it, the stamp plus the
    /// least transit seen so far: a message that arrived while the program was away (a
    /// server spinning between receives, a rank computing) is dated when it arrived, not
    /// when the program came back, so it is held ΔL past its arrival, not past the return.
    fn stage(&mut self, waiting: bool) -> Result<(), TransportError> {
        let q = self.queue.as_mut().expect("staging needs the queue");
        let at = q.tail();
        let buf = &mut q.buf;
        let (info, stamp) = self
            .inner
            .recv_stamped(|f| DelayQueue::write(buf, at, f.offset, f.data))?;
        let now = self.timer.now_ns();
        let arrival = match stamp {
            Some(s) => {
                let sent = self.timer.stamp_ns(s);
                if waiting {
                    // Found while this end was inside, polling: seen as it arrived.
                    self.transit_ns = self.transit_ns.min((now - sent).max(0.0));
                }
                let transit = if self.transit_ns.is_finite() {
                    self.transit_ns
                } else {
                    0.0
                };
                (sent + transit).min(now)
            }
            None => now,
        };
        let k = &self.cfg.knobs;
        let due = arrival + k.l_ns + k.gap_per_byte_ns * info.len as f64;
        q.push(Slot {
            tag: info.tag,
            len: info.len,
            at,
            due,
        });
        Ok(())
    }

    /// Busy-waits until `t`, draining the transport meanwhile so that arrivals are stamped when
    /// they happen rather than when the wait ends.
    fn wait_until(&mut self, t: f64) -> Result<(), TransportError> {
        if self.queue.is_none() {
            let left = t - self.timer.now_ns();
            if left > 0.0 {
                self.timer.spin_ns(left);
            }
            return Ok(());
        }
        while self.timer.now_ns() < t {
            self.drain(true)?;
            std::hint::spin_loop();
        }
        Ok(())
    }

    /// g and G: the wire of the previous send is busy Δg + ΔG·s longer; o: the CPU spins.
    fn before_send(&mut self) -> Result<(), TransportError> {
        self.drain(false)?;
        let k = self.cfg.knobs;
        if let Some((t, s)) = self.prev_send {
            let extra = k.g_ns + k.gap_per_byte_ns * s as f64;
            if extra > 0.0 {
                let free = if self.exact {
                    self.inner.nic_free_ns()
                } else {
                    t
                };
                self.wait_until(free + extra)?;
            }
        }
        if k.o_ns > 0.0 {
            self.timer.spin_ns(k.o_ns);
        }
        Ok(())
    }

    /// Hands a message to the transport, stamped where the peer dates arrivals by stamps.
    #[inline]
    fn hand_over<F: FnMut(usize, &mut [u8])>(
        &mut self,
        tag: Tag,
        len: usize,
        fill: F,
    ) -> Result<(), TransportError> {
        if self.stamps {
            let timer = &self.timer;
            self.inner
                .send_stamped(tag, len, fill, || timer.stamp().unwrap_or(0))
        } else {
            self.inner.send_with(tag, len, fill)
        }
    }

    /// Whether g or G is set: only then do sends and receives need their end stamped. Every
    /// reading of the TSC costs the calling thread tens of ns in a VM, which the calibration
    /// measures as overhead: the decorator reads it only where a knob needs the time.
    #[inline]
    fn paces(&self) -> bool {
        self.cfg.knobs.g_ns > 0.0 || self.cfg.knobs.gap_per_byte_ns > 0.0
    }

    #[inline]
    fn after_send(&mut self, len: usize) {
        if self.paces() {
            self.prev_send = Some((self.timer.now_ns(), len));
        }
    }

    /// g and G at the receiving end: a receive begins at least Δg + ΔG·s after the previous
    /// one (of s bytes) returned. Martin's firmware stalls only the sender's NIC, because on
    /// Myrinet that loop *is* the stream's bottleneck; in a software transport the bottleneck
    /// may be either end (shm's stream is bound by the receiver's copy), and a delay taken
    /// only at the sender then overlaps the receiver's per-byte work instead of adding to it
    /// (the first calibration fitted half of G with g set). Pacing both ends adds the knob to
    /// whichever end binds: the stream's period becomes max(S, R, wire) + Δg + ΔG·s. A
    /// receiver slower than the rate never waits, so overhead and latency are untouched.
    fn pace_recv(&mut self) -> Result<(), TransportError> {
        let k = self.cfg.knobs;
        if let Some((t, s)) = self.prev_recv {
            let extra = k.g_ns + k.gap_per_byte_ns * s as f64;
            if extra > 0.0 {
                self.wait_until(t + extra)?;
            }
        }
        Ok(())
    }

    #[inline]
    fn after_recv(&mut self, len: usize) {
        if self.paces() {
            self.prev_recv = Some((self.timer.now_ns(), len));
        }
    }

    /// Δo of busy CPU; nothing (not even a reading of the clock) when o is not set.
    #[inline]
    fn spin_o(&self) {
        if self.cfg.knobs.o_ns > 0.0 {
            self.timer.spin_ns(self.cfg.knobs.o_ns);
        }
    }

    fn recv_emulated<F: FnMut(Fragment<'_>)>(
        &mut self,
        sink: F,
    ) -> Result<RecvInfo, TransportError> {
        // What arrived while the program was away first (dated by stamps, if any), so that
        // whatever the waits below find arrived while this end was waiting.
        self.drain(false)?;
        self.pace_recv()?;
        let info = self.recv_delayed(sink)?;
        self.after_recv(info.len);
        Ok(info)
    }

    /// o and L (and G's later delivery) of one receive, once its gap has passed.
    fn recv_delayed<F: FnMut(Fragment<'_>)>(
        &mut self,
        mut sink: F,
    ) -> Result<RecvInfo, TransportError> {
        let k = self.cfg.knobs;
        if self.exact {
            // Virtual time: move the arrival itself, so the receive begins (and its last byte
            // lands) as on a network with these parameters.
            let (a, len) = self.inner.next_arrival()?;
            let shift = k.l_ns + k.gap_per_byte_ns * len as f64;
            if k.o_ns > 0.0 {
                let begin = self.timer.now_ns().max(a + shift);
                self.wait_until(begin + k.o_ns)?;
            }
            self.inner.defer_next_arrival(shift + k.o_ns)?;
            return self.inner.recv_with(sink);
        }
        if self.queue.is_none() {
            // o and g only: take the message, then spin Δo before returning it. The CPU is
            // busy as long and the call returns as late as if Δo were spun between arrival and
            // taking, without first asking the transport whether a message is there: on a
            // socket that is a poll(2) per receive, on shm a second look at the ring, and the
            // calibration measured either as o_r drift under g.
            let info = self.inner.recv_with(sink)?;
            self.spin_o();
            return Ok(info);
        }
        if self.queue.as_ref().is_some_and(|q| q.count == 0) {
            // Nothing had arrived when this call came in (drained in `recv_emulated`): the
            // message this waits for is seen as it arrives.
            self.stage(true)?;
        }
        let due = self
            .queue
            .as_ref()
            .and_then(DelayQueue::front)
            .expect("staged")
            .due;
        self.wait_until(due)?;
        if k.o_ns > 0.0 {
            let t = self.timer.now_ns() + k.o_ns;
            self.wait_until(t)?;
        }
        let q = self.queue.as_mut().expect("queue");
        let s = q.front().expect("staged");
        let (a, b) = q.pieces(&s);
        sink(Fragment {
            tag: s.tag,
            total_len: s.len,
            offset: 0,
            data: a,
        });
        if !b.is_empty() {
            sink(Fragment {
                tag: s.tag,
                total_len: s.len,
                offset: a.len(),
                data: b,
            });
        }
        q.pop();
        Ok(RecvInfo {
            tag: s.tag,
            len: s.len,
        })
    }
}

impl<E: Probe, T: Timer> Endpoint for Emulated<E, T> {
    #[inline]
    fn send_with<F: FnMut(usize, &mut [u8])>(
        &mut self,
        tag: Tag,
        len: usize,
        fill: F,
    ) -> Result<(), TransportError> {
        if self.pass {
            return self.inner.send_with(tag, len, fill);
        }
        self.before_send()?;
        self.hand_over(tag, len, fill)?;
        self.after_send(len);
        Ok(())
    }

    #[inline]
    fn recv_with<F: FnMut(Fragment<'_>)>(&mut self, sink: F) -> Result<RecvInfo, TransportError> {
        if self.pass {
            return self.inner.recv_with(sink);
        }
        self.recv_emulated(sink)
    }

    fn sendrecv(
        &mut self,
        tag: Tag,
        data: &[u8],
        buf: &mut [u8],
    ) -> Result<RecvInfo, TransportError> {
        if self.pass {
            return self.inner.sendrecv(tag, data, buf);
        }
        if self.exact {
            // The model's channels are unbounded: send, then receive, cannot deadlock.
            self.send(tag, data)?;
            return self.recv(buf);
        }
        self.before_send()?;
        let Some(q) = self.queue.as_mut() else {
            // o and g only: both directions progress in the transport; the receive's Δo is
            // spent after it, which costs the same CPU time and delays the return alike.
            self.pace_recv()?;
            let info = self.inner.sendrecv(tag, data, buf)?;
            self.after_send(data.len());
            self.spin_o();
            self.after_recv(info.len);
            return Ok(info);
        };
        if q.count > 0 {
            // The message to deliver is already here, so a plain send cannot wait on the peer
            // forever: the peer's own sendrecv receives while it sends.
            self.inner.send(tag, data)?;
            self.after_send(data.len());
            return self.recv(buf);
        }
        // Empty queue (checked after draining): land the incoming message in it at offset 0,
        // contiguous, so both directions still progress together in the transport.
        let info = self.inner.sendrecv(tag, data, &mut q.buf)?;
        let k = &self.cfg.knobs;
        let due = self.timer.now_ns() + k.l_ns + k.gap_per_byte_ns * info.len as f64;
        q.push(Slot {
            tag: info.tag,
            len: info.len,
            at: 0,
            due,
        });
        self.after_send(data.len());
        self.recv(buf)
    }

    fn info(&self) -> &EndpointInfo {
        self.inner.info()
    }

    #[inline]
    fn send(&mut self, tag: Tag, data: &[u8]) -> Result<(), TransportError> {
        if self.pass {
            return self.inner.send(tag, data);
        }
        self.before_send()?;
        if self.stamps {
            self.hand_over(tag, data.len(), |off, b| {
                b.copy_from_slice(&data[off..off + b.len()])
            })?;
        } else {
            self.inner.send(tag, data)?;
        }
        self.after_send(data.len());
        Ok(())
    }

    #[inline]
    fn recv(&mut self, buf: &mut [u8]) -> Result<RecvInfo, TransportError> {
        if self.pass {
            return self.inner.recv(buf);
        }
        let cap = buf.len();
        let info = self.recv_emulated(|f| commperf_transport::endpoint::copy_into(buf, &f))?;
        if info.len > cap {
            return Err(TransportError::Truncated { len: info.len, cap });
        }
        Ok(info)
    }
}

impl<E: Probe + VectoredSend, T: Timer> VectoredSend for Emulated<E, T> {
    fn send_vectored(&mut self, tag: Tag, parts: &[&[u8]]) -> Result<(), TransportError> {
        if self.pass {
            return self.inner.send_vectored(tag, parts);
        }
        self.before_send()?;
        self.inner.send_vectored(tag, parts)?;
        self.after_send(parts.iter().map(|p| p.len()).sum());
        Ok(())
    }
}

/// A message held in the delay queue is readable once due; one still in the transport counts
/// as arriving (a receive then waits out its due time).
impl<E: Probe + Readiness, T: Timer> Readiness for Emulated<E, T> {
    fn readable_now(&self) -> Result<bool, TransportError> {
        if let Some(s) = self.queue.as_ref().and_then(DelayQueue::front) {
            return Ok(self.timer.now_ns() >= s.due);
        }
        self.inner.readable_now()
    }
    fn check_alive(&self) -> Result<(), TransportError> {
        self.inner.check_alive()
    }
}

impl<E: Probe + SwitchMode, T: Timer> SwitchMode for Emulated<E, T> {
    fn set_mode(
        &mut self,
        mode: commperf_core::Mode,
        block_spins: u32,
    ) -> Result<(), TransportError> {
        self.inner.set_mode(mode, block_spins)
    }
}
