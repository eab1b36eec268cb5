//! The rank file format, version 5 (`DIR/rank-N.cpmpi`, one per MPI rank).
//!
//! ```text
//! file   = magic frame*
//! magic  = "CPMPI\x00v5"                      (8 bytes; "CPMPI\x00v1" … "…v4" for versions 1-4)
//! frame  = kind:u32 len:u32 payload[len] sum:u64   (little-endian)
//!          v2, v3: sum = fnv64w(payload), word-wise (below); v1: sum = FNV-1a 64, bytewise
//! kind   1 header  JSON `Header`, always the first frame
//!        2 events  len/64 events (below)
//!        3 clock   JSON `ClockSync` (phase 0 at MPI_Init, 1 at MPI_Finalize)
//!        4 footer  JSON `Footer`: written by MPI_Finalize; a file without it was cut short
//!        5 drops   JSON {"drops": n}: events lost to full buffers so far
//!        6 comm    JSON `CommDef`: a communicator's members, written when it is first used (v3)
//!        7 calls   JSON `Vec<CallStat>`: every MPI function called, counted and timed,
//!                  written by MPI_Finalize (v3)
//!        8 sites   JSON `Sites`: the calls per call site (function, caller's address),
//!                  written by MPI_Finalize (v3)
//!        9 neighbors JSON `NeighborDef`: this rank's neighbours in a communicator's process
//!                  topology, written when it first runs a neighbourhood collective (v4)
//!       10 counts  JSON `NeighborCounts`: the bytes to and from each neighbour of an
//!                  MPI_Neighbor_alltoallv/w (or I-form) call, written the first time a rank
//!                  sees those sizes; the call's event carries its `index` in `peer` (v5)
//! event  = kind:u8 flags:u8 pad:u16 peer:i32 tag:i32 comm:u32 bytes:u64
//!          t_post_enter:u64 t_post_exit:u64 t_done_enter:u64 t_done_exit:u64 thread:u64
//! ```
//! Times are the rank's CLOCK_MONOTONIC in ns; the clock frames map them to rank 0's clock.
//! `peer` is a world rank (the root for rooted collectives, -1 when none); `comm` is 0 for
//! MPI_COMM_WORLD, else a hash of the communicator's world ranks; `bytes` is the send size, or for
//! receives the size received. Frames are written whole by one writer, so a process killed
//! mid-run leaves whole frames; a partial frame or a wrong checksum is corruption.
//!
//! Why version 2: the writer thread checksums every event it writes, and bytewise FNV-1a (one
//! dependent multiply per byte, 64 per event) was ~14 % of the samples of a call-heavy program.
//! Version 2 changes only the checksum: [`fnv64w`] takes 8-byte words in four independent lanes
//! (one multiply per word, four chains in flight). Version 3 adds frames 6 and 7 (the
//! communicators' members, so that collectives on any communicator can be replayed, and the
//! per-function call statistics of every wrapped MPI function). Version 4 adds frame 9 (a
//! rank's neighbours in a process topology, so that neighbourhood collectives can be replayed
//! as the messages they are; a neighbourhood collective's event carries the number of its
//! neighbour lists in `tag`). Version 5 adds frame 10 (the v/w neighbourhood all-to-alls' sizes
//! per neighbour, so that they too can be replayed message by message: their event's `bytes` is
//! the rank's total). Versions 1 to 4 are still read.

use serde::{Deserialize, Serialize};

/// The first 8 bytes of every rank file this crate writes.
pub const MAGIC: &[u8; 8] = b"CPMPI\x00v5";
/// The magic of version 1 files (still read).
pub const MAGIC_V1: &[u8; 8] = b"CPMPI\x00v1";
/// The magic of version 2 files (still read).
pub const MAGIC_V2: &[u8; 8] = b"CPMPI\x00v2";
/// The magic of version 3 files (still read).
pub const MAGIC_V3: &[u8; 8] = b"CPMPI\x00v3";
/// The magic of version 4 files (still read).
pub const MAGIC_V4: &[u8; 8] = b"CPMPI\x00v4";
/// `Header::format`.
pub const FORMAT_NAME: &str = "commperf-pmpi";
/// The format version this crate writes.
pub const VERSION: u32 = 5;
/// The versions this crate reads.
pub const READ_VERSIONS: [u32; 5] = [1, 2, 3, 4, 5];

/// The magic of a format version, if this crate knows it.
pub fn magic(version: u32) -> Option<&'static [u8; 8]> {
    match version {
        1 => Some(MAGIC_V1),
        2 => Some(MAGIC_V2),
        3 => Some(MAGIC_V3),
        4 => Some(MAGIC_V4),
        5 => Some(MAGIC),
        _ => None,
    }
}

/// The checksum a frame of `version` carries.
pub fn checksum(version: u32, payload: &[u8]) -> u64 {
    if version == 1 {
        fnv1a(payload)
    } else {
        fnv64w(payload)
    }
}
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
    Comm = 6,
    Calls = 7,
    Sites = 8,
    Neighbors = 9,
    NeighborCounts = 10,
}

/// One call site: one MPI function called from one return address, on one rank.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Site {
    pub call: String,
    /// The caller's return address, the module (shared object or program) holding it and the
    /// module's load address: `addr - base` is the address within a position-independent
    /// module, `addr` itself within a program linked at a fixed address.
    pub addr: u64,
    pub module: String,
    pub base: u64,
    /// The nearest exported symbol at or before the address (dladdr), and its address; empty
    /// when there is none (a static function, a stripped program).
    pub symbol: String,
    pub symbol_addr: u64,
    pub count: u64,
    /// Calls timed (polls are sampled, one in 64), and their time.
    pub timed_count: u64,
    pub time_ns: u64,
    pub sent_bytes: u64,
    pub received_bytes: u64,
}

/// A rank's call sites, and how many calls found no room in its per-thread site tables.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct Sites {
    pub sites: Vec<Site>,
    pub overflow_calls: u64,
}

/// A communicator's members, as the rank that first used it saw them: `world[i]` is the world
/// rank of its rank i (of the remote group for an inter-communicator). `id` is what events carry
/// in `comm`: a hash of the members, so every member names it alike without talking.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct CommDef {
    pub id: u32,
    pub inter: bool,
    pub world: Vec<u32>,
}

/// One rank's neighbours in a communicator's process topology (Cartesian, graph or distributed
/// graph), as world ranks in the order the standard gives them to neighbourhood collectives
/// (MPI-3.1 §7.6): the in-neighbours it receives from (`sources`), the out-neighbours it sends
/// to (`destinations`); None for MPI_PROC_NULL (a non-periodic Cartesian border), which counts
/// in the degree but moves nothing. `id` is the communicator's (as in `CommDef`); `index`
/// numbers this rank's neighbour lists, and a neighbourhood collective's event carries it in
/// `tag` (two topologies over one group share an id, not an index).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct NeighborDef {
    pub id: u32,
    pub index: u32,
    pub sources: Vec<Option<u32>>,
    pub destinations: Vec<Option<u32>>,
}

/// The bytes of one MPI_Neighbor_alltoallv/w (or MPI_Ineighbor_alltoallv/w) call per neighbour,
/// slot by slot in the standard's order (as [`NeighborDef`] lists the neighbours, MPI_PROC_NULL's
/// slots included): `sends[j]` to out-neighbour j (count × size of the send type), `recvs[i]`
/// the receive buffer's room for in-neighbour i. `index` numbers this rank's distinct size
/// lists; the call's event carries it in `peer` (-1: not recorded). A rank writes one frame per
/// distinct list it sees (a call repeated with the same sizes reuses it).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct NeighborCounts {
    pub index: u32,
    pub sends: Vec<u64>,
    pub recvs: Vec<u64>,
}

/// One MPI function's calls on one rank, over the monitored part of the run.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct CallStat {
    /// The MPI name (`MPI_Alltoall`); a Fortran caller's calls are `mpi_alltoall` rows apart.
    pub call: String,
    pub count: u64,
    /// How many of the calls were timed: all but the polling calls (the Test family, Iprobe,
    /// Improbe, Win_test), of which one in 64 is; `time_ns`, `min_ns`, `max_ns` are theirs.
    pub timed_count: u64,
    /// Time inside the timed calls: sum, shortest and longest (ns).
    pub time_ns: u64,
    pub min_ns: u64,
    pub max_ns: u64,
    /// Bytes the calls read from their send buffer arguments and wrote into their receive
    /// buffer arguments (an MPI_Alltoall sends count × type size to every rank, the rank's whole
    /// send buffer; the root of a Bcast sends its buffer, the others receive it).
    pub sent_bytes: u64,
    pub received_bytes: u64,
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

/// FNV-1a, 64 bit, bytewise: the version 1 checksum.
pub fn fnv1a(data: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in data {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
const FNV_PRIME: u64 = 0x0100_0000_01b3;

/// The version 2 checksum: FNV-1a's step (xor, multiply by the FNV prime) on little-endian
/// 8-byte words, word i into lane i mod 4, the lanes then folded with the same step together with
/// the length; a tail shorter than a word is zero-padded (the length tells it apart).
///
/// Why it is enough: each step is a bijection of the running value for a fixed word, and of the
/// word for a fixed running value (the prime is odd), so changing any one word (any burst of up
/// to 8 aligned bytes, any single flipped byte or bit) always changes the sum; truncation is
/// caught by the frame length before the sum is looked at. It is not a cryptographic hash and
/// need not be: it tells a damaged frame from a whole one.
pub fn fnv64w(data: &[u8]) -> u64 {
    let mut lane = [FNV_OFFSET, FNV_OFFSET ^ 1, FNV_OFFSET ^ 2, FNV_OFFSET ^ 3];
    let mut blocks = data.chunks_exact(32);
    for b in &mut blocks {
        for (i, l) in lane.iter_mut().enumerate() {
            let w = u64::from_le_bytes(b[i * 8..i * 8 + 8].try_into().expect("8 bytes"));
            *l = (*l ^ w).wrapping_mul(FNV_PRIME);
        }
    }
    let rest = blocks.remainder();
    let mut words = rest.chunks(8);
    for l in lane.iter_mut() {
        let Some(c) = words.next() else { break };
        let mut w = [0u8; 8];
        w[..c.len()].copy_from_slice(c);
        *l = (*l ^ u64::from_le_bytes(w)).wrapping_mul(FNV_PRIME);
    }
    let mut h = (FNV_OFFSET ^ data.len() as u64).wrapping_mul(FNV_PRIME);
    for l in lane {
        h = (h ^ l).wrapping_mul(FNV_PRIME);
    }
    // Fold the high bits down: a multiply moves information only upwards.
    h ^ (h >> 29)
}

/// One whole frame of the current version, ready to be written with one call.
pub fn frame(kind: FrameKind, payload: &[u8]) -> Vec<u8> {
    frame_of(VERSION, kind, payload)
}

/// One whole frame of `version` (1 or 2): what the tests write version 1 files with.
pub fn frame_of(version: u32, kind: FrameKind, payload: &[u8]) -> Vec<u8> {
    let mut v = Vec::with_capacity(payload.len() + 16);
    v.extend_from_slice(&[0; 8]);
    v.extend_from_slice(payload);
    seal_of(version, kind, &mut v);
    v
}

/// Turns `buf` = 8 reserved bytes + payload into a whole frame in place (header filled in,
/// checksum appended): the writer thread's path, which builds its events behind the reserved
/// bytes and so never copies them again.
pub fn seal(kind: FrameKind, buf: &mut Vec<u8>) {
    seal_of(VERSION, kind, buf)
}

fn seal_of(version: u32, kind: FrameKind, buf: &mut Vec<u8>) {
    debug_assert!(buf.len() >= 8);
    let len = buf.len() - 8;
    buf[..4].copy_from_slice(&(kind as u32).to_le_bytes());
    buf[4..8].copy_from_slice(&(len as u32).to_le_bytes());
    let sum = checksum(version, &buf[8..]);
    buf.extend_from_slice(&sum.to_le_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnv1a_matches_the_published_test_vectors() {
        // From the FNV reference (draft-eastlake-fnv): "" and "a".
        assert_eq!(fnv1a(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a(b"a"), 0xaf63_dc4c_8601_ec8c);
    }

    #[test]
    fn fnv64w_changes_with_every_single_byte_and_with_the_length() {
        let data: Vec<u8> = (0..203u32).map(|i| (i * 7 + 3) as u8).collect();
        for n in [0, 1, 7, 8, 9, 31, 32, 33, 64, 100, 203] {
            let d = &data[..n];
            let h = fnv64w(d);
            for i in 0..n {
                for bit in [0x01, 0x80] {
                    let mut e = d.to_vec();
                    e[i] ^= bit;
                    assert_ne!(fnv64w(&e), h, "len {n}, byte {i}, bit {bit:#x}");
                }
            }
            // A zero byte appended is not the zero padding of the tail.
            let mut z = d.to_vec();
            z.push(0);
            assert_ne!(fnv64w(&z), h, "len {n} + a zero byte");
        }
        // Swapping two words of different lanes changes the sum too.
        let mut s = data[..64].to_vec();
        s[..8].copy_from_slice(&data[8..16]);
        s[8..16].copy_from_slice(&data[..8]);
        assert_ne!(fnv64w(&s), fnv64w(&data[..64]));
    }

    #[test]
    fn seal_builds_the_same_frame_as_frame() {
        let payload = b"0123456789abcdefXYZ";
        let mut buf = vec![0u8; 8];
        buf.extend_from_slice(payload);
        seal(FrameKind::Events, &mut buf);
        assert_eq!(buf, frame(FrameKind::Events, payload));
        assert_eq!(&buf[..4], &2u32.to_le_bytes());
        assert_eq!(&buf[4..8], &(payload.len() as u32).to_le_bytes());
        assert_eq!(&buf[8 + payload.len()..], &fnv64w(payload).to_le_bytes());
        let v1 = frame_of(1, FrameKind::Events, payload);
        assert_eq!(&v1[8 + payload.len()..], &fnv1a(payload).to_le_bytes());
    }
}
