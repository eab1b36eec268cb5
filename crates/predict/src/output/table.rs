//! The human summary of a [`Prediction`]: what was predicted from what, the total, where each
//! rank's time went, and which links were the bottleneck.
//!
//! `predict` depends only on `core` and `stats`, so it cannot use the report crate's table; the
//! small aligned-column [`Grid`] here does the same job for this one summary.

use super::{LinkUse, Prediction, RankTimes};
use std::fmt::Write as _;

/// Ranks listed in full; beyond this the table shows the ones that finish last.
pub const MAX_RANK_ROWS: usize = 16;

/// Bottleneck links listed.
pub const MAX_LINK_ROWS: usize = 5;

/// A grid of formatted cells under headers, separated by two spaces, no trailing blanks.
/// Headers starting with `<` are left-aligned (labels; the `<` is not shown), the others
/// right-aligned (numbers, so digits of the same weight line up). Cells beyond the last header
/// are left-aligned under an empty header.
#[derive(Debug, Clone, Default)]
pub struct Grid {
    headers: Vec<String>,
    left: Vec<bool>,
    rows: Vec<Vec<String>>,
}

impl Grid {
    pub fn new(headers: &[&str]) -> Grid {
        Grid {
            headers: headers
                .iter()
                .map(|h| h.strip_prefix('<').unwrap_or(h).to_string())
                .collect(),
            left: headers.iter().map(|h| h.starts_with('<')).collect(),
            rows: Vec::new(),
        }
    }

    pub fn push(&mut self, cells: Vec<String>) {
        self.rows.push(cells);
    }

    pub fn render(&self) -> String {
        let ncols = self
            .rows
            .iter()
            .map(Vec::len)
            .fold(self.headers.len(), usize::max);
        let mut widths = vec![0; ncols];
        for row in std::iter::once(&self.headers).chain(&self.rows) {
            for (c, s) in row.iter().enumerate() {
                widths[c] = widths[c].max(s.chars().count());
            }
        }
        let mut out = String::new();
        for row in std::iter::once(&self.headers).chain(&self.rows) {
            let cells: Vec<String> = widths
                .iter()
                .enumerate()
                .map(|(c, &w)| {
                    let s = row.get(c).map_or("", String::as_str);
                    if self.left.get(c).copied().unwrap_or(true) {
                        format!("{s:<w$}")
                    } else {
                        format!("{s:>w$}")
                    }
                })
                .collect();
            out.push_str(cells.join("  ").trim_end());
            out.push('\n');
        }
        out
    }
}

/// A time in µs with three decimals (ns resolution), or `-` when it is not a number.
pub fn us(v: f64) -> String {
    if v.is_finite() {
        format!("{v:.3}")
    } else {
        "-".to_string()
    }
}

/// The ranks shown: all when there are at most [`MAX_RANK_ROWS`], else the ones that finish
/// last (finish descending, then rank), so the critical ranks are never cut.
pub fn shown_ranks(ranks: &[RankTimes]) -> Vec<&RankTimes> {
    let mut v: Vec<&RankTimes> = ranks.iter().collect();
    if v.len() > MAX_RANK_ROWS {
        v.sort_by(|a, b| {
            b.finish_us
                .total_cmp(&a.finish_us)
                .then(a.rank.cmp(&b.rank))
        });
        v.truncate(MAX_RANK_ROWS);
    }
    v
}

/// The links to list: in the prediction's bottleneck order when it has one, else by busy time,
/// then bytes (both descending), then id; at most [`MAX_LINK_ROWS`].
fn shown_links(p: &Prediction) -> Vec<&LinkUse> {
    let mut v: Vec<&LinkUse> = if p.bottlenecks.is_empty() {
        let mut all: Vec<&LinkUse> = p.links.iter().collect();
        all.sort_by(|a, b| {
            b.busy_us
                .total_cmp(&a.busy_us)
                .then(b.bytes.total_cmp(&a.bytes))
                .then(a.id.cmp(&b.id))
        });
        all
    } else {
        p.bottlenecks
            .iter()
            .filter_map(|name| {
                p.links
                    .iter()
                    .find(|l| format!("{}->{}", l.from, l.to) == *name)
            })
            .collect()
    };
    v.truncate(MAX_LINK_ROWS);
    v
}

/// The whole summary.
pub fn render(p: &Prediction) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "# commperf predict | model {} | trace {} ({}) | topology {} | profile {} | background {} | seed {}",
        p.model, p.trace, p.trace_format, p.topology, p.profile, p.background, p.seed
    );
    let _ = writeln!(
        out,
        "total {} us  ({} ranks, {} operations, {} messages, {} events; eager up to {} B)",
        us(p.total_us),
        p.ranks_count,
        p.operations,
        p.messages,
        p.events,
        p.eager_threshold_bytes
    );
    if let Some(b) = &p.bounds {
        let _ = writeln!(
            out,
            "bounds: best {} us, average {} us, worst {} us over {} background draws",
            us(b.best_us),
            us(b.average_us),
            us(b.worst_us),
            b.runs
        );
    }

    out.push('\n');
    let shown = shown_ranks(&p.ranks);
    if shown.len() < p.ranks.len() {
        let _ = writeln!(
            out,
            "the {} ranks that finish last ({} more ranks not shown):",
            shown.len(),
            p.ranks.len() - shown.len()
        );
    }
    let mut g = Grid::new(&[
        "rank",
        "<host",
        "finish(us)",
        "compute(us)",
        "comm(us)",
        "wait(us)",
    ]);
    for r in shown {
        g.push(vec![
            r.rank.to_string(),
            r.host.clone(),
            us(r.finish_us),
            us(r.compute_us),
            us(r.comm_us),
            us(r.wait_us),
        ]);
    }
    out.push_str(&g.render());

    let links = shown_links(p);
    if !links.is_empty() {
        out.push('\n');
        let _ = writeln!(
            out,
            "bottleneck links ({} of {} that carried traffic):",
            links.len(),
            p.links.len()
        );
        let mut g = Grid::new(&[
            "<link",
            "<class",
            "bytes",
            "busy(us)",
            "util(%)",
            "max contention",
        ]);
        for l in links {
            g.push(vec![
                format!("{}->{}", l.from, l.to),
                l.class.clone(),
                if l.bytes.is_finite() {
                    format!("{:.0}", l.bytes)
                } else {
                    "-".into()
                },
                us(l.busy_us),
                if l.utilization.is_finite() {
                    format!("{:.1}", l.utilization * 100.0)
                } else {
                    "-".into()
                },
                l.max_contention.to_string(),
            ]);
        }
        out.push_str(&g.render());
    }

    if let Some(k) = &p.knee {
        out.push('\n');
        let _ = writeln!(
            out,
            "knee of {} ({} B packets, background load {:.2}): capacity {:.0} pkts/s; carried {:.0} pkts/s while busy, {:.0} pkts/s over the run",
            k.link,
            k.packet_bytes,
            k.background_load,
            k.capacity_pkts_per_s,
            k.busy_throughput_pkts_per_s,
            k.mean_throughput_pkts_per_s
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::output::fixtures::{many_ranks, prediction};

    #[test]
    fn snapshot_small() {
        let text = render(&prediction());
        let expected = "\
# commperf predict | model contention | trace ring.txt (own) | topology star:3 | profile netgauge t.dat | background const:0.25 | seed 7
total 42.500 us  (3 ranks, 9 operations, 3 messages, 12 events; eager up to 65536 B)
bounds: best 40.000 us, average 42.500 us, worst 45.125 us over 8 background draws

rank  host   finish(us)  compute(us)  comm(us)  wait(us)
   0  node0      40.000       10.000    20.000    10.000
   1  node1      42.500       12.500    25.000     5.000
   2  node2      41.000        8.000    30.000     3.000

bottleneck links (2 of 3 that carried traffic):
link       class  bytes  busy(us)  util(%)  max contention
sw->node1  edge    8192    30.000     70.6               2
node0->sw  edge    4096    20.000     47.1               1

knee of sw->node1 (4096 B packets, background load 0.25): capacity 183105 pkts/s; carried 66667 pkts/s while busy, 47059 pkts/s over the run
";
        assert_eq!(text, expected, "got:\n{text}");
    }

    #[test]
    fn many_ranks_show_the_sixteen_that_finish_last() {
        let p = many_ranks(40);
        let text = render(&p);
        assert!(
            text.contains("the 16 ranks that finish last (24 more ranks not shown):"),
            "{text}"
        );
        let shown: Vec<u32> = shown_ranks(&p.ranks).iter().map(|r| r.rank).collect();
        // finish = (rank % 10) µs: the four ranks finishing at 9, then the four at 8 …, by rank.
        assert_eq!(
            shown,
            [9, 19, 29, 39, 8, 18, 28, 38, 7, 17, 27, 37, 6, 16, 26, 36]
        );
        // No links, no knee, no bounds: those sections are left out.
        assert!(!text.contains("bottleneck"));
        assert!(!text.contains("knee"));
        assert!(!text.contains("bounds"));
    }

    #[test]
    fn grid_aligns_labels_left_and_numbers_right() {
        let mut g = Grid::new(&["<name", "n"]);
        g.push(vec!["a".into(), "1000".into()]);
        g.push(vec!["longer".into(), "2".into(), "extra".into()]);
        assert_eq!(
            g.render(),
            "name       n\na       1000\nlonger     2  extra\n"
        );
    }
}
