//! Reading a monitor directory back, matching sends to receives, and the per-message stages.

use crate::format::{
    self, CallStat, ClockSync, CommDef, Footer, Header, NeighborCounts, NeighborDef, Sites,
    EVENT_BYTES, MAGIC,
};
use crate::sites::{call_sites, CallSite};
use serde::Serialize;
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

/// The MPI call an event came from.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, schemars::JsonSchema,
)]
pub enum Call {
    Send,
    Ssend,
    Bsend,
    Rsend,
    Isend,
    Issend,
    Ibsend,
    Irsend,
    Recv,
    Irecv,
    /// The send half of MPI_Sendrecv(_replace).
    SendrecvSend,
    /// The receive half of MPI_Sendrecv(_replace).
    SendrecvRecv,
    /// MPI_Start(all) of a persistent send (MPI_Send_init and its Ssend/Bsend/Rsend variants).
    StartSend,
    /// MPI_Start(all) of a persistent receive (MPI_Recv_init), completed by the Wait/Test family.
    StartRecv,
    Probe,
    Iprobe,
    Barrier,
    Bcast,
    Reduce,
    Allreduce,
    Gather,
    Gatherv,
    Scatter,
    Scatterv,
    Allgather,
    Allgatherv,
    Alltoall,
    Alltoallv,
    ReduceScatter,
    ReduceScatterBlock,
    Scan,
    Exscan,
    Alltoallw,
    Pcontrol,
    /// MPI_Mprobe / MPI_Improbe (a matched probe: the message is then received by Mrecv).
    Mprobe,
    Improbe,
    /// MPI_Mrecv / MPI_Imrecv: receives of a probed message (matched like any receive).
    Mrecv,
    Imrecv,
    /// The send and receive halves of MPI-4's MPI_Isendrecv(_replace), completed by one request.
    IsendrecvSend,
    IsendrecvRecv,
    /// Nonblocking collectives (and persistent ones, `Event::persistent`): from the starting
    /// call (post times) to the call that completed the request (done times).
    Ibarrier,
    Ibcast,
    Ireduce,
    Iallreduce,
    Igather,
    Igatherv,
    Iscatter,
    Iscatterv,
    Iallgather,
    Iallgatherv,
    Ialltoall,
    Ialltoallv,
    IreduceScatter,
    IreduceScatterBlock,
    Iscan,
    Iexscan,
    Ialltoallw,
    NeighborAllgather,
    NeighborAllgatherv,
    NeighborAlltoall,
    NeighborAlltoallv,
    NeighborAlltoallw,
    IneighborAllgather,
    IneighborAllgatherv,
    IneighborAlltoall,
    IneighborAlltoallv,
    IneighborAlltoallw,
    /// One-sided transfers: `peer` is the target's world rank, `comm` the window's group, `bytes`
    /// the origin buffer's (sent plus, for the fetching ones, received).
    Put,
    Get,
    Accumulate,
    GetAccumulate,
    FetchAndOp,
    CompareAndSwap,
    Rput,
    Rget,
    Raccumulate,
    RgetAccumulate,
    /// One-sided synchronisation: `peer` the rank it names (lock, unlock, flush), else -1;
    /// `tag` the lock type (lock) or the assertion (fence, lock_all, post, start).
    WinFence,
    WinLock,
    WinUnlock,
    WinLockAll,
    WinUnlockAll,
    WinPost,
    WinStart,
    WinComplete,
    WinWait,
    WinTest,
    WinFlush,
    WinFlushAll,
    WinFlushLocal,
    WinFlushLocalAll,
    WinSync,
}

impl Call {
    /// From the on-disk kind byte (csrc/shim.c's `K_*`).
    pub fn from_kind(k: u8) -> Option<Call> {
        use Call::*;
        Some(match k {
            1 => Send,
            2 => Ssend,
            3 => Bsend,
            4 => Rsend,
            5 => Isend,
            6 => Issend,
            7 => Ibsend,
            8 => Irsend,
            10 => Recv,
            11 => Irecv,
            12 => SendrecvSend,
            13 => SendrecvRecv,
            14 => StartSend,
            15 => StartRecv,
            20 => Probe,
            21 => Iprobe,
            30 => Barrier,
            31 => Bcast,
            32 => Reduce,
            33 => Allreduce,
            34 => Gather,
            35 => Gatherv,
            36 => Scatter,
            37 => Scatterv,
            38 => Allgather,
            39 => Allgatherv,
            40 => Alltoall,
            41 => Alltoallv,
            42 => ReduceScatter,
            43 => ReduceScatterBlock,
            44 => Scan,
            45 => Exscan,
            46 => Alltoallw,
            60 => Pcontrol,
            16 => Mrecv,
            17 => Imrecv,
            18 => IsendrecvSend,
            19 => IsendrecvRecv,
            22 => Mprobe,
            23 => Improbe,
            70 => Ibarrier,
            71 => Ibcast,
            72 => Ireduce,
            73 => Iallreduce,
            74 => Igather,
            75 => Igatherv,
            76 => Iscatter,
            77 => Iscatterv,
            78 => Iallgather,
            79 => Iallgatherv,
            80 => Ialltoall,
            81 => Ialltoallv,
            82 => IreduceScatter,
            83 => IreduceScatterBlock,
            84 => Iscan,
            85 => Iexscan,
            86 => Ialltoallw,
            90 => NeighborAllgather,
            91 => NeighborAllgatherv,
            92 => NeighborAlltoall,
            93 => NeighborAlltoallv,
            94 => NeighborAlltoallw,
            95 => IneighborAllgather,
            96 => IneighborAllgatherv,
            97 => IneighborAlltoall,
            98 => IneighborAlltoallv,
            99 => IneighborAlltoallw,
            100 => Put,
            101 => Get,
            102 => Accumulate,
            103 => GetAccumulate,
            104 => FetchAndOp,
            105 => CompareAndSwap,
            106 => Rput,
            107 => Rget,
            108 => Raccumulate,
            109 => RgetAccumulate,
            120 => WinFence,
            121 => WinLock,
            122 => WinUnlock,
            123 => WinLockAll,
            124 => WinUnlockAll,
            125 => WinPost,
            126 => WinStart,
            127 => WinComplete,
            128 => WinWait,
            129 => WinTest,
            130 => WinFlush,
            131 => WinFlushAll,
            132 => WinFlushLocal,
            133 => WinFlushLocalAll,
            134 => WinSync,
            _ => return None,
        })
    }

    /// The MPI name (`MPI_Isend`; the halves of MPI_Sendrecv are `MPI_Sendrecv(send)` and
    /// `MPI_Sendrecv(recv)`).
    pub fn name(self) -> &'static str {
        use Call::*;
        match self {
            Send => "MPI_Send",
            Ssend => "MPI_Ssend",
            Bsend => "MPI_Bsend",
            Rsend => "MPI_Rsend",
            Isend => "MPI_Isend",
            Issend => "MPI_Issend",
            Ibsend => "MPI_Ibsend",
            Irsend => "MPI_Irsend",
            Recv => "MPI_Recv",
            Irecv => "MPI_Irecv",
            SendrecvSend => "MPI_Sendrecv(send)",
            SendrecvRecv => "MPI_Sendrecv(recv)",
            StartSend => "MPI_Start(send)",
            StartRecv => "MPI_Start(recv)",
            Probe => "MPI_Probe",
            Iprobe => "MPI_Iprobe",
            Barrier => "MPI_Barrier",
            Bcast => "MPI_Bcast",
            Reduce => "MPI_Reduce",
            Allreduce => "MPI_Allreduce",
            Gather => "MPI_Gather",
            Gatherv => "MPI_Gatherv",
            Scatter => "MPI_Scatter",
            Scatterv => "MPI_Scatterv",
            Allgather => "MPI_Allgather",
            Allgatherv => "MPI_Allgatherv",
            Alltoall => "MPI_Alltoall",
            Alltoallv => "MPI_Alltoallv",
            ReduceScatter => "MPI_Reduce_scatter",
            ReduceScatterBlock => "MPI_Reduce_scatter_block",
            Scan => "MPI_Scan",
            Exscan => "MPI_Exscan",
            Alltoallw => "MPI_Alltoallw",
            Pcontrol => "MPI_Pcontrol",
            Mprobe => "MPI_Mprobe",
            Improbe => "MPI_Improbe",
            Mrecv => "MPI_Mrecv",
            Imrecv => "MPI_Imrecv",
            IsendrecvSend => "MPI_Isendrecv(send)",
            IsendrecvRecv => "MPI_Isendrecv(recv)",
            Ibarrier => "MPI_Ibarrier",
            Ibcast => "MPI_Ibcast",
            Ireduce => "MPI_Ireduce",
            Iallreduce => "MPI_Iallreduce",
            Igather => "MPI_Igather",
            Igatherv => "MPI_Igatherv",
            Iscatter => "MPI_Iscatter",
            Iscatterv => "MPI_Iscatterv",
            Iallgather => "MPI_Iallgather",
            Iallgatherv => "MPI_Iallgatherv",
            Ialltoall => "MPI_Ialltoall",
            Ialltoallv => "MPI_Ialltoallv",
            IreduceScatter => "MPI_Ireduce_scatter",
            IreduceScatterBlock => "MPI_Ireduce_scatter_block",
            Iscan => "MPI_Iscan",
            Iexscan => "MPI_Iexscan",
            Ialltoallw => "MPI_Ialltoallw",
            NeighborAllgather => "MPI_Neighbor_allgather",
            NeighborAllgatherv => "MPI_Neighbor_allgatherv",
            NeighborAlltoall => "MPI_Neighbor_alltoall",
            NeighborAlltoallv => "MPI_Neighbor_alltoallv",
            NeighborAlltoallw => "MPI_Neighbor_alltoallw",
            IneighborAllgather => "MPI_Ineighbor_allgather",
            IneighborAllgatherv => "MPI_Ineighbor_allgatherv",
            IneighborAlltoall => "MPI_Ineighbor_alltoall",
            IneighborAlltoallv => "MPI_Ineighbor_alltoallv",
            IneighborAlltoallw => "MPI_Ineighbor_alltoallw",
            Put => "MPI_Put",
            Get => "MPI_Get",
            Accumulate => "MPI_Accumulate",
            GetAccumulate => "MPI_Get_accumulate",
            FetchAndOp => "MPI_Fetch_and_op",
            CompareAndSwap => "MPI_Compare_and_swap",
            Rput => "MPI_Rput",
            Rget => "MPI_Rget",
            Raccumulate => "MPI_Raccumulate",
            RgetAccumulate => "MPI_Rget_accumulate",
            WinFence => "MPI_Win_fence",
            WinLock => "MPI_Win_lock",
            WinUnlock => "MPI_Win_unlock",
            WinLockAll => "MPI_Win_lock_all",
            WinUnlockAll => "MPI_Win_unlock_all",
            WinPost => "MPI_Win_post",
            WinStart => "MPI_Win_start",
            WinComplete => "MPI_Win_complete",
            WinWait => "MPI_Win_wait",
            WinTest => "MPI_Win_test",
            WinFlush => "MPI_Win_flush",
            WinFlushAll => "MPI_Win_flush_all",
            WinFlushLocal => "MPI_Win_flush_local",
            WinFlushLocalAll => "MPI_Win_flush_local_all",
            WinSync => "MPI_Win_sync",
        }
    }

    /// The name of a persistent collective's start (`MPI_Start(MPI_Allreduce_init)`): events
    /// with `Event::persistent` carry the nonblocking kind of the collective they start.
    pub fn persistent_name(self) -> &'static str {
        use Call::*;
        match self.blocking_form() {
            Barrier => "MPI_Start(MPI_Barrier_init)",
            Bcast => "MPI_Start(MPI_Bcast_init)",
            Reduce => "MPI_Start(MPI_Reduce_init)",
            Allreduce => "MPI_Start(MPI_Allreduce_init)",
            Gather => "MPI_Start(MPI_Gather_init)",
            Scatter => "MPI_Start(MPI_Scatter_init)",
            Allgather => "MPI_Start(MPI_Allgather_init)",
            Alltoall => "MPI_Start(MPI_Alltoall_init)",
            ReduceScatterBlock => "MPI_Start(MPI_Reduce_scatter_block_init)",
            Scan => "MPI_Start(MPI_Scan_init)",
            Exscan => "MPI_Start(MPI_Exscan_init)",
            Gatherv => "MPI_Start(MPI_Gatherv_init)",
            Scatterv => "MPI_Start(MPI_Scatterv_init)",
            Allgatherv => "MPI_Start(MPI_Allgatherv_init)",
            Alltoallv => "MPI_Start(MPI_Alltoallv_init)",
            Alltoallw => "MPI_Start(MPI_Alltoallw_init)",
            ReduceScatter => "MPI_Start(MPI_Reduce_scatter_init)",
            _ => "MPI_Start(collective)",
        }
    }

    /// A point-to-point send (one message to `peer`).
    pub fn is_send(self) -> bool {
        use Call::*;
        matches!(
            self,
            Send | Ssend
                | Bsend
                | Rsend
                | Isend
                | Issend
                | Ibsend
                | Irsend
                | SendrecvSend
                | StartSend
                | IsendrecvSend
        )
    }

    /// A synchronous send (MPI_Ssend, MPI_Issend): it completes only once the matching receive
    /// has started. (A persistent MPI_Ssend_init's start is recorded as [`Call::StartSend`],
    /// like the other modes', flagged: [`Event::is_sync_send`] tells it apart.)
    pub fn is_sync_send(self) -> bool {
        matches!(self, Call::Ssend | Call::Issend)
    }

    /// A completed point-to-point receive (one message from `peer`).
    pub fn is_recv(self) -> bool {
        matches!(
            self,
            Call::Recv
                | Call::Irecv
                | Call::SendrecvRecv
                | Call::StartRecv
                | Call::Mrecv
                | Call::Imrecv
                | Call::IsendrecvRecv
        )
    }

    /// A collective (blocking, nonblocking, persistent or neighbourhood): recorded as its own
    /// type, never matched.
    pub fn is_collective(self) -> bool {
        use Call::*;
        matches!(
            self,
            Barrier
                | Bcast
                | Reduce
                | Allreduce
                | Gather
                | Gatherv
                | Scatter
                | Scatterv
                | Allgather
                | Allgatherv
                | Alltoall
                | Alltoallv
                | Alltoallw
                | ReduceScatter
                | ReduceScatterBlock
                | Scan
                | Exscan
        ) || self.is_nonblocking_collective()
            || self.is_neighborhood()
    }

    /// A nonblocking (or persistent) collective, completed by a Wait/Test-family call.
    pub fn is_nonblocking_collective(self) -> bool {
        self.blocking_form() != self
    }

    /// The blocking collective a nonblocking one starts (`Iallreduce` → `Allreduce`,
    /// `IneighborAlltoall` → `NeighborAlltoall`); every other call is its own.
    pub fn blocking_form(self) -> Call {
        use Call::*;
        match self {
            Ibarrier => Barrier,
            Ibcast => Bcast,
            Ireduce => Reduce,
            Iallreduce => Allreduce,
            Igather => Gather,
            Igatherv => Gatherv,
            Iscatter => Scatter,
            Iscatterv => Scatterv,
            Iallgather => Allgather,
            Iallgatherv => Allgatherv,
            Ialltoall => Alltoall,
            Ialltoallv => Alltoallv,
            Ialltoallw => Alltoallw,
            IreduceScatter => ReduceScatter,
            IreduceScatterBlock => ReduceScatterBlock,
            Iscan => Scan,
            Iexscan => Exscan,
            IneighborAllgather => NeighborAllgather,
            IneighborAllgatherv => NeighborAllgatherv,
            IneighborAlltoall => NeighborAlltoall,
            IneighborAlltoallv => NeighborAlltoallv,
            IneighborAlltoallw => NeighborAlltoallw,
            c => c,
        }
    }

    /// A neighbourhood collective (over a process topology's neighbours).
    pub fn is_neighborhood(self) -> bool {
        use Call::*;
        matches!(
            self.blocking_form(),
            NeighborAllgather
                | NeighborAllgatherv
                | NeighborAlltoall
                | NeighborAlltoallv
                | NeighborAlltoallw
        )
    }

    /// A one-sided transfer (to `peer`, the target's world rank).
    pub fn is_rma(self) -> bool {
        use Call::*;
        matches!(
            self,
            Put | Get
                | Accumulate
                | GetAccumulate
                | FetchAndOp
                | CompareAndSwap
                | Rput
                | Rget
                | Raccumulate
                | RgetAccumulate
        )
    }

    /// A one-sided synchronisation call (fence, lock/unlock, post/start/complete/wait, flush).
    pub fn is_rma_sync(self) -> bool {
        use Call::*;
        matches!(
            self,
            WinFence
                | WinLock
                | WinUnlock
                | WinLockAll
                | WinUnlockAll
                | WinPost
                | WinStart
                | WinComplete
                | WinWait
                | WinTest
                | WinFlush
                | WinFlushAll
                | WinFlushLocal
                | WinFlushLocalAll
                | WinSync
        )
    }

    /// A probe (no message moved).
    pub fn is_probe(self) -> bool {
        matches!(
            self,
            Call::Probe | Call::Iprobe | Call::Mprobe | Call::Improbe
        )
    }

    /// Posted by one call and completed by another (the Wait/Test family): its done times are
    /// the completing call's.
    pub fn is_nonblocking(self) -> bool {
        use Call::*;
        matches!(
            self,
            Isend
                | Issend
                | Ibsend
                | Irsend
                | Irecv
                | StartSend
                | StartRecv
                | Imrecv
                | IsendrecvSend
                | IsendrecvRecv
                | Rput
                | Rget
                | Raccumulate
                | RgetAccumulate
        ) || self.is_nonblocking_collective()
    }
}

/// One recorded event (times on the rank's own clock, ns).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Event {
    pub call: Call,
    /// Called from Fortran.
    pub fortran: bool,
    /// A receive posted with MPI_ANY_SOURCE.
    pub any_source: bool,
    /// Started by MPI_Start(all) of a persistent collective (MPI-4 MPI_X_init).
    pub persistent: bool,
    /// A partitioned send or receive (MPI_Psend_init/Precv_init), all partitions one message.
    pub partitioned: bool,
    /// A persistent synchronous send's start (MPI_Ssend_init + MPI_Start, [`Call::StartSend`]):
    /// see [`Event::is_sync_send`].
    pub synchronous: bool,
    pub peer: i32,
    pub tag: i32,
    pub comm: u32,
    pub bytes: u64,
    pub post_enter: u64,
    pub post_exit: u64,
    pub done_enter: u64,
    pub done_exit: u64,
    pub thread: u32,
}

impl Event {
    /// A synchronous send: MPI_Ssend, MPI_Issend, or a start of a persistent MPI_Ssend_init
    /// (the interposer flags those; files before it recorded them as any persistent send).
    pub fn is_sync_send(&self) -> bool {
        self.call.is_sync_send() || (self.call == Call::StartSend && self.synchronous)
    }
}

/// Why a monitor directory or file could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("cannot read {}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{} is not a commperf monitor file (it does not start with the commperf-pmpi magic)", path.display())]
    NotMonitorFile { path: PathBuf },
    #[error("{}: format version {found}, but this commperf reads versions {:?}", path.display(), format::READ_VERSIONS)]
    Version { path: PathBuf, found: String },
    #[error("{} is truncated: the frame at byte {offset} runs past the end of the file", path.display())]
    Truncated { path: PathBuf, offset: u64 },
    #[error("{} is corrupt at byte {offset}: {what}", path.display())]
    Corrupt {
        path: PathBuf,
        offset: u64,
        what: String,
    },
    #[error("{} holds no monitor files (rank-N.cpmpi)", dir.display())]
    Empty { dir: PathBuf },
}

/// Everything one rank recorded.
#[derive(Debug, Clone)]
pub struct RankData {
    pub path: PathBuf,
    pub header: Header,
    pub clocks: Vec<ClockSync>,
    pub events: Vec<Event>,
    pub drops: u64,
    /// None: the rank never reached MPI_Finalize (crashed, killed or aborted).
    pub footer: Option<Footer>,
    /// The communicators (and windows' groups) this rank used, by id (format v3; empty before).
    pub comms: Vec<CommDef>,
    /// Every wrapped MPI function this rank called, counted and timed (format v3, written at
    /// MPI_Finalize: empty before, and for a rank cut short).
    pub functions: Vec<CallStat>,
    /// The calls per call site (format v3, written at MPI_Finalize).
    pub sites: Sites,
    /// This rank's neighbours in the process topologies it ran neighbourhood collectives on
    /// (format v4; empty before): a neighbourhood collective's `Event::tag` is the `index` of
    /// its lists.
    pub neighbors: Vec<NeighborDef>,
    /// The per-neighbour sizes of this rank's v/w neighbourhood all-to-alls (format v5; empty
    /// before): such a call's `Event::peer` is the `index` of its sizes.
    pub neighbor_counts: Vec<NeighborCounts>,
}

impl RankData {
    /// `t` (this rank's clock) on rank 0's clock: the offset measured at MPI_Init, moved
    /// linearly towards the one at MPI_Finalize (the drift), when both exist.
    pub fn to_global(&self, t: u64) -> f64 {
        let init = self.clocks.iter().find(|c| c.phase == 0);
        let fin = self.clocks.iter().find(|c| c.phase == 1);
        let off = match (init, fin) {
            (Some(a), Some(b)) if b.local_ns > a.local_ns => {
                let f = (t as f64 - a.local_ns as f64) / (b.local_ns - a.local_ns) as f64;
                a.offset_ns as f64 + f * (b.offset_ns - a.offset_ns) as f64
            }
            (Some(a), _) => a.offset_ns as f64,
            _ => 0.0,
        };
        t as f64 + off
    }

    /// The clock's error bound for this rank (half the best round trip; 0 on rank 0).
    pub fn clock_error_ns(&self) -> i64 {
        self.clocks.iter().map(|c| c.err_ns).max().unwrap_or(0)
    }

    /// Change of the offset from MPI_Init to MPI_Finalize, per second of run (ns/s = ppb);
    /// 0 when the change is within the two measurements' error bounds (a short run on one clock
    /// would otherwise report its measurement noise as drift).
    pub fn drift_ppb(&self) -> Option<f64> {
        let a = self.clocks.iter().find(|c| c.phase == 0)?;
        let b = self.clocks.iter().find(|c| c.phase == 1)?;
        let dt = b.local_ns.checked_sub(a.local_ns)? as f64;
        let change = (b.offset_ns - a.offset_ns) as f64;
        if change.abs() <= (a.err_ns + b.err_ns) as f64 {
            return Some(0.0);
        }
        (dt > 0.0).then(|| change / dt * 1e9)
    }
}

/// A monitor directory: one `RankData` per rank file found.
#[derive(Debug, Clone)]
pub struct Run {
    pub dir: PathBuf,
    pub ranks: Vec<RankData>,
    /// Communicator id -> members (None: ranks disagree), from `index_comms`.
    groups: BTreeMap<u32, Option<Vec<u32>>>,
    world: Option<Vec<u32>>,
}

impl Run {
    /// A run of these ranks' data, its communicator table indexed.
    pub fn new(dir: PathBuf, ranks: Vec<RankData>) -> Run {
        let mut r = Run {
            dir,
            ranks,
            groups: BTreeMap::new(),
            world: None,
        };
        r.index_comms();
        r
    }
}

impl Run {
    /// Ranks that never reached MPI_Finalize, or world ranks with no file at all.
    pub fn cut_short(&self) -> bool {
        !self.unfinished_ranks().is_empty() || !self.missing_ranks().is_empty()
    }

    pub fn unfinished_ranks(&self) -> Vec<u32> {
        self.ranks
            .iter()
            .filter(|r| r.footer.is_none())
            .map(|r| r.header.rank)
            .collect()
    }

    pub fn missing_ranks(&self) -> Vec<u32> {
        let size = self.ranks.iter().map(|r| r.header.size).max().unwrap_or(0);
        (0..size)
            .filter(|k| !self.ranks.iter().any(|r| r.header.rank == *k))
            .collect()
    }

    /// The data of world rank `r`, if its file was found.
    pub fn rank(&self, r: u32) -> Option<&RankData> {
        self.ranks.iter().find(|d| d.header.rank == r)
    }

    /// The members of communicator `id` (what events carry in `Event::comm`): world ranks in
    /// the communicator's rank order. MPI_COMM_WORLD (id 0) is every rank; None when no rank
    /// recorded the communicator's members (files written before format version 3), or when
    /// ranks disagree on them (two groups whose ids collide) — then nothing may be replayed on
    /// it. An inter-communicator's entry is its remote group's, as its rank arguments mean.
    pub fn comm_group(&self, id: u32) -> Option<&[u32]> {
        if id == 0 {
            return self.world.as_deref();
        }
        match self.groups.get(&id) {
            Some(Some(v)) => Some(v.as_slice()),
            _ => None,
        }
    }

    /// Whether communicator `id` is an inter-communicator (its collectives cannot be replayed).
    pub fn comm_is_inter(&self, id: u32) -> bool {
        self.ranks
            .iter()
            .flat_map(|r| &r.comms)
            .any(|c| c.id == id && c.inter)
    }

    /// Fills the communicator table from the ranks' `comms` (read_dir does this).
    pub fn index_comms(&mut self) {
        let n = self.ranks.iter().map(|r| r.header.size).max().unwrap_or(0);
        self.world = Some((0..n).collect());
        let mut groups: BTreeMap<u32, Option<Vec<u32>>> = BTreeMap::new();
        for c in self.ranks.iter().flat_map(|r| &r.comms) {
            match groups.get(&c.id) {
                None => {
                    groups.insert(c.id, Some(c.world.clone()));
                }
                Some(Some(v)) if *v != c.world => {
                    groups.insert(c.id, None);
                }
                _ => {}
            }
        }
        self.groups = groups;
    }
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}
fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

fn parse_event(b: &[u8]) -> Option<Event> {
    Some(Event {
        call: Call::from_kind(b[0])?,
        fortran: b[1] & 1 != 0,
        any_source: b[1] & 2 != 0,
        persistent: b[1] & 4 != 0,
        partitioned: b[1] & 8 != 0,
        synchronous: b[1] & 16 != 0,
        peer: u32_at(b, 4) as i32,
        tag: u32_at(b, 8) as i32,
        comm: u32_at(b, 12),
        bytes: u64_at(b, 16),
        post_enter: u64_at(b, 24),
        post_exit: u64_at(b, 32),
        done_enter: u64_at(b, 40),
        done_exit: u64_at(b, 48),
        thread: u64_at(b, 56) as u32,
    })
}

/// Reads one rank file. A file without a footer is valid (the rank was cut short); a partial
/// frame, a bad checksum or an unknown record is an error naming the file and the byte.
pub fn read_file(path: &Path) -> Result<RankData, ReadError> {
    let data = std::fs::read(path).map_err(|source| ReadError::Io {
        path: path.into(),
        source,
    })?;
    parse_file(path, &data)
}

/// [`read_file`] of bytes already in memory; `path` names the file in errors.
pub fn parse_file(path: &Path, data: &[u8]) -> Result<RankData, ReadError> {
    let corrupt = |offset: usize, what: String| ReadError::Corrupt {
        path: path.into(),
        offset: offset as u64,
        what,
    };
    if data.len() < MAGIC.len() || &data[..5] != b"CPMPI" {
        return Err(ReadError::NotMonitorFile { path: path.into() });
    }
    let Some(version) = format::READ_VERSIONS
        .into_iter()
        .find(|&v| format::magic(v).is_some_and(|m| data[..MAGIC.len()] == m[..]))
    else {
        return Err(ReadError::Version {
            path: path.into(),
            found: String::from_utf8_lossy(&data[6..8]).into_owned(),
        });
    };
    let mut at = MAGIC.len();
    let mut header: Option<Header> = None;
    let mut rd = RankData {
        path: path.into(),
        header: dummy_header(),
        clocks: Vec::new(),
        events: Vec::new(),
        drops: 0,
        footer: None,
        comms: Vec::new(),
        functions: Vec::new(),
        sites: Sites::default(),
        neighbors: Vec::new(),
        neighbor_counts: Vec::new(),
    };
    while at < data.len() {
        if data.len() - at < 8 {
            return Err(ReadError::Truncated {
                path: path.into(),
                offset: at as u64,
            });
        }
        let kind = u32_at(data, at);
        let len = u32_at(data, at + 4) as usize;
        let end = at + 8 + len + 8;
        if end > data.len() {
            return Err(ReadError::Truncated {
                path: path.into(),
                offset: at as u64,
            });
        }
        let payload = &data[at + 8..at + 8 + len];
        if format::checksum(version, payload) != u64_at(data, at + 8 + len) {
            return Err(corrupt(at, "checksum mismatch".into()));
        }
        if header.is_none() && kind != 1 {
            return Err(corrupt(at, "the first frame is not the header".into()));
        }
        let json_err = |e: serde_json::Error| corrupt(at, format!("bad JSON in frame {kind}: {e}"));
        match kind {
            1 => {
                let h: Header = serde_json::from_slice(payload).map_err(json_err)?;
                // The header repeats the version; a file whose two disagree is not one we
                // wrote.
                if h.version != version {
                    return Err(ReadError::Version {
                        path: path.into(),
                        found: format!("{} in the header of a v{version} file", h.version),
                    });
                }
                // A rank outside its own run would become a rank the trace cannot hold.
                if h.rank >= h.size {
                    return Err(corrupt(
                        at,
                        format!(
                            "the header's rank {} is not below its size {}",
                            h.rank, h.size
                        ),
                    ));
                }
                header = Some(h);
            }
            2 => {
                if len % EVENT_BYTES != 0 {
                    return Err(corrupt(
                        at,
                        format!("event frame of {len} bytes, not a multiple of {EVENT_BYTES}"),
                    ));
                }
                for (i, c) in payload.chunks_exact(EVENT_BYTES).enumerate() {
                    let e = parse_event(c).ok_or_else(|| {
                        corrupt(
                            at + 8 + i * EVENT_BYTES,
                            format!("unknown event kind {}", c[0]),
                        )
                    })?;
                    rd.events.push(e);
                }
            }
            3 => rd
                .clocks
                .push(serde_json::from_slice(payload).map_err(json_err)?),
            4 => rd.footer = Some(serde_json::from_slice(payload).map_err(json_err)?),
            5 => {
                let v: serde_json::Value = serde_json::from_slice(payload).map_err(json_err)?;
                rd.drops = v["drops"].as_u64().unwrap_or(rd.drops);
            }
            6 if version >= 3 => rd
                .comms
                .push(serde_json::from_slice(payload).map_err(json_err)?),
            7 if version >= 3 => {
                let v: Vec<CallStat> = serde_json::from_slice(payload).map_err(json_err)?;
                rd.functions.extend(v);
            }
            8 if version >= 3 => {
                let v: Sites = serde_json::from_slice(payload).map_err(json_err)?;
                rd.sites.overflow_calls = rd.sites.overflow_calls.saturating_add(v.overflow_calls);
                rd.sites.sites.extend(v.sites);
            }
            9 if version >= 4 => rd
                .neighbors
                .push(serde_json::from_slice(payload).map_err(json_err)?),
            10 if version >= 5 => rd
                .neighbor_counts
                .push(serde_json::from_slice(payload).map_err(json_err)?),
            k => return Err(corrupt(at, format!("unknown frame kind {k}"))),
        }
        at = end;
    }
    rd.header = header.ok_or_else(|| corrupt(at, "no header frame".into()))?;
    if let Some(f) = rd.footer {
        rd.drops = rd.drops.max(f.drops);
    }
    Ok(rd)
}

fn dummy_header() -> Header {
    Header {
        format: String::new(),
        version: 0,
        rank: 0,
        size: 0,
        pid: 0,
        host: String::new(),
        mpi_flavour: String::new(),
        mpi_library: String::new(),
        program_tag: String::new(),
        clock: String::new(),
        start_ns: 0,
        empty_wrappers: false,
    }
}

/// Whether `name` is a rank file's name (`rank-N.cpmpi`, the interposer's one file per rank).
fn is_rank_file(name: &str) -> bool {
    name.starts_with("rank-") && name.ends_with(".cpmpi")
}

/// Whether `dir` holds the per-rank files of a monitored MPI program.
pub fn holds_rank_files(dir: &Path) -> bool {
    std::fs::read_dir(dir).is_ok_and(|mut it| {
        it.any(|e| {
            e.ok()
                .is_some_and(|e| is_rank_file(&e.file_name().to_string_lossy()))
        })
    })
}

/// Removes an earlier run's rank files from a run directory: an earlier run's rank 7 must not
/// join a 4-rank run.
pub fn clear_rank_files(dir: &Path) -> std::io::Result<()> {
    for e in std::fs::read_dir(dir)?.flatten() {
        if is_rank_file(&e.file_name().to_string_lossy()) {
            std::fs::remove_file(e.path()).map_err(|err| {
                std::io::Error::new(
                    err.kind(),
                    format!("cannot remove {}: {err}", e.path().display()),
                )
            })?;
        }
    }
    Ok(())
}

/// Reads every `rank-N.cpmpi` in `dir`.
pub fn read_dir(dir: impl AsRef<Path>) -> Result<Run, ReadError> {
    let dir = dir.as_ref();
    let rd = std::fs::read_dir(dir).map_err(|source| ReadError::Io {
        path: dir.into(),
        source,
    })?;
    let mut paths: Vec<PathBuf> = rd
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(is_rank_file)
        })
        .collect();
    paths.sort();
    if paths.is_empty() {
        return Err(ReadError::Empty { dir: dir.into() });
    }
    let mut ranks = paths
        .iter()
        .map(|p| read_file(p))
        .collect::<Result<Vec<_>, _>>()?;
    ranks.sort_by_key(|r| r.header.rank);
    Ok(Run::new(dir.into(), ranks))
}

/// A send matched to its receive, with its stages (ns, on rank 0's clock). Definitions, with
/// S = the send call (enter, exit), R = the receive: posted at R_post (MPI_Recv/MPI_Irecv
/// entered), completed by a call entered at R_center and left at R_done (for MPI_Recv,
/// R_center = R_post), and ready = max(S_exit, R_post), the first moment the message had left the
/// send call and had a receive to go to:
///
/// - source = S_exit − S_enter: time inside the send call;
/// - destination = R_done − R_center if R_center ≥ ready, else 0: time inside the completing
///   receive call when the message could already be there (matching, copy, delivery);
/// - net = max(0, R_done − ready − destination): in flight, as far as software can see. When
///   the receiver comes late to complete (R_center > ready), the time it spent elsewhere is
///   in neither stage;
/// - late_sender = clamp(S_enter − R_post, 0, R_done − R_post): how long the posted receive
///   waited for the send to start.
///
/// For a rendezvous-size message the send returns only once the data is delivered, so the
/// transfer shows as source and net is near zero; for eager sizes the send returns at injection
/// and net carries the flight.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, schemars::JsonSchema)]
pub struct Message {
    pub src: u32,
    pub dst: u32,
    pub tag: i32,
    pub comm: u32,
    pub bytes: u64,
    pub send_call: Call,
    pub recv_call: Call,
    pub source_ns: f64,
    pub net_ns: f64,
    pub destination_ns: f64,
    pub late_sender_ns: f64,
    /// `net` before the clamp at 0: R_done − ready − destination. Negative only when the two
    /// ranks' clocks disagree by more than the flight time; what the all-pairs check compares
    /// (the clamp would hide exactly the clock error it looks for).
    pub net_signed_ns: f64,
}

/// The matching of a run.
#[derive(Debug, Clone, Default)]
pub struct Matching {
    pub messages: Vec<Message>,
    /// Sends with no receive recorded (the receiver was cut short, stopped by MPI_Pcontrol, or
    /// the receive never completed through a wrapped call).
    pub unmatched_sends: u64,
    pub unmatched_recvs: u64,
}

/// (source, destination, tag, communicator): one non-overtaking stream.
pub type Stream = (u32, u32, i32, u32);

/// A send event matched to its receive event, by index into each rank's `RankData::events`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EventPair {
    pub stream: Stream,
    pub send: usize,
    pub recv: usize,
}

/// The matching by event index (what [`match_messages`] computes stages from, and what the
/// trace writer needs to leave out the records whose partner is missing).
#[derive(Debug, Clone, Default)]
pub struct Pairing {
    /// Streams in ascending order, each in post order.
    pub pairs: Vec<EventPair>,
    pub unmatched_sends: u64,
    pub unmatched_recvs: u64,
}

/// Pairs sends with receives: per (source, destination, tag, communicator) MPI does not let
/// messages overtake, so the k-th send posted matches the k-th receive posted on that stream
/// (receives in post order, which is the order MPI matches them in, even when they complete in
/// another order). Exact without piggybacking, as long as each stream is posted from one thread.
/// Pairs whose sender or receiver has no file are not returned (but not counted as unmatched:
/// the other side's count says it).
pub fn pair_events(run: &Run) -> Pairing {
    let mut sends: HashMap<Stream, Vec<(u64, u32, usize)>> = HashMap::new();
    let mut recvs: HashMap<Stream, Vec<(u64, u32, usize)>> = HashMap::new();
    for rd in &run.ranks {
        let me = rd.header.rank;
        for (i, e) in rd.events.iter().enumerate() {
            if e.peer < 0 {
                continue;
            }
            if e.call.is_send() {
                sends
                    .entry((me, e.peer as u32, e.tag, e.comm))
                    .or_default()
                    .push((e.post_enter, e.thread, i));
            } else if e.call.is_recv() {
                recvs
                    .entry((e.peer as u32, me, e.tag, e.comm))
                    .or_default()
                    .push((e.post_enter, e.thread, i));
            }
        }
    }
    let mut m = Pairing::default();
    let mut keys: Vec<Stream> = sends.keys().chain(recvs.keys()).copied().collect();
    keys.sort_unstable();
    keys.dedup();
    for k in keys {
        let mut s = sends.remove(&k).unwrap_or_default();
        let mut r = recvs.remove(&k).unwrap_or_default();
        s.sort_unstable();
        r.sort_unstable();
        let n = s.len().min(r.len());
        m.unmatched_sends += (s.len() - n) as u64;
        m.unmatched_recvs += (r.len() - n) as u64;
        if run.rank(k.0).is_none() || run.rank(k.1).is_none() {
            continue;
        }
        m.pairs.extend((0..n).map(|i| EventPair {
            stream: k,
            send: s[i].2,
            recv: r[i].2,
        }));
    }
    m
}

/// Matches sends to receives ([`pair_events`]) and computes each message's stages.
pub fn match_messages(run: &Run) -> Matching {
    let p = pair_events(run);
    let mut m = Matching {
        messages: Vec::with_capacity(p.pairs.len()),
        unmatched_sends: p.unmatched_sends,
        unmatched_recvs: p.unmatched_recvs,
    };
    for pr in &p.pairs {
        let k = pr.stream;
        let (Some(sr), Some(rr)) = (run.rank(k.0), run.rank(k.1)) else {
            continue;
        };
        let se = &sr.events[pr.send];
        let re = &rr.events[pr.recv];
        let g = |d: &RankData, t: u64| d.to_global(t);
        let (s_in, s_out) = (g(sr, se.post_enter), g(sr, se.post_exit));
        let (r_post, r_center, r_done) = (
            g(rr, re.post_enter),
            g(rr, re.done_enter),
            g(rr, re.done_exit),
        );
        let ready = s_out.max(r_post);
        let destination = if r_center >= ready {
            r_done - r_center
        } else {
            0.0
        };
        let net_signed = r_done - ready - destination;
        let net = net_signed.max(0.0);
        let late = (s_in - r_post).clamp(0.0, (r_done - r_post).max(0.0));
        m.messages.push(Message {
            src: k.0,
            dst: k.1,
            tag: k.2,
            comm: k.3,
            bytes: se.bytes,
            send_call: se.call,
            recv_call: re.call,
            source_ns: s_out - s_in,
            net_ns: net,
            destination_ns: destination,
            late_sender_ns: late,
            net_signed_ns: net_signed,
        });
    }
    m
}

/// Upper bound of a message size's bin: 0, then powers of two (1, 2, 4, …).
pub fn size_bin(bytes: u64) -> u64 {
    if bytes == 0 {
        0
    } else {
        bytes.next_power_of_two()
    }
}

/// Recorded operations of one kind on one rank (the events the trace and the matching use).
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct CallCount {
    pub rank: u32,
    /// The operation: the MPI call, or the half of one (`MPI_Sendrecv(send)`, `MPI_Start(recv)`).
    pub call: &'static str,
    pub count: u64,
    /// The events' bytes: a send's message size, a receive's size received, a collective's
    /// send contribution as recorded (MPI_Alltoall: count × type size × ranks, the whole send
    /// buffer; MPI_Bcast: the buffer, on every rank), a one-sided transfer's origin bytes.
    pub bytes: u64,
}

/// One MPI function's calls on one rank: the profile (count, time in the call, bytes).
#[derive(Debug, Clone, Serialize, PartialEq, schemars::JsonSchema)]
pub struct FunctionStat {
    pub rank: u32,
    /// The MPI function (`MPI_Waitall`), whether called from C or Fortran.
    pub call: String,
    pub count: u64,
    /// Calls timed: every call but the polls (the Test family, `MPI_Iprobe`, `MPI_Improbe`,
    /// `MPI_Win_test`), one in 64 of which is timed so that a poll loop is not slowed.
    pub timed_count: u64,
    /// Time inside the call, summed over the timed calls (ns), and their shortest, mean and
    /// longest; `estimated_time_ns` = mean × count, the whole time in the call (equal to
    /// `time_ns` for every function but the polls).
    pub time_ns: u64,
    pub min_ns: u64,
    pub mean_ns: f64,
    pub max_ns: u64,
    pub estimated_time_ns: f64,
    /// Bytes read from the calls' send buffer arguments: a send's message, a collective's whole
    /// send buffer (MPI_Alltoall: count × type size × ranks; MPI_Bcast: the root's buffer, 0
    /// elsewhere), a one-sided transfer's origin data.
    pub sent_bytes: u64,
    /// Bytes written into the receive buffer arguments: a point-to-point receive's size (counted
    /// by the call that completed it: MPI_Recv, MPI_Wait…), a collective's receive buffer
    /// (MPI_Alltoall: count × type size × ranks; MPI_Bcast: the buffer on every rank but the
    /// root), a Get's origin buffer.
    pub received_bytes: u64,
}

/// Matched messages of one (sender, receiver, send call, receive call, size bin).
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct PairBin {
    pub src: u32,
    pub dst: u32,
    pub send_call: &'static str,
    pub recv_call: &'static str,
    /// Messages of more than half this size and at most this size (0: empty messages).
    pub size_bin: u64,
    pub count: u64,
    pub bytes: u64,
    pub mean_source_ns: f64,
    pub mean_net_ns: f64,
    pub mean_destination_ns: f64,
    pub mean_late_sender_ns: f64,
}

/// What `commperf monitor` prints and writes as JSON for an MPI run (until the histograms and
/// signatures of the `monitor` crate take over).
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct Summary {
    pub schema: &'static str,
    pub schema_version: u32,
    pub dir: PathBuf,
    pub ranks: u32,
    pub mpi_library: String,
    pub program_tags: Vec<String>,
    pub cut_short: bool,
    pub unfinished_ranks: Vec<u32>,
    pub missing_ranks: Vec<u32>,
    pub drops: u64,
    pub pending_requests: u64,
    /// Largest clock error bound of any rank (ns).
    pub clock_error_ns: i64,
    /// Largest |drift| of any rank (ns per s).
    pub max_drift_ppb: f64,
    pub matched_messages: u64,
    pub unmatched_sends: u64,
    pub unmatched_recvs: u64,
    /// Point-to-point sends and receives recorded without a peer rank, so neither matched nor
    /// unmatched: receives completed without a source (a cancelled MPI_ANY_SOURCE receive, as
    /// hpcc's RandomAccess leaves at its end), sends to no rank.
    pub sends_without_peer: u64,
    pub recvs_without_peer: u64,
    pub calls: Vec<CallCount>,
    /// Every MPI function called (format v3 files: written at MPI_Finalize, so not for a rank
    /// cut short), by rank, then by time in the call, longest first.
    pub functions: Vec<FunctionStat>,
    /// Every call site the ranks kept, over all ranks, most time in MPI first (the text report
    /// shows the first [`TOP_SITES`]; a test or a script looking for one site finds it here
    /// whatever its rank by time, which moves with the machine).
    pub sites: Vec<CallSite>,
    /// Calls whose site found no room in the interposer's per-thread site tables.
    pub site_overflow_calls: u64,
    pub pairs: Vec<PairBin>,
    /// The all-pairs clock check, per size exchanged both ways by ≥ 2 ordered pairs (empty
    /// when the run has none).
    pub all_pairs: Vec<AllPairs>,
}

/// One ordered pair's messages of one size, in the all-pairs check.
#[derive(Debug, Clone, Serialize, PartialEq, schemars::JsonSchema)]
pub struct PairMedian {
    pub src: u32,
    pub dst: u32,
    pub count: u64,
    /// Median of the messages' signed net stage ([`Message::net_signed_ns`]).
    pub median_net_ns: f64,
    /// The two ranks' clock error bounds added: how far their clocks may disagree.
    pub clock_bound_ns: f64,
}

/// The all-pairs clock check (Liao et al. 1998, §3.2) for one message size: when every pair of
/// ranks exchanges same-size messages both ways, the median net latency should be the same for
/// every ordered pair; a rank whose clock offset is wrong by δ moves its outgoing medians by −δ and
/// its incoming ones by +δ. So the spread of the medians (largest − smallest) is at most the true
/// latency differences plus `clock_bound_ns`, what the clocks' error bounds allow.
#[derive(Debug, Clone, Serialize, PartialEq, schemars::JsonSchema)]
pub struct AllPairs {
    /// The exact message size (bytes).
    pub bytes: u64,
    /// Every ordered pair that sent this size in both directions, by (src, dst).
    pub pairs: Vec<PairMedian>,
    pub min_median_ns: f64,
    pub max_median_ns: f64,
    /// max_median_ns − min_median_ns: "all-pairs spread".
    pub spread_ns: f64,
    /// The spread the clocks' error bounds alone could make: the two largest pair bounds
    /// (`PairMedian::clock_bound_ns`) added (one pair's clocks off one way, another's the other).
    pub clock_bound_ns: f64,
}

/// The all-pairs check for every exact size that ≥ 2 ordered pairs used in both directions
/// (with point-to-point messages, collectives excluded), ascending by size.
pub fn all_pairs(run: &Run, m: &Matching) -> Vec<AllPairs> {
    let mut by: BTreeMap<(u64, u32, u32), Vec<f64>> = BTreeMap::new();
    for x in &m.messages {
        if x.net_signed_ns.is_finite() {
            by.entry((x.bytes, x.src, x.dst))
                .or_default()
                .push(x.net_signed_ns);
        }
    }
    let err = |r: u32| run.rank(r).map_or(0, |d| d.clock_error_ns()) as f64;
    let mut out: Vec<AllPairs> = Vec::new();
    for (&(bytes, src, dst), v) in &by {
        if src == dst || !by.contains_key(&(bytes, dst, src)) {
            continue;
        }
        let mut v = v.clone();
        v.sort_by(f64::total_cmp);
        let n = v.len();
        let median = if n % 2 == 1 {
            v[n / 2]
        } else {
            (v[n / 2 - 1] + v[n / 2]) / 2.0
        };
        let pm = PairMedian {
            src,
            dst,
            count: n as u64,
            median_net_ns: median,
            clock_bound_ns: err(src) + err(dst),
        };
        match out.last_mut() {
            Some(a) if a.bytes == bytes => a.pairs.push(pm),
            _ => out.push(AllPairs {
                bytes,
                pairs: vec![pm],
                min_median_ns: 0.0,
                max_median_ns: 0.0,
                spread_ns: 0.0,
                clock_bound_ns: 0.0,
            }),
        }
    }
    out.retain(|a| a.pairs.len() >= 2);
    for a in &mut out {
        let meds = a.pairs.iter().map(|p| p.median_net_ns);
        a.min_median_ns = meds.clone().fold(f64::INFINITY, f64::min);
        a.max_median_ns = meds.fold(f64::NEG_INFINITY, f64::max);
        a.spread_ns = a.max_median_ns - a.min_median_ns;
        let mut b: Vec<f64> = a.pairs.iter().map(|p| p.clock_bound_ns).collect();
        b.sort_by(|x, y| y.total_cmp(x));
        a.clock_bound_ns = b.iter().take(2).sum();
    }
    out
}

fn without_peer(run: &Run, kind: fn(Call) -> bool) -> u64 {
    run.ranks
        .iter()
        .flat_map(|r| &r.events)
        .filter(|e| kind(e.call) && e.peer < 0)
        .count() as u64
}

/// How many call sites the text report shows.
pub const TOP_SITES: usize = 20;

/// Every rank's function statistics, by rank, then by time in the call (longest first, ties by
/// name).
pub fn functions(run: &Run) -> Vec<FunctionStat> {
    let mut out = Vec::new();
    for rd in &run.ranks {
        let mut v: Vec<FunctionStat> = rd
            .functions
            .iter()
            .map(|f| {
                let mean_ns = if f.timed_count > 0 {
                    f.time_ns as f64 / f.timed_count as f64
                } else {
                    0.0
                };
                FunctionStat {
                    rank: rd.header.rank,
                    call: f.call.clone(),
                    count: f.count,
                    timed_count: f.timed_count,
                    time_ns: f.time_ns,
                    min_ns: f.min_ns,
                    mean_ns,
                    max_ns: f.max_ns,
                    estimated_time_ns: mean_ns * f.count as f64,
                    sent_bytes: f.sent_bytes,
                    received_bytes: f.received_bytes,
                }
            })
            .collect();
        v.sort_by(|a, b| {
            b.estimated_time_ns
                .total_cmp(&a.estimated_time_ns)
                .then_with(|| a.call.cmp(&b.call))
        });
        out.extend(v);
    }
    out
}

/// Counts every call per rank and folds the matched messages into pair × size bins.
pub fn summarize(run: &Run) -> Summary {
    let m = match_messages(run);
    let (sites, site_overflow_calls) = call_sites(run, usize::MAX);
    let mut calls = Vec::new();
    for rd in &run.ranks {
        let mut per: BTreeMap<(Call, bool), (u64, u64)> = BTreeMap::new();
        for e in &rd.events {
            let c = per
                .entry((e.call, e.persistent && e.call.is_collective()))
                .or_default();
            c.0 += 1;
            // A damaged file may state any size: the sum saturates rather than overflows.
            c.1 = c.1.saturating_add(e.bytes);
        }
        calls.extend(
            per.into_iter()
                .map(|((call, persistent), (count, bytes))| CallCount {
                    rank: rd.header.rank,
                    call: if persistent {
                        call.persistent_name()
                    } else {
                        call.name()
                    },
                    count,
                    bytes,
                }),
        );
    }
    let mut bins: BTreeMap<(u32, u32, Call, Call, u64), [f64; 6]> = BTreeMap::new();
    for x in &m.messages {
        let b = bins
            .entry((x.src, x.dst, x.send_call, x.recv_call, size_bin(x.bytes)))
            .or_default();
        b[0] += 1.0;
        b[1] += x.bytes as f64;
        b[2] += x.source_ns;
        b[3] += x.net_ns;
        b[4] += x.destination_ns;
        b[5] += x.late_sender_ns;
    }
    let pairs = bins
        .into_iter()
        .map(|((src, dst, sc, rc, bin), b)| PairBin {
            src,
            dst,
            send_call: sc.name(),
            recv_call: rc.name(),
            size_bin: bin,
            count: b[0] as u64,
            bytes: b[1] as u64,
            mean_source_ns: b[2] / b[0],
            mean_net_ns: b[3] / b[0],
            mean_destination_ns: b[4] / b[0],
            mean_late_sender_ns: b[5] / b[0],
        })
        .collect();
    let mut tags: Vec<String> = run
        .ranks
        .iter()
        .map(|r| r.header.program_tag.clone())
        .collect();
    tags.sort();
    tags.dedup();
    Summary {
        schema: "commperf-pmpi-summary",
        schema_version: 2,
        dir: run.dir.clone(),
        ranks: run.ranks.iter().map(|r| r.header.size).max().unwrap_or(0),
        mpi_library: run
            .ranks
            .first()
            .map(|r| r.header.mpi_library.clone())
            .unwrap_or_default(),
        program_tags: tags,
        cut_short: run.cut_short(),
        unfinished_ranks: run.unfinished_ranks(),
        missing_ranks: run.missing_ranks(),
        drops: run.ranks.iter().map(|r| r.drops).sum(),
        pending_requests: run
            .ranks
            .iter()
            .filter_map(|r| r.footer)
            .map(|f| f.pending_requests)
            .sum(),
        clock_error_ns: run
            .ranks
            .iter()
            .map(|r| r.clock_error_ns())
            .max()
            .unwrap_or(0),
        max_drift_ppb: run
            .ranks
            .iter()
            .filter_map(|r| r.drift_ppb())
            .fold(0.0, |a, d| a.max(d.abs())),
        matched_messages: m.messages.len() as u64,
        unmatched_sends: m.unmatched_sends,
        unmatched_recvs: m.unmatched_recvs,
        sends_without_peer: without_peer(run, Call::is_send),
        recvs_without_peer: without_peer(run, Call::is_recv),
        calls,
        functions: functions(run),
        sites,
        site_overflow_calls,
        pairs,
        all_pairs: all_pairs(run, &m),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::{frame_of, FrameKind};

    fn header(version: u32, rank: u32) -> Header {
        Header {
            format: format::FORMAT_NAME.into(),
            version,
            rank,
            size: 2,
            pid: 1,
            host: "h".into(),
            mpi_flavour: "openmpi".into(),
            mpi_library: "test".into(),
            program_tag: String::new(),
            clock: "test".into(),
            start_ns: 0,
            empty_wrappers: false,
        }
    }

    /// One event record as the shim lays it out: kind, flags, pad, peer, tag, comm, bytes,
    /// then the four times and the thread.
    fn event(kind: u8, peer: i32, tag: i32, bytes: u64, t: [u64; 4]) -> Vec<u8> {
        let mut b = vec![kind, 0, 0, 0];
        b.extend_from_slice(&peer.to_le_bytes());
        b.extend_from_slice(&tag.to_le_bytes());
        b.extend_from_slice(&0u32.to_le_bytes());
        b.extend_from_slice(&bytes.to_le_bytes());
        for v in t {
            b.extend_from_slice(&v.to_le_bytes());
        }
        b.extend_from_slice(&7u64.to_le_bytes());
        assert_eq!(b.len(), EVENT_BYTES);
        b
    }

    /// A whole rank file of `version` (magic, header, one clock, two events, footer), written
    /// the way that version's writer wrote it.
    fn rank_file(version: u32) -> Vec<u8> {
        let mut f = format::magic(version).unwrap().to_vec();
        f.extend(frame_of(
            version,
            FrameKind::Header,
            &j(&header(version, 0)),
        ));
        let c = ClockSync {
            phase: 0,
            local_ns: 10,
            offset_ns: 0,
            err_ns: 0,
            rtt_ns: 0,
        };
        f.extend(frame_of(version, FrameKind::Clock, &j(&c)));
        let mut ev = event(5, 1, 3, 100, [1000, 1100, 1200, 1300]);
        ev.extend(event(10, 1, 4, 24, [2000, 2000, 2000, 2500]));
        f.extend(frame_of(version, FrameKind::Events, &ev));
        let foot = Footer {
            events: 2,
            drops: 0,
            pending_requests: 0,
            end_ns: 3000,
        };
        f.extend(frame_of(version, FrameKind::Footer, &j(&foot)));
        f
    }

    fn j<T: Serialize>(v: &T) -> Vec<u8> {
        serde_json::to_vec(v).unwrap()
    }

    fn scratch(name: &str) -> PathBuf {
        let p = std::env::temp_dir().join(format!(
            "commperf-pmpi-read-{}-{name}.cpmpi",
            std::process::id()
        ));
        p
    }

    #[test]
    fn version_1_and_version_2_files_read_alike() {
        for version in [1, 2] {
            let p = scratch(&format!("v{version}"));
            std::fs::write(&p, rank_file(version)).unwrap();
            let rd = read_file(&p);
            let _ = std::fs::remove_file(&p);
            let rd = rd.unwrap_or_else(|e| panic!("v{version}: {e}"));
            assert_eq!(rd.header.version, version);
            assert_eq!(rd.events.len(), 2, "v{version}");
            assert_eq!(rd.events[0].call, Call::Isend);
            assert_eq!(rd.events[0].bytes, 100);
            assert_eq!(rd.events[0].tag, 3);
            assert_eq!(rd.events[0].done_exit, 1300);
            assert_eq!(rd.events[1].call, Call::Recv);
            assert_eq!(rd.events[1].done_exit, 2500);
            assert_eq!(rd.events[1].thread, 7);
            assert_eq!(rd.footer.unwrap().end_ns, 3000);
            assert_eq!(rd.clocks.len(), 1);
        }
    }

    #[test]
    fn a_checksum_of_the_other_version_is_corruption() {
        // A v2 magic over v1 checksums: every frame's sum is wrong.
        let mut f = rank_file(1);
        f[..8].copy_from_slice(format::MAGIC);
        let p = scratch("mixed");
        std::fs::write(&p, &f).unwrap();
        let e = read_file(&p).unwrap_err().to_string();
        let _ = std::fs::remove_file(&p);
        assert!(
            e.contains("corrupt at byte 8") && e.contains("checksum"),
            "{e}"
        );
    }

    #[test]
    fn unknown_versions_are_refused_by_name() {
        let mut f = rank_file(2);
        f[6..8].copy_from_slice(b"v9");
        let p = scratch("v9");
        std::fs::write(&p, &f).unwrap();
        let e = read_file(&p).unwrap_err().to_string();
        assert!(
            e.contains(p.to_str().unwrap()) && e.contains("format version v9"),
            "{e}"
        );
        assert!(e.contains("[1, 2, 3, 4, 5]"), "{e}");
        // The header disagreeing with the magic is refused too.
        let mut f = format::MAGIC.to_vec();
        f.extend(frame_of(
            2,
            FrameKind::Header,
            &serde_json::to_vec(&header(1, 0)).unwrap(),
        ));
        std::fs::write(&p, &f).unwrap();
        let e = read_file(&p).unwrap_err().to_string();
        let _ = std::fs::remove_file(&p);
        assert!(
            e.contains("format version 1 in the header of a v5 file"),
            "{e}"
        );
    }

    /// A header whose rank is not below its size (found by the rank_file fuzz target: rank 6
    /// of 4 became a trace rank outside the trace) is refused at the header, naming both.
    #[test]
    fn a_rank_beyond_its_size_is_refused() {
        let mut f = format::magic(5).unwrap().to_vec();
        let mut h = header(5, 6);
        h.size = 4;
        f.extend(frame_of(5, FrameKind::Header, &j(&h)));
        let e = parse_file(Path::new("rank-6.cpmpi"), &f)
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "rank-6.cpmpi is corrupt at byte 8: the header's rank 6 is not below its size 4"
        );
        // The last rank of the run is read.
        h.rank = 3;
        let mut f = format::magic(5).unwrap().to_vec();
        f.extend(frame_of(5, FrameKind::Header, &j(&h)));
        assert_eq!(
            parse_file(Path::new("rank-3.cpmpi"), &f)
                .unwrap()
                .header
                .rank,
            3
        );
    }

    /// Version 3's frames: a communicator's members and the function statistics, read into
    /// the rank's data; the run's communicator table answers for ids every rank agrees on.
    #[test]
    fn version_3_reads_communicators_and_function_statistics() {
        let mut runs = Vec::new();
        for (r, members) in [(0u32, vec![0u32, 2]), (1, vec![1, 3])] {
            let mut f = rank_file(3);
            let mut h = header(3, r);
            h.size = 4;
            // The header is the first frame: rebuild the file around this rank's.
            f.truncate(8);
            f.extend(frame_of(3, FrameKind::Header, &j(&h)));
            let even = CommDef {
                id: 77,
                inter: false,
                world: members.clone(),
            };
            f.extend(frame_of(3, FrameKind::Comm, &j(&even)));
            // Id 99 is given different members by the two ranks: a collision, not trusted.
            let clash = CommDef {
                id: 99,
                inter: false,
                world: vec![r],
            };
            f.extend(frame_of(3, FrameKind::Comm, &j(&clash)));
            let calls = vec![CallStat {
                call: "MPI_Wait".into(),
                count: 4,
                timed_count: 4,
                time_ns: 1000 + u64::from(r),
                min_ns: 100,
                max_ns: 600,
                sent_bytes: 0,
                received_bytes: 96,
            }];
            f.extend(frame_of(3, FrameKind::Calls, &j(&calls)));
            let p = scratch(&format!("v3-{r}"));
            std::fs::write(&p, &f).unwrap();
            let rd = read_file(&p).unwrap();
            let _ = std::fs::remove_file(&p);
            assert_eq!(rd.comms.len(), 2);
            assert_eq!(rd.functions, calls);
            runs.push(rd);
        }
        let run = Run::new(PathBuf::new(), runs);
        assert_eq!(run.comm_group(0), Some(&[0u32, 1, 2, 3][..]));
        // Rank 0 saw {0, 2} under 77, rank 1 {1, 3}: the same id, different members.
        assert_eq!(run.comm_group(77), None);
        assert_eq!(run.comm_group(99), None);
        assert_eq!(run.comm_group(5), None);
        let fs = functions(&run);
        assert_eq!(fs.len(), 2);
        assert_eq!(
            (fs[1].rank, fs[1].time_ns, fs[1].mean_ns),
            (1, 1001, 250.25)
        );
        // A run whose ranks agree on a group answers with it.
        let mut one = run.ranks[0].clone();
        one.comms.retain(|c| c.id == 77);
        let run = Run::new(PathBuf::new(), vec![one]);
        assert_eq!(run.comm_group(77), Some(&[0u32, 2][..]));
    }

    /// A frame version 3 introduced, in a version 2 file, is not one that version wrote.
    #[test]
    fn version_3_frames_in_a_version_2_file_are_refused() {
        let mut f = rank_file(2);
        let c = CommDef {
            id: 1,
            inter: false,
            world: vec![0],
        };
        f.extend(frame_of(2, FrameKind::Comm, &j(&c)));
        let p = scratch("v2-comm");
        std::fs::write(&p, &f).unwrap();
        let e = read_file(&p).unwrap_err().to_string();
        let _ = std::fs::remove_file(&p);
        assert!(e.contains("unknown frame kind 6"), "{e}");
    }

    /// Version 4's neighbour lists are read (MPI_PROC_NULL as None); in a version 3 file
    /// the frame is unknown.
    #[test]
    fn version_4_reads_neighbour_lists_and_version_3_refuses_them() {
        let d = NeighborDef {
            id: 0xabc,
            index: 0,
            sources: vec![Some(3), None],
            destinations: vec![None, Some(1)],
        };
        let mut f = rank_file(4);
        f.extend(frame_of(4, FrameKind::Neighbors, &j(&d)));
        let p = scratch("v4-neighbors");
        std::fs::write(&p, &f).unwrap();
        let rd = read_file(&p).unwrap();
        assert_eq!(rd.neighbors, std::slice::from_ref(&d));
        let mut f = rank_file(3);
        f.extend(frame_of(3, FrameKind::Neighbors, &j(&d)));
        std::fs::write(&p, &f).unwrap();
        let e = read_file(&p).unwrap_err().to_string();
        let _ = std::fs::remove_file(&p);
        assert!(e.contains("unknown frame kind 9"), "{e}");
    }

    #[test]
    fn version_5_reads_neighbour_sizes_and_version_4_refuses_them() {
        let c = NeighborCounts {
            index: 2,
            sends: vec![8, 12],
            recvs: vec![12, 8],
        };
        let mut f = rank_file(5);
        f.extend(frame_of(5, FrameKind::NeighborCounts, &j(&c)));
        let p = scratch("v5-counts");
        std::fs::write(&p, &f).unwrap();
        let rd = read_file(&p).unwrap();
        assert_eq!(rd.neighbor_counts, std::slice::from_ref(&c));
        let mut f = rank_file(4);
        f.extend(frame_of(4, FrameKind::NeighborCounts, &j(&c)));
        std::fs::write(&p, &f).unwrap();
        let e = read_file(&p).unwrap_err().to_string();
        let _ = std::fs::remove_file(&p);
        assert!(e.contains("unknown frame kind 10"), "{e}");
    }

    fn rank(r: u32, offset_ns: i64, err_ns: i64, events: Vec<Event>) -> RankData {
        RankData {
            path: PathBuf::from(format!("rank-{r}")),
            header: Header {
                size: 3,
                ..header(2, r)
            },
            clocks: vec![ClockSync {
                phase: 0,
                local_ns: 0,
                offset_ns,
                err_ns,
                rtt_ns: 2 * err_ns,
            }],
            events,
            drops: 0,
            footer: None,
            comms: Vec::new(),
            functions: Vec::new(),
            sites: Default::default(),
            neighbors: Vec::new(),
            neighbor_counts: Vec::new(),
        }
    }

    fn ev(call: Call, peer: i32, bytes: u64, t: [u64; 4]) -> Event {
        Event {
            call,
            fortran: false,
            any_source: false,
            persistent: false,
            partitioned: false,
            synchronous: false,
            peer,
            tag: 0,
            comm: 0,
            bytes,
            post_enter: t[0],
            post_exit: t[1],
            done_enter: t[2],
            done_exit: t[3],
            thread: 0,
        }
    }

    #[test]
    fn all_pairs_spread_shows_a_clock_off_by_delta_as_two_delta() {
        // Three ranks, one 8-byte message each way per pair, every true flight 1000 ns; rank 2's
        // recorded offset is 300 ns short of the truth, so what it sends looks 300 ns longer
        // and what it receives 300 ns shorter: spread 600 ns. Sends at t, receive done at
        // t + 1000 (true time); the receive is posted long before.
        let delta = 300u64;
        let mut evs: Vec<Vec<Event>> = vec![Vec::new(); 3];
        let mut t = 10_000u64;
        for (a, b) in [(0u32, 1u32), (1, 0), (0, 2), (2, 0), (1, 2), (2, 1)] {
            // Local times: rank 2's clock reads `delta` behind the true time + its offset.
            let local = |r: u32, x: u64| if r == 2 { x - delta } else { x };
            let (s, d) = (a as usize, b as usize);
            evs[s].push(ev(
                Call::Send,
                b as i32,
                8,
                [local(a, t), local(a, t), local(a, t), local(a, t)],
            ));
            evs[d].push(ev(
                Call::Recv,
                a as i32,
                8,
                [
                    local(b, t - 5000),
                    local(b, t - 5000),
                    local(b, t - 5000),
                    local(b, t + 1000),
                ],
            ));
            t += 10_000;
        }
        let run = Run::new(
            PathBuf::new(),
            evs.into_iter()
                .enumerate()
                .map(|(r, e)| rank(r as u32, 0, if r == 0 { 0 } else { 50 }, e))
                .collect(),
        );
        let m = match_messages(&run);
        assert_eq!(m.messages.len(), 6);
        let a = all_pairs(&run, &m);
        assert_eq!(a.len(), 1);
        let a = &a[0];
        assert_eq!(a.bytes, 8);
        assert_eq!(a.pairs.len(), 6);
        let med = |s: u32, d: u32| {
            a.pairs
                .iter()
                .find(|p| p.src == s && p.dst == d)
                .unwrap()
                .median_net_ns
        };
        assert_eq!(med(0, 1), 1000.0);
        assert_eq!(med(1, 0), 1000.0);
        assert_eq!(med(2, 0), 1300.0);
        assert_eq!(med(0, 2), 700.0);
        assert_eq!(med(1, 2), 700.0);
        assert_eq!(a.spread_ns, 600.0);
        // Bounds: pairs with rank 0 have 50, the others 100; the two largest added.
        assert_eq!(a.clock_bound_ns, 200.0);
        assert_eq!(a.pairs.iter().map(|p| p.count).sum::<u64>(), 6);
    }

    #[test]
    fn all_pairs_needs_both_directions() {
        // Only 0 -> 1 and 1 -> 2: no size is exchanged both ways.
        let mut evs: Vec<Vec<Event>> = vec![Vec::new(); 3];
        for (a, b) in [(0u32, 1u32), (1, 2)] {
            evs[a as usize].push(ev(Call::Send, b as i32, 8, [100, 200, 200, 200]));
            evs[b as usize].push(ev(Call::Recv, a as i32, 8, [50, 50, 50, 900]));
        }
        let run = Run::new(
            PathBuf::new(),
            evs.into_iter()
                .enumerate()
                .map(|(r, e)| rank(r as u32, 0, 0, e))
                .collect(),
        );
        let m = match_messages(&run);
        assert_eq!(m.messages.len(), 2);
        assert!(all_pairs(&run, &m).is_empty());
    }
}
