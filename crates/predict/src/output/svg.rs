//! A [`Timeline`] as an SVG space-time diagram (Papaefstathiou 2001, Figure 6): one lane per
//! rank, a coloured interval per span (compute, send, receive, wait), an arrow per message from
//! the start of its send to its arrival, a time axis with ticks and units, and a legend.
//!
//! The figure is drawn by the chart layer of `commperf-report` (a lanes panel,
//! [`commperf_report::plot::Lanes`]), like every other SVG of commperf; this module decides what
//! goes on it. Sends are drawn in the upper half of a rank's lane and receives in the lower
//! half, so a non-blocking send and receive that overlap stay visible. A big timeline would make
//! a file no viewer can open, so at most [`MAX_RANKS`] ranks and [`MAX_SHAPES`] shapes are drawn
//! (in the timeline's order) and the figure says what it left out. Output is deterministic.

use super::{Prediction, SpanKind, Timeline};
use commperf_report::plot::{
    linear_axis, Arrow, Figure, Interval, Lanes, LegendEntry, Panel, Part, Swatch, LANE_HEIGHT,
};
use commperf_report::units::duration_unit;

/// Ranks drawn at most.
pub const MAX_RANKS: u32 = 64;
/// Spans plus messages drawn at most.
pub const MAX_SHAPES: usize = 20_000;

/// Width of the figure, in pixels.
const WIDTH: f64 = 960.0;
/// The colour of message arrows.
const MESSAGE: &str = "#e15759";

fn colour(k: SpanKind) -> &'static str {
    match k {
        SpanKind::Compute => "#4e79a7",
        SpanKind::Send => "#59a14f",
        SpanKind::Recv => "#f28e2b",
        SpanKind::Wait => "#bab0ac",
    }
}

/// Where on a rank's lane a kind goes: sends above the line, receives below, waits thinner than
/// compute.
fn part(k: SpanKind) -> Part {
    match k {
        SpanKind::Compute => Part::Full,
        SpanKind::Wait => Part::Middle,
        SpanKind::Send => Part::Upper,
        SpanKind::Recv => Part::Lower,
    }
}

/// The kinds in the order they are drawn (waits first, sends and receives on top), with their
/// legend labels in the order listed.
const DRAW_ORDER: [SpanKind; 4] = [
    SpanKind::Wait,
    SpanKind::Compute,
    SpanKind::Send,
    SpanKind::Recv,
];
const LEGEND: [(SpanKind, &str); 4] = [
    (SpanKind::Compute, "compute"),
    (SpanKind::Send, "send"),
    (SpanKind::Recv, "receive"),
    (SpanKind::Wait, "wait"),
];

/// The whole figure, as a standalone SVG document.
pub fn render(t: &Timeline, p: &Prediction) -> String {
    figure(t, p).document()
}

/// The figure: one lanes panel, the run's settings and what was left out as notes.
pub fn figure(t: &Timeline, p: &Prediction) -> Figure {
    let nshown = t.nranks.min(MAX_RANKS);
    let fin = |v: f64| v.is_finite();
    // What is drawn: shapes on the shown ranks, finite, in order, up to the cap.
    let mut budget = MAX_SHAPES;
    let spans: Vec<_> = t
        .spans
        .iter()
        .filter(|s| s.rank < nshown && fin(s.start_ns) && fin(s.end_ns))
        .take(budget)
        .collect();
    budget -= spans.len();
    let msgs: Vec<_> = t
        .messages
        .iter()
        .filter(|m| m.src < nshown && m.dst < nshown && fin(m.start_ns) && fin(m.end_ns))
        .take(budget)
        .collect();
    let total_shapes = t.spans.len() + t.messages.len();
    let drawn = spans.len() + msgs.len();

    let mut tmax = if fin(p.total_us) {
        p.total_us * 1e3
    } else {
        0.0
    };
    for s in &spans {
        tmax = tmax.max(s.end_ns).max(s.start_ns);
    }
    for m in &msgs {
        tmax = tmax.max(m.end_ns).max(m.start_ns);
    }
    if tmax.is_nan() || tmax <= 0.0 {
        tmax = 1.0;
    }
    // The axis in the unit that puts its end between 1 and 1000 (the one rule for durations).
    let (uname, per_s) = duration_unit(tmax * 1e-9);
    let per = per_s * 1e9;
    let at = |ns: f64| ns.max(0.0) / per;

    let mut intervals = Vec::with_capacity(spans.len());
    for k in DRAW_ORDER {
        intervals.extend(spans.iter().filter(|s| s.kind == k).map(|s| Interval {
            lane: s.rank as usize,
            start: at(s.start_ns),
            end: at(s.end_ns),
            colour: colour(k),
            part: part(k),
        }));
    }
    let lanes = Lanes {
        labels: (0..nshown).map(|r| format!("rank {r}")).collect(),
        intervals,
        arrows: msgs
            .iter()
            .map(|m| Arrow {
                from: (m.src as usize, at(m.start_ns)),
                to: (m.dst as usize, at(m.end_ns)),
            })
            .collect(),
        arrow_colour: MESSAGE,
    };
    let panel = Panel::lanes(linear_axis([tmax / per]), format!("time, {uname}"), lanes);

    let mut f = Figure::new(format!(
        "commperf predict: {} ({} model), total {} µs",
        p.trace,
        p.model,
        super::table::us(p.total_us)
    ))
    .class("timeline")
    .width(WIDTH)
    .plot_height(LANE_HEIGHT * f64::from(nshown.max(1)))
    .panel(panel)
    .note(format!(
        "topology {}, profile {}, background {}, seed {}",
        p.topology, p.profile, p.background, p.seed
    ));
    if nshown < t.nranks {
        f = f.note(format!("showing first {nshown} of {} ranks", t.nranks));
    }
    if drawn < total_shapes {
        f = f.note(format!(
            "showing first {drawn} of {total_shapes} spans and messages"
        ));
    }
    f.legend = LEGEND
        .iter()
        .map(|&(k, label)| LegendEntry {
            label: label.to_string(),
            colour: colour(k),
            swatch: Swatch::Box,
        })
        .chain([LegendEntry {
            label: "message".to_string(),
            colour: MESSAGE,
            swatch: Swatch::Arrow,
        }])
        .collect();
    f
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::output::fixtures::{check_snapshot, prediction, timeline};
    use crate::output::{Arrow, Span};

    /// Checks that every opened tag is closed in order, and returns the element names seen.
    fn balanced(svg: &str) -> Vec<String> {
        let mut stack: Vec<String> = Vec::new();
        let mut seen = Vec::new();
        let mut rest = svg;
        while let Some(i) = rest.find('<') {
            let end = rest[i..].find('>').expect("tag closed") + i;
            let tag = &rest[i + 1..end];
            if tag.starts_with('?') {
                // The XML declaration.
            } else if let Some(name) = tag.strip_prefix('/') {
                assert_eq!(stack.pop().as_deref(), Some(name), "mismatched </{name}>");
            } else {
                let name: String = tag
                    .chars()
                    .take_while(|c| !c.is_whitespace() && *c != '/')
                    .collect();
                seen.push(name.clone());
                if !tag.ends_with('/') {
                    stack.push(name);
                }
            }
            rest = &rest[end + 1..];
        }
        assert!(stack.is_empty(), "unclosed: {stack:?}");
        seen
    }

    #[test]
    fn snapshot_small() {
        let svg = render(&timeline(), &prediction());
        let names = balanced(&svg);
        assert_eq!(names[0], "svg");
        // 12 spans + 4 legend boxes + background; 3 messages + 1 legend arrow.
        assert_eq!(names.iter().filter(|n| *n == "rect").count(), 12 + 4 + 1);
        check_snapshot("timeline.svg", &svg);
    }

    #[test]
    fn big_timelines_are_capped_and_say_so() {
        let n = 100u32;
        let mut t = Timeline {
            nranks: n,
            ..Timeline::default()
        };
        for i in 0..30_000u32 {
            let r = i % n;
            t.spans.push(Span {
                rank: r,
                kind: SpanKind::Compute,
                start_ns: i as f64,
                end_ns: i as f64 + 1.0,
                peer: None,
                bytes: 0,
            });
            t.messages.push(Arrow {
                src: r,
                dst: (r + 1) % n,
                bytes: 8,
                start_ns: i as f64,
                end_ns: i as f64 + 2.0,
            });
        }
        let svg = render(&t, &prediction());
        balanced(&svg);
        assert!(svg.contains("showing first 64 of 100 ranks"), "note");
        assert!(svg.contains("showing first 20000 of 60000 spans and messages"));
        assert!(svg.matches("<rect").count() <= MAX_SHAPES + 5);
        assert!(svg.contains("rank 63<") && !svg.contains("rank 64<"));
    }

    /// The time axis's tick labels, in order.
    fn tick_labels(svg: &str) -> Vec<String> {
        let axis = svg
            .split(r#"<g text-anchor="middle">"#)
            .nth(1)
            .expect("x labels");
        let axis = &axis[..axis.find("</g>").expect("closed")];
        axis.lines()
            .filter_map(|l| l.split('>').nth(1)?.split('<').next())
            .map(str::to_string)
            .collect()
    }

    #[test]
    fn ticks_and_units_follow_the_time_span() {
        // The fixture ends at 42.5 µs: round ticks every 10 µs up to the first one past the end.
        let svg = render(&timeline(), &prediction());
        assert_eq!(
            tick_labels(&svg),
            ["0", "10", "20", "30", "40", "50", "time, µs (linear scale)"]
        );
        let at = |total_us: f64| {
            let mut p = prediction();
            p.total_us = total_us;
            tick_labels(&render(&Timeline::default(), &p))
        };
        assert_eq!(at(0.5).last().unwrap(), "time, ns (linear scale)");
        assert_eq!(at(0.5)[..2], ["0", "100"]);
        assert_eq!(at(30_000.0).last().unwrap(), "time, ms (linear scale)");
        assert_eq!(at(30_000.0)[..4], ["0", "10", "20", "30"]);
        // Empty or non-finite input still gives a valid figure.
        let svg = render(&Timeline::default(), &prediction());
        balanced(&svg);
        let mut p = prediction();
        p.total_us = f64::NAN;
        balanced(&render(&Timeline::default(), &p));
    }

    #[test]
    fn text_from_the_command_line_is_escaped() {
        let mut p = prediction();
        p.trace = r#"a<b>&"c".txt"#.into();
        p.topology = "<script>".into();
        let svg = render(&timeline(), &p);
        balanced(&svg);
        assert!(svg.contains("a&lt;b&gt;&amp;&quot;c&quot;.txt"), "{svg}");
        assert!(svg.contains("topology &lt;script&gt;,"), "{svg}");
        assert!(!svg.contains("<script>"));
    }
}
