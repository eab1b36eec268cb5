//! The control protocol between the coordinator and the rank processes.
//!
//! Small JSON messages over commperf's framed control channel
//! ([`commperf_transport::launch::Control`]: length-prefixed, bounded, with timeouts). The
//! coordinator decides everything; a rank only reports. Data never travels here: the timed
//! messages go over their own TCP connections, one per directed pair.

use crate::pattern::RankPart;
use serde::{Deserialize, Serialize};
use std::net::SocketAddr;

/// Environment variable carrying the session token to a rank (not its command line, which
/// any local user can read in `ps`).
pub const TOKEN_ENV: &str = "COMMPERF_TESTBED_TOKEN";

/// One rung of the calibration ladder: a message size and how many timed round trips.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Rung {
    pub bytes: u64,
    pub reps: u32,
}

/// What a rank does in a job.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Work {
    /// Replay `part` once per `Go`, `iters` times.
    Pattern { part: RankPart, iters: u32 },
    /// Ping-pong with `peer` over the ladder, after one `Go`. The initiator times; each rung
    /// starts with one untimed round trip.
    PingPong {
        peer: u32,
        initiator: bool,
        ladder: Vec<Rung>,
    },
}

/// Coordinator → rank.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ToRank {
    /// Set up the data connections this work needs (to every rank's `peers` address) and
    /// answer `Ready`. `timeout_s` bounds every wait of the job.
    Job {
        job: u32,
        peers: Vec<SocketAddr>,
        work: Work,
        timeout_s: u64,
    },
    /// Start iteration `iter` at CLOCK_MONOTONIC `start_at_ns`.
    Go { iter: u32, start_at_ns: u64 },
    /// Leave.
    Quit,
}

/// Per size, the initiator's one-way times (round trip / 2), µs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PingPongPoint {
    pub bytes: u64,
    pub one_way_us: Vec<f64>,
}

/// Rank → coordinator.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum FromRank {
    Hello {
        token: String,
        rank: u32,
        data_port: u16,
    },
    Ready {
        job: u32,
    },
    /// Iteration `iter` finished on this rank at `finish_ns` (its last send handed over and
    /// its last receive complete).
    Done {
        iter: u32,
        finish_ns: u64,
        /// How late its latest thread woke up after the common start.
        late_ns: u64,
    },
    PingPong {
        points: Vec<PingPongPoint>,
    },
    Failed {
        message: String,
    },
}
