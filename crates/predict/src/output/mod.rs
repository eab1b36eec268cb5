//! What a prediction tells: one documented result struct ([`Prediction`], with
//! `schema_version` and units in field names) and an optional [`Timeline`] of spans and
//! messages, with small renderers (table, Chrome trace-event JSON, SVG space-time diagram).

use serde::{Deserialize, Serialize};

pub mod chrome;
#[cfg(test)]
mod fixtures;
pub mod svg;
pub mod table;

/// Version of the prediction schema written by this build.
pub const PREDICTION_SCHEMA_VERSION: u32 = commperf_formats::version::PREDICTION;

/// The JSON summary of one prediction.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Prediction {
    pub schema_version: u32,
    /// `commperf <version>`.
    pub tool: String,
    /// `contention` (Papaefstathiou 2001), `loggp` (LogGOPS as LogGOPSim charges it, endpoint
    /// contention only) or `loggp (last-byte)` (the same with LogGP's original receive,
    /// `--loggp-receive`).
    pub model: String,
    pub trace: String,
    pub trace_format: String,
    pub topology: String,
    /// Where Tcom (or LogGP) came from: the profile's `source`, or `default`.
    pub profile: String,
    /// `none`, `const:F` or `exp:F`.
    pub background: String,
    pub seed: u64,
    pub eager_threshold_bytes: u64,
    pub ranks_count: u32,
    pub operations: u64,
    pub messages: u64,
    /// Event horizons processed (contention) or events (LogGP).
    pub events: u64,
    /// When the last rank finished.
    pub total_us: f64,
    pub ranks: Vec<RankTimes>,
    /// Links that carried traffic, by link id (contention model only).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub links: Vec<LinkUse>,
    /// The busiest links (by busy time, then bytes), busiest first: names `from->to`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub bottlenecks: Vec<String>,
    /// Knee capacity of the busiest link (Papaefstathiou 2001, Figure 5).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub knee: Option<Knee>,
    /// Best, average and worst case over background-load draws (`--bounds`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bounds: Option<Bounds>,
}

/// When a rank finished, and where its time went: computing, communicating (a message of it in
/// flight while it does not compute), or waiting (neither).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RankTimes {
    pub rank: u32,
    pub host: String,
    pub finish_us: f64,
    pub compute_us: f64,
    pub comm_us: f64,
    pub wait_us: f64,
}

/// One directed link's use over the run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct LinkUse {
    pub id: u32,
    pub from: String,
    pub to: String,
    pub class: String,
    /// Bytes moved over the link (through the inverse of Tcom).
    pub bytes: f64,
    /// Time with at least one message on the link.
    pub busy_us: f64,
    /// busy_us / total_us.
    pub utilization: f64,
    /// Most messages sharing the link at once.
    pub max_contention: u32,
}

/// Papaefstathiou (2001) Figure 5: the busiest link's throughput in packets per second against what
/// it can carry under the background load.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Knee {
    pub link: String,
    pub packet_bytes: u64,
    /// Packets per second the link carries at full availability (from Tcom's peak bandwidth and
    /// the link's class), reduced by the mean background load: the knee.
    pub capacity_pkts_per_s: f64,
    /// Packets per second it carried while busy.
    pub busy_throughput_pkts_per_s: f64,
    /// Packets per second over the whole run.
    pub mean_throughput_pkts_per_s: f64,
    pub background_load: f64,
}

/// `--bounds`: the spread of the predicted total.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Bounds {
    /// Without background load.
    pub best_us: f64,
    /// Mean over the background draws.
    pub average_us: f64,
    /// Worst background draw.
    pub worst_us: f64,
    /// Number of seeded background draws.
    pub runs: u32,
}

/// What each rank did when, and every message: the space-time diagram's content.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Timeline {
    pub nranks: u32,
    pub spans: Vec<Span>,
    pub messages: Vec<Arrow>,
}

/// A kind of span on a rank's line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SpanKind {
    Compute,
    Send,
    Recv,
    /// A wait or waitall: the rank is blocked on requests.
    Wait,
}

/// An operation's lifetime on a rank: from start to completion, in ns of virtual time.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Span {
    pub rank: u32,
    pub kind: SpanKind,
    pub start_ns: f64,
    pub end_ns: f64,
    /// The other rank of a send or receive.
    pub peer: Option<u32>,
    pub bytes: u64,
}

/// A message: from the start of its transfer at the sender to its arrival at the receiver.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Arrow {
    pub src: u32,
    pub dst: u32,
    pub bytes: u64,
    pub start_ns: f64,
    pub end_ns: f64,
}
