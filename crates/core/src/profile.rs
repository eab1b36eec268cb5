//! The profile file: what `commperf calibrate` measured about a network, in the form `predict`
//! needs it. The quiet-network cost `Tcom(size)` is kept as the fitted pieces themselves (seed 003
//! fits one line below a packet and one above), never as a raw link bandwidth: the pieces carry
//! the software overheads a bandwidth figure would leave out.

use crate::Machine;
use serde::{Deserialize, Serialize};

/// Version of the profile schema written by this build.
pub const PROFILE_SCHEMA_VERSION: u32 = 1;

/// A calibrated (or hand-written) description of one network path.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
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
}

/// `T(size) = intercept_us + slope_us_per_byte · size` for sizes in `from_bytes..=to_bytes`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct TcomPiece {
    pub from_bytes: u64,
    pub to_bytes: u64,
    pub intercept_us: f64,
    pub slope_us_per_byte: f64,
}

/// One measured one-way time.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct TcomPoint {
    pub size_bytes: u64,
    pub time_us: f64,
}

/// LogGP parameters measured at one message size (Netgauge's PRTT method): `o_s_us` and
/// `o_r_us` are the overheads of a message of this size (per-byte part included).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
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
