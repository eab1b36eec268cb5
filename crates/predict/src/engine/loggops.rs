//! The LogGP (LogGOPS) model, step for step as LogGOPSim v1 simulates it, so that a schedule
//! gives every host the finishing time LogGOPSim gives it, to the nanosecond (checked against
//! LogGOPSim's own answers in `tests/data/loggopsim-reference`).
//!
//! Why a separate engine rather than branches in the contention engine: LogGOPSim's answers
//! depend on *when* it charges each cost and on the order it processes simultaneous events, and
//! those rules are not those of a flow simulation:
//!
//! - A host has a CPU (`next_o`), a sending NIC (`next_gs`) and a receiving NIC (`next_gr`),
//!   each free from a time on.
//! - An operation whose dependencies are met enters the queue at its host's `next_o` (a send at
//!   `max(next_o, next_gs)`), not at the moment it was freed; a send or a calc that finds its
//!   resource taken when its turn comes goes back into the queue at the time the resource is free,
//!   keeping its place among equal times. Equal times are served in the order elements entered.
//! - A send of s bytes holds the CPU for o + (s−1)·O and the NIC for g + (s−1)·G; its first byte
//!   reaches the receiver at + o + L. An eager send (s ≤ S) is complete at once (its dependents
//!   start when the CPU is free); a rendezvous send completes when the receiver matches it,
//!   and so does a synchronous send (MPI_Ssend) of any size.
//! - A message is taken in by the receiver when both its CPU and its receiving NIC are free: the
//!   CPU for o + max((s−1)·O, (s−1)·G) (the data has to be in before it is delivered), the NIC for
//!   g + (s−1)·G. It completes a posted receive then; otherwise it waits in the unexpected queue
//!   and the receive completes the moment it is posted (its overhead was paid on arrival).
//! - A host finishes when its CPU is last free.
//!
//! - With [`LoggpReceive::LastByte`] (not LogGOPSim's rule; opt-in) a message reaches the
//!   receiver with its last byte, at + o + L + (s−1)·G, and its receive holds the CPU for
//!   o + (s−1)·O only: LogGP's original charge, under which a CPU is free while its bytes travel.
//!
//! Deliberate differences, each because LogGOPSim's value is not physical: a message of 0 bytes
//! is charged no per-byte cost (LogGOPSim computes (0 − 1)·G in unsigned arithmetic); operations
//! have no `cpu`/`nic` index (every host has one CPU and one NIC, LogGOPSim's default).
//!
//! Per-rank accounting follows LogGP's vocabulary so that it adds up: compute is the time the CPU
//! runs calc operations, comm the time it spends in send and receive overheads, wait the rest of
//! the time before the rank finishes (messages in flight, late partners, the NIC's gap).

use super::queue::{key, time_of, EventQueue};
use super::sim::SimResult;
use super::{LogGp, LoggpReceive, Overlap, PredictError, Progress, SelfOverheads};
use crate::output::{Arrow, Span, SpanKind, Timeline};
use crate::workload::{DepKind, OpKind, Workload, ANY};
use std::collections::VecDeque;

/// What a queue element is: an operation (its global index), a message in the network, or the
/// head of a host's line of elements waiting for one kind of resource ([`Waiting`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Elem {
    Op(u32),
    Msg(u32),
    Line(u32),
    /// A one-sided transfer's reply is at its origin: the operation completes.
    RmaDone(u32),
}

/// The lines a host's blocked elements wait in, by what they need: a calc the CPU, a send the
/// CPU and the sending NIC, a message the CPU and the receiving NIC.
const CALC_LINE: u32 = 0;
const SEND_LINE: u32 = 1;
const MSG_LINE: u32 = 2;
const LINES: u32 = 3;

#[derive(Debug, Clone, Copy)]
struct Msg {
    src: u32,
    dst: u32,
    bytes: u64,
    tag: u32,
    send_op: u32,
    start: f64,
    /// A synchronous send's: the send completes when its receive matches it, whatever its
    /// size (the rendezvous path).
    sync: bool,
    /// The message's number among all sent (for [`Overlap::duplex_ns`]'s bookkeeping).
    seq: u64,
}

impl Msg {
    /// Whether its send completes only when the receive matches it: above the eager limit, or
    /// synchronous.
    fn rendezvous(&self, eager_max: u64) -> bool {
        self.bytes > eager_max || self.sync
    }
}

/// Per direction of a pair of hosts, its latest message: when it was taken in (infinite while
/// not yet), its number, and whether a message the other way has paid for crossing it.
#[derive(Debug, Clone, Copy)]
struct Latest {
    taken: f64,
    seq: u64,
    crossed: bool,
}

#[derive(Debug, Clone, Copy, Default)]
struct Host {
    next_o: f64,
    next_gs: f64,
    next_gr: f64,
    compute: f64,
    overhead: f64,
}

/// A dependency graph in compressed rows: who waits for an operation to start, and to complete.
struct Graph {
    pending: Vec<u32>,
    rank: Vec<u32>,
    /// Dependents of operation i: `on_start[start_row[i]..start_row[i + 1]]`, likewise on_done.
    start_row: Vec<u32>,
    on_start: Vec<u32>,
    done_row: Vec<u32>,
    on_done: Vec<u32>,
}

impl Graph {
    fn new(w: &Workload) -> Graph {
        let n = w.len();
        let starts = w.rank_starts();
        let mut rank = vec![0u32; n];
        for r in 0..w.nranks() as usize {
            rank[starts[r] as usize..starts[r + 1] as usize].fill(r as u32);
        }
        let (dep_start, deps) = w.dep_rows();
        let mut pending = vec![0u32; n];
        let mut start_count = vec![0u32; n + 1];
        let mut done_count = vec![0u32; n + 1];
        let each = |i: usize| {
            let base = starts[rank[i] as usize];
            deps[dep_start[i] as usize..dep_start[i + 1] as usize]
                .iter()
                .map(move |&d| {
                    let (local, kind) = Workload::decode_dep(d);
                    ((base + local) as usize, kind)
                })
        };
        for i in 0..n {
            pending[i] = dep_start[i + 1] - dep_start[i];
            for (on, kind) in each(i) {
                match kind {
                    DepKind::IRequires => start_count[on + 1] += 1,
                    DepKind::Requires => done_count[on + 1] += 1,
                }
            }
        }
        for i in 0..n {
            start_count[i + 1] += start_count[i];
            done_count[i + 1] += done_count[i];
        }
        let (mut fs, mut fd) = (start_count.clone(), done_count.clone());
        let mut on_start = vec![0u32; start_count[n] as usize];
        let mut on_done = vec![0u32; done_count[n] as usize];
        // Dependents in ascending order, as LogGOPSim's schedule generator writes them.
        for i in 0..n {
            for (on, kind) in each(i) {
                match kind {
                    DepKind::IRequires => {
                        on_start[fs[on] as usize] = i as u32;
                        fs[on] += 1;
                    }
                    DepKind::Requires => {
                        on_done[fd[on] as usize] = i as u32;
                        fd[on] += 1;
                    }
                }
            }
        }
        Graph {
            pending,
            rank,
            start_row: start_count,
            on_start,
            done_row: done_count,
            on_done,
        }
    }
}

/// The LogGP parameters of a replay: `base`, and from each size of `by_size` (ascending) on,
/// that size's (see [`super::PredictConfig::loggp_by_size`]).
#[derive(Clone, Copy)]
pub(crate) struct Params<'a> {
    pub base: LogGp,
    pub by_size: &'a [(u64, LogGp)],
}

impl Params<'_> {
    /// The parameters a message of `bytes` takes.
    fn at(&self, bytes: u64) -> LogGp {
        match self.by_size.partition_point(|b| b.0 <= bytes) {
            0 => self.base,
            i => self.by_size[i - 1].1,
        }
    }
}

struct Engine<'a> {
    w: &'a Workload,
    p: Params<'a>,
    eager_max: u64,
    /// Messages to oneself cost these CPU overheads only (see
    /// `PredictConfig::local_self_messages`); None: they go through the network.
    local_self: Option<SelfOverheads>,
    /// [`LoggpReceive::LastByte`]: a message arrives with its last byte and its receive holds
    /// the CPU for o_r + O·(s−1) only.
    last_byte: bool,
    /// Whether a receive waits out the receiving NIC's gap g + G·s after the previous one
    /// (LogGOPSim); false: the receiver takes messages at its CPU's pace.
    receive_gap: bool,
    overlap: Overlap,
    progress: Progress,
    g: Graph,
    hosts: Vec<Host>,
    queue: EventQueue<(Elem, u64)>,
    ts: u64,
    /// Operations freed by the current event, per host, in the order they were freed.
    freed: Vec<u32>,
    /// Per host and line, the blocked elements by entry order.
    ///
    /// LogGOPSim puts an element that finds its resource busy back into the queue at the time
    /// the resource is free; a hundred thousand sends posted at once then retry a hundred
    /// thousand times each (quadratic). A failed retry changes nothing, and every blocked
    /// element of a line is next tried when the line's resource is free, in entry order among
    /// the events of that instant. So a line holds its elements in entry order and has one slot
    /// in the queue, at (the resource's free time, its first element's entry number): the same
    /// elements succeed at the same times in the same order, each costing one queue operation.
    lines: Vec<std::collections::BinaryHeap<std::cmp::Reverse<(u64, Elem)>>>,
    /// Posted receives (operation, source, tag) and unexpected messages (message, source, tag)
    /// per host, in order: LogGOPSim matches the first entry that fits.
    /// Double-ended: the first entry is usually the one taken, and a receiver with 100,000
    /// messages waiting must not shift them all for each.
    posted: Vec<VecDeque<[u32; 3]>>,
    unexpected: Vec<VecDeque<[u32; 3]>>,
    msgs: Vec<Msg>,
    msg_free: Vec<u32>,
    /// A rendezvous send's start (for its span); NaN while not started.
    started_at: Vec<f64>,
    completed: u64,
    messages: u64,
    events: u64,
    timeline: Option<Timeline>,
    /// Per direction (src << 32 | dst), its latest message; kept only when
    /// [`Overlap::duplex_ns`] is above zero.
    latest: std::collections::HashMap<u64, Latest>,
}

/// Where the replay departs from LogGOPSim's rules (see [`super::PredictConfig`]).
pub(crate) struct Rules {
    pub receive: LoggpReceive,
    pub receive_gap: bool,
    pub overlap: Overlap,
    pub progress: Progress,
}

/// Runs the workload through LogGOPSim's rules.
pub(crate) fn run<'a>(
    w: &'a Workload,
    p: Params<'a>,
    eager_max: u64,
    timeline: bool,
    local_self: Option<SelfOverheads>,
    rules: Rules,
) -> Result<SimResult, PredictError> {
    let Rules {
        receive,
        receive_gap,
        overlap,
        progress,
    } = rules;
    let n = w.len();
    let g = Graph::new(w);
    let nranks = w.nranks() as usize;
    let mut e = Engine {
        w,
        p,
        eager_max,
        local_self,
        last_byte: receive == LoggpReceive::LastByte,
        receive_gap,
        overlap,
        progress,
        hosts: vec![Host::default(); nranks],
        queue: EventQueue::new(),
        ts: 0,
        freed: Vec::new(),
        lines: Vec::new(),
        posted: vec![VecDeque::new(); nranks],
        unexpected: vec![VecDeque::new(); nranks],
        msgs: Vec::new(),
        msg_free: Vec::new(),
        started_at: if timeline {
            vec![f64::NAN; n]
        } else {
            Vec::new()
        },
        completed: 0,
        messages: 0,
        events: 0,
        timeline: timeline.then(|| Timeline {
            nranks: w.nranks(),
            ..Timeline::default()
        }),
        latest: std::collections::HashMap::new(),
        g,
    };
    // Every host's free operations, host by host, sends before receives before calcs.
    for r in 0..nranks {
        e.freed.clear();
        e.freed.extend(
            w.rank_ops(r as u32)
                .filter(|&i| e.g.pending[i] == 0)
                .map(|i| i as u32),
        );
        e.enqueue_freed(r as u32);
    }
    e.freed.clear();
    let mut touched: Vec<u32> = Vec::new();
    while let Some((k, (elem, ts))) = e.queue.pop() {
        let t = time_of(k);
        e.events += 1;
        touched.clear();
        match elem {
            Elem::Op(op) => e.op(op, t, ts, &mut touched)?,
            Elem::Msg(m) => e.msg(m, t, ts, &mut touched),
            Elem::RmaDone(op) => e.rma_done(op, t, &mut touched),
            Elem::Line(l) => {
                let std::cmp::Reverse((ts, elem)) = e.lines[l as usize]
                    .pop()
                    .expect("a line in the queue has an element");
                match elem {
                    Elem::Op(op) => e.op(op, t, ts, &mut touched)?,
                    Elem::Msg(m) => e.msg(m, t, ts, &mut touched),
                    Elem::Line(_) | Elem::RmaDone(_) => {
                        unreachable!("lines hold operations and messages")
                    }
                }
                e.requeue_line(l);
            }
        }
        touched.sort_unstable();
        touched.dedup();
        for &h in &touched {
            e.enqueue_freed(h);
        }
        e.freed.clear();
    }
    if e.completed < n as u64 {
        return Err(e.deadlock());
    }
    Ok(e.finish())
}

/// The per-byte count LogGOPS charges: (s − 1), and nothing for an empty message.
fn tail(bytes: u64) -> f64 {
    bytes.saturating_sub(1) as f64
}

impl Engine<'_> {
    fn push(&mut self, t: f64, ts: u64, elem: Elem) {
        self.queue.push(key(t, ts), (elem, ts));
    }

    /// The time line `l`'s resources are next free.
    fn line_free(&self, l: u32) -> f64 {
        let h = &self.hosts[(l / LINES) as usize];
        match l % LINES {
            CALC_LINE => h.next_o,
            SEND_LINE => h.next_o.max(h.next_gs),
            _ => h.next_o.max(h.next_gr),
        }
    }

    /// `elem` (entered with `ts`) found line `l`'s resources busy: it waits in the line.
    fn block(&mut self, l: u32, ts: u64, elem: Elem) {
        if self.lines.len() <= l as usize {
            self.lines
                .resize_with(self.hosts.len() * LINES as usize, Default::default);
        }
        self.lines[l as usize].push(std::cmp::Reverse((ts, elem)));
        self.requeue_line(l);
    }

    /// Puts line `l`'s slot at (its resources' free time, its first element), if it has one.
    fn requeue_line(&mut self, l: u32) {
        let Some(&std::cmp::Reverse((first, _))) = self.lines[l as usize].peek() else {
            return;
        };
        let t = self.line_free(l);
        // Under `Progress::Wait` arrived messages come after every other element of the same
        // instant (sequence numbers are far below 2^63).
        let order = if self.progress == Progress::Wait && l % LINES == MSG_LINE {
            first | 1 << 63
        } else {
            first
        };
        self.queue.set(l, key(t, order), (Elem::Line(l), first));
    }

    fn new_ts(&mut self) -> u64 {
        self.ts += 1;
        self.ts
    }

    /// Inserts host `h`'s operations freed by this event: sends first, then receives, then
    /// calcs (LogGOPSim sorts them by type, stably at these sizes), each at the time its
    /// resources are free, in the order they were freed.
    fn enqueue_freed(&mut self, h: u32) {
        let mut mine: Vec<u32> = self
            .freed
            .iter()
            .copied()
            .filter(|&i| self.g.rank[i as usize] == h)
            .collect();
        mine.sort_by_key(|&op| match self.w.op(op as usize) {
            OpKind::Send { .. } | OpKind::Ssend { .. } | OpKind::Rma { .. } => 0,
            OpKind::Recv { .. } => 1,
            OpKind::Calc { .. } => 2,
        });
        for op in mine {
            let host = self.hosts[h as usize];
            let t = match self.w.op(op as usize) {
                OpKind::Send { .. } | OpKind::Ssend { .. } | OpKind::Rma { .. } => {
                    host.next_o.max(host.next_gs)
                }
                _ => host.next_o,
            };
            let ts = self.new_ts();
            self.push(t, ts, Elem::Op(op));
        }
    }

    fn mark(&mut self, op: u32, done: bool, touched: &mut Vec<u32>) {
        let i = op as usize;
        let (rows, list) = if done {
            (&self.g.done_row, &self.g.on_done)
        } else {
            (&self.g.start_row, &self.g.on_start)
        };
        let (a, b) = (rows[i] as usize, rows[i + 1] as usize);
        for &d in &list[a..b] {
            let d = d as usize;
            self.g.pending[d] -= 1;
            if self.g.pending[d] == 0 {
                self.freed.push(d as u32);
            }
        }
        if b > a {
            touched.push(self.g.rank[i]);
        }
        if done {
            self.completed += 1;
        }
    }

    fn span(
        &mut self,
        rank: u32,
        kind: SpanKind,
        start: f64,
        end: f64,
        peer: Option<u32>,
        bytes: u64,
    ) {
        if let Some(tl) = &mut self.timeline {
            tl.spans.push(Span {
                rank,
                kind,
                start_ns: start,
                end_ns: end,
                peer,
                bytes,
            });
        }
    }

    fn op(&mut self, op: u32, t: f64, ts: u64, touched: &mut Vec<u32>) -> Result<(), PredictError> {
        let h = self.g.rank[op as usize];
        let kind = self.w.op(op as usize);
        match kind {
            OpKind::Calc { ns } => {
                let host = &mut self.hosts[h as usize];
                if host.next_o > t {
                    self.block(h * LINES + CALC_LINE, ts, Elem::Op(op));
                    return Ok(());
                }
                host.next_o = t + ns as f64;
                host.compute += ns as f64;
                self.mark(op, false, touched);
                self.mark(op, true, touched);
                if ns > 0 {
                    self.span(h, SpanKind::Compute, t, t + ns as f64, None, 0);
                }
            }
            OpKind::Send { to, tag, bytes } | OpKind::Ssend { to, tag, bytes } => {
                let sync = matches!(kind, OpKind::Ssend { .. });
                if to >= self.w.nranks() {
                    return Err(PredictError::Config(format!(
                        "rank {h} sends to rank {to}, outside 0..{}",
                        self.w.nranks()
                    )));
                }
                let host = &mut self.hosts[h as usize];
                let free = host.next_o.max(host.next_gs);
                if free > t {
                    self.block(h * LINES + SEND_LINE, ts, Elem::Op(op));
                    return Ok(());
                }
                let p = self.p.at(bytes);
                let local = self.local_self.filter(|_| to == h);
                // The message leaves `depart` after the send starts; the CPU is held for `cpu`.
                let (depart, cpu) = match local {
                    Some(c) => (c.o_s_ns, c.o_s_ns + tail(bytes) * c.O_ns_per_byte),
                    None => {
                        let v = self.overlap;
                        let cpu = p.o_s_ns + tail(bytes) * p.O_ns_per_byte;
                        (
                            (p.o_s_ns - v.overlap_ns).max(0.0),
                            (cpu - v.send_wait_ns).max(0.0),
                        )
                    }
                };
                let local = local.is_some();
                host.next_o = t + cpu;
                if !local {
                    host.next_gs = t + p.g_ns + tail(bytes) * p.G_ns_per_byte;
                }
                host.overhead += cpu;
                self.mark(op, false, touched);
                let m = Msg {
                    src: h,
                    dst: to,
                    bytes,
                    tag,
                    send_op: op,
                    start: t,
                    sync,
                    seq: self.messages,
                };
                if !local && self.overlap.duplex_ns > 0.0 {
                    let l = Latest {
                        taken: f64::INFINITY,
                        seq: self.messages,
                        crossed: false,
                    };
                    self.latest.insert(pair(h, to), l);
                }
                let id = match self.msg_free.pop() {
                    Some(id) => {
                        self.msgs[id as usize] = m;
                        id
                    }
                    None => {
                        self.msgs.push(m);
                        (self.msgs.len() - 1) as u32
                    }
                };
                self.messages += 1;
                let ts = self.new_ts();
                let wire = match (local, self.last_byte) {
                    (true, _) => 0.0,
                    (false, false) => p.L_ns,
                    (false, true) => p.L_ns + tail(bytes) * p.G_ns_per_byte,
                };
                self.push(t + depart + wire, ts, Elem::Msg(id));
                if !m.rendezvous(self.eager_max) {
                    self.mark(op, true, touched);
                    self.span(h, SpanKind::Send, t, t + cpu, Some(to), bytes);
                } else if !self.started_at.is_empty() {
                    self.started_at[op as usize] = t;
                }
            }
            OpKind::Rma { target, out, back } => {
                self.rma(op, h, target, (out, back), t, ts, touched)?
            }
            OpKind::Recv { from, tag, bytes } => {
                self.mark(op, false, touched);
                let hit = take(&mut self.unexpected[h as usize], from, tag);
                match hit {
                    Some([mid, _, _]) => {
                        let m = self.msgs[mid as usize];
                        if bytes > self.eager_max || m.sync {
                            self.rendezvous_done(m, t, touched);
                        }
                        self.mark(op, true, touched);
                        self.msg_free.push(mid);
                        self.span(h, SpanKind::Recv, t, t, Some(m.src), bytes);
                    }
                    None => self.posted[h as usize].push_back([op, from, tag]),
                }
                if !self.started_at.is_empty() {
                    self.started_at[op as usize] = t;
                }
            }
        }
        Ok(())
    }

    /// A one-sided transfer from host `h` started at `t` (when its CPU and sending NIC are
    /// free, as a send): the CPU is held for o_s + (out−1)·O and the NIC for g + (out−1)·G; the
    /// request's last byte is at the target o_s + L + (out−1)·G after the start, where the
    /// target's NIC answers at once (its CPU and NIC are not charged: the data goes to or comes
    /// from memory), and the reply's last byte is back L + (back−1)·G later: then the transfer
    /// is complete. To oneself with local self-messages it costs the CPU overhead only.
    #[allow(clippy::too_many_arguments)]
    fn rma(
        &mut self,
        op: u32,
        h: u32,
        target: u32,
        (out, back): (u64, u64),
        t: f64,
        ts: u64,
        touched: &mut Vec<u32>,
    ) -> Result<(), PredictError> {
        if target >= self.w.nranks() {
            return Err(PredictError::Config(format!(
                "rank {h} transfers one-sided with rank {target}, outside 0..{}",
                self.w.nranks()
            )));
        }
        let p = self.p.at(out.max(back));
        let local = self.local_self.filter(|_| target == h);
        let host = &mut self.hosts[h as usize];
        if host.next_o.max(host.next_gs) > t {
            self.block(h * LINES + SEND_LINE, ts, Elem::Op(op));
            return Ok(());
        }
        let (cpu, done) = match local {
            Some(c) => {
                let cpu = c.o_s_ns + tail(out) * c.O_ns_per_byte;
                (cpu, t + cpu)
            }
            None => {
                host.next_gs = t + p.g_ns + tail(out) * p.G_ns_per_byte;
                let wire = 2.0 * p.L_ns + (tail(out) + tail(back)) * p.G_ns_per_byte;
                (p.o_s_ns + tail(out) * p.O_ns_per_byte, t + p.o_s_ns + wire)
            }
        };
        host.next_o = t + cpu;
        host.overhead += cpu;
        self.mark(op, false, touched);
        let ts = self.new_ts();
        self.push(done, ts, Elem::RmaDone(op));
        if !self.started_at.is_empty() {
            self.started_at[op as usize] = t;
        }
        Ok(())
    }

    /// A one-sided transfer's reply is in at `t`: the operation completes, and what waits for
    /// it cannot start before `t` (operations enter the queue at their host's `next_o`).
    fn rma_done(&mut self, op: u32, t: f64, touched: &mut Vec<u32>) {
        let h = self.g.rank[op as usize];
        let host = &mut self.hosts[h as usize];
        host.next_o = host.next_o.max(t);
        self.mark(op, true, touched);
        touched.push(h);
        if !self.started_at.is_empty() {
            let start = self.started_at[op as usize];
            if let OpKind::Rma { target, out, back } = self.w.op(op as usize) {
                self.span(h, SpanKind::Send, start, t, Some(target), out + back);
            }
        }
    }

    /// A rendezvous send is matched at `t`: it completes, and its host cannot act before `t`.
    fn rendezvous_done(&mut self, m: Msg, t: f64, touched: &mut Vec<u32>) {
        let s = &mut self.hosts[m.src as usize];
        s.next_o = s.next_o.max(t);
        s.next_gs = s.next_gs.max(t);
        self.mark(m.send_op, true, touched);
        touched.push(m.src);
        if !self.started_at.is_empty() {
            let start = self.started_at[m.send_op as usize];
            self.span(m.src, SpanKind::Send, start, t, Some(m.dst), m.bytes);
        }
    }

    fn msg(&mut self, mid: u32, t: f64, ts: u64, touched: &mut Vec<u32>) {
        let m = self.msgs[mid as usize];
        let p = self.p.at(m.bytes);
        let host = &mut self.hosts[m.dst as usize];
        let free = host.next_o.max(host.next_gr);
        if free > t {
            self.block(m.dst * LINES + MSG_LINE, ts, Elem::Msg(mid));
            return;
        }
        let local = self.local_self.filter(|_| m.src == m.dst);
        let cpu = if let Some(c) = local {
            c.o_r_ns + tail(m.bytes) * c.O_ns_per_byte
        } else if self.last_byte {
            p.o_r_ns + tail(m.bytes) * p.O_ns_per_byte
        } else {
            p.o_r_ns + (tail(m.bytes) * p.O_ns_per_byte).max(tail(m.bytes) * p.G_ns_per_byte)
        };
        let cpu = if local.is_none() && self.overlap.duplex_ns > 0.0 {
            if let Some(l) = self.latest.get_mut(&pair(m.src, m.dst)) {
                if l.seq == m.seq {
                    l.taken = t;
                }
            }
            // The receiver's latest message to the sender crossed this one: it was sent before
            // this one is taken in (every send so far was) and taken in after this one was sent.
            // Once per such message: halo's two messages each way are one exchange, and charged
            // on both receives the replay of its TCP stacks came out 8 % above the runs.
            match self.latest.get_mut(&pair(m.dst, m.src)) {
                Some(l) if l.taken > m.start && !l.crossed => {
                    l.crossed = true;
                    cpu + self.overlap.duplex_ns
                }
                _ => cpu,
            }
        } else {
            cpu
        };
        let host = &mut self.hosts[m.dst as usize];
        host.next_o = t + cpu;
        if local.is_none() && self.receive_gap {
            host.next_gr = t + p.g_ns + tail(m.bytes) * p.G_ns_per_byte;
        }
        host.overhead += cpu;
        if let Some(tl) = &mut self.timeline {
            tl.messages.push(Arrow {
                src: m.src,
                dst: m.dst,
                bytes: m.bytes,
                start_ns: m.start,
                end_ns: t,
            });
        }
        match take(&mut self.posted[m.dst as usize], m.src, m.tag) {
            Some([recv, _, _]) => {
                if m.rendezvous(self.eager_max) {
                    self.rendezvous_done(m, t, touched);
                }
                self.mark(recv, true, touched);
                touched.push(m.dst);
                self.msg_free.push(mid);
                if !self.started_at.is_empty() {
                    let start = self.started_at[recv as usize];
                    self.span(m.dst, SpanKind::Recv, start, t + cpu, Some(m.src), m.bytes);
                }
            }
            None => self.unexpected[m.dst as usize].push_back([mid, m.src, m.tag]),
        }
    }

    fn deadlock(&self) -> PredictError {
        let stuck = self.w.len() as u64 - self.completed;
        // What never matched is the cause; what never started only follows from it.
        let first = self
            .posted
            .iter()
            .flatten()
            .map(|k| k[0] as usize)
            .min()
            .or_else(|| {
                self.unexpected
                    .iter()
                    .flatten()
                    .map(|k| self.msgs[k[0] as usize].send_op as usize)
                    .min()
            })
            .or_else(|| (0..self.w.len()).find(|&i| self.g.pending[i] != 0))
            .unwrap_or(0);
        let r = self.g.rank[first];
        let local = first as u32 - self.w.rank_starts()[r as usize];
        let what = super::stuck_op(self.w.op(first));
        PredictError::Deadlock {
            at_us: self.hosts.iter().map(|h| h.next_o).fold(0.0, f64::max) / 1e3,
            stuck,
            rank: r,
            op: local,
            what,
        }
    }

    fn finish(self) -> SimResult {
        let total = self.hosts.iter().map(|h| h.next_o).fold(0.0, f64::max);
        SimResult {
            total_ns: total,
            messages: self.messages,
            events: self.events,
            ranks: self
                .hosts
                .iter()
                .map(|h| (h.next_o, h.compute, h.overhead))
                .collect(),
            links: Vec::new(),
            link_cap: Vec::new(),
            peak_queue_over_active: 0,
            timeline: self.timeline.map(|mut tl| {
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

/// The key of the direction from `src` to `dst`.
fn pair(src: u32, dst: u32) -> u64 {
    u64::from(src) << 32 | u64::from(dst)
}

/// Removes and returns the first entry that matches `from` and `tag`, wildcards on either side
/// (LogGOPSim's list matching).
fn take(list: &mut VecDeque<[u32; 3]>, from: u32, tag: u32) -> Option<[u32; 3]> {
    let i = list.iter().position(|&[_, src, t]| {
        (from == ANY || src == ANY || src == from) && (tag == ANY || t == ANY || t == tag)
    })?;
    list.remove(i)
}
