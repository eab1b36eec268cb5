//! A monitored MPI run as a trace that `commperf predict` replays (commperf's own format, user
//! guide: docs/src/reference/traces.md) and as a Chrome trace-event timeline (Perfetto, `chrome://tracing`).
//!
//! Per rank, in call order (calls sorted by the time they were entered, on the rank's clock):
//!
//! - the gaps between MPI calls become `compute` (the rank's own clock: no global clock needed
//!   for a difference on one rank), from the end of MPI_Init (after the interposer's clock sync)
//!   to the first call and between calls; not after the last call (see below);
//! - synchronous sends (MPI_Ssend, MPI_Issend) become `ssend`/`issend`, which predict completes
//!   only once their receive is posted, whatever their size;
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
//! - collectives become the own format's collectives (so predict expands them with its
//!   algorithms), MPI_Scan/Exscan its `scan`/`exscan`. Those on another communicator run `on` a
//!   `comm c<id in hex>` definition listing its members (world ranks in communicator rank
//!   order, as the run recorded them), with the root as a rank within it; a communicator whose
//!   members the run does not know leaves its collectives out, counted;
//! - neighbourhood collectives (MPI_Neighbor_allgather(v), MPI_Neighbor_alltoall(v/w) and
//!   their I-forms) become what they do: an `irecv` from each in-neighbour and an `isend` to
//!   each out-neighbour (the topology's lists, world ranks in the standard's order, recorded by
//!   the interposer; MPI_PROC_NULL's slots move nothing), each of the record's bytes over the
//!   out-degree, or for the v/w all-to-alls the size the interposer recorded for that
//!   neighbour (format v5), a receive its sender's; then a `waitall` of them, or for the
//!   I-form at the call that completed it. Their tag is one per topology communicator, above
//!   every stream's. MPI_Neighbor_alltoallv/w calls whose sizes per neighbour were not recorded
//!   (files before format version 5) are left out and counted; so are calls whose members'
//!   lists were not recorded or do not pair up;
//! - nonblocking collectives (MPI_Iallreduce, …) become the format's `i`-forms, named after
//!   their record and joined by the `wait`/`waitall` of the call that completed them, like
//!   nonblocking point-to-point;
//! - a point-to-point record whose partner was not recorded (dropped, cut short, monitoring
//!   stopped on one side) is left out and counted: replaying half a message would deadlock;
//! - the format requires every member of a communicator to call its collectives in the same
//!   order; when the members' records disagree (a dropped record, a rank cut short or missing),
//!   only the common prefix is kept, per communicator, and the rest is counted;
//! - while monitoring was stopped (MPI_Pcontrol(0) .. (1)) the calls were not recorded, so that
//!   time is neither compute nor communication: it is left out and reported;
//! - one-sided transfers become the format's `put` (MPI_Put, MPI_Accumulate and their R-forms),
//!   `get` (MPI_Get, MPI_Rget) and `fetch` (MPI_Get_accumulate, MPI_Fetch_and_op,
//!   MPI_Compare_and_swap, MPI_Rget_accumulate: half the recorded bytes each way, the record
//!   holding what was sent plus what was received) to the target's world rank, each named after
//!   its record and joined by the `wait`/`waitall` of the call that completes it: the MPI_Wait
//!   of an R-form, else the call that closes its epoch ([`rma_epoch_ops`]). MPI_Win_fence is
//!   also a `barrier` on the window's group (a collective of the group, as MPI_Win_fence is);
//!   MPI_Win_post/start and complete/wait are empty messages from each target to each origin
//!   and back. The interposer does not record the groups MPI_Win_post and MPI_Win_start were
//!   given, so an origin's access epoch is taken to reach the targets its transfers went to,
//!   matched in order with their exposure epochs; an origin and target whose epochs do not pair
//!   up one to one have no synchronisation replayed (their transfers are), counted. A transfer
//!   whose target is no rank of the run is left out, counted.

use crate::format::{NeighborCounts, NeighborDef};
use crate::read::{pair_events, Call, Event, RankData, Run};
use commperf_report::timeline::Arg;
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet, VecDeque};
use std::fmt::Write as _;

/// The longest duration the own format takes (commperf-predict's `parse::MAX_NS`, which this
/// crate does not link; a test checks they agree): a longer gap is not written.
const MAX_DURATION_NS: u64 = 1 << 60;

/// What a conversion wrote and what it left out.
#[derive(Debug, Clone, Default, Serialize, PartialEq, schemars::JsonSchema)]
pub struct TraceStats {
    pub ranks: u32,
    /// Matched point-to-point messages written (a send on one rank, its receive on another).
    pub messages: u64,
    /// Of them, on communicators other than MPI_COMM_WORLD.
    pub subcomm_messages: u64,
    /// Collective calls on MPI_COMM_WORLD written per rank (every rank writes the same ones).
    pub collectives: u64,
    /// Collective calls (summed over ranks) on other communicators written.
    pub subcomm_collectives: u64,
    /// Communicators other than MPI_COMM_WORLD defined in the trace (those with collectives).
    pub communicators: u64,
    /// Of the collective calls written (summed over ranks, any communicator), the nonblocking.
    pub nonblocking_collectives: u64,
    /// Point-to-point records left out because their partner was not recorded.
    pub unmatched_left_out: u64,
    /// Collective calls (summed over ranks) on communicators whose members the run does not
    /// know (or beyond the own format's 2^14 communicators).
    pub subcomm_collectives_left_out: u64,
    /// Collective calls (summed over ranks) on inter-communicators: the own format's
    /// communicators are groups of ranks, not two groups facing each other.
    pub intercomm_collectives_left_out: u64,
    /// Collective calls (summed over ranks) the trace cannot replay: MPI_Neighbor_alltoallv/w
    /// and their nonblocking forms whose sizes per neighbour were not recorded (files before
    /// format version 5: the record holds the rank's total bytes, not each neighbour's).
    pub unsupported_left_out: u64,
    /// Neighbourhood collective calls (summed over ranks) written as their messages.
    pub neighbor_collectives: u64,
    /// The messages they were written as (one per sender and out-neighbour).
    pub neighbor_messages: u64,
    /// Neighbourhood collective calls (summed over ranks) whose rank's neighbours the run did
    /// not record (files before format version 4), or whose members' neighbour lists do not
    /// pair up (a message one lists that its peer does not).
    pub neighbor_lists_left_out: u64,
    /// One-sided transfers (summed over ranks) written as `put`/`get`/`fetch`.
    pub one_sided: u64,
    /// Empty messages written for MPI_Win_post→start and complete→wait (not in `messages`).
    pub epoch_messages: u64,
    /// One-sided transfers (summed over ranks) left out: their target is no rank of the run.
    pub one_sided_left_out: u64,
    /// Access epochs (MPI_Win_start .. complete, per target its transfers reached) whose
    /// synchronisation with the target's exposure epoch (MPI_Win_post .. wait) is not replayed:
    /// the origin's epochs reaching the target and the target's epochs do not pair up.
    pub epoch_syncs_left_out: u64,
    /// Collective calls (summed over ranks) not recorded alike on every member of their
    /// communicator.
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
    /// Gaps between a rank's calls longer than the format's longest duration (predict's
    /// `MAX_NS`, 2^60 ns, about 36 years): a clock that jumped or a damaged file, not compute.
    /// Not replayed (a trace with them could not be read back), counted.
    pub clock_jumps_left_out: u64,
}

impl TraceStats {
    /// Every call left out of the trace.
    pub fn left_out(&self) -> u64 {
        self.unmatched_left_out
            + self.subcomm_collectives_left_out
            + self.intercomm_collectives_left_out
            + self.unsupported_left_out
            + self.neighbor_lists_left_out
            + self.misaligned_collectives_left_out
            + self.one_sided_left_out
            + self.epoch_syncs_left_out
    }

    /// One line for the terminal: what was written, and what was left out and why.
    pub fn describe(&self) -> String {
        let mut s = format!(
            "trace: {} ranks, {} messages ({} on sub-communicators), {} collectives per rank",
            self.ranks, self.messages, self.subcomm_messages, self.collectives
        );
        if self.subcomm_collectives > 0 {
            let _ = write!(
                s,
                " and {} collective calls on {} other communicators",
                self.subcomm_collectives, self.communicators
            );
        }
        if self.nonblocking_collectives > 0 {
            let _ = write!(
                s,
                " ({} of the calls nonblocking)",
                self.nonblocking_collectives
            );
        }
        if self.neighbor_collectives > 0 {
            let _ = write!(
                s,
                ", {} neighbourhood collective calls as {} messages",
                self.neighbor_collectives, self.neighbor_messages
            );
        }
        if self.one_sided > 0 {
            let _ = write!(s, ", {} one-sided transfers", self.one_sided);
        }
        if self.epoch_messages > 0 {
            let _ = write!(
                s,
                " ({} empty messages for post/start/complete/wait)",
                self.epoch_messages
            );
        }
        let mut why = Vec::new();
        if self.unmatched_left_out > 0 {
            why.push(format!(
                "{} point-to-point records without their partner",
                self.unmatched_left_out
            ));
        }
        if self.subcomm_collectives_left_out > 0 {
            why.push(format!(
                "{} collective calls on communicators whose members the run does not know",
                self.subcomm_collectives_left_out
            ));
        }
        if self.intercomm_collectives_left_out > 0 {
            why.push(format!(
                "{} collective calls on inter-communicators",
                self.intercomm_collectives_left_out
            ));
        }
        if self.unsupported_left_out > 0 {
            why.push(format!(
                "{} MPI_Neighbor_alltoallv/w calls (each neighbour's size was not recorded)",
                self.unsupported_left_out
            ));
        }
        if self.neighbor_lists_left_out > 0 {
            why.push(format!(
                "{} neighbourhood collective calls whose neighbours were not recorded or do \
                 not pair up",
                self.neighbor_lists_left_out
            ));
        }
        if self.one_sided_left_out > 0 {
            why.push(format!(
                "{} one-sided transfers (MPI_Put/Get/Accumulate…) to no rank of the run",
                self.one_sided_left_out
            ));
        }
        if self.epoch_syncs_left_out > 0 {
            why.push(format!(
                "{} synchronisations of MPI_Win_start/complete epochs with MPI_Win_post/wait \
                 epochs that do not pair up",
                self.epoch_syncs_left_out
            ));
        }
        if self.misaligned_collectives_left_out > 0 {
            why.push(format!(
                "{} collective calls not recorded alike on every rank of their communicator",
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
        if self.clock_jumps_left_out > 0 {
            let _ = write!(
                s,
                "; {} gaps between calls longer than 2^60 ns (a clock that jumped) not replayed \
                 as compute",
                self.clock_jumps_left_out
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

/// What the replay makes of a monitored run, before any file format: per rank, the MPI calls in
/// the order they were entered, each with the operations it is replayed as (the rules at the top
/// of this module), and what was left out. The own-format text ([`to_trace`]) and commperf-otf2's
/// OTF2 archive are both renderings of it, so the two formats cannot drift apart.
#[derive(Debug, Clone)]
pub struct Replay {
    /// World size.
    pub ranks: u32,
    /// The communicators other than MPI_COMM_WORLD that replayed collectives run on, by id.
    pub comms: Vec<ReplayComm>,
    /// One per rank that left a file, in the run's order (`Run::ranks`).
    pub rank_replays: Vec<RankReplay>,
    /// The matched point-to-point messages: (sender, its record, receiver, its record).
    pub messages: Vec<(u32, usize, u32, usize)>,
    pub stats: TraceStats,
}

/// A communicator other than MPI_COMM_WORLD, as the run recorded its group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplayComm {
    /// The interposer's communicator id (never 0, which is MPI_COMM_WORLD).
    pub id: u32,
    /// World ranks in communicator rank order.
    pub members: Vec<u32>,
}

impl ReplayComm {
    /// Its name in the own format: `c` and the id in hex.
    pub fn name(&self) -> String {
        format!("c{:x}", self.id)
    }
}

/// One rank's replay; times on the rank's own clock (ns).
#[derive(Debug, Clone)]
pub struct RankReplay {
    pub rank: u32,
    /// MPI_Init's return (the header's start), or the first call when that is earlier.
    pub init_ns: u64,
    /// Where the replay starts: after the interposer's clock sync in MPI_Init (which waits for
    /// the slowest rank), or at the first call when that is earlier.
    pub start_ns: u64,
    /// The end of the last call: nothing is replayed after it.
    pub last_ns: u64,
    /// MPI_Finalize's end (the footer's), or `last_ns` for a rank cut short.
    pub end_ns: u64,
    /// Monitoring was off from the start (the first record is MPI_Pcontrol): the time before
    /// the first MPI_Pcontrol(1) is unknown, not compute.
    pub starts_stopped: bool,
    pub calls: Vec<ReplayCall>,
}

/// One MPI call of a rank.
#[derive(Debug, Clone)]
pub struct ReplayCall {
    /// Entered and left (ns, the rank's clock).
    pub start: u64,
    pub end: u64,
    pub kind: CallKind,
    /// Computation replayed before this call: the gap since the previous call's end, 0 when
    /// none or while monitoring was stopped.
    pub compute_before: u64,
    /// What the call is replayed as; empty when nothing (a probe, one-sided, a record left out).
    pub ops: Vec<ReplayOp>,
}

impl ReplayCall {
    /// The call's name (the timeline's); `events` are its rank's records.
    pub fn name(&self, events: &[Event]) -> &'static str {
        match &self.kind {
            CallKind::Record(i) => events[*i].call.name(),
            CallKind::Sendrecv(_) => "MPI_Sendrecv",
            CallKind::Completion(_) => "MPI_Wait/Test",
            CallKind::Pcontrol(_) => "MPI_Pcontrol",
        }
    }
}

/// Which records one MPI call is made of (indices into its rank's events).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CallKind {
    /// A call of one record: a send, a receive, a nonblocking start, a collective, a probe, …
    Record(usize),
    /// MPI_Sendrecv(_replace): its send and receive halves.
    Sendrecv(Vec<usize>),
    /// The Wait/Test call that completed these nonblocking records (the records do not say
    /// which function it was). One call may complete point-to-point and collective requests.
    Completion(Vec<usize>),
    /// MPI_Pcontrol(level): 0 stops monitoring, any other level restarts it.
    Pcontrol(i32),
}

/// One operation a call is replayed as.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReplayOp {
    Message(ReplayMessage),
    Collective(ReplayCollective),
    /// Waits for these requests, started by earlier operations of the rank (or, in
    /// MPI_Sendrecv, by the call's own two halves).
    Wait(Vec<usize>),
    /// A one-sided transfer, always nonblocking (MPI completes it at its epoch's end).
    Rma(ReplayRma),
}

/// The own format's one-sided operations.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RmaKind {
    /// Data to the target, an acknowledgement back (MPI_Put, MPI_Accumulate).
    Put,
    /// A request to the target, data back (MPI_Get).
    Get,
    /// Data both ways (MPI_Get_accumulate, MPI_Fetch_and_op, MPI_Compare_and_swap).
    Fetch,
}

impl RmaKind {
    /// Its word in the own format.
    pub fn word(self) -> &'static str {
        match self {
            RmaKind::Put => "put",
            RmaKind::Get => "get",
            RmaKind::Fetch => "fetch",
        }
    }

    /// The kind of a one-sided transfer call, None for any other call.
    pub fn of(c: Call) -> Option<RmaKind> {
        Some(match c {
            Call::Put | Call::Rput | Call::Accumulate | Call::Raccumulate => RmaKind::Put,
            Call::Get | Call::Rget => RmaKind::Get,
            Call::GetAccumulate
            | Call::RgetAccumulate
            | Call::FetchAndOp
            | Call::CompareAndSwap => RmaKind::Fetch,
            _ => return None,
        })
    }
}

/// One one-sided transfer of the origin's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplayRma {
    pub event: usize,
    pub kind: RmaKind,
    /// The target as a world rank.
    pub peer: u32,
    /// The format's size: what a put sends, a get fetches, a fetch carries each way.
    pub bytes: u64,
    /// The window's group id (`Event::comm`).
    pub win: u32,
    /// Its request (its record's index), completed by a later [`ReplayOp::Wait`].
    pub request: usize,
}

/// One side of a matched point-to-point message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplayMessage {
    pub event: usize,
    pub send: bool,
    /// The partner as a world rank (a receive's is the rank that actually sent).
    pub peer: u32,
    /// MPI_COMM_WORLD's tags as they are; other communicators' (communicator, tag) pairs
    /// numbered above every world tag.
    pub tag: i64,
    /// The send's size, on both sides: the format's receive takes what the send gives.
    pub bytes: u64,
    /// Nonblocking: the request (see [`request_name`]), completed by a later [`ReplayOp::Wait`].
    pub request: Option<usize>,
    /// A synchronous send (MPI_Ssend, MPI_Issend): complete only once its receive has started.
    pub sync: bool,
}

/// A collective call every member of its communicator replays alike.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplayCollective {
    pub event: usize,
    /// The own format's operation: barrier, bcast, reduce, allreduce, gather, scatter,
    /// allgather, alltoall, reducescatter, scan, exscan.
    pub op: &'static str,
    /// The root as a rank within the communicator (rooted operations only).
    pub root: Option<u32>,
    /// The size the format means (per pair for alltoall, one block for reducescatter): the
    /// mean over the members, since the v-forms give each member its own.
    pub bytes: u64,
    /// 0 for MPI_COMM_WORLD, else the id of one of [`Replay::comms`].
    pub comm: u32,
    /// Nonblocking (MPI_Iallreduce, a persistent collective's start, …): its request.
    pub request: Option<usize>,
}

/// The name a request is written under: `q` and its record's index.
pub fn request_name(event: usize) -> String {
    format!("q{event}")
}

/// What a single-record call does in the replay.
enum Role {
    /// Probes and one-sided synchronisation: MPI time, no operation.
    Other,
    /// MPI_Isend…/Irecv/MPI_Start: a request completed by a later call.
    Post,
    Collective,
    /// MPI_Send/Ssend/Bsend/Rsend/Recv (and one-sided transfers, never matched).
    Blocking,
}

fn role(c: Call) -> Role {
    if c.is_probe() || c.is_rma_sync() {
        Role::Other
    } else if c.is_nonblocking() && !c.is_collective() {
        Role::Post
    } else if c.is_collective() {
        Role::Collective
    } else {
        Role::Blocking
    }
}

/// A rank's records as calls (start, end, kind), in the order they were entered.
fn calls_of(events: &[Event]) -> Vec<(u64, u64, CallKind)> {
    let mut out = Vec::new();
    // Records completed by one call share its thread and times.
    let mut completions: BTreeMap<(u32, u64, u64), Vec<usize>> = BTreeMap::new();
    let mut sendrecvs: BTreeMap<(u32, u64, u64), Vec<usize>> = BTreeMap::new();
    for (i, e) in events.iter().enumerate() {
        let (start, end) = (e.post_enter, e.post_exit);
        match e.call {
            Call::Pcontrol => {
                out.push((start, end, CallKind::Pcontrol(e.tag)));
                continue;
            }
            Call::SendrecvSend | Call::SendrecvRecv => {
                sendrecvs.entry((e.thread, start, end)).or_default().push(i);
                continue;
            }
            _ => {}
        }
        // A nonblocking collective is completed by a Wait/Test like a point-to-point request
        // (one Waitall may complete both kinds).
        let completed_later = match role(e.call) {
            Role::Post => true,
            Role::Collective => e.call.is_nonblocking_collective(),
            Role::Other | Role::Blocking => false,
        };
        if completed_later {
            completions
                .entry((e.thread, e.done_enter, e.done_exit))
                .or_default()
                .push(i);
        }
        out.push((start, end, CallKind::Record(i)));
    }
    for ((_, start, end), v) in completions {
        out.push((start, end, CallKind::Completion(v)));
    }
    for ((_, start, end), v) in sendrecvs {
        out.push((start, end, CallKind::Sendrecv(v)));
    }
    // A completion never starts before its post; at equal times the post comes first.
    out.sort_by_key(|c| (c.0, matches!(c.2, CallKind::Completion(_)), c.1));
    out
}

/// Most communicators the own format takes in one trace (commperf-predict's `MAX_GROUPS`:
/// each has its own tags).
const MAX_COMMS: usize = 1 << 14;

/// The own format's collective for a call on a communicator of `n` ranks whose members (world
/// ranks in communicator rank order) are `members` (None: MPI_COMM_WORLD): (operation, root
/// within the communicator, size the format means for it), or None when the format has no
/// such operation. A root that is no member gives root `None` for a rooted operation, which
/// [`CollKey`] treats as a disagreement.
fn collective_of(
    e: &Event,
    n: u64,
    members: Option<&[u32]>,
) -> Option<(&'static str, Option<u32>, u64)> {
    // The interposer records the root as a world rank; the format wants it within the
    // communicator, as MPI does.
    let root = (e.peer >= 0)
        .then_some(e.peer as u32)
        .and_then(|w| match members {
            None => Some(w),
            Some(m) => m.iter().position(|&x| x == w).map(|p| p as u32),
        });
    let n = n.max(1);
    // The interposer records this rank's contribution; the format wants, for alltoall, the
    // bytes per pair and for reducescatter one rank's block (docs/src/reference/traces.md, "Meaning").
    Some(match e.call.blocking_form() {
        Call::Barrier => ("barrier", None, 0),
        Call::Bcast => ("bcast", root, e.bytes),
        Call::Reduce => ("reduce", root, e.bytes),
        Call::Allreduce => ("allreduce", None, e.bytes),
        Call::Gather | Call::Gatherv => ("gather", root, e.bytes),
        Call::Scatter | Call::Scatterv => ("scatter", root, e.bytes),
        Call::Allgather | Call::Allgatherv => ("allgather", None, e.bytes),
        Call::Alltoall | Call::Alltoallv | Call::Alltoallw => ("alltoall", None, e.bytes / n),
        Call::ReduceScatter | Call::ReduceScatterBlock => ("reducescatter", None, e.bytes / n),
        Call::Scan => ("scan", None, e.bytes),
        Call::Exscan => ("exscan", None, e.bytes),
        // A fence synchronises the window's group (after its transfers are complete).
        Call::WinFence => ("barrier", None, 0),
        _ => return None,
    })
}

/// The neighbourhood collectives the replay writes as their messages, by family (what the
/// members of one call must agree on). (MPI_Neighbor_allgatherv sends every out-neighbour the
/// same block: only its receives differ, and a receive takes its sender's size.)
fn neighbor_op(c: Call) -> Option<&'static str> {
    match c.blocking_form() {
        Call::NeighborAllgather | Call::NeighborAllgatherv => Some("neighbor_allgather"),
        Call::NeighborAlltoall => Some("neighbor_alltoall"),
        Call::NeighborAlltoallv => Some("neighbor_alltoallv"),
        Call::NeighborAlltoallw => Some("neighbor_alltoallw"),
        _ => None,
    }
}

/// MPI_Neighbor_alltoallv/w (and their I-forms): a size per neighbour, recorded apart
/// ([`NeighborCounts`]), the record holding only the rank's total.
fn sized_per_neighbor(c: Call) -> bool {
    matches!(
        c.blocking_form(),
        Call::NeighborAlltoallv | Call::NeighborAlltoallw
    )
}

/// The sizes per neighbour of `rd`'s v/w neighbourhood all-to-all `e` (its `peer` names them).
fn counts_of<'a>(rd: &'a RankData, e: &Event) -> Option<&'a NeighborCounts> {
    let index = u32::try_from(e.peer).ok()?;
    rd.neighbor_counts.iter().find(|c| c.index == index)
}

/// The neighbour lists of `rd`'s neighbourhood collective `e` (its `tag` names them).
fn neighbors_of<'a>(rd: &'a RankData, e: &Event) -> Option<&'a NeighborDef> {
    let index = u32::try_from(e.tag).ok()?;
    rd.neighbors
        .iter()
        .find(|d| d.index == index && d.id == e.comm)
}

/// The bytes a neighbourhood collective sends each out-neighbour slot: the v/w all-to-alls'
/// recorded sizes (None when there are none, or not one per slot), the others' record's total
/// over the out-degree, MPI_PROC_NULL's slots included, as the interposer counts them.
fn slot_sizes(rd: &RankData, e: &Event, d: &NeighborDef) -> Option<Vec<u64>> {
    let slots = d.destinations.len();
    if sized_per_neighbor(e.call) {
        let c = counts_of(rd, e)?;
        return (c.sends.len() == slots).then(|| c.sends.clone());
    }
    Some(vec![e.bytes / (slots.max(1) as u64); slots])
}

/// A neighbourhood collective call of one rank, as the messages it is replayed as.
struct NeighborCall {
    tag: i64,
    /// (in-neighbour, bytes it sends this rank), in the topology's order; MPI_PROC_NULL's
    /// slots move nothing and are not here.
    recvs: Vec<(u32, u64)>,
    /// (out-neighbour, bytes).
    sends: Vec<(u32, u64)>,
}

/// The members' sides of one neighbourhood collective call, if their lists pair up: every
/// message a member lists for an out-neighbour, that neighbour lists as coming from it, as
/// often. `call` holds each member's (world rank, record).
fn neighbor_call(
    call: &[(u32, usize)],
    by_rank: &HashMap<u32, &RankData>,
    tag: i64,
) -> Option<Vec<(u32, usize, NeighborCall)>> {
    let mut sides = Vec::with_capacity(call.len());
    for &(m, i) in call {
        let rd = by_rank.get(&m)?;
        let e = rd.events.get(i)?;
        let d = neighbors_of(rd, e)?;
        sides.push((m, i, d, slot_sizes(rd, e, d)?));
    }
    let mut balance: HashMap<(u32, u32), i64> = HashMap::new();
    for &(m, _, d, _) in &sides {
        for &to in d.destinations.iter().flatten() {
            *balance.entry((m, to)).or_default() += 1;
        }
        for &from in d.sources.iter().flatten() {
            *balance.entry((from, m)).or_default() -= 1;
        }
    }
    if balance.values().any(|&v| v != 0) {
        return None;
    }
    // Each sender's messages to each receiver, in its slot order: the receiver's k-th receive
    // from a sender takes the sender's k-th message to it, as the replay matches one pair's
    // messages in order.
    let mut flows: HashMap<(u32, u32), VecDeque<u64>> = HashMap::new();
    for (m, _, d, sizes) in &sides {
        for (to, &b) in d.destinations.iter().zip(sizes) {
            if let Some(to) = to {
                flows.entry((*m, *to)).or_default().push_back(b);
            }
        }
    }
    Some(
        sides
            .into_iter()
            .map(|(m, i, d, sizes)| {
                let recvs = d
                    .sources
                    .iter()
                    .flatten()
                    .map(|&from| {
                        let q = flows.get_mut(&(from, m));
                        (from, q.and_then(VecDeque::pop_front).unwrap_or(0))
                    })
                    .collect();
                let sends = d
                    .destinations
                    .iter()
                    .zip(&sizes)
                    .filter_map(|(to, &b)| to.map(|t| (t, b)))
                    .collect();
                (m, i, NeighborCall { tag, recvs, sends })
            })
            .collect(),
    )
}

/// The operations of one rank's neighbourhood collective call `event`: an irecv from each
/// in-neighbour, then an isend to each out-neighbour (as Open MPI and MPICH post them), with
/// request numbers from `next`. Returns the requests.
fn neighbor_ops(
    nb: &NeighborCall,
    event: usize,
    next: &mut usize,
    ops: &mut Vec<ReplayOp>,
) -> Vec<usize> {
    let recvs = nb.recvs.iter().map(|&(p, b)| (false, p, b));
    let sends = nb.sends.iter().map(|&(p, b)| (true, p, b));
    let mut reqs = Vec::with_capacity(nb.recvs.len() + nb.sends.len());
    for (send, peer, bytes) in recvs.chain(sends) {
        let q = *next;
        *next += 1;
        reqs.push(q);
        ops.push(ReplayOp::Message(ReplayMessage {
            event,
            send,
            peer,
            tag: nb.tag,
            bytes,
            request: Some(q),
            sync: false,
        }));
    }
    reqs
}

fn is_rooted(op: &str) -> bool {
    matches!(op, "bcast" | "reduce" | "gather" | "scatter")
}

/// What members must agree on for one call: operation, root, nonblocking. None (never equal
/// to anything) when a rooted call's root is no member.
type CollKey = Option<(&'static str, Option<u32>, bool)>;

fn coll_key(e: &Event, n: u64, members: Option<&[u32]>) -> CollKey {
    if e.call.is_neighborhood() {
        return neighbor_op(e.call).map(|op| (op, None, e.call.is_nonblocking_collective()));
    }
    let (op, root, _) = collective_of(e, n, members)?;
    if is_rooted(op) && root.is_none() {
        return None;
    }
    Some((op, root, e.call.is_nonblocking_collective()))
}

/// The replay of a run. Never fails: what cannot be replayed is left out and counted in the
/// stats.
///
/// In steps, each its own function, so that each rule has one place: match the point-to-point
/// messages ([`P2p`]), count the one-sided transfers and the unmatched records, keep the
/// collective calls every member agrees on ([`Collectives`]), pair the neighbourhood
/// collectives' messages and the post/start/complete/wait synchronisations, then replay each
/// rank call by call ([`RankWalk`]). The tags the steps give out follow one another in that
/// order: world tags, other communicators' streams, topology communicators, epoch syncs.
pub fn replay(run: &Run) -> Replay {
    let n = run.ranks.iter().map(|r| r.header.size).max().unwrap_or(0);
    let mut st = TraceStats {
        ranks: n,
        drops: run.ranks.iter().map(|r| r.drops).sum(),
        missing_ranks: run.missing_ranks(),
        compute_ns: vec![0; n as usize],
        run_ns: vec![0; n as usize],
        ..TraceStats::default()
    };
    let p2p = P2p::of(run, &mut st);
    count_one_sided(run, n, &mut st);
    p2p.count_unmatched(run, &mut st);
    // World rank -> its data: `Run::rank` searches, and this is asked per call and member.
    let by_rank: HashMap<u32, &RankData> = run.ranks.iter().map(|r| (r.header.rank, r)).collect();
    let colls = Collectives::of(run, n, &by_rank, &mut st);
    let first_nbr_tag = p2p.next_tag;
    let (kept_nbr, nbr_comms) =
        keep_neighbor_calls(&colls.neighbor_calls, &by_rank, first_nbr_tag, &mut st);
    // Post/start and complete/wait synchronisations: empty messages on two tags of their own,
    // above every point-to-point stream's and every topology communicator's.
    let first_sync_tag = first_nbr_tag + nbr_comms as i64;
    let epoch_syncs = pscw_syncs(run, (first_sync_tag, first_sync_tag + 1), &mut st);
    let comms: Vec<ReplayComm> = colls
        .used_comms
        .iter()
        .map(|&id| ReplayComm {
            id,
            members: colls.known[&id].clone(),
        })
        .collect();
    let kept = Kept {
        n,
        matched: &p2p.matched,
        coll: &colls.kept,
        nbr: &kept_nbr,
        epoch_syncs: &epoch_syncs,
    };
    let rank_replays = run
        .ranks
        .iter()
        .map(|rd| RankWalk::new(rd).replay(&kept, &mut st))
        .collect();
    Replay {
        ranks: n,
        comms,
        rank_replays,
        messages: p2p.messages,
        stats: st,
    }
}

/// Point-to-point: the matched records, with the partner and the tag the trace uses.
struct P2p {
    /// (rank, event index) -> (partner, tag, bytes).
    matched: HashMap<(u32, usize), (u32, i64, u64)>,
    /// [`Replay::messages`].
    messages: Vec<(u32, usize, u32, usize)>,
    /// The first tag above every stream's (world tags, then other communicators' streams).
    next_tag: i64,
}

impl P2p {
    fn of(run: &Run, st: &mut TraceStats) -> P2p {
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
        let mut matched = HashMap::new();
        let mut messages = Vec::with_capacity(pairing.pairs.len());
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
            messages.push((src, p.send, dst, p.recv));
        }
        st.messages = pairing.pairs.len() as u64;
        P2p {
            matched,
            messages,
            next_tag: i64::from(max_world_tag) + 1 + sub_tag.len() as i64,
        }
    }

    /// Counts the sends and receives with a peer that no pair holds.
    fn count_unmatched(&self, run: &Run, st: &mut TraceStats) {
        for rd in &run.ranks {
            let me = rd.header.rank;
            st.unmatched_left_out += rd
                .events
                .iter()
                .enumerate()
                .filter(|(i, e)| {
                    (e.call.is_send() || e.call.is_recv())
                        && e.peer >= 0
                        && !self.matched.contains_key(&(me, *i))
                })
                .count() as u64;
        }
    }
}

/// One-sided: a transfer is replayed when its target is a rank of the run.
fn rma_ok(e: &Event, n: u32) -> bool {
    e.peer >= 0 && (e.peer as u32) < n
}

fn count_one_sided(run: &Run, n: u32, st: &mut TraceStats) {
    for e in run.ranks.iter().flat_map(|r| &r.events) {
        if e.call.is_rma() {
            if rma_ok(e, n) {
                st.one_sided += 1;
            } else {
                st.one_sided_left_out += 1;
            }
        }
    }
}

/// The collective calls kept: per communicator and member, in call order, the prefix all
/// members agree on. Communicator 0 is MPI_COMM_WORLD, every rank its member in rank order.
struct Collectives {
    /// The communicators other than MPI_COMM_WORLD with a known group (at most `MAX_COMMS`).
    known: BTreeMap<u32, Vec<u32>>,
    /// The collectives replayed as such, per (rank, record).
    kept: HashMap<(u32, usize), ReplayCollective>,
    /// The communicators other than MPI_COMM_WORLD that kept collectives run on.
    used_comms: BTreeSet<u32>,
    /// Neighbourhood collective calls kept: (communicator, each member's (rank, record)).
    neighbor_calls: Vec<(u32, Vec<(u32, usize)>)>,
}

/// Per communicator, per member, the records of its collective calls.
type Seqs = BTreeMap<u32, BTreeMap<u32, Vec<usize>>>;

impl Collectives {
    fn of(
        run: &Run,
        n: u32,
        by_rank: &HashMap<u32, &RankData>,
        st: &mut TraceStats,
    ) -> Collectives {
        let mut c = Collectives {
            known: BTreeMap::new(),
            kept: HashMap::new(),
            used_comms: BTreeSet::new(),
            neighbor_calls: Vec::new(),
        };
        let mut seqs = c.sequences(run, n, st);
        let world: Vec<u32> = (0..n).collect();
        for (&comm, per_rank) in &mut seqs {
            let members = if comm == 0 {
                world.clone()
            } else {
                c.known[&comm].clone()
            };
            c.align(comm, &members, per_rank, by_rank, st);
        }
        c
    }

    /// Each rank's collective calls per communicator, those the format can replay; the others
    /// are counted as left out (intercommunicators, unknown groups, operations it lacks).
    fn sequences(&mut self, run: &Run, n: u32, st: &mut TraceStats) -> Seqs {
        let mut inter: HashMap<u32, bool> = HashMap::new();
        let mut seqs = Seqs::new();
        for rd in &run.ranks {
            let me = rd.header.rank;
            for (i, e) in rd.events.iter().enumerate() {
                if !e.call.is_collective() && e.call != Call::WinFence {
                    continue;
                }
                if e.comm != 0
                    && *inter
                        .entry(e.comm)
                        .or_insert_with(|| run.comm_is_inter(e.comm))
                {
                    st.intercomm_collectives_left_out += 1;
                    continue;
                }
                if e.comm != 0 && !self.known.contains_key(&e.comm) {
                    // Beyond the format's limit, a communicator is as good as unknown.
                    match run.comm_group(e.comm) {
                        Some(m) if self.known.len() < MAX_COMMS => {
                            self.known.insert(e.comm, m.to_vec());
                        }
                        _ => {
                            st.subcomm_collectives_left_out += 1;
                            continue;
                        }
                    }
                }
                let members = (e.comm != 0).then(|| self.known[&e.comm].as_slice());
                if replayable_collective(rd, e, n, members, st) {
                    seqs.entry(e.comm)
                        .or_default()
                        .entry(me)
                        .or_default()
                        .push(i);
                }
            }
        }
        seqs
    }

    /// Keeps the calls on communicator `comm` (of `members`) that every member agrees on, in
    /// call order, and counts the rest as misaligned.
    fn align(
        &mut self,
        comm: u32,
        members: &[u32],
        per_rank: &mut BTreeMap<u32, Vec<usize>>,
        by_rank: &HashMap<u32, &RankData>,
        st: &mut TraceStats,
    ) {
        let group = (comm != 0).then_some(members);
        let size = members.len() as u64;
        for (&r, idx) in per_rank.iter_mut() {
            if let Some(rd) = by_rank.get(&r) {
                idx.sort_by_key(|&i| rd.events[i].post_enter);
            }
        }
        // A rank that recorded calls on a communicator it is no member of: none of them can
        // be replayed.
        let member: HashSet<u32> = members.iter().copied().collect();
        for (r, idx) in per_rank.iter() {
            if !member.contains(r) {
                st.misaligned_collectives_left_out += idx.len() as u64;
            }
        }
        let empty: Vec<usize> = Vec::new();
        let seq_of = |m: u32| per_rank.get(&m).unwrap_or(&empty);
        let common = common_prefix(members, &seq_of, by_rank, size, group);
        for &m in members {
            st.misaligned_collectives_left_out +=
                (seq_of(m).len() - common.min(seq_of(m).len())) as u64;
        }
        let mut neighborhood = 0;
        for j in 0..common {
            let evs: Vec<(u32, usize, &Event)> = members
                .iter()
                .filter_map(|&m| {
                    let i = *seq_of(m).get(j)?;
                    Some((m, i, by_rank.get(&m)?.events.get(i)?))
                })
                .collect();
            // Written as messages once every call is known (their tags follow every stream's).
            if evs
                .first()
                .is_some_and(|(_, _, e)| e.call.is_neighborhood())
            {
                let call = evs.iter().map(|&(m, i, _)| (m, i)).collect();
                self.neighbor_calls.push((comm, call));
                neighborhood += 1;
                continue;
            }
            self.keep_call(comm, &evs, size, group, st);
        }
        let common = common - neighborhood;
        if comm == 0 {
            st.collectives = common as u64;
        } else if common > 0 {
            st.subcomm_collectives += (common * members.len()) as u64;
            st.communicators += 1;
            self.used_comms.insert(comm);
        }
    }

    /// Keeps one collective call, `evs` holding each member's (rank, record, event).
    fn keep_call(
        &mut self,
        comm: u32,
        evs: &[(u32, usize, &Event)],
        size: u64,
        group: Option<&[u32]>,
        st: &mut TraceStats,
    ) {
        let per: Vec<(&'static str, Option<u32>, u64)> = evs
            .iter()
            .filter_map(|(_, _, e)| collective_of(e, size, group))
            .collect();
        let Some(&(op, root, _)) = per.first() else {
            return;
        };
        // The v-forms give each rank its own size; the format has one size per call, so
        // the mean keeps the call's total volume.
        let bytes = per.iter().map(|p| p.2).sum::<u64>() / per.len() as u64;
        let nonblocking = evs
            .first()
            .is_some_and(|(_, _, e)| e.call.is_nonblocking_collective());
        for &(m, idx, _) in evs {
            // A nonblocking call's request is named after its record, as point-to-point's.
            let coll = ReplayCollective {
                event: idx,
                op,
                root,
                bytes,
                comm,
                request: nonblocking.then_some(idx),
            };
            self.kept.insert((m, idx), coll);
        }
        if nonblocking {
            st.nonblocking_collectives += evs.len() as u64;
        }
    }
}

/// Whether the format can replay collective (or MPI_Win_fence) record `e` of `rd` on a
/// communicator of `members` (None: MPI_COMM_WORLD of `n` ranks); counts it as left out when
/// not.
fn replayable_collective(
    rd: &RankData,
    e: &Event,
    n: u32,
    members: Option<&[u32]>,
    st: &mut TraceStats,
) -> bool {
    let size = members.map_or(u64::from(n), |m| m.len() as u64);
    if e.call.is_neighborhood() {
        let no_sizes = sized_per_neighbor(e.call) && counts_of(rd, e).is_none();
        if neighbor_op(e.call).is_none() || no_sizes {
            st.unsupported_left_out += 1;
            return false;
        }
        if neighbors_of(rd, e).is_none() {
            st.neighbor_lists_left_out += 1;
            return false;
        }
    } else if collective_of(e, size, members).is_none() {
        st.unsupported_left_out += 1;
        return false;
    }
    true
}

/// How many calls, from the first, every member of a communicator recorded alike (0 when a
/// member left no file): `seq_of` gives a member's records in call order.
fn common_prefix<'a>(
    members: &[u32],
    seq_of: &dyn Fn(u32) -> &'a Vec<usize>,
    by_rank: &HashMap<u32, &RankData>,
    size: u64,
    group: Option<&[u32]>,
) -> usize {
    let every_member_recorded = members.iter().all(|m| by_rank.contains_key(m));
    if !every_member_recorded || members.is_empty() {
        return 0;
    }
    let key = |m: u32, j: usize| -> CollKey {
        let rd = by_rank.get(&m)?;
        coll_key(&rd.events[*seq_of(m).get(j)?], size, group)
    };
    let shortest = members.iter().map(|&m| seq_of(m).len()).min().unwrap_or(0);
    (0..shortest)
        .take_while(|&j| {
            let k0 = key(members[0], j);
            k0.is_some() && members.iter().all(|&m| key(m, j) == k0)
        })
        .count()
}

/// Pairs the neighbourhood collective calls' messages; each topology communicator's messages
/// get a tag of their own, from `first_tag` up. Returns the calls kept, per (rank, record),
/// and how many tags were given out.
fn keep_neighbor_calls(
    calls: &[(u32, Vec<(u32, usize)>)],
    by_rank: &HashMap<u32, &RankData>,
    first_tag: i64,
    st: &mut TraceStats,
) -> (HashMap<(u32, usize), NeighborCall>, usize) {
    let nbr_comms: BTreeSet<u32> = calls.iter().map(|&(c, _)| c).collect();
    let nbr_tag: HashMap<u32, i64> = nbr_comms
        .iter()
        .enumerate()
        .map(|(k, &c)| (c, first_tag + k as i64))
        .collect();
    let mut kept: HashMap<(u32, usize), NeighborCall> = HashMap::new();
    for (comm, call) in calls {
        match neighbor_call(call, by_rank, nbr_tag[comm]) {
            Some(sides) => {
                st.neighbor_collectives += sides.len() as u64;
                for (m, i, nb) in sides {
                    st.neighbor_messages += nb.sends.len() as u64;
                    kept.insert((m, i), nb);
                }
            }
            None => st.neighbor_lists_left_out += call.len() as u64,
        }
    }
    (kept, nbr_comms.len())
}

/// What the run-wide steps kept, that each rank's replay reads.
struct Kept<'a> {
    /// World size.
    n: u32,
    matched: &'a HashMap<(u32, usize), (u32, i64, u64)>,
    coll: &'a HashMap<(u32, usize), ReplayCollective>,
    nbr: &'a HashMap<(u32, usize), NeighborCall>,
    epoch_syncs: &'a HashMap<(u32, usize), Vec<ReplayMessage>>,
}

/// One rank's replay in progress: its calls are walked in order, and what one call starts a
/// later one completes, so the state between calls lives here.
struct RankWalk<'r> {
    rd: &'r RankData,
    me: u32,
    /// Requests written and not yet waited for.
    posted: HashSet<usize>,
    /// A neighbourhood collective's messages' requests, numbered past the records'.
    next_req: usize,
    /// Per nonblocking neighbourhood collective not yet completed, its requests.
    nbr_reqs: HashMap<usize, Vec<usize>>,
    /// One-sided transfers not yet completed, by (window, target).
    rma_pending: BTreeMap<(u32, u32), Vec<usize>>,
    /// Since when monitoring is stopped (MPI_Pcontrol(0)), if it is.
    stopped_at: Option<u64>,
}

impl<'r> RankWalk<'r> {
    fn new(rd: &'r RankData) -> RankWalk<'r> {
        RankWalk {
            rd,
            me: rd.header.rank,
            posted: HashSet::new(),
            next_req: rd.events.len(),
            nbr_reqs: HashMap::new(),
            rma_pending: BTreeMap::new(),
            stopped_at: None,
        }
    }

    fn replay(mut self, kept: &Kept<'_>, st: &mut TraceStats) -> RankReplay {
        let rd = self.rd;
        let calls = calls_of(&rd.events);
        // The header's start is taken at MPI_Init's return, before the interposer's clock sync
        // with rank 0, which waits for the slowest rank to start: the program resumes after it.
        let begin = rd
            .clocks
            .iter()
            .find(|c| c.phase == 0)
            .map_or(rd.header.start_ns, |c| c.local_ns.max(rd.header.start_ns));
        let start = calls.first().map_or(begin, |c| c.0.min(begin));
        let mut cursor = start;
        // A run started with monitoring off (`--start-disabled`, which the rank files do not
        // record) has only MPI_Pcontrol records before its first MPI_Pcontrol(1): what came
        // before that is unknown, not compute. A rank whose first record is MPI_Pcontrol is
        // taken as such; when it was not, the time lost is reported as stopped.
        let starts_stopped = matches!(calls.first(), Some((_, _, CallKind::Pcontrol(_))));
        self.stopped_at = starts_stopped.then_some(start);
        let mut compute = 0u64;
        let mut out = Vec::with_capacity(calls.len());
        for (c_start, c_end, kind) in calls {
            let mut compute_before = 0;
            if c_start > cursor && self.stopped_at.is_none() {
                if c_start - cursor > MAX_DURATION_NS {
                    st.clock_jumps_left_out += 1;
                } else {
                    compute_before = c_start - cursor;
                    compute += compute_before;
                }
            }
            cursor = cursor.max(c_end);
            let ops = self.ops(&kind, c_start, kept, st);
            out.push(ReplayCall {
                start: c_start,
                end: c_end,
                kind,
                compute_before,
                ops,
            });
        }
        // No compute after the last call: MPI_Finalize's moment is not recorded apart from the
        // clock sync it starts with, which waits for rank 0 to reach it, so the tail would
        // count other ranks' lateness as this rank's compute.
        let end = rd.footer.map_or(cursor, |f| f.end_ns.max(cursor));
        if let Some(t) = self.stopped_at {
            st.stopped_ns += cursor.saturating_sub(t);
        }
        let init_ns = rd.header.start_ns.min(start);
        let me = self.me;
        if let Some(slot) = st.compute_ns.get_mut(me as usize) {
            *slot = compute;
            st.run_ns[me as usize] = end - init_ns;
        }
        RankReplay {
            rank: me,
            init_ns,
            start_ns: start,
            last_ns: cursor,
            end_ns: end,
            starts_stopped,
            calls: out,
        }
    }

    /// The operations call `kind` (entered at `c_start`) is replayed as.
    fn ops(
        &mut self,
        kind: &CallKind,
        c_start: u64,
        kept: &Kept<'_>,
        st: &mut TraceStats,
    ) -> Vec<ReplayOp> {
        let mut ops = Vec::new();
        match kind {
            CallKind::Record(i) => self.record_ops(*i, kept, &mut ops),
            CallKind::Completion(v) => self.completion_ops(v, &mut ops),
            CallKind::Sendrecv(v) => {
                let halves: Vec<ReplayMessage> = v
                    .iter()
                    .filter_map(|&i| self.message(i, true, kept))
                    .collect();
                if !halves.is_empty() {
                    let done = halves.iter().map(|m| m.event).collect();
                    ops.extend(halves.into_iter().map(ReplayOp::Message));
                    ops.push(ReplayOp::Wait(done));
                }
            }
            CallKind::Pcontrol(level) => {
                if *level == 0 {
                    self.stopped_at.get_or_insert(c_start);
                } else if let Some(t) = self.stopped_at.take() {
                    st.stopped_ns += c_start.saturating_sub(t);
                }
            }
        }
        ops
    }

    /// Record `i`'s side of a matched message, if it was matched.
    fn message(&self, i: usize, nonblocking: bool, kept: &Kept<'_>) -> Option<ReplayMessage> {
        let &(peer, tag, bytes) = kept.matched.get(&(self.me, i))?;
        let e = &self.rd.events[i];
        Some(ReplayMessage {
            event: i,
            send: e.call.is_send(),
            peer,
            tag,
            bytes,
            request: nonblocking.then_some(i),
            sync: e.is_sync_send(),
        })
    }

    /// The operations of a call of one record, `i`.
    fn record_ops(&mut self, i: usize, kept: &Kept<'_>, ops: &mut Vec<ReplayOp>) {
        let me = self.me;
        let e = &self.rd.events[i];
        if e.call.is_rma() {
            self.rma_op(i, kept.n, ops);
            return;
        }
        if e.call.is_rma_sync() {
            let done = rma_epoch_ops(e, &mut self.rma_pending);
            if !done.is_empty() {
                done.iter().for_each(|q| {
                    self.posted.remove(q);
                });
                ops.push(ReplayOp::Wait(done));
            }
            if let Some(coll) = kept.coll.get(&(me, i)) {
                ops.push(ReplayOp::Collective(coll.clone()));
            }
            if let Some(v) = kept.epoch_syncs.get(&(me, i)) {
                ops.extend(v.iter().cloned().map(ReplayOp::Message));
            }
            return;
        }
        match role(e.call) {
            Role::Other => {}
            Role::Blocking => ops.extend(self.message(i, false, kept).map(ReplayOp::Message)),
            Role::Post => {
                if let Some(m) = self.message(i, true, kept) {
                    self.posted.insert(i);
                    ops.push(ReplayOp::Message(m));
                }
            }
            Role::Collective if kept.nbr.contains_key(&(me, i)) => {
                let reqs = neighbor_ops(&kept.nbr[&(me, i)], i, &mut self.next_req, ops);
                if e.call.is_nonblocking_collective() {
                    self.posted.extend(reqs.iter().copied());
                    self.nbr_reqs.insert(i, reqs);
                } else {
                    ops.push(ReplayOp::Wait(reqs));
                }
            }
            Role::Collective => {
                if let Some(coll) = kept.coll.get(&(me, i)) {
                    if coll.request.is_some() {
                        self.posted.insert(i);
                    }
                    ops.push(ReplayOp::Collective(coll.clone()));
                }
            }
        }
    }

    /// One-sided transfer `i`, pending until its epoch (or its own wait) completes it.
    fn rma_op(&mut self, i: usize, n: u32, ops: &mut Vec<ReplayOp>) {
        let e = &self.rd.events[i];
        let (Some(k), true) = (RmaKind::of(e.call), rma_ok(e, n)) else {
            return;
        };
        let peer = e.peer as u32;
        self.posted.insert(i);
        self.rma_pending.entry((e.comm, peer)).or_default().push(i);
        ops.push(ReplayOp::Rma(ReplayRma {
            event: i,
            kind: k,
            peer,
            bytes: if k == RmaKind::Fetch {
                e.bytes / 2
            } else {
                e.bytes
            },
            win: e.comm,
            request: i,
        }));
    }

    /// The wait of a Wait/Test call that completed records `v`.
    fn completion_ops(&mut self, v: &[usize], ops: &mut Vec<ReplayOp>) {
        // Only requests whose start was replayed (a record cut short may show its
        // completion before its start): a wait for an unknown name is refused.
        let done: Vec<usize> = v
            .iter()
            .flat_map(|i| self.nbr_reqs.remove(i).unwrap_or_else(|| vec![*i]))
            .filter(|i| self.posted.remove(i))
            .collect();
        // An R-form's transfer completed here is no longer its epoch's to complete
        // (a neighbourhood collective's requests are numbered past the records).
        for q in &done {
            let Some(e) = self.rd.events.get(*q) else {
                continue;
            };
            if e.call.is_rma() {
                if let Some(p) = self.rma_pending.get_mut(&(e.comm, e.peer as u32)) {
                    p.retain(|x| x != q);
                }
            }
        }
        if !done.is_empty() {
            ops.push(ReplayOp::Wait(done));
        }
    }
}

/// The transfers one-sided synchronisation call `e` completes, taken from `pending` (per
/// (window, target), in the order they were made): MPI_Win_fence, MPI_Win_complete,
/// MPI_Win_unlock_all and MPI_Win_flush_all(_local) every transfer on the window,
/// MPI_Win_unlock and MPI_Win_flush(_local) those to the rank they name. A transfer completes
/// when the origin knows it done at the target, so flush_local is taken as flush (which it
/// bounds). MPI_Win_lock(_all), post, start, wait, test and sync complete none: lock
/// acquisition and exclusive locks' serialisation are not replayed.
fn rma_epoch_ops(e: &Event, pending: &mut BTreeMap<(u32, u32), Vec<usize>>) -> Vec<usize> {
    let mut done = Vec::new();
    let all = matches!(
        e.call,
        Call::WinFence
            | Call::WinComplete
            | Call::WinUnlockAll
            | Call::WinFlushAll
            | Call::WinFlushLocalAll
    );
    let one = matches!(
        e.call,
        Call::WinUnlock | Call::WinFlush | Call::WinFlushLocal
    );
    for (&(win, target), v) in pending.iter_mut() {
        if win == e.comm && (all || (one && i64::from(target) == i64::from(e.peer))) {
            done.append(v);
        }
    }
    pending.retain(|_, v| !v.is_empty());
    done.sort_unstable();
    done
}

/// An access epoch: MPI_Win_start's record, MPI_Win_complete's (None while open), and the
/// targets its transfers reached.
type Access = (usize, Option<usize>, BTreeSet<u32>);

/// One rank's generalised active target epochs on one window, in call order.
#[derive(Default)]
struct Epochs {
    access: Vec<Access>,
    /// MPI_Win_post .. MPI_Win_wait (or a MPI_Win_test that found it over).
    exposure: Vec<(usize, Option<usize>)>,
}

/// The empty messages that replay post/start/complete/wait, per (rank, its record): the target's
/// post sends one to each origin whose access epoch reaches it, the origin's start receives it;
/// the origin's complete sends one back, the target's wait receives it. An origin's epochs that
/// reach a target are paired in order with the target's exposure epochs on that window when
/// there are as many of each; otherwise none of them are synchronised (a guess could deadlock
/// the replay), and they are counted in `st.epoch_syncs_left_out`.
fn pscw_syncs(
    run: &Run,
    (post_tag, complete_tag): (i64, i64),
    st: &mut TraceStats,
) -> HashMap<(u32, usize), Vec<ReplayMessage>> {
    let mut epochs: BTreeMap<(u32, u32), Epochs> = BTreeMap::new();
    for rd in &run.ranks {
        let me = rd.header.rank;
        for (_, _, kind) in calls_of(&rd.events) {
            let CallKind::Record(i) = kind else { continue };
            let e = &rd.events[i];
            let en = epochs.entry((me, e.comm)).or_default();
            match e.call {
                Call::WinStart => en.access.push((i, None, BTreeSet::new())),
                Call::WinComplete => {
                    if let Some(a) = en.access.last_mut().filter(|a| a.1.is_none()) {
                        a.1 = Some(i);
                    }
                }
                Call::WinPost => en.exposure.push((i, None)),
                Call::WinWait | Call::WinTest => {
                    if let Some(x) = en.exposure.last_mut().filter(|x| x.1.is_none()) {
                        x.1 = Some(i);
                    }
                }
                c if c.is_rma() && e.peer >= 0 => {
                    if let Some(a) = en.access.last_mut().filter(|a| a.1.is_none()) {
                        a.2.insert(e.peer as u32);
                    }
                }
                _ => {}
            }
        }
    }
    let mut out: HashMap<(u32, usize), Vec<ReplayMessage>> = HashMap::new();
    let msg = |event: usize, send: bool, peer: u32, tag: i64| ReplayMessage {
        event,
        send,
        peer,
        tag,
        bytes: 0,
        request: None,
        sync: false,
    };
    for (&(origin, win), ep) in &epochs {
        // The targets this origin reached, each with its epochs reaching it.
        let mut reach: BTreeMap<u32, Vec<&Access>> = BTreeMap::new();
        for a in &ep.access {
            for &t in &a.2 {
                reach.entry(t).or_default().push(a);
            }
        }
        for (target, acc) in reach {
            let exp = epochs
                .get(&(target, win))
                .map_or(&[][..], |x| &x.exposure[..]);
            let paired = acc.len() == exp.len()
                && acc.iter().all(|a| a.1.is_some())
                && exp.iter().all(|x| x.1.is_some());
            if !paired {
                st.epoch_syncs_left_out += acc.len() as u64;
                continue;
            }
            for (a, x) in acc.iter().zip(exp) {
                let (Some(complete), Some(wait)) = (a.1, x.1) else {
                    continue;
                };
                st.epoch_messages += 2;
                out.entry((target, x.0))
                    .or_default()
                    .push(msg(x.0, true, origin, post_tag));
                out.entry((origin, a.0))
                    .or_default()
                    .push(msg(a.0, false, target, post_tag));
                out.entry((origin, complete)).or_default().push(msg(
                    complete,
                    true,
                    target,
                    complete_tag,
                ));
                out.entry((target, wait))
                    .or_default()
                    .push(msg(wait, false, origin, complete_tag));
            }
        }
    }
    out
}

/// Converts a run: its replay ([`replay`]) written in the own format, and as a timeline.
pub fn to_trace(run: &Run) -> TraceOutput {
    let r = replay(run);
    let mut text = format!("ranks {}\n", r.ranks);
    // Definitions of the communicators used, before any rank's block.
    for c in &r.comms {
        let list: Vec<String> = c.members.iter().map(u32::to_string).collect();
        let _ = writeln!(text, "comm {} {}", c.name(), list.join(" "));
    }
    // The timeline beside it on the global clock.
    let t0 = run
        .ranks
        .iter()
        .map(|r| r.to_global(r.header.start_ns))
        .fold(f64::INFINITY, f64::min);
    let mut tl = Timeline::new(r.ranks, t0);
    for (rr, rd) in r.rank_replays.iter().zip(&run.ranks) {
        let _ = writeln!(text, "\nrank {}", rr.rank);
        for c in &rr.calls {
            if c.compute_before > 0 {
                let _ = writeln!(text, "  compute {}ns", c.compute_before);
            }
            for op in &c.ops {
                write_op(&mut text, op, &c.kind);
            }
            tl.span(rd, c.start, c.end, c.name(&rd.events), !c.ops.is_empty());
        }
    }
    for &(src, send, dst, recv) in &r.messages {
        if let (Some(s), Some(d)) = (run.rank(src), run.rank(dst)) {
            tl.flow(s, &s.events[send], d, &d.events[recv]);
        }
    }
    // The header is written last, so it states what was left out, stopped time included.
    let text = format!(
        "# commperf trace of a monitored MPI run ({}), written by commperf monitor\n# {}\n{text}",
        run.dir.display(),
        r.stats.describe()
    );
    TraceOutput {
        text,
        chrome: tl.finish(),
        stats: r.stats,
    }
}

/// Writes one operation of a call of kind `kind` as an own-format line.
fn write_op(text: &mut String, op: &ReplayOp, kind: &CallKind) {
    match op {
        ReplayOp::Message(m) => {
            let verb = match (m.send, m.request.is_some(), m.sync) {
                (true, false, false) => "send",
                (true, false, true) => "ssend",
                (false, false, _) => "recv",
                (true, true, false) => "isend",
                (true, true, true) => "issend",
                (false, true, _) => "irecv",
            };
            let _ = write!(text, "  {verb} {} {}B tag {}", m.peer, m.bytes, m.tag);
            if let Some(q) = m.request {
                let _ = write!(text, " as {}", request_name(q));
            }
            text.push('\n');
        }
        ReplayOp::Collective(k) => {
            let i = if k.request.is_some() { "i" } else { "" };
            // MPI_COMM_WORLD's collectives name no communicator.
            let on = if k.comm == 0 {
                String::new()
            } else {
                format!(" on c{:x}", k.comm)
            };
            let (op, bytes) = (k.op, k.bytes);
            let _ = match k.root {
                Some(root) => write!(text, "  {i}{op} root {root} {bytes}B{on}"),
                None if op == "barrier" => write!(text, "  {i}{op}{on}"),
                None => write!(text, "  {i}{op} {bytes}B{on}"),
            };
            if let Some(q) = k.request {
                let _ = write!(text, " as {}", request_name(q));
            }
            text.push('\n');
        }
        ReplayOp::Rma(x) => {
            let (verb, q) = (x.kind.word(), request_name(x.request));
            let _ = writeln!(text, "  {verb} {} {}B as {q}", x.peer, x.bytes);
        }
        ReplayOp::Wait(v) => {
            let names: Vec<String> = v.iter().map(|&i| request_name(i)).collect();
            // MPI_Sendrecv's halves are joined by a waitall even when only one was matched.
            let all = names.len() > 1 || matches!(kind, CallKind::Sendrecv(_));
            let verb = if all { "waitall" } else { "wait" };
            let _ = writeln!(text, "  {verb} {}", names.join(" "));
        }
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

    fn span(
        &mut self,
        rd: &crate::read::RankData,
        start: u64,
        end: u64,
        name: &str,
        replayed: bool,
    ) {
        let (a, b) = (self.at(rd, start), self.at(rd, end));
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_longest_gap_written_is_the_longest_duration_predict_reads() {
        assert_eq!(MAX_DURATION_NS, commperf_predict::parse::MAX_NS);
    }
    use crate::format::{ClockSync, CommDef, Footer, Header, NeighborCounts, NeighborDef};
    use crate::read::RankData;
    use std::path::PathBuf;

    fn rank(r: u32, n: u32, events: Vec<Event>) -> RankData {
        RankData {
            path: PathBuf::from(format!("rank-{r}")),
            header: Header {
                format: crate::format::FORMAT_NAME.into(),
                version: 2,
                rank: r,
                size: n,
                pid: 1,
                host: "h".into(),
                mpi_flavour: "openmpi".into(),
                mpi_library: "test".into(),
                program_tag: String::new(),
                clock: "test".into(),
                start_ns: 0,
                empty_wrappers: false,
            },
            clocks: vec![ClockSync {
                phase: 0,
                local_ns: 0,
                offset_ns: 0,
                err_ns: 0,
                rtt_ns: 0,
            }],
            events,
            drops: 0,
            footer: Some(Footer {
                events: 0,
                drops: 0,
                pending_requests: 0,
                end_ns: 1_000_000,
            }),
            comms: Vec::new(),
            functions: Vec::new(),
            sites: Default::default(),
            neighbors: Vec::new(),
            neighbor_counts: Vec::new(),
        }
    }

    /// A collective (or nonblocking collective, `done` its completion) of `bytes` on `comm`
    /// with world root `root` (-1: none), entered at `t`.
    fn coll(call: Call, comm: u32, root: i32, bytes: u64, t: u64, done: Option<u64>) -> Event {
        let d = done.unwrap_or(t + 10);
        Event {
            call,
            fortran: false,
            any_source: false,
            persistent: false,
            partitioned: false,
            synchronous: false,
            peer: root,
            tag: -1,
            comm,
            bytes,
            post_enter: t,
            post_exit: t + 10,
            done_enter: d,
            done_exit: d + 10,
            thread: 0,
        }
    }

    fn run_of(n: u32, events: Vec<Vec<Event>>, comms: &[(u32, Vec<u32>)]) -> Run {
        let mut ranks: Vec<RankData> = events
            .into_iter()
            .enumerate()
            .map(|(r, e)| rank(r as u32, n, e))
            .collect();
        for rd in &mut ranks {
            rd.comms = comms
                .iter()
                .filter(|(_, m)| m.contains(&rd.header.rank))
                .map(|(id, m)| CommDef {
                    id: *id,
                    inter: false,
                    world: m.clone(),
                })
                .collect();
        }
        Run::new(PathBuf::new(), ranks)
    }

    /// The trace read back by predict: (its sends, per rank).
    fn sends_per_rank(text: &str) -> Vec<usize> {
        use commperf_predict::parse::{parse_str, ParseOptions, TraceFormat};
        let w = parse_str(text, "t", TraceFormat::Own, &ParseOptions::default())
            .unwrap_or_else(|e| panic!("{e}\n{text}"));
        (0..w.nranks())
            .map(|r| {
                w.rank_ops(r)
                    .filter(|&i| w.op(i).send_parts().is_some())
                    .count()
            })
            .collect()
    }

    /// The lines of rank `r`'s block, trimmed.
    fn block(text: &str, r: u32) -> Vec<String> {
        let head = format!("rank {r}");
        text.lines()
            .skip_while(|l| l.trim() != head)
            .skip(1)
            .take_while(|l| !l.starts_with("rank "))
            .map(|l| l.trim().to_string())
            .filter(|l| !l.is_empty())
            .collect()
    }

    #[test]
    fn collectives_on_split_communicators_run_on_their_definitions() {
        // Four ranks split even/odd (communicator ids 0xa: world 0, 2 and 0xb: 1, 3): two
        // allreduces and a broadcast from communicator rank 1 on each half, a world scan, and
        // a barrier on a communicator the run does not know (0xc), on ranks 0 and 1.
        let mut evs = Vec::new();
        for r in 0..4u32 {
            let (c, other) = if r % 2 == 0 { (0xa, 2) } else { (0xb, 3) };
            let mut v = vec![
                coll(Call::Allreduce, c, -1, 64, 100, None),
                coll(Call::Allreduce, c, -1, 64, 200, None),
                coll(Call::Bcast, c, other, 16, 300, None),
                coll(Call::Scan, 0, -1, 8, 400, None),
            ];
            if r < 2 {
                v.push(coll(Call::Barrier, 0xc, -1, 0, 500, None));
            }
            evs.push(v);
        }
        let run = run_of(4, evs, &[(0xa, vec![0, 2]), (0xb, vec![1, 3])]);
        let out = to_trace(&run);
        let t = &out.text;
        assert!(t.contains("\nranks 4\ncomm ca 0 2\ncomm cb 1 3\n"), "{t}");
        let colls = |r: u32| -> Vec<String> {
            block(t, r)
                .into_iter()
                .filter(|l| !l.starts_with("compute"))
                .collect()
        };
        assert_eq!(
            colls(0),
            [
                "allreduce 64B on ca",
                "allreduce 64B on ca",
                "bcast root 1 16B on ca",
                "scan 8B"
            ]
        );
        assert_eq!(
            colls(3),
            [
                "allreduce 64B on cb",
                "allreduce 64B on cb",
                "bcast root 1 16B on cb",
                "scan 8B"
            ]
        );
        // predict reads it: per half two 2-rank allreduces (one exchange each) and a
        // broadcast from communicator rank 1 (world 2 and 3), then the world scan's chain
        // 0 -> 1 -> 2 -> 3.
        assert_eq!(sends_per_rank(t), [2 + 1, 2 + 1, 2 + 1 + 1, 2 + 1]);
        let st = &out.stats;
        assert_eq!(st.collectives, 1);
        assert_eq!(st.subcomm_collectives, 12);
        assert_eq!(st.communicators, 2);
        assert_eq!(st.nonblocking_collectives, 0);
        assert_eq!(st.subcomm_collectives_left_out, 2);
        assert_eq!(st.unsupported_left_out, 0);
        assert_eq!(st.misaligned_collectives_left_out, 0);
        assert!(
            st.describe().contains(
                "1 collectives per rank and 12 collective calls on 2 other communicators; left \
                 out 2 calls: 2 collective calls on communicators whose members the run does \
                 not know"
            ),
            "{}",
            st.describe()
        );
    }

    #[test]
    fn members_that_disagree_lose_only_their_communicators_tail() {
        // Rank 2 recorded one allreduce on 0xa fewer than rank 0: 0xa keeps one call, 0xb
        // (ranks 1 and 3) both.
        let mut evs = Vec::new();
        for r in 0..4u32 {
            let c = if r % 2 == 0 { 0xa } else { 0xb };
            let k = if r == 2 { 1 } else { 2 };
            evs.push(
                (0..k)
                    .map(|i| coll(Call::Allreduce, c, -1, 8, 100 * (i + 1), None))
                    .collect(),
            );
        }
        let run = run_of(4, evs, &[(0xa, vec![0, 2]), (0xb, vec![1, 3])]);
        let st = to_trace(&run).stats;
        assert_eq!(st.subcomm_collectives, 2 + 4);
        assert_eq!(st.misaligned_collectives_left_out, 1);
        assert_eq!(st.communicators, 2);
    }

    #[test]
    fn a_nonblocking_collective_is_started_then_waited_at_its_completion() {
        // Each of 2 ranks starts an MPI_Iallreduce at 100, computes, and completes it with
        // the Wait entered at 5000; then a blocking barrier.
        let evs = (0..2)
            .map(|_| {
                vec![
                    coll(Call::Iallreduce, 0, -1, 32, 100, Some(5_000)),
                    coll(Call::Barrier, 0, -1, 0, 6_000, None),
                ]
            })
            .collect();
        let run = run_of(2, evs, &[]);
        let out = to_trace(&run);
        let b = block(&out.text, 1);
        assert_eq!(
            b,
            [
                "compute 100ns",
                "iallreduce 32B as q0",
                "compute 4890ns",
                "wait q0",
                "compute 990ns",
                "barrier"
            ],
            "{}",
            out.text
        );
        assert_eq!(out.stats.collectives, 2);
        assert_eq!(out.stats.nonblocking_collectives, 2);
        // One exchange for the allreduce, one for the 2-rank barrier.
        assert_eq!(sends_per_rank(&out.text), [2, 2]);
        // The text is rendered from the replay, which says the same in data.
        let r = replay(&run);
        let calls = &r.rank_replays[1].calls;
        let got: Vec<(u64, u64, &CallKind, u64)> = calls
            .iter()
            .map(|c| (c.start, c.end, &c.kind, c.compute_before))
            .collect();
        assert_eq!(
            got,
            [
                (100, 110, &CallKind::Record(0), 100),
                (5_000, 5_010, &CallKind::Completion(vec![0]), 4_890),
                (6_000, 6_010, &CallKind::Record(1), 990),
            ]
        );
        assert_eq!(
            calls[0].ops,
            [ReplayOp::Collective(ReplayCollective {
                event: 0,
                op: "allreduce",
                root: None,
                bytes: 32,
                comm: 0,
                request: Some(0),
            })]
        );
        assert_eq!(calls[1].ops, [ReplayOp::Wait(vec![0])]);
        assert_eq!(r.rank_replays[1].last_ns, 6_010);
        assert_eq!(r.stats, out.stats);
    }

    #[test]
    fn one_waitall_joins_a_nonblocking_collective_and_a_message_and_intercomms_are_left_out() {
        // Ranks 0 and 1: MPI_Ibcast from root 1 on communicator 0xd (world 1, 0: so the root
        // is communicator rank 0), an Isend/Irecv pair, one MPI_Waitall completing all; then
        // an MPI_Barrier on an inter-communicator 0xe.
        let p2p = |call: Call, peer: i32| Event {
            call,
            fortran: false,
            any_source: false,
            persistent: false,
            partitioned: false,
            synchronous: false,
            peer,
            tag: 5,
            comm: 0,
            bytes: 100,
            post_enter: 200,
            post_exit: 210,
            done_enter: 1_000,
            done_exit: 1_010,
            thread: 0,
        };
        let mut evs = Vec::new();
        for r in 0..2i32 {
            let mut ib = coll(Call::Ibcast, 0xd, 1, 4096, 100, Some(1_000));
            // Rank 1's is a persistent broadcast's MPI_Start: a nonblocking call all the same.
            ib.persistent = r == 1;
            let call = if r == 0 { Call::Isend } else { Call::Irecv };
            evs.push(vec![
                ib,
                p2p(call, 1 - r),
                coll(Call::Barrier, 0xe, -1, 0, 2_000, None),
            ]);
        }
        let mut run_ranks = run_of(2, evs, &[(0xd, vec![1, 0])]).ranks;
        for rd in &mut run_ranks {
            rd.comms.push(CommDef {
                id: 0xe,
                inter: true,
                world: vec![1 - rd.header.rank],
            });
        }
        let run = Run::new(PathBuf::new(), run_ranks);
        let out = to_trace(&run);
        assert!(out.text.contains("\ncomm cd 1 0\n"), "{}", out.text);
        assert_eq!(
            block(&out.text, 0),
            [
                "compute 100ns",
                "ibcast root 0 4096B on cd as q0",
                "compute 90ns",
                "isend 1 100B tag 5 as q1",
                "compute 790ns",
                "waitall q0 q1",
                "compute 990ns"
            ],
            "{}",
            out.text
        );
        assert_eq!(sends_per_rank(&out.text), [1, 1]);
        let st = &out.stats;
        assert_eq!(
            (
                st.subcomm_collectives,
                st.communicators,
                st.nonblocking_collectives
            ),
            (2, 1, 2)
        );
        assert_eq!(st.intercomm_collectives_left_out, 2);
        assert!(
            st.describe()
                .contains("left out 2 calls: 2 collective calls on inter-communicators"),
            "{}",
            st.describe()
        );
    }

    #[test]
    fn one_sided_transfers_are_replayed_within_their_epochs() {
        // Two ranks, each on a window over both (group id 0x77): fence; MPI_Put 64 B to the
        // other; fence; lock(other); MPI_Fetch_and_op of 8 B (16 recorded, both ways);
        // unlock(other); post; start; MPI_Get 32 B; complete; wait. One call per 100 ns.
        let calls = [
            (Call::WinFence, false, 0),
            (Call::Put, true, 64),
            (Call::WinFence, false, 0),
            (Call::WinLock, true, 0),
            (Call::FetchAndOp, true, 16),
            (Call::WinUnlock, true, 0),
            (Call::WinPost, false, 0),
            (Call::WinStart, false, 0),
            (Call::Get, true, 32),
            (Call::WinComplete, false, 0),
            (Call::WinWait, false, 0),
        ];
        let evs = (0..2)
            .map(|r| {
                calls
                    .iter()
                    .enumerate()
                    .map(|(k, &(call, peer, bytes))| {
                        let peer = if peer { 1 - r } else { -1 };
                        coll(call, 0x77, peer, bytes, 100 * (k as u64 + 1), None)
                    })
                    .collect()
            })
            .collect();
        let run = run_of(2, evs, &[(0x77, vec![0, 1])]);
        let out = to_trace(&run);
        let ops: Vec<String> = block(&out.text, 0)
            .into_iter()
            .filter(|l| !l.starts_with("compute"))
            .collect();
        assert_eq!(
            ops,
            [
                "barrier on c77",
                "put 1 64B as q1",
                "wait q1",
                "barrier on c77",
                "fetch 1 8B as q4",
                "wait q4",
                "send 1 0B tag 0",
                "recv 1 0B tag 0",
                "get 1 32B as q8",
                "wait q8",
                "send 1 0B tag 1",
                "recv 1 0B tag 1",
            ],
            "{}",
            out.text
        );
        // predict reads it: per rank the two fences' barrier exchanges and the two epoch
        // messages are its sends.
        assert_eq!(sends_per_rank(&out.text), [2 + 2, 2 + 2]);
        let st = &out.stats;
        assert_eq!((st.one_sided, st.one_sided_left_out), (6, 0));
        assert_eq!((st.epoch_messages, st.epoch_syncs_left_out), (4, 0));
        assert_eq!((st.subcomm_collectives, st.communicators), (4, 1));
        assert!(
            st.describe().contains(
                "6 one-sided transfers (4 empty messages for post/start/complete/wait); \
                 nothing left out"
            ),
            "{}",
            st.describe()
        );

        // Rank 0 starts a second access epoch to rank 1, which posts once: the two do not
        // pair up, so neither of rank 0's epochs is synchronised; the transfers stay.
        let mut evs: Vec<Vec<Event>> = (0..2)
            .map(|r| {
                calls
                    .iter()
                    .enumerate()
                    .map(|(k, &(call, peer, bytes))| {
                        let peer = if peer { 1 - r } else { -1 };
                        coll(call, 0x77, peer, bytes, 100 * (k as u64 + 1), None)
                    })
                    .collect()
            })
            .collect();
        evs[0].push(coll(Call::WinStart, 0x77, -1, 0, 2_000, None));
        evs[0].push(coll(Call::Put, 0x77, 1, 8, 2_100, None));
        evs[0].push(coll(Call::WinComplete, 0x77, -1, 0, 2_200, None));
        let out = to_trace(&Run::new(
            PathBuf::new(),
            run_of(2, evs, &[(0x77, vec![0, 1])]).ranks,
        ));
        let st = &out.stats;
        assert_eq!((st.one_sided, st.epoch_syncs_left_out), (7, 2));
        // Rank 1's epoch with rank 0 still pairs: one exposure of rank 0, one access of 1.
        assert_eq!(st.epoch_messages, 2);
        assert!(out.stats.describe().contains(
            "left out 2 calls: 2 synchronisations of MPI_Win_start/complete epochs with \
             MPI_Win_post/wait epochs that do not pair up"
        ));
        // The barriers' sends, and rank 0's post to rank 1 and rank 1's complete to rank 0.
        assert_eq!(sends_per_rank(&out.text), [2 + 1, 2 + 1]);
    }

    #[test]
    fn synchronous_sends_and_neighbourhood_collectives_are_written_as_what_they_do() {
        // Three ranks on a periodic ring (communicator 0xf, every rank's in- and out-neighbours
        // left then right, as MPI_Cart_shift gives them). Rank 0 MPI_Ssends 8 B to rank 1 and
        // MPI_Issends it 16 B; then every rank runs an MPI_Neighbor_alltoall of 4 B per
        // neighbour, an MPI_Ineighbor_allgather of 8 B completed by a Wait at 900, an
        // MPI_Neighbor_alltoallv whose sizes per neighbour were not recorded (left out, as in
        // a file before format version 5), and one whose sizes were: rank r sends its left
        // neighbour 4(r+1) B and its right one 100 + r B.
        let p2p = |call: Call, peer: i32, bytes: u64, t: u64| Event {
            call,
            fortran: false,
            any_source: false,
            persistent: false,
            partitioned: false,
            synchronous: false,
            peer,
            tag: 2,
            comm: 0,
            bytes,
            post_enter: t,
            post_exit: t + 10,
            done_enter: if call.is_nonblocking() { t + 50 } else { t },
            done_exit: if call.is_nonblocking() {
                t + 60
            } else {
                t + 10
            },
            thread: 0,
        };
        let nbr = |call: Call, bytes: u64, t: u64, done: Option<u64>| Event {
            tag: 0,
            ..coll(call, 0xf, -1, bytes, t, done)
        };
        let mut evs = Vec::new();
        for r in 0..3u32 {
            let mut v = match r {
                0 => vec![p2p(Call::Ssend, 1, 8, 100), p2p(Call::Issend, 1, 16, 200)],
                1 => vec![p2p(Call::Recv, 0, 8, 100), p2p(Call::Recv, 0, 16, 200)],
                _ => Vec::new(),
            };
            v.push(nbr(Call::NeighborAlltoall, 2 * 4, 500, None));
            v.push(nbr(Call::IneighborAllgather, 2 * 8, 600, Some(900)));
            v.push(nbr(Call::NeighborAlltoallv, 2 * 4, 1_000, None));
            let sized = u64::from(4 * (r + 1) + 100 + r);
            v.push(Event {
                peer: 0,
                ..nbr(Call::NeighborAlltoallv, sized, 1_200, None)
            });
            evs.push(v);
        }
        let mut ranks = run_of(3, evs, &[(0xf, vec![0, 1, 2])]).ranks;
        for rd in &mut ranks {
            let me = rd.header.rank;
            let ring = vec![Some((me + 2) % 3), Some((me + 1) % 3)];
            rd.neighbors = vec![NeighborDef {
                id: 0xf,
                index: 0,
                sources: ring.clone(),
                destinations: ring,
            }];
            rd.neighbor_counts = vec![NeighborCounts {
                index: 0,
                sends: vec![u64::from(4 * (me + 1)), u64::from(100 + me)],
                recvs: vec![
                    u64::from(100 + (me + 2) % 3),
                    u64::from(4 * ((me + 1) % 3 + 1)),
                ],
            }];
        }
        let run = Run::new(PathBuf::new(), ranks);
        let out = to_trace(&run);
        // Rank 1: the two receives (their tag the world's 2), then per neighbourhood call an
        // irecv from each neighbour and an isend to each, tag 3 (above the world's), requests
        // numbered past the rank's 6 records; the allgather's joined at its Wait.
        assert_eq!(
            block(&out.text, 1),
            [
                "compute 100ns",
                "recv 0 8B tag 2",
                "compute 90ns",
                "recv 0 16B tag 2",
                "compute 290ns",
                "irecv 0 4B tag 3 as q6",
                "irecv 2 4B tag 3 as q7",
                "isend 0 4B tag 3 as q8",
                "isend 2 4B tag 3 as q9",
                "waitall q6 q7 q8 q9",
                "compute 90ns",
                "irecv 0 8B tag 3 as q10",
                "irecv 2 8B tag 3 as q11",
                "isend 0 8B tag 3 as q12",
                "isend 2 8B tag 3 as q13",
                "compute 290ns",
                "waitall q10 q11 q12 q13",
                "compute 90ns",
                "compute 190ns",
                // Rank 0 sends its right neighbour (1) 100 B, rank 2 its left one (1) 12 B;
                // rank 1 sends 8 B left and 101 B right.
                "irecv 0 100B tag 3 as q14",
                "irecv 2 12B tag 3 as q15",
                "isend 0 8B tag 3 as q16",
                "isend 2 101B tag 3 as q17",
                "waitall q14 q15 q16 q17",
            ],
            "{}",
            out.text
        );
        let b0 = block(&out.text, 0);
        assert_eq!(b0[1], "ssend 1 8B tag 2", "{}", out.text);
        assert_eq!(b0[3], "issend 1 16B tag 2 as q1", "{}", out.text);
        assert_eq!(b0[5], "wait q1", "{}", out.text);
        // predict reads it: rank 0's 2 synchronous sends, and 2 x 2 sends of each rank's
        // neighbourhood calls.
        assert_eq!(sends_per_rank(&out.text), [2 + 6, 6, 6]);
        let st = &out.stats;
        assert_eq!(st.messages, 2);
        assert_eq!(st.neighbor_collectives, 9);
        assert_eq!(st.neighbor_messages, 18);
        assert_eq!(st.unsupported_left_out, 3);
        assert_eq!(st.nonblocking_collectives, 0);
        assert_eq!((st.collectives, st.communicators), (0, 0));
        assert!(
            st.describe().contains(
                "9 neighbourhood collective calls as 18 messages; left out 3 calls: 3 \
                 MPI_Neighbor_alltoallv/w calls (each neighbour's size was not recorded)"
            ),
            "{}",
            st.describe()
        );
        // Without rank 2's lists its 3 calls cannot be replayed, and then neither can the
        // others' 6, which are no longer recorded alike on every member: all left out, counted.
        let mut ranks = run.ranks.clone();
        ranks[2].neighbors.clear();
        let st = replay(&Run::new(PathBuf::new(), ranks)).stats;
        assert_eq!((st.neighbor_collectives, st.neighbor_messages), (0, 0));
        assert_eq!(st.neighbor_lists_left_out, 3);
        assert_eq!(st.misaligned_collectives_left_out, 6);
        // Sizes not one per neighbour slot (rank 2's list of one): that call is not replayed,
        // on any member.
        let mut ranks = run.ranks.clone();
        ranks[2].neighbor_counts[0].sends.pop();
        let st = replay(&Run::new(PathBuf::new(), ranks)).stats;
        assert_eq!(st.neighbor_collectives, 6);
        assert_eq!(st.neighbor_lists_left_out, 3);
        // Lists that do not pair up (rank 2 says it sends to itself, not to rank 0): the
        // calls are aligned but not replayed.
        let mut ranks = run.ranks.clone();
        ranks[2].neighbors[0].destinations[1] = Some(2);
        let st = replay(&Run::new(PathBuf::new(), ranks)).stats;
        assert_eq!(st.neighbor_collectives, 0);
        assert_eq!(st.neighbor_lists_left_out, 9);
        assert_eq!(st.misaligned_collectives_left_out, 0);
    }

    #[test]
    fn neighbourhood_messages_and_one_sided_epochs_keep_their_tags_and_requests_apart() {
        // Two ranks on a topology communicator that is also their window (0x5, each the other's
        // only neighbour): MPI_Ineighbor_allgather of 8 B; MPI_Win_post; MPI_Win_start;
        // MPI_Rput 16 B to the other; one MPI_Waitall (at 450) completing the allgather and
        // the Rput; MPI_Win_complete; MPI_Win_wait.
        let evs = (0..2i32)
            .map(|r| {
                vec![
                    Event {
                        tag: 0,
                        ..coll(Call::IneighborAllgather, 0x5, -1, 8, 100, Some(450))
                    },
                    coll(Call::WinPost, 0x5, -1, 0, 200, None),
                    coll(Call::WinStart, 0x5, -1, 0, 300, None),
                    coll(Call::Rput, 0x5, 1 - r, 16, 400, Some(450)),
                    coll(Call::WinComplete, 0x5, -1, 0, 500, None),
                    coll(Call::WinWait, 0x5, -1, 0, 600, None),
                ]
            })
            .collect();
        let mut ranks = run_of(2, evs, &[(0x5, vec![0, 1])]).ranks;
        for rd in &mut ranks {
            let other = vec![Some(1 - rd.header.rank)];
            rd.neighbors = vec![NeighborDef {
                id: 0x5,
                index: 0,
                sources: other.clone(),
                destinations: other,
            }];
        }
        let out = to_trace(&Run::new(PathBuf::new(), ranks));
        let ops: Vec<String> = block(&out.text, 0)
            .into_iter()
            .filter(|l| !l.starts_with("compute"))
            .collect();
        // No point-to-point stream: the topology communicator's messages take tag 0, the
        // post/start and complete/wait messages 1 and 2. The neighbourhood requests are
        // numbered past the rank's 6 records, and the Waitall joins them with the Rput's.
        assert_eq!(
            ops,
            [
                "irecv 1 8B tag 0 as q6",
                "isend 1 8B tag 0 as q7",
                "send 1 0B tag 1",
                "recv 1 0B tag 1",
                "put 1 16B as q3",
                "waitall q6 q7 q3",
                "send 1 0B tag 2",
                "recv 1 0B tag 2",
            ],
            "{}",
            out.text
        );
        let st = &out.stats;
        assert_eq!((st.neighbor_collectives, st.neighbor_messages), (2, 2));
        assert_eq!((st.one_sided, st.epoch_messages), (2, 4));
        assert_eq!(st.left_out(), 0, "{}", st.describe());
        // predict reads it: per rank the neighbourhood isend and the two epoch messages.
        assert_eq!(sends_per_rank(&out.text), [3, 3]);
    }
}
