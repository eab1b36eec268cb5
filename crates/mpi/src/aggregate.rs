//! Results of several pairs that measured at once, combined as OSU's multi-pair tests report
//! them: bandwidth and message rate add up over the pairs (osu_mbw_mr), latency figures are the
//! mean of each pair's figure (osu_multi_lat). Every pair ran the same schedule, so rows are
//! matched by position, and a row that does not describe the same measurement is an error
//! rather than a silently wrong sum.

use commperf_core::Row;

fn same_measurement(a: &Row, b: &Row) -> bool {
    (
        a.benchmark,
        a.transport,
        a.mode,
        a.size_bytes,
        a.segments,
        a.packed,
        a.buffers,
        a.block_spins,
        a.connections,
    ) == (
        b.benchmark,
        b.transport,
        b.mode,
        b.size_bytes,
        b.segments,
        b.packed,
        b.buffers,
        b.block_spins,
        b.connections,
    )
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
                base.benchmark, base.size_bytes, rows[p].benchmark, rows[p].size_bytes
            ));
        }
        let mut r = base.clone();
        r.mb_per_s = sum(&rows, |r| r.mb_per_s);
        r.msgs_per_s = sum(&rows, |r| r.msgs_per_s);
        r.p50_us = mean(&rows, |r| r.p50_us);
        r.p90_us = mean(&rows, |r| r.p90_us);
        r.p99_us = mean(&rows, |r| r.p99_us);
        r.mean_us = mean(&rows, |r| r.mean_us);
        // The extremes stay extremes.
        r.min_us = rows.iter().filter_map(|r| r.min_us).reduce(f64::min);
        r.max_us = rows.iter().filter_map(|r| r.max_us).reduce(f64::max);
        r.baseline_p50_us = mean(&rows, |r| r.baseline_p50_us);
        r.cost_us = mean(&rows, |r| r.cost_us);
        r.o_s_us = mean(&rows, |r| r.o_s_us);
        r.o_r_us = mean(&rows, |r| r.o_r_us);
        r.g_us = mean(&rows, |r| r.g_us);
        r.gap_per_byte_us = mean(&rows, |r| r.gap_per_byte_us);
        r.L_us = mean(&rows, |r| r.L_us);
        // One pair's physical limit says nothing about several sharing the machine.
        (r.efficiency, r.limit_us, r.limit_mb_per_s) = (None, None, None);
        r.validated = rows.iter().all(|r| r.validated);
        r.pairs = Some(rows.len() as u32);
        out.push(r);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use commperf_core::{Benchmark, Mode, TransportKind};

    fn bw(mb: f64) -> Row {
        let mut r = Row::new(Benchmark::Bw, TransportKind::Mpi, Mode::Poll, 1 << 20);
        r.mb_per_s = Some(mb);
        r.msgs_per_s = Some(mb * 1e6 / (1 << 20) as f64);
        r.validated = true;
        r
    }

    fn lat(p50: f64, min: f64) -> Row {
        let mut r = Row::new(Benchmark::Latency, TransportKind::Mpi, Mode::Poll, 8);
        (r.p50_us, r.min_us, r.max_us) = (Some(p50), Some(min), Some(p50 * 3.0));
        r
    }

    #[test]
    fn bandwidth_adds_up_and_latency_is_averaged_over_pairs() {
        let rows = combine(&[
            vec![lat(1.0, 0.5), bw(1000.0)],
            vec![lat(3.0, 0.25), bw(3000.0)],
        ])
        .unwrap();
        assert_eq!(rows[0].p50_us, Some(2.0));
        assert_eq!(rows[0].min_us, Some(0.25));
        assert_eq!(rows[0].max_us, Some(9.0));
        assert_eq!(rows[1].mb_per_s, Some(4000.0));
        assert_eq!(rows[1].msgs_per_s, Some(4000.0 * 1e6 / (1 << 20) as f64));
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
