//! Calibration: measuring a network path and writing what `predict` needs to know about it, a
//! [`Profile`] (the architecture chapter: `bench ──calibrate──► profile.json`).
//!
//! A calibration is a `bench` run with a fixed content: the latency ping-pong over a size ladder
//! (one-way time = p50 of each size) and, unless turned off, the LogGP benchmark over the same
//! sizes. Tcom is fitted to the one-way times with [`profile_from_points`] (breakpoints where
//! the protocol changes); the loggp rows become the profile's LogGP points. Tcom can also be
//! given by hand ([`parse_tcom`]), for a network that cannot be measured from here.
//!
//! The CLI validates its options into a [`CalibrateConfig`]; this module never sees clap.

use crate::{BenchConfig, BenchError, ConfigError, Launcher, Progress};
use commperf_core::{
    format_size, Benchmark, LogGpPoint, Mode, Profile, Report, TcomPiece, TcomPoint, TransportKind,
    PROFILE_SCHEMA_VERSION,
};
use commperf_model::profile::{profile_from_points, ProfileError};
use commperf_model::tcom::Tcom;
use std::fmt::Write as _;

/// Why a calibration failed.
#[derive(Debug, thiserror::Error)]
pub enum CalibrateError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    // Bench and Fit carry their cause in the message, not as a source, so that an error chain
    // printed with all its causes does not say it twice.
    #[error("measuring failed: {0}")]
    Bench(BenchError),
    #[error("the run has no latency result for {0}: nothing to fit Tcom to")]
    NoLatency(String),
    /// With the measured points, so a noisy run can be told from a bad fit.
    #[error("fitting Tcom: {cause} (measured one-way p50: {points})")]
    Fit { cause: ProfileError, points: String },
    #[error("timing the pipeline stages: {0}")]
    Stages(crate::pipeline::StageError),
}

/// A validated calibration run.
#[derive(Debug, Clone)]
pub struct CalibrateConfig {
    /// The bench run: latency (and loggp) over one transport, polling.
    pub bench: BenchConfig,
    pub transport: TransportKind,
}

impl CalibrateConfig {
    /// A calibration of `transport` over `sizes` (default: powers of two 1 B … 4 MiB), with the
    /// loggp benchmark when `loggp`; `iterations` overrides the size-dependent defaults.
    pub fn new(
        transport: TransportKind,
        sizes: Option<Vec<u64>>,
        iterations: Option<u64>,
        loggp: bool,
        launcher: Launcher,
    ) -> Result<CalibrateConfig, ConfigError> {
        let mut bench = BenchConfig::new(launcher);
        bench.benchmarks = if loggp {
            vec![Benchmark::Latency, Benchmark::Loggp]
        } else {
            vec![Benchmark::Latency]
        };
        bench.transports = vec![transport];
        bench.modes = vec![Mode::Poll];
        if let Some(s) = sizes {
            bench.sizes = s;
        }
        // Tcom needs at least two sizes to have a slope.
        if bench.sizes.len() < 2 {
            return Err(ConfigError::Sizes(
                "calibrate fits a line through the one-way times: give at least two sizes".into(),
            ));
        }
        bench.iterations = iterations;
        bench.validate()?;
        Ok(CalibrateConfig { bench, transport })
    }

    /// What the profile's `source` says.
    pub fn source(&self) -> String {
        format!("commperf calibrate --transport {}", self.transport)
    }
}

/// How many times a disturbed measurement ([`ProfileError::Disturbed`]) is taken in all.
pub const ATTEMPTS: u32 = 3;

/// Measures and fits. A measurement a busy machine disturbed (a larger size cheaper than a
/// smaller one) is taken again, up to [`ATTEMPTS`] times in all, each from scratch: mixing
/// attempts would fit sizes measured in different states of the machine.
pub fn run(cfg: &CalibrateConfig, progress: &mut dyn Progress) -> Result<Profile, CalibrateError> {
    let (report, mut profile) = measure_and_fit(
        progress,
        |p| crate::run(&cfg.bench, p).map_err(CalibrateError::Bench),
        |r| profile_from_report(r, cfg.transport, &cfg.source()),
    )?;
    // The pipeline stages of shm between the CPUs the run used (both ends are local).
    if let (TransportKind::Shm, Some(local), Some(peer)) = (
        cfg.transport,
        report.placement.local_cpu,
        report.placement.peer_cpu,
    ) {
        if matches!(cfg.bench.launcher, Launcher::Local { .. }) && local != peer {
            progress.update("timing the shm pipeline stages", 0, 1);
            let clock = commperf_transport::clock::Clock::calibrate();
            let p = crate::pipeline::shm_profile(&clock, [peer, local])
                .map_err(CalibrateError::Stages)?;
            profile.pipeline = Some(p);
        }
    }
    Ok(profile)
}

/// `measure` then `fit`, measured again while the fit finds the measurement disturbed, up to
/// [`ATTEMPTS`] in all, unless the user asked the run to stop.
fn measure_and_fit(
    progress: &mut dyn Progress,
    mut measure: impl FnMut(&mut dyn Progress) -> Result<Report, CalibrateError>,
    fit: impl Fn(&Report) -> Result<Profile, CalibrateError>,
) -> Result<(Report, Profile), CalibrateError> {
    let mut attempt = 1;
    loop {
        let report = measure(progress)?;
        match fit(&report) {
            Ok(p) => return Ok((report, p)),
            Err(CalibrateError::Fit {
                cause: cause @ ProfileError::Disturbed { .. },
                ..
            }) if attempt < ATTEMPTS && !progress.stop_requested() => {
                attempt += 1;
                progress.note(&format!(
                    "{cause}; measuring again (attempt {attempt} of {ATTEMPTS})"
                ));
            }
            Err(e) => return Err(e),
        }
    }
}

/// A profile from a bench report's latency (and loggp) rows of `transport`: one-way time = the
/// p50 of each latency row (polling mode preferred; the first row of a size wins).
pub fn profile_from_report(
    report: &Report,
    transport: TransportKind,
    source: &str,
) -> Result<Profile, CalibrateError> {
    let rows = |b: Benchmark| {
        let of = |m: Mode| {
            report
                .results
                .iter()
                .filter(move |r| r.benchmark() == b && r.transport == transport && r.mode == m)
        };
        // Polling rows if there are any, else blocking ones.
        let poll: Vec<_> = of(Mode::Poll).collect();
        if poll.is_empty() {
            of(Mode::Block).collect()
        } else {
            poll
        }
    };
    let mut points: Vec<TcomPoint> = Vec::new();
    for r in rows(Benchmark::Latency) {
        if let Some(t) = r.p50_us() {
            if !points.iter().any(|p| p.size_bytes == r.size_bytes) {
                points.push(TcomPoint {
                    size_bytes: r.size_bytes,
                    time_us: t,
                });
            }
        }
    }
    if points.is_empty() {
        return Err(CalibrateError::NoLatency(transport.to_string()));
    }
    let mut profile =
        profile_from_points(&points, source).map_err(|cause| CalibrateError::Fit {
            cause,
            points: points
                .iter()
                .map(|p| format!("{} B {:.3} us", p.size_bytes, p.time_us))
                .collect::<Vec<_>>()
                .join(", "),
        })?;
    profile.transport = Some(transport.to_string());
    profile.machine = Some(report.machine.clone());
    profile.loggp = loggp_points(&rows(Benchmark::Loggp));
    Ok(profile)
}

/// The profile's LogGP points from loggp rows (sorted by size). LogGOPS has one L for all sizes,
/// but `bench loggp` can identify it only in a protocol piece whose fixed overheads show (the
/// small sizes); a piece where it could not is given that one L. Likewise a piece whose fixed
/// gap g could not be told from G·s borrows g from the nearest size that has one, as the
/// Netgauge reader does. A size whose own overheads were left out (below zero beyond noise) is
/// no point.
fn loggp_points(rows: &[&commperf_core::Row]) -> Vec<LogGpPoint> {
    let mut rows: Vec<(u64, &commperf_core::LogGpFigures)> = rows
        .iter()
        .filter_map(|r| Some((r.size_bytes, r.loggp()?)))
        .collect();
    rows.sort_by_key(|r| r.0);
    let l = rows.iter().find_map(|r| r.1.L_us);
    let nearest_g = |i: usize| -> Option<f64> {
        (0..rows.len()).find_map(|d| {
            let lo = i.checked_sub(d).and_then(|j| rows[j].1.g_us);
            lo.or_else(|| rows.get(i + d).and_then(|r| r.1.g_us))
        })
    };
    rows.iter()
        .enumerate()
        .filter_map(|(i, &(size_bytes, r))| {
            Some(LogGpPoint {
                size_bytes,
                L_us: r.L_us.or(l)?,
                o_s_us: r.o_s_us?,
                o_r_us: r.o_r_us?,
                g_us: nearest_g(i)?,
                G_us_per_byte: r.gap_per_byte_us?,
                O_s_us_per_byte: r.O_s_us_per_byte,
                O_r_us_per_byte: r.O_r_us_per_byte,
                overlap_us: r.overlap_us,
            })
        })
        .filter(|l| {
            [l.L_us, l.o_s_us, l.o_r_us, l.g_us, l.G_us_per_byte]
                .iter()
                .all(|v| v.is_finite())
        })
        .collect()
}

/// Why a hand-given Tcom was refused: which piece (1-based), its text, and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("piece {piece} '{text}': {why}")]
pub struct TcomSyntaxError {
    pub piece: usize,
    pub text: String,
    pub why: String,
}

/// The grammar of a hand-given Tcom, for help texts and errors.
pub const TCOM_SYNTAX: &str = "FROM-[TO]:TIME[+TIME/B],… e.g. \
     '0-2020:10us+0.01us/B,2021-:25us+0.008us/B' (sizes in bytes with optional k/M/G; times \
     with ns, us or ms; the last piece open-ended; a single piece may leave out its range)";

/// Parses hand-given Tcom pieces:
///
/// ```text
/// pieces := piece (',' piece)*
/// piece  := [FROM '-' [TO] ':'] TIME ['+' TIME '/B']
/// ```
///
/// FROM and TO are sizes (`2020`, `2k`, `1M`), TIME is a number with a unit `ns`, `us` (or
/// `µs`) or `ms`. A piece covers FROM..=TO bytes; pieces must start at 0, follow each other
/// without gap or overlap, and the last one must be open-ended (`2021-`), since Tcom must cost
/// any size. A lone piece may omit its range (`5us+0.0008us/B` = `0-:…`). The pieces are then
/// checked as the predictor checks a profile's (positive cost, rising last piece).
pub fn parse_tcom(s: &str) -> Result<Vec<TcomPiece>, TcomSyntaxError> {
    let parts: Vec<&str> = s.split(',').map(str::trim).collect();
    let mut out: Vec<TcomPiece> = Vec::with_capacity(parts.len());
    for (i, part) in parts.iter().enumerate() {
        let err = |why: String| TcomSyntaxError {
            piece: i + 1,
            text: part.to_string(),
            why,
        };
        if part.is_empty() {
            return Err(err(format!("empty piece (expected {TCOM_SYNTAX})")));
        }
        let (range, cost) = match part.split_once(':') {
            Some((r, c)) => (Some(r.trim()), c.trim()),
            None if parts.len() == 1 => (None, *part),
            None => {
                return Err(err(
                    "no 'FROM-TO:' range; only a lone piece may leave it out".into(),
                ))
            }
        };
        let (from, to) = match range {
            None => (0, u64::MAX),
            Some(r) => {
                let (a, b) = r
                    .split_once('-')
                    .ok_or_else(|| err(format!("range '{r}' is not FROM-TO or FROM-")))?;
                let size =
                    |t: &str| commperf_core::parse_size(t).map_err(|e| err(format!("range: {e}")));
                let from = size(a)?;
                let to = if b.trim().is_empty() {
                    u64::MAX
                } else {
                    size(b)?
                };
                if to < from {
                    return Err(err(format!(
                        "range ends ({to} B) before it starts ({from} B)"
                    )));
                }
                (from, to)
            }
        };
        let (a, b) = match cost.split_once('+') {
            Some((a, b)) => (a.trim(), Some(b.trim())),
            None => (cost, None),
        };
        let intercept_us = time_us(a).map_err(|e| err(format!("intercept: {e}")))?;
        let slope_us_per_byte = match b {
            None => 0.0,
            Some(b) => {
                let per = b.strip_suffix("/B").ok_or_else(|| {
                    err(format!(
                        "per-byte cost '{b}' must end in /B (e.g. 0.01us/B)"
                    ))
                })?;
                time_us(per).map_err(|e| err(format!("per-byte cost: {e}")))?
            }
        };
        match out.last() {
            None if from != 0 => {
                return Err(err(format!(
                    "the first piece must start at 0 B, not {from} B"
                )))
            }
            Some(prev) if prev.to_bytes == u64::MAX => {
                return Err(err(
                    "follows an open-ended piece; only the last piece may be open-ended".into(),
                ))
            }
            Some(prev) if from != prev.to_bytes + 1 => {
                return Err(err(format!(
                    "must start at {} B, right after the previous piece ends",
                    prev.to_bytes + 1
                )))
            }
            _ => {}
        }
        out.push(TcomPiece {
            from_bytes: from,
            to_bytes: to,
            intercept_us,
            slope_us_per_byte,
        });
    }
    let last = out.len();
    if out.last().is_some_and(|p| p.to_bytes != u64::MAX) {
        return Err(TcomSyntaxError {
            piece: last,
            text: parts[last - 1].to_string(),
            why: "the last piece must be open-ended ('FROM-:…'): Tcom must cost any size".into(),
        });
    }
    Tcom::from_pieces(&out).map_err(|e| match e {
        commperf_model::tcom::TcomError::BadPiece { index, why, .. } => TcomSyntaxError {
            piece: index + 1,
            text: parts.get(index).unwrap_or(&"").to_string(),
            why: why.to_string(),
        },
        other => TcomSyntaxError {
            piece: 1,
            text: s.to_string(),
            why: other.to_string(),
        },
    })?;
    Ok(out)
}

/// `10us`, `250ns`, `0.5ms`, `0.01µs` → µs.
fn time_us(t: &str) -> Result<f64, String> {
    let t = t.trim();
    let (num, scale) = if let Some(n) = t.strip_suffix("ns") {
        (n, 1e-3)
    } else if let Some(n) = t.strip_suffix("us").or_else(|| t.strip_suffix("µs")) {
        (n, 1.0)
    } else if let Some(n) = t.strip_suffix("ms") {
        (n, 1e3)
    } else {
        return Err(format!(
            "'{t}' has no time unit (write e.g. 10us, 250ns or 0.5ms)"
        ));
    };
    match num.trim().parse::<f64>() {
        Ok(v) if v.is_finite() && v >= 0.0 => Ok(v * scale),
        _ => Err(format!(
            "'{t}' is not a non-negative number of {}",
            &t[num.len()..]
        )),
    }
}

/// A profile of hand-given pieces.
pub fn hand_profile(pieces: Vec<TcomPiece>, text: &str) -> Profile {
    Profile {
        schema_version: PROFILE_SCHEMA_VERSION,
        source: format!("hand --tcom {text}"),
        transport: None,
        machine: None,
        tcom: pieces,
        loggp: Vec::new(),
        points: Vec::new(),
        pipeline: None,
    }
}

/// A short human summary: the pieces with their breakpoints, and what else the profile holds.
pub fn summary(p: &Profile) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "profile from {}: Tcom in {} piece{}",
        p.source,
        p.tcom.len(),
        if p.tcom.len() == 1 { "" } else { "s" }
    );
    for t in &p.tcom {
        let to = if t.to_bytes == u64::MAX {
            "…".to_string()
        } else {
            format_size(t.to_bytes)
        };
        let bw = if t.slope_us_per_byte > 0.0 {
            format!(" ({:.0} MB/s)", 1.0 / t.slope_us_per_byte)
        } else {
            String::new()
        };
        let _ = writeln!(
            o,
            "  {:>8} – {:<8} {:.3} us + {:.6} us/B{bw}",
            format_size(t.from_bytes),
            to,
            t.intercept_us,
            t.slope_us_per_byte
        );
    }
    let breaks: Vec<String> = p
        .tcom
        .windows(2)
        .map(|w| {
            format!(
                "{}|{}",
                format_size(w[0].to_bytes),
                format_size(w[1].from_bytes)
            )
        })
        .collect();
    if !breaks.is_empty() {
        let _ = writeln!(o, "  breakpoints: {}", breaks.join(", "));
    }
    let _ = writeln!(
        o,
        "  {} measured points, {} LogGP points",
        p.points.len(),
        p.loggp.len()
    );
    if let Some(pl) = &p.pipeline {
        let _ = writeln!(
            o,
            "  pipeline stages of {} (β + P·τ), fragments {} – {}:",
            pl.transport,
            format_size(pl.min_fragment_bytes),
            format_size(pl.max_fragment_bytes)
        );
        for s in &pl.stages {
            let _ = writeln!(
                o,
                "    {:<30} {:.3} us + {:.3} us/KiB (R² {:.3})",
                s.name,
                s.beta_us,
                s.tau_us_per_byte * 1024.0,
                s.r2
            );
        }
        for probe in pl
            .pipelined
            .chunk_by(|a, b| a.message_bytes == b.message_bytes)
        {
            let ts: Vec<String> = (probe.iter())
                .map(|q| format!("{} {:.1}", format_size(q.fragment_bytes), q.one_way_us))
                .collect();
            let _ = writeln!(
                o,
                "    pipelined {} (us): {}",
                format_size(probe[0].message_bytes),
                ts.join(", ")
            );
        }
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hand_tcom_parses_and_becomes_contiguous_pieces() {
        let p = parse_tcom("0-2020:10us+0.01us/B, 2021-:25us+0.008us/B").unwrap();
        assert_eq!(
            p,
            vec![
                TcomPiece {
                    from_bytes: 0,
                    to_bytes: 2020,
                    intercept_us: 10.0,
                    slope_us_per_byte: 0.01
                },
                TcomPiece {
                    from_bytes: 2021,
                    to_bytes: u64::MAX,
                    intercept_us: 25.0,
                    slope_us_per_byte: 0.008
                }
            ]
        );
        let one = parse_tcom("5us+0.8ns/B").unwrap();
        assert_eq!((one[0].from_bytes, one[0].to_bytes), (0, u64::MAX));
        assert!((one[0].slope_us_per_byte - 0.0008).abs() < 1e-15);
        let k = parse_tcom("0-8k:2us+1ns/B,8193-:0.01ms+0.5ns/B").unwrap();
        assert_eq!(k[0].to_bytes, 8192);
        assert_eq!(k[1].intercept_us, 10.0);
        assert!(summary(&hand_profile(k, "x")).contains("breakpoints: 8K|8193"));
    }

    #[test]
    fn bad_hand_tcom_says_which_piece_and_why() {
        for (s, needle) in [
            ("", "piece 1 '': empty piece"),
            ("10us", "last piece must have a positive slope"),
            (
                "0-10:1us+1us/B,12-:1us+1us/B",
                "piece 2 '12-:1us+1us/B': must start at 11 B",
            ),
            ("5-:1us+1us/B", "first piece must start at 0 B"),
            ("0-100:1us+1us/B", "last piece must be open-ended"),
            ("0-:1us+1us/B,5-:1us+1us/B", "follows an open-ended piece"),
            ("0-x:1us+1us/B", "range: 'x' is not a size"),
            ("0-:10+1us/B", "intercept: '10' has no time unit"),
            ("0-:10us+1us", "must end in /B"),
            ("0-:-1us+1us/B", "not a non-negative number of us"),
            ("0-:1us+nanus/B", "not a non-negative number"),
            (
                "0-9:1us+1us/B,1us+1us/B",
                "piece 2 '1us+1us/B': no 'FROM-TO:' range",
            ),
            ("9-0:1us+1us/B", "ends (0 B) before it starts (9 B)"),
        ] {
            let e = parse_tcom(s).unwrap_err().to_string();
            assert!(e.contains(needle), "{s:?}: {e}");
        }
    }

    #[test]
    fn a_disturbed_measurement_is_taken_again_up_to_three_times() {
        use commperf_core::Row;
        // One-way p50 per size: a clean ladder, and one whose 64 KiB ping-pong was preempted.
        let report = |disturbed: bool| {
            let mut r = report_of(Vec::new());
            for s in [8u64, 64, 1024, 65536, 1 << 20] {
                let mut row = Row::new(Benchmark::Latency, TransportKind::Shm, Mode::Poll, s);
                row.percentiles_mut().unwrap().p50_us = Some(if disturbed && s == 65536 {
                    3764.0
                } else {
                    1.0 + 0.001 * s as f64
                });
                r.results.push(row);
            }
            r
        };
        struct Notes(Vec<String>);
        impl Progress for Notes {
            fn update(&mut self, _: &str, _: usize, _: usize) {}
            fn note(&mut self, line: &str) {
                self.0.push(line.to_string());
            }
        }
        let fit = |r: &Report| profile_from_report(r, TransportKind::Shm, "src");
        // Disturbed once, then clean: the second measurement is fitted, and the user was told.
        let mut notes = Notes(Vec::new());
        let mut made = 0;
        let (_, p) = measure_and_fit(
            &mut notes,
            |_| {
                made += 1;
                Ok(report(made == 1))
            },
            fit,
        )
        .unwrap();
        assert_eq!(made, 2);
        assert_eq!(p.points[3].time_us, 1.0 + 0.001 * 65536.0);
        assert_eq!(notes.0.len(), 1);
        assert!(
            notes.0[0].contains("1048576 B took 1049.576 µs, less than 65536 B's 3764.000 µs")
                && notes.0[0].ends_with("measuring again (attempt 2 of 3)"),
            "{:?}",
            notes.0
        );
        // Disturbed every time: three measurements, then the refusal naming the sizes.
        let mut notes = Notes(Vec::new());
        let mut made = 0;
        let e = measure_and_fit(
            &mut notes,
            |_| {
                made += 1;
                Ok(report(true))
            },
            fit,
        )
        .unwrap_err();
        assert_eq!((made, notes.0.len()), (3, 2));
        assert!(
            e.to_string().contains("the measurement was disturbed"),
            "{e}"
        );
        // A fit that fails otherwise is not measured again.
        let mut made = 0;
        let e = measure_and_fit(
            &mut Notes(Vec::new()),
            |_| {
                made += 1;
                Ok(report_of(Vec::new()))
            },
            fit,
        )
        .unwrap_err();
        assert_eq!(made, 1);
        assert!(matches!(e, CalibrateError::NoLatency(_)), "{e}");
    }

    /// A report holding `results`, with placeholder machine and options.
    fn report_of(results: Vec<commperf_core::Row>) -> Report {
        use commperf_core::{Machine, Options, Placement, TimerInfo, SCHEMA_VERSION};
        Report {
            schema_version: SCHEMA_VERSION,
            tool: "t".into(),
            started_unix_s: 0,
            machine: Machine {
                hostname: "h".into(),
                cpu_model: "c".into(),
                cores: 2,
                kernel: "k".into(),
                timer: TimerInfo {
                    source: "monotonic".into(),
                    tsc_ghz: None,
                    cost_ns: 20.0,
                },
            },
            options: Options {
                benchmarks: vec![],
                transports: vec![],
                modes: vec![],
                sizes_bytes: vec![],
                iterations: None,
                warmup: None,
                window: 1,
                validate: false,
                launcher: "local".into(),
                peer: None,
                mpi_library: None,
                mpi_calls: None,
            },
            placement: Placement {
                pinned: false,
                local_cpu: None,
                peer_cpu: None,
                ..Placement::default()
            },
            limits: None,
            results,
            disturbance: Default::default(),
            partial: false,
        }
    }

    #[test]
    fn a_report_becomes_a_profile() {
        use commperf_core::Row;
        let mut results = Vec::new();
        for s in [8u64, 64, 1024, 65536, 1 << 20] {
            let mut r = Row::new(Benchmark::Latency, TransportKind::Shm, Mode::Poll, s);
            r.percentiles_mut().unwrap().p50_us = Some(1.0 + 0.001 * s as f64);
            results.push(r);
            // Two protocol pieces; the large one's fixed costs (g, L) are not identifiable, and
            // o_s at 64 KiB was left out (below zero beyond noise).
            let mut row = Row::new(Benchmark::Loggp, TransportKind::Shm, Mode::Poll, s);
            let l = row.loggp_mut().unwrap();
            (l.o_s_us, l.o_r_us) = (Some(0.2), Some(0.3));
            if s <= 1024 {
                (l.g_us, l.gap_per_byte_us, l.L_us) = (Some(0.4), Some(0.001), Some(0.5));
            } else {
                (l.gap_per_byte_us, l.O_s_us_per_byte) = (Some(0.0001), Some(0.00005));
            }
            if s == 65536 {
                l.o_s_us = None;
            }
            results.push(row);
        }
        let report = report_of(results);
        let p = profile_from_report(&report, TransportKind::Shm, "src").unwrap();
        assert_eq!(p.transport.as_deref(), Some("shm"));
        assert_eq!(p.points.len(), 5);
        let sizes: Vec<u64> = p.loggp.iter().map(|l| l.size_bytes).collect();
        assert_eq!(sizes, [8, 64, 1024, 1 << 20]);
        // LogGOPS's one L, and g from the nearest size with one; G and O_s its own.
        let big = p.loggp[3];
        assert_eq!((big.L_us, big.g_us, big.G_us_per_byte), (0.5, 0.4, 0.0001));
        assert_eq!(big.O_s_us_per_byte, Some(0.00005));
        assert_eq!(p.tcom.len(), 1);
        assert!((p.tcom[0].slope_us_per_byte - 0.001).abs() < 1e-9);
        assert!(matches!(
            profile_from_report(&report, TransportKind::Tcp, "src"),
            Err(CalibrateError::NoLatency(_))
        ));
    }
}
