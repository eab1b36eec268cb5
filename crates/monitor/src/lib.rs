//! commperf's communication monitor: Liao et al.'s (1998) Shrimp firmware monitor, rebuilt in
//! software below the programming model.
//!
//! Why a monitor and not a benchmark: a benchmark says how fast the communication layer can be;
//! the monitor says how fast it was for one program, where the time went (source, net,
//! destination, waiting for a late sender) and how that compares with a quiet run. It must cost
//! the program almost nothing, so recording is a handful of clock reads and integer adds into
//! per-endpoint memory, and everything else (merging, signatures, files) happens off the hot
//! path.
//!
//! * [`Monitored`] decorates any [`commperf_transport::Endpoint`] (a scenario adapter in EPOS's
//!   sense) and records every message without changing what the application sees.
//! * [`clock`] is the software global clock: Cristian's minimum-round-trip offset, distributed
//!   by rank 0, with drift between rare re-synchronizations and a measured error bound.
//! * [`hist`] holds the 2-D size × latency histograms per stage, keyed by sender, receiver,
//!   type and program, and [`MsgRecord`], the transport-independent input the MPI interposer
//!   also feeds.
//! * [`signature`] turns histograms and a baseline into Liao et al.'s (1998) performance signature.
//! * [`trace`] keeps optional per-message records and writes them as a trace `predict` replays.
//! * [`run`] is the saved run file.
//! * [`mpi`] reads a monitored MPI program's run directory into the same run file.
//! * [`workload`] is the monitor's own workload (`monitor run`): both ends, the rounds, the
//!   flushes, and the notes `monitor report` adds to a saved run.
//!
//! One 64-byte message over the deterministic model transport, monitored at both ends: the
//! source stage is the send's overhead o_s, the network stage o_s + L + o_r (stamped when the
//! send starts, noticed when the receive completes).
//!
//! ```
//! use commperf_monitor::{MonitorConfig, Monitored, Stage, TimerClock};
//! use commperf_transport::sys::model::{self, LogGp, ModelParams};
//! use commperf_transport::{Endpoint, EndpointConfig};
//!
//! let p = LogGp { o_s_ns: 300.0, o_r_ns: 400.0, l_ns: 1000.0, ..LogGp::default() };
//! let (a, b) = model::pair(ModelParams { small: p, large: None }, EndpointConfig::default());
//! let (ta, tb) = (a.timer(), b.timer());
//! let mut a = Monitored::with_clock(a, MonitorConfig::new(0, 1), TimerClock(ta));
//! let mut b = Monitored::with_clock(b, MonitorConfig::new(1, 0), TimerClock(tb));
//! a.send(1, &[7u8; 64])?;
//! assert_eq!(b.recv(&mut [0u8; 64])?.len, 64);
//! let mut h = a.take_histograms();
//! h.merge(&b.take_histograms());
//! let stages = h.collapse(|k| k.src == 0);
//! let (source, net) = (stages.get(Stage::Source).totals(), stages.get(Stage::Net).totals());
//! assert_eq!((source.count, source.sum_bytes), (1, 64));
//! assert_eq!(source.mean_ns(), Some(300.0));
//! assert_eq!(net.mean_ns(), Some(1700.0));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub mod clock;
pub mod hist;
pub mod monitored;
pub mod mpi;
pub mod run;
pub mod signature;
pub mod trace;
pub mod workload;

pub use clock::{Correction, LocalClock, Skewed, SyncPolicy, TimerClock, TscClock};
pub use hist::{Histograms, Key, MsgKind, MsgRecord, Protocol, Scope, Stage};
pub use monitored::{
    Monitor, MonitorConfig, Monitored, Parts, SideBandWire, TrailerWire, Wire, TRAILER,
};
pub use run::{MonitorRun, RUN_SCHEMA_VERSION};
pub use signature::{Baseline, Signature, TableFormat, SIGNATURE_SCHEMA_VERSION};

/// What can go wrong in the monitor.
#[derive(Debug, thiserror::Error)]
pub enum MonitorError {
    #[error(transparent)]
    Transport(#[from] commperf_transport::TransportError),
    #[error("clock synchronization: {0}")]
    Clock(String),
    #[error("{path}: {why}")]
    File { path: String, why: String },
    /// A run's settings refused (the message names the option).
    #[error("{0}")]
    Config(String),
    #[error("--sizes")]
    Sizes(#[source] commperf_core::units::SizeError),
    #[error(transparent)]
    Output(#[from] commperf_core::file::OutputError),
    #[error(transparent)]
    Launch(#[from] commperf_transport::launch::LaunchError),
    #[error(transparent)]
    Json(#[from] serde_json::Error),
    #[error(transparent)]
    Read(#[from] commperf_pmpi::ReadError),
    /// The workload failed after `flushed` of its sizes were saved.
    #[error(
        "the monitored workload stopped after {flushed} of {sizes} sizes; {run_file} holds what \
         was measured up to there, marked cut short (`commperf monitor report {dir}`)"
    )]
    Stopped {
        flushed: usize,
        sizes: usize,
        run_file: String,
        dir: String,
        #[source]
        source: Box<MonitorError>,
    },
    /// What was being done when `source` happened.
    #[error("{what}")]
    Within {
        what: &'static str,
        #[source]
        source: Box<MonitorError>,
    },
    #[error(
        "monitor: no round trip was timed at {size} B (--iters and --rounds must be at least 1)"
    )]
    NoRoundTrip { size: u64 },
    #[error("the peer announced {n} parts of a report, more than the {max} allowed")]
    TooManyParts { n: usize, max: usize },
    #[error("{path}: cannot read it")]
    PartsRead {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}: not a monitor parts file (truncated or corrupt?)")]
    PartsParse {
        path: String,
        #[source]
        source: serde_json::Error,
    },
}

impl MonitorError {
    /// This error, said to have happened while doing `what`.
    pub fn within(self, what: &'static str) -> MonitorError {
        MonitorError::Within {
            what,
            source: Box::new(self),
        }
    }
}
