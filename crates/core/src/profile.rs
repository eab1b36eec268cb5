//! The profile file: what `commperf calibrate` measured about a network, in the form `predict`
//! needs it. The quiet-network cost `Tcom(size)` is kept as the fitted pieces themselves
//! (Papaefstathiou 2001 fits one line below a packet and one above), never as a raw link bandwidth:
//! the pieces carry the software overheads a bandwidth figure would leave out.

use crate::Machine;
use serde::{Deserialize, Serialize};

/// Version of the profile schema written by this build. Version 2 added the optional
/// [`Profile::pipeline`] section; version 1 profiles (without it) are still read.
pub const PROFILE_SCHEMA_VERSION: u32 = commperf_formats::version::PROFILE;

/// Oldest profile schema this build still reads.
pub const PROFILE_SCHEMA_OLDEST: u32 = commperf_formats::version::PROFILE_OLDEST;

/// Version of the [`PipelineProfile`] section's own layout.
pub const PIPELINE_SCHEMA_VERSION: u32 = commperf_formats::version::PIPELINE;

/// A calibrated (or hand-written) description of one network path.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Profile {
    pub schema_version: u32,
    /// Where the figures come from: `commperf calibrate --transport tcp`, `netgauge FILE`, `hand`.
    pub source: String,
    /// The transport that was measured, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transport: Option<String>,
    /// The machine the calibration ran on, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub machine: Option<Machine>,
    /// One-way quiet-network time as contiguous linear pieces, sorted by size: a size is costed
    /// by the piece whose `from_bytes..=to_bytes` holds it (the last piece extends to any size).
    pub tcom: Vec<TcomPiece>,
    /// LogGP parameters per message size (from `bench loggp` or a Netgauge file), for the LogGP
    /// model. May be empty: the LogGP model then derives its parameters from `tcom`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub loggp: Vec<LogGpPoint>,
    /// The measured points the pieces were fitted to: size and one-way time.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub points: Vec<TcomPoint>,
    /// The stages a large message is pipelined through, each as `β + P·τ` (Fröhlich et al. 2000,
    /// §3.2), for the pipeline model and adaptive fragmenting. Absent from version 1 profiles and
    /// from calibrations of transports without a measured pipeline.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pipeline: Option<PipelineProfile>,
}

/// The fitted stages of one transport's pipelined path: each stage costs
/// `beta_us + P · tau_us_per_byte` for a packet (fragment) of `P` bytes, fitted by linear
/// regression to non-pipelined transfers over a ladder of packet sizes (Fröhlich et al. 2000, §3.2,
/// Table 1).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PipelineProfile {
    /// [`PIPELINE_SCHEMA_VERSION`] of the writer.
    pub version: u32,
    /// The transport whose stages these are (`shm`, `tcp`, `uds`).
    pub transport: String,
    /// The stages in the order a packet passes them.
    pub stages: Vec<PipelineStage>,
    /// Bytes of the buffer the packets queue in between the ends (the shm ring), which bounds
    /// the packets in flight; absent where the transport has no such bound to model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capacity_bytes: Option<u64>,
    /// Bytes each packet occupies in that buffer beyond its payload (the record header).
    #[serde(default)]
    pub overhead_bytes: u64,
    /// Smallest and largest fragment the transport takes.
    pub min_fragment_bytes: u64,
    pub max_fragment_bytes: u64,
    /// The measured medians the stages were fitted to.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub points: Vec<StagePoint>,
    /// One-way times of messages pipelined in each fragment size of the ladder, at several
    /// message sizes: where the stages cost more per byte running at once than one at a time
    /// (fragments beyond the first-level cache), `max_fragment_bytes` was cut to the largest
    /// fragment within 3 % of the fastest at the 4 MiB message; and the model takes a
    /// pipeline's start-up and its steady state per cache level from them
    /// (`commperf_model::pipeline::PipelineModel::time_us`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pipelined: Vec<PipelinedPoint>,
}

/// The one-way time of a `message_bytes` message sent in fragments of `fragment_bytes`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PipelinedPoint {
    pub fragment_bytes: u64,
    pub message_bytes: u64,
    pub one_way_us: f64,
}

/// One fitted stage: `beta_us + P · tau_us_per_byte`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PipelineStage {
    pub name: String,
    pub beta_us: f64,
    pub tau_us_per_byte: f64,
    /// The fit's coefficient of determination over the ladder (a low one says the stage is not
    /// linear in the packet size on this machine).
    pub r2: f64,
}

/// Median time of each stage (in [`PipelineProfile::stages`] order) for packets of
/// `packet_bytes`, sent one at a time.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct StagePoint {
    pub packet_bytes: u64,
    pub stage_us: Vec<f64>,
}

/// `T(size) = intercept_us + slope_us_per_byte · size` for sizes in `from_bytes..=to_bytes`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TcomPiece {
    pub from_bytes: u64,
    pub to_bytes: u64,
    pub intercept_us: f64,
    pub slope_us_per_byte: f64,
}

/// One measured one-way time.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TcomPoint {
    pub size_bytes: u64,
    pub time_us: f64,
}

/// LogGP parameters measured at one message size (Netgauge's PRTT method): `o_s_us` and
/// `o_r_us` are the overheads of a message of this size (per-byte part included).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[allow(non_snake_case)]
pub struct LogGpPoint {
    pub size_bytes: u64,
    pub L_us: f64,
    pub o_s_us: f64,
    pub o_r_us: f64,
    pub g_us: f64,
    pub G_us_per_byte: f64,
    /// LogGOPS's per-byte overheads of this size's protocol (`bench loggp`; absent from
    /// Netgauge files and older profiles).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub O_s_us_per_byte: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub O_r_us_per_byte: Option<f64>,
    /// How far this protocol's one-way time falls below o_s + L + o_r + max(O_r, G)·s because
    /// the transport overlaps the two sides' work (`bench loggp`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub overlap_us: Option<f64>,
}
