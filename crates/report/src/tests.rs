//! Snapshot-style tests: a hand-built report, rendered in every format, compared with inline
//! expected strings.

use super::*;
use commperf_core::{
    Benchmark, Limits, Machine, Mode, Options, Placement, Row, TimerInfo, TransportKind,
};

fn report() -> Report {
    let mut lat_small = Row::new(Benchmark::Latency, TransportKind::Shm, Mode::Poll, 8);
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

    let mut bw = Row::new(Benchmark::Bw, TransportKind::Shm, Mode::Poll, 65536);
    bw.iterations = 2_000;
    bw.warmup = 20;
    bw.window = Some(64);
    bw.mb_per_s = Some(8012.3456);
    bw.msgs_per_s = Some(122258.6);
    bw.efficiency = Some(0.4451);
    bw.limit_mb_per_s = Some(18000.5);
    bw.validated = true;

    // Same block as the first row although a bw row comes between them; no efficiency.
    let mut lat_large = Row::new(Benchmark::Latency, TransportKind::Shm, Mode::Poll, 1 << 20);
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
        }),
        results: vec![lat_small, bw, lat_large],
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
benchmark,transport,mode,size_bytes,iterations,warmup,window,p50_us,p90_us,p99_us,min_us,max_us,mean_us,mb_per_s,msgs_per_s,efficiency,limit_us,limit_mb_per_s,baseline_p50_us,cost_us,block_spins,connections,segments,packed,buffers,o_s_us,o_r_us,g_us,G_us_per_byte,L_us,pairs,validated
latency,shm,poll,8,100000,1000,,0.2134,0.25,0.4012,0.18,12.5034,0.2231,,,0.3337,0.0712,,,,,,,,,,,,,,,true
bw,shm,poll,65536,2000,20,64,,,,,,,8012.3456,122258.6,0.4451,,18000.5,,,,,,,,,,,,,,true
latency,shm,poll,1048576,1000,10,,95.123,101.5,130.25,90,250.75,97.8761,,,,,,,,,,,,,,,,,,,true
";
    assert_eq!(render(&report(), Format::Csv), expected);
}

#[test]
fn csv_columns_are_exactly_the_row_fields() {
    let mut r = report().results[0].clone();
    r.window = Some(1);
    (r.mb_per_s, r.msgs_per_s) = (Some(1.0), Some(1.0));
    (r.limit_us, r.limit_mb_per_s) = (Some(1.0), Some(1.0));
    (r.baseline_p50_us, r.cost_us, r.block_spins) = (Some(1.0), Some(1.0), Some(1));
    (r.segments, r.packed, r.connections) = (Some(2), Some(true), Some(8));
    r.buffers = Some(commperf_core::BufferUse::Registered);
    (r.o_s_us, r.o_r_us, r.g_us, r.gap_per_byte_us, r.L_us) =
        (Some(1.0), Some(1.0), Some(1.0), Some(1.0), Some(1.0));
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
    let mut a = Row::new(Benchmark::Mr, TransportKind::Tcp, Mode::Block, 1);
    (a.window, a.msgs_per_s, a.mb_per_s) = (Some(16), Some(1_500_000.4), Some(1.5));
    let mut b = Row::new(Benchmark::Mr, TransportKind::Tcp, Mode::Block, 64);
    (b.window, b.msgs_per_s, b.validated) = (Some(64), Some(999_999.5), true);
    r.results = vec![a, b];
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
    assert!(text.starts_with("{\n  \"schema_version\": 1,\n"));
    assert!(text.ends_with("}\n"));
    assert_eq!(load_json(&text).unwrap(), r);
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
         1 to 1); it was written by a newer commperf"
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
        "unknown format 'html' (allowed: table json csv md)"
    );
}

#[test]
fn loggp_summary_follows_seed_004_table_3_1() {
    let mut r = report();
    r.results.clear();
    for (t, size, os, or, l) in [
        (TransportKind::Shm, 1, 0.9, 0.9, 0.9),
        (TransportKind::Shm, 4, 0.02, 0.03, 0.05),
        (TransportKind::Tcp, 4, 3.0, 1.0, 1.0),
    ] {
        let mut row = Row::new(Benchmark::Loggp, t, Mode::Poll, size);
        (row.o_s_us, row.o_r_us, row.L_us) = (Some(os), Some(or), Some(l));
        row.g_us = Some(0.5);
        row.p50_us = Some(os + or + l);
        r.results.push(row);
    }
    let text = render(&r, Format::Table);
    let summary = text
        .split("# commperf loggp summary ")
        .nth(1)
        .expect("summary present");
    let expected = "\
 at 4 B (seed 004 Table 3.1, Figure 3.5)
# parameter   shm poll  tcp poll
O_s (us)         0.020     3.000
O_r (us)         0.030     1.000
g (us)           0.500     0.500
L (us)           0.050     1.000
latency (us)     0.100     5.000
O_s share          20%       60%
O_r share          30%       20%
L share            50%       20%
";
    assert_eq!(summary, expected);
    // No loggp rows, no summary.
    assert!(!render(&report(), Format::Table).contains("loggp summary"));
}

/// A loggp report: shm polling at 1 B … 1 MiB (O_r absent at 64 B), tcp polling at 1 B … 64 B
/// with one negative O_s.
fn loggp_report() -> Report {
    let mut r = report();
    r.results.clear();
    r.limits = None;
    let shm = [
        (1, Some(0.1), Some(0.2)),
        (4, Some(0.1), Some(0.2)),
        (16, Some(0.2), Some(0.2)),
        (64, Some(0.4), None),
        (1 << 10, Some(1.5), Some(1.0)),
        (64 << 10, Some(2.4), Some(1.7)),
        (1 << 20, Some(3.2), Some(2.0)),
    ];
    let tcp = [
        (1, Some(-0.5), Some(1.5)),
        (4, Some(1.2), Some(1.5)),
        (64, Some(2.0), Some(2.5)),
    ];
    for (t, pts) in [
        (TransportKind::Shm, &shm[..]),
        (TransportKind::Tcp, &tcp[..]),
    ] {
        for &(size, os, or) in pts {
            let mut row = Row::new(Benchmark::Loggp, t, Mode::Poll, size);
            (row.o_s_us, row.o_r_us) = (os, or);
            (row.g_us, row.L_us, row.p50_us) = (Some(0.5), Some(1.0), Some(2.0));
            r.results.push(row);
        }
    }
    r
}

/// A smaller one for the SVG snapshot: shm polling at 1, 4 and 16 B (O_r absent at 4 B) and
/// tcp blocking at 4 and 64 B with a negative O_s.
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
        let mut row = Row::new(Benchmark::Loggp, t, m, size);
        (row.o_s_us, row.o_r_us) = (os, or);
        r.results.push(row);
    }
    r
}

#[test]
fn loggp_blocks_end_with_seed_004_figure_3_6_as_text() {
    // Sizes on a log2 axis labelled every other power, µs from 0 (or the lowest value) up; a
    // size whose O_r is absent (64 B) has an `s` and no `r`, and where both land in one cell
    // the cell shows `*`.
    let expected = "\
# machine: AMD EPYC 7763 64-Core Processor, 2 cpus, kernel 6.8.0-45-generic
# timer: tsc 2.45 GHz, read cost 9.8 ns
# placement: local cpu 0, peer cpu 1 (pinned)

# commperf loggp | transport shm | mode poll
# Size   o_s(us)  o_r(us)  g(us)  G(ns/B)  L(us)
1          0.100    0.200  0.500        -  1.000
4          0.100    0.200  0.500        -  1.000
16         0.200    0.200  0.500        -  1.000
64         0.400        -  0.500        -  1.000
1024       1.500    1.000  0.500        -  1.000
65536      2.400    1.700  0.500        -  1.000
1048576    3.200    2.000  0.500        -  1.000

# commperf O_s and O_r against size (seed 004 Figure 3.6) | transport shm | mode poll
#    us
# 3.200 |                                                            s
#       |
#       |                                                s
#       |                                                            r
#       |                                                r
# 1.422 |                              s
#       |                              r
#       |
#       |r     r     *     s
# 0.000 |s     s
#       +-------------------------------------------------------------
#        1     4     16    64    256   1K    4K    16K   64K   256K  1M
#        size (bytes, log2 scale); s = O_s, r = O_r, * = both

# commperf loggp | transport tcp | mode poll
# Size  o_s(us)  o_r(us)  g(us)  G(ns/B)  L(us)
1        -0.500    1.500  0.500        -  1.000
4         1.200    1.500  0.500        -  1.000
64        2.000    2.500  0.500        -  1.000

# commperf O_s and O_r against size (seed 004 Figure 3.6) | transport tcp | mode poll
#     us
#  2.500 |                                    r
#        |                                    s
#        |
#        |r           r
#        |            s
#  0.833 |
#        |
#        |
#        |
# -0.500 |s
#        +-------------------------------------
#         1     2     4     8     16    32    64
#         size (bytes, log2 scale); s = O_s, r = O_r, * = both

# commperf loggp summary at 4 B (seed 004 Table 3.1, Figure 3.5)
# parameter   shm poll  tcp poll
O_s (us)         0.100     1.200
O_r (us)         0.200     1.500
g (us)           0.500     0.500
L (us)           1.000     1.000
latency (us)     2.000     2.000
O_s share           5%       60%
O_r share          10%       75%
L share            50%       50%
";
    assert_eq!(render(&loggp_report(), Format::Table), expected);
    // At most about 20 lines per chart (here 15, from its title to the blank line after it).
    for chart in expected
        .split("# commperf O_s and O_r against size")
        .skip(1)
    {
        let chart = chart.split("\n\n").next().unwrap();
        assert_eq!(chart.lines().count(), 15, "{chart}");
    }
    // Markdown and the other formats are unchanged: the figure is for the text table.
    assert!(!render(&loggp_report(), Format::Md).contains("Figure 3.6"));
}

#[test]
fn loggp_svg_is_seed_004_figure_3_6() {
    // x: 1 B … 64 B over 510 px, 85 px per power of two; y: -1 … 3 µs over 340 px, 85 px per
    // µs (0 at y = 299). shm O_r has no point at 4 B, where it is absent.
    let expected = "\
<?xml version=\"1.0\" encoding=\"UTF-8\"?>
<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"760\" height=\"440\" viewBox=\"0 0 760 440\" font-family=\"sans-serif\" font-size=\"12\">
<title>O_s and O_r against size (seed 004 Figure 3.6)</title>
<rect x=\"0\" y=\"0\" width=\"760\" height=\"440\" fill=\"white\"/>
<text x=\"325.0\" y=\"24\" text-anchor=\"middle\" font-size=\"15\">O_s and O_r against size (seed 004 Figure 3.6)</text>
<g stroke=\"#e0e0e0\" stroke-width=\"1\">
<line x1=\"70.0\" y1=\"44.0\" x2=\"70.0\" y2=\"384.0\"/>
<line x1=\"155.0\" y1=\"44.0\" x2=\"155.0\" y2=\"384.0\"/>
<line x1=\"240.0\" y1=\"44.0\" x2=\"240.0\" y2=\"384.0\"/>
<line x1=\"325.0\" y1=\"44.0\" x2=\"325.0\" y2=\"384.0\"/>
<line x1=\"410.0\" y1=\"44.0\" x2=\"410.0\" y2=\"384.0\"/>
<line x1=\"495.0\" y1=\"44.0\" x2=\"495.0\" y2=\"384.0\"/>
<line x1=\"580.0\" y1=\"44.0\" x2=\"580.0\" y2=\"384.0\"/>
<line x1=\"70.0\" y1=\"384.0\" x2=\"580.0\" y2=\"384.0\"/>
<line x1=\"70.0\" y1=\"299.0\" x2=\"580.0\" y2=\"299.0\"/>
<line x1=\"70.0\" y1=\"214.0\" x2=\"580.0\" y2=\"214.0\"/>
<line x1=\"70.0\" y1=\"129.0\" x2=\"580.0\" y2=\"129.0\"/>
<line x1=\"70.0\" y1=\"44.0\" x2=\"580.0\" y2=\"44.0\"/>
</g>
<g stroke=\"#000000\" stroke-width=\"1\"><line x1=\"70.0\" y1=\"384.0\" x2=\"580.0\" y2=\"384.0\"/><line x1=\"70.0\" y1=\"44.0\" x2=\"70.0\" y2=\"384.0\"/></g>
<line x1=\"70.0\" y1=\"299.0\" x2=\"580.0\" y2=\"299.0\" stroke=\"#808080\" stroke-width=\"1\"/>
<g text-anchor=\"middle\">
<text x=\"70.0\" y=\"402.0\">1</text>
<text x=\"155.0\" y=\"402.0\">2</text>
<text x=\"240.0\" y=\"402.0\">4</text>
<text x=\"325.0\" y=\"402.0\">8</text>
<text x=\"410.0\" y=\"402.0\">16</text>
<text x=\"495.0\" y=\"402.0\">32</text>
<text x=\"580.0\" y=\"402.0\">64</text>
</g>
<g text-anchor=\"end\">
<text x=\"62.0\" y=\"388.0\">-1</text>
<text x=\"62.0\" y=\"303.0\">0</text>
<text x=\"62.0\" y=\"218.0\">1</text>
<text x=\"62.0\" y=\"133.0\">2</text>
<text x=\"62.0\" y=\"48.0\">3</text>
</g>
<text x=\"325.0\" y=\"424.0\" text-anchor=\"middle\">message size (bytes, log2 scale)</text>
<text x=\"18.0\" y=\"214.0\" text-anchor=\"middle\" transform=\"rotate(-90 18.0 214.0)\">overhead (µs)</text>
<g class=\"series\" data-transport=\"shm\" data-mode=\"poll\" data-parameter=\"O_s\">
<polyline fill=\"none\" stroke=\"#1f77b4\" stroke-width=\"2\" points=\"70.0,256.5 240.0,214.0 410.0,86.5\"/>
<circle cx=\"70.0\" cy=\"256.5\" r=\"3\" fill=\"#1f77b4\"/>
<circle cx=\"240.0\" cy=\"214.0\" r=\"3\" fill=\"#1f77b4\"/>
<circle cx=\"410.0\" cy=\"86.5\" r=\"3\" fill=\"#1f77b4\"/>
</g>
<g class=\"series\" data-transport=\"shm\" data-mode=\"poll\" data-parameter=\"O_r\">
<polyline fill=\"none\" stroke=\"#1f77b4\" stroke-width=\"2\" stroke-dasharray=\"6 4\" points=\"70.0,214.0 410.0,171.5\"/>
<rect x=\"67.0\" y=\"211.0\" width=\"6\" height=\"6\" fill=\"#1f77b4\"/>
<rect x=\"407.0\" y=\"168.5\" width=\"6\" height=\"6\" fill=\"#1f77b4\"/>
</g>
<g class=\"series\" data-transport=\"tcp\" data-mode=\"block\" data-parameter=\"O_s\">
<polyline fill=\"none\" stroke=\"#d62728\" stroke-width=\"2\" points=\"240.0,341.5 580.0,44.0\"/>
<circle cx=\"240.0\" cy=\"341.5\" r=\"3\" fill=\"#d62728\"/>
<circle cx=\"580.0\" cy=\"44.0\" r=\"3\" fill=\"#d62728\"/>
</g>
<g class=\"series\" data-transport=\"tcp\" data-mode=\"block\" data-parameter=\"O_r\">
<polyline fill=\"none\" stroke=\"#d62728\" stroke-width=\"2\" stroke-dasharray=\"6 4\" points=\"240.0,129.0 580.0,129.0\"/>
<rect x=\"237.0\" y=\"126.0\" width=\"6\" height=\"6\" fill=\"#d62728\"/>
<rect x=\"577.0\" y=\"126.0\" width=\"6\" height=\"6\" fill=\"#d62728\"/>
</g>
<g class=\"legend\">
<line x1=\"596.0\" y1=\"52.0\" x2=\"624.0\" y2=\"52.0\" stroke=\"#1f77b4\" stroke-width=\"2\"/>
<circle cx=\"610.0\" cy=\"52.0\" r=\"3\" fill=\"#1f77b4\"/>
<text x=\"632.0\" y=\"56.0\">shm poll O_s</text>
<line x1=\"596.0\" y1=\"70.0\" x2=\"624.0\" y2=\"70.0\" stroke=\"#1f77b4\" stroke-width=\"2\" stroke-dasharray=\"6 4\"/>
<rect x=\"607.0\" y=\"67.0\" width=\"6\" height=\"6\" fill=\"#1f77b4\"/>
<text x=\"632.0\" y=\"74.0\">shm poll O_r</text>
<line x1=\"596.0\" y1=\"88.0\" x2=\"624.0\" y2=\"88.0\" stroke=\"#d62728\" stroke-width=\"2\"/>
<circle cx=\"610.0\" cy=\"88.0\" r=\"3\" fill=\"#d62728\"/>
<text x=\"632.0\" y=\"92.0\">tcp block O_s</text>
<line x1=\"596.0\" y1=\"106.0\" x2=\"624.0\" y2=\"106.0\" stroke=\"#d62728\" stroke-width=\"2\" stroke-dasharray=\"6 4\"/>
<rect x=\"607.0\" y=\"103.0\" width=\"6\" height=\"6\" fill=\"#d62728\"/>
<text x=\"632.0\" y=\"110.0\">tcp block O_r</text>
</g>
</svg>
";
    assert_eq!(loggp_svg(&small_loggp_report()).unwrap(), expected);
}

#[test]
fn loggp_figures_need_loggp_values() {
    assert_eq!(loggp_svg(&report()), Err(PlotError::NoLoggp));
    assert_eq!(
        PlotError::NoLoggp.to_string(),
        "no loggp results to plot (they come from `commperf bench loggp`)"
    );
    // Loggp rows, but nothing to draw: O_s and O_r absent, or only at size 0 (no place on a
    // log axis). No SVG, and no text chart under the block either.
    let mut r = small_loggp_report();
    for row in &mut r.results {
        row.o_r_us = None;
        row.o_s_us = None;
    }
    r.results[0].size_bytes = 0;
    r.results[0].o_s_us = Some(1.0);
    assert_eq!(loggp_svg(&r), Err(PlotError::NoValues));
    let text = render(&r, Format::Table);
    assert!(text.contains("# commperf loggp | transport shm"), "{text}");
    assert!(!text.contains("Figure 3.6"), "{text}");
    // One value is enough for both renderings: the only polyline has one point, at the left
    // end of a one-power axis (16 B … 32 B) and the top of a 0 … 0.25 µs one.
    r.results[2].o_r_us = Some(0.25);
    let svg = loggp_svg(&r).unwrap();
    assert_eq!(svg.matches("<polyline").count(), 1);
    assert!(svg.contains(r#"data-parameter="O_r">"#));
    assert!(svg.contains(r#"points="70.0,44.0"/>"#), "{svg}");
    let text = render(&r, Format::Table);
    let chart = text
        .split("Figure 3.6) | transport shm | mode poll\n")
        .nth(1)
        .unwrap();
    assert!(chart.starts_with("#    us\n# 0.250 |r\n"), "{chart}");
    assert!(chart.contains("\n#       +-\n#        16\n"), "{chart}");
    assert!(
        !text.contains("Figure 3.6) | transport tcp"),
        "tcp has no values: no chart"
    );
}

#[test]
fn mpi_rows_are_described_in_mpi_words_and_pairs_are_named() {
    let mut r = report();
    let mut nc = Row::new(Benchmark::Noncontig, TransportKind::Mpi, Mode::Poll, 64);
    (nc.segments, nc.packed, nc.p50_us) = (Some(4), Some(false), Some(0.5));
    let mut cq = Row::new(Benchmark::Cq, TransportKind::Mpi, Mode::Poll, 16);
    (cq.connections, cq.p50_us, cq.baseline_p50_us) = (Some(1), Some(0.3), Some(0.2));
    let mut bw = Row::new(Benchmark::Bw, TransportKind::Mpi, Mode::Poll, 8);
    (bw.mb_per_s, bw.msgs_per_s, bw.pairs) = (Some(1.0), Some(125_000.0), Some(2));
    r.results = vec![nc, cq, bw];
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
