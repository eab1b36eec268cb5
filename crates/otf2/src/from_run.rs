//! A monitored MPI run as an OTF2 archive ([`Archive`]), recording what `commperf_pmpi::to_trace`
//! replays, so that reading it back ([`crate::to_own`]) gives predict the same workload:
//!
//! - one location per rank (id = world rank), in a process location group on its host's system
//!   tree node; one region per MPI call name (paradigm MPI); MPI_COMM_WORLD over every rank.
//!   The calls of all a rank's threads go to its one location in the order they were entered
//!   (as the own trace replays them), so under MPI_THREAD_MULTIPLE their regions may overlap;
//! - timestamps are each rank's own clock in ns (timer resolution 10⁹), with two ClockOffset
//!   definitions per rank (the offsets to rank 0's clock measured at MPI_Init and MPI_Finalize),
//!   as Score-P writes them: tools that apply offsets (Vampir, Scalasca, libotf2's reader by
//!   default) see rank 0's clock, moved linearly between the two like
//!   `RankData::to_global`, and durations on one rank stay exactly the rank's own (what the own
//!   trace's `compute` is);
//! - every call is an Enter/Leave of its region (the Wait/Test family, whose records do not say
//!   which call completed them, is `MPI_Wait/Test`); MPI_Init is entered at the rank's start
//!   and left where the own trace starts counting; MPI_Finalize is entered when the last call
//!   returned;
//! - inside the calls, the matched point-to-point records as MpiSend/MpiRecv (blocking),
//!   MpiIsend … MpiIsendComplete and MpiIrecvRequest … MpiIrecv (nonblocking, request id = the
//!   record's index), peers as world ranks on MPI_COMM_WORLD; messages on other communicators
//!   carry the tag the own trace gives them (above every MPI_COMM_WORLD tag), since the run
//!   does not record those communicators' groups;
//! - collectives on MPI_COMM_WORLD that the own trace replays as MpiCollectiveBegin/End with the
//!   OTF2 operation, root, and each rank's bytes sent and received ([`sizes`]);
//! - MPI_Pcontrol(0)/(1) as MeasurementOnOff.
//!
//! What the own trace leaves out (records without their partner, collectives on other
//! communicators, MPI_Scan/Exscan, collectives not recorded alike on every rank) is in the
//! archive as the call's region only, with no communication record.
//!
//! The walk over the calls mirrors `commperf_pmpi`'s trace.rs (its `calls_of` and
//! `collective_of` are private there); the round-trip tests compare the two workloads, so a
//! change on one side that the other misses fails them.

use crate::model::{op, role, Archive, ClockOffset, Comm, Location, Rec, Region};
use commperf_pmpi::{pair_events, Call, Event, Run};
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// What the writer wrote.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WriteStats {
    pub ranks: u32,
    pub events: u64,
    pub messages: u64,
    /// Collective calls written with MpiCollectiveBegin/End, per rank.
    pub collectives: u64,
}

#[derive(Debug, Clone)]
enum Op {
    Blocking(usize),
    Post(usize),
    Complete(Vec<usize>),
    Sendrecv(Vec<usize>),
    Collective(usize),
    Pcontrol(i32),
    Other(usize),
}

#[derive(Debug, Clone)]
struct CallRec {
    start: u64,
    end: u64,
    op: Op,
}

fn is_nonblocking(c: Call) -> bool {
    matches!(
        c,
        Call::Isend
            | Call::Issend
            | Call::Ibsend
            | Call::Irsend
            | Call::Irecv
            | Call::StartSend
            | Call::StartRecv
    )
}

/// A rank's records as calls in the order they were entered (trace.rs's `calls_of`).
fn calls_of(events: &[Event]) -> Vec<CallRec> {
    let mut out = Vec::new();
    let mut completions: BTreeMap<(u32, u64, u64), Vec<usize>> = BTreeMap::new();
    let mut sendrecvs: BTreeMap<(u32, u64, u64), Vec<usize>> = BTreeMap::new();
    for (i, e) in events.iter().enumerate() {
        let (start, end) = (e.post_enter, e.post_exit);
        let op = match e.call {
            Call::Pcontrol => Op::Pcontrol(e.tag),
            Call::Probe | Call::Iprobe => Op::Other(i),
            Call::SendrecvSend | Call::SendrecvRecv => {
                sendrecvs.entry((e.thread, start, end)).or_default().push(i);
                continue;
            }
            c if is_nonblocking(c) => {
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
    out.sort_by_key(|c| (c.start, matches!(c.op, Op::Complete(_)), c.end));
    out
}

/// The OTF2 operation of a collective the own trace replays (trace.rs's `collective_of`).
fn otf2_op(c: Call) -> Option<u8> {
    Some(match c {
        Call::Barrier => op::BARRIER,
        Call::Bcast => op::BCAST,
        Call::Reduce => op::REDUCE,
        Call::Allreduce => op::ALLREDUCE,
        Call::Gather => op::GATHER,
        Call::Gatherv => op::GATHERV,
        Call::Scatter => op::SCATTER,
        Call::Scatterv => op::SCATTERV,
        Call::Allgather => op::ALLGATHER,
        Call::Allgatherv => op::ALLGATHERV,
        Call::Alltoall => op::ALLTOALL,
        Call::Alltoallv => op::ALLTOALLV,
        Call::ReduceScatter => op::REDUCE_SCATTER,
        Call::ReduceScatterBlock => op::REDUCE_SCATTER_BLOCK,
        _ => return None,
    })
}

/// The own format's family of an OTF2 operation (v-forms and the block form with their plain
/// one): what decides whether two ranks' calls are the same collective.
pub(crate) fn family(o: u8) -> Option<&'static str> {
    Some(match o {
        op::BARRIER => "barrier",
        op::BCAST => "bcast",
        op::REDUCE => "reduce",
        op::ALLREDUCE => "allreduce",
        op::GATHER | op::GATHERV => "gather",
        op::SCATTER | op::SCATTERV => "scatter",
        op::ALLGATHER | op::ALLGATHERV => "allgather",
        op::ALLTOALL | op::ALLTOALLV => "alltoall",
        op::REDUCE_SCATTER | op::REDUCE_SCATTER_BLOCK => "reducescatter",
        _ => return None,
    })
}

/// Whether the own format's collective of this family names a root.
pub(crate) fn rooted(family: &str) -> bool {
    matches!(family, "bcast" | "reduce" | "gather" | "scatter")
}

/// (bytes sent, bytes received) written for a rank whose interposer record says `b` bytes
/// (its own contribution: the buffer for bcast/reduce/allreduce, its block for gather,
/// scatter and allgather, everything it sends for alltoall and reduce_scatter), `n` ranks.
/// The v-forms record only the rank's own block, so a root's received (gather) or sent
/// (scatter) total is n blocks of its own size. [`crate::to_own`] takes the record back as
/// the root's sent bytes for bcast, the received bytes for scatter, the sent bytes otherwise.
pub fn sizes(o: u8, is_root: bool, b: u64, n: u64) -> (u64, u64) {
    match o {
        op::BARRIER => (0, 0),
        op::BCAST if is_root => (b, 0),
        op::BCAST => (0, b),
        op::REDUCE => (b, if is_root { b } else { 0 }),
        op::GATHER | op::GATHERV => (b, if is_root { b.saturating_mul(n) } else { 0 }),
        op::SCATTER | op::SCATTERV => (if is_root { b.saturating_mul(n) } else { 0 }, b),
        op::ALLGATHER | op::ALLGATHERV => (b, b.saturating_mul(n)),
        op::REDUCE_SCATTER | op::REDUCE_SCATTER_BLOCK => (b, b / n.max(1)),
        _ => (b, b),
    }
}

fn region_of(c: Call) -> (&'static str, u8) {
    use Call::*;
    let name = match c {
        SendrecvSend | SendrecvRecv => "MPI_Sendrecv",
        StartSend | StartRecv => "MPI_Start",
        c => c.name(),
    };
    let r = match c {
        Barrier => role::BARRIER,
        Bcast | Scatter | Scatterv => role::COLL_ONE2ALL,
        Reduce | Gather | Gatherv => role::COLL_ALL2ONE,
        Allreduce | Allgather | Allgatherv | Alltoall | Alltoallv | ReduceScatter
        | ReduceScatterBlock => role::COLL_ALL2ALL,
        Scan | Exscan => role::COLL_OTHER,
        Pcontrol => role::FUNCTION,
        _ => role::POINT2POINT,
    };
    (name, r)
}

struct Regions {
    list: Vec<Region>,
    by_name: HashMap<&'static str, u32>,
}

impl Regions {
    fn get(&mut self, name: &'static str, r: u8) -> u32 {
        if let Some(&i) = self.by_name.get(name) {
            return i;
        }
        let i = self.list.len() as u32;
        self.list.push(Region {
            name: name.to_string(),
            role: r,
            mpi: true,
        });
        self.by_name.insert(name, i);
        i
    }
}

/// Converts a run. Never fails: what the own trace leaves out is here without communication.
pub fn archive_of(run: &Run) -> (Archive, WriteStats) {
    let n = run.ranks.iter().map(|r| r.header.size).max().unwrap_or(0);
    let missing = run.missing_ranks();

    // Point-to-point: the matched records, with the partner and the tag the own trace uses.
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
    let mut matched: HashMap<(u32, usize), (u32, u32, u64)> = HashMap::new();
    for p in &pairing.pairs {
        let (src, dst, tag, comm) = p.stream;
        let t = if comm == 0 {
            i64::from(tag)
        } else {
            sub_tag[&(comm, tag)]
        };
        // MPI tags are non-negative and below 2^31, and so are the remapped ones while
        // there are fewer than 2^31 streams.
        let t = u32::try_from(t).unwrap_or(u32::MAX);
        let bytes = run.rank(src).map_or(0, |r| r.events[p.send].bytes);
        matched.insert((src, p.send), (dst, t, bytes));
        matched.insert((dst, p.recv), (src, t, bytes));
    }

    // Collectives: per rank the world ones the own trace can replay, in call order; only the
    // prefix every rank agrees on (kind and root) is written as collective records.
    let key = |e: &Event| {
        let f = family(otf2_op(e.call)?)?;
        // trace.rs keys on (operation, root), the root being the record's peer when set.
        Some((f, (e.peer >= 0).then_some(e.peer as u32)))
    };
    let mut seqs: Vec<Vec<usize>> = Vec::new();
    for rd in &run.ranks {
        let mut idx: Vec<usize> = rd
            .events
            .iter()
            .enumerate()
            .filter(|(_, e)| e.call.is_collective() && e.comm == 0 && key(e).is_some())
            .map(|(i, _)| i)
            .collect();
        idx.sort_by_key(|&i| rd.events[i].post_enter);
        seqs.push(idx);
    }
    let common = if missing.is_empty() && !run.ranks.is_empty() {
        let k = |r: usize, j: usize| key(&run.ranks[r].events[seqs[r][j]]);
        let shortest = seqs.iter().map(Vec::len).min().unwrap_or(0);
        (0..shortest)
            .take_while(|&j| (1..run.ranks.len()).all(|r| k(r, j) == k(0, j)))
            .count()
    } else {
        0
    };
    let mut kept_coll: BTreeSet<(u32, usize)> = BTreeSet::new();
    for (r, rd) in run.ranks.iter().enumerate() {
        for &i in &seqs[r][..common] {
            kept_coll.insert((rd.header.rank, i));
        }
    }

    let mut regions = Regions {
        list: Vec::new(),
        by_name: HashMap::new(),
    };
    let init = regions.get("MPI_Init", role::FUNCTION);
    let fin = regions.get("MPI_Finalize", role::FUNCTION);
    let wait = regions.get("MPI_Wait/Test", role::POINT2POINT);
    let mut stats = WriteStats {
        ranks: n,
        messages: pairing.pairs.len() as u64,
        collectives: common as u64,
        ..WriteStats::default()
    };
    let mut locations = Vec::new();
    for rd in &run.ranks {
        let me = rd.header.rank;
        let calls = calls_of(&rd.events);
        let begin = rd
            .clocks
            .iter()
            .find(|c| c.phase == 0)
            .map_or(rd.header.start_ns, |c| c.local_ns.max(rd.header.start_ns));
        let start = calls.first().map_or(begin, |c| c.start.min(begin));
        let mut ev = vec![
            Rec::Enter {
                t: rd.header.start_ns.min(start),
                region: init,
            },
            Rec::Leave {
                t: start,
                region: init,
            },
        ];
        // A rank whose first record is MPI_Pcontrol started with monitoring off (trace.rs).
        if matches!(calls.first().map(|c| &c.op), Some(Op::Pcontrol(_))) {
            ev.push(Rec::Measurement {
                t: start,
                on: false,
            });
        }
        let mut cursor = start;
        for c in &calls {
            cursor = cursor.max(c.end);
            let (t0, t1) = (c.start, c.end);
            let comm_rec = |i: usize, at_end: bool| -> Option<Rec> {
                let &(peer, tag, bytes) = matched.get(&(me, i))?;
                let e = &rd.events[i];
                let nb = is_nonblocking(e.call);
                let req = i as u64;
                Some(match (e.call.is_send(), nb, at_end) {
                    (true, false, _) => Rec::Send {
                        t: t0,
                        peer,
                        comm: 0,
                        tag,
                        bytes,
                    },
                    (false, false, _) => Rec::Recv {
                        t: t1,
                        peer,
                        comm: 0,
                        tag,
                        bytes,
                    },
                    (true, true, false) => Rec::Isend {
                        t: t0,
                        peer,
                        comm: 0,
                        tag,
                        bytes,
                        req,
                    },
                    (false, true, false) => Rec::IrecvRequest { t: t0, req },
                    (true, true, true) => Rec::IsendComplete { t: t1, req },
                    (false, true, true) => Rec::Irecv {
                        t: t1,
                        peer,
                        comm: 0,
                        tag,
                        bytes,
                        req,
                    },
                })
            };
            let region = match &c.op {
                Op::Blocking(i) | Op::Post(i) | Op::Collective(i) | Op::Other(i) => {
                    let (nm, r) = region_of(rd.events[*i].call);
                    regions.get(nm, r)
                }
                Op::Complete(_) => wait,
                Op::Sendrecv(_) => regions.get("MPI_Sendrecv", role::POINT2POINT),
                Op::Pcontrol(_) => regions.get("MPI_Pcontrol", role::FUNCTION),
            };
            ev.push(Rec::Enter { t: t0, region });
            match &c.op {
                Op::Blocking(i) | Op::Post(i) => ev.extend(comm_rec(*i, false)),
                Op::Complete(v) => ev.extend(v.iter().filter_map(|&i| comm_rec(i, true))),
                Op::Sendrecv(v) => {
                    // Both halves' records, in record order (the order the own trace writes
                    // its isend/irecv lines in), all at the call's end so that times never go
                    // back when the receive half was recorded first.
                    for &i in v {
                        ev.extend(comm_rec(i, false).map(|r| match r {
                            Rec::Send {
                                peer,
                                comm,
                                tag,
                                bytes,
                                ..
                            } => Rec::Send {
                                t: t1,
                                peer,
                                comm,
                                tag,
                                bytes,
                            },
                            r => r,
                        }));
                    }
                }
                Op::Collective(i) if kept_coll.contains(&(me, *i)) => {
                    let e = &rd.events[*i];
                    let o = otf2_op(e.call).expect("kept collectives have an operation");
                    let root = (e.peer >= 0).then_some(e.peer as u32);
                    let (sent, received) = sizes(o, root == Some(me), e.bytes, u64::from(n));
                    ev.push(Rec::CollBegin { t: t0 });
                    ev.push(Rec::CollEnd {
                        t: t1,
                        op: o,
                        comm: 0,
                        root,
                        sent,
                        received,
                    });
                }
                Op::Pcontrol(level) => ev.push(Rec::Measurement {
                    t: t0,
                    on: *level != 0,
                }),
                Op::Collective(_) | Op::Other(_) => {}
            }
            ev.push(Rec::Leave { t: t1, region });
        }
        ev.push(Rec::Enter {
            t: cursor,
            region: fin,
        });
        ev.push(Rec::Leave {
            t: rd.footer.map_or(cursor, |f| f.end_ns.max(cursor)),
            region: fin,
        });
        stats.events += ev.len() as u64;
        let mut clock_offsets: Vec<ClockOffset> = rd
            .clocks
            .iter()
            .map(|c| ClockOffset {
                time: c.local_ns,
                offset: c.offset_ns,
                std_dev: c.err_ns as f64,
            })
            .collect();
        clock_offsets.sort_by_key(|c| c.time);
        locations.push(Location {
            id: u64::from(me),
            name: format!("MPI rank {me}"),
            host: rd.header.host.clone(),
            clock_offsets,
            events: ev,
        });
    }
    let archive = Archive {
        timer_resolution: 1_000_000_000,
        regions: regions.list,
        comms: vec![Comm {
            name: "MPI_COMM_WORLD".into(),
            members: (0..n).collect(),
        }],
        mpi_ranks: (0..u64::from(n)).collect(),
        locations,
    };
    (archive, stats)
}
