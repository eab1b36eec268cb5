//! The engines: seed 003's contention model and a LogGP (LogGOPS) model over the same workload.

use crate::output::{Prediction, Timeline};
use crate::tcom::Tcom;
use crate::topology::{Network, RankMap};
use crate::workload::Workload;

/// Which model predicts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Model {
    /// Seed 003: link contention and background load over a topology.
    Contention,
    /// LogGP/LogGOPS: endpoint contention only (CPU overhead o, NIC gap g and G, latency L).
    LogGp,
}

/// Background load on every link.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Background {
    None,
    /// The same fraction of every link's bandwidth, all the time.
    Const(f64),
    /// Exponentially distributed around `mean` per link, redrawn every `period_ns` (seed 003
    /// Listing Seven), capped at 0.95.
    Exp {
        mean: f64,
        period_ns: f64,
    },
}

/// Bandwidth and latency of one link class.
#[derive(Debug, Clone, PartialEq)]
pub struct LinkClass {
    pub name: String,
    /// Bytes per ns; None = the profile's peak bandwidth (the link Tcom was measured over).
    pub bandwidth_bytes_per_ns: Option<f64>,
    /// Latency added per crossing of a link of this class, beyond what Tcom already holds.
    pub latency_ns: f64,
}

/// LogGP parameters (ns), for the LogGP model.
#[derive(Debug, Clone, Copy, PartialEq)]
#[allow(non_snake_case)]
pub struct LogGp {
    pub L_ns: f64,
    pub o_s_ns: f64,
    pub o_r_ns: f64,
    pub g_ns: f64,
    pub G_ns_per_byte: f64,
    /// Per-byte CPU overhead (LogGOPS O); 0 for plain LogGP.
    pub O_ns_per_byte: f64,
}

/// Everything but the inputs.
#[derive(Debug, Clone, PartialEq)]
pub struct PredictConfig {
    pub model: Model,
    /// Messages up to this size are eager (sent without waiting for the receive); larger ones
    /// wait for the matching receive (rendezvous).
    pub eager_threshold_bytes: u64,
    pub background: Background,
    pub seed: u64,
    /// Classes not listed use the profile's bandwidth and no extra latency.
    pub link_classes: Vec<LinkClass>,
    /// Packet size for the knee capacity.
    pub packet_bytes: u64,
    /// Record a timeline (spans and messages).
    pub timeline: bool,
}

impl Default for PredictConfig {
    fn default() -> Self {
        PredictConfig {
            model: Model::Contention,
            eager_threshold_bytes: 64 * 1024,
            background: Background::None,
            seed: 1,
            link_classes: Vec::new(),
            packet_bytes: 4096,
            timeline: false,
        }
    }
}

/// The inputs of one prediction.
#[derive(Debug, Clone, Copy)]
pub struct Inputs<'a> {
    pub workload: &'a Workload,
    pub network: &'a dyn Network,
    pub rank_map: &'a RankMap,
    pub tcom: &'a Tcom,
    /// LogGP parameters (LogGP model); None derives them from `tcom`.
    pub loggp: Option<&'a LogGp>,
    /// Names for the summary: trace path, format, profile source.
    pub trace_name: &'a str,
    pub trace_format: &'a str,
    pub profile_name: &'a str,
}

/// Why a prediction failed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PredictError {
    #[error("deadlock at {at_us:.3} µs: {stuck} operations can never start or finish; first: rank {rank}, operation {op} ({what})")]
    Deadlock {
        at_us: f64,
        stuck: u64,
        rank: u32,
        op: u32,
        what: String,
    },
    #[error(transparent)]
    Topology(#[from] crate::topology::TopologyError),
    #[error("bad configuration: {0}")]
    Config(String),
}

/// A prediction and, when asked for, its timeline.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    pub prediction: Prediction,
    pub timeline: Option<Timeline>,
}

/// Predicts the workload's communication time.
pub fn predict(inputs: &Inputs<'_>, cfg: &PredictConfig) -> Result<Outcome, PredictError> {
    let _ = (inputs, cfg);
    Err(PredictError::Config("not implemented yet".into()))
}
