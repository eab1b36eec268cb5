//! The chart layer and its figures, checked on the SVG they write: markers where the scales
//! put them (computed here from the axes' ends the SVG draws), one group per series, a marker
//! for a series of one point, the `≤ 0` baseline of a log axis, the legend.

use super::*;
use commperf_core::{
    Benchmark, FlatRow, Machine, Mode, Options, Placement, Report, Row, TimerInfo, TransportKind,
    SCHEMA_VERSION,
};

/// One element of an SVG: its name and attributes (and the text up to the next tag).
#[derive(Debug, Clone)]
struct Tag {
    name: String,
    attrs: Vec<(String, String)>,
    text: String,
}

impl Tag {
    fn get(&self, k: &str) -> Option<&str> {
        self.attrs
            .iter()
            .find(|(a, _)| a == k)
            .map(|(_, v)| v.as_str())
    }

    fn num(&self, k: &str) -> f64 {
        self.get(k)
            .unwrap_or_else(|| panic!("no {k} in {self:?}"))
            .parse()
            .unwrap()
    }
}

/// Every opening tag of `svg`, in order.
fn tags(svg: &str) -> Vec<Tag> {
    let mut out = Vec::new();
    for part in svg.split('<').skip(1) {
        if part.starts_with('/') || part.starts_with('?') {
            continue;
        }
        let (inside, text) = part.split_once('>').unwrap_or((part, ""));
        let inside = inside.trim_end_matches('/');
        let name: String = inside.chars().take_while(|c| !c.is_whitespace()).collect();
        let mut attrs = Vec::new();
        let mut rest = &inside[name.len()..];
        while let Some(eq) = rest.find("=\"") {
            let key = rest[..eq].trim().to_string();
            let after = &rest[eq + 2..];
            let end = after.find('"').unwrap();
            attrs.push((key, after[..end].to_string()));
            rest = &after[end + 1..];
        }
        out.push(Tag {
            name,
            attrs,
            text: text.to_string(),
        });
    }
    out
}

/// The plot areas, from the axis lines each panel draws: (left, top, right, bottom).
fn plot_areas(svg: &str) -> Vec<(f64, f64, f64, f64)> {
    let t = tags(svg);
    let mut out = Vec::new();
    for (i, g) in t.iter().enumerate() {
        if g.name == "g" && g.get("stroke") == Some("#000000") {
            let (x, y) = (&t[i + 1], &t[i + 2]);
            out.push((x.num("x1"), y.num("y1"), x.num("x2"), x.num("y2")));
        }
    }
    out
}

/// The markers of the series, each with its series group's attributes added to its own.
fn markers(svg: &str) -> Vec<Tag> {
    let mut group: Vec<(String, String)> = Vec::new();
    let mut out = Vec::new();
    for t in tags(svg) {
        if t.get("class") == Some("series") {
            group = t.attrs.clone();
        } else if t.get("class") == Some("point") {
            let mut m = t.clone();
            m.attrs.extend(
                group
                    .iter()
                    .filter(|(k, _)| k.starts_with("data-"))
                    .cloned(),
            );
            out.push(m);
        }
    }
    out
}

fn marker_at<'a>(ms: &'a [Tag], attrs: &[(&str, &str)]) -> &'a Tag {
    let found: Vec<&Tag> = ms
        .iter()
        .filter(|m| attrs.iter().all(|(k, v)| m.get(k) == Some(*v)))
        .collect();
    assert_eq!(found.len(), 1, "{attrs:?}: {found:?}");
    found[0]
}

/// The centre of a marker (a circle's, or a square's).
fn centre(m: &Tag) -> (f64, f64) {
    match m.name.as_str() {
        "circle" => (m.num("cx"), m.num("cy")),
        _ => (
            m.num("x") + m.num("width") / 2.0,
            m.num("y") + m.num("height") / 2.0,
        ),
    }
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 0.06
}

fn report(rows: Vec<Row>) -> Report {
    Report {
        schema_version: SCHEMA_VERSION,
        tool: "commperf 0.1.0".to_string(),
        started_unix_s: 1_700_000_000,
        machine: Machine {
            hostname: "node1".to_string(),
            cpu_model: "cpu".to_string(),
            cores: 2,
            kernel: "6.8".to_string(),
            timer: TimerInfo {
                source: "tsc".to_string(),
                tsc_ghz: Some(2.45),
                cost_ns: 9.8,
            },
        },
        options: Options {
            benchmarks: vec![Benchmark::Latency, Benchmark::Bw],
            transports: vec![TransportKind::Shm],
            modes: vec![Mode::Poll],
            sizes_bytes: vec![1],
            iterations: None,
            warmup: None,
            window: 64,
            validate: false,
            launcher: "local".to_string(),
            peer: None,
            mpi_library: None,
            mpi_calls: None,
        },
        placement: Placement::default(),
        limits: None,
        results: rows,
        disturbance: Default::default(),
        partial: false,
    }
}

fn lat(t: TransportKind, size: u64, p50: f64, p99: f64) -> Row {
    let mut r = FlatRow::new(Benchmark::Latency, t, Mode::Poll, size);
    (r.p50_us, r.p99_us) = (Some(p50), Some(p99));
    Row::try_from(r).unwrap()
}

fn bw(t: TransportKind, size: u64, mb: f64) -> Row {
    let mut r = FlatRow::new(Benchmark::Bw, t, Mode::Poll, size);
    r.mb_per_s = Some(mb);
    Row::try_from(r).unwrap()
}

#[test]
fn bench_points_land_where_the_log_scales_put_them() {
    // Latency at 1, 64 and 4096 B (p50 0.1, 1 and 100 µs; p99 twice that) over shm; bandwidth
    // over tcp at 64 and 4096 B.
    let rep = report(vec![
        lat(TransportKind::Shm, 1, 0.1, 0.2),
        lat(TransportKind::Shm, 64, 1.0, 2.0),
        lat(TransportKind::Shm, 4096, 100.0, 200.0),
        bw(TransportKind::Tcp, 64, 10.0),
        bw(TransportKind::Tcp, 4096, 1000.0),
    ]);
    let svg = bench_svg(&rep).unwrap();
    assert!(
        svg.starts_with("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg "),
        "{svg}"
    );
    let areas = plot_areas(&svg);
    assert_eq!(areas.len(), 2, "a latency and a bandwidth panel");
    let ms = markers(&svg);
    // Latency: sizes 2^0 … 2^12 across the panel, so 64 B = 2^6 is in the middle; values on
    // decades 0.1 … 1000 µs (the p99 of 200 µs included), 1 µs a quarter of the way up and
    // 100 µs three quarters.
    let (l, t, r, b) = areas[0];
    let at = |size: &str| {
        centre(marker_at(
            &ms,
            &[("data-panel", "latency"), ("data-size", size)],
        ))
    };
    for (size, x, y) in [
        ("1", l, b),
        ("64", (l + r) / 2.0, b - (b - t) / 4.0),
        ("4096", r, b - 3.0 * (b - t) / 4.0),
    ] {
        let (cx, cy) = at(size);
        assert!(
            close(cx, x) && close(cy, y),
            "{size}: ({cx}, {cy}) not ({x}, {y})"
        );
    }
    // Bandwidth: sizes 2^6 … 2^12, values 10 … 1000 MB/s on two decades.
    let (l, t, r, b) = areas[1];
    let m = marker_at(&ms, &[("data-panel", "bandwidth"), ("data-size", "64")]);
    let m2 = marker_at(&ms, &[("data-panel", "bandwidth"), ("data-size", "4096")]);
    assert_eq!(m.name, "rect", "bandwidth points are squares");
    assert!(close(centre(m).0, l) && close(centre(m).1, b), "{m:?}");
    assert!(close(centre(m2).0, r) && close(centre(m2).1, t), "{m2:?}");
    // The axes say so.
    assert!(
        svg.contains(">one-way latency p50, µs (log10 scale)</text>"),
        "{svg}"
    );
    assert!(
        svg.contains(">message size, bytes (log2 scale)</text>"),
        "{svg}"
    );
    assert!(
        svg.contains(">bandwidth, MB/s (log10 scale)</text>"),
        "{svg}"
    );
    // The p50 … p99 range is one shaded polygon, along the p99s and back along the p50s.
    let band: Vec<Tag> = tags(&svg)
        .into_iter()
        .filter(|t| t.name == "polygon")
        .collect();
    assert_eq!(band.len(), 1);
    let (l, t, r, b) = areas[0];
    let d = (b - t) / 4.0;
    let pts: Vec<(f64, f64)> = band[0]
        .get("points")
        .unwrap()
        .split(' ')
        .map(|p| {
            let (x, y) = p.split_once(',').unwrap();
            (x.parse().unwrap(), y.parse().unwrap())
        })
        .collect();
    let p99_1 = b - 2f64.log10() * d; // 0.2 µs
    assert_eq!(pts.len(), 6);
    assert!(close(pts[0].0, l) && close(pts[0].1, p99_1), "{pts:?}");
    assert!(
        close(pts[2].0, r) && close(pts[5].0, l) && close(pts[5].1, b),
        "{pts:?}"
    );
}

#[test]
fn one_group_and_one_legend_entry_per_series_of_the_file() {
    let rep = report(vec![
        lat(TransportKind::Shm, 8, 0.2, 0.3),
        lat(TransportKind::Tcp, 8, 5.0, 9.0),
        bw(TransportKind::Shm, 8, 100.0),
        lat(TransportKind::Shm, 64, 0.3, 0.5),
        lat(TransportKind::Tcp, 64, 6.0, 9.0),
        bw(TransportKind::Shm, 64, 900.0),
    ]);
    let svg = bench_svg(&rep).unwrap();
    let groups: Vec<Tag> = tags(&svg)
        .into_iter()
        .filter(|t| t.get("class") == Some("series"))
        .collect();
    let keys: Vec<(&str, &str, &str)> = groups
        .iter()
        .map(|g| {
            (
                g.get("data-panel").unwrap(),
                g.get("data-benchmark").unwrap(),
                g.get("data-transport").unwrap(),
            )
        })
        .collect();
    assert_eq!(
        keys,
        [
            ("latency", "latency", "shm"),
            ("latency", "latency", "tcp"),
            ("bandwidth", "bw", "shm")
        ]
    );
    assert_eq!(svg.matches("<polyline ").count(), 3);
    assert_eq!(markers(&svg).len(), 6, "a marker per row");
    let legend = svg.split("<g class=\"legend\">").nth(1).unwrap();
    let labels: Vec<String> = tags(legend)
        .into_iter()
        .filter(|t| t.name == "text")
        .map(|t| t.text)
        .collect();
    assert_eq!(
        labels,
        [
            "latency shm poll",
            "latency tcp poll",
            "bw shm poll",
            "shaded: p50 to p99"
        ]
    );
    // Each line has its own colour.
    let colours: Vec<String> = tags(&svg)
        .iter()
        .filter(|t| t.name == "polyline")
        .map(|t| t.get("stroke").unwrap().to_string())
        .collect();
    assert_eq!(colours, [COLOURS[0], COLOURS[1], COLOURS[2]]);
}

#[test]
fn one_size_draws_a_marker_in_the_middle_not_an_empty_line() {
    let rep = report(vec![
        lat(TransportKind::Shm, 64, 0.5, 0.9),
        lat(TransportKind::Tcp, 64, 6.0, 9.0),
    ]);
    let svg = bench_svg(&rep).unwrap();
    assert_eq!(svg.matches("<polyline").count(), 0, "no line of one point");
    let ms = markers(&svg);
    assert_eq!(ms.len(), 2, "{svg}");
    let (l, _, r, _) = plot_areas(&svg)[0];
    for m in &ms {
        // 32 … 128 B: 64 B in the middle.
        assert!(close(centre(m).0, (l + r) / 2.0), "{m:?}");
        assert_eq!(m.name, "circle");
        assert_eq!(m.num("r"), MARKER_R);
    }
    // The p50 … p99 range of one point: a short bar, not a polygon of no area.
    assert_eq!(svg.matches("<rect class=\"band\"").count(), 2, "{svg}");
    // Only the sizes that have a place are labelled: 32, 64, 128.
    let labels: Vec<String> = tags(&svg)
        .into_iter()
        .filter(|t| t.name == "text")
        .map(|t| t.text)
        .collect();
    assert!(labels.iter().any(|l| l == "64"), "{labels:?}");
}

#[test]
fn an_interrupted_run_says_so_under_its_figure() {
    let mut rep = report(vec![lat(TransportKind::Shm, 64, 0.5, 0.9)]);
    let note = "Partial results: the run was interrupted";
    assert!(!bench_svg(&rep).unwrap().contains(note));
    rep.partial = true;
    assert!(bench_svg(&rep).unwrap().contains(note));
}

#[test]
fn rows_that_repeat_a_size_are_left_out_and_named() {
    let mut rows = vec![lat(TransportKind::Shm, 64, 0.5, 0.9)];
    for k in [1, 2, 4] {
        let mut r = FlatRow::new(Benchmark::Conns, TransportKind::Shm, Mode::Poll, 16);
        r.connections = Some(k);
        r.p50_us = Some(0.3 * k as f64);
        rows.push(Row::try_from(r).unwrap());
    }
    let svg = bench_svg(&report(rows.clone())).unwrap();
    assert_eq!(markers(&svg).len(), 1);
    assert!(
        svg.contains(
            ">Not drawn (their rows vary something else than the message size): conns shm poll.</text>"
        ),
        "{svg}"
    );
    // Nothing else: an error that names what was left out.
    let e = bench_svg(&report(rows[1..].to_vec())).unwrap_err();
    assert_eq!(e, PlotError::NoSizeSeries("conns shm poll".into()));
    assert!(e.to_string().ends_with("; left out: conns shm poll"), "{e}");
    assert_eq!(
        bench_svg(&report(Vec::new())),
        Err(PlotError::NoSizeSeries(String::new()))
    );
    // The svg format still gives a figure, which says why it is empty.
    let empty = crate::render(&report(Vec::new()), crate::Format::Svg);
    assert!(empty.contains("no latency or bandwidth results"), "{empty}");
    assert!(!empty.contains("class=\"point\""));
}

#[test]
fn a_log_axis_draws_values_at_or_below_zero_on_a_baseline_of_their_own() {
    // o_s of 0.02, -0.5, 1 and 300 µs: log10 decades 0.01 … 1000 above a `≤ 0` baseline.
    let mut rows = Vec::new();
    for (size, os) in [(1, 0.02), (2, -0.5), (4, 1.0), (8, 300.0)] {
        let mut r = FlatRow::new(Benchmark::Loggp, TransportKind::Shm, Mode::Poll, size);
        r.o_s_us = Some(os);
        rows.push(r);
    }
    let rows = rows
        .into_iter()
        .map(|r| Row::try_from(r).unwrap())
        .collect();
    let svg = loggp_svg(&report(rows)).unwrap();
    assert!(svg.contains(">overhead, µs (log10 scale)</text>"), "{svg}");
    let (l, t, r, b) = plot_areas(&svg)[0];
    // The lowest decade sits NONPOSITIVE_GAP above the x axis; 5 decades up to the top.
    let low = b - NONPOSITIVE_GAP;
    let d = (low - t) / 5.0;
    let ms = markers(&svg);
    let x = |p: f64| l + p / 3.0 * (r - l);
    for (size, want) in [
        ("1", (x(0.0), low - 2f64.log10() * d)),
        ("2", (x(1.0), b)),
        ("4", (x(2.0), low - 2.0 * d)),
        ("8", (x(3.0), t + (1.0 - 3f64.log10()) * d)),
    ] {
        let c = centre(marker_at(&ms, &[("data-size", size)]));
        assert!(
            close(c.0, want.0) && close(c.1, want.1),
            "{size}: {c:?} not {want:?}"
        );
    }
    let texts: Vec<Tag> = tags(&svg)
        .into_iter()
        .filter(|t| t.name == "text")
        .collect();
    let baseline = texts.iter().find(|t| t.text == "≤ 0").expect("a ≤ 0 label");
    assert!(close(baseline.num("y"), b + 4.0), "{baseline:?}");
    let one = (texts.iter())
        .find(|t| t.text == "1" && close(t.num("x"), l - 8.0))
        .unwrap();
    assert!(close(one.num("y"), low - 2.0 * d + 4.0), "{one:?}");
    // No zero line on a log axis (there is no zero on it).
    assert!(!svg.contains(r##"stroke="#808080""##), "{svg}");
}

#[test]
fn a_linear_axis_below_zero_draws_its_zero_line() {
    // o_s -0.5 … 3 µs: linear from -1 to 3, 0 a quarter of the way up.
    let mut rows = Vec::new();
    for (size, os) in [(4, -0.5), (64, 3.0)] {
        let mut r = FlatRow::new(Benchmark::Loggp, TransportKind::Tcp, Mode::Block, size);
        r.o_s_us = Some(os);
        rows.push(r);
    }
    let rows = rows
        .into_iter()
        .map(|r| Row::try_from(r).unwrap())
        .collect();
    let svg = loggp_svg(&report(rows)).unwrap();
    let (l, t, r, b) = plot_areas(&svg)[0];
    let zero = tags(&svg)
        .into_iter()
        .find(|t| t.get("stroke") == Some("#808080"))
        .expect("a zero line");
    assert!(close(zero.num("y1"), b - (b - t) / 4.0), "{zero:?}");
    assert!(close(zero.num("x1"), l) && close(zero.num("x2"), r));
    let g = tags(&svg)
        .into_iter()
        .find(|t| t.get("class") == Some("series"))
        .unwrap();
    assert_eq!(
        (
            g.get("data-transport"),
            g.get("data-mode"),
            g.get("data-parameter")
        ),
        (Some("tcp"), Some("block"), Some("o_s"))
    );
}

#[test]
fn bars_sit_in_their_slots_and_a_failure_is_a_cross() {
    // Two slots of two bars on a linear 0 … 4 axis; the second bar of slot 1 failed.
    let mut p = Panel::new(
        XScale::Slots(vec!["a".into(), "b".into()]),
        "program",
        linear_axis([0.0, 4.0]),
        "time, s",
    );
    for slot in 0..2 {
        p.bars.push(BarGroup {
            slot,
            bars: vec![
                Bar {
                    value: Some(1.0 + slot as f64),
                    colour: colour(0),
                    attrs: format!("data-slot=\"{slot}\""),
                    tip: "t".into(),
                },
                Bar {
                    value: (slot == 0).then_some(4.0),
                    colour: colour(1),
                    attrs: String::new(),
                    tip: "failed".into(),
                },
            ],
        });
    }
    let svg = Figure::new("bars").panel(p).svg();
    let (l, t, r, b) = plot_areas(&svg)[0];
    let bars: Vec<Tag> = tags(&svg)
        .into_iter()
        .filter(|t| t.get("class") == Some("bar"))
        .collect();
    assert_eq!(bars.len(), 3);
    let slot_w = (r - l) / 2.0;
    let w = (slot_w * 0.8 / 2.0).min(BAR_MAX);
    // Slot 0: bars of 1 and 4 left and right of its centre; heights from 0 at the bottom.
    assert!(
        close(bars[0].num("x"), l + slot_w / 2.0 - w),
        "{:?}",
        bars[0]
    );
    assert!(close(bars[0].num("height"), (b - t) / 4.0), "{:?}", bars[0]);
    assert!(close(bars[1].num("y"), t) && close(bars[1].num("height"), b - t));
    assert!(close(bars[2].num("x"), l + 1.5 * slot_w - w));
    assert_eq!(svg.matches("class=\"failed-mark\"").count(), 1);
    assert!(svg.contains("<title>failed</title>"));
}

#[test]
fn a_long_legend_label_is_cut_and_whole_in_its_tooltip() {
    let label = "x".repeat(80);
    let p = Panel::new(XScale::Log2Bytes, "size", linear_axis([1.0]), "v").title("p");
    let mut p = p;
    p.series
        .push(Series::new(&label, colour(0)).point(Point::new(4.0, 1.0)));
    let svg = Figure::new("f").panel(p).svg();
    let legend = svg.split("<g class=\"legend\">").nth(1).unwrap();
    assert!(
        legend.contains(&format!("<title>{label}</title>")),
        "{legend}"
    );
    assert!(legend.contains("x…<title>"), "{legend}");
}

#[test]
fn notes_and_titles_wrap_to_the_figure() {
    assert_eq!(
        wrap("the verdict is long enough to wrap", 12),
        ["the verdict", "is long", "enough to", "wrap"]
    );
    assert_eq!(wrap("unbreakable-word", 4), ["unbreakable-word"]);
    assert!(wrap("   ", 10).is_empty());
    let f = Figure::new("t").note("word ".repeat(100));
    let svg = f.svg();
    let notes = svg.matches("<text class=\"note\"").count();
    // 500 characters at CHAR_W px each across 760 - 24 px.
    let per_line = ((760.0 - 24.0) / CHAR_W) as usize;
    // 100 words of 4 letters: as many a line as fit with their spaces.
    assert_eq!(notes, 100usize.div_ceil((per_line + 1) / 5), "{svg}");
    let h: f64 = tags(&svg)[0].num("height");
    assert!(h > 50.0 + notes as f64 * NOTE_STEP, "{h}");
}

#[test]
fn linear_axis_is_linear_whatever_the_spread() {
    use commperf_stats::axis::Scale;
    // Slowdowns of 0.1 % and 40 %: the shared axis would go log10 (a factor of 400).
    assert_eq!(Axis::for_values([0.001, 0.4]).scale(), Scale::Log10);
    let a = linear_axis([0.001, 0.4, -0.03]);
    assert_eq!(a.scale(), Scale::Linear);
    assert!(a.ticks()[0].value <= -0.03 && a.ticks().last().unwrap().value >= 0.4);
}

#[test]
fn a_comparison_draws_both_layers_in_one_colour() {
    let lower = report(vec![
        lat(TransportKind::Shm, 8, 0.2, 0.3),
        lat(TransportKind::Shm, 64, 0.3, 0.4),
    ]);
    let mut upper = lower.clone();
    for r in &mut upper.results {
        r.transport = TransportKind::Mpi;
        let p = r.percentiles_mut().unwrap();
        p.p50_us = p.p50_us.map(|v| v + 0.5);
    }
    upper.options.transports = vec![TransportKind::Mpi];
    let c = crate::compare(&lower, &upper).unwrap();
    let svg = comparison_figure(&c).unwrap().svg();
    let lines: Vec<Tag> = tags(&svg)
        .into_iter()
        .filter(|t| t.name == "polyline")
        .collect();
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[0].get("stroke"), lines[1].get("stroke"));
    assert_eq!(lines[0].get("stroke-dasharray"), None);
    assert_eq!(lines[1].get("stroke-dasharray"), Some("6 4"));
    let groups: Vec<Tag> = tags(&svg)
        .into_iter()
        .filter(|t| t.get("class") == Some("series"))
        .collect();
    assert_eq!(groups[0].get("data-layer"), Some("lower"));
    assert_eq!(groups[1].get("data-layer"), Some("upper"));
    assert_eq!(groups[1].get("data-transport"), Some("mpi"));
}

#[test]
fn a_band_across_the_panel_spans_its_two_values_and_is_named_in_the_legend() {
    // ±10 on a linear -20 … 20 axis: the middle half of the plot's height.
    let mut p = Panel::new(
        XScale::Value(linear_axis([0.0, 20.0])),
        "ΔL, µs",
        linear_axis([-20.0, 20.0]),
        "slowdown, %",
    );
    p.bands.push(Band {
        name: Some("baseline noise ±10.0 %".into()),
        colour: GREY,
        shape: BandShape::Across(-10.0, 10.0),
    });
    p.series
        .push(Series::new("slowdown", colour(0)).point(Point::new(5.0, 3.0)));
    let svg = Figure::new("sweep").panel(p).svg();
    let (l, t, r, b) = plot_areas(&svg)[0];
    let band = tags(&svg)
        .into_iter()
        .find(|t| t.get("class") == Some("band"))
        .expect("the band");
    let h = b - t;
    assert!(
        close(band.num("x"), l) && close(band.num("width"), r - l),
        "{band:?}"
    );
    assert!(close(band.num("y"), t + h / 4.0), "{band:?}");
    assert!(close(band.num("height"), h / 2.0), "{band:?}");
    let legend = svg.split("<g class=\"legend\">").nth(1).unwrap();
    assert!(
        legend.contains(">baseline noise ±10.0 %</text>"),
        "{legend}"
    );
    // Drawn under the series: the band comes first in the document.
    assert!(svg.find("class=\"band\"") < svg.find("class=\"series\""));
}

/// A lanes panel: lane lines and labels where the plot height puts them, intervals placed on
/// the time axis (clamped to it, at least half a pixel wide), arrows between lanes with the
/// arrowhead defined once, labels escaped, the arrow in the legend.
#[test]
fn lanes_place_intervals_and_arrows_on_the_time_axis() {
    let lanes = Lanes {
        labels: vec!["rank 0".into(), "<r1>".into()],
        intervals: vec![
            Interval {
                lane: 0,
                start: 0.0,
                end: 5.0,
                colour: "#4e79a7",
                part: Part::Full,
            },
            Interval {
                lane: 1,
                start: 2.5,
                end: 2.5,
                colour: "#59a14f",
                part: Part::Lower,
            },
            // Past the axis's end: clamped to it.
            Interval {
                lane: 1,
                start: 8.0,
                end: 99.0,
                colour: "#bab0ac",
                part: Part::Upper,
            },
            // No such lane, and not finite: left out.
            Interval {
                lane: 2,
                start: 0.0,
                end: 1.0,
                colour: "#000000",
                part: Part::Full,
            },
            Interval {
                lane: 0,
                start: f64::NAN,
                end: 1.0,
                colour: "#000000",
                part: Part::Full,
            },
        ],
        arrows: vec![Arrow {
            from: (0, 5.0),
            to: (1, 7.5),
        }],
        arrow_colour: "#e15759",
    };
    // Values up to 9: ticks 0, 2, …, 10 (linear).
    let mut f = Figure::new("t")
        .width(500.0)
        .plot_height(2.0 * LANE_HEIGHT)
        .panel(Panel::lanes(linear_axis([9.0]), "time, µs", lanes));
    f.legend.push(LegendEntry {
        label: "message".into(),
        colour: "#e15759",
        swatch: Swatch::Arrow,
    });
    let svg = f.svg();
    let t = tags(&svg);
    // No series or bands: the legend is the figure's own entry, 110 px wide, so the plot runs
    // from 76 to 500 − 110 − 24 = 366; the title takes one line, so the plot's top is
    // 14 + 19 + 8 = 41 and lanes are 24 px high: lines at 53 and 77.
    let (left, right) = (76.0, 366.0);
    let px = |v: f64| left + v / 10.0 * (right - left);
    let rects: Vec<&Tag> = t
        .iter()
        .filter(|g| g.name == "rect" && g.get("fill") != Some("white"))
        .filter(|g| g.get("height") != Some("12"))
        .collect();
    assert_eq!(rects.len(), 3, "{svg}");
    let geo = |g: &Tag| (g.num("x"), g.num("y"), g.num("width"), g.num("height"));
    assert_eq!(geo(rects[0]), (left, 53.0 - 7.0, px(5.0) - left, 14.0));
    assert_eq!(geo(rects[1]), (px(2.5), 77.0, 0.5, 7.0));
    assert_eq!(geo(rects[2]), (px(8.0), 77.0 - 7.0, right - px(8.0), 7.0));
    let arrow = t
        .iter()
        .find(|g| g.name == "line" && g.get("y1") == Some("53.0") && g.get("y2") == Some("77.0"))
        .expect("the arrow");
    assert_eq!((arrow.num("x1"), arrow.num("x2")), (px(5.0), px(7.5)));
    assert_eq!(svg.matches("<marker id=\"arrow-e15759\"").count(), 1);
    assert_eq!(
        svg.matches("url(#arrow-e15759)").count(),
        2,
        "arrows and legend"
    );
    assert!(svg.contains(">&lt;r1&gt;</text>"), "{svg}");
    let labels: Vec<&str> = t
        .iter()
        .filter(|g| g.name == "text" && g.get("text-anchor") == Some("end"))
        .map(|g| g.text.as_str())
        .collect();
    assert_eq!(labels, ["rank 0", "&lt;r1&gt;"]);
    assert!(svg.contains(">time, µs (linear scale)</text>"));
}
