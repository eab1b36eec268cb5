//! Seed 004's Figure 3.6: the send overhead O_s (and here also the receive overhead O_r)
//! against message size, per transport and mode, from the loggp rows of a report. Two
//! renderings from the same points: a small ASCII chart for the table format, and an SVG file.
//!
//! Sizes go on a log2 axis (the suite measures powers of two), overheads on a linear µs axis that
//! always includes 0, so a flat overhead looks flat and a negative one (measurement noise around
//! zero, see the README) sits visibly below the axis. Absent values are left out, never drawn
//! as 0: a row without O_s simply has no O_s point.

use commperf_core::{format_size, Benchmark, Mode, Report, Row, TransportKind};
use std::fmt::Write as _;

/// The figure's title, in both renderings.
pub const TITLE: &str = "O_s and O_r against size (seed 004 Figure 3.6)";

/// Why no figure can be drawn.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PlotError {
    /// The report has no loggp rows at all.
    #[error("no loggp results to plot (they come from `commperf bench loggp`)")]
    NoLoggp,
    /// Loggp rows, but none with an O_s or O_r value at a size above 0.
    #[error("the loggp results have no O_s or O_r values to plot")]
    NoValues,
}

/// The two plotted parameters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Param {
    Os,
    Or,
}

impl Param {
    const BOTH: [Param; 2] = [Param::Os, Param::Or];

    fn get(self, r: &Row) -> Option<f64> {
        match self {
            Param::Os => r.o_s_us,
            Param::Or => r.o_r_us,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Param::Os => "O_s",
            Param::Or => "O_r",
        }
    }
}

/// One line of the figure: a parameter of one transport and mode, as (size, µs) in size order.
#[derive(Debug)]
struct Series {
    transport: TransportKind,
    mode: Mode,
    param: Param,
    points: Vec<(u64, f64)>,
}

/// The points of `param` among `rows`: sizes above 0 (a log axis has no place for 0) with a
/// finite value, sorted by size.
fn points<'a>(rows: impl Iterator<Item = &'a Row>, param: Param) -> Vec<(u64, f64)> {
    let mut p: Vec<(u64, f64)> = rows
        .filter(|r| r.size_bytes > 0)
        .filter_map(|r| {
            param
                .get(r)
                .filter(|v| v.is_finite())
                .map(|v| (r.size_bytes, v))
        })
        .collect();
    p.sort_by_key(|&(s, _)| s);
    p
}

/// Every non-empty series of the report: per (transport, mode) in order of first appearance,
/// O_s then O_r.
fn series(report: &Report) -> Result<Vec<Series>, PlotError> {
    let loggp: Vec<&Row> = report
        .results
        .iter()
        .filter(|r| r.benchmark == Benchmark::Loggp)
        .collect();
    if loggp.is_empty() {
        return Err(PlotError::NoLoggp);
    }
    let mut keys: Vec<(TransportKind, Mode)> = Vec::new();
    for r in &loggp {
        if !keys.contains(&(r.transport, r.mode)) {
            keys.push((r.transport, r.mode));
        }
    }
    let mut out = Vec::new();
    for (transport, mode) in keys {
        for param in Param::BOTH {
            let rows = loggp
                .iter()
                .copied()
                .filter(|r| (r.transport, r.mode) == (transport, mode));
            let points = points(rows, param);
            if !points.is_empty() {
                out.push(Series {
                    transport,
                    mode,
                    param,
                    points,
                });
            }
        }
    }
    if out.is_empty() {
        return Err(PlotError::NoValues);
    }
    Ok(out)
}

/// log2 of a size (exact for powers of two).
fn log2(size: u64) -> f64 {
    (size as f64).log2()
}

/// The whole powers of two that bracket every size: (floor log2 of the smallest, ceil log2 of
/// the largest).
fn pow_range<'a>(all: impl Iterator<Item = &'a (u64, f64)>) -> (u32, u32) {
    let (mut lo, mut hi) = (u32::MAX, 0);
    for &(s, _) in all {
        lo = lo.min(s.ilog2());
        hi = hi.max(if s.is_power_of_two() {
            s.ilog2()
        } else {
            s.ilog2() + 1
        });
    }
    (lo, hi)
}

/// The value range of the y axis: every value and 0; never empty.
fn value_range<'a>(all: impl Iterator<Item = &'a (u64, f64)>) -> (f64, f64) {
    let (mut lo, mut hi) = (0.0f64, 0.0f64);
    for &(_, v) in all {
        lo = lo.min(v);
        hi = hi.max(v);
    }
    if hi - lo <= 0.0 {
        hi = lo + 1.0;
    }
    (lo, hi)
}

/// The label of size 2^p: `1`, `4`, `64`, `1K`, `64K`, `1M`, …
fn pow_label(p: u32) -> String {
    format_size(1u64 << p.min(63))
}

/// Rows of the text chart's plot area.
const TEXT_ROWS: usize = 10;
/// Widest plot area of the text chart, in columns.
const TEXT_WIDTH: u32 = 66;

/// The ASCII chart of one loggp block (one transport and mode), every line starting with `# `
/// so the table output stays loadable by gnuplot. None when no row has a value to plot.
///
/// ```text
/// # commperf O_s and O_r against size (seed 004 Figure 3.6) | transport shm | mode poll
/// #     us
/// # 2.000 |              s
/// #       |        s  *
/// # 0.000 |s  *  r
/// #       +--------------
/// #        1     4    16
/// #        size (bytes, log2 scale); s = O_s, r = O_r, * = both
/// ```
pub(crate) fn text_chart(rows: &[&Row], heading: &str) -> Option<String> {
    let os = points(rows.iter().copied(), Param::Os);
    let or = points(rows.iter().copied(), Param::Or);
    if os.is_empty() && or.is_empty() {
        return None;
    }
    let (pmin, pmax) = pow_range(os.iter().chain(&or));
    let span = pmax - pmin;
    // Columns per power of two: as wide as fits, up to 6 so a short ladder is still readable
    // (one size alone: one column).
    let step = TEXT_WIDTH.checked_div(span).map_or(1, |w| w.clamp(1, 6));
    let width = (span * step + 1) as usize;
    let (lo, hi) = value_range(os.iter().chain(&or));
    let row_of = |v: f64| (((v - lo) / (hi - lo)) * (TEXT_ROWS - 1) as f64).round() as usize;
    let col_of = |s: u64| (((log2(s) - pmin as f64) * step as f64).round() as usize).min(width - 1);

    let mut grid = vec![vec![' '; width]; TEXT_ROWS];
    for (pts, mark) in [(&os, 's'), (&or, 'r')] {
        for &(s, v) in pts {
            let cell = &mut grid[row_of(v).min(TEXT_ROWS - 1)][col_of(s)];
            *cell = match *cell {
                ' ' => mark,
                c if c == mark => mark,
                _ => '*',
            };
        }
    }

    // Y labels on the top, middle and bottom rows: the value each of those rows stands for.
    let row_value = |r: usize| lo + (hi - lo) * r as f64 / (TEXT_ROWS - 1) as f64;
    let labelled = [TEXT_ROWS - 1, (TEXT_ROWS - 1) / 2, 0];
    let labels: Vec<String> = labelled
        .iter()
        .map(|&r| crate::blocks::fmt_us(row_value(r)))
        .collect();
    let lw = labels.iter().map(String::len).max().unwrap_or(0);

    let mut out = String::new();
    let mut line = |s: String| {
        out.push_str(s.trim_end());
        out.push('\n');
    };
    line(format!("# commperf {TITLE} | {heading}"));
    line(format!("# {:>lw$}", "us"));
    for r in (0..TEXT_ROWS).rev() {
        let label = labelled
            .iter()
            .position(|&l| l == r)
            .map_or("", |i| labels[i].as_str());
        let cells: String = grid[r].iter().collect();
        line(format!("# {label:>lw$} |{cells}"));
    }
    line(format!("# {:lw$} +{}", "", "-".repeat(width)));
    // Size labels every k-th power of two (k chosen so neighbours never touch), on powers that
    // are multiples of k, so a 1 B … 4 MiB ladder reads 1, 4, 16, 64 … 1M, 4M.
    let longest = (pmin..=pmax).map(|p| pow_label(p).len()).max().unwrap_or(1) as u32;
    let k = (longest + 1).div_ceil(step).max(1);
    let mut axis = String::new();
    for p in (pmin..=pmax).filter(|p| p % k == 0 || span == 0) {
        let col = ((p - pmin) * step) as usize;
        if axis.len() < col {
            axis.push_str(&" ".repeat(col - axis.len()));
        }
        axis.push_str(&pow_label(p));
    }
    line(format!("# {:lw$}  {axis}", ""));
    line(format!(
        "# {:lw$}  size (bytes, log2 scale); s = O_s, r = O_r, * = both",
        ""
    ));
    Some(out)
}

// SVG geometry, in pixels.
const SVG_W: f64 = 760.0;
const SVG_H: f64 = 440.0;
const LEFT: f64 = 70.0;
const RIGHT: f64 = 180.0;
const TOP: f64 = 44.0;
const BOTTOM: f64 = 56.0;
const LEGEND_STEP: f64 = 18.0;

/// One colour per transport and mode (Tableau 10), reused in order when there are more.
const COLOURS: [&str; 8] = [
    "#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf",
];

/// A round step for about five y ticks over `span`: 1, 2 or 5 times a power of ten. Computed
/// by scaling instead of logarithms, so the ticks are the same on every libm.
fn nice_step(span: f64) -> f64 {
    let raw = span / 5.0;
    let mut scale = 1.0;
    while raw / scale >= 10.0 {
        scale *= 10.0;
    }
    while raw / scale < 1.0 {
        scale /= 10.0;
    }
    let f = raw / scale;
    let m = if f <= 1.0 {
        1.0
    } else if f <= 2.0 {
        2.0
    } else if f <= 5.0 {
        5.0
    } else {
        10.0
    };
    m * scale
}

/// Decimals that show a tick step exactly (0.25 → 2, 5 → 0).
fn decimals(step: f64) -> usize {
    let mut d = 0;
    let mut s = step;
    while d < 6 && (s - s.round()).abs() > 1e-9 * step.max(1.0) {
        s *= 10.0;
        d += 1;
    }
    d
}

/// Escapes text for SVG content and attribute values.
fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// The figure as a standalone SVG document: a log2 size axis labelled 1, 4, 64, 1K … , a linear
/// µs axis from the lowest value (or 0) to the highest, one polyline per transport, mode and
/// parameter (O_s solid with round markers, O_r dashed with square markers, one colour per
/// transport and mode) and a legend. Deterministic: the same report gives the same bytes.
pub fn loggp_svg(report: &Report) -> Result<String, PlotError> {
    let series = series(report)?;
    let all = || series.iter().flat_map(|s| s.points.iter());
    let (pmin, mut pmax) = pow_range(all());
    if pmax == pmin {
        pmax = pmin + 1; // one size: give the axis a width, the point sits on its left end
    }
    let (vlo, vhi) = value_range(all());
    let step = nice_step(vhi - vlo);
    let (ylo, yhi) = ((vlo / step).floor() * step, (vhi / step).ceil() * step);
    let height = SVG_H.max(TOP + series.len() as f64 * LEGEND_STEP + 2.0 * LEGEND_STEP);
    let (pw, ph) = (SVG_W - LEFT - RIGHT, height - TOP - BOTTOM);
    let x_of = |l: f64| LEFT + (l - pmin as f64) / (pmax - pmin) as f64 * pw;
    let y_of = |v: f64| TOP + ph - (v - ylo) / (yhi - ylo) * ph;
    let (right, bottom) = (LEFT + pw, TOP + ph);

    let mut o = String::new();
    // Writing to a String cannot fail; the results of write! are ignored for that reason.
    let _ = writeln!(o, r#"<?xml version="1.0" encoding="UTF-8"?>"#);
    let _ = writeln!(
        o,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{SVG_W}" height="{height}" viewBox="0 0 {SVG_W} {height}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(o, "<title>{}</title>", esc(TITLE));
    let _ = writeln!(
        o,
        r#"<rect x="0" y="0" width="{SVG_W}" height="{height}" fill="white"/>"#
    );
    let _ = writeln!(
        o,
        r#"<text x="{:.1}" y="24" text-anchor="middle" font-size="15">{}</text>"#,
        LEFT + pw / 2.0,
        esc(TITLE)
    );

    // Grid and ticks: every power of two on x, labelled every k-th so labels (about 36 px
    // wide at most) never overlap; round µs steps on y.
    let per_pow = pw / (pmax - pmin) as f64;
    let k = ((40.0 / per_pow).ceil() as u32).max(1);
    let _ = writeln!(o, r##"<g stroke="#e0e0e0" stroke-width="1">"##);
    for p in pmin..=pmax {
        let x = x_of(p as f64);
        let _ = writeln!(
            o,
            r#"<line x1="{x:.1}" y1="{TOP:.1}" x2="{x:.1}" y2="{bottom:.1}"/>"#
        );
    }
    let nticks = ((yhi - ylo) / step).round() as i64;
    for i in 0..=nticks {
        let y = y_of(ylo + i as f64 * step);
        let _ = writeln!(
            o,
            r#"<line x1="{LEFT:.1}" y1="{y:.1}" x2="{right:.1}" y2="{y:.1}"/>"#
        );
    }
    let _ = writeln!(o, "</g>");
    let _ = writeln!(
        o,
        r##"<g stroke="#000000" stroke-width="1"><line x1="{LEFT:.1}" y1="{bottom:.1}" x2="{right:.1}" y2="{bottom:.1}"/><line x1="{LEFT:.1}" y1="{TOP:.1}" x2="{LEFT:.1}" y2="{bottom:.1}"/></g>"##
    );
    if ylo < 0.0 {
        let y0 = y_of(0.0);
        let _ = writeln!(
            o,
            r##"<line x1="{LEFT:.1}" y1="{y0:.1}" x2="{right:.1}" y2="{y0:.1}" stroke="#808080" stroke-width="1"/>"##
        );
    }
    let _ = writeln!(o, r#"<g text-anchor="middle">"#);
    for p in (pmin..=pmax).filter(|p| p % k == 0) {
        let _ = writeln!(
            o,
            r#"<text x="{:.1}" y="{:.1}">{}</text>"#,
            x_of(p as f64),
            bottom + 18.0,
            pow_label(p)
        );
    }
    let _ = writeln!(o, "</g>");
    let d = decimals(step);
    let _ = writeln!(o, r#"<g text-anchor="end">"#);
    for i in 0..=nticks {
        let v = ylo + i as f64 * step;
        // Rounding can leave -0.0 at zero; it must read 0.
        let v = if v.abs() < step * 1e-9 { 0.0 } else { v };
        let _ = writeln!(
            o,
            r#"<text x="{:.1}" y="{:.1}">{v:.d$}</text>"#,
            LEFT - 8.0,
            y_of(v) + 4.0
        );
    }
    let _ = writeln!(o, "</g>");
    let _ = writeln!(
        o,
        r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">message size (bytes, log2 scale)</text>"#,
        LEFT + pw / 2.0,
        bottom + 40.0
    );
    let (yx, yy) = (18.0, TOP + ph / 2.0);
    let _ = writeln!(
        o,
        r#"<text x="{yx:.1}" y="{yy:.1}" text-anchor="middle" transform="rotate(-90 {yx:.1} {yy:.1})">overhead (µs)</text>"#
    );

    // The series, then the legend with the same styles.
    let mut keys: Vec<(TransportKind, Mode)> = Vec::new();
    for s in &series {
        if !keys.contains(&(s.transport, s.mode)) {
            keys.push((s.transport, s.mode));
        }
    }
    let style = |s: &Series| {
        let i = keys
            .iter()
            .position(|&k| k == (s.transport, s.mode))
            .unwrap_or(0);
        let dash = match s.param {
            Param::Os => "",
            Param::Or => r#" stroke-dasharray="6 4""#,
        };
        (COLOURS[i % COLOURS.len()], dash)
    };
    let marker = |o: &mut String, s: &Series, x: f64, y: f64, colour: &str| {
        let _ = match s.param {
            Param::Os => writeln!(
                o,
                r#"<circle cx="{x:.1}" cy="{y:.1}" r="3" fill="{colour}"/>"#
            ),
            Param::Or => writeln!(
                o,
                r#"<rect x="{:.1}" y="{:.1}" width="6" height="6" fill="{colour}"/>"#,
                x - 3.0,
                y - 3.0
            ),
        };
    };
    for s in &series {
        let (colour, dash) = style(s);
        let pts: Vec<String> = s
            .points
            .iter()
            .map(|&(size, v)| format!("{:.1},{:.1}", x_of(log2(size)), y_of(v)))
            .collect();
        let _ = writeln!(
            o,
            r#"<g class="series" data-transport="{}" data-mode="{}" data-parameter="{}">"#,
            s.transport,
            s.mode,
            s.param.name()
        );
        let _ = writeln!(
            o,
            r#"<polyline fill="none" stroke="{colour}" stroke-width="2"{dash} points="{}"/>"#,
            pts.join(" ")
        );
        for &(size, v) in &s.points {
            marker(&mut o, s, x_of(log2(size)), y_of(v), colour);
        }
        let _ = writeln!(o, "</g>");
    }
    let lx = right + 16.0;
    let _ = writeln!(o, r#"<g class="legend">"#);
    for (i, s) in series.iter().enumerate() {
        let (colour, dash) = style(s);
        let y = TOP + 8.0 + i as f64 * LEGEND_STEP;
        let _ = writeln!(
            o,
            r#"<line x1="{lx:.1}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="{colour}" stroke-width="2"{dash}/>"#,
            lx + 28.0
        );
        marker(&mut o, s, lx + 14.0, y, colour);
        let _ = writeln!(
            o,
            r#"<text x="{:.1}" y="{:.1}">{} {} {}</text>"#,
            lx + 36.0,
            y + 4.0,
            s.transport,
            s.mode,
            s.param.name()
        );
    }
    let _ = writeln!(o, "</g>");
    let _ = writeln!(o, "</svg>");
    Ok(o)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn y_ticks_are_round_and_exactly_printed() {
        assert_eq!(nice_step(3.5), 1.0);
        assert_eq!(nice_step(0.37), 0.1);
        assert_eq!(nice_step(12.0), 5.0);
        assert_eq!(nice_step(1.0), 0.2);
        assert_eq!(nice_step(700.0), 200.0);
        assert_eq!(decimals(1.0), 0);
        assert_eq!(decimals(200.0), 0);
        assert_eq!(decimals(0.2), 1);
        assert_eq!(decimals(0.05), 2);
        assert_eq!(
            (0..=30).step_by(10).map(pow_label).collect::<Vec<_>>(),
            ["1", "1K", "1M", "1G"]
        );
    }

    #[test]
    fn a_wide_ladder_keeps_the_text_chart_narrow_and_its_labels_apart() {
        // 1 B … 1 GiB: 31 sizes on 61 columns, a label every third power.
        let rows: Vec<Row> = (0..=30u32)
            .map(|p| {
                let mut r = Row::new(Benchmark::Loggp, TransportKind::Tcp, Mode::Block, 1 << p);
                r.o_s_us = Some(p as f64);
                r
            })
            .collect();
        let refs: Vec<&Row> = rows.iter().collect();
        let chart = text_chart(&refs, "transport tcp | mode block").unwrap();
        let lines: Vec<&str> = chart.lines().collect();
        assert_eq!(lines.len(), 15);
        // The plot itself fits 80 columns (the title line is as long as the block headings).
        assert!(lines[1..].iter().all(|l| l.len() <= 80), "{chart}");
        assert_eq!(
            lines[13],
            "#        1     8     64    512   4K    32K   256K  2M    16M   128M  1G"
        );
        // Linear in µs: the top row holds 512 MiB and 1 GiB (29 and 30 µs, at the last two
        // points, two columns apart), the bottom row 1 and 2 B (0 and 1 µs).
        assert_eq!(lines[2], format!("# 30.00 |{}s s", " ".repeat(58)));
        assert_eq!(lines[11], "# 0.000 |s s");
    }
}
