//! Layer against layer (Kutluğ 2000, chapter 4): the same suite measured at a lower layer (a
//! transport: `shm`, `tcp`) and at an upper one built on it (MPI), compared point by point, so a
//! user can tell whether a bottleneck is in the transport or in the layer above it.
//!
//! Rows are matched by what was measured — benchmark, mode, size and the variant keys (segments,
//! packed, buffers, spins before blocking, connections, pairs) — never by transport, which is
//! what differs. Per matched point the comparison gives the time the upper layer adds
//! (latency-type benchmarks) or the fraction of the lower layer's bandwidth it delivers (bw,
//! bibw, mr). For latency it also finds where the upper layer changes protocol (a breakpoint of
//! its size curve that the lower layer does not have) and, per benchmark, a one-line verdict in
//! the words of Kutluğ's (2000) Figures 4.3–4.10 ("MVICH adds around 11 µs up to 1 KiB; above it the
//! overhead grows with message size: an extra copy"), computed from the numbers.

mod render;
#[cfg(test)]
mod tests;

pub use render::render_comparison;

use crate::blocks::fmt_us;
use commperf_core::{format_size, Benchmark, BufferUse, Limits, Mode, Report, Row, TransportKind};
use commperf_stats::{fit_line, median, piecewise_fit, spearman};
use serde::{Deserialize, Serialize};
use std::fmt;

/// Version of the comparison schema written by this build; changes when a field changes
/// meaning or disappears, not when one is added.
pub const COMPARE_SCHEMA_VERSION: u32 = commperf_formats::version::COMPARISON;

/// Sizes up to this are "small messages" in verdicts (Kutluğ 2000: "up to 1 Kilobyte").
const SMALL_MAX: u64 = 1024;
/// Sizes from this are "large messages" in bandwidth verdicts.
const LARGE_MIN: u64 = 64 * 1024;

/// Which of the two compared files.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// The layer below (a transport).
    Lower,
    /// The layer built on it (MPI).
    Upper,
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Role::Lower => "lower",
            Role::Upper => "upper",
        })
    }
}

/// A comparison of two result files, layer against layer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Comparison {
    /// [`COMPARE_SCHEMA_VERSION`].
    pub schema_version: u32,
    pub lower: LayerInfo,
    pub upper: LayerInfo,
    /// One entry per benchmark × mode × variant measured in both files, in the lower file's
    /// order.
    pub benchmarks: Vec<BenchmarkComparison>,
    /// What only one of the files measured (whole benchmarks, or some sizes of one).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub not_compared: Vec<NotCompared>,
}

/// Where one side's results came from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct LayerInfo {
    /// The file, as the caller named it; absent when the reports were compared in memory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// Transports of the compared rows, in order of first appearance (one per benchmark; in
    /// practice one for the whole file).
    pub transports: Vec<TransportKind>,
    /// The `tool` string of the report (`commperf <version>`).
    pub tool: String,
    pub hostname: String,
}

/// One benchmark (in one mode and variant) measured by both layers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct BenchmarkComparison {
    pub benchmark: Benchmark,
    pub mode: Mode,
    /// Variant keys shared by every point (as in the result rows).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub packed: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub buffers: Option<BufferUse>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub block_spins: Option<u32>,
    /// Pairs measuring at once (absent for one pair).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pairs: Option<u32>,
    pub lower_transport: TransportKind,
    pub upper_transport: TransportKind,
    /// Matched points, by size (then segments, connections).
    pub points: Vec<Point>,
    /// Latency only: where the upper layer's curve breaks and the lower one's does not.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub protocol_changes: Vec<ProtocolChange>,
    /// One line summing the comparison up, from the numbers above.
    pub verdict: String,
}

/// One size (and segment count or connection count) measured by both layers. Latency-type
/// benchmarks fill the `_us` fields, bandwidth-type ones the `_mb_per_s` fields; a figure
/// absent on either side leaves the derived ones absent.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Point {
    pub size_bytes: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub segments: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connections: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lower_p50_us: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upper_p50_us: Option<f64>,
    /// upper − lower.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub added_us: Option<f64>,
    /// 100 · added / lower.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub added_percent: Option<f64>,
    /// Extended benchmarks: each layer's own cost over its baseline (the row's `cost_us`), so
    /// the cost of a service can be compared between the layers (Kutluğ 2000, §4.3.4–4.3.7).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lower_cost_us: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upper_cost_us: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lower_mb_per_s: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upper_mb_per_s: Option<f64>,
    /// upper / lower bandwidth.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fraction_delivered: Option<f64>,
    /// mr only: messages per second of both layers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lower_msgs_per_s: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upper_msgs_per_s: Option<f64>,
}

/// A breakpoint of the upper layer's latency curve (eager → rendezvous, say) that the lower
/// layer's curve does not have within one size step.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ProtocolChange {
    /// The last measured size of the piece before the change, and the first of the piece after.
    pub last_size_before: u64,
    pub first_size_after: u64,
    /// The upper layer's measured p50 at those two sizes.
    pub upper_p50_before_us: f64,
    pub upper_p50_after_us: f64,
    /// The piece after minus the piece before, both fitted lines evaluated at
    /// `first_size_after`: what the change costs at the first size it applies to.
    pub jump_us: f64,
    /// The jump as a percentage of the piece before's line there (of what the old protocol
    /// would have taken).
    pub jump_percent: f64,
    /// The per-KiB cost of each piece (the fitted slopes).
    pub slope_before_us_per_kib: f64,
    pub slope_after_us_per_kib: f64,
}

/// What only one file measured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct NotCompared {
    pub benchmark: Benchmark,
    pub mode: Mode,
    /// The file that has these rows.
    pub only_in: Role,
    /// True when the other file has no row of this benchmark in this mode at all (or not in
    /// this variant); false when it has other sizes.
    pub whole_benchmark: bool,
    /// The sizes only `only_in` measured, ascending, each once.
    pub sizes_bytes: Vec<u64>,
}

/// Why two reports cannot be compared.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum CompareError {
    /// One layer's rows of a benchmark come from more than one transport: which of them is
    /// "the" lower (or upper) layer is the user's choice, not ours.
    #[error(
        "the {role} layer's {benchmark} rows ({mode}) come from several transports ({}); \
         compare one transport per layer (run bench with one -t per file)",
        names(transports)
    )]
    SeveralTransports {
        role: Role,
        benchmark: Benchmark,
        mode: Mode,
        transports: Vec<TransportKind>,
    },
    /// The same point measured twice in one file: which one to compare is ambiguous.
    #[error(
        "the {role} layer has {benchmark} ({mode}, {transport}) at {} more than once",
        format_size(*size_bytes)
    )]
    DuplicateRow {
        role: Role,
        benchmark: Benchmark,
        mode: Mode,
        transport: TransportKind,
        size_bytes: u64,
    },
    /// No benchmark × size (× mode and variant) was measured by both.
    #[error("nothing to compare: no benchmark and size was measured by both; lower has {lower}; upper has {upper}")]
    NothingInCommon {
        /// What each file holds, e.g. `latency (poll) 1 to 4M (13 sizes)`.
        lower: String,
        upper: String,
    },
}

impl CompareError {
    /// The file the error is about, when it is about one.
    pub fn role(&self) -> Option<Role> {
        match self {
            CompareError::SeveralTransports { role, .. }
            | CompareError::DuplicateRow { role, .. } => Some(*role),
            CompareError::NothingInCommon { .. } => None,
        }
    }
}

fn names(ts: &[TransportKind]) -> String {
    ts.iter().map(|t| t.as_str()).collect::<Vec<_>>().join(", ")
}

/// What makes two rows' blocks comparable (everything but transport and size).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct BlockKey {
    benchmark: Benchmark,
    mode: Mode,
    packed: Option<bool>,
    buffers: Option<BufferUse>,
    block_spins: Option<u32>,
    /// 1 for a single pair, whether the row says `Some(1)` or nothing.
    pairs: u32,
}

/// What makes two rows of a block the same point.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct PointKey {
    size: u64,
    segments: Option<u32>,
    connections: Option<u32>,
}

fn block_key(r: &Row) -> BlockKey {
    BlockKey {
        benchmark: r.benchmark(),
        mode: r.mode,
        packed: r.variant().and_then(|v| v.packed()),
        buffers: r.variant().and_then(|v| v.buffers()),
        block_spins: r.variant().and_then(|v| v.block_spins()),
        pairs: r.pairs.unwrap_or(1),
    }
}

fn point_key(r: &Row) -> PointKey {
    PointKey {
        size: r.size_bytes,
        segments: r.variant().and_then(|v| v.segments()),
        connections: r.variant().and_then(|v| v.connections()),
    }
}

/// One file's rows of one block, sorted by point.
#[derive(Debug)]
struct Group<'a> {
    key: BlockKey,
    transport: TransportKind,
    rows: Vec<&'a Row>,
}

/// Groups a report's rows into blocks (in order of first appearance), refusing a block whose
/// rows come from several transports or hold the same point twice.
fn groups(report: &Report, role: Role) -> Result<Vec<Group<'_>>, CompareError> {
    let mut out: Vec<Group<'_>> = Vec::new();
    let mut transports: Vec<Vec<TransportKind>> = Vec::new();
    for r in &report.results {
        let key = block_key(r);
        match out.iter().position(|g| g.key == key) {
            Some(i) => {
                out[i].rows.push(r);
                push_new(&mut transports[i], r.transport);
            }
            None => {
                out.push(Group {
                    key,
                    transport: r.transport,
                    rows: vec![r],
                });
                transports.push(vec![r.transport]);
            }
        }
    }
    for (g, ts) in out.iter_mut().zip(transports) {
        if ts.len() > 1 {
            return Err(CompareError::SeveralTransports {
                role,
                benchmark: g.key.benchmark,
                mode: g.key.mode,
                transports: ts,
            });
        }
        g.rows.sort_by_key(|r| point_key(r));
        if let Some(w) = g
            .rows
            .windows(2)
            .find(|w| point_key(w[0]) == point_key(w[1]))
        {
            return Err(CompareError::DuplicateRow {
                role,
                benchmark: g.key.benchmark,
                mode: g.key.mode,
                transport: g.transport,
                size_bytes: w[0].size_bytes,
            });
        }
    }
    Ok(out)
}

/// Whether a benchmark reports bandwidth (MB/s) rather than a latency.
fn is_bandwidth(b: Benchmark) -> bool {
    matches!(b, Benchmark::Bw | Benchmark::Bibw | Benchmark::Mr)
}

fn point(benchmark: Benchmark, lo: &Row, up: &Row) -> Point {
    let mut p = Point {
        size_bytes: lo.size_bytes,
        segments: lo.variant().and_then(|v| v.segments()),
        connections: lo.variant().and_then(|v| v.connections()),
        ..Point::default()
    };
    if is_bandwidth(benchmark) {
        p.lower_mb_per_s = lo.mb_per_s();
        p.upper_mb_per_s = up.mb_per_s();
        p.fraction_delivered = match (lo.mb_per_s(), up.mb_per_s()) {
            (Some(l), Some(u)) if l > 0.0 => Some(u / l),
            _ => None,
        };
        if benchmark == Benchmark::Mr {
            p.lower_msgs_per_s = lo.msgs_per_s();
            p.upper_msgs_per_s = up.msgs_per_s();
        }
    } else {
        p.lower_p50_us = lo.p50_us();
        p.upper_p50_us = up.p50_us();
        if let (Some(l), Some(u)) = (lo.p50_us(), up.p50_us()) {
            p.added_us = Some(u - l);
            p.added_percent = (l > 0.0).then(|| 100.0 * (u - l) / l);
        }
        p.lower_cost_us = lo.cost_us();
        p.upper_cost_us = up.cost_us();
    }
    p
}

/// Distinct values in order of first appearance.
fn push_new<T: PartialEq>(v: &mut Vec<T>, x: T) {
    if !v.contains(&x) {
        v.push(x);
    }
}

fn layer_info(report: &Report, transports: Vec<TransportKind>) -> LayerInfo {
    LayerInfo {
        source: None,
        transports,
        tool: report.tool.clone(),
        hostname: report.machine.hostname.clone(),
    }
}

/// Compares a lower layer's results with an upper layer's, point by point.
///
/// Refuses a file whose rows of one benchmark come from several transports, or that holds one
/// point twice ([`CompareError::role`] says which file), and two files without a single point in
/// common. What only one file measured is listed in [`Comparison::not_compared`]. The
/// [`LayerInfo::source`] fields are left empty for the caller to name the files.
pub fn compare(lower: &Report, upper: &Report) -> Result<Comparison, CompareError> {
    let lo_groups = groups(lower, Role::Lower)?;
    let up_groups = groups(upper, Role::Upper)?;
    // The machine's copy speed, to tell whether a growing added time looks like a copy.
    let limits = lower.limits.as_ref().or(upper.limits.as_ref());
    let mut benchmarks = Vec::new();
    let mut not_compared = Vec::new();
    let (mut lo_ts, mut up_ts) = (Vec::new(), Vec::new());
    for lg in &lo_groups {
        let Some(ug) = up_groups.iter().find(|u| u.key == lg.key) else {
            not_compared.push(unmatched(lg, Role::Lower, true, lg.rows.iter().copied()));
            continue;
        };
        let mut points = Vec::new();
        let (mut lo_only, mut up_only) = (Vec::new(), Vec::new());
        for &l in &lg.rows {
            match ug.rows.iter().find(|u| point_key(u) == point_key(l)) {
                Some(u) => points.push(point(lg.key.benchmark, l, u)),
                None => lo_only.push(l),
            }
        }
        for &u in &ug.rows {
            if !lg.rows.iter().any(|l| point_key(l) == point_key(u)) {
                up_only.push(u);
            }
        }
        let whole = points.is_empty();
        if !lo_only.is_empty() {
            not_compared.push(unmatched(lg, Role::Lower, whole, lo_only.into_iter()));
        }
        if !up_only.is_empty() {
            not_compared.push(unmatched(ug, Role::Upper, whole, up_only.into_iter()));
        }
        if whole {
            continue;
        }
        push_new(&mut lo_ts, lg.transport);
        push_new(&mut up_ts, ug.transport);
        let mut b = BenchmarkComparison {
            benchmark: lg.key.benchmark,
            mode: lg.key.mode,
            packed: lg.key.packed,
            buffers: lg.key.buffers,
            block_spins: lg.key.block_spins,
            pairs: (lg.key.pairs != 1).then_some(lg.key.pairs),
            lower_transport: lg.transport,
            upper_transport: ug.transport,
            points,
            protocol_changes: Vec::new(),
            verdict: String::new(),
        };
        if b.benchmark == Benchmark::Latency {
            b.protocol_changes = protocol_changes(&b.points);
        }
        b.verdict = verdict(&b, limits);
        benchmarks.push(b);
    }
    for ug in &up_groups {
        if !lo_groups.iter().any(|l| l.key == ug.key) {
            not_compared.push(unmatched(ug, Role::Upper, true, ug.rows.iter().copied()));
        }
    }
    if benchmarks.is_empty() {
        return Err(CompareError::NothingInCommon {
            lower: holdings(&lo_groups),
            upper: holdings(&up_groups),
        });
    }
    Ok(Comparison {
        schema_version: COMPARE_SCHEMA_VERSION,
        lower: layer_info(lower, lo_ts),
        upper: layer_info(upper, up_ts),
        benchmarks,
        not_compared,
    })
}

fn unmatched<'a>(
    g: &Group<'a>,
    only_in: Role,
    whole_benchmark: bool,
    rows: impl Iterator<Item = &'a Row>,
) -> NotCompared {
    let mut sizes: Vec<u64> = rows.map(|r| r.size_bytes).collect();
    sizes.sort_unstable();
    sizes.dedup();
    NotCompared {
        benchmark: g.key.benchmark,
        mode: g.key.mode,
        only_in,
        whole_benchmark,
        sizes_bytes: sizes,
    }
}

/// `latency (poll) 1 to 4M (13 sizes), bw (poll) 64K`: what a file holds, for the error that
/// says the two files have nothing in common.
fn holdings(groups: &[Group<'_>]) -> String {
    if groups.is_empty() {
        return "no results".to_string();
    }
    let mut parts: Vec<String> = Vec::new();
    for g in groups {
        let mut sizes: Vec<u64> = g.rows.iter().map(|r| r.size_bytes).collect();
        sizes.dedup();
        let range = match sizes.as_slice() {
            [one] => format_size(*one),
            [first, .., last] => format!(
                "{} to {} ({} sizes)",
                format_size(*first),
                format_size(*last),
                sizes.len()
            ),
            [] => String::new(),
        };
        let part = format!("{} ({}) {range}", g.key.benchmark, g.key.mode);
        // Variants of one benchmark differ in keys the summary does not show; once is enough.
        if !parts.contains(&part) {
            parts.push(part);
        }
    }
    parts.join(", ")
}

// --- Protocol changes -------------------------------------------------------------------------

/// A piece of a fit is split where the split removes most of its error (the fit's own
/// criterion) and the piece misses by more than this relative RMS: measurement noise of a few
/// percent must not look like a protocol.
const FIT_TOLERANCE: f64 = 0.05;
/// A break is material when the new piece starts this much (relatively) above or below the
/// old piece's line, or when its slope differs by [`MATERIAL_SLOPE_RATIO`] and the two lines
/// are this far apart by the new piece's last size.
const MATERIAL_JUMP: f64 = 0.2;
const MATERIAL_SLOPE_RATIO: f64 = 2.0;

/// A material break of one curve: `index` is the first point after it.
#[derive(Debug, Clone, Copy)]
struct Break {
    index: usize,
    jump_us: f64,
    /// Percent of the old piece's line at the first point after.
    jump_percent: f64,
    slope_before: f64,
    slope_after: f64,
}

/// The material breakpoints of `ys` against `xs` (sorted ascending), by [`piecewise_fit`].
fn breaks(xs: &[f64], ys: &[f64]) -> Vec<Break> {
    // Three points per piece once there are enough: one noisy last point must not become a
    // protocol of its own.
    let min_points = if xs.len() >= 8 { 3 } else { 2 };
    let Some(pieces) = piecewise_fit(xs, ys, 4, min_points, FIT_TOLERANCE) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for w in pieces.windows(2) {
        let (a, b) = (&w[0], &w[1]);
        let x = xs[b.start];
        let before = a.fit.at(x);
        let jump = b.fit.at(x) - before;
        // Relative to the old protocol's cost there (or the last measured point when the old
        // line predicts nothing positive).
        let base = if before > 0.0 {
            before
        } else {
            ys[b.start - 1]
        };
        let jumped = base > 0.0 && (jump / base).abs() > MATERIAL_JUMP;
        let ratio = if a.fit.slope > 0.0 {
            b.fit.slope / a.fit.slope
        } else if b.fit.slope > 0.0 {
            f64::INFINITY
        } else {
            1.0
        };
        let bent = !(1.0 / MATERIAL_SLOPE_RATIO..=MATERIAL_SLOPE_RATIO).contains(&ratio) && {
            let end = b.to_x;
            let old = a.fit.at(end);
            old > 0.0 && ((b.fit.at(end) - old) / old).abs() > MATERIAL_JUMP
        };
        if jumped || bent {
            out.push(Break {
                index: b.start,
                jump_us: jump,
                jump_percent: if base > 0.0 { 100.0 * jump / base } else { 0.0 },
                slope_before: a.fit.slope,
                slope_after: b.fit.slope,
            });
        }
    }
    out
}

/// Breakpoints of the upper layer's p50 curve that the lower layer's curve lacks: a lower
/// break within one size step of it, jumping by at least half as much, means the change is
/// below MPI, not in it. (A small bend of the lower curve next to a large jump of the upper
/// one, as shm's 0.04 µs wobble at 2 KiB beside Open MPI's 2 µs rendezvous jump at 4 KiB, does
/// not explain the jump away.)
fn protocol_changes(points: &[Point]) -> Vec<ProtocolChange> {
    let pts: Vec<(u64, f64, f64)> = points
        .iter()
        .filter_map(|p| Some((p.size_bytes, p.lower_p50_us?, p.upper_p50_us?)))
        .filter(|(_, l, u)| l.is_finite() && u.is_finite())
        .collect();
    if pts.len() < 4 {
        return Vec::new();
    }
    let xs: Vec<f64> = pts.iter().map(|p| p.0 as f64).collect();
    let lo: Vec<f64> = pts.iter().map(|p| p.1).collect();
    let up: Vec<f64> = pts.iter().map(|p| p.2).collect();
    let lower_breaks = breaks(&xs, &lo);
    breaks(&xs, &up)
        .into_iter()
        .filter(|u| {
            !lower_breaks.iter().any(|l| {
                l.index.abs_diff(u.index) <= 1
                    && l.jump_us.signum() == u.jump_us.signum()
                    && l.jump_us.abs() >= 0.5 * u.jump_us.abs()
            })
        })
        .map(|u| ProtocolChange {
            last_size_before: pts[u.index - 1].0,
            first_size_after: pts[u.index].0,
            upper_p50_before_us: up[u.index - 1],
            upper_p50_after_us: up[u.index],
            jump_us: u.jump_us,
            jump_percent: u.jump_percent,
            slope_before_us_per_kib: u.slope_before * 1024.0,
            slope_after_us_per_kib: u.slope_after * 1024.0,
        })
        .collect()
}

// --- Verdicts ---------------------------------------------------------------------------------

/// The median of the values that are finite: a verdict's typical figure leaves out what was not
/// measured (NaN) and what cannot be averaged (±∞).
fn finite_median(mut v: Vec<f64>) -> Option<f64> {
    v.retain(|x| x.is_finite());
    median(&v)
}

/// `4 KiB`, `1 MiB`, `100 B`: sizes in prose.
pub(crate) fn size_words(n: u64) -> String {
    let s = format_size(n);
    match s.chars().last() {
        Some(u @ ('K' | 'M' | 'G')) => format!("{} {u}iB", &s[..s.len() - 1]),
        _ => format!("{s} B"),
    }
}

/// `adds 0.210 us` or, when the upper layer is the faster one, `saves 0.050 us`.
fn adds(us: f64) -> String {
    if us >= 0.0 {
        format!("adds {} us", fmt_us(us))
    } else {
        format!("saves {} us", fmt_us(-us))
    }
}

fn signed_percent(p: f64) -> String {
    format!("{:+.0} %", p)
}

fn verdict(b: &BenchmarkComparison, limits: Option<&Limits>) -> String {
    let (lo, up) = (b.lower_transport, b.upper_transport);
    if is_bandwidth(b.benchmark) {
        bandwidth_verdict(b, lo, up)
    } else if b.benchmark == Benchmark::Latency {
        latency_verdict(b, lo, up, limits)
    } else {
        extended_verdict(b, lo, up)
    }
}

fn latency_verdict(
    b: &BenchmarkComparison,
    lo: TransportKind,
    up: TransportKind,
    limits: Option<&Limits>,
) -> String {
    // (size, added, added %)
    let pts: Vec<(u64, f64, Option<f64>)> = b
        .points
        .iter()
        .filter_map(|p| Some((p.size_bytes, p.added_us?, p.added_percent)))
        .filter(|p| p.1.is_finite())
        .collect();
    let Some(&(first_size, ..)) = pts.first() else {
        return format!("no size has a p50 on both {lo} and {up}");
    };
    let mut small: Vec<&(u64, f64, Option<f64>)> =
        pts.iter().filter(|p| p.0 <= SMALL_MAX).collect();
    let small_words = if small.is_empty() {
        small.push(&pts[0]);
        format!("at {}", size_words(first_size))
    } else {
        format!("up to {}", size_words(small.last().map_or(0, |p| p.0)))
    };
    let small_max = small.last().map_or(0, |p| p.0);
    let small_added = finite_median(small.iter().map(|p| p.1).collect()).unwrap_or(0.0);
    let small_pct = finite_median(small.iter().filter_map(|p| p.2).collect());
    let pct = small_pct.map_or_else(String::new, |p| format!(" ({})", signed_percent(p)));

    // Above the small range, and past the last protocol change: the sizes one protocol serves,
    // where a growing added time means a per-byte cost rather than a step.
    let from = b
        .protocol_changes
        .last()
        .map_or(small_max + 1, |c| c.first_size_after.max(small_max + 1));
    let large: Vec<&(u64, f64, Option<f64>)> = pts.iter().filter(|p| p.0 >= from).collect();

    let all: Vec<f64> = pts.iter().map(|p| p.1).collect();
    let overall = finite_median(all.clone()).unwrap_or(0.0);
    let (min, max) = all
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, z), &x| {
            (a.min(x), z.max(x))
        });
    // Constant: every size within a quarter of the median (or 0.1 us for tiny overheads).
    if b.protocol_changes.is_empty()
        && pts.len() > small.len()
        && max - min <= (0.25 * overall.abs()).max(0.1)
    {
        return format!(
            "{up} adds a constant ~{} us over {lo} at every size ({} to {} us){}",
            fmt_us(overall),
            fmt_us(min),
            fmt_us(max),
            small_pct.map_or_else(String::new, |p| format!(
                ", {} {small_words}",
                signed_percent(p)
            ))
        );
    }
    let mut text = format!("{up} {}{pct} over {lo} {small_words}", adds(small_added));
    for c in &b.protocol_changes {
        text.push_str(&format!(
            "; protocol change between {} and {} ({})",
            size_words(c.last_size_before),
            size_words(c.first_size_after),
            change_words(c)
        ));
    }
    let Some(&&(large_first, ..)) = large.first() else {
        return text;
    };
    let lower_last = b
        .points
        .iter()
        .rev()
        .find_map(|p| p.added_us.and(p.lower_p50_us))
        .unwrap_or(0.0);
    match growth(&large, small_added, lower_last) {
        Some(slope) => {
            let gb_per_s = 1.0 / (slope * 1e3);
            text.push_str(&format!(
                "; from {} the added time grows with size, by {} us per KiB ({})",
                size_words(large_first),
                fmt_us(slope * 1024.0),
                copy_words(gb_per_s, limits)
            ));
        }
        None => {
            let m = finite_median(large.iter().map(|p| p.1).collect()).unwrap_or(0.0);
            text.push_str(&format!(
                "; from {} it {} (median), not growing with size",
                size_words(large_first),
                adds(m)
            ));
        }
    }
    text
}

/// `+4.080 us` for a jump; for a bend without one, how the per-KiB cost changes.
fn change_words(c: &ProtocolChange) -> String {
    if c.jump_percent.abs() > 100.0 * MATERIAL_JUMP {
        format!(
            "{}{} us",
            if c.jump_us >= 0.0 { "+" } else { "-" },
            fmt_us(c.jump_us.abs())
        )
    } else {
        format!(
            "the cost per KiB goes from {} to {} us",
            fmt_us(c.slope_before_us_per_kib),
            fmt_us(c.slope_after_us_per_kib)
        )
    }
}

/// The slope (us per byte) of the added time over `large` when it clearly grows with size:
/// it rises with size consistently (rank correlation at least [`GROWTH_RANK_CORRELATION`]: one
/// noisy large size, which decides a least-squares slope on a doubling ladder alone, cannot
/// make a trend), by more than 1 us and by more than a tenth of the lower layer's own time at
/// the largest size (a few percent is run-to-run noise), and at the largest size it is more than
/// twice the small-message added time.
fn growth(large: &[&(u64, f64, Option<f64>)], small_added: f64, lower_last: f64) -> Option<f64> {
    if large.len() < 2 {
        return None;
    }
    let xs: Vec<f64> = large.iter().map(|p| p.0 as f64).collect();
    let ys: Vec<f64> = large.iter().map(|p| p.1).collect();
    let fit = fit_line(&xs, &ys)?;
    let last = ys[ys.len() - 1];
    let rise = last - small_added;
    let grows = fit.slope > 0.0
        && rank_trend(&ys) >= GROWTH_RANK_CORRELATION
        && rise > 1.0
        && rise > 0.1 * lower_last
        && last > 2.0 * small_added.max(0.0);
    grows.then_some(fit.slope)
}

/// How consistently the added time must rise with size to be called growing.
const GROWTH_RANK_CORRELATION: f64 = 0.7;

/// Spearman's rank correlation of `ys` with their order (the sizes, ascending); 0 when it is
/// undefined (fewer than two points, or all equal).
fn rank_trend(ys: &[f64]) -> f64 {
    let order: Vec<f64> = (0..ys.len()).map(|i| i as f64).collect();
    spearman(&order, ys).unwrap_or(0.0)
}

/// What a per-byte cost of one copy at `gb_per_s` means: an extra copy when it is within the
/// memcpy speeds measured on this machine (half the out-of-cache one to 1.5× the in-cache
/// one), otherwise just the equivalent copy speed.
fn copy_words(gb_per_s: f64, limits: Option<&Limits>) -> String {
    if let Some(l) = limits {
        let (slow, fast) = (
            l.memcpy_out_of_cache_mb_per_s / 1e3,
            l.memcpy_in_cache_mb_per_s / 1e3,
        );
        if gb_per_s >= 0.5 * slow && gb_per_s <= 1.5 * fast {
            return format!(
                "a copy at {gb_per_s:.1} GB/s: an extra copy, memcpy here runs at {slow:.1} to \
                 {fast:.1} GB/s"
            );
        }
    }
    format!("what a copy at {gb_per_s:.1} GB/s would cost")
}

fn bandwidth_verdict(b: &BenchmarkComparison, lo: TransportKind, up: TransportKind) -> String {
    let what = match b.benchmark {
        Benchmark::Mr => "message rate",
        Benchmark::Bibw => "bidirectional bandwidth",
        _ => "bandwidth",
    };
    let frac = |keep: &dyn Fn(u64) -> bool| {
        finite_median(
            b.points
                .iter()
                .filter(|p| keep(p.size_bytes))
                .filter_map(|p| p.fraction_delivered)
                .collect(),
        )
    };
    let large = frac(&|s| s >= LARGE_MIN);
    let small = frac(&|s| s <= SMALL_MAX);
    let large_words = format!("at large messages (>= {})", size_words(LARGE_MIN));
    let small_words = format!("at small messages (<= {})", size_words(SMALL_MAX));
    let (head, head_words, rest) = match (large, small) {
        (Some(l), s) => (l, large_words, s.map(|s| (s, "at small ones".to_string()))),
        (None, Some(s)) => (s, small_words, None),
        (None, None) => match frac(&|_| true) {
            Some(all) => (all, "at every size measured".to_string(), None),
            None => return format!("no size has a bandwidth on both {lo} and {up}"),
        },
    };
    // One decimal below 10 %, so a layer delivering 0.4 % does not read as delivering nothing.
    let pct = |f: f64| {
        let p = 100.0 * f;
        if p < 9.95 {
            format!("{p:.1} %")
        } else {
            format!("{p:.0} %")
        }
    };
    let mut text = if head > 1.05 {
        format!(
            "{up} is faster than {lo} here: {} of its {what} {head_words}",
            pct(head)
        )
    } else {
        format!("{up} delivers {} of {lo}'s {what} {head_words}", pct(head))
    };
    if let Some((s, words)) = rest {
        text.push_str(&format!(", {} {words}", pct(s)));
    }
    text
}

fn extended_verdict(b: &BenchmarkComparison, lo: TransportKind, up: TransportKind) -> String {
    let added: Vec<f64> = b.points.iter().filter_map(|p| p.added_us).collect();
    let n = added.len();
    let Some(m) = finite_median(added) else {
        return format!("no point has a p50 on both {lo} and {up}");
    };
    let pct = finite_median(b.points.iter().filter_map(|p| p.added_percent).collect())
        .map_or_else(String::new, |p| format!(", {}", signed_percent(p)));
    let mut text = format!(
        "{up} {} over {lo} to {} latency (median over {n} point{}{pct})",
        adds(m),
        b.benchmark,
        if n == 1 { "" } else { "s" }
    );
    let cost =
        |get: fn(&Point) -> Option<f64>| finite_median(b.points.iter().filter_map(get).collect());
    if let (Some(lc), Some(uc)) = (cost(|p| p.lower_cost_us), cost(|p| p.upper_cost_us)) {
        text.push_str(&format!(
            "; its cost over its own baseline: {} us on {lo}, {} us on {up} (median)",
            fmt_us(lc),
            fmt_us(uc)
        ));
    }
    text
}
