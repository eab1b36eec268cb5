//! The result file: one [`Report`] per run, one [`Row`] per benchmark × transport × mode × size.
//!
//! Field names carry their unit (`p50_us`, `mb_per_s` with MB = 1e6 bytes, `msgs_per_s`), so a
//! reader never guesses. Optional figures are omitted, not zeroed: a latency row has no
//! `mb_per_s`, and a missing number is better than a wrong one. `schema_version` changes when a
//! field changes meaning or disappears; adding a field does not change it.

use crate::disturbance::Disturbance;
use crate::{Benchmark, BufferUse, Mode, TransportKind};
use serde::{Deserialize, Serialize};

/// Version of the result schema written by this build.
///
/// 2: `L_us` of a loggp row is LogGOPS's size-independent L of the row's protocol piece (it was
/// Kutluğ's (2000) latency − o_s − o_r at that size, which could be negative); loggp rows gained
/// the per-byte overheads, the overlap and the piece; any row may carry `notes`.
pub const SCHEMA_VERSION: u32 = commperf_formats::version::RESULT;

/// A whole run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Report {
    pub schema_version: u32,
    /// `commperf <version>`.
    pub tool: String,
    /// Seconds since the Unix epoch when the run started.
    pub started_unix_s: u64,
    pub machine: Machine,
    pub options: Options,
    /// Where the two ends ran.
    pub placement: Placement,
    /// Physical limits measured in the same run (present when an shm benchmark ran).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limits: Option<Limits>,
    pub results: Vec<Row>,
    /// What disturbed the measurement, when something did: another commperf measurement at
    /// the same time, or CPU contention ([`crate::disturbance`]); absent when nothing did and
    /// in files from before it was looked for.
    #[serde(default, skip_serializing_if = "Disturbance::is_empty")]
    pub disturbance: Disturbance,
    /// The run was interrupted (Ctrl-C) and holds only the measurements that finished before.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub partial: bool,
}

/// The machine the local end ran on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Machine {
    pub hostname: String,
    pub cpu_model: String,
    /// Logical CPUs online.
    pub cores: usize,
    pub kernel: String,
    pub timer: TimerInfo,
}

/// The clock used for every timing in the run, and what reading it costs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TimerInfo {
    /// `tsc` (calibrated invariant time-stamp counter) or `monotonic` (CLOCK_MONOTONIC).
    pub source: String,
    /// TSC frequency found by calibration, when the source is `tsc`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tsc_ghz: Option<f64>,
    /// Mean cost of one timer read, measured back to back.
    pub cost_ns: f64,
}

/// The options the run was made with (the client's; a served peer follows them).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Options {
    pub benchmarks: Vec<Benchmark>,
    pub transports: Vec<TransportKind>,
    pub modes: Vec<Mode>,
    pub sizes_bytes: Vec<u64>,
    /// Fixed iteration count, or absent for the size-dependent defaults.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iterations: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warmup: Option<u64>,
    pub window: u32,
    pub validate: bool,
    /// `local` (peer process started by commperf), `peer` (a `commperf serve` elsewhere) or
    /// `mpi` (ranks placed by mpirun).
    pub launcher: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peer: Option<String>,
    /// The MPI library the ranks ran with (`Open MPI v4.1.4`), for MPI launches.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mpi_library: Option<String>,
    /// MPI launches: `blocking` (MPI_Send, MPI_Recv) or `nonblocking` (MPI_Isend, MPI_Irecv
    /// and MPI_Wait), the calls of loggp's and bufmgmt's sends and receives.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mpi_calls: Option<String>,
}

/// CPU placement of the two ends.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Placement {
    /// Whether `--cpus` (or the default placement) pinned both ends.
    pub pinned: bool,
    /// CPU the local end was pinned to, or last ran on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub local_cpu: Option<usize>,
    /// CPU the peer was pinned to, or last ran on, as the peer reported it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peer_cpu: Option<usize>,
    /// Whether each end was pinned (a `--peer` run pins only this end unless `--cpus` names
    /// the peer's CPU); absent in files from before they were recorded, where `pinned` speaks
    /// for both.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub local_pinned: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peer_pinned: Option<bool>,
    /// What is wrong with the placement, when something is: both ends on one CPU take turns
    /// on it, and their latencies are the scheduler's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warning: Option<String>,
}

/// Physical limits of this machine (`commperf limits`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Limits {
    /// One-way time of a cache line bouncing between the two CPUs (round trip / 2), median.
    pub cacheline_one_way_us: f64,
    /// memcpy bandwidth with source and destination in cache (MB = 1e6 B).
    pub memcpy_in_cache_mb_per_s: f64,
    /// memcpy bandwidth with buffers far larger than the last-level cache.
    pub memcpy_out_of_cache_mb_per_s: f64,
    /// Buffer sizes used for the two memcpy figures.
    pub memcpy_in_cache_bytes: u64,
    pub memcpy_out_of_cache_bytes: u64,
    /// CPUs the cache-line ping-pong ran between.
    pub cpus: [usize; 2],
    /// The same two memcpy figures with both CPUs copying at once, each its own half: the
    /// fastest any transport between two processes on these CPUs could move the bytes (a
    /// pipelined transport copies on both sides at once, and can beat one CPU's memcpy).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memcpy_two_cpus_in_cache_mb_per_s: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memcpy_two_cpus_out_of_cache_mb_per_s: Option<f64>,
}

/// One measured point.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[allow(non_snake_case)] // `L_us`: LogGP's L, which must not read as a lower-case l
pub struct Row {
    pub benchmark: Benchmark,
    pub transport: TransportKind,
    pub mode: Mode,
    pub size_bytes: u64,
    /// Timed iterations (ping-pongs for latency, windows for bw/bibw/mr).
    pub iterations: u64,
    /// Untimed warm-up iterations run first.
    pub warmup: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window: Option<u32>,
    /// One-way latency percentiles (latency benchmark).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p50_us: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p90_us: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p99_us: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_us: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_us: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mean_us: Option<f64>,
    /// Standard uncertainty of `p50_us` (from the order statistics around the median): two of
    /// these either side is a ~95 % interval.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p50_noise_us: Option<f64>,
    /// Bandwidth, MB = 1e6 bytes (bw, bibw, mr).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mb_per_s: Option<f64>,
    /// Messages per second (bw, bibw, mr).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub msgs_per_s: Option<f64>,
    /// Fraction of the physical limit reached (shm only): `limit_us / p50_us` for latency,
    /// `mb_per_s / limit_mb_per_s` for bw and mr.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub efficiency: Option<f64>,
    /// The latency limit this row is judged against, measured just before it (the vCPUs of a
    /// VM move between cores, so a limit from the start of the run may not apply): one-way
    /// cache-line time between the two CPUs plus size ÷ memcpy bandwidth at this size.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit_us: Option<f64>,
    /// The bandwidth limit this row is judged against: memcpy bandwidth at this size.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit_mb_per_s: Option<f64>,
    /// Extended benchmarks: the standard (polling, reused-buffer) latency p50 measured in the
    /// same run, and this row's p50 minus it ("cost over standard latency").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub baseline_p50_us: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_us: Option<f64>,
    /// The noise band of `cost_us` (twice the standard uncertainty of the difference, including
    /// the baseline's drift during the measurement): a cost within it is no measurable cost.
    /// Below zero within it a cost is given as 0; below zero beyond it it is re-measured, and
    /// left out with a note if it stays there (except where the variant can save time: then it
    /// is a saving).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_noise_us: Option<f64>,
    /// conns: endpoints the client held open and swept for completions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connections: Option<u32>,
    /// noncontig: the message was sent from this many scattered segments, gathered by the
    /// transport (`packed` false) or packed into one buffer first (`packed` true).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub segments: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub packed: Option<bool>,
    /// bufmgmt: the variant's buffers (fresh per message, or registered memory used in place);
    /// its baseline is the standard latency, from one private buffer copied in and out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub buffers: Option<BufferUse>,
    /// Blocking mode: checks spun before sleeping (0 = block at once; more = spin-then-block).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub block_spins: Option<u32>,
    /// LogGOPS (loggp benchmark). Per size: `o_s_us` and `o_r_us`, the CPU time of one send and
    /// one receive of this size, and `gap_us`, g + G·s measured at this size. Per protocol
    /// piece (`piece_from_bytes` ..= `piece_to_bytes`, the same on every row of the piece): the
    /// fixed overheads `o_s_fixed_us`, `o_r_fixed_us` and per-byte ones `O_s_us_per_byte`,
    /// `O_r_us_per_byte` (o + O·s per side), the gap `g_us` and `G_us_per_byte`, the
    /// size-independent network latency `L_us` and `overlap_us`, how far the one-way time falls
    /// below o_s + L + o_r + max(O_r, G)·s because the transport overlaps the two sides' work;
    /// `model_us` is LogGOPS's one-way time at this size with those parameters (`p50_us` holds
    /// the measured one). Where the layer can post a send and a receive at once (MPI),
    /// `exchange_us` is one exchange at this size, both sides sending and receiving together,
    /// and the piece's `send_wait_us` the part of the send call spent waiting for the receiver
    /// (the exchange is that much below o_s + o_r), or its `duplex_us`, how much the exchange
    /// takes beyond o_s + o_r where the two directions slow each other. A figure that is not
    /// identifiable at the measured sizes, or came out below zero beyond its noise, is absent and a
    /// note says why; none is ever negative.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub o_s_us: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub o_r_us: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gap_us: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub o_s_fixed_us: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub O_s_us_per_byte: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub o_r_fixed_us: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub O_r_us_per_byte: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub g_us: Option<f64>,
    #[serde(
        default,
        rename = "G_us_per_byte",
        skip_serializing_if = "Option::is_none"
    )]
    pub gap_per_byte_us: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub L_us: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub overlap_us: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exchange_us: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub send_wait_us: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duplex_us: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_us: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub piece_from_bytes: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub piece_to_bytes: Option<u64>,
    /// pipeline: the fragment size the message was sent in (the largest, for a message the
    /// adaptive choice sends whole).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fragment_bytes: Option<u64>,
    /// pipeline: how the fragment size was chosen: `fixed`, or the adaptive rule that chose it
    /// (`adaptive: eq8`, `adaptive: recurrence`, `adaptive: whole`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fragment_rule: Option<String>,
    /// pipeline: Fröhlich et al.'s (2000) eq. 7 at this size and fragment (the approximation
    /// `model_us`, the exact recurrence, is compared with).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub eq7_us: Option<f64>,
    /// Pairs of ranks that measured at once (OSU's multi-pair tests, under `--launcher mpi` or
    /// `--transport mpi` with more than two ranks): bandwidth and message rate are then sums
    /// over the pairs (osu_mbw_mr), latency figures the mean of each pair's figure
    /// (osu_multi_lat). Absent for one pair.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pairs: Option<u32>,
    /// Whether every payload byte was checked.
    pub validated: bool,
    /// Why a figure of this row is absent or was judged (within noise, re-measured, not
    /// identifiable), in words; empty for most rows.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

impl Row {
    /// A row with identity fields set and every figure absent.
    pub fn new(
        benchmark: Benchmark,
        transport: TransportKind,
        mode: Mode,
        size_bytes: u64,
    ) -> Self {
        Row {
            benchmark,
            transport,
            mode,
            size_bytes,
            iterations: 0,
            warmup: 0,
            window: None,
            p50_us: None,
            p90_us: None,
            p99_us: None,
            min_us: None,
            max_us: None,
            mean_us: None,
            p50_noise_us: None,
            mb_per_s: None,
            msgs_per_s: None,
            efficiency: None,
            limit_us: None,
            limit_mb_per_s: None,
            baseline_p50_us: None,
            cost_us: None,
            cost_noise_us: None,
            block_spins: None,
            connections: None,
            segments: None,
            packed: None,
            buffers: None,
            o_s_us: None,
            o_r_us: None,
            gap_us: None,
            o_s_fixed_us: None,
            O_s_us_per_byte: None,
            o_r_fixed_us: None,
            O_r_us_per_byte: None,
            g_us: None,
            gap_per_byte_us: None,
            L_us: None,
            overlap_us: None,
            exchange_us: None,
            send_wait_us: None,
            duplex_us: None,
            model_us: None,
            piece_from_bytes: None,
            piece_to_bytes: None,
            fragment_bytes: None,
            fragment_rule: None,
            eq7_us: None,
            pairs: None,
            validated: false,
            notes: Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_omit_absent_figures_and_round_trip() {
        let mut r = Row::new(Benchmark::Bw, TransportKind::Tcp, Mode::Poll, 1 << 20);
        r.mb_per_s = Some(5000.5);
        let v = serde_json::to_value(&r).unwrap();
        assert_eq!(v["benchmark"], "bw");
        assert_eq!(v["transport"], "tcp");
        assert_eq!(v["size_bytes"], 1048576);
        assert_eq!(v["mb_per_s"], 5000.5);
        assert!(v.get("p50_us").is_none());
        let back: Row = serde_json::from_value(v).unwrap();
        assert_eq!(back, r);
    }
}
