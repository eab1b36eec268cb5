//! The result file: one [`Report`] per run, one [`Row`] per benchmark × transport × mode × size.
//!
//! Field names carry their unit (`p50_us`, `mb_per_s` with MB = 1e6 bytes, `msgs_per_s`), so a
//! reader never guesses. Optional figures are omitted, not zeroed: a latency row has no
//! `mb_per_s`, and a missing number is better than a wrong one. `schema_version` changes when a
//! field changes meaning or disappears; adding a field does not change it.

use crate::disturbance::Disturbance;
use crate::{Benchmark, Mode, TransportKind};
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

pub use crate::row::{
    CostFigures, CostVariant, Figures, FlatRow, LatencyFigures, LogGpFigures, Percentiles,
    PipelineFigures, Row, RowError, StreamFigures,
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_omit_absent_figures_and_round_trip() {
        let mut r = Row::new(Benchmark::Bw, TransportKind::Tcp, Mode::Poll, 1 << 20);
        if let Some(s) = r.stream_mut() {
            s.mb_per_s = Some(5000.5);
        }
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
