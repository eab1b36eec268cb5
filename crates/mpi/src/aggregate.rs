//! Results of several pairs that measured at once, combined as OSU's multi-pair tests report
//! them: bandwidth and message rate add up over the pairs (osu_mbw_mr), latency figures are the
//! mean of each pair's figure (osu_multi_lat). Every pair ran the same schedule, so rows are
//! matched by position, and a row that does not describe the same measurement is an error
//! rather than a silently wrong sum.

use commperf_core::{LogGpFigures, Percentiles, Row};

fn same_measurement(a: &Row, b: &Row) -> bool {
    let key = |r: &Row| {
        (
            r.benchmark(),
            r.transport,
            r.mode,
            r.size_bytes,
            r.variant(),
        )
    };
    key(a) == key(b)
}

fn sum(rows: &[&Row], f: impl Fn(&Row) -> Option<f64>) -> Option<f64> {
    rows.iter().map(|r| f(r)).sum()
}

fn mean(rows: &[&Row], f: impl Fn(&Row) -> Option<f64>) -> Option<f64> {
    sum(rows, f).map(|s| s / rows.len() as f64)
}

/// One report's rows from each pair's rows. One pair's rows come back unchanged.
pub fn combine(per_pair: &[Vec<Row>]) -> Result<Vec<Row>, String> {
    let Some(first) = per_pair.first() else {
        return Ok(Vec::new());
    };
    if per_pair.len() == 1 {
        return Ok(first.clone());
    }
    if let Some((p, rows)) = per_pair
        .iter()
        .enumerate()
        .find(|(_, r)| r.len() != first.len())
    {
        return Err(format!(
            "pair 0 measured {} rows and pair {p} {}",
            first.len(),
            rows.len()
        ));
    }
    let mut out = Vec::with_capacity(first.len());
    for (i, base) in first.iter().enumerate() {
        let rows: Vec<&Row> = per_pair.iter().map(|p| &p[i]).collect();
        if let Some(p) = rows.iter().position(|r| !same_measurement(base, r)) {
            return Err(format!(
                "row {i}: pair 0 measured {} {} B and pair {p} {} {} B",
                base.benchmark(),
                base.size_bytes,
                rows[p].benchmark(),
                rows[p].size_bytes
            ));
        }
        let mut r = base.clone();
        combine_figures(&mut r, &rows);
        r.validated = rows.iter().all(|r| r.validated);
        r.pairs = Some(rows.len() as u32);
        out.push(r);
    }
    Ok(out)
}

/// The figures of one row from each pair's: rates summed, latencies averaged, extremes kept.
fn combine_figures(r: &mut Row, rows: &[&Row]) {
    let pct = |f: fn(&Percentiles) -> Option<f64>| move |r: &Row| r.percentiles().and_then(f);
    if let Some(p) = r.percentiles_mut() {
        p.p50_us = mean(rows, pct(|p| p.p50_us));
        p.p90_us = mean(rows, pct(|p| p.p90_us));
        p.p99_us = mean(rows, pct(|p| p.p99_us));
        p.mean_us = mean(rows, pct(|p| p.mean_us));
        // The extremes stay extremes.
        p.min_us = rows
            .iter()
            .filter_map(|r| r.percentiles()?.min_us)
            .reduce(f64::min);
        p.max_us = rows
            .iter()
            .filter_map(|r| r.percentiles()?.max_us)
            .reduce(f64::max);
    }
    // One pair's physical limit says nothing about several sharing the machine.
    if let Some(l) = r.latency_mut() {
        (l.limit_us, l.efficiency) = (None, None);
    }
    if let Some(s) = r.stream_mut() {
        s.mb_per_s = sum(rows, |r| r.stream()?.mb_per_s);
        s.msgs_per_s = sum(rows, |r| r.stream()?.msgs_per_s);
        (s.limit_mb_per_s, s.efficiency) = (None, None);
    }
    if let Some(p) = r.pipeline_mut() {
        p.mb_per_s = sum(rows, |r| r.pipeline()?.mb_per_s);
        (p.limit_mb_per_s, p.efficiency) = (None, None);
    }
    if let Some(c) = r.cost_mut() {
        c.baseline_p50_us = mean(rows, |r| r.cost()?.baseline_p50_us);
        c.cost_us = mean(rows, |r| r.cost()?.cost_us);
    }
    if let Some(l) = r.loggp_mut() {
        let of = |f: fn(&LogGpFigures) -> Option<f64>| move |r: &Row| r.loggp().and_then(f);
        l.p50_us = mean(rows, of(|l| l.p50_us));
        l.o_s_us = mean(rows, of(|l| l.o_s_us));
        l.o_r_us = mean(rows, of(|l| l.o_r_us));
        l.g_us = mean(rows, of(|l| l.g_us));
        l.gap_per_byte_us = mean(rows, of(|l| l.gap_per_byte_us));
        l.L_us = mean(rows, of(|l| l.L_us));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use commperf_core::{Benchmark, Mode, TransportKind};

    fn bw(mb: f64) -> Row {
        let mut r = Row::new(Benchmark::Bw, TransportKind::Mpi, Mode::Poll, 1 << 20);
        let s = r.stream_mut().unwrap();
        s.mb_per_s = Some(mb);
        s.msgs_per_s = Some(mb * 1e6 / (1 << 20) as f64);
        r.validated = true;
        r
    }

    fn lat(p50: f64, min: f64) -> Row {
        let mut r = Row::new(Benchmark::Latency, TransportKind::Mpi, Mode::Poll, 8);
        let p = r.percentiles_mut().unwrap();
        (p.p50_us, p.min_us, p.max_us) = (Some(p50), Some(min), Some(p50 * 3.0));
        r
    }

    #[test]
    fn bandwidth_adds_up_and_latency_is_averaged_over_pairs() {
        let rows = combine(&[
            vec![lat(1.0, 0.5), bw(1000.0)],
            vec![lat(3.0, 0.25), bw(3000.0)],
        ])
        .unwrap();
        assert_eq!(rows[0].p50_us(), Some(2.0));
        assert_eq!(rows[0].percentiles().unwrap().min_us, Some(0.25));
        assert_eq!(rows[0].percentiles().unwrap().max_us, Some(9.0));
        assert_eq!(rows[1].mb_per_s(), Some(4000.0));
        assert_eq!(rows[1].msgs_per_s(), Some(4000.0 * 1e6 / (1 << 20) as f64));
        assert_eq!(rows[0].pairs, Some(2));
        assert!(!rows[0].validated && rows[1].validated);
    }

    #[test]
    fn one_pair_is_returned_as_measured() {
        let one = vec![vec![lat(1.0, 0.5)]];
        assert_eq!(combine(&one).unwrap(), one[0]);
        assert_eq!(combine(&one).unwrap()[0].pairs, None);
    }

    #[test]
    fn pairs_that_measured_different_things_are_refused() {
        let e = combine(&[vec![lat(1.0, 0.5)], vec![bw(1.0)]]).unwrap_err();
        assert!(
            e.contains("latency 8 B") && e.contains("bw 1048576 B"),
            "{e}"
        );
        let e = combine(&[vec![lat(1.0, 0.5)], vec![]]).unwrap_err();
        assert!(e.contains("1 rows and pair 1 0"), "{e}");
    }
}
