//! A monitored MPI run as a trace that `commperf predict` replays (commperf's own format, user
//! guide: docs/src/reference/traces.md) and as a Chrome trace-event timeline (Perfetto, `chrome://tracing`).
//!
//! Per rank, in call order (calls sorted by the time they were entered, on the rank's clock):
//!
//! - the gaps between MPI calls become `compute` (the rank's own clock: no global clock needed
//!   for a difference on one rank), from the end of MPI_Init (after the interposer's clock sync)
//!   to the first call and between calls; not after the last call (see below);
//! - blocking sends and receives become `send`/`recv`, nonblocking ones `isend`/`irecv` named
//!   after their record and joined by a `wait`/`waitall` at the call that completed them (one
//!   Waitall/Waitsome/Testall completing several requests is one `waitall`); MPI_Sendrecv becomes
//!   `isend` + `irecv` + `waitall`, since a blocking send then a blocking receive would deadlock
//!   an exchange whose messages exceed predict's eager limit;
//! - receives name the source that actually sent (MPI_ANY_SOURCE resolved from the status), so
//!   the replay matches what the run matched;
//! - peers are world ranks. Point-to-point on other communicators keeps its world peers; its
//!   (communicator, tag) pairs get tags above every MPI_COMM_WORLD tag, so streams MPI kept apart
//!   by communicator stay apart;
//! - collectives on MPI_COMM_WORLD become the own format's collectives (so predict expands them
//!   with its algorithms). The format's collectives are world-wide, so those on other
//!   communicators are left out and counted, as are MPI_Scan/Exscan (no such operation);
//! - a point-to-point record whose partner was not recorded (dropped, cut short, monitoring
//!   stopped on one side) is left out and counted: replaying half a message would deadlock;
//! - the format requires every rank to call the same collectives in the same order; when the
//!   ranks' records disagree (a dropped record, a rank cut short or missing), only the common
//!   prefix is kept, and the rest is counted;
//! - while monitoring was stopped (MPI_Pcontrol(0) .. (1)) the calls were not recorded, so that
//!   time is neither compute nor communication: it is left out and reported.

use crate::read::{pair_events, Call, Event, Run};
use commperf_report::timeline::Arg;
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt::Write as _;

/// What a conversion wrote and what it left out.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct TraceStats {
    pub ranks: u32,
    /// Matched point-to-point messages written (a send on one rank, its receive on another).
    pub messages: u64,
    /// Of them, on communicators other than MPI_COMM_WORLD.
    pub subcomm_messages: u64,
    /// Collective calls written per rank (every rank writes the same ones).
    pub collectives: u64,
    /// Point-to-point records left out because their partner was not recorded.
    pub unmatched_left_out: u64,
    /// Collective calls (summed over ranks) on communicators other than MPI_COMM_WORLD.
    pub subcomm_collectives_left_out: u64,
    /// Collective calls (summed over ranks) the own format has no operation for (Scan, Exscan,
    /// nonblocking, persistent and neighbourhood collectives).
    pub unsupported_left_out: u64,
    /// One-sided transfers (summed over ranks): not replayed; their time stays in the calls.
    pub one_sided_left_out: u64,
    /// Collective calls (summed over ranks) not recorded alike on every rank.
    pub misaligned_collectives_left_out: u64,
    /// Events the interposer dropped (full buffers): they are in none of the counts above.
    pub drops: u64,
    /// World ranks that left no file: they have no block in the trace.
    pub missing_ranks: Vec<u32>,
    /// Per world rank: compute written (ns).
    pub compute_ns: Vec<u64>,
    /// Per world rank: MPI_Init to MPI_Finalize (ns), or to the last record when cut short.
    pub run_ns: Vec<u64>,
    /// Time with monitoring stopped (summed over ranks, ns): not replayed.
    pub stopped_ns: u64,
}

impl TraceStats {
    /// Every call left out of the trace.
    pub fn left_out(&self) -> u64 {
        self.unmatched_left_out
            + self.subcomm_collectives_left_out
            + self.unsupported_left_out
            + self.misaligned_collectives_left_out
            + self.one_sided_left_out
    }

    /// One line for the terminal: what was written, and what was left out and why.
    pub fn describe(&self) -> String {
        let mut s = format!(
            "trace: {} ranks, {} messages ({} on sub-communicators), {} collectives per rank",
            self.ranks, self.messages, self.subcomm_messages, self.collectives
        );
        let mut why = Vec::new();
        if self.unmatched_left_out > 0 {
            why.push(format!(
                "{} point-to-point records without their partner",
                self.unmatched_left_out
            ));
        }
        if self.subcomm_collectives_left_out > 0 {
            why.push(format!(
                "{} collective calls on sub-communicators",
                self.subcomm_collectives_left_out
            ));
        }
        if self.unsupported_left_out > 0 {
            why.push(format!(
                "{} collective calls the trace format has no operation for",
                self.unsupported_left_out
            ));
        }
        if self.one_sided_left_out > 0 {
            why.push(format!(
                "{} one-sided transfers (MPI_Put/Get/Accumulate…)",
                self.one_sided_left_out
            ));
        }
        if self.misaligned_collectives_left_out > 0 {
            why.push(format!(
                "{} collective calls not recorded alike on every rank",
                self.misaligned_collectives_left_out
            ));
        }
        if why.is_empty() {
            s += "; nothing left out";
        } else {
            let _ = write!(
                s,
                "; left out {} calls: {}",
                self.left_out(),
                why.join(", ")
            );
        }
        if self.drops > 0 {
            let _ = write!(s, "; {} events dropped while recording", self.drops);
        }
        if !self.missing_ranks.is_empty() {
            let _ = write!(s, "; rank(s) {:?} left no file", self.missing_ranks);
        }
        if self.stopped_ns > 0 {
            let _ = write!(
                s,
                "; {:.3} ms with monitoring stopped not replayed",
                self.stopped_ns as f64 / 1e6
            );
        }
        s
    }
}

/// A run converted: the own-format trace, the Chrome timeline, and what was left out.
#[derive(Debug, Clone)]
pub struct TraceOutput {
    pub text: String,
    pub chrome: String,
    pub stats: TraceStats,
}

/// One MPI call on one rank, as the trace sees it.
#[derive(Debug, Clone)]
enum Op {
    /// MPI_Send/Ssend/Bsend/Rsend/Recv: one record.
    Blocking(usize),
    /// MPI_Isend…/Irecv posting: one record, completed by a later `Complete`.
    Post(usize),
    /// The Wait/Test call that completed these nonblocking records.
    Complete(Vec<usize>),
    /// MPI_Sendrecv(_replace): its send and receive halves.
    Sendrecv(Vec<usize>),
    Collective(usize),
    /// MPI_Pcontrol(level).
    Pcontrol(i32),
    /// Probes: MPI time, no operation.
    Other(usize),
}

#[derive(Debug, Clone)]
struct CallRec {
    start: u64,
    end: u64,
    op: Op,
}

/// A rank's records as calls, in the order they were entered.
fn calls_of(events: &[Event]) -> Vec<CallRec> {
    let mut out = Vec::new();
    // Records completed by one call share its thread and times.
    let mut completions: BTreeMap<(u32, u64, u64), Vec<usize>> = BTreeMap::new();
    let mut sendrecvs: BTreeMap<(u32, u64, u64), Vec<usize>> = BTreeMap::new();
    for (i, e) in events.iter().enumerate() {
        let (start, end) = (e.post_enter, e.post_exit);
        let op = match e.call {
            Call::Pcontrol => Op::Pcontrol(e.tag),
            c if c.is_probe() || c.is_rma_sync() => Op::Other(i),
            Call::SendrecvSend | Call::SendrecvRecv => {
                sendrecvs.entry((e.thread, start, end)).or_default().push(i);
                continue;
            }
            c if c.is_nonblocking() && !c.is_collective() => {
                completions
                    .entry((e.thread, e.done_enter, e.done_exit))
                    .or_default()
                    .push(i);
                Op::Post(i)
            }
            c if c.is_collective() => Op::Collective(i),
            _ => Op::Blocking(i),
        };
        out.push(CallRec { start, end, op });
    }
    for ((_, start, end), v) in completions {
        out.push(CallRec {
            start,
            end,
            op: Op::Complete(v),
        });
    }
    for ((_, start, end), v) in sendrecvs {
        out.push(CallRec {
            start,
            end,
            op: Op::Sendrecv(v),
        });
    }
    // A completion never starts before its post; at equal times the post comes first.
    out.sort_by_key(|c| (c.start, matches!(c.op, Op::Complete(_)), c.end));
    out
}

/// The own format's collective for a call on MPI_COMM_WORLD of `n` ranks: (operation, root,
/// size the format means for it), or None when the format has none.
fn collective_of(e: &Event, n: u64) -> Option<(&'static str, Option<u32>, u64)> {
    let root = (e.peer >= 0).then_some(e.peer as u32);
    let n = n.max(1);
    // The interposer records this rank's contribution; the format wants, for alltoall, the
    // bytes per pair and for reducescatter one rank's block (docs/src/reference/traces.md, "Meaning").
    Some(match e.call {
        Call::Barrier => ("barrier", None, 0),
        Call::Bcast => ("bcast", root, e.bytes),
        Call::Reduce => ("reduce", root, e.bytes),
        Call::Allreduce => ("allreduce", None, e.bytes),
        Call::Gather | Call::Gatherv => ("gather", root, e.bytes),
        Call::Scatter | Call::Scatterv => ("scatter", root, e.bytes),
        Call::Allgather | Call::Allgatherv => ("allgather", None, e.bytes),
        Call::Alltoall | Call::Alltoallv => ("alltoall", None, e.bytes / n),
        Call::ReduceScatter | Call::ReduceScatterBlock => ("reducescatter", None, e.bytes / n),
        _ => return None,
    })
}

/// Converts a run. Never fails: what cannot be replayed is left out and counted in the stats.
pub fn to_trace(run: &Run) -> TraceOutput {
    let n = run.ranks.iter().map(|r| r.header.size).max().unwrap_or(0);
    let mut st = TraceStats {
        ranks: n,
        drops: run.ranks.iter().map(|r| r.drops).sum(),
        missing_ranks: run.missing_ranks(),
        compute_ns: vec![0; n as usize],
        run_ns: vec![0; n as usize],
        ..TraceStats::default()
    };

    // Point-to-point: the matched records, with the partner and the tag the trace uses.
    let pairing = pair_events(run);
    let max_world_tag = pairing
        .pairs
        .iter()
        .filter(|p| p.stream.3 == 0)
        .map(|p| p.stream.2)
        .max()
        .unwrap_or(-1);
    let sub_streams: BTreeSet<(u32, i32)> = pairing
        .pairs
        .iter()
        .filter(|p| p.stream.3 != 0)
        .map(|p| (p.stream.3, p.stream.2))
        .collect();
    let sub_tag: HashMap<(u32, i32), i64> = sub_streams
        .iter()
        .enumerate()
        .map(|(i, &k)| (k, i64::from(max_world_tag) + 1 + i as i64))
        .collect();
    // (rank, event index) -> (partner, tag, bytes)
    let mut matched: HashMap<(u32, usize), (u32, i64, u64)> = HashMap::new();
    for p in &pairing.pairs {
        let (src, dst, tag, comm) = p.stream;
        let t = if comm == 0 {
            i64::from(tag)
        } else {
            st.subcomm_messages += 1;
            sub_tag[&(comm, tag)]
        };
        // Both sides carry the send's size: the format's receive takes what the send gives.
        let bytes = run.rank(src).map_or(0, |r| r.events[p.send].bytes);
        matched.insert((src, p.send), (dst, t, bytes));
        matched.insert((dst, p.recv), (src, t, bytes));
    }
    st.messages = pairing.pairs.len() as u64;
    st.one_sided_left_out = run
        .ranks
        .iter()
        .flat_map(|r| &r.events)
        .filter(|e| e.call.is_rma())
        .count() as u64;
    for rd in &run.ranks {
        let me = rd.header.rank;
        st.unmatched_left_out += rd
            .events
            .iter()
            .enumerate()
            .filter(|(i, e)| {
                (e.call.is_send() || e.call.is_recv())
                    && e.peer >= 0
                    && !matched.contains_key(&(me, *i))
            })
            .count() as u64;
    }

    // Collectives: per rank, the world ones in call order; keep the prefix all ranks agree on.
    let mut seqs: Vec<Vec<usize>> = Vec::new();
    for rd in &run.ranks {
        let mut idx: Vec<usize> = Vec::new();
        for (i, e) in rd.events.iter().enumerate() {
            if !e.call.is_collective() {
                continue;
            }
            if e.comm != 0 {
                st.subcomm_collectives_left_out += 1;
            } else if collective_of(e, u64::from(n)).is_none() {
                st.unsupported_left_out += 1;
            } else {
                idx.push(i);
            }
        }
        idx.sort_by_key(|&i| rd.events[i].post_enter);
        seqs.push(idx);
    }
    let mut kept_coll: HashMap<(u32, usize), String> = HashMap::new();
    let common = if st.missing_ranks.is_empty() && !run.ranks.is_empty() {
        let key = |r: usize, j: usize| {
            let e = &run.ranks[r].events[seqs[r][j]];
            collective_of(e, u64::from(n)).map(|(op, root, _)| (op, root))
        };
        let shortest = seqs.iter().map(Vec::len).min().unwrap_or(0);
        (0..shortest)
            .take_while(|&j| (1..run.ranks.len()).all(|r| key(r, j) == key(0, j)))
            .count()
    } else {
        0
    };
    // j walks a column across the ranks' sequences, which no single iterator gives.
    #[allow(clippy::needless_range_loop)]
    for j in 0..common {
        let per: Vec<(&'static str, Option<u32>, u64)> = run
            .ranks
            .iter()
            .enumerate()
            .filter_map(|(r, rd)| collective_of(&rd.events[seqs[r][j]], u64::from(n)))
            .collect();
        let (op, root, _) = per[0];
        // The v-forms give each rank its own size; the format has one size per call, so the
        // mean keeps the call's total volume.
        let size = per.iter().map(|p| p.2).sum::<u64>() / per.len() as u64;
        let text = match root {
            Some(r) => format!("{op} root {r} {size}B"),
            None if op == "barrier" => op.to_string(),
            None => format!("{op} {size}B"),
        };
        for (r, rd) in run.ranks.iter().enumerate() {
            kept_coll.insert((rd.header.rank, seqs[r][j]), text.clone());
        }
    }
    st.collectives = common as u64;
    st.misaligned_collectives_left_out = seqs.iter().map(|s| (s.len() - common) as u64).sum();

    // The trace, rank by rank; the timeline beside it on the global clock.
    let mut text = format!("ranks {n}\n");
    let t0 = run
        .ranks
        .iter()
        .map(|r| r.to_global(r.header.start_ns))
        .fold(f64::INFINITY, f64::min);
    let mut tl = Timeline::new(n, t0);
    for rd in &run.ranks {
        let me = rd.header.rank;
        let calls = calls_of(&rd.events);
        let _ = writeln!(text, "\nrank {me}");
        // The header's start is taken at MPI_Init's return, before the interposer's clock sync
        // with rank 0, which waits for the slowest rank to start: the program resumes after it.
        let begin = rd
            .clocks
            .iter()
            .find(|c| c.phase == 0)
            .map_or(rd.header.start_ns, |c| c.local_ns.max(rd.header.start_ns));
        let start = calls.first().map_or(begin, |c| c.start.min(begin));
        let mut cursor = start;
        // A run started with monitoring off (`--start-disabled`, which the rank files do not
        // record) has only MPI_Pcontrol records before its first MPI_Pcontrol(1): what came
        // before that is unknown, not compute. A rank whose first record is MPI_Pcontrol is
        // taken as such; when it was not, the time lost is reported as stopped.
        let mut stopped_at: Option<u64> = match calls.first().map(|c| &c.op) {
            Some(Op::Pcontrol(_)) => Some(start),
            _ => None,
        };
        let mut compute = 0u64;
        for c in &calls {
            if c.start > cursor && stopped_at.is_none() {
                let gap = c.start - cursor;
                compute += gap;
                let _ = writeln!(text, "  compute {gap}ns");
            }
            cursor = cursor.max(c.end);
            let send_line = |i: usize, name: Option<&str>| -> Option<String> {
                let &(peer, tag, bytes) = matched.get(&(me, i))?;
                let e = &rd.events[i];
                let verb = match (e.call.is_send(), name.is_some()) {
                    (true, false) => "send",
                    (false, false) => "recv",
                    (true, true) => "isend",
                    (false, true) => "irecv",
                };
                let mut l = format!("  {verb} {peer} {bytes}B tag {tag}");
                if let Some(nm) = name {
                    let _ = write!(l, " as {nm}");
                }
                Some(l)
            };
            let req = |i: usize| format!("q{i}");
            let span_name: &str;
            let mut replayed = false;
            match &c.op {
                Op::Blocking(i) => {
                    span_name = rd.events[*i].call.name();
                    if let Some(l) = send_line(*i, None) {
                        let _ = writeln!(text, "{l}");
                        replayed = true;
                    }
                }
                Op::Post(i) => {
                    span_name = rd.events[*i].call.name();
                    if let Some(l) = send_line(*i, Some(&req(*i))) {
                        let _ = writeln!(text, "{l}");
                        replayed = true;
                    }
                }
                Op::Complete(v) => {
                    span_name = "MPI_Wait/Test";
                    let names: Vec<String> = v
                        .iter()
                        .filter(|i| matched.contains_key(&(me, **i)))
                        .map(|i| req(*i))
                        .collect();
                    match names.len() {
                        0 => {}
                        1 => {
                            let _ = writeln!(text, "  wait {}", names[0]);
                        }
                        _ => {
                            let _ = writeln!(text, "  waitall {}", names.join(" "));
                        }
                    }
                    replayed = !names.is_empty();
                }
                Op::Sendrecv(v) => {
                    span_name = "MPI_Sendrecv";
                    let mut names = Vec::new();
                    for &i in v {
                        if let Some(l) = send_line(i, Some(&req(i))) {
                            let _ = writeln!(text, "{l}");
                            names.push(req(i));
                        }
                    }
                    if !names.is_empty() {
                        let _ = writeln!(text, "  waitall {}", names.join(" "));
                        replayed = true;
                    }
                }
                Op::Collective(i) => {
                    span_name = rd.events[*i].call.name();
                    if let Some(l) = kept_coll.get(&(me, *i)) {
                        let _ = writeln!(text, "  {l}");
                        replayed = true;
                    }
                }
                Op::Pcontrol(level) => {
                    span_name = "MPI_Pcontrol";
                    if *level == 0 {
                        stopped_at.get_or_insert(c.start);
                    } else if let Some(t) = stopped_at.take() {
                        st.stopped_ns += c.start.saturating_sub(t);
                    }
                }
                Op::Other(i) => span_name = rd.events[*i].call.name(),
            }
            tl.span(rd, c, span_name, replayed);
        }
        // No compute after the last call: MPI_Finalize's moment is not recorded apart from the
        // clock sync it starts with, which waits for rank 0 to reach it, so the tail would
        // count other ranks' lateness as this rank's compute.
        let end = rd.footer.map_or(cursor, |f| f.end_ns.max(cursor));
        if let Some(t) = stopped_at {
            st.stopped_ns += cursor.saturating_sub(t);
        }
        if let Some(slot) = st.compute_ns.get_mut(me as usize) {
            *slot = compute;
            st.run_ns[me as usize] = end - rd.header.start_ns.min(start);
        }
    }
    for p in &pairing.pairs {
        let (src, dst, _, _) = p.stream;
        if let (Some(s), Some(r)) = (run.rank(src), run.rank(dst)) {
            tl.flow(s, &s.events[p.send], r, &r.events[p.recv]);
        }
    }
    // The header is written last, so it states what was left out, stopped time included.
    let text = format!(
        "# commperf trace of a monitored MPI run ({}), written by commperf monitor\n# {}\n{text}",
        run.dir.display(),
        st.describe()
    );
    TraceOutput {
        text,
        chrome: tl.finish(),
        stats: st,
    }
}

/// The Chrome trace-event timeline: one track per rank, a complete event per MPI call (on rank
/// 0's clock, so that tracks line up), a flow arrow per matched message from the send call to
/// the call that completed its receive. The format is `commperf_report::timeline`'s, shared with
/// the transports' timelines.
struct Timeline {
    t0: f64,
    tl: commperf_report::timeline::Timeline,
}

impl Timeline {
    fn new(n: u32, t0: f64) -> Timeline {
        let t0 = if t0.is_finite() { t0 } else { 0.0 };
        Timeline {
            t0,
            tl: commperf_report::timeline::Timeline::new("commperf monitor: MPI run", 0..n),
        }
    }

    /// µs since the timeline's start on the global clock.
    fn at(&self, rd: &crate::read::RankData, t: u64) -> f64 {
        (rd.to_global(t) - self.t0).max(0.0) / 1e3
    }

    fn span(&mut self, rd: &crate::read::RankData, c: &CallRec, name: &str, replayed: bool) {
        let (a, b) = (self.at(rd, c.start), self.at(rd, c.end));
        self.tl.span(
            rd.header.rank,
            name,
            "mpi",
            a,
            b - a,
            &[("replayed", Arg::Bool(replayed))],
        );
    }

    fn flow(
        &mut self,
        sr: &crate::read::RankData,
        se: &Event,
        rr: &crate::read::RankData,
        re: &Event,
    ) {
        let s = self.at(sr, se.post_enter);
        // The arrow ends inside the call that completed the receive, and not before the send
        // started when the clocks allow it.
        let (ra, rb) = (self.at(rr, re.done_enter), self.at(rr, re.done_exit));
        let f = s.clamp(ra, rb.max(ra));
        self.tl.flow(
            (sr.header.rank, s),
            (rr.header.rank, f),
            &[
                ("bytes", Arg::U(se.bytes)),
                ("tag", Arg::I(i64::from(se.tag))),
                ("dst", Arg::U(u64::from(rr.header.rank))),
            ],
        );
    }

    fn finish(self) -> String {
        self.tl.finish()
    }
}
