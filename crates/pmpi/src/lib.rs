//! commperf-pmpi: monitoring unmodified MPI programs (Liao et al.'s (1998) monitor, below the
//! programming model, for programs nobody here wrote).
//!
//! Three parts, because MPI handles are pointers in Open MPI and ints in MPICH and the wrappers
//! must match one library's `mpi.h` exactly:
//!
//! - **the shim** (`csrc/shim.c`), compiled by build.rs once per MPI installed here into
//!   `libcommperf_pmpi_openmpi.so` / `libcommperf_pmpi_mpich.so` and embedded in this rlib
//!   ([`interposer`]). It defines `MPI_*` (and, for Open MPI only, the Fortran `mpi_*_`: Open MPI's
//!   Fortran calls `PMPI_*` directly, MPICH's calls the C `MPI_*`, so wrapping Fortran there would
//!   count twice), times each call (invariant TSC calibrated to CLOCK_MONOTONIC ns, else
//!   CLOCK_MONOTONIC), calls `PMPI_*`, and turns communicator
//!   ranks into world ranks. A thread-local depth counter is the re-entry guard (a wrapped call
//!   made from inside a wrapped call is not recorded again); nothing is shared between threads on
//!   the hot path, so it is safe under MPI_THREAD_MULTIPLE. It refuses, at load time, a process
//!   that links the other MPI, naming both. At MPI_Init and MPI_Finalize it measures each rank's
//!   clock offset to rank 0 (Cristian: 16 ping-pongs over PMPI on a duplicated communicator, the
//!   minimum round trip kept; error bound = half of it; drift = change of offset over the run).
//! - **the runtime** (the `commperf-pmpi-rt` crate's cdylib, built by build.rs and embedded here
//!   beside the shims: [`runtime_library`]): per-thread
//!   bounded rings, a writer thread that drains them every `COMMPERF_PMPI_FLUSH_MS` (50) ms into
//!   `DIR/rank-N.cpmpi` (format in [`format`]), drops counted when a ring is full, the application
//!   never blocked.
//! - **the reader** ([`read_dir`], [`match_messages`], [`summarize`]): typed errors naming the
//!   file, send/receive matching by MPI's non-overtaking order, per-message stages ([`Message`]).
//! - **the trace writer** ([`to_trace`]): a run as a commperf own-format trace that `commperf
//!   predict` replays, and as a Chrome trace-event timeline, with what could not be replayed
//!   left out and counted ([`TraceStats`]). Both come from [`replay`], the run as the replay
//!   sees it before any format ([`Replay`]), which commperf-otf2 renders as an OTF2 archive.
//!
//! Environment of a monitored rank (set by `commperf monitor`): `COMMPERF_PMPI_DIR` (output),
//! `COMMPERF_PMPI_TAG` (program tag), `COMMPERF_PMPI_START=off` (start disabled; `MPI_Pcontrol(1)`
//! starts, `MPI_Pcontrol(0)` stops: mpiP's convention), `COMMPERF_PMPI_RING` (events per thread
//! buffer, 65536, rounded up to a power of two), `COMMPERF_PMPI_EMPTY` (wrappers only pass calls
//! through: the cost baseline), `COMMPERF_PMPI_WRITER_BIND=inherit` (keep the writer thread on
//! its rank's core; by default it may run on any online core), `COMMPERF_PMPI_WRITER_NICE`
//! (the writer's nice value; default: the rank's).
//!
//! What is recorded: MPI_Send/Ssend/Bsend/Rsend, Isend/Issend/Ibsend/Irsend, Recv, Irecv,
//! Sendrecv(_replace) (as a send and a receive), Wait/Waitall/Waitany/Waitsome and the Test
//! family (which complete the nonblocking operations; `MPI_STATUS(ES)_IGNORE` is replaced by the
//! wrapper's own status so the source and size of every receive are known; request handles are
//! copied before the call sets them to MPI_REQUEST_NULL), Probe and successful Iprobes, and the
//! common collectives (one event per call, bytes = this rank's contribution). A polling call
//! (the Test family, Iprobe) reads the clock only when it completed something, once, at its exit:
//! its misses cost no clock read and record nothing. Persistent requests: every MPI_Start(all)
//! of a request made by MPI_Send_init (and its variants) or MPI_Recv_init is one message,
//! recorded like an Isend/Irecv ([`Call::StartSend`], [`Call::StartRecv`]). Not recorded:
//! matched probes (MPI_Mprobe/Mrecv), nonblocking collectives, one-sided communication. Two
//! communicators over the same group share an id.

pub mod install;
mod read;
mod sites;
mod trace;

pub use commperf_pmpi_rt::format;

pub use install::{InstallError, LibCache};
pub use read::{
    all_pairs, clear_rank_files, holds_rank_files, match_messages, pair_events, parse_file,
    read_dir, read_file, size_bin, summarize, AllPairs, Call, CallCount, Event, EventPair,
    FunctionStat, Matching, Message, PairBin, PairMedian, Pairing, RankData, ReadError, Run,
    Stream, Summary, TOP_SITES,
};
pub use sites::CallSite;
pub use trace::{
    replay, request_name, to_trace, CallKind, RankReplay, Replay, ReplayCall, ReplayCollective,
    ReplayComm, ReplayMessage, ReplayOp, ReplayRma, RmaKind, TraceOutput, TraceStats,
};

/// The MPI libraries an interposer can be built for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flavour {
    OpenMpi,
    Mpich,
}

impl Flavour {
    /// Every MPI library an interposer can be built for.
    pub const ALL: [Flavour; 2] = [Flavour::OpenMpi, Flavour::Mpich];

    /// `openmpi` / `mpich`: the suffix of the interposer's file name.
    pub fn key(self) -> &'static str {
        match self {
            Flavour::OpenMpi => "openmpi",
            Flavour::Mpich => "mpich",
        }
    }

    /// The library's own name.
    pub fn name(self) -> &'static str {
        match self {
            Flavour::OpenMpi => "Open MPI",
            Flavour::Mpich => "MPICH",
        }
    }

    /// `libcommperf_pmpi_<key>.so`.
    pub fn file_name(self) -> String {
        format!("libcommperf_pmpi_{}.so", self.key())
    }
}

static SHIM_OPENMPI: &[u8] =
    include_bytes!(concat!(env!("OUT_DIR"), "/libcommperf_pmpi_openmpi.so"));
static SHIM_MPICH: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/libcommperf_pmpi_mpich.so"));
static RUNTIME: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/libcommperf_pmpi_rt.so"));

/// The C interposer built for `f`, or None when that MPI was not installed at build time.
pub fn interposer(f: Flavour) -> Option<&'static [u8]> {
    let b = match f {
        Flavour::OpenMpi => SHIM_OPENMPI,
        Flavour::Mpich => SHIM_MPICH,
    };
    (!b.is_empty()).then_some(b)
}

/// The MPI library the interposer for `f` was built against, as its compiler wrapper named it
/// ("Open MPI 4.1.4", "MPICH 4.0.2"), or None when this build has no interposer for `f`.
pub fn interposer_mpi(f: Flavour) -> Option<&'static str> {
    interposer(f)?;
    let v = match f {
        Flavour::OpenMpi => env!("COMMPERF_PMPI_OPENMPI_VERSION"),
        Flavour::Mpich => env!("COMMPERF_PMPI_MPICH_VERSION"),
    };
    Some(if v.is_empty() { f.name() } else { v })
}

/// The recording runtime (`libcommperf_pmpi_rt.so`), preloaded beside an interposer.
pub fn runtime_library() -> &'static [u8] {
    RUNTIME
}
