//! The chart layer: every SVG figure commperf draws is a [`Figure`] of one or more [`Panel`]s
//! side by side, rendered here, so that the figures of every verb (the bench and loggp plots,
//! the monitor's signature, the emulation sweep, the `app` page's charts, predict's space-time
//! diagram) share their look and their rules: the axes, the legend, the markers, how a value a
//! log axis cannot place is shown.
//!
//! A panel has an x scale ([`XScale`]: message sizes on a log2 axis, a value [`Axis`], or named
//! slots such as size bins and programs), a value [`Axis`] on y (the shared axis of
//! `commperf-stats`: linear, or log10 when the values span more than a factor of 30), and what
//! is drawn on them: [`Series`] (a line through points, with a marker on every point, so a
//! series of one point still shows), [`Band`]s (a shaded range between two curves, or across
//! the panel), bars in slots, and [`Guide`] lines. The legend is built from the named series and
//! bands, plus any [`LegendEntry`] the figure adds. A panel can instead have named lanes in
//! place of its y axis, with intervals along them and arrows between them ([`Lanes`]: a Gantt
//! chart or a space-time diagram). Notes (a verdict, what was left out) go under the panels,
//! wrapped to the figure's width.
//!
//! A log axis has no place for a value at or below 0: such a point is drawn on a `≤ 0` baseline
//! under the lowest decade, labelled so, never on the lowest decade itself.
//!
//! Output is deterministic: the same figure gives the same bytes (coordinates with one decimal).
//! Every text that comes from outside (a command line, a program name) is escaped.

mod bench;
mod lanes;
mod loggp;

pub use bench::{bench_figure, bench_svg, comparison_figure};
pub use lanes::{Arrow, Interval, Lanes, Part, LANE_HEIGHT};
pub(crate) use loggp::text_chart;
pub use loggp::{loggp_figure, loggp_svg, TITLE};

use crate::svg::esc;
use commperf_core::format_size;
use commperf_stats::axis::{Axis, Scale};
use std::fmt::Write as _;

/// Why no figure can be drawn.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PlotError {
    /// The report has no loggp rows at all.
    #[error("no loggp results to plot (they come from `commperf bench loggp`)")]
    NoLoggp,
    /// Loggp rows, but none with an o_s or o_r value at a size above 0.
    #[error("the loggp results have no o_s or o_r values to plot")]
    NoValues,
    /// No latency or bandwidth measured against the message size.
    #[error(
        "no latency or bandwidth results against message size to plot (they come from \
         `commperf bench latency bw`, among others){left_out}",
        left_out = if .0.is_empty() { String::new() } else { format!("; left out: {}", .0) }
    )]
    NoSizeSeries(String),
}

/// Average width of a character of the figures' 12 px sans-serif text, in pixels: enough to
/// keep labels apart and to wrap notes; a little generous, so text rarely overruns.
pub const CHAR_W: f64 = 6.8;
/// The same for the 15 px title.
const TITLE_CHAR_W: f64 = 8.4;
/// Left of a panel's plot area: the y tick labels and the rotated y title.
const MARGIN_L: f64 = 76.0;
/// Right of a panel's plot area, before the next panel or the legend.
const MARGIN_R: f64 = 24.0;
/// Under the plot area: the x tick labels and the x title.
const MARGIN_B: f64 = 52.0;
/// Between legend rows, and between note lines.
const LEGEND_STEP: f64 = 18.0;
const NOTE_STEP: f64 = 16.0;
/// On a log y axis with values at or below 0: the gap between the lowest decade and the x
/// axis, which then is the `≤ 0` baseline those values are drawn on.
const NONPOSITIVE_GAP: f64 = 24.0;
/// Least distance between two y tick labels, in pixels.
const Y_LABEL_STEP: f64 = 14.0;
/// Least distance between the centres of two x tick labels of a number axis, in pixels.
const X_LABEL_STEP: f64 = 40.0;
/// Half the width of a marker.
const MARKER_R: f64 = 4.0;
/// Widest bar.
const BAR_MAX: f64 = 28.0;

/// One colour per series (Tableau 10), reused in order when there are more.
pub const COLOURS: [&str; 8] = [
    "#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf",
];

/// The colour of series `i`.
pub fn colour(i: usize) -> &'static str {
    COLOURS[i % COLOURS.len()]
}

/// The grey of bars that are one quantity rather than one of several series, and of bands
/// that are a reference rather than a series' own spread.
pub const GREY: &str = "#8c8c8c";

/// An axis that is linear whatever the values: from the least of them (or 0) to the largest
/// (or 0), widened to round ticks. For quantities centred on 0, such as slowdowns, which a log
/// axis could not show.
pub fn linear_axis(values: impl IntoIterator<Item = f64>) -> Axis {
    let (mut lo, mut hi) = (0.0f64, 0.0f64);
    for v in values.into_iter().filter(|v| v.is_finite()) {
        lo = lo.min(v);
        hi = hi.max(v);
    }
    // At most one positive value: the shared axis's rule for log10 needs two a factor of 30
    // apart, so this is always its linear axis over [lo, hi].
    Axis::for_values([lo, hi])
}

/// How a series' points are joined.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stroke {
    Solid,
    Dashed,
    /// Markers only (a scatter).
    None,
}

/// The mark on each point of a series.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Marker {
    Circle,
    Square,
    /// An outlined square: another kind of point in the same colour.
    OpenSquare,
}

/// One point of a series: x in the panel's [`XScale`] (bytes, a value, or a slot index), y on
/// its value axis, an optional tooltip and extra attributes for the marker (`data-size="64"`).
#[derive(Debug, Clone, PartialEq)]
pub struct Point {
    pub x: f64,
    pub y: f64,
    pub tip: Option<String>,
    pub attrs: String,
}

impl Point {
    pub fn new(x: f64, y: f64) -> Point {
        Point {
            x,
            y,
            tip: None,
            attrs: String::new(),
        }
    }

    /// The tooltip (the SVG `<title>` of the marker).
    pub fn tip(mut self, tip: impl Into<String>) -> Point {
        self.tip = Some(tip.into());
        self
    }

    /// Attributes written on the marker, escaped by the caller (`data-size="64"`).
    pub fn attrs(mut self, attrs: impl Into<String>) -> Point {
        self.attrs = attrs.into();
        self
    }
}

/// A line through points, a marker on every point.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    /// The legend's label; an empty name keeps the series out of the legend.
    pub name: String,
    pub colour: &'static str,
    pub stroke: Stroke,
    pub marker: Marker,
    pub points: Vec<Point>,
    /// Attributes of the series' group (`data-transport="shm"`), escaped by the caller.
    pub attrs: String,
}

impl Series {
    pub fn new(name: impl Into<String>, colour: &'static str) -> Series {
        Series {
            name: name.into(),
            colour,
            stroke: Stroke::Solid,
            marker: Marker::Circle,
            points: Vec::new(),
            attrs: String::new(),
        }
    }

    pub fn stroke(mut self, stroke: Stroke) -> Series {
        self.stroke = stroke;
        self
    }

    pub fn marker(mut self, marker: Marker) -> Series {
        self.marker = marker;
        self
    }

    pub fn attrs(mut self, attrs: impl Into<String>) -> Series {
        self.attrs = attrs.into();
        self
    }

    pub fn point(mut self, p: Point) -> Series {
        self.points.push(p);
        self
    }
}

/// A shaded range.
#[derive(Debug, Clone, PartialEq)]
pub enum BandShape {
    /// Between two curves: (x, low, high) in x order (a series' p50 to its p99).
    Between(Vec<(f64, f64, f64)>),
    /// Across the whole panel, from one y value to another (a noise band).
    Across(f64, f64),
}

#[derive(Debug, Clone, PartialEq)]
pub struct Band {
    /// The legend's label; `None` keeps it out of the legend.
    pub name: Option<String>,
    pub colour: &'static str,
    pub shape: BandShape,
}

/// A bar of a slot: a value, or `None` for a failed measurement, drawn as a red ×.
#[derive(Debug, Clone, PartialEq)]
pub struct Bar {
    pub value: Option<f64>,
    pub colour: &'static str,
    /// Attributes of the bar (`data-program="ep"`), escaped by the caller.
    pub attrs: String,
    pub tip: String,
}

/// The bars of one slot, side by side in the order given.
#[derive(Debug, Clone, PartialEq)]
pub struct BarGroup {
    pub slot: usize,
    pub bars: Vec<Bar>,
}

/// A reference line.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Guide {
    /// y = factor · x (on a value x axis): a perfect prediction, or one 10 % off.
    Ratio { factor: f64, dashed: bool },
}

/// Where points go along x.
#[derive(Debug, Clone, PartialEq)]
pub enum XScale {
    /// Message sizes in bytes on a log2 axis, a grid line at every power of two, labelled 1,
    /// 4, 64, 1K … (a point at 0 bytes has no place on it and is left out).
    Log2Bytes,
    /// A value axis.
    Value(Axis),
    /// Named slots, evenly spaced; x is the slot's index.
    Slots(Vec<String>),
}

/// One plot area with its axes.
#[derive(Debug, Clone, PartialEq)]
pub struct Panel {
    pub title: Option<String>,
    pub x: XScale,
    pub x_title: String,
    pub y: Axis,
    /// The quantity and unit; the scale's caption is added (`latency, µs (log10 scale)`).
    pub y_title: String,
    pub series: Vec<Series>,
    pub bands: Vec<Band>,
    pub bars: Vec<BarGroup>,
    pub guides: Vec<Guide>,
    /// Named lanes in place of the y axis (a Gantt chart, a space-time diagram): see
    /// [`Panel::lanes`].
    pub lanes: Option<Lanes>,
}

impl Panel {
    pub fn new(
        x: XScale,
        x_title: impl Into<String>,
        y: Axis,
        y_title: impl Into<String>,
    ) -> Panel {
        Panel {
            title: None,
            x,
            x_title: x_title.into(),
            y,
            y_title: y_title.into(),
            series: Vec::new(),
            bands: Vec::new(),
            bars: Vec::new(),
            guides: Vec::new(),
            lanes: None,
        }
    }

    /// A panel of named lanes over a time axis `x` (linear: [`linear_axis`]), drawing
    /// `lanes`' intervals and arrows ([`lanes`](self::lanes)); a figure of one gets
    /// [`LANE_HEIGHT`] of plot height per lane. Its value axis, series, bands, bars and guides
    /// are not drawn.
    pub fn lanes(x: Axis, x_title: impl Into<String>, lanes: Lanes) -> Panel {
        let mut p = Panel::new(XScale::Value(x), x_title, Axis::for_values([]), "");
        p.lanes = Some(lanes);
        p
    }

    pub fn title(mut self, title: impl Into<String>) -> Panel {
        self.title = Some(title.into());
        self
    }
}

/// The sample drawn beside a legend label.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Swatch {
    Line(Stroke, Marker),
    /// A line without a marker (a guide).
    Rule(Stroke),
    /// A filled box (bars).
    Box,
    /// A light box (bands).
    Band,
    /// An arrow (the messages of a lanes panel).
    Arrow,
}

#[derive(Debug, Clone, PartialEq)]
pub struct LegendEntry {
    pub label: String,
    pub colour: &'static str,
    pub swatch: Swatch,
}

/// A whole figure: a title, panels side by side, a legend on the right, notes underneath.
#[derive(Debug, Clone, PartialEq)]
pub struct Figure {
    pub title: String,
    /// The `class` of the `<svg>` element (pages style and find figures by it).
    pub class: Option<String>,
    /// Width in pixels; the height follows from the panels, the legend and the notes.
    pub width: f64,
    /// Height of the plot areas.
    pub plot_height: f64,
    pub panels: Vec<Panel>,
    /// Legend entries after those of the named series and bands.
    pub legend: Vec<LegendEntry>,
    pub notes: Vec<String>,
}

impl Figure {
    pub fn new(title: impl Into<String>) -> Figure {
        Figure {
            title: title.into(),
            class: None,
            width: 760.0,
            plot_height: 300.0,
            panels: Vec::new(),
            legend: Vec::new(),
            notes: Vec::new(),
        }
    }

    pub fn width(mut self, w: f64) -> Figure {
        self.width = w;
        self
    }

    pub fn plot_height(mut self, h: f64) -> Figure {
        self.plot_height = h;
        self
    }

    pub fn class(mut self, c: impl Into<String>) -> Figure {
        self.class = Some(c.into());
        self
    }

    pub fn panel(mut self, p: Panel) -> Figure {
        self.panels.push(p);
        self
    }

    pub fn note(mut self, n: impl Into<String>) -> Figure {
        self.notes.push(n.into());
        self
    }

    /// The legend: named series and bands in panel order (each label once), then the figure's
    /// own entries.
    pub fn legend_entries(&self) -> Vec<LegendEntry> {
        let mut out: Vec<LegendEntry> = Vec::new();
        let mut add = |e: LegendEntry| {
            if !out.iter().any(|x| x.label == e.label) {
                out.push(e);
            }
        };
        for p in &self.panels {
            for s in p.series.iter().filter(|s| !s.name.is_empty()) {
                add(LegendEntry {
                    label: s.name.clone(),
                    colour: s.colour,
                    swatch: Swatch::Line(s.stroke, s.marker),
                });
            }
            for b in &p.bands {
                if let Some(name) = &b.name {
                    add(LegendEntry {
                        label: name.clone(),
                        colour: b.colour,
                        swatch: Swatch::Band,
                    });
                }
            }
        }
        for e in &self.legend {
            add(e.clone());
        }
        out
    }

    /// The figure as a standalone SVG file: an XML declaration, then [`Figure::svg`].
    pub fn document(&self) -> String {
        format!("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n{}", self.svg())
    }

    /// The `<svg>` element, for a file or to place inside an HTML page (where a style may
    /// scale it: it has a viewBox).
    pub fn svg(&self) -> String {
        let l = self.layout();
        let mut o = String::new();
        let class = self
            .class
            .as_ref()
            .map_or_else(String::new, |c| format!(r#" class="{}""#, esc(c)));
        let (w, h) = (self.width, l.height);
        // Writing to a String cannot fail; the results of write! are ignored for that reason.
        let _ = writeln!(
            o,
            r#"<svg xmlns="http://www.w3.org/2000/svg"{class} width="{w:.0}" height="{h:.0}" viewBox="0 0 {w:.0} {h:.0}" font-family="sans-serif" font-size="12" role="img">"#
        );
        let _ = writeln!(o, "<title>{}</title>", esc(&self.title));
        let _ = writeln!(
            o,
            r#"<rect x="0" y="0" width="{w:.0}" height="{h:.0}" fill="white"/>"#
        );
        lanes::arrow_defs(&mut o, &self.arrow_colours(&l));
        for (i, line) in l.title.iter().enumerate() {
            let _ = writeln!(
                o,
                r#"<text x="{:.1}" y="{:.1}" text-anchor="middle" font-size="15">{}</text>"#,
                self.width / 2.0,
                24.0 + i as f64 * 19.0,
                esc(line)
            );
        }
        for (i, p) in self.panels.iter().enumerate() {
            let f = Frame::new(p, &l, i, self.panels.len());
            f.draw(&mut o);
        }
        if !l.legend.is_empty() {
            legend(&mut o, &l);
        }
        for (i, line) in l.notes.iter().enumerate() {
            let _ = writeln!(
                o,
                r##"<text class="note" x="12" y="{:.1}" fill="#333333">{}</text>"##,
                l.notes_top + i as f64 * NOTE_STEP,
                esc(line)
            );
        }
        let _ = writeln!(o, "</svg>");
        o
    }

    /// The colours of every arrow drawn: those of lanes panels and of arrows in the legend.
    fn arrow_colours(&self, l: &Layout) -> Vec<&'static str> {
        let panels = self.panels.iter().filter_map(|p| p.lanes.as_ref());
        let legend = l.legend.iter().filter(|e| e.swatch == Swatch::Arrow);
        panels
            .map(|x| x.arrow_colour)
            .chain(legend.map(|e| e.colour))
            .collect()
    }

    fn layout(&self) -> Layout {
        let legend = self.legend_entries();
        let longest = legend
            .iter()
            .map(|e| e.label.chars().count())
            .max()
            .unwrap_or(0);
        let legend_w = if legend.is_empty() {
            0.0
        } else {
            (longest as f64 * CHAR_W + 56.0).clamp(110.0, 300.0)
        };
        let plots_right = self.width - legend_w;
        let title = wrap(&self.title, ((self.width - 24.0) / TITLE_CHAR_W) as usize);
        let panel_titles = self.panels.iter().any(|p| p.title.is_some());
        let top = 14.0 + 19.0 * title.len() as f64 + if panel_titles { 24.0 } else { 8.0 };
        let bottom = top + self.plot_height;
        let notes: Vec<String> = self
            .notes
            .iter()
            .flat_map(|n| wrap(n, ((self.width - 24.0) / CHAR_W) as usize))
            .collect();
        let notes_top = bottom + MARGIN_B + 14.0;
        let below = if notes.is_empty() {
            bottom + MARGIN_B + 4.0
        } else {
            notes_top + (notes.len() as f64 - 1.0) * NOTE_STEP + 10.0
        };
        let beside = top + legend.len() as f64 * LEGEND_STEP + 8.0;
        Layout {
            title,
            top,
            bottom,
            plots_right,
            legend_w,
            legend,
            notes,
            notes_top,
            height: below.max(beside).ceil(),
        }
    }
}

/// A standalone SVG document with nothing drawn but why, for a renderer that must return a
/// figure.
pub fn empty(why: &str) -> String {
    Figure::new("Nothing to plot").note(why).document()
}

/// Where a figure's parts go.
#[derive(Debug)]
struct Layout {
    title: Vec<String>,
    top: f64,
    bottom: f64,
    /// The panels take the width up to here; the legend the rest.
    plots_right: f64,
    legend_w: f64,
    legend: Vec<LegendEntry>,
    notes: Vec<String>,
    notes_top: f64,
    height: f64,
}

/// `text` in lines of at most `width` characters, broken between words (a longer word keeps
/// its own line).
pub fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut lines = Vec::new();
    let mut line = String::new();
    for word in text.split_whitespace() {
        if !line.is_empty() && line.chars().count() + 1 + word.chars().count() > width.max(1) {
            lines.push(std::mem::take(&mut line));
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    if !line.is_empty() {
        lines.push(line);
    }
    lines
}

/// How x values map to pixels in a panel.
#[derive(Debug, Clone)]
enum XMap {
    /// log2 of the size from `lo` to `hi` (whole powers of two).
    Log2 {
        lo: i32,
        hi: i32,
    },
    Value(Axis),
    Slots(usize),
}

/// A panel placed in its figure.
struct Frame<'a> {
    p: &'a Panel,
    slot_left: f64,
    left: f64,
    right: f64,
    top: f64,
    bottom: f64,
    /// Where the y axis's low end sits: `bottom`, or above it when values at or below 0 go on
    /// a baseline of their own under a log axis.
    low: f64,
    nonpositive: bool,
    x: XMap,
}

/// The whole powers of two that bracket every size above 0: (floor log2 of the smallest, ceil
/// log2 of the largest); one size alone gets a power either side, so it sits in the middle.
pub fn pow_range(sizes: impl IntoIterator<Item = f64>) -> Option<(i32, i32)> {
    let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
    for s in sizes.into_iter().filter(|s| *s > 0.0 && s.is_finite()) {
        lo = lo.min(s);
        hi = hi.max(s);
    }
    if lo > hi {
        return None;
    }
    let (lo, hi) = (lo.log2().floor() as i32, hi.log2().ceil() as i32);
    Some(if lo == hi { (lo - 1, hi + 1) } else { (lo, hi) })
}

impl<'a> Frame<'a> {
    fn new(p: &'a Panel, l: &Layout, i: usize, n: usize) -> Frame<'a> {
        let slot = l.plots_right / n as f64;
        let slot_left = i as f64 * slot;
        let (left, right) = (slot_left + MARGIN_L, slot_left + slot - MARGIN_R);
        let x = match &p.x {
            XScale::Log2Bytes => {
                let xs = p
                    .series
                    .iter()
                    .flat_map(|s| s.points.iter().map(|q| q.x))
                    .chain(p.bands.iter().flat_map(|b| match &b.shape {
                        BandShape::Between(v) => v.iter().map(|q| q.0).collect(),
                        BandShape::Across(..) => Vec::new(),
                    }));
                let (lo, hi) = pow_range(xs).unwrap_or((0, 1));
                XMap::Log2 { lo, hi }
            }
            XScale::Value(a) => XMap::Value(a.clone()),
            XScale::Slots(v) => XMap::Slots(v.len().max(1)),
        };
        let nonpositive = p.y.scale() == Scale::Log10
            && p.series
                .iter()
                .flat_map(|s| &s.points)
                .any(|q| p.y.position(q.y).is_none());
        let low = if nonpositive {
            l.bottom - NONPOSITIVE_GAP
        } else {
            l.bottom
        };
        Frame {
            p,
            slot_left,
            left,
            right,
            top: l.top,
            bottom: l.bottom,
            low,
            nonpositive,
            x,
        }
    }

    /// The pixel of an x value (a value the axis cannot place goes to the left edge).
    fn x(&self, v: f64) -> f64 {
        let w = self.right - self.left;
        match &self.x {
            XMap::Log2 { lo, hi } => {
                if v > 0.0 {
                    self.left + (v.log2() - f64::from(*lo)) / f64::from(hi - lo) * w
                } else {
                    self.left
                }
            }
            XMap::Value(a) => a.position(v).map_or(self.left, |p| self.left + p * w),
            XMap::Slots(n) => self.left + (v + 0.5) * w / *n as f64,
        }
    }

    /// The pixel of a position on the y axis (0 at its low end, 1 at its high end).
    fn y_at(&self, position: f64) -> f64 {
        self.low - position * (self.low - self.top)
    }

    /// The pixel of a y value; one the axis cannot place (at or below 0 on a log axis) sits on
    /// the x axis, the `≤ 0` baseline.
    fn y(&self, v: f64) -> f64 {
        self.p.y.position(v).map_or(self.bottom, |p| self.y_at(p))
    }

    fn draw(&self, o: &mut String) {
        let p = self.p;
        if let Some(lanes) = &p.lanes {
            self.draw_lanes(o, lanes);
            return;
        }
        let ticks = p.y.ticks();
        // Grid.
        let _ = writeln!(o, r##"<g stroke="#e0e0e0" stroke-width="1">"##);
        for x in self.x_grid() {
            let _ = writeln!(
                o,
                r#"<line x1="{x:.1}" y1="{:.1}" x2="{x:.1}" y2="{:.1}"/>"#,
                self.top, self.bottom
            );
        }
        for t in &ticks {
            let y = self.y_at(t.position);
            let _ = writeln!(
                o,
                r#"<line x1="{:.1}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}"/>"#,
                self.left, self.right
            );
        }
        let _ = writeln!(o, "</g>");
        // Bands under everything drawn on them.
        for b in &p.bands {
            self.band(o, b);
        }
        // The axes, and 0 on a linear axis that goes below it.
        self.axes(o);
        if p.y.scale() == Scale::Linear && ticks.first().is_some_and(|t| t.value < 0.0) {
            let y0 = self.y(0.0);
            let _ = writeln!(
                o,
                r##"<line x1="{:.1}" y1="{y0:.1}" x2="{:.1}" y2="{y0:.1}" stroke="#808080" stroke-width="1"/>"##,
                self.left, self.right
            );
        }
        self.x_labels(o);
        self.y_labels(o);
        self.panel_title(o);
        for g in &p.guides {
            self.guide(o, g);
        }
        for g in &p.bars {
            self.bars(o, g);
        }
        for s in &p.series {
            self.series(o, s);
        }
    }

    /// The x and y axes' lines.
    fn axes(&self, o: &mut String) {
        let _ = writeln!(
            o,
            r##"<g stroke="#000000" stroke-width="1"><line x1="{l:.1}" y1="{b:.1}" x2="{r:.1}" y2="{b:.1}"/><line x1="{l:.1}" y1="{t:.1}" x2="{l:.1}" y2="{b:.1}"/></g>"##,
            l = self.left,
            r = self.right,
            t = self.top,
            b = self.bottom
        );
    }

    fn panel_title(&self, o: &mut String) {
        if let Some(t) = &self.p.title {
            let _ = writeln!(
                o,
                r#"<text x="{:.1}" y="{:.1}" text-anchor="middle" font-weight="bold">{}</text>"#,
                (self.left + self.right) / 2.0,
                self.top - 10.0,
                esc(t)
            );
        }
    }

    /// The x of each vertical grid line.
    fn x_grid(&self) -> Vec<f64> {
        match &self.x {
            XMap::Log2 { lo, hi } => (*lo..=*hi).map(|e| self.x(2f64.powi(e))).collect(),
            XMap::Value(a) => a
                .ticks()
                .iter()
                .map(|t| self.left + t.position * (self.right - self.left))
                .collect(),
            XMap::Slots(_) => Vec::new(),
        }
    }

    fn x_labels(&self, o: &mut String) {
        let w = self.right - self.left;
        let y = self.bottom + 18.0;
        let _ = writeln!(o, r#"<g text-anchor="middle">"#);
        match &self.x {
            XMap::Log2 { lo, hi } => {
                let per = w / f64::from(hi - lo);
                let k = ((X_LABEL_STEP / per).ceil() as i32).max(1);
                for e in (*lo..=*hi).filter(|e| *e >= 0 && e % k == 0) {
                    let _ = writeln!(
                        o,
                        r#"<text x="{:.1}" y="{y:.1}">{}</text>"#,
                        self.x(2f64.powi(e)),
                        format_size(1u64 << e.min(62))
                    );
                }
            }
            XMap::Value(a) => {
                let per = w / f64::from(a.intervals());
                let k = ((X_LABEL_STEP / per).ceil() as usize).max(1);
                for t in a.ticks().iter().step_by(k) {
                    let _ = writeln!(
                        o,
                        r#"<text x="{:.1}" y="{y:.1}">{}</text>"#,
                        self.left + t.position * w,
                        esc(&t.label)
                    );
                }
            }
            XMap::Slots(n) => {
                let XScale::Slots(labels) = &self.p.x else {
                    unreachable!("slots come from XScale::Slots")
                };
                let per = w / *n as f64;
                let longest = labels.iter().map(|s| s.chars().count()).max().unwrap_or(1);
                // Smaller type where the labels are crowded, then every k-th one.
                let (size, cw) = if longest as f64 * CHAR_W + 6.0 > per {
                    (r#" font-size="10""#, CHAR_W * 10.0 / 12.0)
                } else {
                    ("", CHAR_W)
                };
                let k = ((longest as f64 * cw + 6.0) / per).ceil().max(1.0) as usize;
                for (i, s) in labels.iter().enumerate().step_by(k) {
                    let _ = writeln!(
                        o,
                        r#"<text x="{:.1}" y="{y:.1}"{size}>{}</text>"#,
                        self.x(i as f64),
                        esc(s)
                    );
                }
            }
        }
        let caption = match &self.x {
            XMap::Log2 { .. } => format!("{} (log2 scale)", self.p.x_title),
            XMap::Value(a) => format!("{} ({})", self.p.x_title, a.scale().caption()),
            XMap::Slots(_) => self.p.x_title.clone(),
        };
        let _ = writeln!(
            o,
            r#"<text x="{:.1}" y="{:.1}">{}</text>"#,
            (self.left + self.right) / 2.0,
            self.bottom + 40.0,
            esc(&caption)
        );
        let _ = writeln!(o, "</g>");
    }

    fn y_labels(&self, o: &mut String) {
        let axis = &self.p.y;
        let per = (self.low - self.top) / f64::from(axis.intervals());
        let k = ((Y_LABEL_STEP / per).ceil() as usize).max(1);
        let x = self.left - 8.0;
        let _ = writeln!(o, r#"<g text-anchor="end">"#);
        for t in axis.ticks().iter().step_by(k) {
            let _ = writeln!(
                o,
                r#"<text x="{x:.1}" y="{:.1}">{}</text>"#,
                self.y_at(t.position) + 4.0,
                esc(&t.label)
            );
        }
        if self.nonpositive {
            let _ = writeln!(
                o,
                r#"<text x="{x:.1}" y="{:.1}">≤ 0</text>"#,
                self.bottom + 4.0
            );
        }
        let _ = writeln!(o, "</g>");
        let (tx, ty) = (self.slot_left + 18.0, (self.top + self.bottom) / 2.0);
        let _ = writeln!(
            o,
            r#"<text x="{tx:.1}" y="{ty:.1}" text-anchor="middle" transform="rotate(-90 {tx:.1} {ty:.1})">{} ({})</text>"#,
            esc(&self.p.y_title),
            axis.scale().caption()
        );
    }

    /// A y pixel kept inside the plot area.
    fn clamp_y(&self, y: f64) -> f64 {
        y.clamp(self.top, self.bottom)
    }

    fn band(&self, o: &mut String, b: &Band) {
        match &b.shape {
            BandShape::Between(v) => {
                let v: Vec<&(f64, f64, f64)> = v.iter().filter(|q| self.placed_x(q.0)).collect();
                match v.len() {
                    0 => {}
                    1 => {
                        // One point: a short bar from low to high.
                        let (x, lo, hi) = *v[0];
                        let (y0, y1) = (self.clamp_y(self.y(hi)), self.clamp_y(self.y(lo)));
                        let _ = writeln!(
                            o,
                            r#"<rect class="band" x="{:.1}" y="{y0:.1}" width="{:.1}" height="{:.1}" fill="{}" fill-opacity="0.18"/>"#,
                            self.x(x) - MARKER_R * 2.0,
                            MARKER_R * 4.0,
                            (y1 - y0).max(0.0),
                            b.colour
                        );
                    }
                    _ => {
                        let upper = v.iter().map(|q| (q.0, q.2));
                        let lower = v.iter().rev().map(|q| (q.0, q.1));
                        let pts: Vec<String> = upper
                            .chain(lower)
                            .map(|(x, y)| {
                                format!("{:.1},{:.1}", self.x(x), self.clamp_y(self.y(y)))
                            })
                            .collect();
                        let _ = writeln!(
                            o,
                            r#"<polygon class="band" points="{}" fill="{}" fill-opacity="0.15" stroke="none"/>"#,
                            pts.join(" "),
                            b.colour
                        );
                    }
                }
            }
            BandShape::Across(a, z) => {
                let (y0, y1) = (
                    self.clamp_y(self.y(a.max(*z))),
                    self.clamp_y(self.y(a.min(*z))),
                );
                let title = b
                    .name
                    .as_deref()
                    .map_or_else(String::new, |n| format!("<title>{}</title>", esc(n)));
                let _ = writeln!(
                    o,
                    r#"<rect class="band" x="{:.1}" y="{y0:.1}" width="{:.1}" height="{:.1}" fill="{}" fill-opacity="0.3">{title}</rect>"#,
                    self.left,
                    self.right - self.left,
                    (y1 - y0).max(0.0),
                    b.colour
                );
            }
        }
    }

    /// Whether x has a place on the x axis (a size above 0 on the log2 axis).
    fn placed_x(&self, x: f64) -> bool {
        match &self.x {
            XMap::Log2 { .. } => x > 0.0 && x.is_finite(),
            XMap::Value(_) | XMap::Slots(_) => x.is_finite(),
        }
    }

    fn guide(&self, o: &mut String, g: &Guide) {
        let Guide::Ratio { factor, dashed } = *g;
        let XMap::Value(xa) = &self.x else {
            return;
        };
        let (Some(lo), Some(hi)) = (xa.ticks().first().cloned(), xa.ticks().last().cloned()) else {
            return;
        };
        // From where the line enters the plot to where it leaves it.
        let (a, b) = (lo.value / factor.min(1.0), hi.value / factor.max(1.0));
        let dash = if dashed {
            r#" stroke-dasharray="4 3""#
        } else {
            ""
        };
        let _ = writeln!(
            o,
            r##"<line class="guide" x1="{:.1}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="#888888" stroke-width="1"{dash}/>"##,
            self.x(a),
            self.y(a * factor),
            self.x(b),
            self.y(b * factor)
        );
    }

    fn bars(&self, o: &mut String, g: &BarGroup) {
        let XMap::Slots(n) = self.x else {
            return;
        };
        let per = (self.right - self.left) / n as f64;
        let m = g.bars.len().max(1) as f64;
        let w = (per * 0.8 / m).min(BAR_MAX);
        let x0 = self.x(g.slot as f64) - w * m / 2.0;
        // Bars start at 0 on a linear axis (inside the plot), at the low end of a log one.
        let zero = match self.p.y.scale() {
            Scale::Linear => self.clamp_y(self.y(0.0)),
            Scale::Log10 => self.bottom,
        };
        let _ = writeln!(o, r#"<g class="bars">"#);
        for (j, b) in g.bars.iter().enumerate() {
            let x = x0 + j as f64 * w;
            let sep = if b.attrs.is_empty() { "" } else { " " };
            match b.value {
                Some(v) => {
                    let y = self.clamp_y(self.y(v));
                    let (top, h) = if y <= zero {
                        (y, zero - y)
                    } else {
                        (zero, y - zero)
                    };
                    // At least 1 px high, so a value on the low end still shows.
                    let _ = writeln!(
                        o,
                        r#"<rect class="bar"{sep}{} x="{x:.1}" y="{top:.1}" width="{w:.1}" height="{:.1}" fill="{}"><title>{}</title></rect>"#,
                        b.attrs,
                        h.max(1.0),
                        b.colour,
                        esc(&b.tip)
                    );
                }
                None => {
                    let _ = writeln!(
                        o,
                        r##"<text class="failed-mark"{sep}{} x="{:.1}" y="{:.1}" text-anchor="middle" fill="#b00000">×<title>{}</title></text>"##,
                        b.attrs,
                        x + w / 2.0,
                        self.bottom - 4.0,
                        esc(&b.tip)
                    );
                }
            }
        }
        let _ = writeln!(o, "</g>");
    }

    fn series(&self, o: &mut String, s: &Series) {
        let pts: Vec<(f64, f64, &Point)> = s
            .points
            .iter()
            .filter(|q| self.placed_x(q.x) && q.y.is_finite())
            .map(|q| (self.x(q.x), self.y(q.y), q))
            .collect();
        let sep = if s.attrs.is_empty() { "" } else { " " };
        let _ = writeln!(o, r#"<g class="series"{sep}{}>"#, s.attrs);
        if s.stroke != Stroke::None && pts.len() >= 2 {
            let line: Vec<String> = pts
                .iter()
                .map(|(x, y, _)| format!("{x:.1},{y:.1}"))
                .collect();
            let _ = writeln!(
                o,
                r#"<polyline fill="none" stroke="{}" stroke-width="2"{} points="{}"/>"#,
                s.colour,
                dash(s.stroke),
                line.join(" ")
            );
        }
        for (x, y, q) in pts {
            let attrs = if q.attrs.is_empty() {
                String::new()
            } else {
                format!(" {}", q.attrs)
            };
            let title = q
                .tip
                .as_deref()
                .map_or_else(String::new, |t| format!("<title>{}</title>", esc(t)));
            marker(
                o,
                s.marker,
                s.colour,
                x,
                y,
                &format!(r#" class="point"{attrs}"#),
                &title,
            );
        }
        let _ = writeln!(o, "</g>");
    }
}

fn dash(s: Stroke) -> &'static str {
    match s {
        Stroke::Dashed => r#" stroke-dasharray="6 4""#,
        Stroke::Solid | Stroke::None => "",
    }
}

/// A marker centred on (x, y); `attrs` starts with a space, `inner` is its content (a title).
fn marker(o: &mut String, m: Marker, colour: &str, x: f64, y: f64, attrs: &str, inner: &str) {
    let r = MARKER_R;
    let _ = match m {
        Marker::Circle => writeln!(
            o,
            r#"<circle{attrs} cx="{x:.1}" cy="{y:.1}" r="{r}" fill="{colour}">{inner}</circle>"#
        ),
        Marker::Square => writeln!(
            o,
            r#"<rect{attrs} x="{:.1}" y="{:.1}" width="{}" height="{}" fill="{colour}">{inner}</rect>"#,
            x - r,
            y - r,
            2.0 * r,
            2.0 * r
        ),
        Marker::OpenSquare => writeln!(
            o,
            r#"<rect{attrs} x="{:.1}" y="{:.1}" width="{}" height="{}" fill="white" stroke="{colour}" stroke-width="2">{inner}</rect>"#,
            x - r,
            y - r,
            2.0 * r,
            2.0 * r
        ),
    };
}

fn legend(o: &mut String, l: &Layout) {
    let lx = l.plots_right + 4.0;
    let fit = ((l.legend_w - 48.0) / CHAR_W).max(4.0) as usize;
    let _ = writeln!(o, r#"<g class="legend">"#);
    for (i, e) in l.legend.iter().enumerate() {
        let y = l.top + 8.0 + i as f64 * LEGEND_STEP;
        match e.swatch {
            Swatch::Line(stroke, m) => {
                if stroke != Stroke::None {
                    let _ = writeln!(
                        o,
                        r#"<line x1="{lx:.1}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="{}" stroke-width="2"{}/>"#,
                        lx + 28.0,
                        e.colour,
                        dash(stroke)
                    );
                }
                marker(o, m, e.colour, lx + 14.0, y, "", "");
            }
            Swatch::Rule(stroke) => {
                let _ = writeln!(
                    o,
                    r#"<line x1="{lx:.1}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="{}" stroke-width="1.5"{}/>"#,
                    lx + 28.0,
                    e.colour,
                    dash(stroke)
                );
            }
            Swatch::Box => {
                let _ = writeln!(
                    o,
                    r#"<rect x="{:.1}" y="{:.1}" width="14" height="12" fill="{}"/>"#,
                    lx + 7.0,
                    y - 6.0,
                    e.colour
                );
            }
            Swatch::Band => {
                let _ = writeln!(
                    o,
                    r#"<rect x="{lx:.1}" y="{:.1}" width="28" height="12" fill="{}" fill-opacity="0.3"/>"#,
                    y - 6.0,
                    e.colour
                );
            }
            Swatch::Arrow => {
                let _ = writeln!(
                    o,
                    r#"<line x1="{lx:.1}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="{}" stroke-width="1.5" marker-end="url(#{})"/>"#,
                    lx + 28.0,
                    e.colour,
                    lanes::arrow_id(e.colour)
                );
            }
        }
        // A label too long for the legend is cut, and whole in its tooltip.
        let n = e.label.chars().count();
        let (shown, tip) = if n > fit {
            let cut: String = e.label.chars().take(fit.saturating_sub(1)).collect();
            (
                format!("{cut}…"),
                format!("<title>{}</title>", esc(&e.label)),
            )
        } else {
            (e.label.clone(), String::new())
        };
        let _ = writeln!(
            o,
            r#"<text x="{:.1}" y="{:.1}">{}{tip}</text>"#,
            lx + 36.0,
            y + 4.0,
            esc(&shown)
        );
    }
    let _ = writeln!(o, "</g>");
}

#[cfg(test)]
mod tests;
