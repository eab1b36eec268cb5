//! A [`Timeline`] as an SVG space-time diagram (Papaefstathiou 2001, Figure 6): one horizontal line
//! per rank, a colored box per span (compute, send, receive, wait), a line per message from the
//! start of its send to its arrival, a time axis with ticks and units, and a legend.
//!
//! Sends are drawn in the upper half of a rank's band and receives in the lower half, so a
//! non-blocking send and receive that overlap stay visible. A big timeline would make a file no
//! viewer can open, so at most [`MAX_RANKS`] ranks and [`MAX_SHAPES`] shapes are drawn (in the
//! timeline's order) and the figure says what it left out. Output is deterministic: coordinates
//! with two decimals, shapes in the timeline's order.

use super::{Prediction, SpanKind, Timeline};
use std::fmt::Write as _;

/// Ranks drawn at most.
pub const MAX_RANKS: u32 = 64;
/// Spans plus messages drawn at most.
pub const MAX_SHAPES: usize = 20_000;

const WIDTH: f64 = 960.0;
const LEFT: f64 = 72.0;
const RIGHT: f64 = 24.0;
const TOP: f64 = 56.0;
const ROW: f64 = 24.0;

fn color(k: SpanKind) -> &'static str {
    match k {
        SpanKind::Compute => "#4e79a7",
        SpanKind::Send => "#59a14f",
        SpanKind::Recv => "#f28e2b",
        SpanKind::Wait => "#bab0ac",
    }
}

/// Vertical extent of a kind's box relative to the rank's line: (offset, height).
fn band(k: SpanKind) -> (f64, f64) {
    match k {
        SpanKind::Compute => (-7.0, 14.0),
        SpanKind::Wait => (-4.0, 8.0),
        SpanKind::Send => (-7.0, 7.0),
        SpanKind::Recv => (0.0, 7.0),
    }
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// A tick label: up to three decimals, trailing zeros dropped.
fn num(v: f64) -> String {
    let s = format!("{v:.3}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    if s == "-0" {
        "0".into()
    } else {
        s.to_string()
    }
}

/// The unit to label an axis ending at `max_ns` in, and ns per unit.
fn unit(max_ns: f64) -> (&'static str, f64) {
    if max_ns < 1e3 {
        ("ns", 1.0)
    } else if max_ns < 1e6 {
        ("µs", 1e3)
    } else if max_ns < 1e9 {
        ("ms", 1e6)
    } else {
        ("s", 1e9)
    }
}

/// A 1-2-5 tick step giving about 5 to 10 ticks up to `max`.
fn tick_step(max: f64) -> f64 {
    let raw = max / 8.0;
    let mag = 10f64.powf(raw.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|&s| s >= raw)
        .unwrap_or(10.0 * mag)
}

/// The whole figure.
pub fn render(t: &Timeline, p: &Prediction) -> String {
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
    let plot_w = WIDTH - LEFT - RIGHT;
    let x = |ns: f64| LEFT + (ns.max(0.0) / tmax).min(1.0) * plot_w;
    let y = |rank: u32| TOP + ROW * (rank as f64 + 0.5);
    let axis_y = TOP + ROW * nshown as f64 + 8.0;
    let height = axis_y + 84.0;

    let mut o = String::new();
    let _ = writeln!(
        o,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH:.0}" height="{height:.0}" viewBox="0 0 {WIDTH:.0} {height:.0}" font-family="sans-serif" font-size="12">"#
    );
    o.push_str(concat!(
        "<defs><marker id=\"arrow\" viewBox=\"0 0 10 10\" refX=\"10\" refY=\"5\" ",
        "markerWidth=\"6\" markerHeight=\"6\" orient=\"auto-start-reverse\">",
        "<path d=\"M 0 0 L 10 5 L 0 10 z\" fill=\"#e15759\"/></marker></defs>\n"
    ));
    let _ = writeln!(
        o,
        r#"<rect x="0" y="0" width="{WIDTH:.0}" height="{height:.0}" fill="white"/>"#
    );
    let _ = writeln!(
        o,
        r#"<text x="{LEFT:.0}" y="20" font-size="14" font-weight="bold">{}</text>"#,
        esc(&format!(
            "commperf predict: {} ({} model), total {} µs",
            p.trace,
            p.model,
            super::table::us(p.total_us)
        ))
    );
    let mut notes = Vec::new();
    if nshown < t.nranks {
        notes.push(format!("showing first {nshown} of {} ranks", t.nranks));
    }
    if drawn < total_shapes {
        notes.push(format!(
            "showing first {drawn} of {total_shapes} spans and messages"
        ));
    }
    let subtitle = format!(
        "topology {}, profile {}, background {}, seed {}",
        p.topology, p.profile, p.background, p.seed
    );
    let _ = writeln!(
        o,
        r##"<text x="{LEFT:.0}" y="38" fill="#555">{}</text>"##,
        esc(&if notes.is_empty() {
            subtitle
        } else {
            format!("{subtitle}; {}", notes.join(", "))
        })
    );

    // Rank lines and labels.
    for r in 0..nshown {
        let yy = y(r);
        let _ = writeln!(
            o,
            r##"<text x="{:.2}" y="{:.2}" text-anchor="end">rank {r}</text><line x1="{LEFT:.2}" y1="{yy:.2}" x2="{:.2}" y2="{yy:.2}" stroke="#ccc"/>"##,
            LEFT - 8.0,
            yy + 4.0,
            LEFT + plot_w
        );
    }
    // Waits first, then compute, then sends and receives on top.
    let order = [
        SpanKind::Wait,
        SpanKind::Compute,
        SpanKind::Send,
        SpanKind::Recv,
    ];
    o.push_str("<g stroke=\"none\">\n");
    for k in order {
        for s in spans.iter().filter(|s| s.kind == k) {
            let (dy, h) = band(k);
            let x0 = x(s.start_ns);
            let w = (x(s.end_ns) - x0).max(0.5);
            let _ = writeln!(
                o,
                r#"<rect x="{x0:.2}" y="{:.2}" width="{w:.2}" height="{h:.2}" fill="{}"/>"#,
                y(s.rank) + dy,
                color(k)
            );
        }
    }
    o.push_str("</g>\n<g stroke=\"#e15759\" stroke-width=\"1\" marker-end=\"url(#arrow)\">\n");
    for m in &msgs {
        let _ = writeln!(
            o,
            r#"<line x1="{:.2}" y1="{:.2}" x2="{:.2}" y2="{:.2}"/>"#,
            x(m.start_ns),
            y(m.src),
            x(m.end_ns),
            y(m.dst)
        );
    }
    o.push_str("</g>\n");

    // Time axis.
    let (uname, per) = unit(tmax);
    let step = tick_step(tmax);
    let _ = writeln!(
        o,
        r#"<line x1="{LEFT:.2}" y1="{axis_y:.2}" x2="{:.2}" y2="{axis_y:.2}" stroke="black"/>"#,
        LEFT + plot_w
    );
    let mut k = 0u32;
    while (k as f64) * step <= tmax * (1.0 + 1e-9) && k <= 100 {
        let tx = x(k as f64 * step);
        let _ = writeln!(
            o,
            r#"<line x1="{tx:.2}" y1="{axis_y:.2}" x2="{tx:.2}" y2="{:.2}" stroke="black"/><text x="{tx:.2}" y="{:.2}" text-anchor="middle">{}</text>"#,
            axis_y + 5.0,
            axis_y + 18.0,
            num(k as f64 * step / per)
        );
        k += 1;
    }
    let _ = writeln!(
        o,
        r#"<text x="{:.2}" y="{:.2}" text-anchor="middle">time ({uname})</text>"#,
        LEFT + plot_w / 2.0,
        axis_y + 36.0
    );

    // Legend.
    let ly = axis_y + 60.0;
    let mut lx = LEFT;
    for (k, label) in [
        (SpanKind::Compute, "compute"),
        (SpanKind::Send, "send"),
        (SpanKind::Recv, "receive"),
        (SpanKind::Wait, "wait"),
    ] {
        let _ = writeln!(
            o,
            r#"<rect x="{lx:.2}" y="{:.2}" width="14" height="10" fill="{}"/><text x="{:.2}" y="{ly:.2}">{label}</text>"#,
            ly - 9.0,
            color(k),
            lx + 18.0
        );
        lx += 90.0;
    }
    let _ = writeln!(
        o,
        r##"<line x1="{lx:.2}" y1="{:.2}" x2="{:.2}" y2="{:.2}" stroke="#e15759" marker-end="url(#arrow)"/><text x="{:.2}" y="{ly:.2}">message</text>"##,
        ly - 4.0,
        lx + 14.0,
        ly - 4.0,
        lx + 18.0
    );
    o.push_str("</svg>\n");
    o
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
            if let Some(name) = tag.strip_prefix('/') {
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

    #[test]
    fn ticks_and_units_follow_the_time_span() {
        assert_eq!(unit(500.0), ("ns", 1.0));
        assert_eq!(unit(42_500.0), ("µs", 1e3));
        assert_eq!(unit(3e7), ("ms", 1e6));
        assert_eq!(tick_step(42_500.0), 10_000.0);
        assert_eq!(tick_step(8.0), 1.0);
        assert_eq!(num(12.5), "12.5");
        assert_eq!(num(10.0), "10");
        // Empty or non-finite input still gives a valid figure.
        let svg = render(&Timeline::default(), &prediction());
        balanced(&svg);
        let mut p = prediction();
        p.total_us = f64::NAN;
        balanced(&render(&Timeline::default(), &p));
    }
}
