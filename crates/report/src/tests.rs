//! Snapshot-style tests: a hand-built report, rendered in every format, compared with inline
//! expected strings.

use super::*;
use commperf_core::{
    Benchmark, FlatRow, Limits, Machine, Mode, Options, Placement, Row, TimerInfo, TransportKind,
};

fn report() -> Report {
    let mut lat_small = FlatRow::new(Benchmark::Latency, TransportKind::Shm, Mode::Poll, 8);
    lat_small.iterations = 100_000;
    lat_small.warmup = 1_000;
    lat_small.p50_us = Some(0.2134);
    lat_small.p90_us = Some(0.25);
    lat_small.p99_us = Some(0.4012);
    lat_small.min_us = Some(0.18);
    lat_small.max_us = Some(12.5034);
    lat_small.mean_us = Some(0.2231);
    lat_small.efficiency = Some(0.3337);
    lat_small.limit_us = Some(0.0712);
    lat_small.validated = true;

    let mut bw = FlatRow::new(Benchmark::Bw, TransportKind::Shm, Mode::Poll, 65536);
    bw.iterations = 2_000;
    bw.warmup = 20;
    bw.window = Some(64);
    bw.mb_per_s = Some(8012.3456);
    bw.msgs_per_s = Some(122258.6);
    bw.efficiency = Some(0.4451);
    bw.limit_mb_per_s = Some(18000.5);
    bw.validated = true;

    // Same block as the first row although a bw row comes between them; no efficiency.
    let mut lat_large = FlatRow::new(Benchmark::Latency, TransportKind::Shm, Mode::Poll, 1 << 20);
    lat_large.iterations = 1_000;
    lat_large.warmup = 10;
    lat_large.p50_us = Some(95.123);
    lat_large.p90_us = Some(101.5);
    lat_large.p99_us = Some(130.25);
    lat_large.min_us = Some(90.0);
    lat_large.max_us = Some(250.75);
    lat_large.mean_us = Some(97.8761);
    lat_large.validated = true;

    Report {
        schema_version: SCHEMA_VERSION,
        tool: "commperf 0.1.0".to_string(),
        started_unix_s: 1_700_000_000,
        machine: Machine {
            hostname: "node1".to_string(),
            cpu_model: "AMD EPYC 7763 64-Core Processor".to_string(),
            cores: 2,
            kernel: "6.8.0-45-generic".to_string(),
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
            sizes_bytes: vec![8, 65536, 1 << 20],
            iterations: None,
            warmup: None,
            window: 64,
            validate: true,
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
        limits: Some(Limits {
            cacheline_one_way_us: 0.0712,
            memcpy_in_cache_mb_per_s: 45000.4,
            memcpy_out_of_cache_mb_per_s: 18000.0,
            memcpy_in_cache_bytes: 1 << 20,
            memcpy_out_of_cache_bytes: 1 << 30,
            cpus: [0, 1],
            memcpy_two_cpus_in_cache_mb_per_s: None,
            memcpy_two_cpus_out_of_cache_mb_per_s: None,
        }),
        results: [lat_small, bw, lat_large]
            .map(|r| Row::try_from(r).unwrap())
            .into(),
        disturbance: Default::default(),
        partial: false,
    }
}

#[test]
fn table_format_is_osu_style_blocks() {
    let expected = "\
# machine: AMD EPYC 7763 64-Core Processor, 2 cpus, kernel 6.8.0-45-generic
# timer: tsc 2.45 GHz, read cost 9.8 ns
# placement: local cpu 0, peer cpu 1 (pinned)
# limits: cache-line one-way 0.071 us, memcpy 45000 MB/s in cache, 18000 MB/s out of cache

# commperf latency | transport shm | mode poll | validated
# Size   p50(us)  p90(us)  p99(us)  min(us)  max(us)  mean(us)    eff
8          0.213    0.250    0.401    0.180    12.50     0.223  33.4%
1048576    95.12   101.50   130.25    90.00   250.75     97.88      -

# commperf bw | transport shm | mode poll | window 64 | validated
# Size     MB/s  msgs/s    eff
65536   8012.35  122259  44.5%
";
    assert_eq!(render(&report(), Format::Table), expected);
}

#[test]
fn markdown_format_has_headings_bullets_and_pipe_tables() {
    let expected = "\
- machine: AMD EPYC 7763 64-Core Processor, 2 cpus, kernel 6.8.0-45-generic
- timer: tsc 2.45 GHz, read cost 9.8 ns
- placement: local cpu 0, peer cpu 1 (pinned)
- limits: cache-line one-way 0.071 us, memcpy 45000 MB/s in cache, 18000 MB/s out of cache

## latency, transport shm, mode poll, validated

| Size    | p50(us) | p90(us) | p99(us) | min(us) | max(us) | mean(us) |   eff |
| :------ | ------: | ------: | ------: | ------: | ------: | -------: | ----: |
| 8       |   0.213 |   0.250 |   0.401 |   0.180 |   12.50 |    0.223 | 33.4% |
| 1048576 |   95.12 |  101.50 |  130.25 |   90.00 |  250.75 |    97.88 |     - |

## bw, transport shm, mode poll, window 64, validated

| Size  |    MB/s | msgs/s |   eff |
| :---- | ------: | -----: | ----: |
| 65536 | 8012.35 | 122259 | 44.5% |
";
    assert_eq!(render(&report(), Format::Md), expected);
}

#[test]
fn csv_format_is_one_flat_table_at_full_precision() {
    let expected = "\
benchmark,transport,mode,size_bytes,iterations,warmup,window,p50_us,p90_us,p99_us,min_us,max_us,mean_us,p50_noise_us,mb_per_s,msgs_per_s,efficiency,limit_us,limit_mb_per_s,baseline_p50_us,cost_us,cost_noise_us,block_spins,connections,segments,packed,buffers,o_s_us,o_r_us,gap_us,o_s_fixed_us,O_s_us_per_byte,o_r_fixed_us,O_r_us_per_byte,g_us,G_us_per_byte,L_us,overlap_us,exchange_us,send_wait_us,duplex_us,model_us,piece_from_bytes,piece_to_bytes,pairs,validated,notes
latency,shm,poll,8,100000,1000,,0.2134,0.25,0.4012,0.18,12.5034,0.2231,,,,0.3337,0.0712,,,,,,,,,,,,,,,,,,,,,,,,,,,,true,
bw,shm,poll,65536,2000,20,64,,,,,,,,8012.3456,122258.6,0.4451,,18000.5,,,,,,,,,,,,,,,,,,,,,,,,,,,true,
latency,shm,poll,1048576,1000,10,,95.123,101.5,130.25,90,250.75,97.8761,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,true,
";
    assert_eq!(render(&report(), Format::Csv), expected);
}

#[test]
fn csv_columns_are_exactly_the_row_fields() {
    // Every field set: a row no benchmark writes, so the flat row of the file.
    let mut r = report().results[0].flat();
    r.window = Some(1);
    (r.mb_per_s, r.msgs_per_s) = (Some(1.0), Some(1.0));
    (r.limit_us, r.limit_mb_per_s) = (Some(1.0), Some(1.0));
    (r.baseline_p50_us, r.cost_us, r.block_spins) = (Some(1.0), Some(1.0), Some(1));
    (r.segments, r.packed, r.connections) = (Some(2), Some(true), Some(8));
    r.buffers = Some(commperf_core::BufferUse::Registered);
    (r.o_s_us, r.o_r_us, r.g_us, r.gap_per_byte_us, r.L_us) =
        (Some(1.0), Some(1.0), Some(1.0), Some(1.0), Some(1.0));
    (r.gap_us, r.o_s_fixed_us, r.O_s_us_per_byte) = (Some(1.0), Some(1.0), Some(1.0));
    (r.o_r_fixed_us, r.O_r_us_per_byte, r.overlap_us) = (Some(1.0), Some(1.0), Some(1.0));
    (r.exchange_us, r.send_wait_us, r.duplex_us) = (Some(1.0), Some(1.0), Some(1.0));
    (r.model_us, r.piece_from_bytes, r.piece_to_bytes) = (Some(1.0), Some(1), Some(2));
    (r.p50_noise_us, r.cost_noise_us) = (Some(1.0), Some(1.0));
    r.notes = vec!["a note".into()];
    r.pairs = Some(2);
    let v = serde_json::to_value(&r).unwrap();
    let mut fields: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
    let mut columns = csv::COLUMNS.to_vec();
    fields.sort_unstable();
    columns.sort_unstable();
    assert_eq!(
        fields, columns,
        "a Row field is missing from the CSV (or vice versa)"
    );
}

#[test]
fn mr_columns_mixed_windows_and_partial_validation() {
    let mut r = report();
    r.limits = None;
    r.placement = Placement {
        pinned: false,
        local_cpu: None,
        peer_cpu: Some(3),
        ..Placement::default()
    };
    r.machine.timer = TimerInfo {
        source: "monotonic".to_string(),
        tsc_ghz: None,
        cost_ns: 25.04,
    };
    let mut a = FlatRow::new(Benchmark::Mr, TransportKind::Tcp, Mode::Block, 1);
    (a.window, a.msgs_per_s, a.mb_per_s) = (Some(16), Some(1_500_000.4), Some(1.5));
    let mut b = FlatRow::new(Benchmark::Mr, TransportKind::Tcp, Mode::Block, 64);
    (b.window, b.msgs_per_s, b.validated) = (Some(64), Some(999_999.5), true);
    r.results = [a, b].map(|r| Row::try_from(r).unwrap()).into();
    let expected = "\
# machine: AMD EPYC 7763 64-Core Processor, 2 cpus, kernel 6.8.0-45-generic
# timer: monotonic, read cost 25.0 ns
# placement: local cpu unknown, peer cpu 3 (not pinned)

# commperf mr | transport tcp | mode block | validated 1 of 2 sizes
# Size   msgs/s  MB/s  window
1       1500000  1.50      16
64      1000000     -      64
";
    assert_eq!(render(&r, Format::Table), expected);
}

#[test]
fn empty_results_say_so() {
    let mut r = report();
    r.results.clear();
    assert!(render(&r, Format::Table).ends_with("(pinned)\n# limits: cache-line one-way 0.071 us, memcpy 45000 MB/s in cache, 18000 MB/s out of cache\n\n# no results\n"));
    assert!(render(&r, Format::Md).ends_with("\n\nNo results.\n"));
    assert_eq!(render(&r, Format::Csv).lines().count(), 1, "header only");
}

#[test]
fn json_round_trips_through_load_json() {
    let r = report();
    let text = render(&r, Format::Json);
    assert!(text.starts_with("{\n  \"schema_version\": 2,\n"));
    assert!(text.ends_with("}\n"));
    assert_eq!(load_json(&text).unwrap(), r);
}

#[test]
fn a_row_with_a_figure_its_benchmark_cannot_have_is_refused_by_name() {
    let mut v = serde_json::to_value(report()).unwrap();
    // The bw row (the second) with a latency percentile.
    v["results"][1]["p99_us"] = 1.5.into();
    let text = serde_json::to_string_pretty(&v).unwrap();
    let msg = load_json(&text).unwrap_err().to_string();
    // At the end of the row (the conversion runs once the row is read).
    assert_eq!(
        msg,
        "invalid result file at 82:4: a bw row cannot have `p99_us`"
    );
}

#[test]
fn a_version_1_result_without_loggp_rows_is_read() {
    let mut r = report();
    r.results.retain(|row| row.benchmark() != Benchmark::Loggp);
    let mut v = serde_json::to_value(&r).unwrap();
    v["schema_version"] = 1.into();
    let back = load_json(&v.to_string()).unwrap();
    assert_eq!(back.schema_version, 1);
    assert_eq!(back.results, r.results);
}

#[test]
fn a_version_1_result_with_loggp_rows_is_refused_for_its_l() {
    let mut r = report();
    let mut row = Row::new(Benchmark::Loggp, TransportKind::Shm, Mode::Poll, 8);
    row.loggp_mut().expect("a loggp row").L_us = Some(-0.3);
    r.results.push(row);
    let mut v = serde_json::to_value(&r).unwrap();
    v["schema_version"] = 1.into();
    let err = load_json(&v.to_string()).unwrap_err();
    assert!(matches!(err, ReportError::Meaning(_)), "{err:?}");
    assert!(
        err.to_string()
            .starts_with("result file: schema_version 1 is not read: its loggp rows' L_us"),
        "{err}"
    );
    v["schema_version"] = 2.into();
    assert_eq!(load_json(&v.to_string()).unwrap().results, r.results);
}

#[test]
fn newer_schema_version_is_refused_by_name() {
    let mut v = serde_json::to_value(report()).unwrap();
    v["schema_version"] = 99.into();
    // A newer schema may change anything; the version is what gets reported.
    v["results"] = "changed shape".into();
    let err = load_json(&v.to_string()).unwrap_err();
    assert_eq!(
        err,
        ReportError::UnsupportedVersion {
            found: 99,
            supported: SCHEMA_VERSION
        }
    );
    let msg = err.to_string();
    assert!(msg.contains("99"), "{msg}");
    assert_eq!(
        msg,
        "result file has schema_version 99, which this commperf cannot read (it reads versions \
         1 to 2); it was written by a newer commperf"
    );
    v["schema_version"] = 0.into();
    assert!(matches!(
        load_json(&v.to_string()),
        Err(ReportError::UnsupportedVersion { found: 0, .. })
    ));
}

#[test]
fn parse_errors_carry_line_and_column() {
    let err = load_json("{\n  \"schema_version\": 1,\n  \"tool\": }").unwrap_err();
    assert_eq!(
        err.to_string(),
        "invalid result file at 3:11: expected value"
    );

    // Valid JSON, wrong shape: the position comes from the typed parse.
    let text = render(&report(), Format::Json).replace("\"tool\"", "\"tool_name\"");
    match load_json(&text).unwrap_err() {
        ReportError::Parse {
            line,
            column,
            message,
        } => {
            assert!(line > 1 && column > 0, "{line}:{column}");
            assert_eq!(message, "missing field `tool`");
        }
        other => panic!("unexpected {other:?}"),
    }
    assert!(matches!(
        load_json(""),
        Err(ReportError::Parse { line: 1, .. })
    ));
}

#[test]
fn format_names_parse_and_errors_list_allowed_values() {
    for f in Format::ALL {
        assert_eq!(f.as_str().parse::<Format>().unwrap(), *f);
        assert_eq!(f.to_string(), f.as_str());
    }
    assert_eq!(Format::default(), Format::Table);
    let e = "html".parse::<Format>().unwrap_err();
    assert_eq!(
        e.to_string(),
        "unknown format 'html' (allowed: table json csv md svg)"
    );
}

#[test]
fn loggp_summary_follows_kutlugs_table_3_1() {
    let mut r = report();
    r.results.clear();
    // (transport, size, o_s, o_r, L, overlap): tcp's overheads overlap by 0.4 µs.
    for (t, size, os, or, l, ov) in [
        (TransportKind::Shm, 1, 0.9, 0.9, 0.9, 0.0),
        (TransportKind::Shm, 4, 0.02, 0.03, 0.05, 0.0),
        (TransportKind::Tcp, 4, 3.0, 1.4, 0.0, 0.4),
    ] {
        let mut row = FlatRow::new(Benchmark::Loggp, t, Mode::Poll, size);
        (row.o_s_us, row.o_r_us) = (Some(os), Some(or));
        (row.L_us, row.overlap_us) = (Some(l), Some(ov));
        row.g_us = Some(0.5);
        row.p50_us = Some(os + or + l - ov);
        r.results.push(Row::try_from(row).unwrap());
    }
    let text = render(&r, Format::Table);
    let summary = text
        .split("# commperf loggp summary ")
        .nth(1)
        .expect("summary present");
    let expected = "\
 at 4 B (after Kutluğ 2000, Table 3.1 and Figure 3.5)
# parameter        shm poll  tcp poll
o_s (us)              0.020     3.000
o_r (us)              0.030     1.400
g (us)                0.500     0.500
L (us)                0.050     0.000
overlap (us)          0.000     0.400
latency (us)          0.100     4.000
o_s share               20%       75%
o_r share               30%       35%
L share                 50%        0%
overlap share (-)        0%       10%
";
    assert_eq!(summary, expected);
    // No loggp rows, no summary.
    assert!(!render(&report(), Format::Table).contains("loggp summary"));
}

/// A loggp report as `bench loggp` writes it: shm polling at 1 B … 1 MiB in two protocol
/// pieces (o_r absent at 64 B; the second piece's fixed costs not identifiable, with notes),
/// tcp polling at 1 B … 64 B in one piece whose overheads overlap (L 0, overlap 0.3 µs).
fn loggp_report() -> Report {
    let mut r = report();
    r.results.clear();
    r.limits = None;
    // (size, o_s, o_r, g + G·s, latency, model)
    type Point = (u64, Option<f64>, Option<f64>, f64, f64, Option<f64>);
    let shm: [Point; 7] = [
        (1, Some(0.1), Some(0.2), 0.5, 0.35, Some(0.35)),
        (4, Some(0.1), Some(0.2), 0.5, 0.35, Some(0.35)),
        (16, Some(0.2), Some(0.2), 0.5, 0.36, Some(0.35)),
        (64, Some(0.4), None, 0.51, 0.36, Some(0.36)),
        (1 << 10, Some(1.5), Some(1.0), 0.6, 0.45, Some(0.45)),
        (64 << 10, Some(2.4), Some(1.7), 6.0, 7.5, None),
        (1 << 20, Some(3.2), Some(2.0), 90.0, 95.0, None),
    ];
    for &(size, os, or, gap, lat, model) in &shm {
        let mut row = FlatRow::new(Benchmark::Loggp, TransportKind::Shm, Mode::Poll, size);
        (row.o_s_us, row.o_r_us, row.gap_us) = (os, or, Some(gap));
        (row.p50_us, row.model_us) = (Some(lat), model);
        if size <= 1024 {
            (row.piece_from_bytes, row.piece_to_bytes) = (Some(1), Some(1024));
            (row.o_s_fixed_us, row.O_s_us_per_byte) = (Some(0.1), Some(0.0009));
            (row.o_r_fixed_us, row.O_r_us_per_byte) = (Some(0.2), Some(0.0008));
            (row.g_us, row.gap_per_byte_us) = (Some(0.5), Some(0.0001));
            (row.L_us, row.overlap_us) = (Some(0.05), Some(0.0));
        } else {
            (row.piece_from_bytes, row.piece_to_bytes) = (Some(65536), Some(1 << 20));
            (row.O_s_us_per_byte, row.O_r_us_per_byte) = (Some(0.00001), Some(0.000002));
            row.gap_per_byte_us = Some(0.000085);
            if size == 65536 {
                row.notes = vec![
                    "g is not identifiable over sizes 64K to 1M".into(),
                    "L is not identifiable over sizes 64K to 1M".into(),
                ];
            }
        }
        r.results.push(Row::try_from(row).unwrap());
    }
    for (size, os, gap) in [(1, Some(2.2), 2.4), (4, None, 2.4), (64, Some(2.3), 2.5)] {
        let mut row = FlatRow::new(Benchmark::Loggp, TransportKind::Tcp, Mode::Poll, size);
        (row.o_s_us, row.o_r_us, row.gap_us) = (os, Some(0.9), Some(gap));
        (row.p50_us, row.model_us) = (Some(2.8), Some(2.8));
        (row.piece_from_bytes, row.piece_to_bytes) = (Some(1), Some(64));
        (row.o_s_fixed_us, row.o_r_fixed_us, row.g_us) = (Some(2.2), Some(0.9), Some(2.4));
        (row.L_us, row.overlap_us) = (Some(0.0), Some(0.3));
        if size == 1 {
            row.notes = vec![
                "over sizes 1 to 64 the one-way time is 0.300 µs ± 0.020 µs below o_s + o_r".into(),
            ];
        }
        if size == 4 {
            row.notes =
                vec!["o_s at 4 B: -0.700 µs ± 0.010 µs is below zero beyond its noise".into()];
        }
        r.results.push(Row::try_from(row).unwrap());
    }
    r
}

/// A smaller one: shm polling at 1, 4 and 16 B (o_r absent at 4 B) and
/// tcp blocking at 4 and 64 B with a negative o_s.
fn small_loggp_report() -> Report {
    let mut r = loggp_report();
    r.results.clear();
    for (t, m, size, os, or) in [
        (TransportKind::Shm, Mode::Poll, 1, Some(0.5), Some(1.0)),
        (TransportKind::Shm, Mode::Poll, 4, Some(1.0), None),
        (TransportKind::Shm, Mode::Poll, 16, Some(2.5), Some(1.5)),
        (TransportKind::Tcp, Mode::Block, 4, Some(-0.5), Some(2.0)),
        (TransportKind::Tcp, Mode::Block, 64, Some(3.0), Some(2.0)),
    ] {
        let mut row = FlatRow::new(Benchmark::Loggp, t, m, size);
        (row.o_s_us, row.o_r_us) = (os, or);
        r.results.push(Row::try_from(row).unwrap());
    }
    r
}

#[test]
fn loggp_blocks_end_with_kutlugs_figure_3_6_as_text() {
    // Per size the measured figures and LogGOPS's one-way time, then the parameters of each
    // protocol piece (absent where not identifiable), the rows' notes, and the chart. Sizes on
    // a log2 axis labelled every other power. shm's overheads (0.1 … 3.2 µs) span more than a
    // factor of 30: a log10 µs axis from 0.1 to 10, five rows a decade. tcp's (0.9 … 2.3 µs)
    // do not: linear from 0 to 2.5 µs. A size whose o_r (shm, 64 B) or o_s (tcp, 4 B) is
    // absent has only the other's mark, and where both land in one cell the cell shows `*`.
    let expected = "\
# machine: AMD EPYC 7763 64-Core Processor, 2 cpus, kernel 6.8.0-45-generic
# timer: tsc 2.45 GHz, read cost 9.8 ns
# placement: local cpu 0, peer cpu 1 (pinned)

# commperf loggp | transport shm | mode poll
# Size   o_s(us)  o_r(us)  g+G*s(us)  latency(us)  LogGOPS(us)
1          0.100    0.200      0.500        0.350        0.350
4          0.100    0.200      0.500        0.350        0.350
16         0.200    0.200      0.500        0.360        0.350
64         0.400        -      0.510        0.360        0.360
1024       1.500    1.000      0.600        0.450        0.450
65536      2.400    1.700      6.000        7.500            -
1048576    3.200    2.000      90.00        95.00            -
# LogGOPS per protocol: o + O*s per side, L size-independent; latency = o_s + L + o_r + max(O_r, G)*s - overlap
# sizes        o_s(us)  O_s(ns/B)  o_r(us)  O_r(ns/B)  g(us)  G(ns/B)  L(us)  overlap(us)
1-1024           0.100    0.90000    0.200    0.80000  0.500  0.10000  0.050        0.000
65536-1048576        -    0.01000        -    0.00200      -  0.08500      -            -
# note: g is not identifiable over sizes 64K to 1M
# note: L is not identifiable over sizes 64K to 1M

# commperf o_s and o_r against size (after Kutluğ 2000, Figure 3.6) | transport shm | mode poll
#  us, log10 scale
#  10 |
#     |
#     |                                                            s
#     |                                                s           r
#     |                              s                 r
#   1 |                              r
#     |
#     |                  s
#     |r     r     *
#     |
# 0.1 |s     s
#     +-------------------------------------------------------------
#      1     4     16    64    256   1K    4K    16K   64K   256K  1M
#      size (bytes, log2 scale); s = o_s, r = o_r, * = both

# commperf loggp | transport tcp | mode poll
# Size  o_s(us)  o_r(us)  g+G*s(us)  latency(us)  LogGOPS(us)
1         2.200    0.900      2.400        2.800        2.800
4             -    0.900      2.400        2.800        2.800
64        2.300    0.900      2.500        2.800        2.800
# LogGOPS per protocol: o + O*s per side, L size-independent; latency = o_s + L + o_r + max(O_r, G)*s - overlap
# sizes  o_s(us)  O_s(ns/B)  o_r(us)  O_r(ns/B)  g(us)  G(ns/B)  L(us)  overlap(us)
1-64       2.200          -    0.900          -  2.400        -  0.000        0.300
# note: over sizes 1 to 64 the one-way time is 0.300 µs ± 0.020 µs below o_s + o_r
# note: o_s at 4 B: -0.700 µs ± 0.010 µs is below zero beyond its noise

# commperf o_s and o_r against size (after Kutluğ 2000, Figure 3.6) | transport tcp | mode poll
#  us, linear scale
# 2.5 |
#     |s                                   s
# 2.0 |
#     |
# 1.5 |
#     |
# 1.0 |r           r                       r
#     |
# 0.5 |
#     |
# 0.0 |
#     +-------------------------------------
#      1     2     4     8     16    32    64
#      size (bytes, log2 scale); s = o_s, r = o_r, * = both

# commperf loggp summary at 4 B (after Kutluğ 2000, Table 3.1 and Figure 3.5)
# parameter        shm poll  tcp poll
o_s (us)              0.100         -
o_r (us)              0.200     0.900
g (us)                0.500     2.400
L (us)                0.050     0.000
overlap (us)          0.000     0.300
latency (us)          0.350     2.800
o_s share               29%         -
o_r share               57%       32%
L share                 14%        0%
overlap share (-)        0%       11%
";
    assert_eq!(render(&loggp_report(), Format::Table), expected);
    // At most about 20 lines per chart (from its title to the blank line after it).
    let heights: Vec<usize> = expected
        .split("# commperf o_s and o_r against size")
        .skip(1)
        .map(|chart| chart.split("\n\n").next().unwrap().lines().count())
        .collect();
    assert_eq!(heights, [16, 16]);
    // Markdown has the tables and notes but not the figure, which is for the text table.
    let md = render(&loggp_report(), Format::Md);
    assert!(!md.contains("Figure 3.6"));
    assert!(md.contains("\n| 1-64  |   2.200 |         - |   0.900 |         - | 2.400 |       - | 0.000 |       0.300 |\n"), "{md}");
    assert!(
        md.contains("\n- note: o_s at 4 B: -0.700 µs ± 0.010 µs is below zero beyond its noise\n")
    );
}

#[test]
fn loggp_figures_need_loggp_values() {
    assert_eq!(loggp_svg(&report()), Err(PlotError::NoLoggp));
    assert_eq!(
        PlotError::NoLoggp.to_string(),
        "no loggp results to plot (they come from `commperf bench loggp`)"
    );
    // Loggp rows, but nothing to draw: o_s and o_r absent, or only at size 0 (no place on a
    // log axis). No SVG, and no text chart under the block either.
    let mut r = small_loggp_report();
    for row in &mut r.results {
        let l = row.loggp_mut().unwrap();
        (l.o_r_us, l.o_s_us) = (None, None);
    }
    r.results[0].size_bytes = 0;
    r.results[0].loggp_mut().unwrap().o_s_us = Some(1.0);
    assert_eq!(loggp_svg(&r), Err(PlotError::NoValues));
    let text = render(&r, Format::Table);
    assert!(text.contains("# commperf loggp | transport shm"), "{text}");
    assert!(!text.contains("Figure 3.6"), "{text}");
    // One value is enough for both renderings: in the SVG one marker (no line of one point)
    // in its series' group.
    r.results[2].loggp_mut().unwrap().o_r_us = Some(0.25);
    let svg = loggp_svg(&r).unwrap();
    assert_eq!(svg.matches("<polyline").count(), 0);
    let group = svg
        .split(r#"data-parameter="o_r">"#)
        .nth(1)
        .expect("the o_r group");
    let group = &group[..group.find("</g>").unwrap()];
    assert_eq!(group.matches("<rect class=\"point\"").count(), 1, "{group}");
    assert!(
        group.contains(r#"data-size="16" data-value="0.25""#),
        "{group}"
    );
    let text = render(&r, Format::Table);
    let chart = text
        .split("Figure 3.6) | transport shm | mode poll\n")
        .nth(1)
        .unwrap();
    assert!(
        chart.starts_with("#   us, linear scale\n# 0.25 |r\n"),
        "{chart}"
    );
    assert!(
        chart.contains("\n# 0.00 |\n#      +-\n#       16\n"),
        "{chart}"
    );
    assert!(
        !text.contains("Figure 3.6) | transport tcp"),
        "tcp has no values: no chart"
    );
}

#[test]
fn mpi_rows_are_described_in_mpi_words_and_pairs_are_named() {
    let mut r = report();
    let mut nc = FlatRow::new(Benchmark::Noncontig, TransportKind::Mpi, Mode::Poll, 64);
    (nc.segments, nc.packed, nc.p50_us) = (Some(4), Some(false), Some(0.5));
    let mut cq = FlatRow::new(Benchmark::Cq, TransportKind::Mpi, Mode::Poll, 16);
    (cq.connections, cq.p50_us, cq.baseline_p50_us) = (Some(1), Some(0.3), Some(0.2));
    let mut bw = FlatRow::new(Benchmark::Bw, TransportKind::Mpi, Mode::Poll, 8);
    (bw.mb_per_s, bw.msgs_per_s, bw.pairs) = (Some(1.0), Some(125_000.0), Some(2));
    r.results = [nc, cq, bw].map(|r| Row::try_from(r).unwrap()).into();
    let text = render(&r, Format::Table);
    assert!(
        text.contains("# commperf noncontig | transport mpi | mode poll | a derived datatype (MPI_Type_vector)\n"),
        "{text}"
    );
    assert!(!text.contains("gathered by the transport"), "{text}");
    assert!(text.contains("| receives from MPI_ANY_SOURCE\n"), "{text}");
    assert!(text.contains("named p50(us)"), "{text}");
    assert!(
        text.contains("# commperf bw | transport mpi | mode poll | 2 pairs\n"),
        "{text}"
    );
}

#[test]
fn costs_within_their_noise_read_as_none_and_left_out_ones_say_why() {
    let mut r = report();
    r.results.clear();
    r.limits = None;
    // (segments, p50, cost, noise band, note)
    for (k, p50, cost, band, note) in [
        (1, 817.0, Some(0.0), 10.0, None),
        (2, 830.0, Some(12.5), 10.0, None),
        (4, 815.0, Some(4.0), 10.0, None),
        (
            8,
            620.0,
            None,
            10.0,
            Some("p50 620.000 µs is 197.000 µs below its baseline"),
        ),
    ] {
        let mut row = FlatRow::new(
            Benchmark::Noncontig,
            TransportKind::Tcp,
            Mode::Poll,
            1 << 22,
        );
        (row.segments, row.packed) = (Some(k), Some(false));
        (row.p50_us, row.baseline_p50_us) = (Some(p50), Some(817.0));
        (row.cost_us, row.cost_noise_us) = (cost, Some(band));
        row.notes = note.into_iter().map(String::from).collect();
        r.results.push(Row::try_from(row).unwrap());
    }
    let text = render(&r, Format::Table);
    let block: Vec<&str> = text
        .lines()
        .skip_while(|l| !l.starts_with("# commperf noncontig"))
        .collect();
    assert_eq!(
        block[1..].join("\n"),
        "\
# Size   segments  p50(us)  p90(us)  p99(us)  standard p50(us)  cost(us)
4194304         1   817.00        -        -            817.00        ≈0
4194304         2   830.00        -        -            817.00     12.50
4194304         4   815.00        -        -            817.00        ≈0
4194304         8   620.00        -        -            817.00         -
# note: p50 620.000 µs is 197.000 µs below its baseline"
    );
}

#[test]
fn impossible_figures_are_flagged_never_shown_as_a_measurement() {
    let mut r = report();
    // The 8-byte row: a negative median, and a max below the min.
    let row = &mut r.results[0];
    let p = row.percentiles_mut().unwrap();
    p.p50_us = Some(-5.0);
    p.max_us = Some(0.1);
    let text = render(&r, Format::Table);
    assert!(text.contains("\n8 !  "), "{text}");
    assert!(
        text.contains(
            "# note: ! size 8: impossible figures (p50 -5 us; p50 -5 us < min 0.18 us; \
             max 0.1 us < p99 0.4012 us): not a measurement\n"
        ),
        "{text}"
    );
    // The large row is plausible: not marked.
    assert!(text.contains("\n1048576  "), "{text}");
    assert_eq!(text.matches(" !").count(), 2, "{text}");
    let md = render(&r, Format::Md);
    assert!(md.contains("| 8 !     |  -5.000 |"), "{md}");
    assert!(md.contains("- note: ! size 8: impossible figures"), "{md}");
    // The machine-readable formats say it in the row's notes, once however often re-rendered.
    let why = "impossible figures (p50 -5 us; p50 -5 us < min 0.18 us; max 0.1 us < p99 0.4012 \
               us): not a measurement";
    let json = render(&r, Format::Json);
    let back = load_json(&json).unwrap();
    assert_eq!(back.results[0].notes.last().map(String::as_str), Some(why));
    assert!(!back.results[1]
        .notes
        .iter()
        .any(|n| n.contains("impossible")));
    let again = load_json(&render(&back, Format::Json)).unwrap();
    assert_eq!(again.results[0].notes, back.results[0].notes);
    let csv = render(&r, Format::Csv);
    let line8 = csv.lines().nth(1).unwrap();
    assert!(line8.contains(why), "{csv}");
    assert!(!csv.lines().nth(2).unwrap().contains("impossible"), "{csv}");
}
