//! The human-readable formats (aligned text and Markdown): machine lines, then one block per
//! (benchmark, transport, mode), OSU style. Both formats are built from the same [`Block`]s and
//! the same [`Table`]s; they differ only in how headings and the table are written.

use crate::table::{Align, Table};
use commperf_core::{Benchmark, BufferUse, FlatRow, Mode, Report, Row, TransportKind};

/// Rows of one (benchmark, transport, mode, spins before blocking), in report order.
#[derive(Debug)]
pub(crate) struct Block<'a> {
    pub(crate) benchmark: Benchmark,
    pub(crate) transport: TransportKind,
    pub(crate) mode: Mode,
    pub(crate) block_spins: Option<u32>,
    pub(crate) packed: Option<bool>,
    pub(crate) buffers: Option<BufferUse>,
    pub(crate) rows: Vec<&'a Row>,
}

/// Groups rows by (benchmark, transport, mode, spins); blocks are ordered by first appearance.
pub(crate) fn blocks(report: &Report) -> Vec<Block<'_>> {
    let mut out: Vec<Block<'_>> = Vec::new();
    for row in &report.results {
        let f = row.flat();
        let key = (
            f.benchmark,
            f.transport,
            f.mode,
            f.block_spins,
            f.packed,
            f.buffers,
        );
        match out.iter_mut().find(|b| {
            (
                b.benchmark,
                b.transport,
                b.mode,
                b.block_spins,
                b.packed,
                b.buffers,
            ) == key
        }) {
            Some(b) => b.rows.push(row),
            None => out.push(Block {
                benchmark: f.benchmark,
                transport: f.transport,
                mode: f.mode,
                block_spins: f.block_spins,
                packed: f.packed,
                buffers: f.buffers,
                rows: vec![row],
            }),
        }
    }
    out
}

impl Block<'_> {
    /// The one window shared by every row, if there is one.
    fn uniform_window(&self) -> Option<Option<u32>> {
        let window = |r: &Row| r.flat().window;
        let first = window(self.rows[0]);
        self.rows
            .iter()
            .all(|r| window(r) == first)
            .then_some(first)
    }

    /// `["latency", "transport shm", "mode poll", "window 64", "validated"]`.
    fn descriptor(&self) -> Vec<String> {
        let mut parts = vec![
            self.benchmark.to_string(),
            format!("transport {}", self.transport),
            format!("mode {}", self.mode),
        ];
        if self.transport == TransportKind::Mpi {
            parts.extend(mpi_words(self.benchmark, self.mode, self.packed));
        }
        if self.transport != TransportKind::Mpi || self.benchmark == Benchmark::Bufmgmt {
            parts.extend(variant_words(self.packed, self.buffers, self.block_spins));
        }
        if let Some(Some(w)) = self.uniform_window() {
            parts.push(format!("window {w}"));
        }
        if let Some(n) = self.rows[0].pairs {
            // Sums (bandwidth, rate) or means (latency) over pairs measuring at once.
            parts.push(format!("{n} pairs"));
        }
        let validated = self.rows.iter().filter(|r| r.validated).count();
        if validated == self.rows.len() {
            parts.push("validated".to_string());
        } else if validated > 0 {
            parts.push(format!(
                "validated {validated} of {} sizes",
                self.rows.len()
            ));
        }
        parts
    }

    fn table(&self) -> Table {
        type Cell = fn(&FlatRow) -> String;
        // A row whose figures cannot be a measurement is marked `!` at its size (and noted).
        let mut cols: Vec<(&str, Cell)> = vec![("Size", |r| {
            let flag = if impossible(r).is_some() { " !" } else { "" };
            format!("{}{flag}", r.size_bytes)
        })];
        match self.benchmark {
            Benchmark::Cq => cols.extend([
                (
                    "conns",
                    (|r| r.connections.map_or_else(dash, |k| k.to_string())) as Cell,
                ),
                ("p50(us)", |r| us(r.p50_us)),
                ("p90(us)", |r| us(r.p90_us)),
                ("p99(us)", |r| us(r.p99_us)),
                (
                    // At the MPI layer the baseline receives from a named source.
                    if self.transport == TransportKind::Mpi {
                        "named p50(us)"
                    } else {
                        "sweep p50(us)"
                    },
                    |r| us(r.baseline_p50_us),
                ),
                ("cost(us)", cost),
            ]),
            // Per size and fragment: the measured one-way time and bandwidth beside the
            // pipeline model's T(L, P) (Fröhlich, Tientcheu and Schröder-Preikschat 2000, eq. 7 or the exact recurrence).
            Benchmark::Pipeline => cols.extend([
                (
                    "fragment",
                    (|r| r.fragment_bytes.map_or_else(dash, |k| k.to_string())) as Cell,
                ),
                ("rule", |r| r.fragment_rule.clone().unwrap_or_else(dash)),
                ("p50(us)", |r| us(r.p50_us)),
                ("MB/s", |r| r.mb_per_s.map_or_else(dash, fmt_mb)),
                ("model(us)", |r| us(r.model_us)),
                ("eq7(us)", |r| us(r.eq7_us)),
                ("model err", |r| match (r.model_us, r.p50_us) {
                    (Some(m), Some(t)) if t > 0.0 => format!("{:+.1}%", (m - t) / t * 100.0),
                    _ => dash(),
                }),
            ]),
            Benchmark::Conns => cols.extend([
                (
                    "conns",
                    (|r| r.connections.map_or_else(dash, |k| k.to_string())) as Cell,
                ),
                ("p50(us)", |r| us(r.p50_us)),
                ("p90(us)", |r| us(r.p90_us)),
                ("p99(us)", |r| us(r.p99_us)),
                ("1 conn p50(us)", |r| us(r.baseline_p50_us)),
                ("cost(us)", cost),
            ]),
            Benchmark::Noncontig => cols.extend([
                (
                    "segments",
                    (|r| r.segments.map_or_else(dash, |k| k.to_string())) as Cell,
                ),
                ("p50(us)", |r| us(r.p50_us)),
                ("p90(us)", |r| us(r.p90_us)),
                ("p99(us)", |r| us(r.p99_us)),
                ("standard p50(us)", |r| us(r.baseline_p50_us)),
                ("cost(us)", cost),
            ]),
            Benchmark::Bufmgmt | Benchmark::Blocking => cols.extend([
                ("p50(us)", (|r| us(r.p50_us)) as Cell),
                ("p90(us)", |r| us(r.p90_us)),
                ("p99(us)", |r| us(r.p99_us)),
                ("standard p50(us)", |r| us(r.baseline_p50_us)),
                ("cost(us)", cost),
            ]),
            Benchmark::Latency => cols.extend([
                ("p50(us)", (|r| us(r.p50_us)) as Cell),
                ("p90(us)", |r| us(r.p90_us)),
                ("p99(us)", |r| us(r.p99_us)),
                ("min(us)", |r| us(r.min_us)),
                ("max(us)", |r| us(r.max_us)),
                ("mean(us)", |r| us(r.mean_us)),
            ]),
            Benchmark::Bw | Benchmark::Bibw => cols.extend([
                ("MB/s", (|r| r.mb_per_s.map_or_else(dash, fmt_mb)) as Cell),
                ("msgs/s", |r| r.msgs_per_s.map_or_else(dash, fmt_rate)),
            ]),
            // Per size what was measured (Kutluğ's (2000) Figure 3.6 plots o_s and o_r) and the
            // LogGOPS one-way time from the piece's parameters, which follow in their own table.
            Benchmark::Loggp => cols.extend([
                ("o_s(us)", (|r| time(r.o_s_us)) as Cell),
                ("o_r(us)", |r| time(r.o_r_us)),
                ("g+G*s(us)", |r| time(r.gap_us)),
                ("latency(us)", |r| time(r.p50_us)),
                ("LogGOPS(us)", |r| time(r.model_us)),
            ]),
            Benchmark::Mr => cols.extend([
                (
                    "msgs/s",
                    (|r| r.msgs_per_s.map_or_else(dash, fmt_rate)) as Cell,
                ),
                ("MB/s", |r| r.mb_per_s.map_or_else(dash, fmt_mb)),
            ]),
        }
        // The exchange is measured where the layer can post both sides at once (MPI).
        let flat: Vec<FlatRow> = self.rows.iter().map(|r| r.flat()).collect();
        if flat.iter().any(|r| r.exchange_us.is_some()) {
            cols.push(("exchange(us)", |r| time(r.exchange_us)));
        }
        if flat.iter().any(|r| r.efficiency.is_some()) {
            cols.push(("eff", |r| r.efficiency.map_or_else(dash, fmt_eff)));
        }
        if self.uniform_window().is_none() {
            cols.push(("window", |r| r.window.map_or_else(dash, |w| w.to_string())));
        }
        let mut t = Table::new();
        for (i, (name, _)) in cols.iter().enumerate() {
            // The size is the key column: left, as OSU prints it, under a `# ` comment header.
            t = t.column(*name, if i == 0 { Align::Left } else { Align::Right });
        }
        for r in &flat {
            t.push_row(cols.iter().map(|(_, cell)| cell(r)).collect());
        }
        t
    }
}

/// How a block's variant keys read in its heading (shared with the layer comparison).
pub(crate) fn variant_words(
    packed: Option<bool>,
    buffers: Option<BufferUse>,
    block_spins: Option<u32>,
) -> Vec<String> {
    let mut parts = Vec::new();
    match packed {
        Some(true) => parts.push("packed into one buffer first".into()),
        Some(false) => parts.push("vectored (gathered by the transport)".into()),
        None => {}
    }
    match buffers {
        Some(BufferUse::Fresh) => parts.push("a fresh buffer per message (pool > LLC)".into()),
        Some(BufferUse::Registered) => {
            parts.push("registered memory used in place (no copy)".into())
        }
        None => {}
    }
    match block_spins {
        Some(0) => parts.push("blocking at once".into()),
        Some(n) => parts.push(format!("spin {n} checks, then block")),
        None => {}
    }
    parts
}

/// What the MPI layer's variants do, in MPI's words (the transport layer's words would say
/// "gathered by the transport" for a derived datatype).
pub(crate) fn mpi_words(b: Benchmark, mode: Mode, packed: Option<bool>) -> Vec<String> {
    let w = match (b, mode, packed) {
        (Benchmark::Noncontig, _, Some(true)) => "packed into one buffer first",
        (Benchmark::Noncontig, _, _) => "a derived datatype (MPI_Type_vector)",
        (Benchmark::Blocking, Mode::Block, _) => "MPI_Irecv + MPI_Wait",
        (Benchmark::Blocking, Mode::Poll, _) => "MPI_Irecv + an MPI_Test loop",
        (Benchmark::Cq, _, _) => "receives from MPI_ANY_SOURCE",
        _ => return Vec::new(),
    };
    vec![w.to_string()]
}

/// A LogGOPS figure, which cannot be negative: a negative one (only a result file of schema 1
/// can hold one, from Kutluğ's (2000) L = latency − o_s − o_r) is shown as absent, never printed.
fn time(v: Option<f64>) -> String {
    us(v.filter(|x| *x >= 0.0))
}

/// A per-byte LogGOPS figure in ns per byte (a few picoseconds per byte reads as 0.00x).
fn per_byte(v: Option<f64>) -> String {
    v.filter(|x| *x >= 0.0)
        .map_or_else(dash, |g| format!("{:.5}", g * 1e3))
}

/// A cost within its noise band reads `≈0`: no measurable cost, whatever its sign.
fn cost(r: &FlatRow) -> String {
    match (r.cost_us, r.cost_noise_us) {
        (Some(c), Some(band)) if c.abs() <= band => "≈0".to_string(),
        (c, _) => us(c),
    }
}

/// The LogGOPS parameters of a loggp block, one row per protocol piece (the rows of a piece
/// carry the same figures): None when the rows carry no pieces.
fn loggp_pieces(rows: &[&Row]) -> Option<Table> {
    let mut pieces: Vec<FlatRow> = Vec::new();
    for r in rows.iter().map(|r| r.flat()) {
        if r.piece_from_bytes.is_some()
            && !pieces.iter().any(|p| {
                (p.piece_from_bytes, p.piece_to_bytes) == (r.piece_from_bytes, r.piece_to_bytes)
            })
        {
            pieces.push(r);
        }
    }
    if pieces.is_empty() {
        return None;
    }
    type Cell = fn(&FlatRow) -> String;
    let mut cols: Vec<(&str, Cell)> = vec![
        ("sizes", |r| {
            let b = |v: Option<u64>| v.map_or_else(dash, |v| v.to_string());
            format!("{}-{}", b(r.piece_from_bytes), b(r.piece_to_bytes))
        }),
        ("o_s(us)", |r| time(r.o_s_fixed_us)),
        ("O_s(ns/B)", |r| per_byte(r.O_s_us_per_byte)),
        ("o_r(us)", |r| time(r.o_r_fixed_us)),
        ("O_r(ns/B)", |r| per_byte(r.O_r_us_per_byte)),
        ("g(us)", |r| time(r.g_us)),
        ("G(ns/B)", |r| per_byte(r.gap_per_byte_us)),
        ("L(us)", |r| time(r.L_us)),
        ("overlap(us)", |r| time(r.overlap_us)),
    ];
    // Measured where the layer can post both sides of an exchange at once (MPI).
    if pieces.iter().any(|p| p.send_wait_us.is_some()) {
        cols.push(("send wait(us)", |r| time(r.send_wait_us)));
        cols.push(("duplex(us)", |r| time(r.duplex_us)));
    }
    let mut t = Table::new();
    for (i, (name, _)) in cols.iter().enumerate() {
        t = t.column(*name, if i == 0 { Align::Left } else { Align::Right });
    }
    for p in &pieces {
        t.push_row(cols.iter().map(|(_, cell)| cell(p)).collect());
    }
    Some(t)
}

/// Every note of a block's rows, once each, in row order; then one per row whose figures are
/// impossible (marked `!` in the table).
fn notes(rows: &[&Row]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for n in rows.iter().flat_map(|r| r.notes.iter()) {
        if !out.contains(n) {
            out.push(n.clone());
        }
    }
    for r in rows {
        if let Some(why) = impossible(&r.flat()) {
            out.push(format!(
                "! size {}: impossible figures ({why}): not a measurement",
                r.size_bytes
            ));
        }
    }
    out
}

/// What makes a row's times impossible as a measurement: a time that is negative or not
/// finite, or order statistics out of order (min <= p50 <= p90 <= p99 <= max, mean within).
pub(crate) fn impossible(r: &FlatRow) -> Option<String> {
    let named = [
        ("min", r.min_us),
        ("p50", r.p50_us),
        ("p90", r.p90_us),
        ("p99", r.p99_us),
        ("max", r.max_us),
        ("mean", r.mean_us),
    ];
    let mut why: Vec<String> = named
        .iter()
        .filter_map(|&(n, v)| v.filter(|v| !(v.is_finite() && *v >= 0.0)).map(|v| (n, v)))
        .map(|(n, v)| format!("{n} {v} us"))
        .collect();
    // The order statistics, in order, where present.
    let ordered: Vec<(&str, f64)> = named[..5]
        .iter()
        .filter_map(|&(n, v)| v.map(|v| (n, v)))
        .collect();
    for w in ordered.windows(2) {
        if w[1].1 < w[0].1 {
            why.push(format!(
                "{} {} us < {} {} us",
                w[1].0, w[1].1, w[0].0, w[0].1
            ));
        }
    }
    if let (Some(m), Some(lo), Some(hi)) = (r.mean_us, r.min_us, r.max_us) {
        if lo <= hi && !(lo..=hi).contains(&m) {
            why.push(format!("mean {m} us outside [min, max]"));
        }
    }
    (!why.is_empty()).then(|| why.join("; "))
}

/// What a loggp block's fit table means, in one line.
const LOGGP_FIT_TITLE: &str = "LogGOPS per protocol: o + O*s per side, L size-independent; latency = o_s + L + o_r + max(O_r, G)*s - overlap";

/// Absent figures are shown as `-` (never as a made-up zero).
pub(crate) fn dash() -> String {
    "-".to_string()
}

fn us(v: Option<f64>) -> String {
    v.map_or_else(dash, fmt_us)
}

/// Microseconds: 3 decimals below 10 µs (where nanoseconds matter), 2 from 10 µs up.
pub(crate) fn fmt_us(v: f64) -> String {
    if v.abs() < 10.0 {
        format!("{v:.3}")
    } else {
        format!("{v:.2}")
    }
}

/// MB/s (MB = 1e6 B) with 2 decimals.
pub(crate) fn fmt_mb(v: f64) -> String {
    format!("{v:.2}")
}

/// Messages per second as an integer.
pub(crate) fn fmt_rate(v: f64) -> String {
    format!("{v:.0}")
}

/// A fraction as a percent with one decimal: 0.871 → `87.1%`.
pub(crate) fn fmt_eff(v: f64) -> String {
    format!("{:.1}%", v * 100.0)
}

/// `(label, text)` lines describing where and how the run was made.
fn machine_lines(report: &Report) -> Vec<(&'static str, String)> {
    let m = &report.machine;
    let mut lines = vec![(
        "machine",
        format!("{}, {} cpus, kernel {}", m.cpu_model, m.cores, m.kernel),
    )];
    let ghz = m
        .timer
        .tsc_ghz
        .map(|g| format!(" {g:.2} GHz"))
        .unwrap_or_default();
    lines.push((
        "timer",
        format!(
            "{}{ghz}, read cost {:.1} ns",
            m.timer.source, m.timer.cost_ns
        ),
    ));
    let p = &report.placement;
    let cpu = |c: Option<usize>| c.map_or_else(|| "unknown".to_string(), |c| c.to_string());
    let pinned = |p: bool| if p { "pinned" } else { "not pinned" };
    let placement = match (p.local_pinned, p.peer_pinned) {
        // Older files know one flag for both ends.
        (None, None) => format!(
            "local cpu {}, peer cpu {} ({})",
            cpu(p.local_cpu),
            cpu(p.peer_cpu),
            pinned(p.pinned)
        ),
        (l, r) => format!(
            "local cpu {} ({}), peer cpu {} ({})",
            cpu(p.local_cpu),
            pinned(l.unwrap_or(p.pinned)),
            cpu(p.peer_cpu),
            pinned(r.unwrap_or(p.pinned))
        ),
    };
    lines.push(("placement", placement));
    if let Some(w) = &p.warning {
        lines.push(("warning", w.clone()));
    }
    // What disturbed the run, each finding on a line of its own, before any figure.
    for n in report.disturbance.notes() {
        lines.push(("disturbed", n.to_string()));
    }
    if let Some(l) = &report.limits {
        lines.push((
            "limits",
            format!(
                "cache-line one-way {} us, memcpy {:.0} MB/s in cache, {:.0} MB/s out of cache{}",
                fmt_us(l.cacheline_one_way_us),
                l.memcpy_in_cache_mb_per_s,
                l.memcpy_out_of_cache_mb_per_s,
                match (
                    l.memcpy_two_cpus_in_cache_mb_per_s,
                    l.memcpy_two_cpus_out_of_cache_mb_per_s
                ) {
                    (Some(i), Some(o)) => format!(" (both CPUs at once: {i:.0} and {o:.0} MB/s)"),
                    _ => String::new(),
                }
            ),
        ));
    }
    lines
}

/// The layout of Kutluğ's (2000) Table 3.1 and Figure 3.5 as a table: LogGP per transport and mode at 4 B
/// (or each one's smallest size when 4 B was not measured), and each parameter's share of the
/// one-way latency. None when the report has no loggp rows.
fn loggp_summary(report: &Report) -> Option<(String, Table)> {
    let mut cols: Vec<FlatRow> = Vec::new();
    for r in report
        .results
        .iter()
        .filter(|r| r.benchmark() == Benchmark::Loggp)
        .map(|r| r.flat())
    {
        match cols
            .iter_mut()
            .find(|c| (c.transport, c.mode) == (r.transport, r.mode))
        {
            Some(c) if c.size_bytes != 4 && (r.size_bytes == 4 || r.size_bytes < c.size_bytes) => {
                *c = r
            }
            Some(_) => {}
            None => cols.push(r),
        }
    }
    if cols.is_empty() {
        return None;
    }
    let sizes: Vec<String> = cols.iter().map(|c| c.size_bytes.to_string()).collect();
    let mut t = Table::new().column("parameter", Align::Left);
    for c in &cols {
        t = t.column(format!("{} {}", c.transport, c.mode), Align::Right);
    }
    type Get = fn(&FlatRow) -> Option<f64>;
    let share = |part: Option<f64>, r: &FlatRow| match (part, r.p50_us) {
        (Some(x), Some(l)) if l > 0.0 && x >= 0.0 => format!("{:.0}%", 100.0 * x / l),
        _ => dash(),
    };
    // Kutluğ (2000) writes the overheads O_s and O_r; here they are LogGOPS's o_s(s) and o_r(s) at
    // this size (O is LogGOPS's per-byte overhead). latency = o_s + L + o_r − overlap + the
    // per-byte terms, which are small at 4 B.
    let values: [(&str, Get); 6] = [
        ("o_s (us)", |r| r.o_s_us),
        ("o_r (us)", |r| r.o_r_us),
        ("g (us)", |r| r.g_us),
        ("L (us)", |r| r.L_us),
        ("overlap (us)", |r| r.overlap_us),
        ("latency (us)", |r| r.p50_us),
    ];
    for (name, get) in values {
        let mut row = vec![name.to_string()];
        row.extend(cols.iter().map(|r| time(get(r))));
        t.push_row(row);
    }
    let shares: [(&str, Get); 4] = [
        ("o_s share", |r| r.o_s_us),
        ("o_r share", |r| r.o_r_us),
        ("L share", |r| r.L_us),
        ("overlap share (-)", |r| r.overlap_us),
    ];
    for (name, get) in shares {
        let mut row = vec![name.to_string()];
        row.extend(cols.iter().map(|r| share(get(r), r)));
        t.push_row(row);
    }
    let at = if sizes.iter().all(|s| *s == sizes[0]) {
        format!("{} B", sizes[0])
    } else {
        format!("sizes {} B", sizes.join(", "))
    };
    Some((
        format!("loggp summary at {at} (after Kutluğ 2000, Table 3.1 and Figure 3.5)"),
        t,
    ))
}

/// The default format: `#` comment lines and aligned columns, readable and gnuplot-friendly.
pub(crate) fn render_text(report: &Report) -> String {
    let mut out = String::new();
    for (label, text) in machine_lines(report) {
        out.push_str(&format!("# {label}: {text}\n"));
    }
    let blocks = blocks(report);
    if blocks.is_empty() {
        out.push_str("\n# no results\n");
    }
    for b in blocks {
        out.push_str(&format!("\n# commperf {}\n", b.descriptor().join(" | ")));
        out.push_str(&b.table().render_text("# "));
        if b.benchmark == Benchmark::Loggp {
            if let Some(t) = loggp_pieces(&b.rows) {
                out.push_str(&format!("# {LOGGP_FIT_TITLE}\n"));
                out.push_str(&t.render_text("# "));
            }
        }
        for n in notes(&b.rows) {
            out.push_str(&format!("# note: {n}\n"));
        }
        if b.benchmark == Benchmark::Loggp {
            let heading = format!("transport {} | mode {}", b.transport, b.mode);
            if let Some(chart) = crate::plot::text_chart(&b.rows, &heading) {
                out.push('\n');
                out.push_str(&chart);
            }
        }
    }
    if let Some((title, t)) = loggp_summary(report) {
        out.push_str(&format!("\n# commperf {title}\n"));
        out.push_str(&t.render_text("# "));
    }
    out
}

/// Markdown: machine information as a bullet list, then a `##` heading and a pipe table per block.
pub(crate) fn render_markdown(report: &Report) -> String {
    let mut out = String::new();
    for (label, text) in machine_lines(report) {
        out.push_str(&format!("- {label}: {text}\n"));
    }
    let blocks = blocks(report);
    if blocks.is_empty() {
        out.push_str("\nNo results.\n");
    }
    for b in blocks {
        out.push_str(&format!("\n## {}\n\n", b.descriptor().join(", ")));
        out.push_str(&b.table().render_markdown());
        if b.benchmark == Benchmark::Loggp {
            if let Some(t) = loggp_pieces(&b.rows) {
                out.push_str(&format!("\n{LOGGP_FIT_TITLE}:\n\n"));
                out.push_str(&t.render_markdown());
            }
        }
        let notes = notes(&b.rows);
        if !notes.is_empty() {
            out.push('\n');
            for n in notes {
                out.push_str(&format!("- note: {n}\n"));
            }
        }
    }
    if let Some((title, t)) = loggp_summary(report) {
        out.push_str(&format!("\n## {title}\n\n"));
        out.push_str(&t.render_markdown());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn number_rules() {
        assert_eq!(fmt_us(0.0734), "0.073");
        assert_eq!(fmt_us(9.9994), "9.999");
        assert_eq!(fmt_us(10.0), "10.00");
        assert_eq!(fmt_us(1234.567), "1234.57");
        assert_eq!(fmt_mb(45000.0), "45000.00");
        assert_eq!(fmt_rate(1_234_567.6), "1234568");
        assert_eq!(fmt_eff(0.8712), "87.1%");
        assert_eq!(fmt_eff(1.0), "100.0%");
    }
}
