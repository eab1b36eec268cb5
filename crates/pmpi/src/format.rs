//! The rank file format, version 1 (`DIR/rank-N.cpmpi`, one per MPI rank).
//!
//! ```text
//! file   = magic frame*
//! magic  = "CPMPI\x00v1"                      (8 bytes)
//! frame  = kind:u32 len:u32 payload[len] fnv:u64   (little-endian; fnv = FNV-1a 64 of payload)
//! kind   1 header  JSON `Header`, always the first frame
//!        2 events  len/64 events (below)
//!        3 clock   JSON `ClockSync` (phase 0 at MPI_Init, 1 at MPI_Finalize)
//!        4 footer  JSON `Footer`: written by MPI_Finalize; a file without it was cut short
//!        5 drops   JSON {"drops": n}: events lost to full buffers so far
//! event  = kind:u8 flags:u8 pad:u16 peer:i32 tag:i32 comm:u32 bytes:u64
//!          t_post_enter:u64 t_post_exit:u64 t_done_enter:u64 t_done_exit:u64 thread:u64
//! ```
//! Times are the rank's CLOCK_MONOTONIC in ns; the clock frames map them to rank 0's clock.
//! `peer` is a world rank (the root for rooted collectives, -1 when none); `comm` is 0 for
//! MPI_COMM_WORLD, else a hash of the communicator's world ranks; `bytes` is the send size, or for
//! receives the size received. Frames are written whole by one writer, so a process killed
//! mid-run leaves whole frames; a partial frame or a wrong checksum is corruption.

use serde::{Deserialize, Serialize};

/// The first 8 bytes of every rank file.
pub const MAGIC: &[u8; 8] = b"CPMPI\x00v1";
/// `Header::format`.
pub const FORMAT_NAME: &str = "commperf-pmpi";
/// The format version this crate writes and reads.
pub const VERSION: u32 = 1;
/// Size of one event record.
pub const EVENT_BYTES: usize = 64;

/// `rank-N.cpmpi`.
pub fn rank_file_name(rank: u32) -> String {
    format!("rank-{rank}.cpmpi")
}

/// Frame kinds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FrameKind {
    Header = 1,
    Events = 2,
    Clock = 3,
    Footer = 4,
    Drops = 5,
}

/// What a rank says about itself at MPI_Init.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Header {
    pub format: String,
    pub version: u32,
    pub rank: u32,
    pub size: u32,
    pub pid: u32,
    pub host: String,
    /// `openmpi` or `mpich`: which interposer recorded this.
    pub mpi_flavour: String,
    /// MPI_Get_library_version.
    pub mpi_library: String,
    /// COMMPERF_PMPI_TAG: separates programs monitored at once.
    pub program_tag: String,
    pub clock: String,
    pub start_ns: u64,
    pub empty_wrappers: bool,
}

/// One Cristian exchange with rank 0: rank 0's clock ≈ local + offset_ns, within ± err_ns.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq)]
pub struct ClockSync {
    pub phase: u32,
    /// Local time when the offset was received.
    pub local_ns: u64,
    pub offset_ns: i64,
    pub err_ns: i64,
    pub rtt_ns: i64,
}

/// Written at MPI_Finalize.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq)]
pub struct Footer {
    pub events: u64,
    pub drops: u64,
    /// Nonblocking operations posted but never completed through a wrapped call.
    pub pending_requests: u64,
    pub end_ns: u64,
}

/// FNV-1a, 64 bit: cheap, and enough to tell a damaged frame from a whole one.
pub fn fnv1a(data: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in data {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// One whole frame, ready to be written with one call.
pub fn frame(kind: FrameKind, payload: &[u8]) -> Vec<u8> {
    let mut v = Vec::with_capacity(payload.len() + 16);
    v.extend_from_slice(&(kind as u32).to_le_bytes());
    v.extend_from_slice(&(payload.len() as u32).to_le_bytes());
    v.extend_from_slice(payload);
    v.extend_from_slice(&fnv1a(payload).to_le_bytes());
    v
}
