//! CSV: one flat table of every row, every [`FlatRow`](commperf_core::FlatRow) field a column,
//! named as in the JSON. Absent figures are empty cells; numbers are written at full precision (the
//! shortest decimal that reads back to the same `f64`), for spreadsheets and scripts.

use crate::table::{Align, Table};
use commperf_core::Report;

/// Column names, in order; equal to the JSON field names of a row.
pub(crate) const COLUMNS: [&str; 47] = [
    "benchmark",
    "transport",
    "mode",
    "size_bytes",
    "iterations",
    "warmup",
    "window",
    "p50_us",
    "p90_us",
    "p99_us",
    "min_us",
    "max_us",
    "mean_us",
    "p50_noise_us",
    "mb_per_s",
    "msgs_per_s",
    "efficiency",
    "limit_us",
    "limit_mb_per_s",
    "baseline_p50_us",
    "cost_us",
    "cost_noise_us",
    "block_spins",
    "connections",
    "segments",
    "packed",
    "buffers",
    "o_s_us",
    "o_r_us",
    "gap_us",
    "o_s_fixed_us",
    "O_s_us_per_byte",
    "o_r_fixed_us",
    "O_r_us_per_byte",
    "g_us",
    "G_us_per_byte",
    "L_us",
    "overlap_us",
    "exchange_us",
    "send_wait_us",
    "duplex_us",
    "model_us",
    "piece_from_bytes",
    "piece_to_bytes",
    "pairs",
    "validated",
    "notes",
];

pub(crate) fn render_csv(report: &Report) -> String {
    let mut t = Table::new();
    for (i, name) in COLUMNS.iter().enumerate() {
        t = t.column(*name, if i < 3 { Align::Left } else { Align::Right });
    }
    let opt = |v: Option<f64>| v.map(|v| v.to_string()).unwrap_or_default();
    for r in report.results.iter().map(|r| r.flat()) {
        t.push_row(vec![
            r.benchmark.to_string(),
            r.transport.to_string(),
            r.mode.to_string(),
            r.size_bytes.to_string(),
            r.iterations.to_string(),
            r.warmup.to_string(),
            r.window.map(|w| w.to_string()).unwrap_or_default(),
            opt(r.p50_us),
            opt(r.p90_us),
            opt(r.p99_us),
            opt(r.min_us),
            opt(r.max_us),
            opt(r.mean_us),
            opt(r.p50_noise_us),
            opt(r.mb_per_s),
            opt(r.msgs_per_s),
            opt(r.efficiency),
            opt(r.limit_us),
            opt(r.limit_mb_per_s),
            opt(r.baseline_p50_us),
            opt(r.cost_us),
            opt(r.cost_noise_us),
            r.block_spins.map_or_else(String::new, |n| n.to_string()),
            r.connections.map_or_else(String::new, |n| n.to_string()),
            r.segments.map_or_else(String::new, |n| n.to_string()),
            r.packed.map_or_else(String::new, |b| b.to_string()),
            r.buffers.map_or_else(String::new, |b| b.to_string()),
            opt(r.o_s_us),
            opt(r.o_r_us),
            opt(r.gap_us),
            opt(r.o_s_fixed_us),
            opt(r.O_s_us_per_byte),
            opt(r.o_r_fixed_us),
            opt(r.O_r_us_per_byte),
            opt(r.g_us),
            opt(r.gap_per_byte_us),
            opt(r.L_us),
            opt(r.overlap_us),
            opt(r.exchange_us),
            opt(r.send_wait_us),
            opt(r.duplex_us),
            opt(r.model_us),
            r.piece_from_bytes
                .map_or_else(String::new, |n| n.to_string()),
            r.piece_to_bytes.map_or_else(String::new, |n| n.to_string()),
            r.pairs.map_or_else(String::new, |n| n.to_string()),
            r.validated.to_string(),
            // One cell: notes joined; the CSV writer quotes what needs quoting.
            r.notes.join("; "),
        ]);
    }
    t.render_csv()
}
