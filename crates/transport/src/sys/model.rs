//! A deterministic model transport that charges exact LogGP costs in virtual time.
//!
//! It exists so that everything built on measurements (LogGP extraction now; emulation and
//! prediction later) can be checked against known answers: give it o_s, o_r, g, G and L, run the
//! real measurement code over it, and the measurement must find what it was given. It is not a
//! simulation of any real network and is never offered as one.
//!
//! Semantics, per message of s bytes (all times virtual, in ns, per side), LogGOPS as
//! LogGOPSim charges it (o + O·s on each CPU, g + G·s on each NIC, L size-independent):
//! - a send starts when the sender is free and at least `g + G·s_prev` after the previous send
//!   started (the NIC gap, per message and per byte of the previous message); the sender's CPU
//!   is busy `o_s + O_s·s` from the start;
//! - the message's first byte arrives `o_s + L` after its send started and its bytes stream in
//!   at `G` per byte (the sender's per-byte work overlaps the transfer, as a pipelined copy does);
//! - a receive starts at `b`, the later of "receiver free" and "first byte arrived", and
//!   completes at the later of `b + o_r + O_r·s` (its own work) and `first byte + o_r + G·s`
//!   (it cannot finish before the last byte is in).
//!
//! So a ping-pong's one-way time is `o_s + L + o_r + max(O_r, G)·s`, and a receive of a
//! message that arrived long ago costs `o_r + O_r·s`. A negative `L` makes the first byte arrive
//! before the sender's fixed overhead is over: a transport whose send and receive overheads
//! overlap (TCP over loopback delivers into the receiver's socket from inside the sending call).
//! Above an optional size threshold a second parameter set applies (a protocol change such as
//! eager → rendezvous). The two sides run in two threads joined by channels; virtual time never
//! depends on real scheduling, so results are identical from run to run.

use crate::clock::Timer;
use crate::{Endpoint, EndpointConfig, EndpointInfo, Fragment, RecvInfo, Tag, TransportError};
use commperf_core::TransportKind;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{channel, Receiver, RecvTimeoutError, Sender};
use std::sync::Arc;

/// LogGOPS parameters in nanoseconds (G and O in ns per byte).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct LogGp {
    pub o_s_ns: f64,
    pub o_r_ns: f64,
    pub g_ns: f64,
    pub gap_per_byte_ns: f64,
    pub l_ns: f64,
    /// Per-byte CPU overhead of a send (LogGOPS O, sender side).
    pub o_s_per_byte_ns: f64,
    /// Per-byte CPU overhead of a receive (LogGOPS O, receiver side).
    pub o_r_per_byte_ns: f64,
}

/// The model's parameters: one set, or two with a protocol change above `threshold` bytes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ModelParams {
    pub small: LogGp,
    pub large: Option<(usize, LogGp)>,
}

impl ModelParams {
    /// The parameters that apply to a message of `size` bytes.
    pub fn at(&self, size: usize) -> &LogGp {
        match &self.large {
            Some((threshold, p)) if size > *threshold => p,
            _ => &self.small,
        }
    }
}

struct Msg {
    tag: Tag,
    data: Vec<u8>,
    /// When the first byte arrives.
    arrival_ns: f64,
}

/// A virtual clock shared between an endpoint and its [`VirtualTimer`].
#[derive(Debug, Default)]
struct VClock(AtomicU64);

impl VClock {
    fn get(&self) -> f64 {
        f64::from_bits(self.0.load(Ordering::Relaxed))
    }
    fn set(&self, v: f64) {
        self.0.store(v.to_bits(), Ordering::Relaxed)
    }
}

/// The virtual clock of one model endpoint, for the timed loops running on it.
#[derive(Debug, Clone)]
pub struct VirtualTimer(Arc<VClock>);

impl Timer for VirtualTimer {
    fn now_ns(&self) -> f64 {
        self.0.get()
    }
    fn spin_ns(&self, ns: f64) {
        self.0.set(self.0.get() + ns.max(0.0));
    }
}

/// One end of a model connection.
#[derive(Debug)]
pub struct ModelEndpoint {
    tx: Sender<Msg>,
    rx: Receiver<Msg>,
    clock: Arc<VClock>,
    /// Start time and size of the previous send (for the gap).
    prev_send: Option<(f64, usize)>,
    /// A message taken off the channel to report its arrival before it is received.
    head: Option<Msg>,
    params: ModelParams,
    info: EndpointInfo,
    cfg: EndpointConfig,
}

impl std::fmt::Debug for Msg {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Msg")
            .field("tag", &self.tag)
            .field("len", &self.data.len())
            .finish()
    }
}

/// Gathers the parts straight into transport memory (the ring, for shm): no packing buffer.
impl crate::VectoredSend for ModelEndpoint {
    fn send_vectored(&mut self, tag: Tag, parts: &[&[u8]]) -> Result<(), TransportError> {
        let len = parts.iter().map(|p| p.len()).sum();
        self.send_with(tag, len, |off, piece| crate::gather(parts, off, piece))
    }
}

impl crate::SwitchMode for ModelEndpoint {
    fn set_mode(
        &mut self,
        mode: commperf_core::Mode,
        block_spins: u32,
    ) -> Result<(), TransportError> {
        (self.cfg.mode, self.cfg.block_spins, self.info.mode) = (mode, block_spins, mode);
        Ok(())
    }
}

/// Two connected model endpoints, both clocks at 0.
pub fn pair(params: ModelParams, cfg: EndpointConfig) -> (ModelEndpoint, ModelEndpoint) {
    let (ta, rb) = channel();
    let (tb, ra) = channel();
    let mk = |tx, rx, name: &str| ModelEndpoint {
        tx,
        rx,
        clock: Arc::new(VClock::default()),
        prev_send: None,
        head: None,
        params,
        info: EndpointInfo {
            transport: TransportKind::Model,
            mode: cfg.mode,
            peer: format!("model peer {name}"),
            max_message: cfg.max_message,
        },
        cfg,
    };
    (mk(ta, ra, "b"), mk(tb, rb, "a"))
}

impl ModelEndpoint {
    /// The timer that reads and advances this endpoint's virtual clock.
    pub fn timer(&self) -> VirtualTimer {
        VirtualTimer(self.clock.clone())
    }

    fn push(&mut self, tag: Tag, data: Vec<u8>) -> Result<(), TransportError> {
        let s = data.len();
        if s > self.cfg.max_message {
            return Err(TransportError::SendTooLarge {
                len: s,
                max: self.cfg.max_message,
            });
        }
        let p = *self.params.at(s);
        let now = self.clock.get();
        let start = match self.prev_send {
            Some((t, prev)) => {
                let q = self.params.at(prev);
                now.max(t + q.g_ns + q.gap_per_byte_ns * prev as f64)
            }
            None => now,
        };
        self.prev_send = Some((start, s));
        self.clock
            .set(start + p.o_s_ns + p.o_s_per_byte_ns * s as f64);
        let arrival_ns = start + p.o_s_ns + p.l_ns;
        self.tx
            .send(Msg {
                tag,
                data,
                arrival_ns,
            })
            .map_err(|_| TransportError::PeerClosed {
                peer: self.info.peer.clone(),
                mid_message: false,
            })
    }

    /// The next message's arrival time (its first byte, virtual ns) and length, waiting (in real
    /// time) for the peer to send one. What a delay queue in a NIC sees; used by emulation.
    pub fn next_arrival(&mut self) -> Result<(f64, usize), TransportError> {
        if self.head.is_none() {
            self.head = Some(self.take()?);
        }
        let m = self.head.as_ref().expect("just filled");
        Ok((m.arrival_ns, m.data.len()))
    }

    /// Moves the next message's arrival `ns` later, as a NIC's delay queue would (emulation).
    pub fn defer_next_arrival(&mut self, ns: f64) -> Result<(), TransportError> {
        self.next_arrival()?;
        if let Some(m) = self.head.as_mut() {
            m.arrival_ns += ns.max(0.0);
        }
        Ok(())
    }

    /// The earliest virtual time at which the next send may start: the previous send's start
    /// plus its gap (`g + G·s`). Before any send, 0.
    pub fn nic_free_ns(&self) -> f64 {
        match self.prev_send {
            Some((t, prev)) => {
                let q = self.params.at(prev);
                t + q.g_ns + q.gap_per_byte_ns * prev as f64
            }
            None => 0.0,
        }
    }

    fn pop(&mut self) -> Result<Msg, TransportError> {
        let m = match self.head.take() {
            Some(m) => m,
            None => self.take()?,
        };
        let s = m.data.len() as f64;
        let p = self.params.at(m.data.len());
        let begin = self.clock.get().max(m.arrival_ns);
        let own = begin + p.o_r_ns + p.o_r_per_byte_ns * s;
        let last_byte = m.arrival_ns + p.o_r_ns + p.gap_per_byte_ns * s;
        self.clock.set(own.max(last_byte));
        Ok(m)
    }

    fn take(&mut self) -> Result<Msg, TransportError> {
        let m = match self.rx.recv_timeout(self.cfg.idle_timeout) {
            Ok(m) => m,
            Err(RecvTimeoutError::Timeout) => {
                return Err(TransportError::Timeout {
                    peer: self.info.peer.clone(),
                    secs: self.cfg.idle_timeout.as_secs(),
                })
            }
            Err(RecvTimeoutError::Disconnected) => {
                return Err(TransportError::PeerClosed {
                    peer: self.info.peer.clone(),
                    mid_message: false,
                })
            }
        };
        Ok(m)
    }
}

impl Endpoint for ModelEndpoint {
    fn send_with<F: FnMut(usize, &mut [u8])>(
        &mut self,
        tag: Tag,
        len: usize,
        mut fill: F,
    ) -> Result<(), TransportError> {
        if len > self.cfg.max_message {
            return Err(TransportError::SendTooLarge {
                len,
                max: self.cfg.max_message,
            });
        }
        let mut data = vec![0u8; len];
        fill(0, &mut data);
        self.push(tag, data)
    }

    fn recv_with<F: FnMut(Fragment<'_>)>(
        &mut self,
        mut sink: F,
    ) -> Result<RecvInfo, TransportError> {
        let m = self.pop()?;
        sink(Fragment {
            tag: m.tag,
            total_len: m.data.len(),
            offset: 0,
            data: &m.data,
        });
        Ok(RecvInfo {
            tag: m.tag,
            len: m.data.len(),
        })
    }

    fn sendrecv(
        &mut self,
        tag: Tag,
        data: &[u8],
        buf: &mut [u8],
    ) -> Result<RecvInfo, TransportError> {
        // Channels are unbounded, so sending first cannot deadlock.
        self.send(tag, data)?;
        self.recv(buf)
    }

    fn info(&self) -> &EndpointInfo {
        &self.info
    }
}
