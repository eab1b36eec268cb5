//! The contention model's simulation (Papaefstathiou 2001): operations start when their
//! dependencies allow, sends and receives match in MPI order, and a message's transfer is a flow
//! over links. (The LogGP model follows LogGOPSim's own rules and has its own engine, `loggops`.)
//!
//! Virtual time is f64 nanoseconds. Events are ordered by (time, sequence number), so equal
//! times resolve in the order the events were created: the same input always gives the same
//! output. Memory is per operation a few words, so a million-rank schedule fits.

use super::queue::{key, time_of, EventQueue};
use super::{Background, PredictConfig, PredictError, Sharing, SizeFactors};
use crate::output::{Arrow, Span, SpanKind, Timeline};
use crate::tcom::Tcom;
use crate::topology::{Link, Network, RankMap};
use crate::workload::{OpKind, Workload, ANY};

const NONE: u32 = u32::MAX;
const IREQ_BIT: u32 = 1 << 31;

/// The least share of the reference peak a flow moves at (so that no flow stalls at rate 0).
/// A link slower than this is refused at load ([`super::check`]), not silently sped up to it.
pub(crate) const MIN_SHARE: f64 = 1e-9;

/// The most redraws of an exponential background a run may take: the redraw period comes from
/// the user, and a period tiny against the run's length would run for hours (each redraw
/// touches every active flow).
pub(crate) const MAX_EPOCHS: u64 = 10_000_000;

/// The start of the redraw epoch after `now`: strictly later, even where `now / period`
/// rounds down to the epoch `now` starts.
pub(super) fn next_epoch(now: f64, period_ns: f64) -> f64 {
    let next = ((now / period_ns).floor() + 1.0) * period_ns;
    if next > now {
        next
    } else {
        ((now / period_ns).floor() + 2.0) * period_ns
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum EvKind {
    /// A calc completes.
    OpDone,
    /// A flow's latency is paid, or its bytes may have arrived (valid if its version still
    /// matches).
    FlowEnd,
    /// Background load changes (exponential model).
    Epoch,
}

#[derive(Debug, Clone, Copy)]
struct Msg {
    src: u32,
    dst: u32,
    bytes: u64,
    send_op: u32,
    recv_op: u32,
    eager: bool,
    started: bool,
    arrived: bool,
    start_t: f64,
    leg: Leg,
}

/// What a message is: half of a send/receive pair, or a leg of a one-sided transfer
/// ([`OpKind::Rma`], `send_op` its operation), which no receive matches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Leg {
    P2p,
    /// Origin to target: the request with the data a put carries.
    Request,
    /// Target to origin: the data a get fetches, or a put's acknowledgement.
    Reply,
}

/// Dependencies not yet satisfied (or [`DONE`]), owning rank, and where its dependents start in
/// `rev` (they end where the next operation's start).
#[derive(Debug, Clone, Copy, Default)]
struct OpSt {
    pending: u32,
    rank: u32,
    rev_start: u32,
}

const DONE: u32 = u32::MAX;

#[derive(Debug, Clone, Copy, Default)]
struct RankState {
    cpu_free: f64,
    calc_total: f64,
    in_flight: u32,
    comm_since: f64,
    compute_at_since: f64,
    comm: f64,
    finish: f64,
}

impl RankState {
    /// Compute time done by `t`: calcs queue back to back after the last gap, so everything
    /// dispatched is done except what lies after `t` (see the module doc of `engine`).
    fn compute_by(&self, t: f64) -> f64 {
        self.calc_total - (self.cpu_free - t).max(0.0)
    }
}

#[derive(Debug, Clone, Default)]
struct Flow {
    msg: u32,
    route: Vec<u32>,
    /// Per link of `route`: this flow's index in that link's `flows`, so leaving a link is
    /// O(1) rather than a search of its (possibly 100,000) flows.
    hops: Vec<u32>,
    /// Index in `Sim::active`, or `NONE` once the flow has ended.
    active_at: u32,
    work_left: f64,
    last: f64,
    rate: f64,
    version: u32,
    /// On its links: the latency phase is over and the bytes are moving (SimGrid's model: a
    /// message pays its latency alone, then shares the links' bandwidth).
    joined: bool,
    /// The most availability it may get (TCP window bound); infinite without one.
    bound: f64,
}

#[derive(Debug, Clone, Default)]
struct LinkState {
    /// (flow, index of this link in the flow's route).
    flows: Vec<(u32, u32)>,
    cap: f64,
    /// Every flow gets the whole capacity (SimGrid FATPIPE).
    fatpipe: bool,
    busy_since: f64,
    busy: f64,
    bytes: f64,
    max_count: u32,
    /// Its flow count changed at the current time and its flows are not yet re-timed.
    dirty: bool,
}

const POSTED: usize = 0;
const UNEXPECTED: usize = 1;

/// FIFO lists of match keys per (rank, kind), singly linked through one slab.
#[derive(Debug)]
struct Queues {
    /// Per rank: head and tail of the posted list, then of the unexpected list.
    ends: Vec<[u32; 4]>,
    nodes: Vec<([u32; 3], u32)>,
    free: u32,
}

impl Queues {
    fn new(nranks: usize) -> Self {
        Queues {
            ends: vec![[NONE; 4]; nranks],
            nodes: Vec::new(),
            free: NONE,
        }
    }

    fn push(&mut self, which: usize, rank: u32, k: [u32; 3]) {
        let id = if self.free != NONE {
            let id = self.free;
            self.free = self.nodes[id as usize].1;
            self.nodes[id as usize] = (k, NONE);
            id
        } else {
            self.nodes.push((k, NONE));
            (self.nodes.len() - 1) as u32
        };
        let e = &mut self.ends[rank as usize];
        let (h, t) = (2 * which, 2 * which + 1);
        if e[t] == NONE {
            e[h] = id;
        } else {
            self.nodes[e[t] as usize].1 = id;
        }
        e[t] = id;
    }

    /// Removes and returns the first key of the list that `hit` accepts.
    fn take(
        &mut self,
        which: usize,
        rank: u32,
        hit: impl Fn([u32; 3]) -> bool,
    ) -> Option<[u32; 3]> {
        let (h, t) = (2 * which, 2 * which + 1);
        let mut prev = NONE;
        let mut cur = self.ends[rank as usize][h];
        while cur != NONE {
            let (k, next) = self.nodes[cur as usize];
            if hit(k) {
                let e = &mut self.ends[rank as usize];
                if prev == NONE {
                    e[h] = next;
                } else {
                    self.nodes[prev as usize].1 = next;
                }
                if e[t] == cur {
                    e[t] = prev;
                }
                self.nodes[cur as usize].1 = self.free;
                self.free = cur;
                return Some(k);
            }
            prev = cur;
            cur = next;
        }
        None
    }
}

/// What a finished simulation hands to the summary.
#[derive(Debug, Clone)]
pub(crate) struct SimResult {
    pub total_ns: f64,
    pub messages: u64,
    pub events: u64,
    /// Per rank: finish, compute, comm (ns).
    pub ranks: Vec<(f64, f64, f64)>,
    /// Per link: busy ns, bytes, max contention.
    pub links: Vec<(f64, f64, u32)>,
    pub link_cap: Vec<f64>,
    pub timeline: Option<Timeline>,
    /// The most the event queue ever held beyond the active flows: a structural check that
    /// memory follows the active set (one entry per flow, plus the one-shot events). Read by
    /// the tests only.
    #[cfg_attr(not(test), allow(dead_code))]
    pub peak_queue_over_active: u64,
}

pub(crate) struct Sim<'a> {
    w: &'a Workload,
    net: &'a dyn Network,
    map: &'a RankMap,
    tcom: &'a Tcom,
    eager_max: u64,
    background: Background,
    seed: u64,
    /// Per directed link: its latency (ns), and the link whose capacity it uses (itself, or
    /// for shared cables the first of its two directions).
    class_latency: Vec<f64>,
    cap_of: Vec<u32>,
    latency_factor: SizeFactors,
    bandwidth_factor: SizeFactors,
    tcp_gamma: f64,
    calc_scale: Vec<f64>,

    now: f64,
    seq: u64,
    heap: EventQueue<(EvKind, u32, u32)>,
    events: u64,

    /// Per operation in one place: the engine visits operations in time order, which jumps
    /// across ranks, so every separate array would be one more cache miss per operation.
    st: Vec<OpSt>,
    rev: Vec<u32>,
    completed: u64,
    ready: Vec<u32>,

    ranks: Vec<RankState>,
    /// Per receiving rank, in arrival order: (message, source, tag) of unmatched sends
    /// (`UNEXPECTED`), and (operation, source, tag) of unmatched receives (`POSTED`), as linked
    /// lists in one slab — a million ranks cannot each afford two vectors. The keys are kept
    /// inline so matching does not visit each candidate's operation or message.
    queues: Queues,
    msgs: Vec<Msg>,
    msg_free: Vec<u32>,
    messages: u64,

    flows: Vec<Flow>,
    flow_free: Vec<u32>,
    links: Vec<LinkState>,
    mark: Vec<u64>,
    stamp: u64,
    /// Flows in progress, for the background epochs (which re-time every one of them).
    active: Vec<u32>,
    /// Links whose flow count changed at the current time, and flows started at it: all the
    /// flows they touch are re-timed once, when virtual time is about to move on
    /// ([`Sim::settle`]), not once per start or end. A thousand flows starting or ending at
    /// one instant on a link of a thousand would otherwise re-time that link's flows a
    /// thousand times over, for nothing: no time passes between them.
    dirty: Vec<u32>,
    fresh: Vec<u32>,
    epoch_pending: bool,
    /// Background redraws so far (bounded by [`MAX_EPOCHS`]).
    epochs: u64,
    active_flows: u64,
    peak_queue_over_active: u64,

    timeline: Option<(Vec<f64>, Timeline)>,
}

impl<'a> Sim<'a> {
    pub(crate) fn new(
        w: &'a Workload,
        net: &'a dyn Network,
        map: &'a RankMap,
        tcom: &'a Tcom,
        cfg: &PredictConfig,
    ) -> Result<Self, PredictError> {
        let n = w.len();
        let nranks = w.nranks() as usize;
        let (st, rev, ready) = op_states(w);
        let (links, class_latency) = link_states(net, tcom, cfg);
        let cap_of = shared_capacities(net.links(), cfg.sharing);
        let timeline = cfg.timeline.then(|| {
            (
                vec![0.0; n],
                Timeline {
                    nranks: w.nranks(),
                    ..Timeline::default()
                },
            )
        });
        Ok(Sim {
            w,
            net,
            map,
            tcom,
            eager_max: cfg.eager_threshold_bytes,
            background: cfg.background,
            seed: cfg.seed,
            class_latency,
            cap_of,
            latency_factor: cfg.latency_factor.clone(),
            bandwidth_factor: cfg.bandwidth_factor.clone(),
            tcp_gamma: cfg.tcp_gamma_bytes,
            calc_scale: cfg.calc_scale.clone(),
            now: 0.0,
            seq: 0,
            heap: EventQueue::new(),
            events: 0,
            st,
            rev,
            completed: 0,
            ready,
            ranks: vec![RankState::default(); nranks],
            queues: Queues::new(nranks),
            msgs: Vec::new(),
            msg_free: Vec::new(),
            messages: 0,
            flows: Vec::new(),
            flow_free: Vec::new(),
            links,
            mark: Vec::new(),
            stamp: 0,
            active: Vec::new(),
            dirty: Vec::new(),
            fresh: Vec::new(),
            epoch_pending: false,
            epochs: 0,
            active_flows: 0,
            peak_queue_over_active: 0,
            timeline,
        })
    }

    fn push(&mut self, t: f64, kind: EvKind, a: u32, b: u32) {
        self.seq += 1;
        self.heap.push(key(t, self.seq), (kind, a, b));
    }

    pub(crate) fn run(mut self) -> Result<SimResult, PredictError> {
        self.drain_ready()?;
        loop {
            // Flows touched at this instant are re-timed before anything later happens.
            if (!self.dirty.is_empty() || !self.fresh.is_empty())
                && self.heap.peek_key().is_none_or(|k| time_of(k) > self.now)
            {
                self.settle();
            }
            let over = (self.heap.len() as u64).saturating_sub(self.active_flows);
            self.peak_queue_over_active = self.peak_queue_over_active.max(over);
            let Some((k, (kind, a, b))) = self.heap.pop() else {
                break;
            };
            self.now = time_of(k);
            match kind {
                EvKind::OpDone => self.complete(a),
                EvKind::FlowEnd => {
                    if self.flows[a as usize].version != b {
                        continue;
                    }
                    self.flow_end(a)?;
                }
                EvKind::Epoch => {
                    self.epochs += 1;
                    if self.epochs > MAX_EPOCHS {
                        return Err(self.too_many_epochs());
                    }
                    self.epoch()
                }
            }
            self.events += 1;
            self.drain_ready()?;
        }
        if self.completed < self.w.len() as u64 {
            return Err(self.deadlock());
        }
        Ok(self.finish())
    }

    fn too_many_epochs(&self) -> PredictError {
        let period_us = match self.background {
            Background::Exp { period_ns, .. } => period_ns / 1e3,
            _ => 0.0,
        };
        PredictError::Config(format!(
            "the background load was redrawn {MAX_EPOCHS} times by {:.3} µs of simulated time: \
             its period ({period_us} µs) is too short for this run",
            self.now / 1e3
        ))
    }

    fn deadlock(&self) -> PredictError {
        let stuck = self.w.len() as u64 - self.completed;
        let first = self.st[..self.w.len()]
            .iter()
            .position(|s| s.pending != DONE)
            .unwrap_or(0);
        let r = self.st[first].rank;
        let local = first as u32 - self.w.rank_starts()[r as usize];
        let what = super::stuck_op(self.w.op(first));
        PredictError::Deadlock {
            at_us: self.now / 1e3,
            stuck,
            rank: r,
            op: local,
            what,
        }
    }

    fn drain_ready(&mut self) -> Result<(), PredictError> {
        // Dispatching can make more operations ready; the worklist keeps this iterative.
        let mut i = 0;
        while i < self.ready.len() {
            let op = self.ready[i];
            i += 1;
            self.dispatch(op)?;
            if i > 4096 && i * 2 > self.ready.len() {
                self.ready.drain(..i);
                i = 0;
            }
        }
        self.ready.clear();
        Ok(())
    }

    fn notify(&mut self, op: u32, on_start: bool) {
        let (a, b) = (
            self.st[op as usize].rev_start as usize,
            self.st[op as usize + 1].rev_start as usize,
        );
        for k in a..b {
            let d = self.rev[k];
            if (d & IREQ_BIT != 0) == on_start {
                let j = (d & !IREQ_BIT) as usize;
                self.st[j].pending -= 1;
                if self.st[j].pending == 0 {
                    self.ready.push(j as u32);
                }
            }
        }
    }

    fn dispatch(&mut self, op: u32) -> Result<(), PredictError> {
        let t = self.now;
        if let Some((starts, _)) = &mut self.timeline {
            starts[op as usize] = t;
        }
        self.notify(op, true);
        let rank = self.st[op as usize].rank;
        match self.w.op(op as usize) {
            OpKind::Calc { ns } => {
                if ns == 0 {
                    self.complete(op);
                } else {
                    let ns = ns as f64 * self.calc_scale.get(rank as usize).copied().unwrap_or(1.0);
                    let r = &mut self.ranks[rank as usize];
                    let start = t.max(r.cpu_free);
                    r.cpu_free = start + ns;
                    r.calc_total += ns;
                    let end = r.cpu_free;
                    if let Some((starts, _)) = &mut self.timeline {
                        starts[op as usize] = start;
                    }
                    self.push(end, EvKind::OpDone, op, 0);
                }
            }
            OpKind::Send { to, tag, bytes } | OpKind::Ssend { to, tag, bytes } => {
                // A synchronous send waits for its receive, as a rendezvous one does.
                let sync = matches!(self.w.op(op as usize), OpKind::Ssend { .. });
                if to >= self.w.nranks() {
                    return Err(PredictError::Config(format!(
                        "rank {rank} sends to rank {to}, outside 0..{}",
                        self.w.nranks()
                    )));
                }
                let m = Msg {
                    src: rank,
                    dst: to,
                    bytes,
                    send_op: op,
                    recv_op: NONE,
                    eager: bytes <= self.eager_max && !sync,
                    started: false,
                    arrived: false,
                    start_t: 0.0,
                    leg: Leg::P2p,
                };
                let mid = self.new_msg(m);
                self.messages += 1;
                // The earliest posted receive that accepts it.
                let hit = self.queues.take(POSTED, to, |[_, from, rt]| {
                    (from == ANY || from == rank) && (rt == ANY || rt == tag)
                });
                match hit {
                    Some([recv, _, _]) => self.msgs[mid as usize].recv_op = recv,
                    None => self.queues.push(UNEXPECTED, to, [mid, rank, tag]),
                }
                if self.msgs[mid as usize].eager || self.msgs[mid as usize].recv_op != NONE {
                    self.start_transfer(mid)?;
                }
            }
            OpKind::Rma { target, out, .. } => {
                if target >= self.w.nranks() {
                    return Err(PredictError::Config(format!(
                        "rank {rank} transfers one-sided with rank {target}, outside 0..{}",
                        self.w.nranks()
                    )));
                }
                let mid = self.new_msg(Msg {
                    src: rank,
                    dst: target,
                    bytes: out,
                    send_op: op,
                    recv_op: NONE,
                    eager: true,
                    started: false,
                    arrived: false,
                    start_t: 0.0,
                    leg: Leg::Request,
                });
                self.start_transfer(mid)?;
            }
            OpKind::Recv { from, tag, .. } => {
                let hit = self.queues.take(UNEXPECTED, rank, |[_, src, mt]| {
                    (from == ANY || from == src) && (tag == ANY || tag == mt)
                });
                match hit {
                    Some([mid, _, _]) => {
                        self.msgs[mid as usize].recv_op = op;
                        let m = self.msgs[mid as usize];
                        if m.arrived {
                            self.deliver_recv(mid);
                        } else if !m.started {
                            self.start_transfer(mid)?;
                        }
                    }
                    None => self.queues.push(POSTED, rank, [op, from, tag]),
                }
            }
        }
        Ok(())
    }

    fn complete(&mut self, op: u32) {
        let t = self.now;
        self.st[op as usize].pending = DONE;
        self.completed += 1;
        let rank = self.st[op as usize].rank;
        let r = &mut self.ranks[rank as usize];
        r.finish = r.finish.max(t);
        if let Some((starts, tl)) = &mut self.timeline {
            let start = starts[op as usize];
            let (kind, peer, bytes) = match self.w.op(op as usize) {
                OpKind::Calc { ns: 0 } => (None, None, 0),
                OpKind::Calc { .. } => (Some(SpanKind::Compute), None, 0),
                OpKind::Send { to, bytes, .. } | OpKind::Ssend { to, bytes, .. } => {
                    (Some(SpanKind::Send), Some(to), bytes)
                }
                OpKind::Recv { from, bytes, .. } => {
                    (Some(SpanKind::Recv), (from != ANY).then_some(from), bytes)
                }
                OpKind::Rma {
                    target, out, back, ..
                } => (Some(SpanKind::Send), Some(target), out + back),
            };
            if let Some(kind) = kind {
                tl.spans.push(Span {
                    rank,
                    kind,
                    start_ns: start,
                    end_ns: t,
                    peer,
                    bytes,
                });
            }
        }
        self.notify(op, false);
    }

    fn comm_change(&mut self, rank: u32, up: bool) {
        let t = self.now;
        let r = &mut self.ranks[rank as usize];
        let c = r.compute_by(t);
        if r.in_flight > 0 {
            r.comm += ((t - r.comm_since) - (c - r.compute_at_since)).max(0.0);
        }
        r.comm_since = t;
        r.compute_at_since = c;
        if up {
            r.in_flight += 1;
        } else {
            r.in_flight -= 1;
        }
    }

    fn new_msg(&mut self, m: Msg) -> u32 {
        match self.msg_free.pop() {
            Some(id) => {
                self.msgs[id as usize] = m;
                id
            }
            None => {
                self.msgs.push(m);
                (self.msgs.len() - 1) as u32
            }
        }
    }

    fn start_transfer(&mut self, mid: u32) -> Result<(), PredictError> {
        let t = self.now;
        let m = &mut self.msgs[mid as usize];
        m.started = true;
        m.start_t = t;
        let m = *m;
        // A one-sided transfer is the origin's communication from its request to its reply;
        // the target takes no part.
        match m.leg {
            Leg::P2p => {
                self.comm_change(m.src, true);
                self.comm_change(m.dst, true);
            }
            Leg::Request => self.comm_change(m.src, true),
            Leg::Reply => {}
        }
        self.flow_start(mid)?;
        Ok(())
    }

    /// The message is at the receiver.
    fn arrived(&mut self, mid: u32) -> Result<(), PredictError> {
        let t = self.now;
        let m = self.msgs[mid as usize];
        match m.leg {
            Leg::P2p => {
                self.comm_change(m.src, false);
                self.comm_change(m.dst, false);
            }
            Leg::Request => {}
            Leg::Reply => self.comm_change(m.dst, false),
        }
        if let Some((_, tl)) = &mut self.timeline {
            tl.messages.push(Arrow {
                src: m.src,
                dst: m.dst,
                bytes: m.bytes,
                start_ns: m.start_t,
                end_ns: t,
            });
        }
        self.msgs[mid as usize].arrived = true;
        if m.leg != Leg::P2p {
            return self.rma_leg_done(mid, m);
        }
        // A send completes when its data is out.
        self.complete(m.send_op);
        if m.recv_op != NONE {
            self.deliver_recv(mid);
        }
        Ok(())
    }

    /// A one-sided request is at its target: the reply (`back` bytes) leaves at once, the
    /// target's CPU taking no part; the reply at the origin completes the transfer.
    fn rma_leg_done(&mut self, mid: u32, m: Msg) -> Result<(), PredictError> {
        self.msg_free.push(mid);
        if m.leg == Leg::Reply {
            self.complete(m.send_op);
            return Ok(());
        }
        let back = match self.w.op(m.send_op as usize) {
            OpKind::Rma { back, .. } => back,
            _ => 0,
        };
        let reply = self.new_msg(Msg {
            src: m.dst,
            dst: m.src,
            bytes: back,
            leg: Leg::Reply,
            ..m
        });
        self.start_transfer(reply)
    }

    /// The matched receive of an arrived message completes.
    fn deliver_recv(&mut self, mid: u32) {
        let m = self.msgs[mid as usize];
        self.complete(m.recv_op);
        self.msg_free.push(mid);
    }

    // ---- contention model ----

    fn background_at(&self, link: u32) -> f64 {
        match self.background {
            Background::None => 0.0,
            Background::Const(f) => f,
            Background::Exp { mean, period_ns } => {
                let epoch = (self.now / period_ns).floor() as u64;
                let h = crate::rng::mix(
                    self.seed ^ crate::rng::mix((link as u64) << 32 ^ epoch.wrapping_mul(0x9e37)),
                );
                let u = ((h >> 11) as f64 + 0.5) * (1.0 / (1u64 << 53) as f64);
                (-mean * u.ln()).min(0.95)
            }
        }
    }

    fn availability(&self, f: u32) -> f64 {
        let mut ba: f64 = 1.0;
        for &l in &self.flows[f as usize].route {
            let ls = &self.links[l as usize];
            let share = if ls.fatpipe {
                1.0
            } else {
                ls.flows.len() as f64
            };
            let v = ls.cap * (1.0 - self.background_at(l)) / share;
            ba = ba.min(v);
        }
        ba.min(self.flows[f as usize].bound).max(MIN_SHARE)
    }

    fn flow_start(&mut self, mid: u32) -> Result<(), PredictError> {
        let m = self.msgs[mid as usize];
        let id = match self.flow_free.pop() {
            Some(id) => id,
            None => {
                self.flows.push(Flow::default());
                self.mark.push(0);
                (self.flows.len() - 1) as u32
            }
        };
        let mut route = std::mem::take(&mut self.flows[id as usize].route);
        let mut hops = std::mem::take(&mut self.flows[id as usize].hops);
        route.clear();
        hops.clear();
        self.net.route(
            self.map.0[m.src as usize],
            self.map.0[m.dst as usize],
            &mut route,
        )?;
        // Latency is not shared: the links' latency (scaled by the latency factor) and Tcom's
        // start-up intercept elapse at rate 1 before the message takes its share of the links;
        // only the bytes are divided by the bandwidth availability (Papaefstathiou's (2001) BA
        // divides the bandwidth), stretched by the inverse of the bandwidth factor.
        let links_lat: f64 = route.iter().map(|&l| self.class_latency[l as usize]).sum();
        let quiet = self.tcom.quiet_ns(m.bytes);
        let start_up = self.tcom.latency_ns(m.bytes);
        let latency = start_up + links_lat * self.latency_factor.at(m.bytes);
        let bound = if self.tcp_gamma > 0.0 && links_lat > 0.0 {
            self.tcp_gamma / (2.0 * links_lat) / self.tcom.peak_bytes_per_ns()
        } else {
            f64::INFINITY
        };
        for l in route.iter_mut() {
            *l = self.cap_of[*l as usize];
        }
        let t = self.now;
        let f = &mut self.flows[id as usize];
        f.msg = mid;
        f.route = route;
        hops.clear();
        f.hops = hops;
        f.work_left = (quiet - start_up) / self.bandwidth_factor.at(m.bytes);
        f.last = t;
        f.rate = 0.0;
        f.bound = bound;
        f.joined = false;
        f.active_at = self.active.len() as u32;
        self.active.push(id);
        self.active_flows += 1;
        if latency > 0.0 {
            // The flow's one queue slot holds the end of its latency; that FlowEnd puts it on
            // its links (rate 0 until then: epochs and settles leave it alone).
            f.version = f.version.wrapping_add(1);
            let v = f.version;
            self.seq += 1;
            self.heap
                .set(id, key(t + latency, self.seq), (EvKind::FlowEnd, id, v));
        } else {
            self.join(id);
        }
        if matches!(self.background, Background::Exp { .. }) && !self.epoch_pending {
            if let Background::Exp { period_ns, .. } = self.background {
                let next = next_epoch(t, period_ns);
                self.epoch_pending = true;
                self.push(next, EvKind::Epoch, 0, 0);
            }
        }
        Ok(())
    }

    /// The flow's latency is paid: it takes its share of its links from now on.
    fn join(&mut self, id: u32) {
        let t = self.now;
        let route = std::mem::take(&mut self.flows[id as usize].route);
        let mut hops = std::mem::take(&mut self.flows[id as usize].hops);
        hops.clear();
        for (h, &l) in route.iter().enumerate() {
            let ls = &mut self.links[l as usize];
            if ls.flows.is_empty() {
                ls.busy_since = t;
            }
            hops.push(ls.flows.len() as u32);
            ls.flows.push((id, h as u32));
            ls.max_count = ls.max_count.max(ls.flows.len() as u32);
        }
        let f = &mut self.flows[id as usize];
        f.route = route;
        f.hops = hops;
        f.joined = true;
        f.last = t;
        self.retouch(id, true);
    }

    /// Notes that the flow count changed on `changed`'s links (and that `changed` itself needs
    /// a rate when it is new); [`Sim::settle`] re-times what that touched.
    fn retouch(&mut self, changed: u32, include_self: bool) {
        if include_self {
            self.fresh.push(changed);
        }
        for &l in &self.flows[changed as usize].route {
            let ls = &mut self.links[l as usize];
            if !ls.dirty {
                ls.dirty = true;
                self.dirty.push(l);
            }
        }
    }

    /// Re-derives the availability of every new flow and of every flow on a link whose count
    /// changed at this instant: only what the changes touched, each flow once.
    fn settle(&mut self) {
        self.stamp += 1;
        let stamp = self.stamp;
        let fresh = std::mem::take(&mut self.fresh);
        for &g in &fresh {
            if self.flows[g as usize].active_at != NONE && self.mark[g as usize] != stamp {
                self.mark[g as usize] = stamp;
                self.reschedule(g);
            }
        }
        self.fresh = fresh;
        self.fresh.clear();
        let dirty = std::mem::take(&mut self.dirty);
        for &l in &dirty {
            self.links[l as usize].dirty = false;
            let mut i = 0;
            while i < self.links[l as usize].flows.len() {
                let g = self.links[l as usize].flows[i].0;
                i += 1;
                if self.mark[g as usize] != stamp {
                    self.mark[g as usize] = stamp;
                    self.reschedule(g);
                }
            }
        }
        self.dirty = dirty;
        self.dirty.clear();
    }

    fn reschedule(&mut self, g: u32) {
        let ba = self.availability(g);
        let t = self.now;
        let f = &mut self.flows[g as usize];
        if ba == f.rate {
            return;
        }
        f.work_left = (f.work_left - f.rate * (t - f.last)).max(0.0);
        f.last = t;
        f.rate = ba;
        f.version = f.version.wrapping_add(1);
        let (end, v) = (t + f.work_left / ba, f.version);
        self.seq += 1;
        self.heap
            .set(g, key(end, self.seq), (EvKind::FlowEnd, g, v));
    }

    fn flow_end(&mut self, id: u32) -> Result<(), PredictError> {
        if !self.flows[id as usize].joined {
            self.join(id);
            return Ok(());
        }
        let t = self.now;
        let mid = self.flows[id as usize].msg;
        let bytes = self.msgs[mid as usize].bytes as f64;
        let route = std::mem::take(&mut self.flows[id as usize].route);
        let hops = std::mem::take(&mut self.flows[id as usize].hops);
        for (&l, &p) in route.iter().zip(&hops) {
            let ls = &mut self.links[l as usize];
            ls.flows.swap_remove(p as usize);
            if let Some(&(g, h)) = ls.flows.get(p as usize) {
                // The link's last flow moved into the hole: tell it where it now is.
                self.flows[g as usize].hops[h as usize] = p;
            }
            ls.bytes += bytes;
            if ls.flows.is_empty() {
                ls.busy += t - ls.busy_since;
            }
        }
        let f = &mut self.flows[id as usize];
        f.route = route;
        f.hops = hops;
        f.version = f.version.wrapping_add(1);
        f.rate = 0.0;
        let at = std::mem::replace(&mut f.active_at, NONE);
        self.active.swap_remove(at as usize);
        if let Some(&g) = self.active.get(at as usize) {
            self.flows[g as usize].active_at = at;
        }
        self.heap.remove(id);
        self.active_flows -= 1;
        self.retouch(id, false);
        self.flow_free.push(id);
        self.arrived(mid)
    }

    fn epoch(&mut self) {
        self.epoch_pending = false;
        if self.active_flows == 0 {
            return;
        }
        // Every link's load changed: every active flow is touched (those started at this
        // instant get their rate when it settles).
        for i in 0..self.active.len() {
            let g = self.active[i];
            if self.flows[g as usize].rate > 0.0 {
                self.reschedule(g);
            }
        }
        if let Background::Exp { period_ns, .. } = self.background {
            self.epoch_pending = true;
            let next = next_epoch(self.now, period_ns);
            self.push(next, EvKind::Epoch, 0, 0);
        }
    }

    fn finish(self) -> SimResult {
        let total = self.ranks.iter().map(|r| r.finish).fold(0.0, f64::max);
        SimResult {
            total_ns: total,
            messages: self.messages,
            events: self.events,
            ranks: self
                .ranks
                .iter()
                .map(|r| (r.finish, r.calc_total, r.comm))
                .collect(),
            links: self
                .links
                .iter()
                .map(|l| (l.busy, l.bytes, l.max_count))
                .collect(),
            link_cap: self.links.iter().map(|l| l.cap).collect(),
            peak_queue_over_active: self.peak_queue_over_active,
            timeline: self.timeline.map(|(_, mut tl)| {
                tl.spans.sort_by(|a, b| {
                    a.rank
                        .cmp(&b.rank)
                        .then(a.start_ns.total_cmp(&b.start_ns))
                        .then(a.end_ns.total_cmp(&b.end_ns))
                });
                tl
            }),
        }
    }
}
/// Per operation its start state (dependencies pending, rank, where its dependents start in
/// the reverse rows), the reverse rows (who waits for each operation, with the `IREQ_BIT` of
/// an `irequires`), and the operations ready at once.
fn op_states(w: &Workload) -> (Vec<OpSt>, Vec<u32>, Vec<u32>) {
    let n = w.len();
    let nranks = w.nranks() as usize;
    // The rank map was checked against the workload and the network by `engine::check`.
    let mut op_rank = vec![0u32; n];
    let starts = w.rank_starts();
    for r in 0..nranks {
        op_rank[starts[r] as usize..starts[r + 1] as usize].fill(r as u32);
    }
    // Dependents in compressed rows: who waits for operation i to start or complete.
    let (dep_start, deps) = w.dep_rows();
    let mut pending = vec![0u32; n];
    let mut count = vec![0u32; n + 1];
    for i in 0..n {
        let base = starts[op_rank[i] as usize];
        pending[i] = dep_start[i + 1] - dep_start[i];
        for &d in &deps[dep_start[i] as usize..dep_start[i + 1] as usize] {
            let (local, _) = Workload::decode_dep(d);
            count[(base + local) as usize + 1] += 1;
        }
    }
    for i in 0..n {
        count[i + 1] += count[i];
    }
    let st: Vec<OpSt> = (0..=n)
        .map(|i| OpSt {
            pending: if i < n { pending[i] } else { 0 },
            rank: if i < n { op_rank[i] } else { 0 },
            rev_start: count[i],
        })
        .collect();
    let mut fill = count;
    let mut rev = vec![0u32; deps.len()];
    for i in 0..n {
        let base = starts[op_rank[i] as usize];
        for &d in &deps[dep_start[i] as usize..dep_start[i + 1] as usize] {
            let (local, kind) = Workload::decode_dep(d);
            let on = (base + local) as usize;
            let bit = if kind == crate::workload::DepKind::IRequires {
                IREQ_BIT
            } else {
                0
            };
            rev[fill[on] as usize] = i as u32 | bit;
            fill[on] += 1;
        }
    }
    let ready: Vec<u32> = (0..n as u32)
        .filter(|&i| pending[i as usize] == 0)
        .collect();
    (st, rev, ready)
}

/// Per link its state (capacity as a share of the profile's peak, fat pipe or not) and its
/// latency: a link class's settings over the topology's own specs.
fn link_states(net: &dyn Network, tcom: &Tcom, cfg: &PredictConfig) -> (Vec<LinkState>, Vec<f64>) {
    let net_links = net.links();
    let mut links = Vec::with_capacity(net_links.len());
    let mut class_latency = Vec::with_capacity(net_links.len());
    let specs = net.link_specs().filter(|s| s.len() == net_links.len());
    for (i, l) in net_links.iter().enumerate() {
        let class = cfg.link_classes.iter().find(|c| c.name == l.class);
        let spec = specs.map(|s| s[i]);
        let bw = class
            .and_then(|c| c.bandwidth_bytes_per_ns)
            .or(spec.map(|s| s.bandwidth_bytes_per_ns));
        let cap = match bw {
            Some(bw) => bw / tcom.peak_bytes_per_ns(),
            None => 1.0,
        };
        links.push(LinkState {
            cap,
            fatpipe: spec.is_some_and(|s| s.fatpipe),
            ..LinkState::default()
        });
        // A class's latency replaces the link's own when it gives one.
        let class_lat = class.map_or(0.0, |c| c.latency_ns);
        class_latency.push(match spec {
            Some(s) if class_lat == 0.0 => s.latency_ns,
            _ => class_lat,
        });
    }
    (links, class_latency)
}

/// Per link, the link whose capacity it counts against: itself, or with shared cables the
/// first of the two directions between its ends.
fn shared_capacities(net_links: &[Link], sharing: Sharing) -> Vec<u32> {
    // Shared cables: both directions count against the capacity of the first one.
    let mut cap_of: Vec<u32> = (0..net_links.len() as u32).collect();
    if sharing == Sharing::Shared {
        let mut by_ends = std::collections::HashMap::with_capacity(net_links.len());
        for (i, l) in net_links.iter().enumerate() {
            by_ends
                .entry((l.from.as_str(), l.to.as_str()))
                .or_insert(i as u32);
        }
        for (i, l) in net_links.iter().enumerate() {
            if let Some(&j) = by_ends.get(&(l.to.as_str(), l.from.as_str())) {
                cap_of[i] = cap_of[i].min(j);
            }
        }
    }
    cap_of
}
