//! A monitored MPI run as an OTF2 archive ([`Archive`]): the run's replay
//! ([`commperf_pmpi::replay`], the one walk that also writes commperf's own trace) rendered in
//! OTF2's records, so that reading it back ([`crate::to_own`]) gives predict the same workload:
//!
//! - one location per rank (id = world rank), in a process location group on its host's system
//!   tree node; one region per MPI call name (paradigm MPI). The calls of all a rank's threads
//!   go to its one location in the order they were entered (as the own trace replays them);
//!   OTF2 wants a location's times never to go back, so a call entered before the previous one
//!   returned (another thread's, or MPI_Isendrecv's second half, recorded with the same
//!   times as the first) is entered at that return, which is also where the replay's next
//!   compute starts counting;
//! - communicators: MPI_COMM_WORLD over every rank (comm 0), then each communicator the replay's
//!   collectives run on (comm 1, 2, … in the replay's order, named `c<id in hex>` as in the own
//!   trace), each over an OTF2 group of paradigm MPI whose members are world ranks in
//!   communicator rank order;
//! - timestamps are each rank's own clock in ns (timer resolution 10⁹), with two ClockOffset
//!   definitions per rank (the offsets to rank 0's clock measured at MPI_Init and MPI_Finalize),
//!   as Score-P writes them: tools that apply offsets (Vampir, Scalasca, libotf2's reader by
//!   default) see rank 0's clock, moved linearly between the two like
//!   `RankData::to_global`, and durations on one rank stay exactly the rank's own (what the own
//!   trace's `compute` is);
//! - every call is an Enter/Leave of its region (the Wait/Test family, whose records do not say
//!   which call completed them, is `MPI_Wait/Test`); MPI_Init is entered at the rank's start
//!   and left where the replay starts; MPI_Finalize is entered when the last call returned;
//! - inside the calls, the replayed messages as MpiSend/MpiRecv (blocking, and MPI_Sendrecv's
//!   two halves, as Score-P writes it), MpiIsend … MpiIsendComplete and MpiIrecvRequest …
//!   MpiIrecv (nonblocking, request id = the record's index), peers as world ranks on
//!   MPI_COMM_WORLD with the replay's tag (above every MPI_COMM_WORLD tag for other
//!   communicators' messages, so streams MPI kept apart stay apart); a synchronous send's inside
//!   its MPI_Ssend/MPI_Issend region (OTF2's send records have no mode: the region says it), a
//!   persistent MPI_Ssend_init's start inside a region of its own, [`SYNC_START_REGION`];
//!   a neighbourhood collective's messages, as the replay writes them, inside its region;
//! - the replayed collectives as MpiCollectiveBegin/End on their communicator, nonblocking ones
//!   as NonBlockingCollectiveRequest at the start and NonBlockingCollectiveComplete in the call
//!   that completed them: the OTF2 operation of the call (v-forms and MPI_Scan/Exscan
//!   included), the root as a rank of the communicator, and each rank's bytes sent and
//!   received ([`sizes`]);
//! - MPI_Pcontrol(0)/(1) as MeasurementOnOff;
//! - the replayed one-sided transfers as RmaPut, RmaGet and (read-modify-write) RmaAtomic at the
//!   call, on one window (ref 0) over MPI_COMM_WORLD so that targets are world ranks, matching
//!   id = the record's index, and RmaOpCompleteRemote in the call that completes them (the
//!   replay's `wait`: an R-form's MPI_Wait, or the call closing the epoch); MPI_Win_fence's
//!   barrier as a collective on the window's group, and post/start/complete/wait's empty
//!   messages as MpiSend/MpiRecv, as the replay makes them.
//!
//! What the replay leaves out (records without their partner, collectives on communicators it
//! does not know or on inter-communicators, neighbourhood all-to-alls of the v/w forms whose
//! sizes per neighbour were not recorded (files before format version 5),
//! collectives not recorded alike on every member, one-sided transfers to no rank of the run) is
//! in the archive as the call's region only, with no communication record.

use crate::model::{op, role, Archive, ClockOffset, Comm, Location, Rec, Region};
use commperf_pmpi::{
    replay, Call, CallKind, Event, RankData, RankReplay, Replay, ReplayCall, ReplayCollective,
    ReplayMessage, ReplayOp, ReplayRma, RmaKind, Run, TraceStats,
};
use std::collections::HashMap;

/// What the writer wrote.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct WriteStats {
    pub ranks: u32,
    pub events: u64,
    /// What the replay the archive renders wrote and left out (as the own trace's).
    pub replay: TraceStats,
}

/// The OTF2 operation of a collective call (its blocking form's).
fn otf2_op(c: Call) -> Option<u8> {
    Some(match c.blocking_form() {
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
        Call::Alltoallw => op::ALLTOALLW,
        Call::ReduceScatter => op::REDUCE_SCATTER,
        Call::ReduceScatterBlock => op::REDUCE_SCATTER_BLOCK,
        Call::Scan => op::SCAN,
        Call::Exscan => op::EXSCAN,
        // The replay's fence is a barrier on the window's group.
        Call::WinFence => op::BARRIER,
        _ => return None,
    })
}

/// The own format's operation of an OTF2 one (v-forms, MPI_Alltoallw and the block form as
/// their plain one, as the own trace of a monitored run writes them): what decides whether two
/// ranks' calls are the same collective.
pub(crate) fn family(o: u8) -> Option<&'static str> {
    Some(match o {
        op::BARRIER => "barrier",
        op::BCAST => "bcast",
        op::REDUCE => "reduce",
        op::ALLREDUCE => "allreduce",
        op::GATHER | op::GATHERV => "gather",
        op::SCATTER | op::SCATTERV => "scatter",
        op::ALLGATHER | op::ALLGATHERV => "allgather",
        op::ALLTOALL | op::ALLTOALLV | op::ALLTOALLW => "alltoall",
        op::REDUCE_SCATTER | op::REDUCE_SCATTER_BLOCK => "reducescatter",
        op::SCAN => "scan",
        op::EXSCAN => "exscan",
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

/// The region of a persistent MPI_Ssend_init's start: MPI_Start, named apart so that its
/// MpiIsend reads back as synchronous ([`crate::to_own`]), as an MPI_Issend region's does.
pub const SYNC_START_REGION: &str = "MPI_Start(MPI_Ssend_init)";

/// The region of a one-record call: its MPI function (a persistent request's start is
/// MPI_Start) and OTF2 role.
fn region_of(e: &Event) -> (&'static str, u8) {
    let c = e.call;
    let name = if c == Call::StartSend && e.is_sync_send() {
        SYNC_START_REGION
    } else if matches!(c, Call::StartSend | Call::StartRecv) || e.persistent {
        "MPI_Start"
    } else {
        // The interposer's names of halves ("MPI_Isendrecv(send)") are the function's.
        c.name().split('(').next().unwrap_or(c.name())
    };
    let r = if c.is_collective() {
        match c.blocking_form() {
            Call::Barrier => role::BARRIER,
            Call::Bcast | Call::Scatter | Call::Scatterv => role::COLL_ONE2ALL,
            Call::Reduce | Call::Gather | Call::Gatherv => role::COLL_ALL2ONE,
            Call::Allreduce
            | Call::Allgather
            | Call::Allgatherv
            | Call::Alltoall
            | Call::Alltoallv
            | Call::Alltoallw
            | Call::ReduceScatter
            | Call::ReduceScatterBlock => role::COLL_ALL2ALL,
            _ => role::COLL_OTHER,
        }
    } else if c == Call::Pcontrol {
        role::FUNCTION
    } else {
        role::POINT2POINT
    };
    (name, r)
}

struct Regions {
    list: Vec<Region>,
    by_name: HashMap<&'static str, u32>,
    /// MPI_Init's, MPI_Finalize's, and the region of the replay's completions.
    init: u32,
    fin: u32,
    wait: u32,
}

impl Regions {
    fn new() -> Self {
        let mut r = Regions {
            list: Vec::new(),
            by_name: HashMap::new(),
            init: 0,
            fin: 0,
            wait: 0,
        };
        r.init = r.get("MPI_Init", role::FUNCTION);
        r.fin = r.get("MPI_Finalize", role::FUNCTION);
        r.wait = r.get("MPI_Wait/Test", role::POINT2POINT);
        r
    }

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

    /// The region of call `c` of a rank whose records are `rd`'s.
    fn of_call(&mut self, c: &ReplayCall, rd: &RankData) -> u32 {
        match &c.kind {
            CallKind::Record(i) => {
                let (nm, r) = region_of(&rd.events[*i]);
                self.get(nm, r)
            }
            CallKind::Completion(_) => self.wait,
            CallKind::Sendrecv(_) => self.get("MPI_Sendrecv", role::POINT2POINT),
            CallKind::Pcontrol(_) => self.get("MPI_Pcontrol", role::FUNCTION),
        }
    }
}

/// Converts a run. Never fails: what the replay leaves out is here without communication.
pub fn archive_of(run: &Run) -> (Archive, WriteStats) {
    let rp = replay(run);
    let n = rp.ranks;
    // OTF2 comm 0 is MPI_COMM_WORLD, comm 1 + k the replay's communicator k.
    let world: Vec<u32> = (0..n).collect();
    let comm_ref: HashMap<u32, (u32, &[u32])> = std::iter::once((0, (0, world.as_slice())))
        .chain(
            rp.comms
                .iter()
                .enumerate()
                .map(|(k, c)| (c.id, (1 + k as u32, c.members.as_slice()))),
        )
        .collect();
    let mut comms = vec![Comm {
        name: "MPI_COMM_WORLD".into(),
        members: world.clone(),
    }];
    comms.extend(rp.comms.iter().map(|c| Comm {
        name: c.name(),
        members: c.members.clone(),
    }));
    let mut regions = Regions::new();
    let mut stats = WriteStats {
        ranks: n,
        ..WriteStats::default()
    };
    let mut locations = Vec::new();
    for (rr, rd) in rp.rank_replays.iter().zip(&run.ranks) {
        let ev = RankEvents::new(rr.rank, rd, &comm_ref).of(rr, &mut regions);
        stats.events += ev.len() as u64;
        locations.push(location(rr.rank, rd, ev));
    }
    // One window over MPI_COMM_WORLD: the replay's targets are world ranks.
    let windows = if any_rma(&rp) { vec![0] } else { Vec::new() };
    stats.replay = rp.stats;
    let archive = Archive {
        timer_resolution: 1_000_000_000,
        regions: regions.list,
        comms,
        windows,
        mpi_ranks: (0..u64::from(n)).collect(),
        locations,
    };
    (archive, stats)
}

/// Whether any rank's replay has a one-sided transfer.
fn any_rma(rp: &Replay) -> bool {
    rp.rank_replays
        .iter()
        .flat_map(|r| &r.calls)
        .flat_map(|c| &c.ops)
        .any(|o| matches!(o, ReplayOp::Rma(_)))
}

/// Rank `me`'s location: its events, host and clock offsets (in time order).
fn location(me: u32, rd: &RankData, events: Vec<Rec>) -> Location {
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
    Location {
        id: u64::from(me),
        name: format!("MPI rank {me}"),
        host: rd.header.host.clone(),
        clock_offsets,
        events,
    }
}

/// One rank's replay on its way to OTF2 records.
struct RankEvents<'r> {
    me: u32,
    rd: &'r RankData,
    /// The replay's communicator id -> (OTF2 comm, members).
    comm_ref: &'r HashMap<u32, (u32, &'r [u32])>,
    /// Requests started and not yet completed.
    started: HashMap<usize, &'r ReplayOp>,
    ev: Vec<Rec>,
}

impl<'r> RankEvents<'r> {
    fn new(me: u32, rd: &'r RankData, comm_ref: &'r HashMap<u32, (u32, &'r [u32])>) -> Self {
        RankEvents {
            me,
            rd,
            comm_ref,
            started: HashMap::new(),
            ev: Vec::new(),
        }
    }

    /// The rank's records: MPI_Init, every call, MPI_Finalize, in time order.
    fn of(mut self, rr: &'r RankReplay, regions: &mut Regions) -> Vec<Rec> {
        self.ev.push(Rec::Enter {
            t: rr.init_ns,
            region: regions.init,
        });
        self.ev.push(Rec::Leave {
            t: rr.start_ns,
            region: regions.init,
        });
        if rr.starts_stopped {
            self.ev.push(Rec::Measurement {
                t: rr.start_ns,
                on: false,
            });
        }
        for c in &rr.calls {
            let region = regions.of_call(c, self.rd);
            self.call(c, region);
        }
        self.ev.push(Rec::Enter {
            t: rr.last_ns,
            region: regions.fin,
        });
        self.ev.push(Rec::Leave {
            t: rr.end_ns,
            region: regions.fin,
        });
        // Never back in time (see the module's comment): overlapping calls follow each other.
        let mut last = 0;
        for r in &mut self.ev {
            let t = r.time_mut();
            last = last.max(*t);
            *t = last;
        }
        self.ev
    }

    /// One call in `region`: its Enter, its operations' records, its Leave.
    fn call(&mut self, c: &'r ReplayCall, region: u32) {
        let (t0, t1) = (c.start, c.end);
        self.ev.push(Rec::Enter { t: t0, region });
        let sendrecv = matches!(c.kind, CallKind::Sendrecv(_));
        for o in &c.ops {
            self.op(o, (t0, t1), sendrecv);
        }
        if let CallKind::Pcontrol(level) = c.kind {
            self.ev.push(Rec::Measurement {
                t: t0,
                on: level != 0,
            });
        }
        self.ev.push(Rec::Leave { t: t1, region });
    }

    fn op(&mut self, o: &'r ReplayOp, (t0, t1): (u64, u64), sendrecv: bool) {
        match o {
            // MPI_Sendrecv's halves as Score-P writes them, blocking, both at the call's end so
            // that times never go back when the receive half was recorded first; the replay's
            // waitall for them is the call itself.
            ReplayOp::Message(m) if sendrecv => self.ev.push(blocking(m, t1)),
            ReplayOp::Wait(_) if sendrecv => {}
            ReplayOp::Message(m) => match m.request {
                None => self.ev.push(blocking(m, if m.send { t0 } else { t1 })),
                Some(req) => {
                    self.started.insert(req, o);
                    self.ev.push(if m.send {
                        Rec::Isend {
                            t: t0,
                            peer: m.peer,
                            comm: 0,
                            tag: tag_of(m),
                            bytes: m.bytes,
                            req: req as u64,
                        }
                    } else {
                        Rec::IrecvRequest {
                            t: t0,
                            req: req as u64,
                        }
                    });
                }
            },
            ReplayOp::Collective(k) => match k.request {
                None => {
                    let (op, comm, root, sent, received) = self.coll_fields(k);
                    self.ev.push(Rec::CollBegin { t: t0 });
                    self.ev.push(Rec::CollEnd {
                        t: t1,
                        op,
                        comm,
                        root,
                        sent,
                        received,
                    });
                }
                Some(req) => {
                    self.started.insert(req, o);
                    self.ev.push(Rec::NbcRequest {
                        t: t0,
                        req: req as u64,
                    });
                }
            },
            ReplayOp::Rma(x) => {
                self.started.insert(x.request, o);
                self.ev.push(rma_rec(x, t0));
            }
            ReplayOp::Wait(v) => {
                for req in v {
                    if let Some(rec) = self.completion(*req, t1) {
                        self.ev.push(rec);
                    }
                }
            }
        }
    }

    /// The record of request `req`'s completion at `t`; none for a request the replay did not
    /// start (it waits only for those it started).
    fn completion(&mut self, req: usize, t: u64) -> Option<Rec> {
        let q = req as u64;
        Some(match self.started.remove(&req)? {
            ReplayOp::Message(m) if m.send => Rec::IsendComplete { t, req: q },
            ReplayOp::Message(m) => Rec::Irecv {
                t,
                peer: m.peer,
                comm: 0,
                tag: tag_of(m),
                bytes: m.bytes,
                req: q,
            },
            ReplayOp::Collective(k) => {
                let (op, comm, root, sent, received) = self.coll_fields(k);
                Rec::NbcComplete {
                    t,
                    op,
                    comm,
                    root,
                    sent,
                    received,
                    req: q,
                }
            }
            ReplayOp::Rma(_) => Rec::RmaComplete { t, win: 0, req: q },
            ReplayOp::Wait(_) => return None,
        })
    }

    /// The collective record's fields for this rank: (operation, comm, root, sent, received).
    fn coll_fields(&self, k: &ReplayCollective) -> (u8, u32, Option<u32>, u64, u64) {
        let e = &self.rd.events[k.event];
        let o = otf2_op(e.call).expect("replayed collectives have an operation");
        let (comm, members) = self.comm_ref[&k.comm];
        let is_root = k.root.and_then(|x| members.get(x as usize)) == Some(&self.me);
        let (sent, received) = sizes(o, is_root, e.bytes, members.len() as u64);
        (o, comm, k.root, sent, received)
    }
}

/// A message's tag as OTF2's (unsigned 32 bits): MPI tags are non-negative and below 2^31,
/// and so are the replay's renumbered ones while there are fewer than 2^31 streams.
fn tag_of(m: &ReplayMessage) -> u32 {
    u32::try_from(m.tag).unwrap_or(u32::MAX)
}

/// A one-sided transfer's record at `t`, on window 0 (over MPI_COMM_WORLD).
fn rma_rec(x: &ReplayRma, t: u64) -> Rec {
    let (win, peer, bytes, req) = (0, x.peer, x.bytes, x.request as u64);
    match x.kind {
        RmaKind::Put => Rec::RmaPut {
            t,
            win,
            peer,
            bytes,
            req,
        },
        RmaKind::Get => Rec::RmaGet {
            t,
            win,
            peer,
            bytes,
            req,
        },
        RmaKind::Fetch => Rec::RmaAtomic {
            t,
            win,
            peer,
            sent: bytes,
            received: bytes,
            req,
        },
    }
}

/// A blocking MpiSend/MpiRecv at `t`.
fn blocking(m: &ReplayMessage, t: u64) -> Rec {
    if m.send {
        Rec::Send {
            t,
            peer: m.peer,
            comm: 0,
            tag: tag_of(m),
            bytes: m.bytes,
        }
    } else {
        Rec::Recv {
            t,
            peer: m.peer,
            comm: 0,
            tag: tag_of(m),
            bytes: m.bytes,
        }
    }
}
