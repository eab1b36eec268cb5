//! The stacks' micro-benchmarks, read: `commperf bench latency bw --transport mpi` under each
//! stack's own launch, at the programs' dominant sizes ([`stack_bench`]), and the rows of `bench
//! loggp` the loop takes its LogGP parameters from ([`bench_rows`], [`params_from_bench`],
//! [`pieces_from_bench`], [`ladder_from_bench`]). The only module of the study that reads the
//! benchmark's result rows; a row without what the study needs is a [`BenchRowError`] naming
//! the row and the field.

use crate::config::StudyConfig;
use crate::error::{Context, Result};
use crate::schema::{Micro, Params, StackBench};
use crate::stack::Stack;
use commperf_core::{Benchmark, Row};
use std::path::{Path, PathBuf};

/// A `bench` result without what the study needs of it.
#[derive(Debug, thiserror::Error)]
pub enum BenchRowError {
    #[error(transparent)]
    Report(#[from] commperf_report::ReportError),
    /// No loggp row at all.
    #[error("the bench wrote no loggp result")]
    NoLoggp,
    /// No loggp row with a latency.
    #[error("the bench wrote no loggp latency")]
    NoLatency,
    /// A parameter the fit could not identify at the row's size (the row's notes say why).
    #[error("bench loggp left {field} out at {size_bytes} B ({notes})")]
    LeftOut {
        field: &'static str,
        size_bytes: u64,
        notes: String,
    },
}

/// The loggp rows of a `bench loggp` result file, smallest size first: read once, for the
/// parameters, the pieces and the ladder.
pub fn bench_rows(text: &str) -> Result<Vec<Row>, BenchRowError> {
    let rep = commperf_report::load_json(text)?;
    let mut rows: Vec<_> = rep
        .results
        .into_iter()
        .filter(|r| r.benchmark() == Benchmark::Loggp)
        .collect();
    rows.sort_by_key(|r| r.size_bytes);
    Ok(rows)
}

/// The parameters of a bench's loggp rows ([`bench_rows`]): its first piece (the smallest
/// messages).
pub fn params_from_bench(rows: &[Row]) -> Result<(Params, Vec<String>), BenchRowError> {
    let row = rows.first().ok_or(BenchRowError::NoLoggp)?;
    Ok((params_of_row(row)?, row.notes.clone()))
}

/// The geometric mean of a bench's one-way times (µs) over its sizes ([`bench_rows`]).
pub fn ladder_from_bench(rows: &[Row]) -> Result<f64, BenchRowError> {
    let logs: Vec<f64> = rows
        .iter()
        .filter_map(|r| r.p50_us().filter(|v| *v > 0.0 && v.is_finite()))
        .map(f64::ln)
        .collect();
    if logs.is_empty() {
        return Err(BenchRowError::NoLatency);
    }
    Ok((logs.iter().sum::<f64>() / logs.len() as f64).exp())
}

/// Every piece of a bench's loggp rows ([`bench_rows`]), smallest messages first, each from
/// the first row fitted with it; a piece whose parameters the bench could not all identify is
/// left out.
pub fn pieces_from_bench(rows: &[Row]) -> Vec<Params> {
    let mut out: Vec<Params> = Vec::new();
    for r in rows {
        let span = r
            .loggp()
            .map_or((None, None), |l| (l.piece_from_bytes, l.piece_to_bytes));
        if out
            .iter()
            .any(|p| (p.piece_from_bytes, p.piece_to_bytes) == span)
        {
            continue;
        }
        if let Ok(p) = params_of_row(r) {
            out.push(p);
        }
    }
    out
}

/// One row's LogGOPS parameters in ns.
fn params_of_row(row: &Row) -> Result<Params, BenchRowError> {
    let need = |field: &'static str, v: Option<f64>| {
        v.filter(|x| x.is_finite() && *x >= 0.0)
            .ok_or_else(|| BenchRowError::LeftOut {
                field,
                size_bytes: row.size_bytes,
                notes: if row.notes.is_empty() {
                    "no note".to_string()
                } else {
                    row.notes.join("; ")
                },
            })
    };
    let f = row.loggp().copied().unwrap_or_default();
    let o_s = need("o_s", f.o_s_fixed_us)? * 1e3;
    let o_r = need("o_r", f.o_r_fixed_us)? * 1e3;
    let l = need("L", f.L_us)? * 1e3;
    let p = Params {
        L_ns: l,
        o_s_ns: o_s,
        o_r_ns: o_r,
        g_ns: need("g", f.g_us)? * 1e3,
        G_ns_per_byte: need("G", f.gap_per_byte_us)? * 1e3,
        O_ns_per_byte: (f.O_s_us_per_byte.unwrap_or(0.0) + f.O_r_us_per_byte.unwrap_or(0.0)) / 2.0
            * 1e3,
        piece_from_bytes: f.piece_from_bytes,
        piece_to_bytes: f.piece_to_bytes,
        small_message_ns: o_s + l + o_r,
        // Absent where not measured (figures of a bench without exchanges): LogGOPSim's rule.
        overlap_ns: f.overlap_us.unwrap_or(0.0) * 1e3,
        send_wait_ns: f.send_wait_us.unwrap_or(0.0) * 1e3,
        duplex_ns: f.duplex_us.unwrap_or(0.0) * 1e3,
    };
    Ok(p)
}

/// The latency and bandwidth figures at each of `sizes` in a `bench latency bw` result; a size
/// without both is left out.
fn figures_of(text: &str, sizes: &[u64]) -> Result<Vec<Micro>, BenchRowError> {
    let rep = commperf_report::load_json(text)?;
    let mut figures = Vec::new();
    for &size in sizes {
        let row = |bm: Benchmark| {
            rep.results
                .iter()
                .find(|r| r.benchmark() == bm && r.size_bytes == size)
        };
        let (Some(lat), Some(bw)) = (
            row(Benchmark::Latency).and_then(|r| r.p50_us()),
            row(Benchmark::Bw),
        ) else {
            continue;
        };
        let (Some(mbps), Some(rate)) = (bw.mb_per_s(), bw.msgs_per_s()) else {
            continue;
        };
        figures.push(Micro {
            size_bytes: size,
            latency_us: lat,
            bandwidth_mb_per_s: mbps,
            gap_us: 1e6 / rate,
        });
    }
    Ok(figures)
}

/// `commperf bench latency bw --transport mpi` with 2 ranks under the stack's launch.
pub(crate) fn stack_bench(cfg: &StudyConfig, s: Stack, sizes: &[u64], root: &Path) -> StackBench {
    let mut b = StackBench {
        stack: s.name(),
        error: None,
        note: None,
        file: None,
        figures: Vec::new(),
    };
    if sizes.is_empty() {
        b.error = Some("no program sent a point-to-point message: nothing to measure".into());
        return b;
    }
    let mut note = None;
    let r = (|| -> Result<(PathBuf, Vec<Micro>)> {
        let file = root.join(format!("bench-{}.json", s.name()));
        let list = sizes
            .iter()
            .map(u64::to_string)
            .collect::<Vec<_>>()
            .join(",");
        let args = ["latency", "bw", "--transport", "mpi", "--sizes", &list].map(String::from);
        note = crate::launch::launch_bench(cfg, s, &args, &file)?;
        let text = commperf_core::read_text(&file)?;
        let figures = figures_of(&text, sizes).with_context(|| file.display().to_string())?;
        Ok((file, figures))
    })();
    b.note = note;
    match r {
        Ok((file, figures)) => {
            b.file = cfg.out.is_some().then_some(file);
            b.figures = figures;
        }
        Err(e) => b.error = Some(crate::error::chain(&e)),
    }
    b
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bench_parameters_come_from_the_first_piece_in_ns() {
        let text = r#"{"schema_version": 2, "tool": "commperf 0.1.0", "started_unix_s": 1,
          "machine": {"hostname": "vm", "cpu_model": "AMD EPYC", "cores": 2, "kernel": "6",
            "timer": {"source": "tsc", "tsc_ghz": 2.6, "cost_ns": 9.5}},
          "options": {"benchmarks": ["loggp"], "transports": ["mpi"], "modes": ["poll"],
            "sizes_bytes": [8, 16384], "iterations": 5, "window": 64, "validate": false,
            "launcher": "mpi", "peer": "rank 1", "mpi_library": "Open MPI v4.1.4"},
          "placement": {"pinned": false, "local_cpu": 0, "peer_cpu": 1},
          "results": [
          {"benchmark": "loggp", "transport": "mpi", "mode": "poll", "size_bytes": 16384,
           "iterations": 5, "warmup": 1, "validated": true, "o_s_fixed_us": 9.0,
           "o_r_fixed_us": 9.0, "g_us": 9.0, "G_us_per_byte": 0.009, "L_us": 9.0},
          {"benchmark": "loggp", "transport": "mpi", "mode": "poll", "size_bytes": 8,
           "iterations": 5, "warmup": 1, "validated": true, "o_s_fixed_us": 0.25,
           "o_r_fixed_us": 0.5, "g_us": 0.125, "G_us_per_byte": 0.0001, "L_us": 1.0,
           "O_s_us_per_byte": 0.00002, "piece_from_bytes": 8, "piece_to_bytes": 4096}
        ]}"#;
        let (p, _) = params_from_bench(&bench_rows(text).unwrap()).unwrap();
        assert_eq!(
            (p.o_s_ns, p.o_r_ns, p.g_ns, p.L_ns),
            (250.0, 500.0, 125.0, 1000.0)
        );
        assert!((p.G_ns_per_byte - 0.1).abs() < 1e-12);
        assert!((p.O_ns_per_byte - 0.01).abs() < 1e-12);
        assert_eq!(p.small_message_ns, 1750.0);
        assert_eq!(p.piece_to_bytes, Some(4096));
        let no_l = text.replace("\"L_us\": 1.0,", "");
        let e = params_from_bench(&bench_rows(&no_l).unwrap())
            .unwrap_err()
            .to_string();
        assert!(e.contains("left L out at 8 B"), "{e}");
        // Every piece: the 16 KiB row's own (8 KiB – 1 MiB) beside the first.
        let two = text.replace(
            "\"L_us\": 9.0}",
            "\"L_us\": 9.0, \"piece_from_bytes\": 8192, \"piece_to_bytes\": 1048576}",
        );
        let pieces = pieces_from_bench(&bench_rows(&two).unwrap());
        assert_eq!(pieces.len(), 2);
        assert_eq!(pieces[0].o_s_ns, 250.0);
        assert_eq!(pieces[1].o_s_ns, 9000.0);
        // A program's median message takes the piece covering it, or the nearer on a log
        // scale: 6 KiB is 1.5× past 4 KiB and 1.33× short of 8 KiB.
        let at = |size| Params::covering(&pieces, size).unwrap().o_s_ns;
        assert_eq!(
            (at(8), at(4096), at(16384), at(1 << 30)),
            (250.0, 250.0, 9000.0, 9000.0)
        );
        assert_eq!((at(5000), at(6144)), (250.0, 9000.0));
    }
}
