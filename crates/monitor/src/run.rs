//! The monitor run file: what `commperf monitor run` saves and `commperf monitor report`
//! re-renders. One JSON document with a schema version; a file that is not one (truncated by a
//! crash, corrupted, or another kind of commperf file) is refused with its name and the reason.

use crate::clock::{Correction, OffsetSample};
use crate::hist::Histograms;
use crate::signature::Baseline;
use crate::MonitorError;
use commperf_core::{Machine, Profile};
use serde::{Deserialize, Serialize};
use std::path::Path;

/// Version of [`MonitorRun`]'s file (its history: `commperf_formats::Kind::MonitorRun`).
pub const RUN_SCHEMA_VERSION: u32 = commperf_formats::version::MONITOR_RUN;
/// The `kind` field that tells a monitor run from the other commperf files.
pub const RUN_KIND: &str = "commperf-monitor-run";

/// What ran.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Workload {
    /// `pingpong` or `stream`.
    pub pattern: String,
    pub transport: String,
    pub mode: String,
    pub sizes_bytes: Vec<u64>,
    pub iterations: u64,
}

/// One rank's clock as corrected at the end of the run.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RankClock {
    pub rank: u32,
    pub offset_ns: f64,
    pub drift_ppm: f64,
    /// The measured bound on this rank's global-clock error (± ns) at the end of the run.
    pub error_bound_ns: f64,
    pub syncs: u32,
}

impl RankClock {
    pub fn new(rank: u32, c: &Correction, error_bound_ns: f64) -> Self {
        RankClock {
            rank,
            offset_ns: c.offset_ns,
            drift_ppm: c.drift * 1e6,
            error_bound_ns,
            syncs: c.syncs,
        }
    }
}

/// The global clock's record: every synchronization's table rows, and each rank's state.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ClockReport {
    /// `tsc` or `monotonic`.
    pub source: String,
    pub syncs: Vec<OffsetSample>,
    pub ranks: Vec<RankClock>,
}

/// The file beside `run.json` holding a `--parts` run's figures (Liao et al. 1998, Figures 7–10).
pub const PARTS_FILE: &str = "parts.json";

/// One kind of block of a `--parts` run: which parts were on and its figure per size, in the
/// units of [`MonitorRun::reference_one_way_us`] (`none` is the unmonitored anchor).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PartFigures {
    /// `none`, `off`, `send`, `recv`, `clock` or `all`.
    pub parts: String,
    pub figures: Vec<(u64, f64)>,
}

/// Where the per-message trace went.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TraceInfo {
    pub file: String,
    pub records: u64,
    pub dropped: u64,
    /// Calls left out because their partner's record was dropped.
    pub cut: u64,
}

/// A saved monitor run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct MonitorRun {
    pub schema_version: u32,
    pub kind: String,
    pub created_unix_s: u64,
    /// False when the run ended early (the report says it was cut short).
    pub complete: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub machine: Option<Machine>,
    pub workload: Workload,
    pub clock: ClockReport,
    /// Unmonitored figure per size from the same run: ping-pong one-way p50 in µs (what
    /// `bench latency` reports), or MB/s for the stream pattern.
    #[serde(default)]
    pub reference_one_way_us: Vec<(u64, f64)>,
    /// The same loop monitored on both ends, interleaved with the unmonitored one: the
    /// difference is the monitor's cost per message (µs one-way p50, or MB/s for stream).
    #[serde(default)]
    pub monitored_one_way_us: Vec<(u64, f64)>,
    pub histograms: Histograms,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace: Option<TraceInfo>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub baseline: Option<Baseline>,
}

fn bad(path: &Path, why: impl Into<String>) -> MonitorError {
    MonitorError::File {
        path: path.display().to_string(),
        why: why.into(),
    }
}

fn read(path: &Path) -> Result<String, MonitorError> {
    std::fs::read_to_string(path).map_err(|e| bad(path, format!("cannot read it: {e}")))
}

impl MonitorRun {
    /// Reads a run file; refuses truncated, corrupt and foreign files naming the file.
    pub fn load(path: &Path) -> Result<MonitorRun, MonitorError> {
        Self::parse(path, &read(path)?)
    }

    pub fn parse(path: &Path, text: &str) -> Result<MonitorRun, MonitorError> {
        let mut v: serde_json::Value = serde_json::from_str(text).map_err(|e| {
            bad(
                path,
                if e.is_eof() {
                    format!("it ends early (truncated?): {e}")
                } else {
                    format!("it is not valid JSON (corrupt?): {e}")
                },
            )
        })?;
        match v.get("kind").and_then(|k| k.as_str()) {
            Some(RUN_KIND) => {}
            Some(other) => {
                return Err(bad(
                    path,
                    format!("it is a `{other}` file, not a monitor run"),
                ))
            }
            None => return Err(bad(path, "it is not a monitor run (no `kind` field)")),
        }
        let found = v.get("schema_version").and_then(|k| k.as_u64());
        if commperf_formats::upgrade(commperf_formats::Kind::MonitorRun, &mut v).is_err() {
            return Err(bad(
                path,
                format!(
                    "schema_version {found:?}; this commperf reads version {RUN_SCHEMA_VERSION}"
                ),
            ));
        }
        serde_json::from_value(v).map_err(|e| bad(path, format!("its contents are invalid: {e}")))
    }

    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("a run always serializes")
    }
}

/// Reads a baseline: a saved monitor run (its stage means) or a `commperf calibrate` profile
/// (its LogGP points).
pub fn load_baseline(path: &Path) -> Result<Baseline, MonitorError> {
    let text = read(path)?;
    let v: serde_json::Value = serde_json::from_str(&text)
        .map_err(|e| bad(path, format!("not valid JSON (truncated or corrupt?): {e}")))?;
    if v.get("kind").and_then(|k| k.as_str()) == Some(RUN_KIND) {
        let run = MonitorRun::parse(path, &text)?;
        return Ok(Baseline::from_histograms(
            &run.histograms,
            format!("monitor run {}", path.display()),
        ));
    }
    let p: Profile = serde_json::from_value(v).map_err(|e| {
        bad(
            path,
            format!("neither a monitor run nor a calibrate profile: {e}"),
        )
    })?;
    commperf_formats::check(
        commperf_formats::Kind::Profile,
        Some(u64::from(p.schema_version)),
    )
    .map_err(|e| bad(path, e.to_string()))?;
    if p.loggp.is_empty() {
        return Err(bad(
            path,
            "the profile has no LogGP points to take stage baselines from (calibrate with loggp)",
        ));
    }
    Ok(Baseline::from_profile(
        &p,
        format!("calibrate profile {}", path.display()),
    ))
}
