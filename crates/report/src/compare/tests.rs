//! The comparison against hand-computed numbers: synthetic reports whose added time, delivered
//! fraction and breakpoints are known exactly.

use super::*;
use crate::Format;
use commperf_core::{FlatRow, Machine, Options, Placement, TimerInfo, SCHEMA_VERSION};

fn report(host: &str, rows: Vec<Row>) -> Report {
    Report {
        schema_version: SCHEMA_VERSION,
        tool: "commperf 0.1.0".to_string(),
        started_unix_s: 1_700_000_000,
        machine: Machine {
            hostname: host.to_string(),
            cpu_model: "cpu".to_string(),
            cores: 2,
            kernel: "6.8".to_string(),
            timer: TimerInfo {
                source: "tsc".to_string(),
                tsc_ghz: Some(2.0),
                cost_ns: 10.0,
            },
        },
        options: Options {
            benchmarks: vec![],
            transports: vec![],
            modes: vec![Mode::Poll],
            sizes_bytes: vec![],
            iterations: None,
            warmup: None,
            window: 64,
            validate: false,
            launcher: "local".to_string(),
            peer: None,
            mpi_library: None,
            mpi_calls: None,
        },
        placement: Placement {
            pinned: true,
            local_cpu: Some(0),
            peer_cpu: Some(1),
            ..Placement::default()
        },
        limits: None,
        results: rows,
        disturbance: Default::default(),
        partial: false,
    }
}

fn lat(t: TransportKind, size: u64, p50: f64) -> Row {
    let mut r = FlatRow::new(Benchmark::Latency, t, Mode::Poll, size);
    r.p50_us = Some(p50);
    Row::try_from(r).unwrap()
}

fn bw(b: Benchmark, t: TransportKind, size: u64, mb: f64) -> Row {
    let mut r = FlatRow::new(b, t, Mode::Poll, size);
    r.mb_per_s = Some(mb);
    r.msgs_per_s = Some(mb * 1e6 / size as f64);
    Row::try_from(r).unwrap()
}

const SHM: TransportKind = TransportKind::Shm;
const MPI: TransportKind = TransportKind::Mpi;
const TCP: TransportKind = TransportKind::Tcp;

/// 1 B … 1 MiB, powers of two (21 sizes).
fn ladder() -> Vec<u64> {
    (0..=20).map(|p| 1u64 << p).collect()
}

/// A shared-memory transport: 0.25 us plus a copy at 10 GB/s (1e-4 us per byte).
fn shm_curve(s: u64) -> f64 {
    0.25 + s as f64 * 1e-4
}

fn latency_pair(lower: impl Fn(u64) -> f64, upper: impl Fn(u64) -> f64) -> (Report, Report) {
    let lo = ladder()
        .into_iter()
        .map(|s| lat(SHM, s, lower(s)))
        .collect();
    let up = ladder()
        .into_iter()
        .map(|s| lat(MPI, s, upper(s)))
        .collect();
    (report("node1", lo), report("node2", up))
}

#[test]
fn added_time_is_upper_minus_lower_matched_by_size_not_transport() {
    // Dyadic values, so the differences are exact.
    let lo = report("node1", vec![lat(SHM, 8, 0.25), lat(SHM, 1024, 0.5)]);
    let up = report("node2", vec![lat(MPI, 1024, 1.0), lat(MPI, 8, 0.75)]);
    let c = compare(&lo, &up).unwrap();
    assert_eq!(c.schema_version, COMPARE_SCHEMA_VERSION);
    assert_eq!(c.lower.transports, [SHM]);
    assert_eq!(c.upper.transports, [MPI]);
    assert_eq!(
        (c.lower.hostname.as_str(), c.upper.hostname.as_str()),
        ("node1", "node2")
    );
    assert_eq!(c.lower.tool, "commperf 0.1.0");
    assert_eq!(c.benchmarks.len(), 1);
    let b = &c.benchmarks[0];
    assert_eq!((b.lower_transport, b.upper_transport), (SHM, MPI));
    // Sorted by size although the upper file lists 1024 first.
    let got: Vec<_> = b
        .points
        .iter()
        .map(|p| {
            (
                p.size_bytes,
                p.lower_p50_us,
                p.upper_p50_us,
                p.added_us,
                p.added_percent,
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            (8, Some(0.25), Some(0.75), Some(0.5), Some(200.0)),
            (1024, Some(0.5), Some(1.0), Some(0.5), Some(100.0)),
        ]
    );
    assert!(b.points.iter().all(|p| p.fraction_delivered.is_none()));
    assert!(c.not_compared.is_empty());
}

#[test]
fn bandwidth_is_the_fraction_delivered_and_mr_keeps_both_message_rates() {
    let lo = report(
        "a",
        vec![
            bw(Benchmark::Bw, SHM, 65536, 8000.0),
            bw(Benchmark::Mr, SHM, 8, 8.0),
        ],
    );
    let up = report(
        "b",
        vec![
            bw(Benchmark::Bw, MPI, 65536, 2000.0),
            bw(Benchmark::Mr, MPI, 8, 4.0),
        ],
    );
    let c = compare(&lo, &up).unwrap();
    let bwp = &c.benchmarks[0].points[0];
    assert_eq!(c.benchmarks[0].benchmark, Benchmark::Bw);
    assert_eq!(
        (
            bwp.lower_mb_per_s,
            bwp.upper_mb_per_s,
            bwp.fraction_delivered
        ),
        (Some(8000.0), Some(2000.0), Some(0.25))
    );
    // Message rates only for mr, and no latency figures for bandwidth rows.
    assert_eq!((bwp.lower_msgs_per_s, bwp.added_us), (None, None));
    let mr = &c.benchmarks[1].points[0];
    assert_eq!(c.benchmarks[1].benchmark, Benchmark::Mr);
    assert_eq!(mr.fraction_delivered, Some(0.5));
    assert_eq!(
        (mr.lower_msgs_per_s, mr.upper_msgs_per_s),
        (Some(1e6), Some(5e5))
    );
}

#[test]
fn variant_keys_decide_what_matches() {
    let nc = |t, segments, packed, p50| {
        let mut r = FlatRow::new(Benchmark::Noncontig, t, Mode::Poll, 4096);
        (r.segments, r.packed, r.p50_us) = (Some(segments), Some(packed), Some(p50));
        Row::try_from(r).unwrap()
    };
    let blocking = |t, spins, p50| {
        let mut r = FlatRow::new(Benchmark::Blocking, t, Mode::Block, 64);
        (r.block_spins, r.p50_us) = (Some(spins), Some(p50));
        Row::try_from(r).unwrap()
    };
    let pairs = |t, n: Option<u32>, mb| {
        let mut r = bw(Benchmark::Bw, t, 65536, mb);
        r.pairs = n;
        r
    };
    let lo = report(
        "a",
        vec![
            nc(SHM, 1, false, 1.0),
            nc(SHM, 4, false, 2.0),
            nc(SHM, 4, true, 3.0),
            blocking(SHM, 0, 5.0),
            blocking(SHM, 1000, 4.0),
            pairs(SHM, Some(1), 1000.0),
        ],
    );
    let up = report(
        "b",
        vec![
            nc(MPI, 4, true, 3.5),
            nc(MPI, 4, false, 2.25),
            blocking(MPI, 0, 6.0),
            // Four pairs summed are not one pair: not comparable with the lower single pair…
            pairs(MPI, Some(4), 3000.0),
            // …but one pair written as absent is.
            pairs(MPI, None, 750.0),
        ],
    );
    let c = compare(&lo, &up).unwrap();
    let summary: Vec<_> = c
        .benchmarks
        .iter()
        .map(|b| {
            let pts: Vec<_> = b
                .points
                .iter()
                .map(|p| (p.segments, p.added_us.or(p.fraction_delivered)))
                .collect();
            (b.benchmark, b.packed, b.block_spins, b.pairs, pts)
        })
        .collect();
    assert_eq!(
        summary,
        [
            (
                Benchmark::Noncontig,
                Some(false),
                None,
                None,
                vec![(Some(4), Some(0.25))]
            ),
            (
                Benchmark::Noncontig,
                Some(true),
                None,
                None,
                vec![(Some(4), Some(0.5))]
            ),
            (
                Benchmark::Blocking,
                None,
                Some(0),
                None,
                vec![(None, Some(1.0))]
            ),
            (Benchmark::Bw, None, None, None, vec![(None, Some(0.75))]),
        ]
    );
    let missing: Vec<_> = c
        .not_compared
        .iter()
        .map(|n| {
            (
                n.benchmark,
                n.only_in,
                n.whole_benchmark,
                n.sizes_bytes.clone(),
            )
        })
        .collect();
    assert_eq!(
        missing,
        [
            // One segment only in lower; the rest of that block matched.
            (Benchmark::Noncontig, Role::Lower, false, vec![4096]),
            // Spin-then-block only in lower.
            (Benchmark::Blocking, Role::Lower, true, vec![64]),
            (Benchmark::Bw, Role::Upper, true, vec![65536]),
        ]
    );
}

#[test]
fn a_layer_with_several_transports_is_refused_naming_its_role() {
    let lo = report("a", vec![lat(SHM, 8, 1.0), lat(TCP, 64, 2.0)]);
    let up = report("b", vec![lat(MPI, 8, 2.0)]);
    let e = compare(&lo, &up).unwrap_err();
    assert_eq!(
        e,
        CompareError::SeveralTransports {
            role: Role::Lower,
            benchmark: Benchmark::Latency,
            mode: Mode::Poll,
            transports: vec![SHM, TCP],
        }
    );
    assert_eq!(e.role(), Some(Role::Lower));
    assert_eq!(
        e.to_string(),
        "the lower layer's latency rows (poll) come from several transports (shm, tcp); compare \
         one transport per layer (run bench with one -t per file)"
    );
    // The same in the upper file, and a point measured twice.
    let e = compare(&up, &lo).unwrap_err();
    assert_eq!(e.role(), Some(Role::Upper));
    let twice = report("b", vec![lat(MPI, 8, 2.0), lat(MPI, 8, 2.5)]);
    let e = compare(&up, &twice).unwrap_err();
    assert_eq!(
        e.to_string(),
        "the upper layer has latency (poll, mpi) at 8 more than once"
    );
}

#[test]
fn nothing_in_common_names_what_each_file_has() {
    let lo = report(
        "a",
        (0..=12).map(|p| lat(SHM, 1 << p, 1.0)).collect::<Vec<_>>(),
    );
    let up = report("b", vec![bw(Benchmark::Bw, MPI, 65536, 1.0)]);
    let e = compare(&lo, &up).unwrap_err();
    assert_eq!(
        e,
        CompareError::NothingInCommon {
            lower: "latency (poll) 1 to 4K (13 sizes)".into(),
            upper: "bw (poll) 64K".into(),
        }
    );
    assert_eq!(e.role(), None);
    // Same benchmark, disjoint sizes: still nothing to compare.
    let up = report("b", vec![lat(MPI, 3, 1.0)]);
    assert!(matches!(
        compare(&lo, &up),
        Err(CompareError::NothingInCommon { .. })
    ));
    // An empty file.
    let e = compare(&report("a", vec![]), &up).unwrap_err();
    assert!(
        e.to_string()
            .contains("lower has no results; upper has latency (poll) 3"),
        "{e}"
    );
}

#[test]
fn a_benchmark_in_one_file_only_is_listed_not_refused() {
    let lo = report("a", vec![lat(SHM, 8, 1.0), lat(SHM, 16, 1.0)]);
    let up = report(
        "b",
        vec![lat(MPI, 8, 1.5), bw(Benchmark::Bibw, MPI, 65536, 1.0)],
    );
    let c = compare(&lo, &up).unwrap();
    assert_eq!(c.benchmarks.len(), 1);
    assert_eq!(
        c.not_compared,
        [
            NotCompared {
                benchmark: Benchmark::Latency,
                mode: Mode::Poll,
                only_in: Role::Lower,
                whole_benchmark: false,
                sizes_bytes: vec![16],
            },
            NotCompared {
                benchmark: Benchmark::Bibw,
                mode: Mode::Poll,
                only_in: Role::Upper,
                whole_benchmark: true,
                sizes_bytes: vec![65536],
            },
        ]
    );
    let text = render_comparison(&c, Format::Table);
    assert!(
        text.ends_with(
            "\n# not compared: latency (poll) 16 only in lower shm; bibw (poll) only in upper mpi\n"
        ),
        "{text}"
    );
}

/// Open MPI's shared-memory eager limit: 0.47 us at 1 KiB, 4.9 us from 4 KiB on.
fn eager_limit(s: u64) -> f64 {
    shm_curve(s) + if s <= 2048 { 0.12 } else { 4.2 }
}

#[test]
fn a_jump_only_the_upper_layer_has_is_its_protocol_change() {
    let (lo, up) = latency_pair(shm_curve, eager_limit);
    let c = compare(&lo, &up).unwrap();
    let b = &c.benchmarks[0];
    assert_eq!(b.protocol_changes.len(), 1, "{:?}", b.protocol_changes);
    let ch = &b.protocol_changes[0];
    assert_eq!((ch.last_size_before, ch.first_size_after), (2048, 4096));
    assert_eq!(ch.upper_p50_before_us, eager_limit(2048));
    assert_eq!(ch.upper_p50_after_us, eager_limit(4096));
    // Both pieces are exact lines with the same slope: the jump is the step, 4.2 − 0.12.
    assert!((ch.jump_us - 4.08).abs() < 1e-9, "{}", ch.jump_us);
    assert!((ch.slope_before_us_per_kib - 0.1024).abs() < 1e-9);
    assert!((ch.slope_after_us_per_kib - 0.1024).abs() < 1e-9);
    assert!(
        b.verdict.starts_with(
            "mpi adds 0.120 us (+47 %) over shm up to 1 KiB; protocol change between 2 KiB and \
             4 KiB (+4.080 us); from 4 KiB it adds 4.200 us (median), not growing with size"
        ),
        "{}",
        b.verdict
    );
    let text = render_comparison(&c, Format::Table);
    assert!(
        text.contains(
            "# protocol change: between 2 KiB and 4 KiB: mpi 0.575 -> 4.860 us (+4.080 us); \
             0.102 -> 0.102 us per KiB\n"
        ),
        "{text}"
    );
}

#[test]
fn a_break_the_lower_layer_has_too_is_not_the_upper_layers() {
    // The transport itself jumps at 4 KiB, and MPI adds a constant on top: nothing of MPI's.
    let lower = |s: u64| shm_curve(s) + if s <= 2048 { 0.0 } else { 3.0 };
    let (lo, up) = latency_pair(lower, |s| lower(s) + 0.12);
    let b = &compare(&lo, &up).unwrap().benchmarks[0];
    assert_eq!(b.protocol_changes, []);
    // One size step apart still counts as the same break (the ladders may differ by noise).
    let lower = |s: u64| shm_curve(s) + if s <= 4096 { 0.0 } else { 3.0 };
    let (lo, up) = latency_pair(lower, eager_limit);
    let b = &compare(&lo, &up).unwrap().benchmarks[0];
    assert_eq!(b.protocol_changes, []);
    // Two steps apart are two different breaks.
    let lower = |s: u64| shm_curve(s) + if s <= 8192 { 0.0 } else { 3.0 };
    let (lo, up) = latency_pair(lower, eager_limit);
    let b = &compare(&lo, &up).unwrap().benchmarks[0];
    assert_eq!(b.protocol_changes.len(), 1);
    assert_eq!(b.protocol_changes[0].first_size_after, 4096);
}

#[test]
fn a_small_lower_bend_beside_a_large_upper_jump_leaves_the_jump_to_the_upper_layer() {
    // Measured on the 2-vCPU VM (bench latency --layers shm,mpi, 1 B … 64 KiB): shm bends by
    // 0.04 us at 2 KiB, Open MPI jumps by 2 us at its 4 KiB shared-memory eager limit.
    let xs: Vec<u64> = (0..17).map(|p| 1u64 << p).collect();
    let shm = [
        0.080, 0.075, 0.075, 0.075, 0.075, 0.070, 0.125, 0.120, 0.130, 0.170, 0.210, 0.265, 0.406,
        0.541, 0.972, 1.773, 3.296,
    ];
    let mpi = [
        0.200, 0.185, 0.175, 0.175, 0.190, 0.223, 0.190, 0.200, 0.220, 0.326, 0.391, 0.486, 2.865,
        3.304, 4.058, 5.460, 8.408,
    ];
    let lo = report(
        "vm",
        xs.iter().zip(shm).map(|(&s, p)| lat(SHM, s, p)).collect(),
    );
    let up = report(
        "vm",
        xs.iter().zip(mpi).map(|(&s, p)| lat(MPI, s, p)).collect(),
    );
    let b = &compare(&lo, &up).unwrap().benchmarks[0];
    assert_eq!(b.protocol_changes.len(), 1, "{:?}", b.protocol_changes);
    let ch = &b.protocol_changes[0];
    assert_eq!((ch.last_size_before, ch.first_size_after), (2048, 4096));
    assert!(
        b.verdict
            .contains("protocol change between 2 KiB and 4 KiB"),
        "{}",
        b.verdict
    );
}

#[test]
fn small_steps_and_mild_bends_are_not_protocol_changes() {
    // A 10 % step is within what the run-to-run noise of a VM does: the fit keeps one line.
    let (lo, up) = latency_pair(shm_curve, |s| {
        shm_curve(s) * if s <= 2048 { 1.0 } else { 1.1 }
    });
    assert_eq!(
        compare(&lo, &up).unwrap().benchmarks[0].protocol_changes,
        []
    );
    // From 2 KiB the per-byte cost is 1.5× the transport's: the fit does break there, but
    // neither a jump over 20 % nor a slope change over 2× — no protocol change is claimed.
    let bend = |s: u64| {
        if s <= 2048 {
            shm_curve(s)
        } else {
            shm_curve(2048) + (s - 2048) as f64 * 1.5e-4
        }
    };
    let xs: Vec<f64> = ladder().iter().map(|&s| s as f64).collect();
    let ys: Vec<f64> = ladder().into_iter().map(bend).collect();
    assert_eq!(
        piecewise_fit(&xs, &ys, 4, 3, FIT_TOLERANCE).unwrap().len(),
        2
    );
    let (lo, up) = latency_pair(shm_curve, bend);
    assert_eq!(
        compare(&lo, &up).unwrap().benchmarks[0].protocol_changes,
        []
    );
}

#[test]
fn a_bend_is_reported_by_its_cost_per_kib() {
    // MVICH's case (Kutluğ 2000, Figure 4.3): above 1 KiB an extra copy at 5 GB/s (2e-4 us per
    // byte) triples the per-byte cost. 1 KiB lies on both lines; the fit gives it to the new
    // piece.
    let upper = |s: u64| shm_curve(s) + 0.2 + s.saturating_sub(1024) as f64 * 2e-4;
    let (lo, up) = latency_pair(shm_curve, upper);
    let b = &compare(&lo, &up).unwrap().benchmarks[0];
    assert_eq!(b.protocol_changes.len(), 1);
    let ch = &b.protocol_changes[0];
    assert_eq!((ch.last_size_before, ch.first_size_after), (512, 1024));
    assert!(ch.jump_percent.abs() < 1e-9, "{ch:?}");
    assert_eq!(
        b.verdict,
        "mpi adds 0.200 us (+79 %) over shm up to 1 KiB; protocol change between 512 B and 1 KiB \
         (the cost per KiB goes from 0.102 to 0.307 us); from 2 KiB the added time grows with \
         size, by 0.205 us per KiB (what a copy at 5.0 GB/s would cost)"
    );
}

#[test]
fn constant_overhead_verdict() {
    let (lo, up) = latency_pair(shm_curve, |s| shm_curve(s) + 0.2);
    let b = &compare(&lo, &up).unwrap().benchmarks[0];
    assert_eq!(b.protocol_changes, []);
    // +79 %: the median small size is 32 B, where shm takes 0.2532 us.
    assert_eq!(
        b.verdict,
        "mpi adds a constant ~0.200 us over shm at every size (0.200 to 0.200 us), +79 % up to \
         1 KiB"
    );
}

#[test]
fn growing_overhead_verdict_gives_the_copy_speed() {
    // Above 1 KiB MPI copies once more, at 20 GB/s (5e-5 us per byte).
    let upper = |s: u64| shm_curve(s) + 0.2 + s.saturating_sub(1024) as f64 * 5e-5;
    let (lo, up) = latency_pair(shm_curve, upper);
    let b = &compare(&lo, &up).unwrap().benchmarks[0];
    assert_eq!(b.protocol_changes, []);
    assert_eq!(
        b.verdict,
        "mpi adds 0.200 us (+79 %) over shm up to 1 KiB; from 2 KiB the added time grows with \
         size, by 0.051 us per KiB (what a copy at 20.0 GB/s would cost)"
    );
    // Where the machine's memcpy speed is known and the rate is within it, it is called a copy.
    let mut lo = lo;
    lo.limits = Some(Limits {
        cacheline_one_way_us: 0.05,
        memcpy_in_cache_mb_per_s: 40_000.0,
        memcpy_out_of_cache_mb_per_s: 15_000.0,
        memcpy_in_cache_bytes: 1 << 20,
        memcpy_out_of_cache_bytes: 1 << 28,
        cpus: [0, 1],
        memcpy_two_cpus_in_cache_mb_per_s: None,
        memcpy_two_cpus_out_of_cache_mb_per_s: None,
    });
    let b = &compare(&lo, &up).unwrap().benchmarks[0];
    assert!(
        b.verdict.ends_with(
            "by 0.051 us per KiB (a copy at 20.0 GB/s: an extra copy, memcpy here runs at 15.0 \
             to 40.0 GB/s)"
        ),
        "{}",
        b.verdict
    );
    // A slope too slow for any memcpy here is not called one.
    lo.limits.as_mut().unwrap().memcpy_out_of_cache_mb_per_s = 50_000.0;
    lo.limits.as_mut().unwrap().memcpy_in_cache_mb_per_s = 90_000.0;
    let b = &compare(&lo, &up).unwrap().benchmarks[0];
    assert!(
        b.verdict.ends_with("(what a copy at 20.0 GB/s would cost)"),
        "{}",
        b.verdict
    );
}

#[test]
fn noise_at_the_largest_sizes_is_not_called_growing() {
    // ±4 % of deterministic jitter on top of a constant 0.1 us: at 1 MiB that is ±4 us, and
    // the largest size alone would give a least-squares line a slope.
    let (lo, up) = latency_pair(shm_curve, |s| {
        (shm_curve(s) + 0.1) * (1.0 + 0.04 * (s.trailing_zeros() as f64 * 2.3).sin())
    });
    let b = &compare(&lo, &up).unwrap().benchmarks[0];
    assert_eq!(b.protocol_changes, []);
    assert!(
        b.verdict
            .ends_with("; from 2 KiB it adds 0.106 us (median), not growing with size"),
        "{}",
        b.verdict
    );
}

#[test]
fn bandwidth_verdicts() {
    let rows = |t, fr: [f64; 3]| {
        vec![
            bw(Benchmark::Bw, t, 1024, 1000.0 * fr[0]),
            bw(Benchmark::Bw, t, 65536, 1000.0 * fr[1]),
            bw(Benchmark::Bw, t, 1 << 20, 1000.0 * fr[2]),
        ]
    };
    let lo = report("a", rows(SHM, [1.0, 1.0, 1.0]));
    let up = report("b", rows(MPI, [0.45, 0.86, 0.88]));
    assert_eq!(
        compare(&lo, &up).unwrap().benchmarks[0].verdict,
        "mpi delivers 87 % of shm's bandwidth at large messages (>= 64 KiB), 45 % at small ones"
    );
    let lo = report("a", rows(TCP, [1.0, 1.0, 1.0]));
    let up = report("b", rows(MPI, [0.9, 1.1, 1.14]));
    assert_eq!(
        compare(&lo, &up).unwrap().benchmarks[0].verdict,
        "mpi is faster than tcp here: 112 % of its bandwidth at large messages (>= 64 KiB), \
         90 % at small ones"
    );
    // A tiny fraction keeps a decimal rather than reading "0 %".
    let lo = report("a", rows(SHM, [1.0, 1.0, 1.0]));
    let up = report("b", rows(TCP, [0.004, 0.18, 0.18]));
    assert_eq!(
        compare(&lo, &up).unwrap().benchmarks[0].verdict,
        "tcp delivers 18 % of shm's bandwidth at large messages (>= 64 KiB), 0.4 % at small ones"
    );
    // A message rate at small sizes only.
    let lo = report("a", vec![bw(Benchmark::Mr, SHM, 8, 40.0)]);
    let up = report("b", vec![bw(Benchmark::Mr, MPI, 8, 10.0)]);
    assert_eq!(
        compare(&lo, &up).unwrap().benchmarks[0].verdict,
        "mpi delivers 25 % of shm's message rate at small messages (<= 1 KiB)"
    );
}

#[test]
fn extended_benchmarks_summarize_the_added_time_and_each_layers_cost() {
    let bm = |t, size, p50, cost| {
        let mut r = FlatRow::new(Benchmark::Bufmgmt, t, Mode::Poll, size);
        (r.p50_us, r.cost_us, r.buffers) = (Some(p50), Some(cost), Some(BufferUse::Fresh));
        Row::try_from(r).unwrap()
    };
    let lo = report(
        "a",
        vec![
            bm(SHM, 8, 1.0, 0.25),
            bm(SHM, 64, 1.5, 0.5),
            bm(SHM, 512, 2.0, 0.75),
        ],
    );
    let up = report(
        "b",
        vec![
            bm(MPI, 8, 1.5, 0.0),
            bm(MPI, 64, 2.0, 0.0),
            bm(MPI, 512, 3.0, 0.0),
        ],
    );
    let b = &compare(&lo, &up).unwrap().benchmarks[0];
    assert_eq!(
        b.points.iter().map(|p| p.lower_cost_us).collect::<Vec<_>>(),
        [Some(0.25), Some(0.5), Some(0.75)]
    );
    // Added 0.5, 0.5, 1.0 (median 0.5); +50 %, +33 %, +50 % (median 50).
    assert_eq!(
        b.verdict,
        "mpi adds 0.500 us over shm to bufmgmt latency (median over 3 points, +50 %); its cost \
         over its own baseline: 0.500 us on shm, 0.000 us on mpi (median)"
    );
}

fn small_comparison() -> Comparison {
    let lo = report(
        "node1",
        vec![
            lat(SHM, 8, 0.25),
            lat(SHM, 1024, 0.5),
            bw(Benchmark::Bw, SHM, 65536, 8000.0),
        ],
    );
    let up = report(
        "node1",
        vec![
            lat(MPI, 8, 0.75),
            lat(MPI, 1024, 1.0),
            bw(Benchmark::Bw, MPI, 65536, 6000.0),
        ],
    );
    let mut c = compare(&lo, &up).unwrap();
    c.lower.source = Some("shm.json".into());
    c.upper.source = Some("mpi.json".into());
    c
}

#[test]
fn table_format() {
    assert_eq!(
        render_comparison(&small_comparison(), Format::Table),
        "# commperf compare | lower shm (shm.json; commperf 0.1.0 on node1) | upper mpi \
         (mpi.json; commperf 0.1.0 on node1)\n\
         \n\
         # commperf compare latency | mode poll | lower shm | upper mpi\n\
         # Size  shm p50(us)  mpi p50(us)  added(us)  added(%)\n\
         8             0.250        0.750      0.500   +200.0%\n\
         1024          0.500        1.000      0.500   +100.0%\n\
         # verdict: mpi adds 0.500 us (+150 %) over shm up to 1 KiB\n\
         \n\
         # commperf compare bw | mode poll | lower shm | upper mpi\n\
         # Size  shm MB/s  mpi MB/s  fraction\n\
         65536    8000.00   6000.00     75.0%\n\
         # verdict: mpi delivers 75 % of shm's bandwidth at large messages (>= 64 KiB)\n"
    );
}

#[test]
fn markdown_csv_and_json_formats() {
    let c = small_comparison();
    let md = render_comparison(&c, Format::Md);
    assert!(
        md.starts_with(
            "- lower: shm (shm.json; commperf 0.1.0 on node1)\n\
             - upper: mpi (mpi.json; commperf 0.1.0 on node1)\n\
             \n\
             ## latency, mode poll, lower shm, upper mpi\n\
             \n\
             | Size | shm p50(us) | mpi p50(us) | added(us) | added(%) |\n"
        ),
        "{md}"
    );
    assert!(
        md.contains(
            "\n**Verdict:** mpi delivers 75 % of shm's bandwidth at large messages (>= 64 KiB).\n"
        ),
        "{md}"
    );
    let csv = render_comparison(&c, Format::Csv);
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines.len(), 4, "{csv}");
    assert_eq!(
        lines[0],
        "benchmark,mode,packed,buffers,block_spins,pairs,lower_transport,upper_transport,\
         size_bytes,segments,connections,lower_p50_us,upper_p50_us,added_us,added_percent,\
         lower_cost_us,upper_cost_us,lower_mb_per_s,upper_mb_per_s,fraction_delivered,\
         lower_msgs_per_s,upper_msgs_per_s"
    );
    assert_eq!(
        lines[1],
        "latency,poll,,,,,shm,mpi,8,,,0.25,0.75,0.5,200,,,,,,,"
    );
    assert_eq!(
        lines[3],
        "bw,poll,,,,,shm,mpi,65536,,,,,,,,,8000,6000,0.75,,"
    );
    // JSON: the comparison itself, absent figures omitted, and it reads back.
    let json = render_comparison(&c, Format::Json);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["schema_version"], 1);
    assert_eq!(v["lower"]["source"], "shm.json");
    assert_eq!(v["upper"]["transports"][0], "mpi");
    let p = &v["benchmarks"][0]["points"][0];
    assert_eq!(p["added_us"], 0.5);
    assert_eq!(p["added_percent"], 200.0);
    assert!(p.get("fraction_delivered").is_none());
    assert!(v["benchmarks"][0].get("protocol_changes").is_none());
    assert_eq!(v["benchmarks"][1]["points"][0]["fraction_delivered"], 0.75);
    let back: Comparison = serde_json::from_str(&json).unwrap();
    assert_eq!(back, c);
}
