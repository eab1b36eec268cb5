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
//! program's sensitivity curves. Every text that comes from the command line or from a program (names, errors,
//! notes, the MPI library's banner) is escaped. Deterministic: the same study gives the same
//! bytes.

use crate::schema::{Cell, Loop, Profile, Study};
use commperf_core::format_size;
use commperf_report::plot::{
    colour, Bar, BarGroup, Figure, Guide, LegendEntry, Marker, Panel, Point, Series, Stroke,
    Swatch, XScale, GREY,
};
use commperf_report::svg::esc;
use commperf_report::units;
use commperf_stats::axis::Axis;
use std::fmt::Write as _;

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

/// The whole page.
pub fn page(s: &Study) -> String {
    let mut o = String::new();
    let title = format!(
        "commperf app: {} program(s) × {} stack(s), {} ranks",
        s.programs.len(),
        s.stacks.len(),
        s.np
    );
    let _ = write!(
        o,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; \
         style-src 'unsafe-inline'\">\n<title>{}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n",
        esc(&title)
    );
    let _ = writeln!(o, "<h1>{}</h1>", esc(&title));
    let _ = writeln!(
        o,
        "<p class=\"note\">Each program run on each MPI stack under the monitor's interposer, \
         beside the stacks' micro-benchmark figures, as in Table 5.1 of N. S. Kutluğ, \
         <cite>Performance Evaluation and Analysis of User Level Networking Protocols in \
         Clusters</cite> (MS thesis, The Ohio State University, 2000). Completion time is the \
         median of {} run(s) of the program's own time where it reports one (its time pattern), \
         else of the launch's wall time (marked <sup>wall</sup>). Study wall time {} ({} {}).</p>",
        s.repeat,
        units::format_seconds(s.wall_time_s),
        esc(&s.schema),
        s.schema_version
    );
    if let Some(n) = &s.oversubscribed {
        let _ = writeln!(o, "<p class=\"note\">Note: {}</p>", esc(n));
    }
    times_table(&mut o, s);
    let _ = writeln!(o, "<figure id=\"fig-times\">");
    o += &times_svg(s);
    let _ = writeln!(
        o,
        "<figcaption>(a) Completion time per program across the stacks.</figcaption>\n</figure>"
    );
    explanations(&mut o, s);
    micro_table(&mut o, s);
    let _ = writeln!(
        o,
        "<h2 id=\"profiles\">Message profiles and signatures</h2>"
    );
    for (i, p) in s.programs.iter().enumerate() {
        program_section(&mut o, s, i, p);
    }
    if let Some(l) = &s.loop_study {
        loop_section(&mut o, l);
    }
    sensitivity(&mut o, s);
    let _ = writeln!(o, "</body>\n</html>");
    o
}

fn cell<'a>(s: &'a Study, program: &str, stack: &str) -> Option<&'a Cell> {
    s.cells
        .iter()
        .find(|c| c.program == program && c.stack == stack)
}

fn opt(v: Option<f64>, f: impl Fn(f64) -> String) -> String {
    v.map_or_else(|| "-".to_string(), f)
}

fn times_table(o: &mut String, s: &Study) {
    let _ = writeln!(
        o,
        "<h2 id=\"times\">Completion time per program and stack</h2>\n<table id=\"times-table\">"
    );
    let _ = write!(o, "<thead><tr><th>program</th>");
    for st in &s.stacks {
        let _ = write!(o, "<th>{}</th>", esc(st));
    }
    let _ = writeln!(o, "</tr></thead>\n<tbody>");
    for p in &s.programs {
        let _ = write!(o, "<tr><th>{}</th>", esc(p));
        for st in &s.stacks {
            let attrs = format!("data-program=\"{}\" data-stack=\"{}\"", esc(p), esc(st));
            match cell(s, p, st) {
                Some(
                    c @ Cell {
                        time_s: Some(t), ..
                    },
                ) => {
                    // The launch's wall time is marked: it holds mpirun's start-up, which a
                    // program's own time does not.
                    let (source, mark, title) = if c.time_source.as_deref() == Some("wall") {
                        (
                            "wall",
                            "<sup>wall</sup>",
                            "wall time of the whole launch (no time printed by the program)"
                                .to_string(),
                        )
                    } else {
                        let by = c.time_pattern.as_deref().unwrap_or("its report");
                        (
                            "program",
                            "",
                            format!("time printed by the program, found by {by}"),
                        )
                    };
                    let _ = write!(
                        o,
                        "<td class=\"time\" {attrs} data-seconds=\"{t}\" \
                         data-time-source=\"{source}\" title=\"{}\">{}{mark}</td>",
                        esc(&title),
                        units::format_seconds(*t)
                    );
                }
                Some(Cell { error: Some(e), .. }) => {
                    let _ = write!(
                        o,
                        "<td class=\"failed\" {attrs} title=\"{}\">FAILED</td>",
                        esc(e)
                    );
                }
                _ => {
                    let _ = write!(o, "<td class=\"failed\" {attrs}>-</td>");
                }
            }
        }
        let _ = writeln!(o, "</tr>");
    }
    let _ = writeln!(o, "</tbody>\n</table>");
    let failed: Vec<&Cell> = s.cells.iter().filter(|c| c.error.is_some()).collect();
    if !failed.is_empty() {
        let _ = writeln!(o, "<ul class=\"error\">");
        for c in failed {
            let _ = writeln!(
                o,
                "<li>{} on {}: {}</li>",
                esc(&c.program),
                esc(&c.stack),
                esc(c.error.as_deref().unwrap_or(""))
            );
        }
        let _ = writeln!(o, "</ul>");
    }
}

fn explanations(o: &mut String, s: &Study) {
    let _ = writeln!(
        o,
        "<h2 id=\"explanations\">Which micro-benchmark figure orders the stacks as the times do</h2>\n\
         <p class=\"note\">Spearman rank correlation between a figure's cost (latency; 1 / \
         bandwidth) at the program's dominant message size and its completion times over the \
         stacks (with two stacks ρ is ±1 by construction).</p>\n\
         <table id=\"explanations-table\"><thead><tr><th>program</th><th class=\"text\">figure</th><th>ρ</th>\
         <th>latency ρ</th><th>bandwidth ρ</th><th>stacks compared</th><th class=\"text\">note</th></tr></thead>\n<tbody>"
    );
    let r = |v: Option<f64>| opt(v, |v| format!("{v:+.2}"));
    for e in &s.explanations {
        let _ = writeln!(
            o,
            "<tr><th>{}</th><td class=\"text\">{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>\
             <td class=\"text\">{}</td></tr>",
            esc(&e.program),
            esc(e.figure.as_deref().unwrap_or("none")),
            r(e.spearman),
            r(e.latency_spearman),
            r(e.bandwidth_spearman),
            e.stacks_compared,
            esc(e.note.as_deref().unwrap_or(""))
        );
    }
    let _ = writeln!(o, "</tbody>\n</table>");
}

fn micro_table(o: &mut String, s: &Study) {
    let _ = writeln!(
        o,
        "<h2 id=\"micro\">Micro-benchmark figures per stack</h2>\n<p class=\"note\">MPI layer, 2 \
         ranks under the stack's launcher: latency p50 (<code>bench latency</code>), streaming \
         bandwidth and gap g = 1 / message rate (<code>bench bw</code>), at the programs' \
         dominant message sizes.</p>"
    );
    if s.benches.is_empty() {
        let _ = writeln!(
            o,
            "<p class=\"note\">No micro-benchmarks in this study (--no-bench).</p>"
        );
        return;
    }
    let _ = writeln!(
        o,
        "<table id=\"micro-table\"><thead><tr><th>stack</th><th>size</th><th>latency µs</th>\
         <th>bandwidth MB/s</th><th>g µs</th><th class=\"text\">dominant size of</th></tr></thead>\n<tbody>"
    );
    for b in &s.benches {
        if let Some(e) = &b.error {
            let _ = writeln!(
                o,
                "<tr><th>{}</th><td class=\"text error\" colspan=\"5\">{}</td></tr>",
                esc(&b.stack),
                esc(e)
            );
        }
        for m in &b.figures {
            let users: Vec<String> = s
                .cells
                .iter()
                .filter(|c| c.stack == b.stack)
                .filter(|c| {
                    c.profile
                        .as_ref()
                        .and_then(|p| p.dominant_mean_bytes)
                        .is_some_and(|d| d == m.size_bytes)
                })
                .map(|c| esc(&c.program))
                .collect();
            let _ = writeln!(
                o,
                "<tr><th>{}</th><td>{}</td><td>{:.2}</td><td>{:.1}</td><td>{:.2}</td>\
                 <td class=\"text\">{}</td></tr>",
                esc(&b.stack),
                esc(&format_size(m.size_bytes)),
                m.latency_us,
                m.bandwidth_mb_per_s,
                m.gap_us,
                users.join(", ")
            );
        }
        if let Some(n) = &b.note {
            let _ = writeln!(
                o,
                "<tr><th>{}</th><td class=\"text note\" colspan=\"5\">{}</td></tr>",
                esc(&b.stack),
                esc(n)
            );
        }
    }
    let _ = writeln!(o, "</tbody>\n</table>");
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

fn program_section(o: &mut String, s: &Study, i: usize, p: &str) {
    let _ = writeln!(
        o,
        "<section class=\"program\" id=\"program-{i}\" data-program=\"{}\">\n<h3>{}</h3>",
        esc(p),
        esc(p)
    );
    if let Some(e) = s.explanations.iter().find(|e| e.program == p) {
        let text = match (&e.figure, e.spearman) {
            (Some(f), Some(r)) => format!(
                "{f} orders the stacks as the times do (ρ = {r:+.2} over {} stacks{})",
                e.stacks_compared,
                if r < 0.8 { ", weak" } else { "" }
            ),
            _ => format!("no figure: {}", e.note.as_deref().unwrap_or("")),
        };
        let _ = writeln!(o, "<p class=\"explanation\">{}</p>", esc(&text));
    }
    let _ = writeln!(
        o,
        "<table class=\"profile\"><thead><tr><th>stack</th><th>time</th><th>wall</th>\
         <th>messages</th><th>bytes</th><th>sent per rank</th><th>collectives per rank</th>\
         <th>dominant size</th><th>latency µs</th><th>bandwidth MB/s</th><th>g µs</th>\
         <th class=\"text\">MPI library</th></tr></thead>\n<tbody>"
    );
    let cells: Vec<&Cell> = s.stacks.iter().filter_map(|st| cell(s, p, st)).collect();
    for c in &cells {
        let _ = write!(o, "<tr><th>{}</th>", esc(&c.stack));
        if let Some(e) = &c.error {
            let _ = writeln!(
                o,
                "<td class=\"failed text\" colspan=\"11\">FAILED: {}</td></tr>",
                esc(e)
            );
            continue;
        }
        let _ = write!(
            o,
            "<td>{}</td><td>{}</td>",
            opt(c.time_s, |t| if c.time_source.as_deref() == Some("wall") {
                format!("{} (wall)", units::format_seconds(t))
            } else {
                units::format_seconds(t)
            }),
            opt(c.wall_s, units::format_seconds)
        );
        match &c.profile {
            Some(pr) => {
                let _ = write!(
                    o,
                    "<td class=\"messages\">{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>",
                    pr.messages,
                    pr.bytes,
                    join(&pr.sent_per_rank),
                    join(&pr.collectives_per_rank),
                    esc(&dominant(pr))
                );
            }
            None => {
                let _ = write!(o, "{}", "<td>-</td>".repeat(5));
            }
        }
        match &c.micro {
            Some(m) => {
                let _ = write!(
                    o,
                    "<td>{:.2}</td><td>{:.1}</td><td>{:.2}</td>",
                    m.latency_us, m.bandwidth_mb_per_s, m.gap_us
                );
            }
            None => {
                let _ = write!(o, "{}", "<td>-</td>".repeat(3));
            }
        }
        let lib = c.profile.as_ref().map_or("", |p| p.mpi_library.as_str());
        let _ = writeln!(o, "<td class=\"text\">{}</td></tr>", esc(lib));
    }
    let _ = writeln!(o, "</tbody>\n</table>");
    let notes: Vec<String> = cells
        .iter()
        .flat_map(|c| c.notes.iter().map(move |n| format!("{}: {n}", c.stack)))
        .collect();
    if !notes.is_empty() {
        let _ = writeln!(o, "<ul class=\"note\">");
        for n in notes {
            let _ = writeln!(o, "<li>{}</li>", esc(&n));
        }
        let _ = writeln!(o, "</ul>");
    }
    // The signature: from the first stack with a profile; the others are said to match or not.
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
            let _ = writeln!(o, "<figure class=\"signature\">");
            o.push_str(&signature_svg(p, stack, pr));
            let same = if differ.is_empty() {
                "the same on every stack with a profile".to_string()
            } else {
                format!("different on {}", differ.join(", "))
            };
            let _ = writeln!(
                o,
                "<figcaption>(b) {}'s signature: point-to-point messages per size bin, all ranks, \
                 monitored on {} ({}).</figcaption>\n</figure>",
                esc(p),
                esc(stack),
                esc(&same)
            );
        }
        Some(_) => {
            let _ = writeln!(
                o,
                "<p class=\"note\">No point-to-point messages: no signature to draw.</p>"
            );
        }
        None => {
            let _ = writeln!(
                o,
                "<p class=\"note\">No run with a message profile: no signature to draw.</p>"
            );
        }
    }
    let _ = writeln!(o, "</section>");
}

/// An SVG element of `w` × `h` with a white background and a centred title.
/// Figure (d), per program: its sensitivity curves from `--sweep` (the sweep's own SVG, whose
/// text it escapes itself).
fn sensitivity(o: &mut String, s: &Study) {
    let Some(first) = s.sensitivity.first() else {
        return;
    };
    let _ = writeln!(
        o,
        "<h2 id=\"sensitivity\">Sensitivity to the LogGP knobs (emulate sweep on {})</h2>\n\
         <p class=\"note\">Each program run with one knob raised at a time, settings \
         interleaved over the rounds, as R. P. Martin measured applications in <cite>A \
         Systematic Characterization of Application Sensitivity to Network Performance</cite> \
         (PhD thesis, University of California, Berkeley, 1999); slowdown = median run time \
         over the baseline's, the baseline's own spread shaded grey as the noise band.</p>",
        esc(&first.stack)
    );
    for x in &s.sensitivity {
        match &x.sweep {
            Some(r) => {
                let _ = writeln!(
                    o,
                    "<figure class=\"sensitivity\" data-program=\"{}\">",
                    esc(&x.program)
                );
                o.push_str(&r.render_svg());
                let _ = writeln!(
                    o,
                    "<figcaption>(d) {}: slowdown against each knob on {}; most sensitive to \
                     {}.</figcaption>\n</figure>",
                    esc(&x.program),
                    esc(&x.stack),
                    esc(r
                        .most_sensitive
                        .as_deref()
                        .unwrap_or("no knob beyond the noise band"))
                );
            }
            None => {
                let _ = writeln!(
                    o,
                    "<p class=\"failed\">{}: no sweep: {}</p>",
                    esc(&x.program),
                    esc(x.error.as_deref().unwrap_or(""))
                );
            }
        }
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
                let attrs = format!("data-program=\"{}\" data-stack=\"{}\"", esc(p), esc(st));
                match cell(s, p, st).and_then(|c| c.time_s) {
                    Some(t) => Bar {
                        value: Some(t / per),
                        colour: colour(si),
                        attrs: format!("{attrs} data-seconds=\"{t}\""),
                        tip: format!("{p} on {st}: {}", units::format_seconds(t)),
                    },
                    None => Bar {
                        value: None,
                        colour: colour(si),
                        attrs,
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
                attrs: format!(
                    "data-size-bin=\"{}\" data-count=\"{}\"",
                    b.size_bin_bytes, b.count
                ),
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
/// The loop: the stacks' LogGP parameters, the table of measured, predicted and emulated
/// times, and figure (c).
fn loop_section(o: &mut String, l: &Loop) {
    let _ = writeln!(
        o,
        "<h2 id=\"loop\">The loop: predicted and emulated against measured</h2>\n\
         <p class=\"note\">Reference stack {}. Each program's monitored run on it is replayed \
         (LogGP model) with every stack's parameters, and run under the emulation knobs set to \
         each other stack's parameter differences. Times are from the barrier before the timed \
         loop (the kit's programs; any other from MPI_Init) to the last MPI call (longest \
         rank); comm is the time inside MPI calls, mean over the ranks. Within 10 %: {} of {} \
         predictions, {} of {} emulations{}. On the communication time: {} of {} predictions, \
         {} of {} emulations{}.</p>",
        esc(&l.reference_rule),
        l.predictions_within_10_percent,
        l.predictions,
        l.emulations_within_10_percent,
        l.emulations,
        esc(&crate::table::usual_counts(l)),
        l.comm_predictions_within_10_percent,
        l.comm_predictions,
        l.comm_emulations_within_10_percent,
        l.comm_emulations,
        esc(&crate::table::usual_comm_counts(l))
    );
    let _ = writeln!(
        o,
        "<table id=\"loop-params\"><thead><tr><th>stack</th><th>L ns</th><th>o_s ns</th>\
         <th>o_r ns</th><th>g ns</th><th>G ns/B</th><th>overlap ns</th><th>send wait ns</th>\
         <th>duplex ns</th><th>o_s + L + o_r µs</th><th class=\"text\">note</th></tr></thead>\n<tbody>"
    );
    for st in &l.stacks {
        match &st.params {
            Some(p) => {
                let _ = writeln!(
                    o,
                    "<tr><th>{}</th><td>{:.0}</td><td>{:.0}</td><td>{:.0}</td><td>{:.0}</td>\
                     <td>{:.4}</td><td>{:.0}</td><td>{:.0}</td><td>{:.0}</td><td>{:.2}</td>\
                     <td class=\"text\">{}</td></tr>",
                    esc(&st.stack),
                    p.L_ns,
                    p.o_s_ns,
                    p.o_r_ns,
                    p.g_ns,
                    p.G_ns_per_byte,
                    p.overlap_ns,
                    p.send_wait_ns,
                    p.duplex_ns,
                    p.small_message_ns / 1e3,
                    esc(&st.notes.join("; "))
                );
            }
            None => {
                let _ = writeln!(
                    o,
                    "<tr><th>{}</th><td class=\"failed\" colspan=\"9\">-</td>\
                     <td class=\"text error\">{}</td></tr>",
                    esc(&st.stack),
                    esc(st.error.as_deref().unwrap_or(""))
                );
            }
        }
    }
    let _ = writeln!(o, "</tbody>\n</table>");
    let ms = |v: Option<f64>| opt(v, units::format_seconds);
    let pct = |v: Option<f64>| opt(v, |x| format!("{x:+.1} %"));
    let _ = writeln!(
        o,
        "<table id=\"loop-table\"><thead><tr><th>program</th><th class=\"text\">stack</th>\
         <th>measured</th><th>predicted</th><th>error</th><th>comm</th><th>predicted comm</th>\
         <th>error</th><th>emulated comm</th><th>error</th><th>emulated</th><th>error</th>\
         <th class=\"text\">knobs</th>\
         <th class=\"text\">note</th></tr></thead>\n<tbody>"
    );
    for c in &l.cells {
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
        let mut notes: Vec<String> = c.error.iter().cloned().collect();
        if let Some(e) = e {
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
        let _ = writeln!(
            o,
            "<tr data-program=\"{}\" data-stack=\"{}\"><th>{}</th><td class=\"text\">{}</td>\
             <td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>\
             <td>{}</td><td>{}</td><td>{}</td><td class=\"text\">{}</td><td class=\"text\">{}</td></tr>",
            esc(&c.program),
            esc(&c.stack),
            esc(&c.program),
            esc(&c.stack),
            ms(c.measured_total_s),
            ms(c.predicted_total_s),
            pct(c.total_error_percent),
            ms(c.measured_comm_s),
            ms(c.predicted_comm_s),
            pct(c.comm_error_percent),
            ms(e.and_then(|e| e.comm_s)),
            pct(e.and_then(|e| e.comm_error_percent)),
            ms(e.and_then(|e| e.total_s)),
            pct(e.and_then(|e| e.total_error_percent)),
            esc(&knobs),
            esc(&notes.join("; "))
        );
    }
    let _ = writeln!(o, "</tbody>\n</table>");
    let _ = writeln!(o, "<figure id=\"fig-loop\">");
    *o += &loop_svg(l);
    let _ = writeln!(
        o,
        "<figcaption>(c) Predicted (circles) and emulated (squares) against measured time, one \
         colour per stack; the diagonal is a perfect prediction, the band ±10 %.</figcaption>\n\
         </figure>"
    );
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
                .attrs(format!("data-stack=\"{}\" data-kind=\"{kind}\"", esc(st)));
            for &(_, program, stack, m, v, _) in points.iter().filter(|p| p.0 == si && p.5 == kind)
            {
                let tip = format!(
                    "{program} on {stack}: {kind} {}, measured {} ({:+.1} %)",
                    units::format_seconds(v),
                    units::format_seconds(m),
                    (v - m) / m * 100.0
                );
                let attrs = format!(
                    "data-program=\"{}\" data-stack=\"{}\" data-kind=\"{kind}\" data-measured-s=\"{m}\" data-value-s=\"{v}\"",
                    esc(program),
                    esc(stack)
                );
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
    for (si, st) in stacks.iter().enumerate() {
        f.legend.push(LegendEntry {
            label: st.to_string(),
            colour: colour(si),
            swatch: Swatch::Box,
        });
    }
    for (label, marker) in [
        ("predicted", Marker::Circle),
        ("emulated", Marker::OpenSquare),
    ] {
        f.legend.push(LegendEntry {
            label: label.into(),
            colour: GREY,
            swatch: Swatch::Line(Stroke::None, marker),
        });
    }
    f.legend.push(LegendEntry {
        label: "y = x, and ±10 % dashed".into(),
        colour: GREY,
        swatch: Swatch::Rule(Stroke::Solid),
    });
    f.svg()
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
