//! Figure 3.6 of N. S. Kutluğ, "Performance Evaluation and Analysis of User Level Networking
//! Protocols in Clusters" (MS thesis, The Ohio State University, 2000): the send overhead o_s
//! (and here also the receive overhead o_r) against message size, per transport and mode, from
//! the loggp rows of a report. Two renderings from the same points: a small ASCII chart for the
//! table format, and an SVG figure on the chart layer.
//!
//! Sizes go on a log2 axis (the suite measures powers of two). Overheads go on the shared µs
//! [`Axis`] of `commperf-stats`: linear and including 0 while the values are within a factor of
//! 30 of each other, so a flat overhead looks flat and a negative one (measurement noise around
//! zero, see the user guide) sits visibly below the axis; log10 when they span more (0.02 µs at 1 B
//! and 900 µs at 1 MiB), so the small sizes do not all land on zero. A log axis cannot place a
//! value at or below 0: those go on a `≤ 0` baseline of their own (the `<=0` row of the text
//! chart, the x axis of the SVG), never onto the lowest decade. Both renderings say which
//! scale they use. Absent values are left out, never drawn as 0: a row without o_s simply has
//! no o_s point.

use super::{colour, Figure, Marker, Panel, PlotError, Point, Stroke, XScale};
use crate::plot;
use commperf_core::{format_size, Benchmark, Mode, Report, Row, TransportKind};
use commperf_stats::axis::{Axis, Scale};

/// The figure's title, in both renderings.
pub const TITLE: &str = "o_s and o_r against size (after Kutluğ 2000, Figure 3.6)";

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
            Param::Os => r.loggp()?.o_s_us,
            Param::Or => r.loggp()?.o_r_us,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Param::Os => "o_s",
            Param::Or => "o_r",
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
/// o_s then o_r.
fn series(report: &Report) -> Result<Vec<Series>, PlotError> {
    let loggp: Vec<&Row> = report
        .results
        .iter()
        .filter(|r| r.benchmark() == Benchmark::Loggp)
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

/// The label of size 2^p: `1`, `4`, `64`, `1K`, `64K`, `1M`, …
fn pow_label(p: u32) -> String {
    format_size(1u64 << p.min(63))
}

/// About how many rows the text chart's plot area has (exactly: a whole number of rows per
/// tick interval, so every tick label sits on the row of its value; see [`text_rows`]).
const TEXT_ROWS: u32 = 10;
/// Most rows of the plot area on a log axis.
const TEXT_LOG_ROWS: u32 = 17;
/// Widest plot area of the text chart, in columns.
const TEXT_WIDTH: u32 = 66;
/// The label of the text chart's row for values a log axis cannot place.
const TEXT_NONPOSITIVE: &str = "<=0";

/// Rows of the text chart's plot area on `axis`: a whole number per tick interval, so each
/// tick is exactly on a row: about [`TEXT_ROWS`] on a linear axis; on a log axis at least
/// [`TEXT_ROWS`], three rows a decade up to 5 decades (the rows between stand for about 2.15
/// and 4.64 times the decade), two up to 8, one beyond, and never more than [`TEXT_LOG_ROWS`].
fn text_rows(axis: &Axis) -> u32 {
    let n = axis.intervals();
    match axis.scale() {
        Scale::Linear => {
            let per = ((TEXT_ROWS - 1) as f64 / n as f64).round().max(1.0) as u32;
            n * per + 1
        }
        Scale::Log10 => {
            let per = match n {
                0..=5 => 3,
                6..=8 => 2,
                _ => 1,
            };
            let per = per.max((TEXT_ROWS - 1).div_ceil(n));
            (n * per + 1).min(TEXT_LOG_ROWS)
        }
    }
}

/// The ASCII chart of one loggp block (one transport and mode), every line starting with `# `
/// so the table output stays loadable by gnuplot. None when no row has a value to plot.
///
/// The µs axis is the shared [`Axis`]: linear from 0 (or the lowest value) when the values
/// are within a factor of [`LOG_RATIO`](commperf_stats::axis::LOG_RATIO) of each other, log10
/// from decade to decade when they span more, so sub-µs overheads of small messages stay apart
/// from the ms ones of large messages. Values at or below 0 have no place on a log axis: they
/// go on a row of their own labelled `<=0`, under the plot.
///
/// ```text
/// # commperf o_s and o_r against size (after Kutluğ 2000, Figure 3.6) | transport shm | mode poll
/// #  us, log10 scale
/// #  10 |                        s
/// #     |                        r
/// #     |                  r
/// #     |                  s
/// #     |
/// #   1 |            *
/// #     |
/// #     |      r
/// #     |r
/// #     |s
/// # 0.1 |
/// # <=0 |      s
/// #     +-------------------------
/// #      1     2     4     8     16
/// #      size (bytes, log2 scale); s = o_s, r = o_r, * = both
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
    let axis = Axis::for_values(os.iter().chain(&or).map(|&(_, v)| v));
    let nrows = text_rows(&axis) as usize;
    // The row of a value, 0 at the bottom; None for the row below the plot (values a log axis
    // cannot place).
    let row_of = |v: f64| {
        axis.position(v)
            .map(|f| ((f * (nrows - 1) as f64).round().max(0.0) as usize).min(nrows - 1))
    };
    let col_of = |s: u64| (((log2(s) - pmin as f64) * step as f64).round() as usize).min(width - 1);

    let mut grid = vec![vec![' '; width]; nrows];
    let mut below: Option<Vec<char>> = None;
    for (pts, mark) in [(&os, 's'), (&or, 'r')] {
        for &(s, v) in pts {
            let line = match row_of(v) {
                Some(r) => &mut grid[r],
                None => below.get_or_insert_with(|| vec![' '; width]),
            };
            let cell = &mut line[col_of(s)];
            *cell = match *cell {
                ' ' => mark,
                c if c == mark => mark,
                _ => '*',
            };
        }
    }

    // Each tick's label on the row of its value (a row holds one label: the first tick on it).
    let mut labels: Vec<Option<String>> = vec![None; nrows];
    for t in axis.ticks() {
        let r = ((t.position * (nrows - 1) as f64).round() as usize).min(nrows - 1);
        labels[r].get_or_insert(t.label);
    }
    let lw = labels
        .iter()
        .flatten()
        .map(String::len)
        .chain(below.as_ref().map(|_| TEXT_NONPOSITIVE.len()))
        .max()
        .unwrap_or(0);

    let mut out = String::new();
    let mut line = |s: String| {
        out.push_str(s.trim_end());
        out.push('\n');
    };
    line(format!("# commperf {TITLE} | {heading}"));
    line(format!("# {:>lw$}, {}", "us", axis.scale().caption()));
    for r in (0..nrows).rev() {
        let label = labels[r].as_deref().unwrap_or("");
        let cells: String = grid[r].iter().collect();
        line(format!("# {label:>lw$} |{cells}"));
    }
    if let Some(cells) = &below {
        let cells: String = cells.iter().collect();
        line(format!("# {TEXT_NONPOSITIVE:>lw$} |{cells}"));
    }
    line(format!("# {:lw$} +{}", "", "-".repeat(width)));
    // Size labels every k-th power of two (k chosen so neighbours never touch), on powers that
    // are multiples of k, so a 1 B … 4 MiB ladder reads 1, 4, 16, 64 … 1M, 4M.
    let longest = (pmin..=pmax).map(|p| pow_label(p).len()).max().unwrap_or(1) as u32;
    let k = (longest + 1).div_ceil(step).max(1);
    let mut sizes = String::new();
    for p in (pmin..=pmax).filter(|p| p % k == 0 || span == 0) {
        let col = ((p - pmin) * step) as usize;
        if sizes.len() < col {
            sizes.push_str(&" ".repeat(col - sizes.len()));
        }
        sizes.push_str(&pow_label(p));
    }
    line(format!("# {:lw$}  {sizes}", ""));
    line(format!(
        "# {:lw$}  size (bytes, log2 scale); s = o_s, r = o_r, * = both",
        ""
    ));
    Some(out)
}

/// The figure on the chart layer: a log2 size axis, a µs axis (the shared [`Axis`]: linear from
/// the lowest value or 0 to the highest, or log10 from decade to decade when the values span
/// more than a factor of [`LOG_RATIO`](commperf_stats::axis::LOG_RATIO), with values at or below
/// 0 on a `≤ 0` baseline under the lowest decade), one line per transport, mode and parameter
/// (o_s solid with round markers, o_r dashed with square markers, one colour per transport and
/// mode) and a legend.
pub fn loggp_figure(report: &Report) -> Result<Figure, PlotError> {
    let series = series(report)?;
    let axis = Axis::for_values(series.iter().flat_map(|s| s.points.iter().map(|&(_, v)| v)));
    let mut keys: Vec<(TransportKind, Mode)> = Vec::new();
    for s in &series {
        if !keys.contains(&(s.transport, s.mode)) {
            keys.push((s.transport, s.mode));
        }
    }
    let mut panel = Panel::new(
        XScale::Log2Bytes,
        "message size, bytes",
        axis,
        "overhead, µs",
    );
    for s in &series {
        let i = keys
            .iter()
            .position(|&k| k == (s.transport, s.mode))
            .unwrap_or(0);
        let (stroke, marker) = match s.param {
            Param::Os => (Stroke::Solid, Marker::Circle),
            Param::Or => (Stroke::Dashed, Marker::Square),
        };
        let mut line = plot::Series::new(
            format!("{} {} {}", s.transport, s.mode, s.param.name()),
            colour(i),
        )
        .stroke(stroke)
        .marker(marker)
        .attrs(format!(
            r#"data-transport="{}" data-mode="{}" data-parameter="{}""#,
            s.transport,
            s.mode,
            s.param.name()
        ));
        for &(size, v) in &s.points {
            line = line.point(
                Point::new(size as f64, v)
                    .tip(format!(
                        "{} {} {} at {} B: {v:.3} µs",
                        s.transport,
                        s.mode,
                        s.param.name(),
                        format_size(size)
                    ))
                    .attrs(format!(r#"data-size="{size}" data-value="{v}""#)),
            );
        }
        panel.series.push(line);
    }
    Ok(Figure::new(TITLE).panel(panel))
}

/// [`loggp_figure`] as a standalone SVG document. Deterministic: the same report gives the same
/// bytes.
pub fn loggp_svg(report: &Report) -> Result<String, PlotError> {
    Ok(loggp_figure(report)?.document())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn size_labels_use_binary_prefixes() {
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
                let mut r = commperf_core::FlatRow::new(
                    Benchmark::Loggp,
                    TransportKind::Tcp,
                    Mode::Block,
                    1 << p,
                );
                r.o_s_us = Some(p as f64);
                Row::try_from(r).unwrap()
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
            "#     1     8     64    512   4K    32K   256K  2M    16M   128M  1G"
        );
        // 1 … 30 µs is within the factor of 30: linear, ticks 0, 10, 20, 30 every third row.
        // The top row holds 512 MiB and 1 GiB (29 and 30 µs, at the last two points, two
        // columns apart), the bottom row 1 and 2 B (0 and 1 µs).
        assert_eq!(lines[1], "# us, linear scale");
        assert_eq!(lines[2], format!("# 30 |{}s s", " ".repeat(58)));
        // 19, 20 and 21 µs (at 512 KiB … 2 MiB) are nearest the row of 20.
        assert_eq!(lines[5], format!("# 20 |{}s s s", " ".repeat(38)));
        assert_eq!(lines[11], "#  0 |s s");
    }

    /// Loggp rows of one transport and mode with the given (size, o_s) values.
    fn os_rows(points: &[(u64, f64)]) -> Vec<Row> {
        points
            .iter()
            .map(|&(size, os)| {
                let mut r = commperf_core::FlatRow::new(
                    Benchmark::Loggp,
                    TransportKind::Shm,
                    Mode::Poll,
                    size,
                );
                r.o_s_us = Some(os);
                Row::try_from(r).unwrap()
            })
            .collect()
    }

    /// A text chart taken apart: the y-axis title, the labelled rows from the top, and where
    /// each marker is, as (row counted from the bottom of the plot, column in the plot).
    /// The `<=0` row, when there is one, is row `None`.
    struct Parsed {
        title: String,
        labels: Vec<(usize, String)>,
        marks: Vec<(Option<usize>, usize)>,
        nrows: usize,
    }

    fn parse(chart: &str) -> Parsed {
        let lines: Vec<&str> = chart.lines().collect();
        let plot: Vec<&str> = lines[2..]
            .iter()
            .copied()
            .take_while(|l| !l.trim_start_matches('#').trim_start().starts_with('+'))
            .collect();
        let has_below = plot.last().is_some_and(|l| l.contains("<=0 |"));
        let nrows = plot.len() - usize::from(has_below);
        let bar = plot[0].find('|').unwrap();
        let (mut labels, mut marks) = (Vec::new(), Vec::new());
        for (i, l) in plot.iter().enumerate() {
            assert_eq!(l.find('|'), Some(bar), "{chart}");
            let row = (i < nrows).then(|| nrows - 1 - i);
            let label = l[2..bar].trim();
            if let (Some(r), false) = (row, label.is_empty()) {
                labels.push((r, label.to_string()));
            }
            for (c, ch) in l[bar + 1..].chars().enumerate() {
                if ch != ' ' {
                    marks.push((row, c));
                }
            }
        }
        Parsed {
            title: lines[1].trim_start_matches('#').trim().to_string(),
            labels,
            marks,
            nrows,
        }
    }

    #[test]
    fn values_spanning_decades_get_a_log_axis_on_which_small_ones_stay_apart() {
        // o_s from 0.02 µs at 1 B to 300 µs at 2 KiB, one size per power of two. On a linear
        // axis to 300 µs every value up to 15 µs would sit on the bottom row.
        let values = [
            0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 100.0, 300.0,
        ];
        let points: Vec<(u64, f64)> = values
            .iter()
            .enumerate()
            .map(|(p, &v)| (1u64 << p, v))
            .collect();
        let rows = os_rows(&points);
        let refs: Vec<&Row> = rows.iter().collect();
        let chart = text_chart(&refs, "transport shm | mode poll").unwrap();
        let c = parse(&chart);
        assert_eq!(c.title, "us, log10 scale", "{chart}");
        // Decades 0.01 … 1000 µs, three rows a decade: 16 rows, a label every third row.
        assert_eq!(c.nrows, 16, "{chart}");
        assert_eq!(
            c.labels,
            [
                (15, "1k".to_string()),
                (12, "100".to_string()),
                (9, "10".to_string()),
                (6, "1".to_string()),
                (3, "0.1".to_string()),
                (0, "0.01".to_string()),
            ],
            "{chart}"
        );
        // Each marker is on the row of its value: 3 rows per factor of ten above 0.01 µs,
        // rounded; one marker per column (6 columns per power of two).
        let expected: Vec<(Option<usize>, usize)> = values
            .iter()
            .enumerate()
            .map(|(p, &v)| {
                let row = ((v / 0.01f64).log10() * 3.0).round() as usize;
                (Some(row), p * 6)
            })
            .collect();
        let mut marks = c.marks.clone();
        marks.sort_by_key(|&(_, col)| col);
        assert_eq!(marks, expected, "{chart}");
        // Spelled out: the sub-µs values each have a row of their own, in ascending order.
        let small: Vec<usize> = marks[..6].iter().map(|&(r, _)| r.unwrap()).collect();
        assert_eq!(small, [1, 2, 3, 4, 5, 6], "{chart}");
        assert!(
            marks.windows(2).all(|w| w[0].0 < w[1].0),
            "rows ascend with the values\n{chart}"
        );
        assert!(
            !chart.contains("<=0"),
            "no value at or below 0: no such row\n{chart}"
        );
        // The plot still fits 80 columns.
        assert!(chart.lines().skip(1).all(|l| l.len() <= 80), "{chart}");
    }

    #[test]
    fn a_narrow_range_keeps_a_linear_axis_from_zero() {
        // 2.0 … 3.2 µs: a factor of 1.6, linear from 0 with ticks at every µs, two rows a tick.
        let rows = os_rows(&[(1, 2.0), (2, 2.5), (4, 3.2)]);
        let refs: Vec<&Row> = rows.iter().collect();
        let chart = text_chart(&refs, "transport shm | mode poll").unwrap();
        let c = parse(&chart);
        assert_eq!(c.title, "us, linear scale", "{chart}");
        assert_eq!(c.nrows, 9, "{chart}");
        let labels: Vec<(usize, &str)> = c.labels.iter().map(|(r, l)| (*r, l.as_str())).collect();
        assert_eq!(
            labels,
            [(8, "4"), (6, "3"), (4, "2"), (2, "1"), (0, "0")],
            "{chart}"
        );
        // Row of v: v / 4 µs of 8 rows, rounded: 2.0 → 4, 2.5 → 5, 3.2 → 6.4 → 6.
        let mut marks = c.marks.clone();
        marks.sort_by_key(|&(_, col)| col);
        assert_eq!(
            marks,
            [(Some(4), 0), (Some(5), 6), (Some(6), 12)],
            "{chart}"
        );
    }

    #[test]
    fn zero_and_negative_values_go_on_their_own_row_under_a_log_axis() {
        // o_s of -0.5 µs (noise around zero) at 2 B and 0 at 4 B among values from 0.05 to
        // 50 µs: a log axis, which has no place for them.
        let rows = os_rows(&[(1, 0.05), (2, -0.5), (4, 0.0), (8, 0.5), (16, 50.0)]);
        let refs: Vec<&Row> = rows.iter().collect();
        let chart = text_chart(&refs, "transport shm | mode poll").unwrap();
        let c = parse(&chart);
        assert_eq!(c.title, "us, log10 scale", "{chart}");
        // Decades 0.01 … 100: 4 decades, 3 rows each, 13 rows; then the `<=0` row.
        assert_eq!(c.nrows, 13, "{chart}");
        assert_eq!(c.labels.last(), Some(&(0, "0.01".to_string())), "{chart}");
        let below = chart
            .lines()
            .find(|l| l.contains("<=0 |"))
            .expect("a <=0 row");
        assert_eq!(below, "#  <=0 |      s     s", "{chart}");
        let mut marks = c.marks.clone();
        marks.sort_by_key(|&(_, col)| col);
        // 0.05 → log10(5)·3 = 2.1 → row 2 (not the bottom row: the smallest positive value is
        // not confused with the ones at or below 0), 0.5 → 5.1 → 5, 50 → 11.1 → 11.
        assert_eq!(
            marks,
            [
                (Some(2), 0),
                (None, 6),
                (None, 12),
                (Some(5), 18),
                (Some(11), 24)
            ],
            "{chart}"
        );
        // The row sits between the plot and the size axis.
        let lines: Vec<&str> = chart.lines().collect();
        let at = lines.iter().position(|l| l.contains("<=0 |")).unwrap();
        assert!(lines[at - 1].starts_with("# 0.01 |"), "{chart}");
        assert!(lines[at + 1].contains("+---"), "{chart}");
    }
}
