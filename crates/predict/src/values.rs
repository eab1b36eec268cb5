//! The values a prediction is configured with, read from text as the command line gives them:
//! a profile file (refused with a typed error) and the model's parameters (`parse_*`, each
//! `Result<T, String>` as clap's value parsers take them, the message naming what was wrong).
//! The binary's options call these; so can any caller.

use crate::collectives::Algorithms;
use crate::engine::{Background, LinkClass, LogGp, Overlap, SelfOverheads, SizeFactors};
use crate::tcom::{Tcom, TcomError};
use crate::topology::{self, Network, RankMap, TopologySpec};
use commperf_core::Profile;
use std::path::{Path, PathBuf};

/// Why a profile file could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ProfileFileError {
    #[error("reading the profile")]
    Read(#[source] commperf_core::TextError),
    #[error("{}: not a commperf profile", path.display())]
    NotAProfile {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
}

/// Reads a profile written by `commperf calibrate`.
pub fn read_profile(path: &Path) -> Result<Profile, ProfileFileError> {
    let text = commperf_core::read_text(path).map_err(ProfileFileError::Read)?;
    serde_json::from_str(&text).map_err(|source| ProfileFileError::NotAProfile {
        path: path.to_path_buf(),
        source,
    })
}

/// `--algo`: one `FAMILY=NAME,…` list, checked (a bad name is a usage error) and kept as
/// given: the binary combines the repeated lists in order.
pub fn parse_algorithms(s: &str) -> Result<String, String> {
    Algorithms::parse_list(s).map(|_| s.to_string())
}

/// `--topology`: a built-in network or a file (see [`TopologySpec`]).
pub fn parse_topology_spec(s: &str) -> Result<TopologySpec, String> {
    s.parse()
        .map_err(|e: topology::TopologyError| e.to_string())
}

/// The largest time parameter (--loggp, --self-overheads, --overlap) read, in ns.
const MAX_PARAMETER_NS: f64 = 1e15;

/// `NAME=NS,…` into slots: each key fills its slots (`o` both overheads), each slot at most
/// once; `what` names a key in the errors.
fn named_ns<const N: usize>(
    s: &str,
    what: &str,
    keys: &[(&str, &[usize])],
    slots: [&str; N],
) -> Result<[Option<f64>; N], String> {
    let names = keys.iter().map(|k| k.0).collect::<Vec<_>>().join(", ");
    let mut v: [Option<f64>; N] = [None; N];
    for part in s.split(',') {
        let (k, val) = part
            .split_once('=')
            .ok_or_else(|| format!("'{part}' is not NAME=NS (names: {names})"))?;
        let x: f64 = val
            .trim()
            .trim_end_matches("ns")
            .parse()
            .ok()
            .filter(|x: &f64| x.is_finite() && *x >= 0.0)
            .ok_or_else(|| format!("{k}={val}: not a non-negative number of ns"))?;
        // Larger, and sums over a trace leave f64's range: the prediction would be infinite.
        if x > MAX_PARAMETER_NS {
            return Err(format!(
                "{k}={val}: more than {MAX_PARAMETER_NS:e} ns (11 days) per message or byte"
            ));
        }
        let Some((_, at)) = keys.iter().find(|(n, _)| *n == k.trim()) else {
            return Err(format!("unknown {what} '{}' (names: {names})", k.trim()));
        };
        for &i in *at {
            if v[i].replace(x).is_some() {
                return Err(format!("{} is given twice", slots[i]));
            }
        }
    }
    Ok(v)
}

pub fn parse_self_overheads(s: &str) -> Result<SelfOverheads, String> {
    const SLOTS: [&str; 3] = ["o_s", "o_r", "O"];
    let keys: [(&str, &[usize]); 4] = [("o", &[0, 1]), ("o_s", &[0]), ("o_r", &[1]), ("O", &[2])];
    let v = named_ns(s, "overhead", &keys, SLOTS)?;
    let need = |i: usize| v[i].ok_or_else(|| format!("{} is missing", SLOTS[i]));
    Ok(SelfOverheads {
        o_s_ns: need(0)?,
        o_r_ns: need(1)?,
        O_ns_per_byte: v[2].unwrap_or(0.0),
    })
}

/// `--overlap`: overlap=NS[,wait=NS][,duplex=NS], in ns.
pub fn parse_overlap(s: &str) -> Result<Overlap, String> {
    const SLOTS: [&str; 3] = ["overlap", "wait", "duplex"];
    let keys: [(&str, &[usize]); 3] = [("overlap", &[0]), ("wait", &[1]), ("duplex", &[2])];
    let v = named_ns(s, "figure", &keys, SLOTS)?;
    Overlap::new(v[0].ok_or("overlap is missing")?, v[1].unwrap_or(0.0))?
        .with_duplex(v[2].unwrap_or(0.0))
}

/// `--loggp`: every parameter named once; L, o (or o_s and o_r), g and G required.
pub fn parse_loggp_params(s: &str) -> Result<LogGp, String> {
    const NAMES: [&str; 6] = ["L", "o_s", "o_r", "g", "G", "O"];
    let keys: [(&str, &[usize]); 7] = [
        ("L", &[0]),
        ("o", &[1, 2]),
        ("o_s", &[1]),
        ("o_r", &[2]),
        ("g", &[3]),
        ("G", &[4]),
        ("O", &[5]),
    ];
    let v = named_ns(s, "LogGP parameter", &keys, NAMES)?;
    let need = |i: usize| v[i].ok_or_else(|| format!("{} is missing", NAMES[i]));
    Ok(LogGp {
        L_ns: need(0)?,
        o_s_ns: need(1)?,
        o_r_ns: need(2)?,
        g_ns: need(3)?,
        G_ns_per_byte: need(4)?,
        O_ns_per_byte: v[5].unwrap_or(0.0),
    })
}

/// LogGP parameters as the summary's header names them.
pub fn loggp_text(p: &LogGp) -> String {
    format!(
        "L={} o_s={} o_r={} g={} ns, G={} O={} ns/B",
        p.L_ns, p.o_s_ns, p.o_r_ns, p.g_ns, p.G_ns_per_byte, p.O_ns_per_byte
    )
}

/// `SIZE:PARAMS` of --loggp-from: a size as the other size options take it, then --loggp's
/// parameters.
pub fn parse_loggp_from(s: &str) -> Result<(u64, LogGp), String> {
    let (size, params) = s
        .split_once(':')
        .ok_or_else(|| format!("'{s}' is not SIZE:L=…,o=…,g=…,G=…"))?;
    Ok((
        commperf_core::parse_size(size.trim()).map_err(|e| e.to_string())?,
        parse_loggp_params(params)?,
    ))
}

/// A finite number above 0 (`--host-speed`).
pub fn parse_positive_f64(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 => Ok(v),
        _ => Err(format!("'{s}' is not a positive number")),
    }
}

/// `--background-period` in µs: at least 1 ns, the engine's clock tick (a shorter period
/// would redraw without end).
pub fn parse_background_period(s: &str) -> Result<f64, String> {
    let v = parse_positive_f64(s)?;
    if v < 1e-3 {
        return Err(format!(
            "'{s}' µs is under 1 ns (rounds to 0 ns): give at least 0.001"
        ));
    }
    Ok(v)
}

/// A finite number, 0 or more (`--tcp-gamma`).
pub fn parse_nonneg_f64(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() && v >= 0.0 => Ok(v),
        _ => Err(format!("'{s}' is not a non-negative number")),
    }
}

/// `--latency-factor`, `--bandwidth-factor`: SimGrid's syntax (see [`SizeFactors::parse`]).
pub fn parse_size_factors(s: &str) -> Result<SizeFactors, String> {
    SizeFactors::parse(s).map_err(|e| e.to_string())
}

/// A fraction in [0, 1) (a background load).
pub fn parse_fraction(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if (0.0..1.0).contains(&v) => Ok(v),
        _ => Err(format!("'{s}' is not a fraction in [0, 1)")),
    }
}

/// `--background`: none, const:F or exp:F (its period left 0, for the caller to fill in).
pub fn parse_background(s: &str) -> Result<Background, String> {
    match s.split_once(':') {
        None if s == "none" => Ok(Background::None),
        Some(("const", f)) => Ok(Background::Const(parse_fraction(f)?)),
        // The period is filled in from --background-period.
        Some(("exp", f)) => Ok(Background::Exp {
            mean: parse_fraction(f)?,
            period_ns: 0.0,
        }),
        _ => Err(format!(
            "'{s}' is not a background load (none, const:F or exp:F)"
        )),
    }
}

/// `RATE` in bytes per ns, in the one rate syntax of `commperf_core::rate` (B bytes, b bits).
pub fn parse_rate_bytes_per_ns(s: &str) -> Result<f64, String> {
    commperf_core::parse_rate(s)
        .map(|r| r.bytes_per_ns())
        .map_err(|e| e.to_string())
}

/// A duration with its unit (ns, us or µs, ms, s), in ns.
pub fn parse_duration_ns(s: &str) -> Result<f64, String> {
    let (num, unit) = s.split_at(
        s.find(|c: char| c.is_ascii_alphabetic() || c == 'µ')
            .unwrap_or(s.len()),
    );
    let v: f64 = num
        .parse()
        .map_err(|_| format!("'{s}' is not a duration like 1us"))?;
    let mult = match unit {
        "ns" => 1.0,
        "us" | "µs" => 1e3,
        "ms" => 1e6,
        "s" => 1e9,
        _ => return Err(format!("'{s}': give a unit (ns, us, ms, s)")),
    };
    if !(v.is_finite() && v >= 0.0) {
        return Err(format!("'{s}' is not a non-negative duration"));
    }
    Ok(v * mult)
}

/// `--link`: CLASS=RATE[,LATENCY], the rate may be empty (the profile's bandwidth).
pub fn parse_link_class(s: &str) -> Result<LinkClass, String> {
    let (name, rest) = s
        .split_once('=')
        .ok_or_else(|| format!("'{s}' is not CLASS=RATE[,LATENCY]"))?;
    if name.is_empty() {
        return Err(format!("'{s}' names no link class"));
    }
    let (rate, lat) = match rest.split_once(',') {
        Some((r, l)) => (r, Some(l)),
        None => (rest, None),
    };
    Ok(LinkClass {
        name: name.to_string(),
        bandwidth_bytes_per_ns: if rate.is_empty() {
            None
        } else {
            Some(parse_rate_bytes_per_ns(rate)?)
        },
        latency_ns: lat.map(parse_duration_ns).transpose()?.unwrap_or(0.0),
    })
}

/// The quiet network's cost: the profile's, else (no profile) the default Ethernet's, or on
/// a SimGrid `platform`, none of its own.
pub fn quiet_network(profile: Option<&Profile>, platform: bool) -> Result<Tcom, TcomError> {
    Ok(match profile {
        Some(p) => Tcom::from_profile(p)?,
        // A SimGrid platform carries every link's bandwidth and latency: Tcom only sets the
        // reference the link bandwidths are relative to, with no start-up cost of its own.
        None if platform => Tcom::line(0.0, 1.0),
        None => Tcom::default_ethernet(),
    })
}

/// [`PredictConfig::calc_scale`](crate::engine::PredictConfig::calc_scale): a SimGrid
/// trace's `compute` amounts are flops, so a platform host's own speed replaces
/// `host_speed_flops` for the ranks placed on it (empty, no scaling, for other traces).
pub fn calc_scale(
    simgrid_trace: bool,
    host_speed_flops: f64,
    map: &RankMap,
    net: &dyn Network,
) -> Vec<f64> {
    if !simgrid_trace {
        return Vec::new();
    }
    map.0
        .iter()
        .map(|&h| net.host_speed(h).map_or(1.0, |s| host_speed_flops / s))
        .collect()
}

/// What the costs really came from, as the summary's header names it: the LogGP parameters
/// `given`, else the profile, else the `platform`'s links or the default; then the sets of
/// `by_size`.
pub fn cost_source(
    given: Option<&LogGp>,
    profile: Option<&Profile>,
    platform: bool,
    by_size: &[(u64, LogGp)],
) -> String {
    let name = match (given, profile) {
        (Some(p), _) => format!("LogGP given: {}", loggp_text(p)),
        (None, Some(p)) => p.source.clone(),
        (None, None) if platform => "none: the platform's links are the whole cost".to_string(),
        (None, None) => "default (10 Gbit/s, 5 µs)".to_string(),
    };
    by_size.iter().fold(name, |acc, (from, p)| {
        format!("{acc}; from {from} B: {}", loggp_text(p))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_durations_and_classes_parse() {
        assert_eq!(parse_rate_bytes_per_ns("10Gbit/s"), Ok(1.25));
        assert_eq!(parse_rate_bytes_per_ns("100mbit"), Ok(0.0125));
        assert_eq!(parse_rate_bytes_per_ns("2GByte/s"), Ok(2.0));
        assert_eq!(parse_rate_bytes_per_ns("1.25GB/s"), Ok(1.25));
        assert!(parse_rate_bytes_per_ns("10mbps").is_err());
        assert!(parse_rate_bytes_per_ns("fast").is_err());
        assert!(parse_rate_bytes_per_ns("0gbit").is_err());
        assert_eq!(parse_duration_ns("1.5us"), Ok(1500.0));
        assert!(parse_duration_ns("3").is_err());
        let c = parse_link_class("core=40Gbit/s,1us").unwrap();
        assert_eq!(
            (c.name.as_str(), c.bandwidth_bytes_per_ns, c.latency_ns),
            ("core", Some(5.0), 1000.0)
        );
        assert!(parse_link_class("=1Gbit").is_err());
        assert_eq!(parse_background("const:0.3"), Ok(Background::Const(0.3)));
        assert!(parse_background("const:1").is_err());
        assert!(parse_background("exp:-1").is_err());
    }
}
