//! The platform's LogGP for a sweep's predictions when none was given: measured now, at the
//! MPI layer, by `bench loggp -t mpi` (the calling executable under its MPI's mpirun, 2 ranks),
//! several times, each parameter the median over the runs of the piece covering the trace's
//! typical message. Parameters from another machine were the largest error of the study they
//! were added for.

use super::emulated::{logged, run_logged, SweepRunError};
use super::{run_state, same_state};
use crate::state::MachineProbe;
use commperf_launch::say;
use commperf_model::loggp::{piece_distance, LogGp};
use commperf_pmpi::Flavour;
use commperf_stats::median;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

/// Predictions without `--loggp` or `--profile`: refused now, before the sweep, when this
/// executable (built for `own_mpi`, `None` without MPI) cannot measure the parameters for the
/// program's MPI.
pub(crate) fn can_measure_loggp(
    command: &[String],
    interposer: Option<&str>,
    own_mpi: Option<Flavour>,
) -> Result<(), SweepRunError> {
    let prog = commperf_launch::preload::plan(command, interposer)?.flavour;
    match own_mpi {
        None => Err(SweepRunError::NoMpiToMeasure),
        Some(own) if own != prog => Err(SweepRunError::OtherMpi {
            own: own.key(),
            prog: prog.key(),
        }),
        Some(_) => Ok(()),
    }
}

/// Why a `bench loggp --format json` file gave no piece.
#[derive(Debug, thiserror::Error)]
pub enum PieceError {
    #[error("bench loggp JSON")]
    Json(#[source] serde_json::Error),
    #[error("bench loggp fitted no LogGOPS piece")]
    NoPiece,
    #[error(transparent)]
    Version(#[from] commperf_formats::VersionError),
}

/// The parameters of one LogGOPS piece as one `bench loggp` run fitted them, in ns (per byte
/// for G and O), in [`PIECE_KEYS`] order; `None` where the fit could not identify one (bench
/// omits it and says why in the row's notes, kept in `notes`).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Piece {
    pub(crate) span: (u64, u64),
    pub(crate) values: [Option<f64>; 6],
    pub(crate) notes: Vec<String>,
}

const PIECE_KEYS: [&str; 6] = ["L", "o_s", "o_r", "g", "G", "O"];

/// From `bench loggp --format json`, the LogGOPS piece covering `size` bytes (the nearest piece,
/// by size on a log scale, when it falls between two). The one place the sweep reads bench's
/// result rows.
pub(crate) fn loggp_piece(text: &str, size: u64) -> Result<Piece, PieceError> {
    let mut v: serde_json::Value = serde_json::from_str(text).map_err(PieceError::Json)?;
    commperf_formats::upgrade(commperf_formats::Kind::Result, &mut v)?;
    let rows: Vec<&serde_json::Value> = v["results"]
        .as_array()
        .map(|r| r.iter().filter(|r| r["benchmark"] == "loggp").collect())
        .unwrap_or_default();
    let span = |r: &serde_json::Value| -> Option<(u64, u64)> {
        Some((
            r["piece_from_bytes"].as_u64()?,
            r["piece_to_bytes"].as_u64()?,
        ))
    };
    let (row, span) = rows
        .iter()
        .filter_map(|r| Some((*r, span(r)?)))
        .min_by(|a, b| {
            let d = |s: (u64, u64)| piece_distance(size, s.0, s.1);
            d(a.1).total_cmp(&d(b.1))
        })
        .ok_or(PieceError::NoPiece)?;
    let ns = |k: &str| row[k].as_f64().map(|x| x * 1e3);
    // predict's LogGOPS has one O for both ends: their mean.
    let o = ns("O_s_us_per_byte")
        .zip(ns("O_r_us_per_byte"))
        .map(|(a, b)| (a + b) / 2.0);
    Ok(Piece {
        span,
        values: [
            ns("L_us"),
            ns("o_s_fixed_us"),
            ns("o_r_fixed_us"),
            ns("g_us"),
            ns("G_us_per_byte"),
            o,
        ],
        notes: row["notes"]
            .as_array()
            .map(|n| {
                n.iter()
                    .filter_map(|x| x.as_str().map(String::from))
                    .collect()
            })
            .unwrap_or_default(),
    })
}

/// Each parameter's median over the runs that identified it; refused, naming the parameter and
/// quoting bench's reason, when none did.
pub(crate) fn median_loggp(runs: &[Piece]) -> Result<LogGp, SweepRunError> {
    let mut m = [0.0; 6];
    for (i, key) in PIECE_KEYS.iter().enumerate() {
        let v: Vec<f64> = runs.iter().filter_map(|p| p.values[i]).collect();
        let Some(value) = median(&v) else {
            let why = runs
                .iter()
                .flat_map(|p| &p.notes)
                .find(|n| n.starts_with(&format!("{key} ")))
                .map_or(String::new(), |n| format!(": {n}"));
            return Err(SweepRunError::Unidentified {
                key,
                runs: runs.len(),
                why,
            });
        };
        m[i] = value;
    }
    Ok(LogGp {
        L_ns: m[0],
        o_s_ns: m[1],
        o_r_ns: m[2],
        g_ns: m[3],
        G_ns_per_byte: m[4],
        O_ns_per_byte: m[5],
    })
}

/// How many times `bench loggp` runs when --predict measures the parameters: the VM this was
/// built on moved single fits by 20–50 % between runs.
const LOGGP_RUNS: usize = 3;

/// Runs of `bench loggp` beyond [`LOGGP_RUNS`] when the machine was in another state.
const LOGGP_EXTRA_RUNS: usize = 3;

/// The machine's state the LogGP measurement should be in, the baseline's usual one: when
/// `insist` (most settings were compared over runs in the same state), runs in another are
/// measured again (at most [`LOGGP_EXTRA_RUNS`] more) and left out.
pub(crate) struct WantedState<'a> {
    pub(crate) probe: &'a MachineProbe,
    pub(crate) reference_ns: f64,
    pub(crate) insist: bool,
}

/// The sizes `bench loggp` measures: the ladder, and the typical message itself: it is then
/// inside the fit of its piece rather than between two (a 2 KiB message took the 4 KiB – 1 MiB
/// piece's fixed o of 2 µs).
fn ladder(size: u64) -> String {
    let mut ladder: Vec<u64> = vec![8, 64, 512, 4096, 32768, 262144, 1 << 20];
    ladder.push(size.clamp(1, 4 << 20));
    ladder.sort_unstable();
    ladder.dedup();
    ladder
        .iter()
        .map(u64::to_string)
        .collect::<Vec<_>>()
        .join(",")
}

/// One run of `exe bench loggp -t mpi` (the `i`-th, from 1) over `sizes`, its JSON and log in
/// `dir`: the piece covering `size`.
fn bench_loggp_once(
    exe: &Path,
    dir: &Path,
    i: usize,
    sizes: &str,
    size: u64,
    timeout: Duration,
) -> Result<Piece, SweepRunError> {
    let json = dir.join(format!("loggp-{i}.json"));
    let log = dir.join(format!("loggp-{i}.log"));
    let mut cmd = Command::new(exe);
    cmd.args(["bench", "loggp", "-t", "mpi", "--sizes", sizes])
        .args(["--format", "json", "-o"])
        .arg(&json);
    logged(&mut cmd, &log)?;
    let status = run_logged(&mut cmd, "bench loggp", timeout)?;
    if !status.success() {
        return Err(SweepRunError::BenchFailed { status, log });
    }
    let text = std::fs::read_to_string(&json).map_err(|source| SweepRunError::Read {
        path: json.clone(),
        source,
    })?;
    loggp_piece(&text, size).map_err(|source| SweepRunError::BenchJson { path: json, source })
}

/// The probe's note on the LogGP runs (`probes`: before/after of each, `kept` of `n` in the
/// wanted state).
fn state_note(w: &WantedState<'_>, probes: &[String], kept: usize, n: usize) -> String {
    format!(
        "machine probe around the LogGP runs (ns before/after): {}; the baseline's usual state {:.0} ns: {}",
        probes.join(", "),
        w.reference_ns,
        match (kept, w.insist) {
            (k, _) if k == n => "every run in it".to_string(),
            (0, true) => "no run in it: the parameters describe another state of the machine than the runs compared".to_string(),
            (k, true) => format!("{k} of {n} runs in it, the others left out"),
            (k, false) => format!("{k} of {n} runs in it, all kept: most settings were compared over runs in other states too"),
        }
    )
}

/// `--predict` without `--loggp` or `--profile`: the platform's LogGP at the MPI layer, measured
/// now on this machine by `bench loggp -t mpi` ([`LOGGP_RUNS`] times, in the state `state` asks
/// for, when it can), each parameter the median over the runs of the piece covering `size`
/// (the trace's median message). Returns them and the notes saying how.
pub(crate) fn measure_loggp(
    exe: &Path,
    dir: &Path,
    size: u64,
    timeout: Duration,
    state: Option<WantedState<'_>>,
) -> Result<(LogGp, Vec<String>), SweepRunError> {
    let sizes = ladder(size);
    let mut runs: Vec<(Piece, bool)> = Vec::new();
    let clean = |runs: &[(Piece, bool)]| runs.iter().filter(|r| r.1).count();
    let mut probes: Vec<String> = Vec::new();
    for i in 0..LOGGP_RUNS + LOGGP_EXTRA_RUNS {
        let enough = match &state {
            Some(w) if w.insist => clean(&runs) >= LOGGP_RUNS,
            _ => runs.len() >= LOGGP_RUNS,
        };
        if enough {
            break;
        }
        say(&format!(
            "commperf: --predict: measuring LogGP at the MPI layer (run {})",
            i + 1
        ));
        let before = state.as_ref().and_then(|w| w.probe.read());
        let p = bench_loggp_once(exe, dir, i + 1, &sizes, size, timeout)?;
        let after = state.as_ref().and_then(|w| w.probe.read());
        let ok = match (&state, before, after) {
            (Some(w), Some(b), Some(a)) => {
                probes.push(format!("{b:.0}/{a:.0}"));
                same_state(run_state([b, a]), Some(w.reference_ns))
            }
            _ => true,
        };
        runs.push((p, ok));
    }
    let mut notes = Vec::new();
    if let Some(w) = &state {
        let kept = clean(&runs);
        notes.push(state_note(w, &probes, kept, runs.len()));
        if w.insist && kept > 0 {
            runs.retain(|r| r.1);
        }
    }
    let runs: Vec<Piece> = runs.into_iter().map(|r| r.0).collect();
    let m = median_loggp(&runs)?;
    // Each run fits its own pieces: when they differ, say which each run took, in order.
    let mut spans: Vec<String> = runs
        .iter()
        .map(|p| format!("{}–{} B", p.span.0, p.span.1))
        .collect();
    if spans.iter().all(|x| *x == spans[0]) {
        spans.truncate(1);
    }
    notes.insert(
        0,
        format!(
            "LogGP measured for --predict: `bench loggp -t mpi`, {} runs kept (DIR/loggp-N.json), \
             each parameter's median over the runs that identified it, of the piece {} covering the trace's median message of {size} B",
            runs.len(),
            spans.join(" / ")
        ),
    );
    Ok((m, notes))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two pieces as `bench loggp --format json` writes them (µs), one row per size.
    const BENCH: &str = r#"{"schema_version": 2, "results": [
        {"benchmark": "latency", "size_bytes": 8},
        {"benchmark": "loggp", "size_bytes": 8, "piece_from_bytes": 8, "piece_to_bytes": 512,
         "o_s_fixed_us": 0.05, "o_r_fixed_us": 0.16, "g_us": 0.12, "G_us_per_byte": 0.00024, "L_us": 0.0,
         "O_s_us_per_byte": 0.0003, "O_r_us_per_byte": 0.0001},
        {"benchmark": "loggp", "size_bytes": 512, "piece_from_bytes": 8, "piece_to_bytes": 512,
         "o_s_fixed_us": 0.05, "o_r_fixed_us": 0.16, "g_us": 0.12, "G_us_per_byte": 0.00024, "L_us": 0.0,
         "O_s_us_per_byte": 0.0003, "O_r_us_per_byte": 0.0001},
        {"benchmark": "loggp", "size_bytes": 4096, "piece_from_bytes": 4096, "piece_to_bytes": 1048576,
         "o_s_fixed_us": 1.7, "o_r_fixed_us": 1.6, "g_us": 1.6, "G_us_per_byte": 0.00006, "L_us": 0.3,
         "O_s_us_per_byte": 0.00005, "O_r_us_per_byte": 0.00007}
    ]}"#;

    #[test]
    fn the_measured_piece_is_the_one_covering_the_typical_message() {
        let p = loggp_piece(BENCH, 32).unwrap();
        assert_eq!(p.span, (8, 512));
        let [l, o_s, o_r, _, g_big, o_big] = p.values.map(Option::unwrap);
        assert!((o_s - 50.0).abs() < 1e-9 && (o_r - 160.0).abs() < 1e-9);
        assert!((g_big - 0.24).abs() < 1e-9 && l == 0.0);
        assert!((o_big - 0.2).abs() < 1e-9, "the mean of O_s and O_r");
        let p = loggp_piece(BENCH, 65536).unwrap();
        assert_eq!(p.span.0, 4096);
        assert!((p.values[0].unwrap() - 300.0).abs() < 1e-9);
        assert!((p.values[4].unwrap() - 0.06).abs() < 1e-9);
        // Between the pieces: the nearer on a log scale (1 KiB is 2× from 512, 4× from 4096).
        assert_eq!(loggp_piece(BENCH, 1024).unwrap().span, (8, 512));
        assert_eq!(loggp_piece(BENCH, 3000).unwrap().span, (4096, 1048576));
        let e = loggp_piece(r#"{"schema_version": 2, "results": []}"#, 8).unwrap_err();
        assert!(e.to_string().contains("no LogGOPS piece"), "{e}");
        // A file of a version this build does not read is refused by its version, not read.
        let e = loggp_piece(r#"{"schema_version": 9, "results": []}"#, 8).unwrap_err();
        assert!(matches!(e, PieceError::Version(_)), "{e}");
    }

    #[test]
    fn measured_parameters_are_each_the_median_of_the_runs_that_identified_them() {
        let p = |x: f64, l: Option<f64>| Piece {
            span: (8, 512),
            values: [
                l,
                Some(2.0 * x),
                Some(100.0 - x),
                Some(x),
                Some(x / 10.0),
                Some(x / 100.0),
            ],
            notes: Vec::new(),
        };
        let m = median_loggp(&[p(1.0, None), p(9.0, Some(7.0)), p(4.0, Some(3.0))]).unwrap();
        assert_eq!((m.o_s_ns, m.o_r_ns), (8.0, 96.0));
        assert_eq!(m.L_ns, 5.0, "the median of the two runs that had L");
        assert!((m.G_ns_per_byte - 0.4).abs() < 1e-12);
        assert!((m.O_ns_per_byte - 0.04).abs() < 1e-12);
        // No run identified L: refused by name, with bench's reason.
        let mut q = p(1.0, None);
        q.notes = vec!["L is not identifiable over sizes 8 to 512: fit -0.001 µs".into()];
        let e = median_loggp(&[q, p(2.0, None)]).unwrap_err().to_string();
        assert!(
            e.contains("identified no L in any of its 2 runs: L is not identifiable"),
            "{e}"
        );
    }
}
