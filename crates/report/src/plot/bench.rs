//! Any bench result as a figure: one-way latency against message size (p50, the p50-to-p99
//! range shaded) and bandwidth against message size, both sizes on a log2 axis and the values
//! on the shared value [`Axis`] (log10 when they span more than a factor of 30, as latencies
//! from 4 B to 4 MiB do), one line per benchmark, transport, mode and variant, as the text
//! table's blocks are.
//!
//! A block whose rows repeat a size (conns and cq vary the endpoints held open, pipeline the
//! fragment, noncontig the segments) has no line against size: it is left out, and a note
//! under the figure names it.

use super::{
    colour, Band, BandShape, Figure, LegendEntry, Marker, Panel, PlotError, Point, Series, Stroke,
    Swatch, XScale, GREY,
};
use crate::blocks::{blocks, Block};
use crate::compare::{Comparison, LayerInfo};
use commperf_core::{format_size, BufferUse, Report, Row};
use commperf_stats::axis::Axis;

/// The figure's title without the host.
pub const TITLE: &str = "latency and bandwidth against message size";

/// What a panel plots of a row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Quantity {
    Latency,
    Bandwidth,
}

impl Quantity {
    fn value(self, r: &Row) -> Option<f64> {
        match self {
            Quantity::Latency => r.p50_us(),
            Quantity::Bandwidth => r.mb_per_s(),
        }
        .filter(|v| v.is_finite())
    }

    fn name(self) -> &'static str {
        match self {
            Quantity::Latency => "latency",
            Quantity::Bandwidth => "bandwidth",
        }
    }
}

/// A block's legend label: `latency shm poll`, `bufmgmt shm poll fresh buffers`, `blocking
/// tcp block spin 1000`, `bw mpi poll 2 pairs`.
fn label(b: &Block<'_>) -> String {
    let mut parts = vec![
        b.benchmark.to_string(),
        b.transport.to_string(),
        b.mode.to_string(),
    ];
    parts.extend(variant(b.packed, b.buffers, b.block_spins, b.rows[0].pairs));
    parts.join(" ")
}

/// The short words of a variant, for a legend.
fn variant(
    packed: Option<bool>,
    buffers: Option<BufferUse>,
    block_spins: Option<u32>,
    pairs: Option<u32>,
) -> Vec<String> {
    let mut parts = Vec::new();
    match packed {
        Some(true) => parts.push("packed".into()),
        Some(false) => parts.push("vectored".into()),
        None => {}
    }
    match buffers {
        Some(BufferUse::Fresh) => parts.push("fresh buffers".into()),
        Some(BufferUse::Registered) => parts.push("registered".into()),
        None => {}
    }
    match block_spins {
        Some(0) => parts.push("block at once".into()),
        Some(n) => parts.push(format!("spin {n}")),
        None => {}
    }
    if let Some(n) = pairs {
        parts.push(format!("{n} pairs"));
    }
    parts
}

/// One line of the figure, before it is placed on a panel.
#[derive(Debug)]
struct Line {
    label: String,
    attrs: String,
    q: Quantity,
    /// (size, value, p99) in size order, sizes distinct.
    points: Vec<(u64, f64, Option<f64>)>,
    /// Drawn dashed whatever its colour (the upper layer of a comparison).
    dashed: bool,
    /// Its colour is the line's before it (the same benchmark at the other layer).
    same_colour: bool,
}

/// `points` in size order, or `None` when two share a size (the block varies something else
/// than the size).
fn distinct(mut points: Vec<(u64, f64, Option<f64>)>) -> Option<Vec<(u64, f64, Option<f64>)>> {
    points.retain(|p| p.0 > 0 && p.1.is_finite());
    points.sort_by_key(|p| p.0);
    points
        .windows(2)
        .all(|w| w[0].0 != w[1].0)
        .then_some(points)
}

/// Adds `label` to `left_out` once.
fn leave_out(left_out: &mut Vec<String>, label: String) {
    if !left_out.contains(&label) {
        left_out.push(label);
    }
}

/// The figure of a report: a latency panel when any row has a p50, a bandwidth panel when any
/// has MB/s, each line in a colour of its own (dashed after the eighth), markers on every
/// point, so a run of one size draws one marker per line.
pub fn bench_figure(report: &Report) -> Result<Figure, PlotError> {
    let mut lines = Vec::new();
    let mut left_out = Vec::new();
    for q in [Quantity::Latency, Quantity::Bandwidth] {
        for b in &blocks(report) {
            let pts: Vec<(u64, f64, Option<f64>)> = (b.rows.iter())
                .filter_map(|r| {
                    Some((
                        r.size_bytes,
                        q.value(r)?,
                        r.percentiles().and_then(|p| p.p99_us),
                    ))
                })
                .collect();
            if pts.is_empty() {
                continue;
            }
            match distinct(pts) {
                Some(points) if !points.is_empty() => lines.push(Line {
                    label: label(b),
                    attrs: format!(
                        r#"data-panel="{}" data-benchmark="{}" data-transport="{}" data-mode="{}""#,
                        q.name(),
                        b.benchmark,
                        b.transport,
                        b.mode
                    ),
                    q,
                    points,
                    dashed: false,
                    same_colour: false,
                }),
                Some(_) => {}
                None => leave_out(&mut left_out, label(b)),
            }
        }
    }
    let title = format!("commperf bench on {}: {TITLE}", report.machine.hostname);
    let mut notes = Vec::new();
    if report.partial {
        notes.push(
            "Partial results: the run was interrupted, and only the measurements that finished \
             are drawn."
                .into(),
        );
    }
    figure(title, lines, left_out, notes)
}

/// A layer comparison as a figure: each compared benchmark's curve at the lower layer (solid)
/// and the upper one (dashed, the same colour).
pub fn comparison_figure(c: &Comparison) -> Result<Figure, PlotError> {
    let mut lines = Vec::new();
    let mut left_out = Vec::new();
    for b in &c.benchmarks {
        let mut words = vec![b.benchmark.to_string(), b.mode.to_string()];
        words.extend(variant(b.packed, b.buffers, b.block_spins, b.pairs));
        let name = words.join(" ");
        for q in [Quantity::Latency, Quantity::Bandwidth] {
            let side = |lower: bool| -> Vec<(u64, f64, Option<f64>)> {
                (b.points.iter())
                    .filter(|p| p.segments.is_none() && p.connections.is_none())
                    .filter_map(|p| {
                        let v = match (q, lower) {
                            (Quantity::Latency, true) => p.lower_p50_us,
                            (Quantity::Latency, false) => p.upper_p50_us,
                            (Quantity::Bandwidth, true) => p.lower_mb_per_s,
                            (Quantity::Bandwidth, false) => p.upper_mb_per_s,
                        }?;
                        Some((p.size_bytes, v, None))
                    })
                    .collect()
            };
            let varies = b
                .points
                .iter()
                .any(|p| p.segments.is_some() || p.connections.is_some());
            for (lower, transport) in [(true, b.lower_transport), (false, b.upper_transport)] {
                let pts = side(lower);
                if varies {
                    leave_out(&mut left_out, name.clone());
                    continue;
                }
                if let Some(points) = distinct(pts).filter(|p| !p.is_empty()) {
                    lines.push(Line {
                        label: format!("{name} {transport}"),
                        attrs: format!(
                            r#"data-panel="{}" data-benchmark="{}" data-transport="{transport}" data-mode="{}" data-layer="{}""#,
                            q.name(),
                            b.benchmark,
                            b.mode,
                            if lower { "lower" } else { "upper" }
                        ),
                        q,
                        points,
                        dashed: !lower,
                        same_colour: !lower,
                    });
                }
            }
        }
    }
    let title = format!(
        "commperf compare: {} against {}, {TITLE}",
        layer(&c.upper),
        layer(&c.lower)
    );
    figure(
        title,
        lines,
        left_out,
        vec!["Solid: the lower layer; dashed: the upper layer, in the same colour.".into()],
    )
}

/// `mpi (b.json)`, or the transports alone.
fn layer(l: &LayerInfo) -> String {
    let ts: Vec<&str> = l.transports.iter().map(|t| t.as_str()).collect();
    match &l.source {
        Some(s) => format!("{} ({s})", ts.join(",")),
        None => ts.join(","),
    }
}

/// The panels of `lines`: latency first, then bandwidth, each drawn only when it has a line.
fn figure(
    title: String,
    lines: Vec<Line>,
    left_out: Vec<String>,
    notes: Vec<String>,
) -> Result<Figure, PlotError> {
    let mut panels = Vec::new();
    let mut n = 0usize;
    let mut shaded = false;
    for q in [Quantity::Latency, Quantity::Bandwidth] {
        let mine: Vec<&Line> = lines.iter().filter(|l| l.q == q).collect();
        if mine.is_empty() {
            continue;
        }
        let values = mine.iter().flat_map(|l| {
            l.points.iter().flat_map(move |p| {
                let p99 = (q == Quantity::Latency).then_some(p.2).flatten();
                std::iter::once(p.1).chain(p99)
            })
        });
        let (y_title, marker, panel_title) = match q {
            Quantity::Latency => ("one-way latency p50, µs", Marker::Circle, "Latency"),
            Quantity::Bandwidth => ("bandwidth, MB/s", Marker::Square, "Bandwidth"),
        };
        let mut panel = Panel::new(
            XScale::Log2Bytes,
            "message size, bytes",
            Axis::for_values(values),
            y_title,
        )
        .title(panel_title);
        for l in mine {
            if !l.same_colour || n == 0 {
                n += 1;
            }
            let i = n - 1;
            let c = colour(i);
            let dashed = l.dashed || (i / super::COLOURS.len()) % 2 == 1;
            let mut s = Series::new(&l.label, c)
                .stroke(if dashed {
                    Stroke::Dashed
                } else {
                    Stroke::Solid
                })
                .marker(marker)
                .attrs(l.attrs.clone());
            let mut band = Vec::new();
            for &(size, v, p99) in &l.points {
                let tip = match q {
                    Quantity::Latency => format!(
                        "{}, {} B: p50 {v:.3} µs{}",
                        l.label,
                        format_size(size),
                        p99.map_or_else(String::new, |p| format!(", p99 {p:.3} µs"))
                    ),
                    Quantity::Bandwidth => {
                        format!("{}, {} B: {v:.2} MB/s", l.label, format_size(size))
                    }
                };
                s = s.point(
                    Point::new(size as f64, v)
                        .tip(tip)
                        .attrs(format!(r#"data-size="{size}" data-value="{v}""#)),
                );
                if let (Quantity::Latency, Some(p99)) = (q, p99) {
                    if p99.is_finite() && p99 >= v {
                        band.push((size as f64, v, p99));
                    }
                }
            }
            if !band.is_empty() {
                shaded = true;
                panel.bands.push(Band {
                    name: None,
                    colour: c,
                    shape: BandShape::Between(band),
                });
            }
            panel.series.push(s);
        }
        panels.push(panel);
    }
    if panels.is_empty() {
        return Err(PlotError::NoSizeSeries(left_out.join(", ")));
    }
    let mut f = Figure::new(title).width(if panels.len() == 2 { 1100.0 } else { 760.0 });
    f.panels = panels;
    if shaded {
        f.legend.push(LegendEntry {
            label: "shaded: p50 to p99".into(),
            colour: GREY,
            swatch: Swatch::Band,
        });
    }
    if !left_out.is_empty() {
        f.notes.push(format!(
            "Not drawn (their rows vary something else than the message size): {}.",
            left_out.join(", ")
        ));
    }
    f.notes.extend(notes);
    Ok(f)
}

/// [`bench_figure`] as a standalone SVG document.
pub fn bench_svg(report: &Report) -> Result<String, PlotError> {
    Ok(bench_figure(report)?.document())
}
