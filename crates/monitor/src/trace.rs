//! Per-message records and their rendering as a commperf trace that
//! `commperf predict` replays: `monitor` → `predict`, the loop of the user guide's architecture
//! chapter.
//!
//! Each monitored endpoint keeps its records in a buffer allocated once at its configured
//! capacity; when it is full, further records are dropped and counted, so the application is
//! never blocked and never allocates for them. The owner takes the buffer off the hot path
//! ([`crate::Monitored::take_trace`]).
//!
//! A buffer that filled up holds a prefix of that endpoint's messages, and the two ends of a
//! connection fill up at different points. Replaying unmatched halves would deadlock the
//! predictor, so [`write_trace`] cuts every rank's program at its first operation whose partner
//! is missing and says so in a comment. [`write_timeline`] renders the same records as a Chrome
//! trace-event timeline.

use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::fmt::Write as _;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TraceOp {
    Send,
    Recv,
}

/// One call as seen by the monitor, on the global clock.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TraceEvent {
    pub op: TraceOp,
    pub peer: u32,
    pub tag: u32,
    pub bytes: u64,
    pub start_ns: i64,
    pub end_ns: i64,
}

/// A bounded buffer of trace events.
#[derive(Debug, Default)]
pub struct TraceRing {
    buf: Vec<TraceEvent>,
    cap: usize,
    dropped: u64,
}

impl TraceRing {
    pub fn new(cap: usize) -> Self {
        TraceRing {
            buf: Vec::with_capacity(cap),
            cap,
            dropped: 0,
        }
    }

    #[inline(always)]
    pub fn enabled(&self) -> bool {
        self.cap > 0
    }

    /// Keeps `e` if there is room (never reallocates), else counts it as dropped.
    #[inline]
    pub fn push(&mut self, e: TraceEvent) {
        if self.buf.len() < self.cap {
            self.buf.push(e);
        } else {
            self.dropped += 1;
        }
    }

    /// The records so far and the drop count; the buffer starts afresh at the same capacity.
    pub fn take(&mut self) -> (Vec<TraceEvent>, u64) {
        let v = std::mem::replace(&mut self.buf, Vec::with_capacity(self.cap));
        (v, std::mem::take(&mut self.dropped))
    }
}

/// Gaps between calls shorter than this are not written as compute (timer noise).
const MIN_COMPUTE_NS: i64 = 50;

/// Renders each rank's events (in its program order) as commperf's own trace format. `dropped`
/// is reported in the header comment. Returns the text and the operations cut for lack of a
/// partner.
pub fn write_trace(ranks: &[(u32, Vec<TraceEvent>)], dropped: u64) -> (String, usize) {
    let nranks = ranks.iter().map(|(r, _)| r + 1).max().unwrap_or(1);
    // Per rank, how many of its events to keep: cut at the first op without a partner, until
    // nothing changes (a cut on one side can orphan an op on the other).
    let mut keep: Vec<usize> = ranks.iter().map(|(_, e)| e.len()).collect();
    loop {
        let mut sends: HashMap<(u32, u32), usize> = HashMap::new();
        let mut recvs: HashMap<(u32, u32), usize> = HashMap::new();
        for ((r, ev), &k) in ranks.iter().zip(&keep) {
            for e in &ev[..k] {
                match e.op {
                    TraceOp::Send => *sends.entry((*r, e.peer)).or_default() += 1,
                    TraceOp::Recv => *recvs.entry((e.peer, *r)).or_default() += 1,
                }
            }
        }
        let mut changed = false;
        for ((r, ev), k) in ranks.iter().zip(keep.iter_mut()) {
            let mut seen: HashMap<(u32, u32, TraceOp), usize> = HashMap::new();
            for (i, e) in ev[..*k].iter().enumerate() {
                let (pair, other) = match e.op {
                    TraceOp::Send => ((*r, e.peer), &recvs),
                    TraceOp::Recv => ((e.peer, *r), &sends),
                };
                let n = seen.entry((pair.0, pair.1, e.op)).or_default();
                *n += 1;
                if *n > other.get(&pair).copied().unwrap_or(0) {
                    *k = i;
                    changed = true;
                    break;
                }
            }
        }
        if !changed {
            break;
        }
    }
    let cut: usize = ranks.iter().zip(&keep).map(|((_, e), k)| e.len() - k).sum();
    let mut s = String::new();
    let _ = writeln!(
        s,
        "# commperf monitor trace: calls on the global clock, gaps as compute"
    );
    if dropped > 0 || cut > 0 {
        let _ = writeln!(
            s,
            "# incomplete: {dropped} records dropped (buffer full), {cut} calls cut for lack of a partner"
        );
    }
    let _ = writeln!(s, "ranks {nranks}");
    for ((r, ev), &k) in ranks.iter().zip(&keep) {
        let _ = writeln!(s, "rank {r}");
        let mut prev_end: Option<i64> = None;
        for e in &ev[..k] {
            if let Some(p) = prev_end {
                if e.start_ns - p >= MIN_COMPUTE_NS {
                    let _ = writeln!(s, "compute {}ns", e.start_ns - p);
                }
            }
            let op = match e.op {
                TraceOp::Send => "send",
                TraceOp::Recv => "recv",
            };
            // Tags of 2^31 and above are the trace format's reserved collective space.
            let _ = writeln!(
                s,
                "{op} {} {}B tag {}",
                e.peer,
                e.bytes,
                e.tag & 0x7fff_ffff
            );
            prev_end = Some(e.end_ns);
        }
    }
    (s, cut)
}

/// Renders each rank's events as a Chrome trace-event timeline (Perfetto, `chrome://tracing`):
/// one track per rank, a complete event per call on the global clock (so the tracks line up,
/// within the clock's bound), and a flow arrow per message from its send to its receive. On one
/// connection messages are matched in order (the k-th send from r to p is the k-th receive at p
/// from r: the transports are ordered); a half whose partner was dropped gets no arrow.
pub fn write_timeline(ranks: &[(u32, Vec<TraceEvent>)], title: &str) -> String {
    use commperf_report::timeline::{Arg, Timeline};
    let t0 = ranks
        .iter()
        .flat_map(|(_, ev)| ev.iter().map(|e| e.start_ns))
        .min()
        .unwrap_or(0);
    let us = |ns: i64| (ns - t0) as f64 / 1e3;
    let mut tl = Timeline::new(title, ranks.iter().map(|(r, _)| *r));
    // The receives of each (sender, receiver) pair in order, to pair with the sends.
    let mut recvs: HashMap<(u32, u32), Vec<&TraceEvent>> = HashMap::new();
    for (r, ev) in ranks {
        for e in ev {
            let op = match e.op {
                TraceOp::Send => "send",
                TraceOp::Recv => {
                    recvs.entry((e.peer, *r)).or_default().push(e);
                    "recv"
                }
            };
            tl.span(
                *r,
                op,
                op,
                us(e.start_ns),
                (e.end_ns - e.start_ns) as f64 / 1e3,
                &[
                    ("peer", Arg::U(u64::from(e.peer))),
                    ("tag", Arg::U(u64::from(e.tag))),
                    ("bytes", Arg::U(e.bytes)),
                ],
            );
        }
    }
    for (r, ev) in ranks {
        let mut k: HashMap<u32, usize> = HashMap::new();
        for e in ev.iter().filter(|e| e.op == TraceOp::Send) {
            let n = k.entry(e.peer).or_default();
            let Some(rv) = recvs.get(&(*r, e.peer)).and_then(|v| v.get(*n)) else {
                continue;
            };
            *n += 1;
            // The arrow ends inside the receive, not before the send started when the clocks
            // allow it.
            let end = e.start_ns.clamp(rv.start_ns, rv.end_ns.max(rv.start_ns));
            tl.flow(
                (*r, us(e.start_ns)),
                (e.peer, us(end)),
                &[("bytes", Arg::U(e.bytes))],
            );
        }
    }
    tl.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(op: TraceOp, peer: u32, start: i64, end: i64) -> TraceEvent {
        TraceEvent {
            op,
            peer,
            tag: 1,
            bytes: 64,
            start_ns: start,
            end_ns: end,
        }
    }

    /// Arrows pair the k-th send with the k-th receive of the same pair, end inside the
    /// receive, and a send whose receive was dropped gets none.
    #[test]
    fn timeline_pairs_messages_in_order() {
        let ranks = [
            (
                0,
                vec![
                    ev(TraceOp::Send, 1, 1000, 1100),
                    ev(TraceOp::Send, 1, 2000, 2100),
                ],
            ),
            (1, vec![ev(TraceOp::Recv, 0, 900, 1500)]),
        ];
        let v: serde_json::Value = serde_json::from_str(&write_timeline(&ranks, "t")).unwrap();
        let ev = v["traceEvents"].as_array().unwrap();
        let of = |ph: &str| ev.iter().filter(|e| e["ph"] == ph).collect::<Vec<_>>();
        assert_eq!(of("X").len(), 3);
        let (s, f) = (of("s"), of("f"));
        assert_eq!((s.len(), f.len()), (1, 1));
        // Times in µs from the earliest start (900 ns).
        assert_eq!(s[0]["ts"], 0.1);
        assert_eq!(s[0]["tid"], 0);
        assert_eq!(f[0]["tid"], 1);
        assert_eq!(f[0]["ts"], 0.1);
    }

    #[test]
    fn ring_drops_and_counts_without_growing() {
        let mut r = TraceRing::new(3);
        for i in 0..10 {
            r.push(ev(TraceOp::Send, 1, i, i));
        }
        let (v, d) = r.take();
        assert_eq!((v.len(), d), (3, 7));
        assert_eq!(v.capacity(), 3);
    }

    #[test]
    fn unmatched_tails_are_cut_and_gaps_become_compute() {
        use TraceOp::*;
        // Rank 0 sent 3 pings and got 2 pongs; rank 1's buffer held only 2 receives and 1 send.
        let r0 = vec![
            ev(Send, 1, 0, 10),
            ev(Recv, 1, 10, 500),
            ev(Send, 1, 1500, 1510),
            ev(Recv, 1, 1510, 2000),
            ev(Send, 1, 3000, 3010),
        ];
        let r1 = vec![
            ev(Recv, 0, 0, 200),
            ev(Send, 0, 300, 310),
            ev(Recv, 0, 310, 1700),
        ];
        let (t, cut) = write_trace(&[(0, r0), (1, r1)], 4);
        // Rank 1 kept r,s,r; rank 0 keeps s,r,s (its 2nd recv has no partner send).
        assert_eq!(cut, 2, "{t}");
        assert!(t.contains("4 records dropped"), "{t}");
        let rank0: Vec<&str> = t
            .lines()
            .skip_while(|l| *l != "rank 0")
            .skip(1)
            .take_while(|l| !l.starts_with("rank"))
            .collect();
        assert_eq!(
            rank0,
            [
                "send 1 64B tag 1",
                "recv 1 64B tag 1",
                "compute 1000ns",
                "send 1 64B tag 1"
            ]
        );
    }
}
