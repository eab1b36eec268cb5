//! Performance signatures (C. Liao, M. Martonosi and D. W. Clark, "Performance Monitoring in a
//! Myrinet-Connected Shrimp Cluster", SPDT 1998, §2.4 and Figures 5–6): each stage's mean
//! latency per message size against its baseline from a quiet run, beside how many messages
//! each size had (a mean of five messages is not read like one of fifty thousand), also by
//! sender, by receiver and by type, and a verdict naming the stage that deviates most.
//!
//! The baseline is a saved monitor run of a quiet system (its stages are the same quantities)
//! or a `commperf calibrate` profile, whose LogGP points give o_s, L and o_r per size: the
//! nearest stand-ins for source, net and destination (o_r covers the whole receive call where
//! destination starts at arrival, so it is an upper bound; the user guide says so).

use crate::hist::{Histograms, Key, Stage, Stages, Totals, SIZE_BINS};
use commperf_core::{format_size, Profile};
use commperf_report::plot::{
    colour, Bar, BarGroup, Figure, Marker, Panel, Point, Series, Stroke, XScale, GREY,
};
use commperf_report::{Align, Table};
use commperf_stats::axis::Axis;
use serde::{Deserialize, Serialize};
use std::fmt::Write as _;

/// Version of [`Signature`]'s JSON (its history: `commperf_formats::Kind::Signature`).
pub const SIGNATURE_SCHEMA_VERSION: u32 = commperf_formats::version::SIGNATURE;

/// The three stages a baseline and the verdict cover (late-sender wait is the program's, not
/// the communication system's).
pub const COMM_STAGES: [Stage; 3] = [Stage::Source, Stage::Net, Stage::Destination];

/// One stage's quiet-run mean at one size bin.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct BaselinePoint {
    pub size_low_bytes: u64,
    pub stage: Stage,
    pub mean_us: f64,
}

/// Expected stage latencies per size.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Baseline {
    /// Where it came from (`monitor run FILE`, `calibrate profile FILE`).
    pub source: String,
    pub points: Vec<BaselinePoint>,
}

impl Baseline {
    /// The stage means of a (quiet) monitor run, over all its keys.
    pub fn from_histograms(h: &Histograms, source: impl Into<String>) -> Baseline {
        let all = h.collapse(|_| true);
        let mut points = Vec::new();
        for stage in COMM_STAGES {
            for (b, t) in all.get(stage).by_size() {
                if let Some(m) = t.mean_ns() {
                    points.push(BaselinePoint {
                        size_low_bytes: SIZE_BINS.low(b),
                        stage,
                        mean_us: m / 1e3,
                    });
                }
            }
        }
        Baseline {
            source: source.into(),
            points,
        }
    }

    /// o_s → source, L → net, o_r → destination, per LogGP point of a calibrate profile.
    pub fn from_profile(p: &Profile, source: impl Into<String>) -> Baseline {
        let mut points = Vec::new();
        for l in &p.loggp {
            let low = SIZE_BINS.low(SIZE_BINS.index(l.size_bytes));
            for (stage, v) in [
                (Stage::Source, l.o_s_us),
                (Stage::Net, l.L_us),
                (Stage::Destination, l.o_r_us),
            ] {
                points.push(BaselinePoint {
                    size_low_bytes: low,
                    stage,
                    mean_us: v,
                });
            }
        }
        Baseline {
            source: source.into(),
            points,
        }
    }

    /// The baseline of `stage` for the size bin starting at `size_low_bytes`.
    pub fn get(&self, stage: Stage, size_low_bytes: u64) -> Option<f64> {
        self.points
            .iter()
            .find(|p| p.stage == stage && p.size_low_bytes == size_low_bytes)
            .map(|p| p.mean_us)
    }
}

/// One stage's figure in a signature row.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct StageCell {
    pub stage: Stage,
    /// Messages this stage was measured on.
    pub messages: u64,
    pub mean_us: Option<f64>,
    pub baseline_us: Option<f64>,
    /// mean / baseline.
    pub ratio: Option<f64>,
    /// Latencies below zero (clock error larger than the latency).
    pub negative: u64,
}

/// One size bin.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SizeRow {
    pub size_low_bytes: u64,
    pub size_high_bytes: u64,
    pub mean_bytes: f64,
    /// How often this size was seen (the left panel of Figure 6).
    pub messages: u64,
    pub stages: Vec<StageCell>,
}

/// One sender, receiver or type, over all sizes; its baseline is the size baselines weighted
/// by its own messages per size.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct GroupRow {
    pub group: String,
    pub messages: u64,
    pub stages: Vec<StageCell>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Verdict {
    /// The stage with the most time above its baseline, if any is more than 10 % above.
    pub stage: Option<Stage>,
    pub excess_us_per_message: Option<f64>,
    pub ratio: Option<f64>,
    pub text: String,
}

/// A performance signature: the document `monitor report --format json` writes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Signature {
    pub schema_version: u32,
    pub baseline_source: Option<String>,
    pub programs: Vec<u32>,
    pub messages: u64,
    pub by_size: Vec<SizeRow>,
    pub by_sender: Vec<GroupRow>,
    pub by_receiver: Vec<GroupRow>,
    pub by_type: Vec<GroupRow>,
    pub verdict: Verdict,
}

fn cell(stage: Stage, t: &Totals, base: Option<f64>) -> StageCell {
    let mean_us = t.mean_ns().map(|m| m / 1e3);
    StageCell {
        stage,
        messages: t.count,
        mean_us,
        baseline_us: base,
        ratio: match (mean_us, base) {
            (Some(m), Some(b)) if b > 0.0 => Some(m / b),
            _ => None,
        },
        negative: t.negative,
    }
}

fn group(label: String, st: &Stages, base: Option<&Baseline>) -> GroupRow {
    let mut stages = Vec::new();
    let mut messages = 0;
    for stage in Stage::ALL {
        let h = st.get(stage);
        let t = h.totals();
        messages = messages.max(t.count);
        // Weighted baseline: Σ count·baseline over sizes that have one, if all do.
        let b = base.and_then(|b| {
            let mut sum = 0.0;
            for (bin, tt) in h.by_size() {
                sum += tt.count as f64 * b.get(stage, SIZE_BINS.low(bin))?;
            }
            (t.count > 0).then(|| sum / t.count as f64)
        });
        stages.push(cell(stage, &t, b));
    }
    GroupRow {
        group: label,
        messages,
        stages,
    }
}

fn groups<K: Ord + Clone>(
    h: &Histograms,
    base: Option<&Baseline>,
    key: impl Fn(&Key) -> K,
    label: impl Fn(&K) -> String,
) -> Vec<GroupRow> {
    let mut ks: Vec<K> = h.iter().map(|(k, _)| key(k)).collect();
    ks.sort();
    ks.dedup();
    ks.iter()
        .map(|g| group(label(g), &h.collapse(|k| key(k) == *g), base))
        .collect()
}

/// What a stage's excess usually means (Liao, Martonosi and Clark 1998, §2.3).
pub fn meaning(s: Stage) -> &'static str {
    match s {
        Stage::Net => "contention in the network (or on the path between the processes)",
        Stage::Source => "the sending host or its I/O path (a busy CPU or memory bus, copies)",
        Stage::Destination => {
            "the receiving host or its I/O path (a busy CPU or memory bus, copies)"
        }
        Stage::LateSenderWait => "load imbalance: receivers wait for senders",
    }
}

impl Signature {
    /// The signature of `h` (optionally restricted to one program) against `base`.
    pub fn new(h: &Histograms, base: Option<&Baseline>, program: Option<u32>) -> Signature {
        let keep = |k: &Key| program.is_none_or(|p| k.program == p);
        let all = h.collapse(keep);
        let sub = h.filter(keep);
        let mut bins: Vec<usize> = Stage::ALL
            .iter()
            .flat_map(|&s| all.get(s).by_size().into_iter().map(|(b, _)| b))
            .collect();
        bins.sort_unstable();
        bins.dedup();
        let mut by_size = Vec::new();
        let mut messages = 0;
        for b in bins {
            let low = SIZE_BINS.low(b);
            let mut stages = Vec::new();
            let (mut n, mut mean_bytes) = (0u64, 0.0);
            for stage in Stage::ALL {
                let t = all
                    .get(stage)
                    .by_size()
                    .into_iter()
                    .find(|x| x.0 == b)
                    .map(|x| x.1)
                    .unwrap_or_default();
                if t.count > n {
                    n = t.count;
                    mean_bytes = t.mean_bytes().unwrap_or(0.0);
                }
                stages.push(cell(stage, &t, base.and_then(|bl| bl.get(stage, low))));
            }
            messages += n;
            by_size.push(SizeRow {
                size_low_bytes: low,
                size_high_bytes: SIZE_BINS.high(b) - 1,
                mean_bytes,
                messages: n,
                stages,
            });
        }
        let by_sender = groups(&sub, base, |k| k.src, |s| format!("from {s}"));
        let by_receiver = groups(&sub, base, |k| k.dst, |d| format!("to {d}"));
        let by_type = groups(&sub, base, |k| k.kind.clone(), |t| t.to_string());
        let verdict = verdict(&by_size, base.is_some());
        Signature {
            schema_version: SIGNATURE_SCHEMA_VERSION,
            baseline_source: base.map(|b| b.source.clone()),
            programs: sub.programs(),
            messages,
            by_size,
            by_sender,
            by_receiver,
            by_type,
            verdict,
        }
    }

    /// The signature as the aligned text table (`table`), Markdown (`md`) or CSV (`csv`).
    pub fn render_table(&self, fmt: TableFormat) -> String {
        let mut t = Table::new()
            .column("Size", Align::Left)
            .column("msgs", Align::Right);
        for s in Stage::ALL {
            t = t.column(format!("{s}(us)"), Align::Right);
            if s != Stage::LateSenderWait {
                t = t.column(format!("{s} base(us)"), Align::Right);
            }
        }
        let num = |v: Option<f64>| v.map_or("-".to_string(), |x| format!("{x:.3}"));
        for r in &self.by_size {
            let mut row = vec![size_label(r), r.messages.to_string()];
            for c in &r.stages {
                row.push(num(c.mean_us));
                if c.stage != Stage::LateSenderWait {
                    row.push(num(c.baseline_us));
                }
            }
            t.push_row(row);
        }
        let mut g = Table::new()
            .column("Group", Align::Left)
            .column("msgs", Align::Right);
        for s in COMM_STAGES {
            g = g
                .column(format!("{s}(us)"), Align::Right)
                .column(format!("{s} x base"), Align::Right);
        }
        for r in self
            .by_sender
            .iter()
            .chain(&self.by_receiver)
            .chain(&self.by_type)
        {
            let mut row = vec![r.group.clone(), r.messages.to_string()];
            for c in r.stages.iter().filter(|c| c.stage != Stage::LateSenderWait) {
                row.push(num(c.mean_us));
                row.push(c.ratio.map_or("-".into(), |x| format!("{x:.2}")));
            }
            g.push_row(row);
        }
        let base = self.baseline_source.as_deref().unwrap_or("none");
        match fmt {
            TableFormat::Text => format!(
                "# commperf monitor signature | {} messages | baseline {base}\n{}\n# by sender, receiver, type\n{}\n# verdict: {}\n",
                self.messages,
                t.render_text("# "),
                g.render_text("# "),
                self.verdict.text
            ),
            TableFormat::Markdown => format!(
                "## Performance signature\n\n{} messages; baseline: {base}\n\n{}\n### By sender, receiver and type\n\n{}\n**Verdict:** {}\n",
                self.messages,
                t.render_markdown(),
                g.render_markdown(),
                self.verdict.text
            ),
            TableFormat::Csv => t.render_csv(),
        }
    }

    /// Figure 6's two panels as one SVG (on the chart layer): left, how many messages of each
    /// size; right, each stage's mean against size, solid with round markers, its baseline
    /// dashed with square ones, a marker on every point (so a run of one size still shows its
    /// means); the verdict underneath.
    pub fn render_svg(&self) -> String {
        let labels: Vec<String> = self.by_size.iter().map(size_label).collect();
        let mut counts = Panel::new(
            XScale::Slots(labels.clone()),
            "message size",
            Axis::for_values(self.by_size.iter().map(|r| r.messages as f64)),
            "messages",
        )
        .title("Messages per size");
        for (i, row) in self.by_size.iter().enumerate() {
            counts.bars.push(BarGroup {
                slot: i,
                bars: vec![Bar {
                    value: Some(row.messages as f64),
                    colour: GREY,
                    attrs: format!(
                        r#"data-size-low="{}" data-messages="{}""#,
                        row.size_low_bytes, row.messages
                    ),
                    tip: format!("{}: {} messages", size_label(row), row.messages),
                }],
            });
        }
        let vals = self
            .by_size
            .iter()
            .flat_map(|row| row.stages.iter())
            .filter(|c| c.stage != Stage::LateSenderWait)
            .flat_map(|c| [c.mean_us, c.baseline_us])
            .flatten();
        let mut stages = Panel::new(
            XScale::Slots(labels),
            "message size",
            Axis::for_values(vals),
            "mean latency, µs",
        )
        .title("Stage means against their baseline");
        for (k, stage) in COMM_STAGES.iter().enumerate() {
            for base in [false, true] {
                let (name, stroke, marker) = if base {
                    (format!("{stage} baseline"), Stroke::Dashed, Marker::Square)
                } else {
                    (stage.to_string(), Stroke::Solid, Marker::Circle)
                };
                let mut line = Series::new(name.clone(), colour(k))
                    .stroke(stroke)
                    .marker(marker)
                    .attrs(format!(r#"data-stage="{stage}" data-baseline="{base}""#));
                for (i, row) in self.by_size.iter().enumerate() {
                    let Some(c) = row.stages.iter().find(|c| c.stage == *stage) else {
                        continue;
                    };
                    let Some(v) = (if base { c.baseline_us } else { c.mean_us }) else {
                        continue;
                    };
                    line = line.point(
                        Point::new(i as f64, v)
                            .tip(format!("{name}, {}: {v:.3} µs", size_label(row)))
                            .attrs(format!(r#"data-value="{v}""#)),
                    );
                }
                if !line.points.is_empty() {
                    stages.series.push(line);
                }
            }
        }
        let title = format!(
            "Performance signature ({} messages; baseline: {})",
            self.messages,
            self.baseline_source.as_deref().unwrap_or("none")
        );
        let mut f = Figure::new(title)
            .class("signature")
            .width(1000.0)
            .panel(counts)
            .panel(stages)
            .note(format!("Verdict: {}", self.verdict.text));
        if stages_empty(&f) {
            f.notes
                .push("No stage was measured: nothing to draw against size.".into());
        }
        f.svg()
    }
}

/// Whether the stage panel has no line at all.
fn stages_empty(f: &Figure) -> bool {
    f.panels.get(1).is_none_or(|p| p.series.is_empty())
}

/// The tabular renderings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TableFormat {
    Text,
    Markdown,
    Csv,
}

fn size_label(r: &SizeRow) -> String {
    if r.size_low_bytes == r.size_high_bytes {
        format_size(r.size_low_bytes)
    } else {
        format!(
            "{}..{}",
            format_size(r.size_low_bytes),
            format_size(r.size_high_bytes)
        )
    }
}

/// The verdict without a baseline: how to get one and where to give it. `monitor report`
/// takes `--baseline` for every kind of run (the MPI form, `monitor -- mpirun …`, does not);
/// `DIR` stands for the run's directory.
pub const NO_BASELINE: &str = "no baseline given: save a run on the quiet system (`commperf \
     monitor run -o quiet`) or a profile of it (`commperf calibrate -t shm -o quiet.json`), then \
     compare with `commperf monitor report DIR --baseline quiet/run.json`";

/// The stage with the most time per message above its baseline (over the sizes that have
/// one), if more than 10 % above.
fn verdict(rows: &[SizeRow], have_base: bool) -> Verdict {
    if !have_base {
        return Verdict {
            stage: None,
            excess_us_per_message: None,
            ratio: None,
            text: NO_BASELINE.into(),
        };
    }
    let mut best: Option<(Stage, f64, f64, f64)> = None;
    for stage in COMM_STAGES {
        let (mut actual, mut expected, mut n) = (0.0, 0.0, 0u64);
        for r in rows {
            let Some(c) = r.stages.iter().find(|c| c.stage == stage) else {
                continue;
            };
            if let (Some(m), Some(b)) = (c.mean_us, c.baseline_us) {
                actual += m * c.messages as f64;
                expected += b * c.messages as f64;
                n += c.messages;
            }
        }
        if n == 0 || expected <= 0.0 {
            continue;
        }
        let excess = (actual - expected) / n as f64;
        if best.is_none_or(|b| excess > b.1) {
            best = Some((stage, excess, actual / expected, expected / n as f64));
        }
    }
    let mut wait_note = String::new();
    let (mut wait, mut net, mut nw) = (0.0, 0.0, 0u64);
    for r in rows {
        for c in &r.stages {
            if let Some(m) = c.mean_us {
                match c.stage {
                    Stage::LateSenderWait => {
                        wait += m * c.messages as f64;
                        nw += c.messages;
                    }
                    Stage::Net => net += m * c.messages as f64,
                    _ => {}
                }
            }
        }
    }
    if nw > 0 && wait > net && wait > 0.0 {
        let _ = write!(
            wait_note,
            "; receives waited {:.3} us per message for late senders, more than the network took: {}",
            wait / nw as f64,
            meaning(Stage::LateSenderWait)
        );
    }
    match best {
        Some((stage, excess, ratio, _)) if ratio > 1.10 => Verdict {
            stage: Some(stage),
            excess_us_per_message: Some(excess),
            ratio: Some(ratio),
            text: format!(
                "{stage} deviates most: {ratio:.2} x its baseline (+{excess:.3} us per message); that usually means {}{wait_note}",
                meaning(stage)
            ),
        },
        Some((_, _, ratio, _)) => Verdict {
            stage: None,
            excess_us_per_message: None,
            ratio: Some(ratio),
            text: format!(
                "every stage within 10 % of its baseline: nothing stands out{wait_note}"
            ),
        },
        None => Verdict {
            stage: None,
            excess_us_per_message: None,
            ratio: None,
            text: format!("the baseline covers none of the sizes seen{wait_note}"),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Source, net and destination figures of a size bin, µs.
    type Three = [Option<f64>; 3];

    /// A signature of the given size bins (size, messages, means, baselines).
    fn signature(rows: &[(u64, u64, Three, Three)]) -> Signature {
        let by_size = rows
            .iter()
            .map(|&(size, messages, means, bases)| SizeRow {
                size_low_bytes: size,
                size_high_bytes: size,
                mean_bytes: size as f64,
                messages,
                stages: Stage::ALL
                    .iter()
                    .enumerate()
                    .map(|(i, &stage)| StageCell {
                        stage,
                        messages,
                        mean_us: means.get(i).copied().flatten(),
                        baseline_us: bases.get(i).copied().flatten(),
                        ratio: None,
                        negative: 0,
                    })
                    .collect(),
            })
            .collect::<Vec<_>>();
        let verdict = verdict(&by_size, rows.iter().any(|r| r.3[0].is_some()));
        Signature {
            schema_version: SIGNATURE_SCHEMA_VERSION,
            baseline_source: None,
            programs: vec![0],
            messages: rows.iter().map(|r| r.1).sum(),
            by_size,
            by_sender: Vec::new(),
            by_receiver: Vec::new(),
            by_type: Vec::new(),
            verdict,
        }
    }

    #[test]
    fn one_size_draws_a_marker_per_stage_not_an_empty_line() {
        let s = signature(&[(64, 1000, [Some(0.5), Some(2.0), Some(0.7)], [None; 3])]);
        let svg = s.render_svg();
        assert_eq!(svg.matches("<polyline").count(), 0, "no line of one point");
        // source, net and destination: one round marker each, at the one slot's centre.
        let circles: Vec<&str> = svg
            .split("<circle class=\"point\"")
            .skip(1)
            .map(|c| &c[..c.find('>').unwrap()])
            .collect();
        assert_eq!(circles.len(), 3, "{svg}");
        let cx: Vec<&str> = circles
            .iter()
            .map(|c| c.split("cx=\"").nth(1).unwrap().split('"').next().unwrap())
            .collect();
        assert!(cx.iter().all(|x| *x == cx[0]), "{cx:?}");
        assert_eq!(
            svg.matches("<rect class=\"bar\"").count(),
            1,
            "the size's count"
        );
        // The verdict without a baseline, under the figure.
        assert!(svg.contains("Verdict: no baseline given"), "{svg}");
    }

    #[test]
    fn stages_and_baselines_are_lines_with_markers_on_every_point() {
        let s = signature(&[
            (
                64,
                1000,
                [Some(0.5), Some(2.0), Some(0.7)],
                [Some(0.4), Some(1.0), Some(0.7)],
            ),
            (
                4096,
                10,
                [Some(1.5), Some(9.0), Some(2.7)],
                [Some(1.4), Some(3.0), Some(2.0)],
            ),
        ]);
        let svg = s.render_svg();
        // Three stages and their three baselines, two points each.
        assert_eq!(svg.matches("<polyline").count(), 6, "{svg}");
        assert_eq!(svg.matches("<circle class=\"point\"").count(), 6);
        assert_eq!(svg.matches("<rect class=\"point\"").count(), 6);
        for label in ["source", "net baseline", "destination"] {
            assert!(
                svg.contains(&format!(">{label}</text>")),
                "{label} not in the legend"
            );
        }
        assert!(
            s.verdict.text.starts_with("net deviates most"),
            "{}",
            s.verdict.text
        );
        assert!(svg.contains("Verdict: net deviates most"), "{svg}");
    }
}
