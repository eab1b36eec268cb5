//! `commperf app --html FILE` and `app report DIR --format html`: a [`Study`] as one
//! self-contained HTML page. Inline CSS and inline SVG, no script, no external resource (the
//! page's Content-Security-Policy forbids every load, so a browser says so if one slips in).
//!
//! The page holds the program × stack table of completion times with figure (a), grouped bars
//! of the same times (one group per program, one bar per stack, on the shared value [`Axis`]:
//! log10 when the times span more than a factor of 30); the per-program explanation (which
//! micro-benchmark figure orders the stacks, Spearman ρ); the stacks' micro-benchmark figures;
//! and per program its message profile on every stack with figure (b), its signature: messages
//! per size bin; with the loop (`--loop`), its table and figure (c), predicted and emulated
//! against measured time on one plane (log10 on both axes when the times span more than a factor
//! of 30) with the diagonal and the goal's ±10 % band; with `--sweep`, figure (d), each
//! program's sensitivity curves.
//!
//! The page is a `maud` template: every text interpolated into it (names, errors, notes, the
//! MPI library's banner, numbers) is escaped by the template itself, in content and in attribute
//! values alike, so no call site can forget to. Only two things enter unescaped, each through one
//! named function that says why it is safe: the page's fixed style sheet ([`style_sheet`]) and
//! the figures drawn by the chart layer ([`figure_svg`]). Deterministic: the same study gives
//! the same bytes.

use crate::schema::{Cell, Explanation, Loop, LoopCell, LoopStack, Profile, Sensitivity, Study};
use commperf_core::format_size;
use commperf_report::plot::{
    colour, Bar, BarGroup, Figure, Guide, LegendEntry, Marker, Panel, Point, Series, Stroke,
    Swatch, XScale, GREY,
};
use commperf_report::svg::esc;
use commperf_report::units;
use commperf_stats::axis::Axis;
use maud::{html, Markup, PreEscaped, DOCTYPE};

const STYLE: &str = "body{font-family:sans-serif;margin:1.5em auto;max-width:72em;\
padding:0 1em;color:#222}\
table{border-collapse:collapse;margin:.6em 0 1.2em}\
th,td{border:1px solid #ccc;padding:.25em .6em;text-align:right;vertical-align:top}\
th{background:#f3f3f3}th:first-child,.text{text-align:left}\
td.failed{color:#b00;font-weight:bold}\
.note{color:#555;font-size:.92em}.error{color:#b00}\
figure{margin:.5em 0 1.5em}figcaption{color:#555;font-size:.92em}\
figure svg{display:block;max-width:100%;height:auto}\
section.program{border-top:1px solid #ddd;margin-top:1.5em}\
cite{font-style:italic}";

/// The page's style sheet, unescaped: the content of `<style>` is raw text to a browser (an
/// entity there would not be decoded). Safe because it is [`STYLE`], a constant of this file
/// that holds no `<`: nothing from a study reaches it.
fn style_sheet() -> PreEscaped<&'static str> {
    PreEscaped(STYLE)
}

/// A figure drawn by the chart layer (`commperf_report::plot`, which the sweep's own SVG uses
/// too), inserted as it is. Safe because the chart layer escapes every text it writes (titles,
/// axis and slot labels, legends, tooltips) and the attributes it is handed are built by
/// [`data_attrs`], which escapes each value.
fn figure_svg(svg: String) -> PreEscaped<String> {
    PreEscaped(svg)
}

/// Attributes for an element the chart layer draws (`data-program="ep" data-stack="…"`): the
/// chart layer writes a bar's or a point's attributes as given, so each value is escaped here,
/// the one place that builds them.
fn data_attrs(pairs: &[(&str, &str)]) -> String {
    pairs
        .iter()
        .map(|(name, value)| format!("{name}=\"{}\"", esc(value)))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The whole page.
pub fn page(s: &Study) -> String {
    let title = format!(
        "commperf app: {} program(s) × {} stack(s), {} ranks",
        s.programs.len(),
        s.stacks.len(),
        s.np
    );
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta http-equiv="Content-Security-Policy"
                    content="default-src 'none'; style-src 'unsafe-inline'";
                title { (title) }
                style { (style_sheet()) }
            }
            body {
                h1 { (title) }
                (introduction(s))
                (times_table(s))
                figure id="fig-times" {
                    (figure_svg(times_svg(s)))
                    figcaption { "(a) Completion time per program across the stacks." }
                }
                (explanations(s))
                (micro_table(s))
                h2 id="profiles" { "Message profiles and signatures" }
                @for (i, p) in s.programs.iter().enumerate() {
                    (program_section(s, i, p))
                }
                @if let Some(l) = &s.loop_study {
                    (loop_section(l))
                }
                (sensitivity(s))
            }
        }
    }
    .into_string()
}

/// What the page shows and where its papers are, and the note on oversubscription.
fn introduction(s: &Study) -> Markup {
    html! {
        p class="note" {
            "Each program run on each MPI stack under the monitor's interposer, beside the \
             stacks' micro-benchmark figures, as in Table 5.1 of N. S. Kutluğ, "
            cite {
                "Performance Evaluation and Analysis of User Level Networking Protocols in \
                 Clusters"
            }
            " (MS thesis, The Ohio State University, 2000). Completion time is the median of "
            (s.repeat)
            " run(s) of the program's own time where it reports one (its time pattern), else \
             of the launch's wall time (marked "
            sup { "wall" }
            "). Study wall time "
            (units::format_seconds(s.wall_time_s))
            " (" (s.schema) " " (s.schema_version) ")."
        }
        @if let Some(n) = &s.oversubscribed {
            p class="note" { "Note: " (n) }
        }
    }
}

fn cell<'a>(s: &'a Study, program: &str, stack: &str) -> Option<&'a Cell> {
    s.cells
        .iter()
        .find(|c| c.program == program && c.stack == stack)
}

fn opt(v: Option<f64>, f: impl Fn(f64) -> String) -> String {
    v.map_or_else(|| "-".to_string(), f)
}

fn times_table(s: &Study) -> Markup {
    let failed: Vec<&Cell> = s.cells.iter().filter(|c| c.error.is_some()).collect();
    html! {
        h2 id="times" { "Completion time per program and stack" }
        table id="times-table" {
            thead {
                tr {
                    th { "program" }
                    @for st in &s.stacks { th { (st) } }
                }
            }
            tbody {
                @for p in &s.programs {
                    tr {
                        th { (p) }
                        @for st in &s.stacks { (time_cell(s, p, st)) }
                    }
                }
            }
        }
        @if !failed.is_empty() {
            ul class="error" {
                @for c in failed {
                    li {
                        (c.program) " on " (c.stack) ": " (c.error.as_deref().unwrap_or(""))
                    }
                }
            }
        }
    }
}

/// One cell of the times table: the median time (exact in `data-seconds`), FAILED with the
/// error as its tooltip, or `-`.
fn time_cell(s: &Study, p: &str, st: &str) -> Markup {
    match cell(s, p, st) {
        Some(
            c @ Cell {
                time_s: Some(t), ..
            },
        ) => {
            // The launch's wall time is marked: it holds mpirun's start-up, which a program's
            // own time does not.
            let wall = c.time_source.as_deref() == Some("wall");
            let (source, title) = if wall {
                (
                    "wall",
                    "wall time of the whole launch (no time printed by the program)".to_string(),
                )
            } else {
                let by = c.time_pattern.as_deref().unwrap_or("its report");
                (
                    "program",
                    format!("time printed by the program, found by {by}"),
                )
            };
            html! {
                td class="time" data-program=(p) data-stack=(st) data-seconds=(t)
                    data-time-source=(source) title=(title) {
                    (units::format_seconds(*t))
                    @if wall { sup { "wall" } }
                }
            }
        }
        Some(Cell { error: Some(e), .. }) => html! {
            td class="failed" data-program=(p) data-stack=(st) title=(e) { "FAILED" }
        },
        _ => html! { td class="failed" data-program=(p) data-stack=(st) { "-" } },
    }
}

fn explanations(s: &Study) -> Markup {
    html! {
        h2 id="explanations" { "Which micro-benchmark figure orders the stacks as the times do" }
        p class="note" {
            "Spearman rank correlation between a figure's cost (latency; 1 / bandwidth) at the \
             program's dominant message size and its completion times over the stacks (with two \
             stacks ρ is ±1 by construction)."
        }
        table id="explanations-table" {
            thead {
                tr {
                    th { "program" } th class="text" { "figure" } th { "ρ" }
                    th { "latency ρ" } th { "bandwidth ρ" } th { "stacks compared" }
                    th class="text" { "note" }
                }
            }
            tbody {
                @for e in &s.explanations { (explanation_row(e)) }
            }
        }
    }
}

fn explanation_row(e: &Explanation) -> Markup {
    let r = |v: Option<f64>| opt(v, |v| format!("{v:+.2}"));
    html! {
        tr {
            th { (e.program) }
            td class="text" { (e.figure.as_deref().unwrap_or("none")) }
            td { (r(e.spearman)) }
            td { (r(e.latency_spearman)) }
            td { (r(e.bandwidth_spearman)) }
            td { (e.stacks_compared) }
            td class="text" { (e.note.as_deref().unwrap_or("")) }
        }
    }
}

fn micro_table(s: &Study) -> Markup {
    html! {
        h2 id="micro" { "Micro-benchmark figures per stack" }
        p class="note" {
            "MPI layer, 2 ranks under the stack's launcher: latency p50 ("
            code { "bench latency" }
            "), streaming bandwidth and gap g = 1 / message rate ("
            code { "bench bw" }
            "), at the programs' dominant message sizes."
        }
        @if s.benches.is_empty() {
            p class="note" { "No micro-benchmarks in this study (--no-bench)." }
        } @else {
            table id="micro-table" {
                thead {
                    tr {
                        th { "stack" } th { "size" } th { "latency µs" } th { "bandwidth MB/s" }
                        th { "g µs" } th class="text" { "dominant size of" }
                    }
                }
                tbody {
                    @for b in &s.benches { (micro_rows(s, b)) }
                }
            }
        }
    }
}

/// A stack's rows of the micro-benchmark table: its error, one row per message size (with the
/// programs whose dominant size it is), its note.
fn micro_rows(s: &Study, b: &crate::schema::StackBench) -> Markup {
    let users = |size: u64| {
        s.cells
            .iter()
            .filter(|c| c.stack == b.stack)
            .filter(|c| {
                c.profile
                    .as_ref()
                    .and_then(|p| p.dominant_mean_bytes)
                    .is_some_and(|d| d == size)
            })
            .map(|c| c.program.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    };
    html! {
        @if let Some(e) = &b.error {
            tr { th { (b.stack) } td class="text error" colspan="5" { (e) } }
        }
        @for m in &b.figures {
            tr {
                th { (b.stack) }
                td { (format_size(m.size_bytes)) }
                td { (format!("{:.2}", m.latency_us)) }
                td { (format!("{:.1}", m.bandwidth_mb_per_s)) }
                td { (format!("{:.2}", m.gap_us)) }
                td class="text" { (users(m.size_bytes)) }
            }
        }
        @if let Some(n) = &b.note {
            tr { th { (b.stack) } td class="text note" colspan="5" { (n) } }
        }
    }
}

fn join(v: &[u64]) -> String {
    v.iter().map(u64::to_string).collect::<Vec<_>>().join(" / ")
}

fn dominant(p: &Profile) -> String {
    match (p.dominant_mean_bytes, p.dominant_bin_bytes) {
        (Some(m), Some(b)) => format!(
            "{} (≤ {}, {:.0} %)",
            format_size(m),
            format_size(b),
            p.dominant_share * 100.0
        ),
        _ => "none".into(),
    }
}

/// A program's section: its explanation, its profile on every stack, the stacks' notes and
/// figure (b).
fn program_section(s: &Study, i: usize, p: &str) -> Markup {
    let cells: Vec<&Cell> = s.stacks.iter().filter_map(|st| cell(s, p, st)).collect();
    let notes: Vec<String> = cells
        .iter()
        .flat_map(|c| c.notes.iter().map(move |n| format!("{}: {n}", c.stack)))
        .collect();
    html! {
        section class="program" id=(format!("program-{i}")) data-program=(p) {
            h3 { (p) }
            @if let Some(e) = s.explanations.iter().find(|e| e.program == p) {
                p class="explanation" { (explanation_text(e)) }
            }
            table class="profile" {
                thead {
                    tr {
                        th { "stack" } th { "time" } th { "wall" } th { "messages" }
                        th { "bytes" } th { "sent per rank" } th { "collectives per rank" }
                        th { "dominant size" } th { "latency µs" } th { "bandwidth MB/s" }
                        th { "g µs" } th class="text" { "MPI library" }
                    }
                }
                tbody {
                    @for c in &cells { (profile_row(c)) }
                }
            }
            @if !notes.is_empty() {
                ul class="note" {
                    @for n in &notes { li { (n) } }
                }
            }
            (signature(p, &cells))
        }
    }
}

fn explanation_text(e: &Explanation) -> String {
    match (&e.figure, e.spearman) {
        (Some(f), Some(r)) => format!(
            "{f} orders the stacks as the times do (ρ = {r:+.2} over {} stacks{})",
            e.stacks_compared,
            if r < 0.8 { ", weak" } else { "" }
        ),
        _ => format!("no figure: {}", e.note.as_deref().unwrap_or("")),
    }
}

/// A stack's row of a program's profile table; a failed run is one cell with its error.
fn profile_row(c: &Cell) -> Markup {
    let time = opt(c.time_s, |t| {
        if c.time_source.as_deref() == Some("wall") {
            format!("{} (wall)", units::format_seconds(t))
        } else {
            units::format_seconds(t)
        }
    });
    let lib = c.profile.as_ref().map_or("", |p| p.mpi_library.as_str());
    html! {
        tr {
            th { (c.stack) }
            @if let Some(e) = &c.error {
                td class="failed text" colspan="11" { "FAILED: " (e) }
            } @else {
                td { (time) }
                td { (opt(c.wall_s, units::format_seconds)) }
                @if let Some(pr) = &c.profile {
                    td class="messages" { (pr.messages) }
                    td { (pr.bytes) }
                    td { (join(&pr.sent_per_rank)) }
                    td { (join(&pr.collectives_per_rank)) }
                    td { (dominant(pr)) }
                } @else {
                    @for _ in 0..5 { td { "-" } }
                }
                @if let Some(m) = &c.micro {
                    td { (format!("{:.2}", m.latency_us)) }
                    td { (format!("{:.1}", m.bandwidth_mb_per_s)) }
                    td { (format!("{:.2}", m.gap_us)) }
                } @else {
                    @for _ in 0..3 { td { "-" } }
                }
                td class="text" { (lib) }
            }
        }
    }
}

/// Figure (b): the signature from the first stack with a profile; the others are said to match
/// or not.
fn signature(p: &str, cells: &[&Cell]) -> Markup {
    let first = cells
        .iter()
        .find_map(|c| Some((c.stack.as_str(), c.profile.as_ref()?)));
    match first {
        Some((stack, pr)) if !pr.bins.is_empty() => {
            let key = |p: &Profile| {
                p.bins
                    .iter()
                    .map(|b| (b.size_bin_bytes, b.count))
                    .collect::<Vec<_>>()
            };
            let differ: Vec<&str> = cells
                .iter()
                .filter_map(|c| Some((c.stack.as_str(), c.profile.as_ref()?)))
                .filter(|(_, q)| key(q) != key(pr))
                .map(|(st, _)| st)
                .collect();
            let same = if differ.is_empty() {
                "the same on every stack with a profile".to_string()
            } else {
                format!("different on {}", differ.join(", "))
            };
            html! {
                figure class="signature" {
                    (figure_svg(signature_svg(p, stack, pr)))
                    figcaption {
                        "(b) " (p) "'s signature: point-to-point messages per size bin, all \
                         ranks, monitored on " (stack) " (" (same) ")."
                    }
                }
            }
        }
        Some(_) => html! {
            p class="note" { "No point-to-point messages: no signature to draw." }
        },
        None => html! {
            p class="note" { "No run with a message profile: no signature to draw." }
        },
    }
}

/// Figure (d), per program: its sensitivity curves from `--sweep` (the sweep's own SVG, drawn
/// by the chart layer).
fn sensitivity(s: &Study) -> Markup {
    let Some(first) = s.sensitivity.first() else {
        return html! {};
    };
    html! {
        h2 id="sensitivity" {
            "Sensitivity to the LogGP knobs (emulate sweep on " (first.stack) ")"
        }
        p class="note" {
            "Each program run with one knob raised at a time, settings interleaved over the \
             rounds, as R. P. Martin measured applications in "
            cite {
                "A Systematic Characterization of Application Sensitivity to Network Performance"
            }
            " (PhD thesis, University of California, Berkeley, 1999); slowdown = median run \
             time over the baseline's, the baseline's own spread shaded grey as the noise band."
        }
        @for x in &s.sensitivity { (sweep_figure(x)) }
    }
}

fn sweep_figure(x: &Sensitivity) -> Markup {
    match &x.sweep {
        Some(r) => html! {
            figure class="sensitivity" data-program=(x.program) {
                (figure_svg(r.render_svg()))
                figcaption {
                    "(d) " (x.program) ": slowdown against each knob on " (x.stack)
                    "; most sensitive to "
                    (r.most_sensitive.as_deref().unwrap_or("no knob beyond the noise band"))
                    "."
                }
            }
        },
        None => html! {
            p class="failed" {
                (x.program) ": no sweep: " (x.error.as_deref().unwrap_or(""))
            }
        },
    }
}
/// The width the page's figures are drawn at; the page's style scales them to its column.
const FIG_W: f64 = 1100.0;

/// (a): one group per program, one bar per stack (its median completion time); a failed cell
/// is a red × on the baseline. Times in the unit that suits the longest.
fn times_svg(s: &Study) -> String {
    let longest = s.cells.iter().filter_map(|c| c.time_s).fold(0.0, f64::max);
    let (unit, per) = units::duration_unit(longest);
    let axis = Axis::for_values(s.cells.iter().filter_map(|c| c.time_s).map(|t| t / per));
    let mut panel = Panel::new(
        XScale::Slots(s.programs.clone()),
        "program",
        axis,
        format!("completion time, {unit}"),
    );
    for (gi, p) in s.programs.iter().enumerate() {
        let bars = (s.stacks.iter().enumerate())
            .map(|(si, st)| {
                let attrs = |more: &[(&str, &str)]| {
                    data_attrs(
                        &[
                            &[("data-program", p.as_str()), ("data-stack", st.as_str())],
                            more,
                        ]
                        .concat(),
                    )
                };
                match cell(s, p, st).and_then(|c| c.time_s) {
                    Some(t) => Bar {
                        value: Some(t / per),
                        colour: colour(si),
                        attrs: attrs(&[("data-seconds", &t.to_string())]),
                        tip: format!("{p} on {st}: {}", units::format_seconds(t)),
                    },
                    None => Bar {
                        value: None,
                        colour: colour(si),
                        attrs: attrs(&[]),
                        tip: format!("{p} on {st}: failed"),
                    },
                }
            })
            .collect();
        panel.bars.push(BarGroup { slot: gi, bars });
    }
    let mut f = Figure::new("completion time per program and stack")
        .class("times")
        .width(FIG_W)
        .panel(panel);
    for (si, st) in s.stacks.iter().enumerate() {
        f.legend.push(LegendEntry {
            label: st.clone(),
            colour: colour(si),
            swatch: Swatch::Box,
        });
    }
    f.svg()
}

/// (b): a program's messages per size bin (bins are powers of two, labelled by their largest
/// size).
fn signature_svg(program: &str, stack: &str, p: &Profile) -> String {
    let labels = p
        .bins
        .iter()
        .map(|b| format_size(b.size_bin_bytes))
        .collect();
    let mut panel = Panel::new(
        XScale::Slots(labels),
        "message size bin (bytes, up to)",
        Axis::for_values(p.bins.iter().map(|b| b.count as f64)),
        "messages",
    );
    for (i, b) in p.bins.iter().enumerate() {
        panel.bars.push(BarGroup {
            slot: i,
            bars: vec![Bar {
                value: Some(b.count as f64),
                colour: colour(0),
                attrs: data_attrs(&[
                    ("data-size-bin", &b.size_bin_bytes.to_string()),
                    ("data-count", &b.count.to_string()),
                ]),
                tip: format!(
                    "≤ {}: {} messages, {} bytes",
                    format_size(b.size_bin_bytes),
                    b.count,
                    b.bytes
                ),
            }],
        });
    }
    Figure::new(format!("{program}: messages per size bin ({stack})"))
        .class("signature")
        .width(FIG_W)
        .plot_height(240.0)
        .panel(panel)
        .svg()
}

/// (c): every predicted and emulated total against its measured one, both axes the same
/// (log10 when the values span more than a factor of 30), with y = x and the ±10 % band; one
/// colour per stack, circles predicted, squares emulated.
pub fn loop_svg(l: &Loop) -> String {
    let mut stacks: Vec<&str> = l.stacks.iter().map(|s| s.stack.as_str()).collect();
    for c in &l.cells {
        if !stacks.contains(&c.stack.as_str()) {
            stacks.push(&c.stack);
        }
    }
    // (stack index, program, stack, measured s, value s, kind)
    let mut points: Vec<(usize, &str, &str, f64, f64, &str)> = Vec::new();
    for c in &l.cells {
        let si = stacks.iter().position(|s| *s == c.stack).unwrap_or(0);
        let Some(m) = c.measured_total_s else {
            continue;
        };
        if let Some(p) = c.predicted_total_s {
            points.push((si, &c.program, &c.stack, m, p, "predicted"));
        }
        if let Some(e) = c.emulation.as_ref().and_then(|e| e.total_s) {
            points.push((si, &c.program, &c.stack, m, e, "emulated"));
        }
    }
    let longest = points.iter().map(|p| p.3.max(p.4)).fold(0.0, f64::max);
    let (unit, per) = units::duration_unit(longest);
    let u = |v: f64| v / per;
    let axis = Axis::for_values(
        points
            .iter()
            .flat_map(|p| [u(p.3), u(p.4), u(p.3) * 1.1, u(p.3) * 0.9]),
    );
    let mut panel = Panel::new(
        XScale::Value(axis.clone()),
        format!("measured, {unit}"),
        axis,
        format!("predicted or emulated, {unit}"),
    );
    panel.guides = vec![
        Guide::Ratio {
            factor: 1.0,
            dashed: false,
        },
        Guide::Ratio {
            factor: 1.1,
            dashed: true,
        },
        Guide::Ratio {
            factor: 0.9,
            dashed: true,
        },
    ];
    for (si, st) in stacks.iter().enumerate() {
        for (kind, marker) in [
            ("predicted", Marker::Circle),
            ("emulated", Marker::OpenSquare),
        ] {
            let mut line = Series::new("", colour(si))
                .stroke(Stroke::None)
                .marker(marker)
                .attrs(data_attrs(&[("data-stack", *st), ("data-kind", kind)]));
            for &(_, program, stack, m, v, _) in points.iter().filter(|p| p.0 == si && p.5 == kind)
            {
                let tip = format!(
                    "{program} on {stack}: {kind} {}, measured {} ({:+.1} %)",
                    units::format_seconds(v),
                    units::format_seconds(m),
                    (v - m) / m * 100.0
                );
                let attrs = data_attrs(&[
                    ("data-program", program),
                    ("data-stack", stack),
                    ("data-kind", kind),
                    ("data-measured-s", &m.to_string()),
                    ("data-value-s", &v.to_string()),
                ]);
                line = line.point(Point::new(u(m), u(v)).tip(tip).attrs(attrs));
            }
            if !line.points.is_empty() {
                panel.series.push(line);
            }
        }
    }
    let mut f = Figure::new("predicted and emulated against measured time")
        .class("loop")
        .width(760.0)
        .plot_height(420.0)
        .panel(panel);
    f.legend.extend(loop_legend(&stacks));
    f.svg()
}

/// Figure (c)'s legend: one colour per stack, the two markers, the guides.
fn loop_legend(stacks: &[&str]) -> Vec<LegendEntry> {
    let mut legend = Vec::new();
    for (si, st) in stacks.iter().enumerate() {
        legend.push(LegendEntry {
            label: st.to_string(),
            colour: colour(si),
            swatch: Swatch::Box,
        });
    }
    for (label, marker) in [
        ("predicted", Marker::Circle),
        ("emulated", Marker::OpenSquare),
    ] {
        legend.push(LegendEntry {
            label: label.into(),
            colour: GREY,
            swatch: Swatch::Line(Stroke::None, marker),
        });
    }
    legend.push(LegendEntry {
        label: "y = x, and ±10 % dashed".into(),
        colour: GREY,
        swatch: Swatch::Rule(Stroke::Solid),
    });
    legend
}

/// The loop: the stacks' LogGP parameters, the table of measured, predicted and emulated
/// times, and figure (c).
fn loop_section(l: &Loop) -> Markup {
    html! {
        h2 id="loop" { "The loop: predicted and emulated against measured" }
        p class="note" {
            "Reference stack " (l.reference_rule) ". Each program's monitored run on it is \
             replayed (LogGP model) with every stack's parameters, and run under the emulation \
             knobs set to each other stack's parameter differences. Times are from the barrier \
             before the timed loop (the kit's programs; any other from MPI_Init) to the last MPI \
             call (longest rank); comm is the time inside MPI calls, mean over the ranks. Within \
             10 %: " (l.predictions_within_10_percent) " of " (l.predictions) " predictions, "
            (l.emulations_within_10_percent) " of " (l.emulations) " emulations"
            (crate::table::usual_counts(l)) ". On the communication time: "
            (l.comm_predictions_within_10_percent) " of " (l.comm_predictions) " predictions, "
            (l.comm_emulations_within_10_percent) " of " (l.comm_emulations) " emulations"
            (crate::table::usual_comm_counts(l)) "."
        }
        table id="loop-params" {
            thead {
                tr {
                    th { "stack" } th { "L ns" } th { "o_s ns" } th { "o_r ns" } th { "g ns" }
                    th { "G ns/B" } th { "overlap ns" } th { "send wait ns" } th { "duplex ns" }
                    th { "o_s + L + o_r µs" } th class="text" { "note" }
                }
            }
            tbody {
                @for st in &l.stacks { (loop_params_row(st)) }
            }
        }
        table id="loop-table" {
            thead {
                tr {
                    th { "program" } th class="text" { "stack" } th { "measured" }
                    th { "predicted" } th { "error" } th { "comm" } th { "predicted comm" }
                    th { "error" } th { "emulated comm" } th { "error" } th { "emulated" }
                    th { "error" } th class="text" { "knobs" } th class="text" { "note" }
                }
            }
            tbody {
                @for c in &l.cells { (loop_row(c)) }
            }
        }
        figure id="fig-loop" {
            (figure_svg(loop_svg(l)))
            figcaption {
                "(c) Predicted (circles) and emulated (squares) against measured time, one \
                 colour per stack; the diagonal is a perfect prediction, the band ±10 %."
            }
        }
    }
}

/// A stack's LogGP parameters, or its error.
fn loop_params_row(st: &LoopStack) -> Markup {
    let Some(p) = &st.params else {
        return html! {
            tr {
                th { (st.stack) }
                td class="failed" colspan="9" { "-" }
                td class="text error" { (st.error.as_deref().unwrap_or("")) }
            }
        };
    };
    let f = |v: f64, places: usize| format!("{v:.places$}");
    html! {
        tr {
            th { (st.stack) }
            td { (f(p.L_ns, 0)) }
            td { (f(p.o_s_ns, 0)) }
            td { (f(p.o_r_ns, 0)) }
            td { (f(p.g_ns, 0)) }
            td { (f(p.G_ns_per_byte, 4)) }
            td { (f(p.overlap_ns, 0)) }
            td { (f(p.send_wait_ns, 0)) }
            td { (f(p.duplex_ns, 0)) }
            td { (f(p.small_message_ns / 1e3, 2)) }
            td class="text" { (st.notes.join("; ")) }
        }
    }
}

/// A program on a stack in the loop: measured, predicted and emulated times with their errors,
/// the emulation's knobs and the notes (errors, clamped knobs, other machine states, misses).
fn loop_row(c: &LoopCell) -> Markup {
    let ms = |v: Option<f64>| opt(v, units::format_seconds);
    let pct = |v: Option<f64>| opt(v, |x| format!("{x:+.1} %"));
    let e = c.emulation.as_ref();
    let knobs = e.map_or_else(
        || "reference".to_string(),
        |e| {
            format!(
                "o {:.0} g {:.0} L {:.0} ns, G {:.4} ns/B",
                e.o_ns, e.g_ns, e.L_ns, e.G_ns_per_byte
            )
        },
    );
    html! {
        tr data-program=(c.program) data-stack=(c.stack) {
            th { (c.program) }
            td class="text" { (c.stack) }
            td { (ms(c.measured_total_s)) }
            td { (ms(c.predicted_total_s)) }
            td { (pct(c.total_error_percent)) }
            td { (ms(c.measured_comm_s)) }
            td { (ms(c.predicted_comm_s)) }
            td { (pct(c.comm_error_percent)) }
            td { (ms(e.and_then(|e| e.comm_s))) }
            td { (pct(e.and_then(|e| e.comm_error_percent))) }
            td { (ms(e.and_then(|e| e.total_s))) }
            td { (pct(e.and_then(|e| e.total_error_percent))) }
            td class="text" { (knobs) }
            td class="text" { (loop_notes(c).join("; ")) }
        }
    }
}

fn loop_notes(c: &LoopCell) -> Vec<String> {
    let mut notes: Vec<String> = c.error.iter().cloned().collect();
    if let Some(e) = &c.emulation {
        if !e.clamped.is_empty() {
            notes.push(format!("clamped: {}", e.clamped.join(", ")));
        }
        notes.extend(e.error.iter().map(|x| format!("emulation: {x}")));
    }
    if !c.other_state.is_empty() {
        notes.push(format!(
            "~ in another state of the machine: {}",
            c.other_state.join("; ")
        ));
    }
    notes.extend(c.comm_misses.iter().map(|m| format!("miss: {m}")));
    notes
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::{Bin, Explanation, Micro, StackBench, STUDY_SCHEMA, STUDY_SCHEMA_VERSION};

    fn profile(bins: &[(u64, u64)]) -> Profile {
        Profile {
            mpi_library: "Open MPI v4.1.4".into(),
            messages: bins.iter().map(|b| b.1).sum(),
            bytes: bins.iter().map(|b| b.0 * b.1).sum(),
            sent_per_rank: vec![15, 15],
            collectives_per_rank: vec![2, 2],
            bins: bins
                .iter()
                .map(|&(s, c)| Bin {
                    size_bin_bytes: s,
                    count: c,
                    bytes: s * c,
                })
                .collect(),
            dominant_bin_bytes: bins.iter().max_by_key(|b| b.1).map(|b| b.0),
            dominant_mean_bytes: bins.iter().max_by_key(|b| b.1).map(|b| b.0),
            dominant_share: 1.0,
            from_barrier: true,
        }
    }

    fn cell(program: &str, stack: &str, t: Option<f64>, p: Option<Profile>) -> Cell {
        Cell {
            program: program.into(),
            stack: stack.into(),
            error: t.is_none().then(|| {
                "mpirun.openmpi -np 2 ./app '<script>alert(3)</script>' exited with <b>status</b> 1"
                    .into()
            }),
            failures: Vec::new(),
            time_s: t,
            time_source: t.map(|_| "program".into()),
            time_pattern: None,
            times_s: t.into_iter().collect(),
            wall_s: t.map(|t| t + 0.5),
            profile: p,
            micro: None,
            monitor_dirs: Vec::new(),
            notes: Vec::new(),
            run_states_ns: Vec::new(),
        }
    }

    /// A command-line program named `<script>…` (the name of a command after `--`), a failure
    /// that quotes its command line with a `<script>` argument, and other messages with markup:
    /// all come out as text, never as tags.
    fn hostile() -> Study {
        let evil = "<script>alert(1)</script>";
        Study {
            schema: STUDY_SCHEMA.into(),
            schema_version: STUDY_SCHEMA_VERSION,
            np: 2,
            repeat: 1,
            programs: vec!["halo".into(), evil.into()],
            stacks: vec!["ompi-shm".into(), "ompi-tcp".into()],
            wall_time_s: 3.0,
            oversubscribed: None,
            cells: vec![
                // One time of the launch, one of the program's own (found by the kit's pattern).
                Cell {
                    time_source: Some("wall".into()),
                    ..cell(
                        "halo",
                        "ompi-shm",
                        Some(0.001),
                        Some(profile(&[(8, 10), (64, 400)])),
                    )
                },
                Cell {
                    time_pattern: Some(r"`\btime (\S+) s\b` (kit)".into()),
                    ..cell(
                        "halo",
                        "ompi-tcp",
                        Some(0.2),
                        Some(profile(&[(8, 10), (64, 400)])),
                    )
                },
                cell(evil, "ompi-shm", Some(0.5), Some(profile(&[(1 << 20, 3)]))),
                cell(evil, "ompi-tcp", None, None),
            ],
            benches: vec![StackBench {
                stack: "ompi-shm".into(),
                error: Some("bench said \"<i>no</i>\"".into()),
                note: None,
                file: None,
                figures: vec![Micro {
                    size_bytes: 64,
                    latency_us: 0.5,
                    bandwidth_mb_per_s: 1000.0,
                    gap_us: 0.1,
                }],
            }],
            explanations: vec![Explanation {
                program: evil.into(),
                stacks_compared: 0,
                figure: None,
                spearman: None,
                latency_spearman: None,
                bandwidth_spearman: None,
                note: Some("<img src=x onerror=alert(2)>".into()),
            }],
            loop_study: None,
            sensitivity: Vec::new(),
            disturbance: Default::default(),
        }
    }

    /// The hostile study's program renamed to a name with markup, quotes and an ampersand,
    /// with a loop (one prediction and one emulation of it) and a failed sweep of it: the name
    /// reaches every kind of place the page puts a name.
    fn everywhere(evil: &str) -> Study {
        use crate::schema::{Emulation, LoopCell};
        let mut s = hostile();
        let old = s.programs[1].clone();
        s.programs[1] = evil.into();
        for c in s.cells.iter_mut().filter(|c| c.program == old) {
            c.program = evil.into();
        }
        s.explanations[0].program = evil.into();
        s.loop_study = Some(Loop {
            cells: vec![LoopCell {
                program: evil.into(),
                stack: "ompi-tcp".into(),
                measured_total_s: Some(0.01),
                predicted_total_s: Some(0.011),
                emulation: Some(Emulation {
                    total_s: Some(0.012),
                    ..Default::default()
                }),
                ..Default::default()
            }],
            ..Default::default()
        });
        s.sensitivity = vec![crate::schema::Sensitivity {
            program: evil.into(),
            stack: "ompi-shm".into(),
            error: Some("no sweep run".into()),
            sweep: None,
        }];
        s
    }

    #[test]
    fn a_hostile_program_name_is_escaped_in_every_place_it_appears() {
        let evil = r#"<script>alert(1)</script> "q" 'a' & co"#;
        let e = r#"&lt;script&gt;alert(1)&lt;/script&gt; &quot;q&quot; 'a' &amp; co"#;
        let h = page(&everywhere(evil));
        // Nothing of the name comes through raw: no tag, no closing quote, no bare ampersand.
        assert!(!h.contains(evil) && !h.contains("<script"), "{h}");
        assert!(!h.contains("\"q\"") && !h.contains("& co"), "{h}");
        // Table cells: the times table's row head, the explanations' and the loop's.
        assert_eq!(h.matches(&format!("<th>{e}</th>")).count(), 3, "{h}");
        // Data attributes: 2 cells of the times table, its section, the loop's row, figure
        // (a)'s 2 bars (one a failed mark) and figure (c)'s 2 points.
        assert_eq!(
            h.matches(&format!("data-program=\"{e}\"")).count(),
            8,
            "{h}"
        );
        // Titles: the section's heading, the tooltips of figure (a)'s bars and (c)'s points,
        // figure (b)'s title (in its <title> and drawn), its caption.
        assert!(h.contains(&format!("<h3>{e}</h3>")), "{h}");
        assert!(
            h.contains(&format!("<title>{e} on ompi-shm: 500 ms</title>")),
            "{h}"
        );
        assert!(
            h.contains(&format!("<title>{e} on ompi-tcp: failed</title>")),
            "{h}"
        );
        assert!(
            h.contains(&format!("<title>{e} on ompi-tcp: predicted 11.0 ms")),
            "{h}"
        );
        assert!(
            h.contains(&format!("<title>{e} on ompi-tcp: emulated 12.0 ms")),
            "{h}"
        );
        let signature = format!("{e}: messages per size bin (ompi-shm)");
        assert!(h.contains(&format!("<title>{signature}</title>")), "{h}");
        assert!(h.contains(&format!(">{signature}</text>")), "{h}");
        assert!(h.contains(&format!("(b) {e}'s signature")), "{h}");
        // The chart's labels: figure (a)'s slot under its bars.
        let a = &h[h.find("class=\"times\"").unwrap()..];
        let a = &a[..a.find("</svg>").unwrap()];
        assert!(a.contains(&format!(">{e}</text>")), "{a}");
        // Lists: the failures under the times table, the failed sweep.
        assert!(h.contains(&format!("<li>{e} on ompi-tcp: ")), "{h}");
        assert!(
            h.contains(&format!(
                "<p class=\"failed\">{e}: no sweep: no sweep run</p>"
            )),
            "{h}"
        );
        // And nowhere else: every occurrence is one of those counted above (3 + 8 + the
        // heading, 4 tooltips, 2 of the signature, its caption, the slot label, 2 list items).
        assert_eq!(h.matches(e).count(), 3 + 8 + 1 + 4 + 2 + 1 + 1 + 2, "{h}");
    }

    #[test]
    fn text_from_the_command_line_and_the_programs_is_escaped() {
        let h = page(&hostile());
        // The only tags are the page's own: no script, no img, no b or i from the study.
        assert!(!h.contains("<script"), "{h}");
        assert!(!h.contains("<img"), "{h}");
        assert!(!h.contains("<b>") && !h.contains("<i>"), "{h}");
        assert!(h.contains("&lt;script&gt;alert(1)&lt;/script&gt;"), "{h}");
        assert!(h.contains("&lt;img src=x onerror=alert(2)&gt;"), "{h}");
        assert!(
            h.contains(
                "./app '&lt;script&gt;alert(3)&lt;/script&gt;' exited with &lt;b&gt;status&lt;/b&gt; 1"
            ),
            "{h}"
        );
        assert!(
            h.contains("bench said &quot;&lt;i&gt;no&lt;/i&gt;&quot;"),
            "{h}"
        );
        // In attributes too (data-program, title).
        assert!(
            h.contains("data-program=\"&lt;script&gt;alert(1)&lt;/script&gt;\""),
            "{h}"
        );
    }

    #[test]
    fn the_page_has_the_tables_and_one_bar_per_value() {
        let h = page(&hostile());
        assert!(h.starts_with("<!DOCTYPE html>"));
        assert!(h.contains("default-src 'none'"));
        // (a) and one signature per program with messages.
        assert_eq!(h.matches("<svg ").count(), 3, "{h}");
        // (a): three times, one failed mark; (b): 2 + 1 bins.
        let a = &h[h.find("class=\"times\"").unwrap()..];
        let a = &a[..a.find("</svg>").unwrap()];
        assert_eq!(a.matches("<rect class=\"bar\"").count(), 3, "{a}");
        assert_eq!(a.matches("class=\"failed-mark\"").count(), 1, "{a}");
        assert_eq!(h.matches("<rect class=\"bar\"").count(), 6, "{h}");
        assert!(h.contains("data-size-bin=\"64\" data-count=\"400\""), "{h}");
        // 0.001 … 0.5 s spans more than a factor of 30: a log axis.
        assert!(a.contains("log10 scale"), "{a}");
        // Times in the unit that suits them, exact in an attribute.
        assert!(
            h.contains(
                "<td class=\"time\" data-program=\"halo\" data-stack=\"ompi-tcp\" data-seconds=\"0.2\" \
                 data-time-source=\"program\" title=\"time printed by the program, found by \
                 `\\btime (\\S+) s\\b` (kit)\">200 ms</td>"
            ),
            "{h}"
        );
        assert!(
            h.contains(
                "<td class=\"time\" data-program=\"halo\" data-stack=\"ompi-shm\" data-seconds=\"0.001\" \
                 data-time-source=\"wall\" title=\"wall time of the whole launch (no time printed \
                 by the program)\">1.00 ms<sup>wall</sup></td>"
            ),
            "{h}"
        );
        // The wall times of the program tables too (0.5 s more than each time); a time that
        // is the launch's wall time says so.
        assert!(h.contains("<td>1.00 ms (wall)</td><td>501 ms</td>"), "{h}");
        assert!(h.contains("<td>200 ms</td><td>700 ms</td>"), "{h}");
        assert!(!h.contains("0.200000") && !h.contains("0.001000"), "{h}");
        assert!(h.contains("<td class=\"messages\">410</td>"), "{h}");
        // No external resource: no src or href attribute at all.
        assert!(!h.contains(" src=\"") && !h.contains(" href="), "{h}");
    }

    #[test]
    fn the_loop_has_its_table_and_one_point_per_prediction_and_emulation() {
        use crate::schema::{Emulation, LoopCell, LoopStack};
        let evil = "<script>alert(1)</script>";
        let lc = |stack: &str, m: f64, p: Option<f64>, e: Option<f64>| LoopCell {
            program: evil.into(),
            stack: stack.into(),
            error: p
                .is_none()
                .then(|| "no LogGP parameters: <b>bench</b> failed".into()),
            window_from: Some("barrier".into()),
            measured_total_s: Some(m),
            measured_comm_s: Some(m / 2.0),
            measured_program_s: Some(m * 0.9),
            trace: None,
            piece_from_bytes: None,
            piece_to_bytes: None,
            predicted_total_s: p,
            predicted_comm_s: p.map(|p| p / 2.0),
            total_error_percent: p.map(|p| (p - m) / m * 100.0),
            comm_error_percent: None,
            emulation: e.map(|e| Emulation {
                o_ns: 4000.0,
                g_ns: 0.0,
                G_ns_per_byte: 0.1,
                L_ns: 0.0,
                clamped: vec!["L -150.000 ns → 0".into()],
                error: None,
                total_s: Some(e),
                program_s: None,
                total_error_percent: Some((e - m) / m * 100.0),
                program_error_percent: None,
                untouched_calls_percent: None,
                monitor_dirs: Vec::new(),
                run_states_ns: Vec::new(),
                ..Default::default()
            }),
            other_state: Vec::new(),
            ..Default::default()
        };
        let mut s = hostile();
        s.loop_study = Some(crate::rounds::tally(Loop {
            reference: Some("ompi-shm".into()),
            reference_rule: "ompi-shm: the least small-message cost".into(),
            loggp_sizes: "8,64".into(),
            loggp_iters: 10,
            eager_threshold_bytes: 65536,
            stacks: vec![LoopStack {
                error: Some("<i>no</i> commperf".into()),
                ..crate::fixtures::stack("ompi-tcp", None)
            }],
            cells: vec![
                lc("ompi-shm", 0.0002, Some(0.00021), None),
                lc("ompi-tcp", 0.01, Some(0.0095), Some(0.02)),
                lc("mpich-tcp", 0.01, None, Some(0.0105)),
            ],
            predictions_within_10_percent: 0,
            predictions: 0,
            emulations_within_10_percent: 0,
            emulations: 0,
            usual_state_ns: None,
            predictions_within_10_percent_usual: 0,
            predictions_usual: 0,
            emulations_within_10_percent_usual: 0,
            emulations_usual: 0,
            ..Default::default()
        }));
        let h = page(&s);
        assert!(
            !h.contains("<script") && !h.contains("<b>") && !h.contains("<i>"),
            "{h}"
        );
        assert!(h.contains("id=\"fig-loop\""), "{h}");
        assert!(
            h.contains("Within 10 %: 2 of 2 predictions, 1 of 2 emulations"),
            "{h}"
        );
        // No cell has a communication time's error: none is counted.
        assert!(
            h.contains("On the communication time: 0 of 0 predictions, 0 of 0 emulations."),
            "{h}"
        );
        let c = &h[h.find("class=\"loop\"").unwrap()..];
        let c = &c[..c.find("</svg>").unwrap()];
        assert_eq!(c.matches("<circle class=\"point\"").count(), 2, "{c}");
        assert_eq!(c.matches("<rect class=\"point\"").count(), 2, "{c}");
        assert!(c.contains("data-program=\"&lt;script&gt;alert(1)&lt;/script&gt;\""));
        // 0.18 … 20 ms spans more than a factor of 30: a log axis, on both sides.
        assert_eq!(c.matches("(log10 scale)").count(), 2, "{c}");
        // One colour per stack, in the order of the loop's stacks, then the cells'.
        assert!(c.contains("data-stack=\"ompi-shm\" data-kind=\"predicted\" data-measured-s=\"0.0002\" data-value-s=\"0.00021\" cx="), "{c}");
        assert!(c.contains("log10 scale"), "{c}");
        // The same figure as loop.svg.
        assert!(h.contains(&loop_svg(s.loop_study.as_ref().unwrap())));
        assert!(h.contains("clamped: L -150.000 ns → 0"), "{h}");
    }

    #[test]
    fn sensitivity_curves_are_figure_d_one_line_per_knob() {
        use commperf_emulate::sweep::{KnobSummary, SweepResult};
        let mut s = hostile();
        let knob = |k: &str, unit: &str, pts: Vec<(f64, f64)>| KnobSummary {
            knob: k.into(),
            unit: unit.into(),
            max_slowdown: pts.iter().map(|p| p.1).reduce(f64::max),
            slowdown_per_unit: None,
            points: pts,
        };
        s.sensitivity = vec![
            crate::schema::Sensitivity {
                program: "halo".into(),
                stack: "ompi-shm".into(),
                error: None,
                sweep: Some(SweepResult {
                    schema_version: 1,
                    command: vec!["mpirun".into(), "<b>halo</b>".into()],
                    repeat: 3,
                    statistic: Default::default(),
                    probe_reference_ns: None,
                    baseline_spread: Some(0.02),
                    emulator_cost: None,
                    settings: Vec::new(),
                    knobs: vec![
                        knob("L", "us", vec![(0.0, 0.0), (5.0, 0.1), (20.0, 0.4)]),
                        knob("o", "us", vec![(0.0, 0.0), (2.0, 0.3)]),
                    ],
                    most_sensitive: Some("o".into()),
                    notes: Vec::new(),
                    disturbance: Default::default(),
                    partial: false,
                }),
            },
            crate::schema::Sensitivity {
                program: "<script>x</script>".into(),
                stack: "ompi-shm".into(),
                error: Some("emulate sweep exited with <i>1</i>".into()),
                sweep: None,
            },
        ];
        let h = page(&s);
        let d = &h[h.find("id=\"sensitivity\"").expect("section (d)")..];
        assert_eq!(d.matches("<figure class=\"sensitivity\"").count(), 1, "{d}");
        assert_eq!(d.matches("<polyline").count(), 2, "{d}");
        // One point per tested value, the baseline's included.
        assert_eq!(d.matches("<circle class=\"point\"").count(), 5, "{d}");
        // The grey band is the baseline's noise, explained in the legend.
        assert!(d.contains("baseline noise ±2.0 %"), "{d}");
        assert!(d.contains("most sensitive to o."), "{d}");
        assert!(d.contains("&lt;b&gt;halo&lt;/b&gt;"), "{d}");
        assert!(
            d.contains("&lt;script&gt;x&lt;/script&gt;: no sweep: emulate sweep exited with &lt;i&gt;1&lt;/i&gt;"),
            "{d}"
        );
        assert!(!h.contains("<script") && !h.contains("<i>") && !h.contains("<b>"));
    }

    #[test]
    fn bars_grow_with_their_values() {
        let h = page(&hostile());
        let heights: Vec<f64> = h
            .split("<rect class=\"bar\"")
            .skip(1)
            .take(3)
            .map(|r| {
                let at = r.find("height=\"").unwrap() + 8;
                r[at..at + r[at..].find('"').unwrap()].parse().unwrap()
            })
            .collect();
        // halo shm 1 ms, halo tcp 200 ms, script shm 500 ms on a log axis 1 … 1000 ms: 0, 2.3
        // and 2.7 decades of 3 (1 px at least for the one on the low end).
        assert_eq!(heights[0], 1.0);
        let want = 200f64.log10() / 500f64.log10();
        assert!(
            (heights[1] / heights[2] - want).abs() < 0.002,
            "{heights:?}"
        );
        assert!(
            h.contains(">completion time, ms (log10 scale)</text>"),
            "{h}"
        );
    }

    #[test]
    fn the_page_cites_papers_and_its_figures_fill_the_column() {
        let h = page(&hostile());
        for internal in ["seed 00", "Seed 00", "issue 1", "../shared", "Table 5.1:"] {
            assert!(!h.contains(internal), "{internal} in the page");
        }
        assert!(
            h.contains(
                "Table 5.1 of N. S. Kutluğ, <cite>Performance Evaluation and Analysis of User \
                 Level Networking Protocols in Clusters</cite> (MS thesis, The Ohio State \
                 University, 2000)"
            ),
            "{h}"
        );
        // Every figure is drawn as wide as the page's column (72em, 1152 px at 16 px) and
        // scales down with it: a viewBox, and the style's 100 % at most.
        assert!(STYLE.contains("figure svg{display:block;max-width:100%;height:auto}"));
        let svgs: Vec<&str> = h.split("<svg ").skip(1).collect();
        assert_eq!(svgs.len(), 3);
        for s in svgs {
            let tag = &s[..s.find('>').unwrap()];
            assert!(tag.contains("viewBox=\"0 0 1100 "), "{tag}");
        }
    }
}
