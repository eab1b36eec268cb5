//! Lanes: a panel whose y is a list of named lanes (ranks, hosts) rather than a value axis, with
//! intervals drawn along each lane over a time [`Axis`] on x and arrows from a time on one lane to a
//! time on another — a Gantt chart, or a space-time diagram of messages (Papaefstathiou 2001,
//! Figure 6, as `commperf predict --timeline-svg` draws it).
//!
//! It is a [`Panel`](super::Panel) like any other ([`Panel::lanes`](super::Panel::lanes)), so the
//! figure around it — title, legend, notes, the x axis's ticks, labels and caption, escaping — is
//! the chart layer's. An interval fills a [`Part`] of its lane's height, so two kinds of interval
//! that overlap in time on one lane (a non-blocking send and a receive) both stay visible.
//! Intervals are drawn in the order given (later ones on top); a time outside the axis is drawn at
//! the axis's end, and an interval is at least half a pixel wide, so a short one still shows.

use super::Frame;
use crate::svg::esc;
use std::fmt::Write as _;

/// Height of one lane, in pixels: a figure of `n` lanes has a plot height of `n · LANE_HEIGHT`.
pub const LANE_HEIGHT: f64 = 24.0;

/// The narrowest interval drawn, in pixels.
const MIN_WIDTH: f64 = 0.5;

/// Which part of its lane's height an interval fills (as drawn with [`LANE_HEIGHT`] lanes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Part {
    /// 14 px about the lane's line.
    Full,
    /// 8 px about the line: under a full interval of the same time, it shows at its ends.
    Middle,
    /// 7 px above the line.
    Upper,
    /// 7 px below the line.
    Lower,
}

impl Part {
    /// (offset from the lane's line, height), in pixels.
    fn extent(self) -> (f64, f64) {
        match self {
            Part::Full => (-7.0, 14.0),
            Part::Middle => (-4.0, 8.0),
            Part::Upper => (-7.0, 7.0),
            Part::Lower => (0.0, 7.0),
        }
    }
}

/// An interval on a lane, from `start` to `end` in the x axis's unit.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Interval {
    pub lane: usize,
    pub start: f64,
    pub end: f64,
    pub colour: &'static str,
    pub part: Part,
}

/// An arrow from (lane, time) to (lane, time).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Arrow {
    pub from: (usize, f64),
    pub to: (usize, f64),
}

/// What a lanes panel draws.
#[derive(Debug, Clone, PartialEq)]
pub struct Lanes {
    /// The lanes' labels, top to bottom (escaped when drawn).
    pub labels: Vec<String>,
    /// Drawn in this order.
    pub intervals: Vec<Interval>,
    pub arrows: Vec<Arrow>,
    /// The colour of every arrow.
    pub arrow_colour: &'static str,
}

/// The id of the arrowhead marker of a colour (`#e15759` → `arrow-e15759`).
pub(super) fn arrow_id(colour: &str) -> String {
    let hex: String = colour.chars().filter(char::is_ascii_alphanumeric).collect();
    format!("arrow-{hex}")
}

/// The `<defs>` of the arrowhead of each colour, once each.
pub(super) fn arrow_defs(o: &mut String, colours: &[&str]) {
    if colours.is_empty() {
        return;
    }
    let _ = write!(o, "<defs>");
    for (i, c) in colours.iter().enumerate() {
        if colours[..i].contains(c) {
            continue;
        }
        let _ = write!(
            o,
            r#"<marker id="{}" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="6" markerHeight="6" orient="auto-start-reverse"><path d="M 0 0 L 10 5 L 0 10 z" fill="{c}"/></marker>"#,
            arrow_id(c)
        );
    }
    let _ = writeln!(o, "</defs>");
}

impl Frame<'_> {
    /// The pixel of lane `i`'s line.
    fn lane_y(&self, lanes: &Lanes, i: usize) -> f64 {
        let per = (self.bottom - self.top) / lanes.labels.len().max(1) as f64;
        self.top + per * (i as f64 + 0.5)
    }

    /// An x pixel kept inside the plot area.
    fn clamp_x(&self, v: f64) -> f64 {
        self.x(v).clamp(self.left, self.right)
    }

    /// A lanes panel: the x axis's grid, a line and a label per lane, the intervals, the arrows,
    /// the axes and their labels.
    pub(super) fn draw_lanes(&self, o: &mut String, lanes: &Lanes) {
        let _ = writeln!(o, r##"<g stroke="#e0e0e0" stroke-width="1">"##);
        for x in self.x_grid() {
            let _ = writeln!(
                o,
                r#"<line x1="{x:.1}" y1="{:.1}" x2="{x:.1}" y2="{:.1}"/>"#,
                self.top, self.bottom
            );
        }
        let _ = writeln!(o, "</g>");
        let _ = writeln!(o, r#"<g class="lanes">"#);
        for (i, label) in lanes.labels.iter().enumerate() {
            let y = self.lane_y(lanes, i);
            let _ = writeln!(
                o,
                r##"<text x="{:.1}" y="{:.1}" text-anchor="end">{}</text><line x1="{:.1}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="#cccccc"/>"##,
                self.left - 8.0,
                y + 4.0,
                esc(label),
                self.left,
                self.right
            );
        }
        let _ = writeln!(o, "</g>");
        let _ = writeln!(o, r#"<g class="intervals" stroke="none">"#);
        for s in lanes
            .intervals
            .iter()
            .filter(|s| s.lane < lanes.labels.len() && s.start.is_finite() && s.end.is_finite())
        {
            let (dy, h) = s.part.extent();
            let x0 = self.clamp_x(s.start);
            let w = (self.clamp_x(s.end) - x0).max(MIN_WIDTH);
            let _ = writeln!(
                o,
                r#"<rect x="{x0:.1}" y="{:.1}" width="{w:.1}" height="{h:.1}" fill="{}"/>"#,
                self.lane_y(lanes, s.lane) + dy,
                s.colour
            );
        }
        let _ = writeln!(o, "</g>");
        self.arrows(o, lanes);
        self.axes(o);
        self.x_labels(o);
        self.panel_title(o);
    }

    fn arrows(&self, o: &mut String, lanes: &Lanes) {
        let n = lanes.labels.len();
        let _ = writeln!(
            o,
            r#"<g class="arrows" stroke="{}" stroke-width="1" marker-end="url(#{})">"#,
            lanes.arrow_colour,
            arrow_id(lanes.arrow_colour)
        );
        for a in lanes
            .arrows
            .iter()
            .filter(|a| a.from.0 < n && a.to.0 < n && a.from.1.is_finite() && a.to.1.is_finite())
        {
            let _ = writeln!(
                o,
                r#"<line x1="{:.1}" y1="{:.1}" x2="{:.1}" y2="{:.1}"/>"#,
                self.clamp_x(a.from.1),
                self.lane_y(lanes, a.from.0),
                self.clamp_x(a.to.1),
                self.lane_y(lanes, a.to.0)
            );
        }
        let _ = writeln!(o, "</g>");
    }
}
