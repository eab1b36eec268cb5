//! A [`Comparison`] in the report formats: the same `#` comment lines and blocks as a rendered
//! report (table), `##` headings and pipe tables (md), one flat table (csv), or the comparison
//! itself (json). Every grid goes through [`Table`], so columns line up as in `commperf report`.

use super::{size_words, BenchmarkComparison, Comparison, LayerInfo, NotCompared, Point, Role};
use crate::blocks::{dash, fmt_eff, fmt_mb, fmt_rate, fmt_us, variant_words};
use crate::table::{Align, Table};
use crate::Format;
use commperf_core::{format_size, Benchmark};

/// Renders a comparison in the given format. The result always ends with a newline.
pub fn render_comparison(c: &Comparison, format: Format) -> String {
    match format {
        Format::Table => render_text(c),
        Format::Md => render_markdown(c),
        Format::Svg => crate::plot::comparison_figure(c)
            .map(|f| f.document())
            .unwrap_or_else(|e| crate::plot::empty(&e.to_string())),
        Format::Csv => render_csv(c),
        Format::Json => {
            // Cannot fail: every map key is a string and no Serialize impl errors.
            let mut s = serde_json::to_string_pretty(c).expect("Comparison serializes to JSON");
            s.push('\n');
            s
        }
    }
}

/// `shm (a.json; commperf 0.1.0 on node1)`.
fn layer_words(l: &LayerInfo) -> String {
    let ts: Vec<&str> = l.transports.iter().map(|t| t.as_str()).collect();
    let origin = format!("{} on {}", l.tool, l.hostname);
    match &l.source {
        Some(s) => format!("{} ({s}; {origin})", ts.join(",")),
        None => format!("{} ({origin})", ts.join(",")),
    }
}

/// `["latency", "mode poll", "lower shm", "upper mpi"]` and the variant, as report blocks say it.
fn descriptor(b: &BenchmarkComparison) -> Vec<String> {
    let mut parts = vec![b.benchmark.to_string(), format!("mode {}", b.mode)];
    parts.extend(variant_words(b.packed, b.buffers, b.block_spins));
    if let Some(p) = b.pairs {
        parts.push(format!("{p} pairs"));
    }
    parts.push(format!("lower {}", b.lower_transport));
    parts.push(format!("upper {}", b.upper_transport));
    parts
}

/// Column labels name the transports (`shm p50(us)`), or the roles when both layers ran over
/// the same transport name and the labels would not tell them apart.
fn side_labels(b: &BenchmarkComparison) -> (String, String) {
    if b.lower_transport == b.upper_transport {
        ("lower".to_string(), "upper".to_string())
    } else {
        (b.lower_transport.to_string(), b.upper_transport.to_string())
    }
}

fn us(v: Option<f64>) -> String {
    v.map_or_else(dash, fmt_us)
}

fn table(b: &BenchmarkComparison) -> Table {
    type Cell = Box<dyn Fn(&Point) -> String>;
    let (lo, up) = side_labels(b);
    let mut cols: Vec<(String, Cell)> =
        vec![("Size".into(), Box::new(|p| p.size_bytes.to_string()))];
    if b.points.iter().any(|p| p.segments.is_some()) {
        cols.push((
            "segments".into(),
            Box::new(|p| p.segments.map_or_else(dash, |k| k.to_string())),
        ));
    }
    if b.points.iter().any(|p| p.connections.is_some()) {
        cols.push((
            "conns".into(),
            Box::new(|p| p.connections.map_or_else(dash, |k| k.to_string())),
        ));
    }
    let mb = |v: Option<f64>| v.map_or_else(dash, fmt_mb);
    let rate = |v: Option<f64>| v.map_or_else(dash, fmt_rate);
    match b.benchmark {
        Benchmark::Bw | Benchmark::Bibw | Benchmark::Mr => {
            if b.benchmark == Benchmark::Mr {
                cols.push((
                    format!("{lo} msgs/s"),
                    Box::new(move |p| rate(p.lower_msgs_per_s)),
                ));
                cols.push((
                    format!("{up} msgs/s"),
                    Box::new(move |p| rate(p.upper_msgs_per_s)),
                ));
            }
            cols.push((
                format!("{lo} MB/s"),
                Box::new(move |p| mb(p.lower_mb_per_s)),
            ));
            cols.push((
                format!("{up} MB/s"),
                Box::new(move |p| mb(p.upper_mb_per_s)),
            ));
            cols.push((
                "fraction".into(),
                Box::new(|p| p.fraction_delivered.map_or_else(dash, fmt_eff)),
            ));
        }
        _ => {
            cols.push((format!("{lo} p50(us)"), Box::new(|p| us(p.lower_p50_us))));
            cols.push((format!("{up} p50(us)"), Box::new(|p| us(p.upper_p50_us))));
            cols.push(("added(us)".into(), Box::new(|p| us(p.added_us))));
            cols.push((
                "added(%)".into(),
                Box::new(|p| p.added_percent.map_or_else(dash, |v| format!("{v:+.1}%"))),
            ));
            if b.points
                .iter()
                .any(|p| p.lower_cost_us.is_some() || p.upper_cost_us.is_some())
            {
                cols.push((format!("{lo} cost(us)"), Box::new(|p| us(p.lower_cost_us))));
                cols.push((format!("{up} cost(us)"), Box::new(|p| us(p.upper_cost_us))));
            }
        }
    }
    let mut t = Table::new();
    for (i, (name, _)) in cols.iter().enumerate() {
        t = t.column(
            name.clone(),
            if i == 0 { Align::Left } else { Align::Right },
        );
    }
    for p in &b.points {
        t.push_row(cols.iter().map(|(_, cell)| cell(p)).collect());
    }
    t
}

/// `between 4 KiB and 8 KiB: mpi 0.860 -> 5.570 us (+4.500 us); 0.100 -> 0.100 us per KiB`.
fn change_lines(b: &BenchmarkComparison) -> Vec<String> {
    b.protocol_changes
        .iter()
        .map(|c| {
            format!(
                "between {} and {}: {} {} -> {} us ({}{} us); {} -> {} us per KiB",
                size_words(c.last_size_before),
                size_words(c.first_size_after),
                b.upper_transport,
                fmt_us(c.upper_p50_before_us),
                fmt_us(c.upper_p50_after_us),
                if c.jump_us >= 0.0 { "+" } else { "-" },
                fmt_us(c.jump_us.abs()),
                fmt_us(c.slope_before_us_per_kib),
                fmt_us(c.slope_after_us_per_kib)
            )
        })
        .collect()
}

/// `bibw (poll) only in upper`, `latency (poll) 2M, 4M only in lower`.
fn not_compared_words(n: &[NotCompared], c: &Comparison) -> Option<String> {
    if n.is_empty() {
        return None;
    }
    let parts: Vec<String> = n
        .iter()
        .map(|x| {
            let file = match x.only_in {
                Role::Lower => format!("lower {}", names(&c.lower)),
                Role::Upper => format!("upper {}", names(&c.upper)),
            };
            if x.whole_benchmark {
                format!("{} ({}) only in {file}", x.benchmark, x.mode)
            } else {
                let sizes: Vec<String> = x.sizes_bytes.iter().map(|&s| format_size(s)).collect();
                format!(
                    "{} ({}) {} only in {file}",
                    x.benchmark,
                    x.mode,
                    sizes.join(",")
                )
            }
        })
        .collect();
    Some(parts.join("; "))
}

/// The role's transports, or its file name when none of its rows were compared.
fn names(l: &LayerInfo) -> String {
    if l.transports.is_empty() {
        return "file".into();
    }
    l.transports
        .iter()
        .map(|t| t.as_str())
        .collect::<Vec<_>>()
        .join(",")
}

fn render_text(c: &Comparison) -> String {
    let mut out = format!(
        "# commperf compare | lower {} | upper {}\n",
        layer_words(&c.lower),
        layer_words(&c.upper)
    );
    for b in &c.benchmarks {
        out.push_str(&format!(
            "\n# commperf compare {}\n",
            descriptor(b).join(" | ")
        ));
        out.push_str(&table(b).render_text("# "));
        for line in change_lines(b) {
            out.push_str(&format!("# protocol change: {line}\n"));
        }
        out.push_str(&format!("# verdict: {}\n", b.verdict));
    }
    if let Some(words) = not_compared_words(&c.not_compared, c) {
        out.push_str(&format!("\n# not compared: {words}\n"));
    }
    out
}

fn render_markdown(c: &Comparison) -> String {
    let mut out = format!(
        "- lower: {}\n- upper: {}\n",
        layer_words(&c.lower),
        layer_words(&c.upper)
    );
    for b in &c.benchmarks {
        out.push_str(&format!("\n## {}\n\n", descriptor(b).join(", ")));
        out.push_str(&table(b).render_markdown());
        out.push('\n');
        for line in change_lines(b) {
            out.push_str(&format!("Protocol change {line}.\n\n"));
        }
        out.push_str(&format!("**Verdict:** {}.\n", b.verdict));
    }
    if let Some(words) = not_compared_words(&c.not_compared, c) {
        out.push_str(&format!("\nNot compared: {words}.\n"));
    }
    out
}

/// Column names of the CSV, equal to the JSON field names of a benchmark and its points.
const CSV_COLUMNS: [&str; 22] = [
    "benchmark",
    "mode",
    "packed",
    "buffers",
    "block_spins",
    "pairs",
    "lower_transport",
    "upper_transport",
    "size_bytes",
    "segments",
    "connections",
    "lower_p50_us",
    "upper_p50_us",
    "added_us",
    "added_percent",
    "lower_cost_us",
    "upper_cost_us",
    "lower_mb_per_s",
    "upper_mb_per_s",
    "fraction_delivered",
    "lower_msgs_per_s",
    "upper_msgs_per_s",
];

/// One flat table of every point, numbers at full precision; the verdicts and protocol changes
/// are prose and live in the other formats.
fn render_csv(c: &Comparison) -> String {
    let mut t = Table::new();
    for (i, name) in CSV_COLUMNS.iter().enumerate() {
        t = t.column(*name, if i < 8 { Align::Left } else { Align::Right });
    }
    let f = |v: Option<f64>| v.map(|v| v.to_string()).unwrap_or_default();
    let n = |v: Option<u32>| v.map(|v| v.to_string()).unwrap_or_default();
    for b in &c.benchmarks {
        for p in &b.points {
            t.push_row(vec![
                b.benchmark.to_string(),
                b.mode.to_string(),
                b.packed.map(|v| v.to_string()).unwrap_or_default(),
                b.buffers.map(|v| v.to_string()).unwrap_or_default(),
                n(b.block_spins),
                n(b.pairs),
                b.lower_transport.to_string(),
                b.upper_transport.to_string(),
                p.size_bytes.to_string(),
                n(p.segments),
                n(p.connections),
                f(p.lower_p50_us),
                f(p.upper_p50_us),
                f(p.added_us),
                f(p.added_percent),
                f(p.lower_cost_us),
                f(p.upper_cost_us),
                f(p.lower_mb_per_s),
                f(p.upper_mb_per_s),
                f(p.fraction_delivered),
                f(p.lower_msgs_per_s),
                f(p.upper_msgs_per_s),
            ]);
        }
    }
    t.render_csv()
}
