//! What commperf's SVG and HTML figures share: escaping text for markup, the colours of the
//! series (Tableau 10), and the parts of a value axis (grid lines and labels at the shared
//! [`Axis`]'s ticks, the two axis lines, the rotated title), so a figure drawn by one verb looks
//! like the others.

use commperf_stats::axis::{Axis, Tick};
use std::fmt::Write as _;

/// Least distance between two y tick labels, in pixels.
pub const Y_LABEL_STEP: f64 = 14.0;

/// One colour per series (Tableau 10), reused in order when there are more.
pub const COLOURS: [&str; 8] = [
    "#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf",
];

/// Escapes text for SVG or HTML content and for double-quoted attribute values: `&`, `<`, `>`
/// and `"` become entities, so text from a command line or a program's output cannot open a
/// tag, an entity or close an attribute.
pub fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// The colour of series `i`.
pub fn colour(i: usize) -> &'static str {
    COLOURS[i % COLOURS.len()]
}

/// Horizontal grid lines from `left` to `right` at each tick (`y_at`: a tick's position on the
/// axis to its y), without the enclosing group that styles them.
pub fn y_grid(o: &mut String, ticks: &[Tick], left: f64, right: f64, y_at: impl Fn(f64) -> f64) {
    // Writing to a String cannot fail; the results of write! are ignored for that reason.
    for t in ticks {
        let y = y_at(t.position);
        let _ = writeln!(
            o,
            r#"<line x1="{left:.1}" y1="{y:.1}" x2="{right:.1}" y2="{y:.1}"/>"#
        );
    }
}

/// The tick labels of `axis`, right-aligned at `x` (in a group with `text-anchor="end"`),
/// every k-th one so labels stay [`Y_LABEL_STEP`] apart on an axis `height` pixels high.
pub fn y_labels(o: &mut String, axis: &Axis, x: f64, height: f64, y_at: impl Fn(f64) -> f64) {
    let per_tick = height / f64::from(axis.intervals());
    let k = ((Y_LABEL_STEP / per_tick).ceil() as usize).max(1);
    for t in axis.ticks().iter().step_by(k) {
        let _ = writeln!(
            o,
            r#"<text x="{x:.1}" y="{:.1}">{}</text>"#,
            y_at(t.position) + 4.0,
            esc(&t.label)
        );
    }
}

/// The x axis at `bottom` and the y axis at `left`, black.
pub fn axes(o: &mut String, left: f64, top: f64, right: f64, bottom: f64) {
    let _ = writeln!(
        o,
        r##"<g stroke="#000000" stroke-width="1"><line x1="{left:.1}" y1="{bottom:.1}" x2="{right:.1}" y2="{bottom:.1}"/><line x1="{left:.1}" y1="{top:.1}" x2="{left:.1}" y2="{bottom:.1}"/></g>"##
    );
}

/// The y axis's title, rotated, centred on `y` near the left edge.
pub fn y_title(o: &mut String, y: f64, title: &str) {
    let x = 18.0;
    let _ = writeln!(
        o,
        r#"<text x="{x:.1}" y="{y:.1}" text-anchor="middle" transform="rotate(-90 {x:.1} {y:.1})">{}</text>"#,
        esc(title)
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markup_is_escaped() {
        assert_eq!(
            esc(r#"<script>alert("x")</script> & co"#),
            "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; co"
        );
        assert_eq!(colour(9), COLOURS[1]);
    }
}
