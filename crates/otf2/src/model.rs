//! An OTF2 archive as plain Rust data: the definitions and event records commperf writes and
//! reads, nothing more. The writer builds one from a monitored run ([`crate::from_run`]) and
//! hands it to libotf2; the reader fills one from libotf2's callbacks and converts it
//! ([`crate::to_own`]). Keeping the conversions on this side of the C library lets them be
//! tested without it, and keeps each FFI path a plain loop over records.

/// One OTF2 collective operation (`OTF2_CollectiveOp`), by its OTF2 number.
pub mod op {
    pub const BARRIER: u8 = 0;
    pub const BCAST: u8 = 1;
    pub const GATHER: u8 = 2;
    pub const GATHERV: u8 = 3;
    pub const SCATTER: u8 = 4;
    pub const SCATTERV: u8 = 5;
    pub const ALLGATHER: u8 = 6;
    pub const ALLGATHERV: u8 = 7;
    pub const ALLTOALL: u8 = 8;
    pub const ALLTOALLV: u8 = 9;
    pub const ALLTOALLW: u8 = 10;
    pub const ALLREDUCE: u8 = 11;
    pub const REDUCE: u8 = 12;
    pub const REDUCE_SCATTER: u8 = 13;
    pub const SCAN: u8 = 14;
    pub const EXSCAN: u8 = 15;
    pub const REDUCE_SCATTER_BLOCK: u8 = 16;

    /// The MPI name of an OTF2 collective operation (for messages).
    pub fn name(op: u8) -> String {
        match op {
            BARRIER => "MPI_Barrier".into(),
            BCAST => "MPI_Bcast".into(),
            GATHER => "MPI_Gather".into(),
            GATHERV => "MPI_Gatherv".into(),
            SCATTER => "MPI_Scatter".into(),
            SCATTERV => "MPI_Scatterv".into(),
            ALLGATHER => "MPI_Allgather".into(),
            ALLGATHERV => "MPI_Allgatherv".into(),
            ALLTOALL => "MPI_Alltoall".into(),
            ALLTOALLV => "MPI_Alltoallv".into(),
            ALLTOALLW => "MPI_Alltoallw".into(),
            ALLREDUCE => "MPI_Allreduce".into(),
            REDUCE => "MPI_Reduce".into(),
            REDUCE_SCATTER => "MPI_Reduce_scatter".into(),
            SCAN => "MPI_Scan".into(),
            EXSCAN => "MPI_Exscan".into(),
            REDUCE_SCATTER_BLOCK => "MPI_Reduce_scatter_block".into(),
            k => format!("OTF2 collective operation {k}"),
        }
    }
}

/// `OTF2_RegionRole` values commperf writes.
pub mod role {
    pub const FUNCTION: u8 = 1;
    pub const BARRIER: u8 = 15;
    pub const COLL_ONE2ALL: u8 = 23;
    pub const COLL_ALL2ONE: u8 = 24;
    pub const COLL_ALL2ALL: u8 = 25;
    pub const COLL_OTHER: u8 = 26;
    pub const POINT2POINT: u8 = 28;
}

/// A code region (an MPI call, or a user function in a Score-P trace).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Region {
    pub name: String,
    pub role: u8,
    /// Paradigm MPI: time inside it is MPI time, not computation.
    pub mpi: bool,
}

/// A communicator: comm rank i is world rank `members[i]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Comm {
    pub name: String,
    pub members: Vec<u32>,
}

/// One event record, times in the location's ticks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rec {
    Enter {
        t: u64,
        region: u32,
    },
    Leave {
        t: u64,
        region: u32,
    },
    /// MpiSend: `peer` is a rank of `comm`.
    Send {
        t: u64,
        peer: u32,
        comm: u32,
        tag: u32,
        bytes: u64,
    },
    Isend {
        t: u64,
        peer: u32,
        comm: u32,
        tag: u32,
        bytes: u64,
        req: u64,
    },
    IsendComplete {
        t: u64,
        req: u64,
    },
    IrecvRequest {
        t: u64,
        req: u64,
    },
    Irecv {
        t: u64,
        peer: u32,
        comm: u32,
        tag: u32,
        bytes: u64,
        req: u64,
    },
    Recv {
        t: u64,
        peer: u32,
        comm: u32,
        tag: u32,
        bytes: u64,
    },
    RequestCancelled {
        t: u64,
        req: u64,
    },
    CollBegin {
        t: u64,
    },
    CollEnd {
        t: u64,
        op: u8,
        comm: u32,
        /// None: OTF2_UNDEFINED_UINT32 (no root).
        root: Option<u32>,
        sent: u64,
        received: u64,
    },
    /// NonBlockingCollectiveRequest: a nonblocking collective started (MPI_Iallreduce, a
    /// persistent collective's MPI_Start, …); what it is comes with its completion.
    NbcRequest {
        t: u64,
        req: u64,
    },
    /// NonBlockingCollectiveComplete: the collective started as `req` completed; the fields
    /// mean what MpiCollectiveEnd's mean.
    NbcComplete {
        t: u64,
        op: u8,
        comm: u32,
        root: Option<u32>,
        sent: u64,
        received: u64,
        req: u64,
    },
    /// MeasurementOnOff: false while recording was stopped.
    Measurement {
        t: u64,
        on: bool,
    },
    /// RmaPut on window `win`, `peer` a rank of the window's communicator, `req` its
    /// matching id.
    RmaPut {
        t: u64,
        win: u32,
        peer: u32,
        bytes: u64,
        req: u64,
    },
    RmaGet {
        t: u64,
        win: u32,
        peer: u32,
        bytes: u64,
        req: u64,
    },
    /// RmaAtomic (the atomic type is not kept: only the bytes each way matter here).
    RmaAtomic {
        t: u64,
        win: u32,
        peer: u32,
        sent: u64,
        received: u64,
        req: u64,
    },
    /// RmaOpCompleteRemote: the transfer `req` is complete at its target.
    RmaComplete {
        t: u64,
        win: u32,
        req: u64,
    },
    /// A record that carries communication predict cannot model: the reader refuses the
    /// trace naming it.
    Unmodelled {
        t: u64,
        what: &'static str,
    },
}

impl Rec {
    /// The record's time, to move it.
    pub fn time_mut(&mut self) -> &mut u64 {
        use Rec::*;
        match self {
            Enter { t, .. }
            | Leave { t, .. }
            | Send { t, .. }
            | Isend { t, .. }
            | IsendComplete { t, .. }
            | IrecvRequest { t, .. }
            | Irecv { t, .. }
            | Recv { t, .. }
            | RequestCancelled { t, .. }
            | CollBegin { t }
            | CollEnd { t, .. }
            | NbcRequest { t, .. }
            | NbcComplete { t, .. }
            | Measurement { t, .. }
            | RmaPut { t, .. }
            | RmaGet { t, .. }
            | RmaAtomic { t, .. }
            | RmaComplete { t, .. }
            | Unmodelled { t, .. } => t,
        }
    }

    pub fn time(&self) -> u64 {
        use Rec::*;
        match *self {
            Enter { t, .. }
            | Leave { t, .. }
            | Send { t, .. }
            | Isend { t, .. }
            | IsendComplete { t, .. }
            | IrecvRequest { t, .. }
            | Irecv { t, .. }
            | Recv { t, .. }
            | RequestCancelled { t, .. }
            | CollBegin { t }
            | CollEnd { t, .. }
            | NbcRequest { t, .. }
            | NbcComplete { t, .. }
            | Measurement { t, .. }
            | RmaPut { t, .. }
            | RmaGet { t, .. }
            | RmaAtomic { t, .. }
            | RmaComplete { t, .. }
            | Unmodelled { t, .. } => t,
        }
    }
}

/// A ClockOffset definition: at local time `time`, global = local + `offset`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ClockOffset {
    pub time: u64,
    pub offset: i64,
    pub std_dev: f64,
}

/// One location: an MPI rank's thread.
#[derive(Debug, Clone, PartialEq)]
pub struct Location {
    /// The OTF2 location id.
    pub id: u64,
    pub name: String,
    /// The host (system tree node) its process ran on.
    pub host: String,
    pub clock_offsets: Vec<ClockOffset>,
    pub events: Vec<Rec>,
}

/// A whole archive.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Archive {
    /// Ticks per second.
    pub timer_resolution: u64,
    pub regions: Vec<Region>,
    /// Index 0 is MPI_COMM_WORLD in the archives commperf writes; a reader finds the world by
    /// its members.
    pub comms: Vec<Comm>,
    /// RMA windows: window w's communicator is `comms[windows[w]]` (commperf writes one
    /// window over MPI_COMM_WORLD when the run has one-sided transfers).
    pub windows: Vec<u32>,
    /// The MPI ranks' locations, location of rank r at `mpi_ranks[r]` (the OTF2 group of
    /// type COMM_LOCATIONS, paradigm MPI).
    pub mpi_ranks: Vec<u64>,
    pub locations: Vec<Location>,
}

impl Archive {
    /// The location of world rank `r`.
    pub fn rank_location(&self, r: u32) -> Option<&Location> {
        let id = *self.mpi_ranks.get(r as usize)?;
        self.locations.iter().find(|l| l.id == id)
    }
}
